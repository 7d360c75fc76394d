/**
 * `/1.1/switchboards` and `/1.1/switchboards/{id}/stats`: per-day figures (UTC days) of the calls
 * the telephony simulator recorded for a switchboard.
 */
import { z } from "zod";
import type { Services } from "../../lib/services.ts";
import {
  callsOfSwitchboard,
  dailyStats,
  type SwitchboardRecord,
  switchboards,
} from "../../lib/store/switchboards.ts";
import { check, fields, pathId } from "./body.ts";
import { bodyRecords, getOr404, type Resource, resourceRoutes } from "./crud.ts";
import { listOf } from "./entities.ts";
import { confdAcl } from "./guard.ts";

const schema = z.object({ name: fields.name(128) });

const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "Must be a date YYYY-MM-DD.").refine(
  (text) => !Number.isNaN(Date.parse(text)) && new Date(text).toISOString().startsWith(text),
  "Must be a date YYYY-MM-DD.",
).optional();

const statsQuery = z.object({ from: day, until: day });

export const switchboardResource: Resource<SwitchboardRecord, SwitchboardRecord> = {
  path: "/switchboards",
  label: "Switchboard",
  collection: switchboards,
  view: (switchboard) => switchboard,
  fields: ["id", "name"],
  search: ["name"],
  ...bodyRecords(switchboards, schema, {}),
};

/** The switchboard CRUD routes and the stats route (`from`/`until` bound the days, included). */
export function switchboardRoutes(services: Services) {
  const { store, tokens } = services;
  return resourceRoutes(services, switchboardResource)
    .get(
      "/switchboards/:id/stats",
      confdAcl(tokens, "confd.switchboards.{id}.stats.read"),
      async (c) => {
        const id = pathId(c, "Switchboard");
        const range = check(statsQuery, c.req.query());
        await getOr404(store, switchboards, "Switchboard", id);
        return c.json(listOf(dailyStats(await callsOfSwitchboard(store, id), range)));
      },
    );
}

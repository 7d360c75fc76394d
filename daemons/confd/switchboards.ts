/**
 * `/1.1/switchboards`, their member users (`PUT /switchboards/{id}/members/users` replaces them)
 * and `/1.1/switchboards/{id}/stats`: per-day figures (UTC days) of the calls the telephony
 * simulator recorded for a switchboard.
 */
import * as z from "zod";
import type { Services } from "../../lib/services.ts";
import { transact } from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import {
  callsOfSwitchboard,
  dailyStats,
  type SwitchboardRecord,
  switchboards,
} from "../../lib/store/switchboards.ts";
import { type UserRecord, users } from "../../lib/store/users.ts";
import { check, fields, pathId, readBody } from "./body.ts";
import { bodyRecords, getOr404, loadOr404, type Resource, resourceRoutes } from "./crud.ts";
import { listOf } from "./entities.ts";
import { describe, inputError, resourceError } from "./errors.ts";
import { confdAcl } from "./guard.ts";

const LABEL = "Switchboard";

/** The body (a function: `bodyRecords` builds the schemas on first use). */
const schema = () => z.object({ name: fields.name(128) });

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** The body the clients send: every member, by uuid. */
const membersSchema = z.lazy(() => z.object({ users: z.array(z.object({ uuid: z.string() })) }));

const statsQuery = z.lazy(() => {
  const day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "Must be a date YYYY-MM-DD.").refine(
    (text) => !Number.isNaN(Date.parse(text)) && new Date(text).toISOString().startsWith(text),
    "Must be a date YYYY-MM-DD.",
  ).optional();
  return z.object({ from: day, until: day });
});

/** How a switchboard shows a member. */
const member = ({ uuid, firstname, lastname }: UserRecord) => ({ uuid, firstname, lastname });

/** The views of `records`: `members: {users: [{uuid, firstname, lastname}]}`, read at once. */
async function switchboardViews(store: Store, records: SwitchboardRecord[]) {
  const ids = [...new Set(records.flatMap((record) => record.member_user_ids ?? []))];
  const found = await Promise.all(ids.map((id) => users.get(store, id)));
  const byId = new Map(found.filter((user) => user !== null).map((user) => [user.id, user]));
  return records.map(({ member_user_ids, ...switchboard }) => ({
    ...switchboard,
    members: {
      users: (member_user_ids ?? []).flatMap((id) => {
        const user = byId.get(id);
        return user ? [member(user)] : [];
      }),
    },
  }));
}

export const switchboardResource: Resource<
  SwitchboardRecord,
  Awaited<ReturnType<typeof switchboardViews>>[number]
> = {
  path: "/switchboards",
  label: LABEL,
  collection: switchboards,
  views: switchboardViews,
  fields: ["id", "name"],
  search: ["name"],
  ...bodyRecords(switchboards, schema, { member_user_ids: [] }),
};

/** The switchboard CRUD routes, the member users and the stats route. */
export function switchboardRoutes(services: Services) {
  const { store, tokens } = services;
  return resourceRoutes(services, switchboardResource)
    .put(
      "/switchboards/:id/members/users",
      confdAcl(tokens, "confd.switchboards.{id}.members.users.update"),
      async (c) => {
        const id = pathId(c, LABEL);
        const uuids = (await readBody(c, membersSchema)).users.map((user) => user.uuid);
        if (new Set(uuids.map((uuid) => uuid.toLowerCase())).size !== uuids.length) {
          throw resourceError("Operation not permitted. Cannot associate same user more than once");
        }
        await transact(store, async (tx) => {
          const switchboard = await loadOr404(tx, switchboards, LABEL, id);
          const members: number[] = [];
          for (const uuid of uuids) {
            const user = await tx.findBy(users, "uuid", uuid.toLowerCase());
            if (!user) throw inputError("users", `User was not found ${describe({ uuid })}`);
            members.push(user.id);
          }
          tx.put(switchboards, { ...switchboard, member_user_ids: members });
        });
        return c.body(null, 204);
      },
    )
    .get(
      "/switchboards/:id/stats",
      confdAcl(tokens, "confd.switchboards.{id}.stats.read"),
      async (c) => {
        const id = pathId(c, LABEL);
        const range = check(statsQuery, c.req.query());
        await getOr404(store, switchboards, LABEL, id);
        return c.json(listOf(dailyStats(await callsOfSwitchboard(store, id), range)));
      },
    );
}

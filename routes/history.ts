/**
 * A user's call history (decisions §5), web service users only:
 *
 * - `GET /history/{username}?size=n` (ACL `svc.rest.history.{username}.read`): the last `n` calls,
 *   `n` from 1 to 1000, 10 when absent.
 * - `GET /history/days/{username}?days=n` (ACL `svc.rest.history.days.{username}.read`): the calls
 *   that started in the last `n` × 24 hours (a sliding window, not calendar days), `n` from 1 to
 *   365, 1 when absent.
 *
 * Answer `{"res":"success","data":{"entries":[...]}}`, newest first; the entries, and the 400
 * `BadRequest` of a bad `size` or `days`, are those of `lib/history.ts`. An unknown user: 400
 * `UserNotFound`.
 */
import { Hono } from "hono";
import { requireAcl } from "../lib/auth/guard.ts";
import { pathUser } from "../lib/control.ts";
import {
  DAYS,
  entriesOfDays,
  type HistoryEntry,
  lastEntries,
  queryInteger,
  SIZE,
} from "../lib/history.ts";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";

const answer = (entries: HistoryEntry[]) => ({ res: "success", data: { entries } });

export function historyRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens } = services;
  return new Hono<AppEnv>()
    .get(
      "/history/days/:username",
      requireAcl(tokens, "svc.rest.history.days.{username}.read"),
      async (c) => {
        const days = queryInteger(c, DAYS);
        const user = await pathUser(store, c.req.param("username"));
        return c.json(answer(await entriesOfDays(services, user, days)));
      },
    )
    .get(
      "/history/:username",
      requireAcl(tokens, "svc.rest.history.{username}.read"),
      async (c) => {
        const size = queryInteger(c, SIZE);
        const user = await pathUser(store, c.req.param("username"));
        return c.json(answer(await lastEntries(services, user, size)));
      },
    );
}

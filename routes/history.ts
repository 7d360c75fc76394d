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
import * as z from "zod";
import { operation } from "../lib/openapi/operation.ts";
import { Hono } from "hono";
import { requireAcl } from "../lib/auth/guard.ts";
import { pathUserId } from "../lib/control.ts";
import {
  DAYS,
  entriesOfDays,
  HISTORY_ENTRY,
  type HistoryEntry,
  lastEntriesJson,
  queryInteger,
  SIZE,
} from "../lib/history.ts";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";

const answer = (entries: HistoryEntry[]) => ({ res: "success", data: { entries } });
const JSON_TYPE = { "Content-Type": "application/json" };

/** The 2.0 answer around the entries' JSON text. */
const successBody = (entries: string) => `{"res":"success","data":{"entries":${entries}}}`;

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const answerBody = z.lazy(() =>
  z.object({
    res: z.literal("success"),
    data: z.object({ entries: z.array(HISTORY_ENTRY) }),
  })
);
const bad = { 400: "`BadRequest` (a bad `size` or `days`), `UserNotFound`" };

export function historyRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens } = services;
  return new Hono<AppEnv>()
    .get(
      "/history/days/:username",
      requireAcl(tokens, "svc.rest.history.days.{username}.read"),
      operation(() => ({
        summary: "The user's calls of the last `days` × 24 hours, newest first",
        query: z.object({ days: z.int().min(DAYS.min).max(DAYS.max).default(DAYS.fallback) }),
        responses: { 200: answerBody },
        errors: bad,
      }), async (c) => {
        const days = queryInteger(c, DAYS);
        const userId = await pathUserId(store, c.req.param("username") ?? "");
        return c.json(answer(await entriesOfDays(services, userId, days)));
      }),
    )
    .get(
      "/history/:username",
      requireAcl(tokens, "svc.rest.history.{username}.read"),
      operation(() => ({
        summary: "The user's last `size` calls, newest first",
        query: z.object({ size: z.int().min(SIZE.min).max(SIZE.max).default(SIZE.fallback) }),
        responses: { 200: answerBody },
        errors: bad,
      }), async (c) => {
        const size = queryInteger(c, SIZE);
        const userId = await pathUserId(store, c.req.param("username") ?? "");
        return c.body(await lastEntriesJson(services, userId, size, successBody), 200, JSON_TYPE);
      }),
    );
}

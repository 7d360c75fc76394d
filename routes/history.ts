/**
 * A user's call history (decisions §5), web service users only:
 *
 * - `GET /history/{username}?size=n` (ACL `svc.rest.history.{username}.read`): the last `n` calls,
 *   `n` from 1 to 1000, 10 when absent.
 * - `GET /history/days/{username}?days=n` (ACL `svc.rest.history.days.{username}.read`): the calls
 *   that started in the last `n` × 24 hours (a sliding window, not calendar days), `n` from 1 to
 *   365, 1 when absent.
 *
 * Answer `{"res":"success","data":{"entries":[...]}}`, newest first. Each entry: `start`
 * (`YYYY-MM-DD HH:MM:SS`, UTC, when the call started ringing), `duration` (`HH:MM:SS`, from answer
 * to hang-up, whole seconds rounded down, `00:00:00` when unanswered), `srcUsername`, `dstUsername`
 * (`""` for an outside party), `srcNum`, `dstNum`, `status` (`emitted`, `answered`, `missed`).
 *
 * Errors: a `size` or `days` that is present but not a decimal integer in range (`?size=`,
 * `?size=1.5`, `?days=0`) answers 400 `BadRequest`, the code of dial's invalid requests (the spec
 * names no code for a bad query value; `JsonErrorDecoding` is about bodies); an unknown user 400
 * `UserNotFound`.
 */
import { type Context, Hono } from "hono";
import { requireAcl } from "../lib/auth/guard.ts";
import { ApiError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { type CallRecord, callsSince, lastCalls } from "../lib/store/call_history.ts";
import { pathUser } from "./control.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

/** One entry of the answer. */
export interface HistoryEntry {
  start: string;
  duration: string;
  srcUsername: string;
  dstUsername: string;
  srcNum: string;
  dstNum: string;
  status: CallRecord["status"];
}

/** `YYYY-MM-DD HH:MM:SS` in UTC. */
export function formatStart(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace("T", " ");
}

/** `HH:MM:SS` (hours grow past two digits when they must), whole seconds rounded down. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const pad = (value: number) => String(value).padStart(2, "0");
  return `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor(seconds / 60) % 60)}:${
    pad(seconds % 60)
  }`;
}

/** A stored record as the answer shows it. */
export function historyEntry(record: CallRecord): HistoryEntry {
  return {
    start: formatStart(record.startMs),
    duration: formatDuration(record.answeredMs === null ? 0 : record.endMs - record.answeredMs),
    srcUsername: record.srcUsername,
    dstUsername: record.dstUsername,
    srcNum: record.srcNum,
    dstNum: record.dstNum,
    status: record.status,
  };
}

/** The integer query value `name`: `fallback` when absent, else from `min` to `max` or 400. */
function queryInteger(c: Context, name: string, fallback: number, min: number, max: number) {
  const raw = c.req.query(name);
  if (raw === undefined) return fallback;
  const value = /^\d{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) {
    throw new ApiError(400, "BadRequest", `${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

const answer = (records: CallRecord[]) => ({
  res: "success",
  data: { entries: records.map(historyEntry) },
});

export function historyRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens, clock } = services;
  return new Hono<AppEnv>()
    .get(
      "/history/days/:username",
      requireAcl(tokens, "svc.rest.history.days.{username}.read"),
      async (c) => {
        const days = queryInteger(c, "days", 1, 1, 365);
        const user = await pathUser(store, c.req.param("username"));
        return c.json(answer(await callsSince(store, user.id, clock.now() - days * DAY_MS)));
      },
    )
    .get(
      "/history/:username",
      requireAcl(tokens, "svc.rest.history.{username}.read"),
      async (c) => {
        const size = queryInteger(c, "size", 10, 1, 1000);
        const user = await pathUser(store, c.req.param("username"));
        return c.json(answer(await lastCalls(store, user.id, size)));
      },
    );
}

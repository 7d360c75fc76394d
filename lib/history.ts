/**
 * A user's call history as the 2.0 routes (`routes/history.ts`) and the deprecated 1.0 route
 * (`legacy/users.ts`) answer it (decisions §5): the last `size` calls, or those of the last `days`
 * days (a sliding window of `days` × 24 hours, not calendar days), newest first.
 *
 * Each entry: `start` (`YYYY-MM-DD HH:MM:SS`, UTC, when the call started ringing), `duration`
 * (`HH:MM:SS`, from answer to hang-up, whole seconds rounded down, `00:00:00` when unanswered),
 * `srcUsername`, `dstUsername` (`""` for an outside party), `srcNum`, `dstNum`, `status`
 * (`emitted`, `answered`, `missed`).
 *
 * A `size` or `days` query value that is present but not a decimal integer in range (`?size=`,
 * `?size=1.5`, `?days=0`) answers 400 `BadRequest`, the code of dial's invalid requests (the spec
 * names no code for a bad query value; `JsonErrorDecoding` is about bodies).
 */
import * as z from "zod";
import type { Context } from "hono";
import { ApiError } from "./errors.ts";
import type { Services } from "./services.ts";
import { type CallRecord, callsSince, lastCalls } from "./store/call_history.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

/** The query value `size`: calls, 10 when absent. */
export const SIZE = { name: "size", fallback: 10, min: 1, max: 1000 } as const;
/** The query value `days`: days, 1 when absent. */
export const DAYS = { name: "days", fallback: 1, min: 1, max: 365 } as const;

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

/** {@link HistoryEntry}'s schema, for the OpenAPI document. */
// built on first use (`z.lazy`), not at every start (docs/performance.md)
export const HISTORY_ENTRY = z.lazy(() =>
  z.object({
    start: z.string().meta({ description: "YYYY-MM-DD HH:MM:SS, UTC" }),
    duration: z.string().meta({ description: "HH:MM:SS from answer to hang-up" }),
    srcUsername: z.string(),
    dstUsername: z.string(),
    srcNum: z.string(),
    dstNum: z.string(),
    status: z.enum(["emitted", "answered", "missed"]),
  })
);

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

/** The integer query value `bound.name`: its fallback when absent, else in range or 400. */
export function queryInteger(
  c: Context,
  bound: { name: string; fallback: number; min: number; max: number },
): number {
  const { name, fallback, min, max } = bound;
  const raw = c.req.query(name);
  if (raw === undefined) return fallback;
  const value = /^\d{1,7}$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) {
    throw new ApiError(400, "BadRequest", `${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/**
 * The texts made of each list of records `lastCalls` answered, kept while it answers that list:
 * by the function that wrapped the entries' JSON (`undefined`: the entries alone).
 */
const entriesTexts = new WeakMap<
  readonly CallRecord[],
  Map<((entries: string) => string) | undefined, string>
>();

/**
 * The JSON text of the last `size` calls of the user `userId` as entries, newest first, inside
 * what `wrap` makes of it (a route's answer around the entries): made once per list `lastCalls`
 * keeps, so a client polling its history costs no formatting, and the same text each time (a text
 * built anew, even by one concatenation, costs Deno's server a copy of the body on each answer).
 * `wrap` must be one function per route (the texts are kept by it).
 */
export async function lastEntriesJson(
  { store }: Services,
  userId: number,
  size: number,
  wrap?: (entries: string) => string,
): Promise<string> {
  const records = await lastCalls(store, userId, size);
  let texts = entriesTexts.get(records);
  if (!texts) entriesTexts.set(records, texts = new Map());
  let text = texts.get(wrap);
  if (text === undefined) {
    const entries = texts.get(undefined) ?? JSON.stringify(records.map(historyEntry));
    texts.set(undefined, entries);
    texts.set(wrap, text = wrap ? wrap(entries) : entries);
  }
  return text;
}

/** The calls of the user `userId` that started in the last `days` × 24 hours, newest first. */
export async function entriesOfDays(
  { store, clock }: Services,
  userId: number,
  days: number,
): Promise<HistoryEntry[]> {
  return (await callsSince(store, userId, clock.now() - days * DAY_MS)).map(historyEntry);
}

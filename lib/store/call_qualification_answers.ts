/**
 * Call qualification answers (decisions §4): what an agent or a CRM answered about a call. Each
 * answer is kept under `["call_qualification_answers", queue, timeMs, id]`, so the answers of one
 * queue between two instants are one range read, already in time order (then creation order).
 * `time` is `YYYY-MM-DD HH:MM:SS`, read as UTC, and kept as sent.
 */
import { nextId } from "./records.ts";
import type { Store } from "./store.ts";

const PREFIX = "call_qualification_answers";

export interface CallQualificationAnswer {
  id: number;
  sub_qualification_id: number;
  /** `YYYY-MM-DD HH:MM:SS`, UTC. */
  time: string;
  callid: string;
  agent: number;
  queue: number;
  first_name: string;
  last_name: string;
  comment: string;
  custom_data: string;
}

export type NewCallQualificationAnswer = Omit<CallQualificationAnswer, "id">;

/** The CSV export's columns, in order (the spec's header). */
export const ANSWER_CSV_HEADER = [
  "sub_qualification_id",
  "time",
  "callid",
  "agent",
  "queue",
  "first_name",
  "last_name",
  "comment",
  "custom_data",
] as const;

/** The key of one answer. */
export const answerKey = (queue: number, timeMs: number, id: number): Deno.KvKey => [
  PREFIX,
  queue,
  timeMs,
  id,
];

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

/** Milliseconds of a UTC calendar instant, or null when it is not a real one (`02-30`, `24:00`). */
function utcInstant(parts: number[]): number | null {
  const [year, month, day, hours = 0, minutes = 0, seconds = 0] = parts as [
    number,
    number,
    number,
    number?,
    number?,
    number?,
  ];
  if (month < 1 || month > 12 || day < 1 || hours > 23 || minutes > 59 || seconds > 59) {
    return null;
  }
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // Date.UTC would read years 0–99 as 1900–1999
  date.setUTCHours(hours, minutes, seconds, 0);
  return date.getUTCDate() === day && date.getUTCMonth() === month - 1 ? date.getTime() : null;
}

/**
 * The instant of a `YYYY-MM-DD HH:MM:SS` text read as UTC, or null when the text is not of that
 * form or not a real date and time.
 *
 * @example
 * parseAnswerTime("2026-01-31 12:00:00"); // 1769860800000
 * parseAnswerTime("2026-02-30 12:00:00"); // null
 */
export function parseAnswerTime(text: string): number | null {
  const match = DATE_TIME.exec(text);
  return match ? utcInstant(match.slice(1).map(Number)) : null;
}

const LAST_SECOND_OF_DAY_MS = (24 * 60 * 60 - 1) * 1000;

/**
 * A bound of the CSV export: `YYYY-MM-DD HH:MM:SS`, or `YYYY-MM-DD` alone meaning the start of
 * that day for `from` and its last second for `to` (answer times are whole seconds). Null when
 * the text is neither.
 *
 * @example
 * parseBound("2026-01-31", "to"); // the instant of 2026-01-31 23:59:59 UTC
 */
export function parseBound(text: string, side: "from" | "to"): number | null {
  const day = DATE.exec(text);
  if (!day) return parseAnswerTime(text);
  const start = utcInstant(day.slice(1).map(Number));
  return start === null ? null : side === "from" ? start : start + LAST_SECOND_OF_DAY_MS;
}

/**
 * Stores a new answer with the next integer id; `input.time` must be a valid answer time (the
 * caller checked it, and that the sub-qualification and queue exist).
 *
 * @example
 * const answer = await createAnswer(store, { sub_qualification_id: 1, time: "2026-01-31 12:00:00",
 *   callid: "1769860800.1", agent: 1, queue: 1, first_name: "", last_name: "", comment: "",
 *   custom_data: "" });
 */
export async function createAnswer(
  store: Store,
  input: NewCallQualificationAnswer,
): Promise<CallQualificationAnswer> {
  const timeMs = parseAnswerTime(input.time);
  if (timeMs === null) throw new Error(`not an answer time: ${input.time}`);
  const answer: CallQualificationAnswer = { id: await nextId(store, PREFIX), ...input };
  const key = answerKey(answer.queue, timeMs, answer.id);
  const result = await store.commit((op) => op.check({ key, versionstamp: null }).set(key, answer));
  if (!result.ok) throw new Error(`answer ${answer.id} already stored`);
  return answer;
}

/**
 * The answers of `queue` whose time is in [`fromMs`, `toMs`], ordered by time, then by id.
 *
 * @example
 * const answers = await answersBetween(store, 1, Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 2) - 1);
 */
export async function answersBetween(
  store: Store,
  queue: number,
  fromMs: number,
  toMs: number,
): Promise<CallQualificationAnswer[]> {
  if (fromMs > toMs) return [];
  const entries = await store.list<CallQualificationAnswer>({
    start: [PREFIX, queue, fromMs],
    end: [PREFIX, queue, toMs + 1], // answer times are whole milliseconds
  });
  return entries.map((entry) => entry.value);
}

/** An answer as one CSV row, in the order of {@link ANSWER_CSV_HEADER}. */
export const answerCsvRow = (answer: CallQualificationAnswer): string[] =>
  ANSWER_CSV_HEADER.map((column) => String(answer[column]));

/**
 * Days in a time zone (docs/supervision.md): the day (`YYYY-MM-DD`) an instant falls on, when a
 * day starts (its first instant: midnight, or the first minute after it where a change of offset
 * skips midnight), and a stretch of time cut at each start of day. With Temporal (built into
 * Deno), which knows each zone's offsets; UTC needs nothing of it.
 */

/** `YYYY-MM-DD`, a date that exists. */
const DAY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * True when `text` is a date `YYYY-MM-DD` that exists (not `2026-02-30`).
 *
 * @example
 * isDay("2026-02-28"); // true
 * isDay("2026-02-30"); // false
 */
export function isDay(text: string): boolean {
  if (!DAY.test(text)) return false;
  try {
    return Temporal.PlainDate.from(text, { overflow: "reject" }).toString() === text;
  } catch {
    return false;
  }
}

/**
 * The day `ms` falls on in `zone`.
 *
 * @example
 * dayOf(Date.UTC(2026, 0, 1, 23, 30), "Europe/Paris"); // "2026-01-02"
 */
export function dayOf(ms: number, zone: string): string {
  if (zone === "UTC") return new Date(ms).toISOString().slice(0, 10);
  return Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(zone).toPlainDate()
    .toString();
}

/**
 * The first instant of `day` in `zone` (ms since the epoch).
 *
 * @example
 * dayStart("2026-01-02", "Europe/Paris"); // Date.UTC(2026, 0, 1, 23)
 */
export function dayStart(day: string, zone: string): number {
  if (zone === "UTC") return Date.parse(`${day}T00:00:00Z`);
  return Temporal.PlainDate.from(day).toZonedDateTime(zone).epochMilliseconds;
}

/** The day after (`n` = 1) or before (`n` = -1) `day`, or `n` days away. */
export function addDays(day: string, n: number): string {
  return Temporal.PlainDate.from(day).add({ days: n }).toString();
}

/** How many days from `from` to `to`, both counted (1 when they are the same). */
export function daysSpanned(from: string, to: string): number {
  return Temporal.PlainDate.from(from).until(Temporal.PlainDate.from(to)).days + 1;
}

/**
 * The stretch from `fromMs` to `toMs` cut at each start of day in `zone`: how many ms fall on
 * each day, oldest first (nothing for an empty or backward stretch).
 *
 * @example
 * splitByDay(Date.UTC(2026, 0, 1, 23, 59), Date.UTC(2026, 0, 2, 0, 1), "UTC");
 * // [{ day: "2026-01-01", ms: 60000 }, { day: "2026-01-02", ms: 60000 }]
 */
export function splitByDay(
  fromMs: number,
  toMs: number,
  zone: string,
): { day: string; ms: number }[] {
  const parts: { day: string; ms: number }[] = [];
  let start = fromMs;
  while (start < toMs) {
    const day = dayOf(start, zone);
    const next = dayStart(addDays(day, 1), zone);
    const end = Math.min(next, toMs);
    parts.push({ day, ms: end - start });
    start = end;
  }
  return parts;
}

/**
 * How long an interval of a queue's day lasts (docs/supervision.md, "The day's intervals"): the
 * usual reporting interval of contact centres (their staffing forecasts count in quarter hours).
 */
export const INTERVAL_MINUTES = 15;
const INTERVAL_MS = INTERVAL_MINUTES * 60_000;

/**
 * The interval `ms` falls in: its day in `zone` and its index in that day, counted from the day's
 * first instant (so a day of 25 hours has 100 intervals, one of 23 hours 92).
 *
 * @example
 * intervalOf(Date.UTC(2026, 0, 1, 8, 20), "UTC"); // { day: "2026-01-01", slot: 33 }
 */
export function intervalOf(ms: number, zone: string): { day: string; slot: number } {
  const day = dayOf(ms, zone);
  return { day, slot: Math.floor((ms - dayStart(day, zone)) / INTERVAL_MS) };
}

/**
 * When each interval of `day` in `zone` starts (ms), in order, up to `untilMs` (the interval it
 * falls in included): the whole day when it is over, none when it has not begun.
 *
 * @example
 * intervalStarts("2026-01-01", "UTC", Date.UTC(2026, 0, 1, 0, 20)); // two: 00:00 and 00:15
 */
export function intervalStarts(day: string, zone: string, untilMs: number): number[] {
  const start = dayStart(day, zone);
  const end = Math.min(dayStart(addDays(day, 1), zone), untilMs + 1);
  const starts: number[] = [];
  for (let at = start; at < end; at += INTERVAL_MS) starts.push(at);
  return starts;
}

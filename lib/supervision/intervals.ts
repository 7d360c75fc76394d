/**
 * A queue's day interval by interval, its curve (docs/supervision.md, "The day's curve"): the
 * counters of each interval (`lib/store/supervision.ts`, written by the counting) from the day's
 * start to now, with the most calls waiting at once and the service level of each.
 */
import type { CoreServices } from "../core_services.ts";
import { getQueue } from "../store/queues.ts";
import { INTERVAL_STATS, readIntervalCounters, zeros } from "../store/supervision.ts";
import { supervisionSettings } from "./counting.ts";
import { iso, percent } from "./day_figures.ts";
import { addDays, dayOf, INTERVAL_MINUTES, intervalStarts, isDay } from "./days.ts";
import type { QueueIntervals } from "./schemas.ts";
import { forQueue } from "./settings.ts";

/** The counters of an interval with none written. */
const NO_COUNTS = zeros(INTERVAL_STATS);

/** `HH:MM`, the time `ms` shows in `zone`. */
function clockTime(ms: number, zone: string): string {
  if (zone === "UTC") return new Date(ms).toISOString().slice(11, 16);
  return Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(zone).toPlainTime()
    .toString().slice(0, 5);
}

/**
 * What is wrong with `day` (`YYYY-MM-DD`, not before the days kept: `retentionDays` up to
 * `today`), or null when nothing is.
 *
 * @example
 * intervalDayProblem("2026-01-01", "2026-01-10", 35); // null
 */
export function intervalDayProblem(day: string, today: string, retentionDays: number) {
  if (!isDay(day)) return `day ${JSON.stringify(day)} is no date YYYY-MM-DD`;
  const first = addDays(today, 1 - retentionDays);
  if (day < first) return `day ${day} is before ${first}: ${retentionDays} days are kept`;
  return null;
}

/**
 * The intervals of queue `queueId` on `day` (its own day: the queue's time zone; today when
 * undefined), from the day's start to now (the interval now in included), every one of them
 * whether anything happened in it or not; none for a day still to come. Answers null when there
 * is no such queue, a text saying what is wrong with `day` when something is.
 *
 * @example
 * const curve = await queueIntervals(services, 1, undefined);
 */
export async function queueIntervals(
  services: CoreServices,
  queueId: number,
  day: string | undefined,
): Promise<QueueIntervals | string | null> {
  const { store, clock, config } = services;
  const queue = await getQueue(store, queueId);
  if (!queue) return null;
  const settings = supervisionSettings(config);
  const zone = forQueue(settings.timeZone, queue.name);
  const now = clock.now();
  const asked = day ?? dayOf(now, zone);
  const problem = intervalDayProblem(asked, dayOf(now, zone), settings.retentionDays);
  if (problem) return problem;
  const counters = await readIntervalCounters(store, asked, queueId);
  // the calls waiting when an interval begins: those that joined before it, less those that left
  let waiting = 0;
  const intervals = intervalStarts(asked, zone, now).map((start, slot) => {
    const counts = counters.get(slot) ?? NO_COUNTS;
    const waitingMax = Math.max(counts.waiting_max, waiting);
    // a call of the day before leaving this one: none is taken below 0
    waiting = Math.max(
      0,
      waiting + counts.entered - counts.answered - counts.abandoned - counts.timeout,
    );
    return {
      start: iso(start)!,
      time: clockTime(start, zone),
      entered: counts.entered,
      answered: counts.answered,
      answeredWithinServiceLevel: counts.answered_in_sl,
      abandoned: counts.abandoned,
      timeout: counts.timeout,
      waitingMax,
      serviceLevelPercent: percent(counts.answered_in_sl, counts.entered),
    };
  });
  return {
    queueId,
    day: asked,
    timeZone: zone,
    intervalMinutes: INTERVAL_MINUTES,
    serviceLevelSeconds: forQueue(settings.serviceLevelSeconds, queue.name),
    intervals,
  };
}

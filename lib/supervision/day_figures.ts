/**
 * A day's counters (`lib/store/supervision.ts`) as supervision shows them (docs/supervision.md):
 * seconds rounded to whole ones, means and percentages computed (their schemas: ./schemas.ts).
 * The live figures and the history rows both build on these.
 */
import type { AgentStat, QueueStat } from "../store/supervision.ts";
import type { AgentDayFigures, QueueDayFigures } from "./schemas.ts";

/** Whole seconds of `ms`. */
export const seconds = (ms: number): number => Math.round(ms / 1000);

/**
 * The texts of instants already shown: an agent's `since` and `loggedSince` stay the same from one
 * read to the next, and `toISOString` (about 0.4 µs) was 30 % of `GET /supervision/agents` with
 * 500 agents (bench/README.md, "Supervision"). Emptied when full.
 */
const isoTexts = new Map<number, string>();
const ISO_TEXTS = 8192;

/** An instant as ISO 8601 UTC text, or null. */
export function iso(ms: number | null): string | null {
  if (ms === null) return null;
  let text = isoTexts.get(ms);
  if (text === undefined) {
    text = new Date(ms).toISOString();
    if (isoTexts.size >= ISO_TEXTS) isoTexts.clear();
    isoTexts.set(ms, text);
  }
  return text;
}

/** `part` of `whole` in percent with one decimal, at most 100; null when `whole` is 0. */
export function percent(part: number, whole: number): number | null {
  if (whole <= 0) return null;
  return Math.min(100, Math.round((part / whole) * 1000) / 10);
}

/** The figures of a queue's day counters. */
export function queueDayFigures(counters: Record<QueueStat, number>): QueueDayFigures {
  const { entered, answered, abandoned, abandoned_short, timeout, answered_in_sl } = counters;
  return {
    entered,
    answered,
    abandoned,
    abandonedShort: abandoned_short,
    timeout,
    answeredWithinServiceLevel: answered_in_sl,
    serviceLevelPercent: percent(answered_in_sl, entered),
    abandonedAfterShortPercent: percent(abandoned - abandoned_short, entered),
    meanWaitSeconds: answered ? seconds(counters.wait_ms / answered) : null,
    maxWaitSeconds: seconds(counters.wait_max_ms),
    meanTalkSeconds: counters.talk_calls ? seconds(counters.talk_ms / counters.talk_calls) : null,
  };
}

/** The figures of an agent's day counters, plus `live` ms of what is still going on. */
export function agentDayFigures(
  counters: Record<AgentStat, number>,
  live: { talkMs: number; pauseMs: number; loginMs: number } = {
    talkMs: 0,
    pauseMs: 0,
    loginMs: 0,
  },
): AgentDayFigures {
  return {
    answered: counters.answered,
    missed: counters.missed,
    talkSeconds: seconds(counters.talk_ms + live.talkMs),
    pauseSeconds: seconds(counters.pause_ms + live.pauseMs),
    loginSeconds: seconds(counters.login_ms + live.loginMs),
  };
}

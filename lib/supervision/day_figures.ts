/**
 * A day's counters (`lib/store/supervision.ts`) as supervision shows them (docs/supervision.md):
 * seconds rounded to whole ones, means and percentages computed, the schemas of the REST answers.
 * The live figures and the history rows both build on these.
 */
import * as z from "zod";
import type { AgentStat, QueueStat } from "../store/supervision.ts";

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

/** The fields of a queue's figures of one day (a function: built on use, not at every start). */
export const queueDayFields = () => ({
  entered: z.int().meta({ description: "Calls that joined the queue" }),
  answered: z.int().meta({ description: "Calls an agent answered" }),
  abandoned: z.int().meta({ description: "Calls whose caller hung up while waiting" }),
  abandonedShort: z.int().meta({
    description: "Of those, the ones that waited less than the short-abandon seconds",
  }),
  timeout: z.int().meta({ description: "Calls that left on the queue's timeout" }),
  answeredWithinServiceLevel: z.int().meta({
    description: "Calls answered after waiting at most the service level",
  }),
  serviceLevelPercent: z.number().nullable().meta({
    description: "answeredWithinServiceLevel / entered × 100 (xuc's), null with no call entered",
  }),
  abandonedAfterShortPercent: z.number().nullable().meta({
    description: "(abandoned − abandonedShort) / entered × 100, null with no call entered",
  }),
  meanWaitSeconds: z.int().nullable().meta({
    description: "Mean wait of the answered calls, null with none",
  }),
  maxWaitSeconds: z.int().meta({ description: "Longest wait of an answered call" }),
  meanTalkSeconds: z.int().nullable().meta({
    description: "Mean talk time of the calls completed, null with none",
  }),
});

/** A queue's figures of one day. */
export type QueueDayFigures = z.infer<z.ZodObject<ReturnType<typeof queueDayFields>>>;

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

/** The fields of an agent's figures of one day. */
export const agentDayFields = () => ({
  answered: z.int().meta({ description: "Queue calls answered" }),
  missed: z.int().meta({ description: "Queue calls that rang the agent, not answered" }),
  talkSeconds: z.int().meta({ description: "Time on queue calls" }),
  pauseSeconds: z.int().meta({ description: "Time on pause" }),
  loginSeconds: z.int().meta({ description: "Time logged in" }),
});

/** An agent's figures of one day. */
export type AgentDayFigures = z.infer<z.ZodObject<ReturnType<typeof agentDayFields>>>;

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

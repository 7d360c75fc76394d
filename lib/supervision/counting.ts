/**
 * What a platform event adds to the day counters (docs/supervision.md, "What is counted"): pure
 * functions of the event, the time it is handled, the settings and, for an agent, the state it was
 * last seen entering (its mark). `lib/supervision/mod.ts` writes what they answer.
 *
 * - A queue call counts on the day of its event in the queue's time zone: `joined` is entered,
 *   `answered` is answered with its wait (within the service level or not), `abandoned` (short when
 *   it waited less than the short-abandon seconds), `timeout`, and `completed` adds its talk time
 *   to the queue (the day it ended) and to the agent (cut at each midnight). The same outcomes,
 *   and the calls waiting when one joins (its place in the queue), count in the interval of the
 *   queue's day the event falls in (the day's curve; 15 minutes, `INTERVAL_MINUTES` of days.ts).
 * - An agent's state change closes the state it leaves: time on pause and, at a logout, time
 *   logged in are added to the days they span (the default time zone's); a ringing that ends
 *   other than on a call is a missed call.
 */
import type { Config } from "../config.ts";
import type { AgentPresence, AgentStateEvent, QueueCallEvent } from "../platform/port.ts";
import type {
  AgentMark,
  AgentStat,
  CounterChange,
  IntervalStat,
  QueueStat,
} from "../store/supervision.ts";
import { dayOf, intervalOf, splitByDay } from "./days.ts";
import { forQueue, type SupervisionSettings } from "./settings.ts";

/** The supervision settings of `config`. */
export const supervisionSettings = (config: Config): SupervisionSettings => ({
  timeZone: config.supervisionTimeZone,
  serviceLevelSeconds: config.supervisionServiceLevel,
  shortAbandonSeconds: config.supervisionShortAbandon,
  retentionDays: config.supervisionRetentionDays,
});

/** The time zone of agents' days: the default one. */
export const agentZone = (settings: SupervisionSettings): string => settings.timeZone.default;

const queueChange = (
  day: string,
  id: number,
  stat: QueueStat,
  value: number,
  op: "add" | "max" = "add",
): CounterChange => ({ day, kind: "queue", id, stat, op, value });

const intervalChange = (
  interval: { day: string; slot: number },
  id: number,
  stat: IntervalStat,
  value: number,
  op: "add" | "max" = "add",
): CounterChange => ({ ...interval, kind: "interval", id, stat, op, value });

const agentChange = (day: string, id: number, stat: AgentStat, value: number): CounterChange => ({
  day,
  kind: "agent",
  id,
  stat,
  op: "add",
  value,
});

/** `ms` from `fromMs` to `toMs` added to the agent's `stat`, cut at each midnight. */
const agentTime = (
  id: number,
  stat: AgentStat,
  fromMs: number,
  toMs: number,
  zone: string,
): CounterChange[] =>
  splitByDay(fromMs, toMs, zone).map(({ day, ms }) => agentChange(day, id, stat, ms));

/**
 * The counter changes of a queue call event handled at `nowMs`; `queueName` is the queue's name
 * (for its own time zone and service level), undefined when unknown.
 *
 * @example
 * queueCallChanges(event, clock.now(), settings, "sales");
 */
export function queueCallChanges(
  event: QueueCallEvent,
  nowMs: number,
  settings: SupervisionSettings,
  queueName: string | undefined,
): CounterChange[] {
  const id = event.queueId;
  const zone = forQueue(settings.timeZone, queueName);
  const interval = intervalOf(nowMs, zone);
  const day = interval.day;
  const waitMs = event.waitMs ?? 0;
  switch (event.event) {
    case "joined":
      return [
        queueChange(day, id, "entered", 1),
        intervalChange(interval, id, "entered", 1),
        intervalChange(interval, id, "waiting_max", event.position ?? 1, "max"),
      ];
    case "answered": {
      const serviceLevelMs = forQueue(settings.serviceLevelSeconds, queueName) * 1000;
      const withinServiceLevel = waitMs <= serviceLevelMs;
      return [
        queueChange(day, id, "answered", 1),
        queueChange(day, id, "wait_ms", waitMs),
        queueChange(day, id, "wait_max_ms", waitMs, "max"),
        intervalChange(interval, id, "answered", 1),
        ...(withinServiceLevel
          ? [
            queueChange(day, id, "answered_in_sl", 1),
            intervalChange(interval, id, "answered_in_sl", 1),
          ]
          : []),
        ...(event.agentId === undefined
          ? []
          : [agentChange(dayOf(nowMs, agentZone(settings)), event.agentId, "answered", 1)]),
      ];
    }
    case "abandoned":
      return [
        queueChange(day, id, "abandoned", 1),
        intervalChange(interval, id, "abandoned", 1),
        ...(waitMs < settings.shortAbandonSeconds * 1000
          ? [queueChange(day, id, "abandoned_short", 1)]
          : []),
      ];
    case "timeout":
      return [queueChange(day, id, "timeout", 1), intervalChange(interval, id, "timeout", 1)];
    case "completed": {
      const talkMs = event.talkMs ?? 0;
      return [
        queueChange(day, id, "talk_ms", talkMs),
        queueChange(day, id, "talk_calls", 1),
        ...(event.agentId === undefined
          ? []
          : agentTime(event.agentId, "talk_ms", nowMs - talkMs, nowMs, agentZone(settings))),
      ];
    }
  }
}

/**
 * What an agent's state change handled at `nowMs` adds to its counters, and its new mark.
 * `mark` is the state it was last seen entering (null: never seen, so nothing is closed);
 * `presence` its presence now (for when it logged in, when that was before any mark).
 */
export function agentStateChanges(
  mark: AgentMark | null,
  event: AgentStateEvent,
  presence: AgentPresence,
  nowMs: number,
  settings: SupervisionSettings,
): { changes: CounterChange[]; mark: AgentMark } {
  const zone = agentZone(settings);
  const id = event.agentId;
  const changes: CounterChange[] = [];
  if (mark) {
    if (mark.state === "AgentOnPause") {
      changes.push(...agentTime(id, "pause_ms", mark.sinceMs, nowMs, zone));
    }
    if (mark.state === "AgentRinging" && event.name !== "AgentOnCall") {
      changes.push(agentChange(dayOf(nowMs, zone), id, "missed", 1));
    }
    if (event.name === "AgentLoggedOut" && mark.loggedSinceMs !== null) {
      changes.push(...agentTime(id, "login_ms", mark.loggedSinceMs, nowMs, zone));
    }
  }
  const loggedSinceMs = event.name === "AgentLoggedOut"
    ? null
    : mark?.loggedSinceMs ?? presence.loggedSinceMs ?? nowMs;
  return { changes, mark: { state: event.name, sinceMs: nowMs, loggedSinceMs } };
}

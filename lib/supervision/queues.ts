/**
 * Queues as supervision shows them (docs/supervision.md): live figures read from the platform
 * (the calls waiting, what the member agents are doing) and the counters since midnight in the
 * queue's time zone from the store; the calls waiting in one queue.
 */
import type { CoreServices } from "../core_services.ts";
import type { WaitingCall } from "../platform/port.ts";
import { listAgents } from "../store/agents.ts";
import { getQueue, listQueues, type QueueRecord } from "../store/queues.ts";
import { type AgentMark, QUEUE_STATS, readDayCounters, zeros } from "../store/supervision.ts";
import type { Activity } from "./activities.ts";
import { agentsLive } from "./agents.ts";
import { supervisionSettings } from "./counting.ts";
import { iso, queueDayFigures } from "./day_figures.ts";
import { dayOf } from "./days.ts";
import type { QueueFigures, WaitingCallFigures } from "./schemas.ts";
import { forQueue } from "./settings.ts";

/** The counters of a queue with none written that day. */
const NO_COUNTS = zeros(QUEUE_STATS);
/** No agent's mark: the queues' figures count what agents do, not since when. */
const NO_MARKS: ReadonlyMap<number, AgentMark> = new Map();

/**
 * The figures of every queue (or of those of `ids` that exist), in id order.
 *
 * @example
 * const [sales] = await queueFigures(services, [1]);
 */
export async function queueFigures(
  services: CoreServices,
  ids?: number[],
): Promise<QueueFigures[]> {
  const { store, platform, clock, config } = services;
  const settings = supervisionSettings(config);
  const now = clock.now();
  const all = await listQueues(store);
  const queueList = ids === undefined ? all : all.filter((queue) => ids.includes(queue.id));
  if (queueList.length === 0) return [];
  const zoneOf = (queue: QueueRecord) => forQueue(settings.timeZone, queue.name);
  const days = [...new Set(queueList.map((queue) => dayOf(now, zoneOf(queue))))].sort();
  const memberIds = new Set(queueList.flatMap((queue) => queue.members.map((m) => m.agent_id)));
  const [waiting, counters, agentList] = await Promise.all([
    platform.queueCalls(),
    Promise.all(days.map((day) => readDayCounters(store, day, "queue"))),
    listAgents(store),
  ]);
  // what the agents are doing, not since when: no marks needed
  const live = await agentsLive(
    services,
    agentList.filter((agent) => memberIds.has(agent.id)),
    NO_MARKS,
  );
  const countersOf = (day: string, id: number) => counters[days.indexOf(day)]?.get(id);
  return queueList.map((queue) => {
    const day = dayOf(now, zoneOf(queue));
    const calls = waiting.filter((call) => call.queueId === queue.id);
    const activities = queue.members.flatMap((member) => {
      const activity = live.get(member.agent_id)?.activity;
      return activity ? [activity] : [];
    });
    const count = (activity: Activity) => activities.filter((each) => each === activity).length;
    return {
      id: queue.id,
      name: queue.name,
      displayName: queue.display_name,
      number: queue.number,
      timeZone: zoneOf(queue),
      serviceLevelSeconds: forQueue(settings.serviceLevelSeconds, queue.name),
      waitingCalls: calls.length,
      longestWaitSeconds: calls.length
        ? Math.max(0, Math.floor((now - Math.min(...calls.map((call) => call.sinceMs))) / 1000))
        : 0,
      agents: {
        members: queue.members.length,
        logged: activities.length - count("logged_out"),
        ready: count("ready"),
        ringing: count("ringing"),
        onCall: count("on_call"),
        wrapup: count("wrapup"),
        paused: count("paused"),
      },
      today: { day, ...queueDayFigures(countersOf(day, queue.id) ?? NO_COUNTS) },
    };
  });
}

/**
 * The calls waiting in queue `queueId` now, in order; null when there is no such queue.
 *
 * @example
 * const calls = await waitingCalls(services, 1);
 */
export async function waitingCalls(
  services: CoreServices,
  queueId: number,
): Promise<WaitingCallFigures[] | null> {
  const { store, platform, clock } = services;
  if (!await getQueue(store, queueId)) return null;
  const now = clock.now();
  return (await platform.queueCalls())
    .filter((call) => call.queueId === queueId)
    .sort((a, b) => a.position - b.position)
    .map((call: WaitingCall) => ({
      position: call.position,
      callerNumber: call.callerNumber,
      callerName: call.callerName,
      waitingSince: iso(call.sinceMs)!,
      waitSeconds: Math.max(0, Math.floor((now - call.sinceMs) / 1000)),
      linkedId: call.linkedId,
    }));
}

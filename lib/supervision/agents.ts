/**
 * Agents as supervision shows them (docs/supervision.md): what each is doing now, read from the
 * platform (any process answers: every one follows the PBX), and its counters since midnight
 * (the default time zone's) from the store, plus what is still going on (a login, a pause, a
 * call in progress) up to now.
 *
 * What an agent is doing: `logged_out`; `ready`; `ringing` (a queue call, or an incoming call on
 * its line); `on_call` (`call`: `queue`, or for a call on its line outside the queues `incoming`
 * or `outgoing`); `wrapup`; `paused` (with its reason). A call outside the queues shows over
 * `ready` and `paused` (the agent stays paused: `paused` tells).
 */
import type { CoreServices } from "../core_services.ts";
import type { LiveCall } from "../platform/call_control.ts";
import type { AgentPresence, AgentStateName } from "../platform/port.ts";
import { type AgentRecord, listAgents } from "../store/agents.ts";
import { extensions, extensionsAt } from "../store/extensions.ts";
import { listQueues, membershipsByAgent } from "../store/queues.ts";
import { sharedRead } from "../store/shared_read.ts";
import {
  AGENT_STATS,
  type AgentMark,
  agentMarks,
  readDayCounters,
  zeros,
} from "../store/supervision.ts";
import { agentZone, supervisionSettings } from "./counting.ts";
import type { Activity, CallKind } from "./activities.ts";
import { agentDayFigures, iso } from "./day_figures.ts";
import type { AgentFigures } from "./schemas.ts";
import { dayOf, dayStart } from "./days.ts";

/** What an agent is doing now. */
export interface AgentLive {
  agentId: number;
  activity: Activity;
  /** The call it is on or rung for; null for none. */
  call: CallKind | null;
  /** When it started doing it (ms); null when the platform cannot tell. */
  sinceMs: number | null;
  paused: boolean;
  pausedReason: string | null;
  extension: string | null;
  context: string | null;
  loggedSinceMs: number | null;
  /** Its platform state and since when (for the time spent in it so far). */
  state: AgentStateName;
  stateSinceMs: number | null;
}

const ACTIVITY_OF: Record<AgentStateName, Activity> = {
  AgentLoggedOut: "logged_out",
  AgentReady: "ready",
  AgentRinging: "ringing",
  AgentOnCall: "on_call",
  AgentOnWrapup: "wrapup",
  AgentOnPause: "paused",
};

/**
 * What each of `agentList` is doing now, by id: its presence, the calls on the line it is logged
 * on, and its mark (the counting's view of its state: used for since when, when it agrees).
 *
 * One read of each thing per call, whatever the number of agents: the presences and calls from
 * the platform (in memory on both adapters), the lines of the extensions agents are logged on
 * from the extensions' list (kept while its version key stays), the marks (kept while no counter
 * or mark is written, `agentMarks`).
 */
export async function agentsLive(
  services: CoreServices,
  agentList: AgentRecord[],
  marks?: ReadonlyMap<number, AgentMark>,
): Promise<Map<number, AgentLive>> {
  const { platform, store } = services;
  const [presences, calls, knownMarks, lineOf] = await Promise.all([
    platform.agentPresences(agentList.map((agent) => agent.id)),
    platform.liveCalls(),
    marks ?? agentMarks(store),
    extensionLines(store),
  ]);
  // the calls of each line: those of the line an agent is on are its calls outside the queues
  const callsOfLine = new Map<number, LiveCall[]>();
  for (const call of calls) {
    if (call.lineId === null) continue;
    const onLine = callsOfLine.get(call.lineId);
    if (onLine) onLine.push(call);
    else callsOfLine.set(call.lineId, [call]);
  }
  const live = new Map<number, AgentLive>();
  for (const presence of presences) {
    const lineId = presence.logged && presence.extension !== null && presence.context !== null
      ? lineOf(presence.extension, presence.context)
      : null;
    const onLine = lineId === null ? [] : callsOfLine.get(lineId) ?? [];
    live.set(presence.agentId, liveOf(presence, knownMarks.get(presence.agentId), onLine));
  }
  return live;
}

/**
 * The line holding the extension `exten` of `context` (null for none, or no such extension), as
 * `findExtension` answers it, from the extensions' list (one read of its version key).
 */
async function extensionLines(
  store: CoreServices["store"],
): Promise<(exten: string, context: string) => number | null> {
  const extensionAt = extensionsAt(await extensions.all(store));
  return (exten, context) => extensionAt(exten, context)?.line_id ?? null;
}

function liveOf(
  presence: AgentPresence,
  mark: AgentMark | undefined,
  calls: LiveCall[],
): AgentLive {
  const logged = presence.logged;
  // the counting's mark tells the same boundaries the counters were cut at, when it agrees
  const agrees = mark !== undefined && mark.state === presence.state;
  const stateSinceMs = agrees ? mark.sinceMs : presence.sinceMs;
  const loggedSinceMs = !logged
    ? null
    : agrees && mark.loggedSinceMs !== null
    ? mark.loggedSinceMs
    : presence.loggedSinceMs;
  const base: AgentLive = {
    agentId: presence.agentId,
    activity: ACTIVITY_OF[presence.state],
    call: presence.state === "AgentRinging" || presence.state === "AgentOnCall" ? "queue" : null,
    sinceMs: stateSinceMs,
    paused: logged && presence.paused,
    pausedReason: logged ? presence.pausedReason : null,
    extension: logged ? presence.extension : null,
    context: logged ? presence.context : null,
    loggedSinceMs,
    state: presence.state,
    stateSinceMs,
  };
  if (presence.state !== "AgentReady" && presence.state !== "AgentOnPause") return base;
  // a call outside the queues: dialling out or talking, else ringing in
  const outgoing = calls.find((call) => call.isCaller);
  const talking = calls.find((call) => call.state === "up");
  const ringing = calls.find((call) => call.state === "ringing");
  const call = outgoing ?? talking ?? ringing;
  if (!call) return base;
  return {
    ...base,
    activity: call === ringing && !outgoing && !talking ? "ringing" : "on_call",
    call: call.isCaller ? "outgoing" : "incoming",
    sinceMs: call.answeredMs ?? call.createdMs,
  };
}

/** The counters of an agent with none written today. */
const NO_COUNTS = zeros(AGENT_STATS);

/**
 * Per services, the figures of every agent, read once for the callers asking while a read runs
 * (`sharedRead`: each gets a read begun after it asked).
 */
const everyAgentsFigures = new WeakMap<CoreServices, () => Promise<AgentFigures[]>>();

/**
 * Every agent (or those of the queues `queueIds`), in id order: what it does now, its queues,
 * and its figures since midnight (the default time zone's). The callers asking for every agent
 * while its figures are being read share the next read, begun after they asked (500 agents: about
 * a millisecond of work each, bench/README.md "Supervision"): treat the answer as read-only.
 *
 * @example
 * const agents = await agentFigures(services);
 */
export function agentFigures(
  services: CoreServices,
  queueIds?: number[],
): Promise<AgentFigures[]> {
  if (queueIds !== undefined) return readAgentFigures(services, queueIds);
  let shared = everyAgentsFigures.get(services);
  if (!shared) {
    shared = sharedRead(() => readAgentFigures(services));
    everyAgentsFigures.set(services, shared);
  }
  return shared();
}

/** {@link agentFigures}, read now. */
async function readAgentFigures(
  services: CoreServices,
  queueIds?: number[],
): Promise<AgentFigures[]> {
  const { store, clock, config } = services;
  const now = clock.now();
  const zone = agentZone(supervisionSettings(config));
  const day = dayOf(now, zone);
  const midnight = dayStart(day, zone);
  const [agentList, queueList, counters] = await Promise.all([
    listAgents(store),
    listQueues(store),
    readDayCounters(store, day, "agent"),
  ]);
  const memberships = membershipsByAgent(queueList);
  const queuesOf = (agentId: number) => memberships.get(agentId) ?? [];
  const wanted = queueIds === undefined
    ? agentList
    : agentList.filter((agent) => queuesOf(agent.id).some((queue) => queueIds.includes(queue.id)));
  const live = await agentsLive(services, wanted);
  const upToNow = (fromMs: number | null) =>
    fromMs === null ? 0 : Math.max(0, now - Math.max(fromMs, midnight));
  return wanted.map((agent) => {
    const now = live.get(agent.id)!;
    const inState = (state: AgentStateName) => now.state === state ? upToNow(now.stateSinceMs) : 0;
    return {
      id: agent.id,
      number: agent.number,
      firstname: agent.firstname,
      lastname: agent.lastname,
      state: now.activity,
      call: now.call,
      since: iso(now.sinceMs),
      paused: now.paused,
      pausedReason: now.pausedReason,
      extension: now.extension,
      loggedSince: iso(now.loggedSinceMs),
      queues: queuesOf(agent.id).map((queue) => ({ ...queue })),
      today: {
        day,
        ...agentDayFigures(counters.get(agent.id) ?? NO_COUNTS, {
          talkMs: inState("AgentOnCall"),
          pauseMs: inState("AgentOnPause"),
          loginMs: upToNow(now.loggedSinceMs),
        }),
      },
    };
  });
}

/**
 * Agents of the simulated PBX: login on an extension, pause, and the states a queue call moves
 * them through (AgentRinging → AgentOnCall → AgentOnWrapup → AgentReady), each an
 * `AgentStateEvent` (decisions §7, §8).
 */
import type { AgentRecord } from "../../store/agents.ts";
import {
  agentStateEvent,
  loginRefusal,
  neverLogged,
  notLogged,
  presenceOf,
} from "../agent_rules.ts";
import type { AgentPresence, AgentStateName } from "../port.ts";
import { cancelTimers, endLeg, phoneEvent, queueEvent } from "./legs.ts";
import type { AgentState, Step } from "./state.ts";

/** Moves `agent` to `name` and emits its event. */
export function agentEvent(step: Step, agent: AgentState, name: AgentStateName): void {
  agent.state = name;
  agent.sinceMs = step.now;
  step.emit(agentStateEvent(step.dir, agent, name, agent.leg?.record ?? null));
}

/** The presence of a logged agent; `not_logged` otherwise. */
function loggedAgent(step: Step, agentId: number): AgentState {
  const agent = step.sim.agents.get(agentId);
  if (!agent?.logged) throw notLogged(agentId);
  return agent;
}

/**
 * Logs `agent` in on the line holding `extension` in `context`: `AgentReady`. Refused with
 * `no_extension`, `already_logged` or `extension_in_use`.
 */
export function login(step: Step, agent: AgentRecord, extension: string, context: string): void {
  const refusal = loginRefusal(step.dir, step.sim.agents.values(), agent.id, extension, context);
  if (refusal) throw refusal;
  const known = step.sim.agents.get(agent.id);
  const state: AgentState = known ?? {
    ...neverLogged(agent.id, agent.number),
    idleSince: step.now,
    leg: null,
    timers: new Set(),
  };
  Object.assign(state, {
    agentNumber: agent.number,
    logged: true,
    paused: false,
    pausedReason: null,
    extension,
    context,
    phoneNb: extension,
    idleSince: step.now,
    leg: null,
    loggedSinceMs: step.now,
  });
  step.sim.agents.set(agent.id, state);
  agentEvent(step, state, "AgentReady");
}

/**
 * Logs the agent out: `AgentLoggedOut`. A queue call ringing it is offered again; a call it is
 * on goes on, with no wrap-up afterwards.
 */
export function logout(step: Step, agentId: number): void {
  const agent = loggedAgent(step, agentId);
  const leg = agent.leg;
  agent.leg = null;
  if (leg && leg.state === "ringing") {
    if (leg.announced) phoneEvent(step, leg, "EventReleased");
    endLeg(step, leg);
    if (leg.call.wait?.offer === leg) leg.call.wait.offer = null;
  }
  cancelTimers(agent);
  agentEvent(step, agent, "AgentLoggedOut");
  Object.assign(agent, {
    logged: false,
    paused: false,
    pausedReason: null,
    extension: null,
    context: null,
    loggedSinceMs: null,
  });
}

/**
 * Pauses the agent: `AgentOnPause` at once when ready; when ringing, on a call or in wrap-up it
 * is marked paused and shows `AgentOnPause` when that ends.
 */
export function pause(step: Step, agentId: number, reason: string | null): void {
  const agent = loggedAgent(step, agentId);
  agent.paused = true;
  agent.pausedReason = reason;
  if (agent.state === "AgentReady") agentEvent(step, agent, "AgentOnPause");
}

/** Unpauses the agent: `AgentReady` when on pause; during wrap-up it ends the wrap-up at once. */
export function unpause(step: Step, agentId: number): void {
  const agent = loggedAgent(step, agentId);
  agent.paused = false;
  agent.pausedReason = null;
  if (agent.state === "AgentOnPause") agentEvent(step, agent, "AgentReady");
  else if (agent.state === "AgentOnWrapup") endWrapup(step, agent);
}

/** The presence of `agentId`; a never-logged agent is logged out. */
export const presence = (agents: Map<number, AgentState>, agentId: number): AgentPresence =>
  presenceOf(agentId, agents.get(agentId));

/**
 * Agents whose queue call leg ended during the step: a call answered is `completed` (also when
 * the agent logged out while on it, as on Asterisk); the agent is free again when it was not
 * answered (`AgentReady`, or `AgentOnPause` when paused meanwhile), in wrap-up when it was.
 */
export function settleAgents(step: Step): void {
  const ended = step.sim.endedAgentLegs;
  step.sim.endedAgentLegs = [];
  for (const leg of ended) {
    if (leg.answeredMs !== null && leg.agentId !== null) {
      const talkMs = step.now - leg.answeredMs;
      queueEvent(step, leg.call, "completed", { agentId: leg.agentId, talkMs }, leg.queued);
    }
    const agent = leg.agentId === null ? undefined : step.sim.agents.get(leg.agentId);
    if (!agent || agent.leg !== leg) continue;
    agent.leg = null;
    if (!agent.logged) continue;
    if (leg.answeredMs === null) {
      // an agent that let a call ring out goes behind the others
      agent.idleSince = step.now;
      agentEvent(step, agent, agent.paused ? "AgentOnPause" : "AgentReady");
    } else {
      startWrapup(step, agent, leg.queueId);
    }
  }
}

/** `AgentOnWrapup` for the queue's `wrapup_seconds` (0: at once, both events still emitted). */
function startWrapup(step: Step, agent: AgentState, queueId: number | null): void {
  agentEvent(step, agent, "AgentOnWrapup");
  const seconds = (queueId === null ? undefined : step.dir.queues.get(queueId)?.wrapup_seconds) ??
    0;
  if (seconds <= 0) return endWrapup(step, agent);
  step.later(agent, seconds * 1000, (next) => {
    if (agent.logged && agent.state === "AgentOnWrapup") endWrapup(next, agent);
  });
}

function endWrapup(step: Step, agent: AgentState): void {
  cancelTimers(agent);
  agent.idleSince = step.now;
  agentEvent(step, agent, agent.paused ? "AgentOnPause" : "AgentReady");
}

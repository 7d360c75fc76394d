/**
 * What both adapters decide alike about agents (decisions §8, docs/platform.md): who may log in
 * where, the presence an agent shows, and the `AgentStateEvent` of a state change.
 */
import type { Directory } from "./directory.ts";
import {
  type AgentPresence,
  type AgentStateEvent,
  type AgentStateName,
  type MonitorState,
  PlatformRefusal,
} from "./port.ts";
import type { RecordState } from "./call_control.ts";

/** What the rules read of an agent's presence kept by an adapter. */
export interface AgentView {
  agentId: number;
  agentNumber: string;
  logged: boolean;
  paused: boolean;
  pausedReason: string | null;
  extension: string | null;
  context: string | null;
  /** The extension of the last login: the `phoneNb` of its events, "" when never logged. */
  phoneNb: string;
  state: AgentStateName;
  /** When it entered `state`, and when it logged in (ms since the epoch; null: unknown, out). */
  sinceMs: number | null;
  loggedSinceMs: number | null;
}

/** An agent that never logged in: the presence an adapter starts from. */
export function neverLogged(agentId: number, agentNumber: string): AgentView {
  return {
    agentId,
    agentNumber,
    logged: false,
    paused: false,
    pausedReason: null,
    extension: null,
    context: null,
    phoneNb: "",
    state: "AgentLoggedOut",
    sinceMs: null,
    loggedSinceMs: null,
  };
}

/**
 * Why `agentId` may not log in on `extension`@`context`: `no_extension` (no line holds it),
 * `already_logged`, `extension_in_use` (another logged agent is there); null when it may.
 */
export function loginRefusal(
  dir: Directory,
  agents: Iterable<AgentView>,
  agentId: number,
  extension: string,
  context: string,
): PlatformRefusal | null {
  const found = dir.extensionAt(extension, context);
  if (found?.line_id == null || !dir.phoneOfLine(found.line_id)) {
    return new PlatformRefusal(
      "no_extension",
      `no line holds extension ${extension} in context ${context}`,
    );
  }
  const logged = [...agents].filter((other) => other.logged);
  if (logged.some((other) => other.agentId === agentId)) {
    return new PlatformRefusal("already_logged", `agent ${agentId} is logged in`);
  }
  for (const other of logged) {
    if (other.extension === extension && other.context === context) {
      return new PlatformRefusal(
        "extension_in_use",
        `agent ${other.agentId} is logged in on ${extension}@${context}`,
      );
    }
  }
  return null;
}

/** The refusal of a command for an agent that is not logged in. */
export const notLogged = (agentId: number) =>
  new PlatformRefusal("not_logged", `agent ${agentId} is not logged in`);

/** The presence of `agentId` from what an adapter keeps; a never-logged agent is logged out. */
export function presenceOf(agentId: number, agent: AgentView | undefined): AgentPresence {
  if (!agent?.logged) {
    return {
      agentId,
      logged: false,
      paused: false,
      pausedReason: null,
      extension: null,
      context: null,
      state: "AgentLoggedOut",
      sinceMs: agent?.sinceMs ?? null,
      loggedSinceMs: null,
    };
  }
  const { logged, paused, pausedReason, extension, context, state, sinceMs, loggedSinceMs } = agent;
  return {
    agentId,
    logged,
    paused,
    pausedReason,
    extension,
    context,
    state,
    sinceMs,
    loggedSinceMs,
  };
}

/** xuc's `monitorState` of an agent's queue call recorded as `record` (none: `DISABLED`). */
export function monitorStateOf(record: RecordState | null): MonitorState {
  return record === "active" ? "ACTIVE" : record === "paused" ? "PAUSED" : "DISABLED";
}

/**
 * The event of `agent` entering `name`: `username` is the user of the line it is logged on,
 * `phoneNb` that extension, `queues` the ids of its queues, as configured now; `record` is the
 * recording of the queue call it is on (null: none).
 */
export function agentStateEvent(
  dir: Directory,
  agent: AgentView,
  name: AgentStateName,
  record: RecordState | null = null,
): AgentStateEvent {
  const phone = agent.extension !== null && agent.context !== null
    ? dir.phoneAt(agent.extension, agent.context)
    : null;
  return {
    kind: "agent",
    agentId: agent.agentId,
    agentNumber: dir.agents.get(agent.agentId)?.number ?? agent.agentNumber,
    name,
    phoneNb: agent.phoneNb,
    username: phone?.username ?? "",
    queues: dir.queueIdsOf(agent.agentId),
    monitorState: name === "AgentOnCall" ? monitorStateOf(record) : "DISABLED",
  };
}

/**
 * Agents on Asterisk (docs/asterisk.md): logging in makes the agent a dynamic member of each of
 * its queues (`QueueAdd`: interface `Local/<line id>@svc-agent`, svc's agent context that rings the
 * line's device; the device as state interface; the agent number as member name), pausing is
 * `QueuePause`; a change of its queues in the configuration is followed live (`QueueAdd`,
 * `QueueRemove`, `QueuePenalty`). The presence follows the
 * queue member events too, so every svc process connected to the PBX agrees; queue calls move the
 * agent through the states the simulator gives (AgentRinging → AgentOnCall → AgentOnWrapup →
 * AgentReady), driven by the call tracker.
 *
 * A command's state change comes from the PBX's event in the process that sent it too (its login
 * from `QueueMemberAdded`, its pause from `QueueMemberPause`, …): the command waits for it, so
 * that every process changes the agent's state at the same place of the AMI stream, and names the
 * event alike (docs/asterisk.md, "Several svc processes"). A PBX that says nothing within
 * {@link CONFIRM_MS}: the command changes it itself.
 */
import type { Clock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import type { AgentRecord } from "../../store/agents.ts";
import {
  agentStateEvent,
  type AgentView,
  loginRefusal,
  neverLogged,
  notLogged,
  presenceOf,
} from "../agent_rules.ts";
import type { Directory, Phone } from "../directory.ts";
import {
  type AgentPresence,
  type AgentStateName,
  type PlatformEvent,
  PlatformRefusal,
} from "../port.ts";
import type { RecordState } from "../call_control.ts";
import type { AmiMessage } from "./ami_message.ts";
import type { AmiResponse } from "./ami_client.ts";
import { AGENT_CONTEXT, agentMemberInterface } from "./config_files.ts";

/** How long a command waits for the PBX's event telling what it did. */
const CONFIRM_MS = 500;

/** The leg of a queue call an agent's phone is on, as the call tracker tells it. */
export interface AgentLeg {
  /** When the agent answered; null while it rings (or when it did not). */
  answeredMs: number | null;
  /** The queue that rang the agent. */
  queueId: number | null;
  /** Whether the call is recorded (the agent's `monitorState` on it). */
  record: RecordState;
}

/** The agent as a member of one queue on the PBX. */
interface Membership {
  /** The member interface svc (or another process) added there. */
  iface: string;
  /** Its penalty there; null when the PBX did not tell. */
  penalty: number | null;
}

interface AgentState extends AgentView {
  /** Queue name → the agent as a member there. */
  memberships: Map<string, Membership>;
  /**
   * The queue call legs it rings for or talks on: a queue may ring it for several calls at once
   * (callers at its head, each ringing every free agent, before its phone shows busy).
   */
  legs: Set<AgentLeg>;
  /** Cancels the wrap-up timer. */
  wrapup: (() => void) | null;
}

/** What the book needs from the adapter. */
export interface AgentsContext {
  dir(): Directory;
  emit(event: PlatformEvent): void;
  clock: Clock;
  logger: Logger;
  action(action: string, fields?: Record<string, string | undefined>): Promise<AmiResponse>;
  /**
   * With several servers: whether `phone` is placed on another one (its device is unknown here,
   * so the queue cannot watch its state: the member has none).
   */
  elsewhere?(phone: { registrar?: string }): boolean;
}

/**
 * The extension and context a member interface rings: svc's own (`Local/<line id>@svc-agent`),
 * another `Local/<extension>@<context>`, or a device, through the directory.
 */
function memberPlace(dir: Directory, iface: string): { extension: string; context: string } | null {
  const local = /^Local\/([^@]+)@([^/]+)/i.exec(iface);
  if (!local) return dir.phoneOfInterface(iface);
  const [, exten, context] = local as unknown as [string, string, string];
  if (context === AGENT_CONTEXT) return dir.phoneOfLine(Number(exten));
  return { extension: exten, context };
}

const isTrue = (value: string | undefined) => value === "1" || value?.toLowerCase() === "true";

/** The `Penalty` a member event carries, or null. */
function penaltyOf(event: AmiMessage): number | null {
  const value = event.get("Penalty");
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : null;
}

/** The agents' presences on one PBX. */
export class AgentBook {
  readonly #agents = new Map<number, AgentState>();
  /** Commands waiting for the PBX's event (see {@link AgentBook.#confirmed}). */
  readonly #waiters = new Set<{ test: () => boolean; done: (seen: boolean) => void }>();
  #version = 0;

  constructor(private readonly ctx: AgentsContext) {}

  /**
   * Bumped after every change of what a presence shows (`#loggedIn`, `#loggedOut`, `#paused`,
   * `#event`, a new agent's state): the platform's `agentPresenceVersion`.
   */
  get version(): number {
    return this.#version;
  }

  presence(agentId: number): AgentPresence {
    return presenceOf(agentId, this.#agents.get(agentId));
  }

  /** The logged agent whose extension rings `phone`, if any. */
  loggedOn(phone: Phone): AgentState | null {
    for (const agent of this.#agents.values()) {
      if (agent.logged && agent.extension === phone.extension && agent.context === phone.context) {
        return agent;
      }
    }
    return null;
  }

  /** Logs `agent` in on `extension`@`context`: a member of each of its queues, `AgentReady`. */
  async login(agent: AgentRecord, extension: string, context: string): Promise<void> {
    const dir = this.ctx.dir();
    const refusal = loginRefusal(dir, this.#agents.values(), agent.id, extension, context);
    if (refusal) throw refusal;
    const state = this.#state(agent.id, agent.number);
    const added = await this.#addToQueues(state, extension, context);
    if (added === 0 || !await this.#confirmed(() => state.logged)) {
      this.#loggedIn(state, extension, context, false, null);
    }
  }

  /**
   * Logs the agent out of every queue it is a member of: `AgentLoggedOut` (once the PBX says it
   * removed the last one).
   */
  async logout(agentId: number): Promise<void> {
    const agent = this.#logged(agentId);
    let removed = 0;
    for (const [queue, { iface }] of [...agent.memberships]) {
      if (await this.#queueRemove(queue, iface)) removed++;
      else agent.memberships.delete(queue); // not there: no event will tell
    }
    if (removed === 0 || !await this.#confirmed(() => !agent.logged)) {
      agent.memberships.clear();
      this.#loggedOut(agent);
    }
  }

  /**
   * The agent's queues changed in the configuration: a logged-in agent leaves the queues it is no
   * member of any more (`QueueRemove`), takes a changed penalty (`QueuePenalty`) and joins its new
   * queues (`QueueAdd`, paused as it is). Nothing happens for an agent that is not logged in.
   * Leaving its last queue does not log it out (a removal svc makes is not one it follows).
   */
  async followQueues(agentId: number): Promise<void> {
    const agent = this.#agents.get(agentId);
    if (!agent?.logged) return;
    const configured = new Map<string, number>(); // queue name → penalty
    for (const queue of this.ctx.dir().queues.values()) {
      const member = queue.members.find((member) => member.agent_id === agentId);
      if (member) configured.set(queue.name, member.penalty);
    }
    for (const [queue, membership] of [...agent.memberships]) {
      const penalty = configured.get(queue);
      if (penalty === undefined) {
        // forgotten first: the QueueMemberRemoved that follows is then not taken for a logout
        agent.memberships.delete(queue);
        try {
          await this.#queueRemove(queue, membership.iface);
        } catch (error) {
          agent.memberships.set(queue, membership);
          throw error;
        }
      } else if (membership.penalty !== penalty) {
        const response = await this.ctx.action("QueuePenalty", {
          Queue: queue,
          Interface: membership.iface,
          Penalty: String(penalty),
        });
        if (!response.ok) {
          throw new PlatformRefusal("pbx_refused", pbxMessage("QueuePenalty", response));
        }
        membership.penalty = penalty;
      }
    }
    await this.#addToQueues(agent, agent.extension!, agent.context!);
  }

  /** Pauses the agent in all its queues (`QueuePause` with a reason). */
  async pause(agentId: number, reason: string | null): Promise<void> {
    const agent = this.#logged(agentId);
    const sent = await this.#queuePause(agent, true, reason);
    const seen = () => agent.paused && agent.pausedReason === reason;
    if (sent === 0 || !await this.#confirmed(seen)) this.#paused(agent, true, reason);
  }

  async unpause(agentId: number): Promise<void> {
    const agent = this.#logged(agentId);
    const sent = await this.#queuePause(agent, false, null);
    if (sent === 0 || !await this.#confirmed(() => !agent.paused)) this.#paused(agent, false, null);
  }

  // --- from the PBX's events -----------------------------------------------------------------

  /** `QueueMemberAdded`/`QueueMember` of one of our agents: it is logged in there. */
  memberPresent(event: AmiMessage): void {
    const found = this.#memberAgent(event);
    if (!found) return;
    const { agent, queue, iface } = found;
    const place = memberPlace(this.ctx.dir(), iface);
    if (!place) return;
    agent.memberships.set(queue, { iface, penalty: penaltyOf(event) });
    if (!agent.logged) {
      const reason = event.get("PausedReason") || null;
      this.#loggedIn(agent, place.extension, place.context, isTrue(event.get("Paused")), reason);
    }
    this.#wake();
  }

  /**
   * `QueueMemberRemoved`: logged out once no queue holds the agent any more. A removal from a
   * queue the agent was not known in (one svc made as it followed the configuration) changes
   * nothing.
   */
  memberRemoved(event: AmiMessage): void {
    const found = this.#memberAgent(event);
    if (!found || !found.agent.memberships.delete(found.queue)) return;
    if (found.agent.logged && found.agent.memberships.size === 0) this.#loggedOut(found.agent);
    this.#wake();
  }

  /** `QueueMemberPenalty`: the agent's penalty there, as the PBX has it now. */
  memberPenalty(event: AmiMessage): void {
    const found = this.#memberAgent(event);
    const membership = found?.agent.memberships.get(found.queue);
    if (membership) membership.penalty = penaltyOf(event);
  }

  /** `QueueMemberPause`. */
  memberPaused(event: AmiMessage): void {
    const found = this.#memberAgent(event);
    if (!found?.agent.logged) return;
    const paused = isTrue(event.get("Paused"));
    this.#paused(found.agent, paused, paused ? event.get("PausedReason") || null : null);
    this.#wake();
  }

  /**
   * After a (re)connection, the members `QueueStatus` listed: agents the PBX has are adopted; the
   * agents svc has logged in and the PBX lost (it restarted: dynamic members are not kept) are
   * added back, paused as they were; then every logged-in agent follows its queues as configured
   * now (a change made while the PBX was unreachable).
   */
  async resync(members: AmiMessage[]): Promise<void> {
    const listed = new Set<number>();
    for (const member of members) {
      const found = this.#memberAgent(member);
      if (found) listed.add(found.agent.agentId);
      this.memberPresent(member);
    }
    for (const agent of this.#agents.values()) {
      if (!agent.logged || listed.has(agent.agentId)) continue;
      agent.memberships.clear();
      try {
        await this.#addToQueues(agent, agent.extension!, agent.context!);
        this.ctx.logger.info("agent added back to its queues", { agent: agent.agentNumber });
      } catch (error) {
        this.ctx.logger.warn("agent could not be added back", {
          agent: agent.agentNumber,
          error: String(error),
        });
        this.#loggedOut(agent);
      }
    }
    for (const agent of [...this.#agents.values()]) {
      if (!agent.logged) continue;
      try {
        await this.followQueues(agent.agentId);
      } catch (error) {
        this.ctx.logger.warn("agent's queues not followed", {
          agent: agent.agentNumber,
          error: String(error),
        });
      }
    }
  }

  // --- from the call tracker -------------------------------------------------------------------

  /** A queue call rings the agent: `AgentRinging`, unless it rings or talks already. */
  ringing(agentId: number, leg: AgentLeg): void {
    const agent = this.#agents.get(agentId);
    if (!agent?.logged || agent.legs.has(leg)) return;
    agent.legs.add(leg);
    if (agent.state === "AgentRinging" || agent.state === "AgentOnCall") return;
    this.#endWrapup(agent, false);
    this.#event(agent, "AgentRinging");
  }

  /** The agent answered its queue call: `AgentOnCall`. */
  answered(agentId: number, leg: AgentLeg): void {
    const agent = this.#agents.get(agentId);
    if (agent?.logged && agent.legs.has(leg) && agent.state !== "AgentOnCall") {
      this.#event(agent, "AgentOnCall");
    }
  }

  /** The recording of its queue call changed: `AgentOnCall` again, with the new `monitorState`. */
  recordChanged(agentId: number, leg: AgentLeg): void {
    const agent = this.#agents.get(agentId);
    if (agent?.logged && agent.legs.has(leg) && agent.state === "AgentOnCall") {
      this.#event(agent, "AgentOnCall");
    }
  }

  /**
   * Its queue call leg ended: free again when it was not answered and no other rings
   * (`AgentReady`, or `AgentOnPause` when paused meanwhile), in wrap-up when it was (the queue's
   * `wrapup_seconds`, 0 at once) unless it talks on another.
   */
  legEnded(agentId: number, leg: AgentLeg): void {
    const agent = this.#agents.get(agentId);
    if (!agent?.legs.delete(leg) || !agent.logged) return;
    if (leg.answeredMs === null) {
      if (agent.legs.size === 0 && agent.state === "AgentRinging") this.#free(agent);
      return;
    }
    if ([...agent.legs].some((other) => other.answeredMs !== null)) return;
    this.#event(agent, "AgentOnWrapup");
    const queue = leg.queueId === null ? undefined : this.ctx.dir().queues.get(leg.queueId);
    const seconds = queue?.wrapup_seconds ?? 0;
    if (seconds <= 0) return this.#endWrapup(agent, true);
    agent.wrapup = this.ctx.clock.after(seconds * 1000, () => {
      agent.wrapup = null;
      if (agent.logged && agent.state === "AgentOnWrapup") this.#endWrapup(agent, true);
    });
  }

  /** Stops every wrap-up timer; commands waiting for the PBX go on by themselves. */
  close(): void {
    for (const agent of this.#agents.values()) agent.wrapup?.();
    for (const waiter of [...this.#waiters]) waiter.done(false);
  }

  // ---------------------------------------------------------------------------------------------

  #state(agentId: number, agentNumber: string): AgentState {
    let agent = this.#agents.get(agentId);
    if (!agent) {
      agent = {
        ...neverLogged(agentId, agentNumber),
        memberships: new Map(),
        legs: new Set(),
        wrapup: null,
      };
      this.#agents.set(agentId, agent);
      this.#version++;
    }
    return agent;
  }

  /**
   * True once `test` holds, which an event of the PBX makes so (checked after each member event);
   * false when it still does not after {@link CONFIRM_MS}.
   */
  #confirmed(test: () => boolean): Promise<boolean> {
    if (test()) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => waiter.done(test()), CONFIRM_MS);
      const waiter = {
        test,
        done: (seen: boolean) => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve(seen);
        },
      };
      this.#waiters.add(waiter);
    });
  }

  /** A member event was handled: the commands it confirms go on. */
  #wake(): void {
    for (const waiter of [...this.#waiters]) if (waiter.test()) waiter.done(true);
  }

  /**
   * Makes the agent a member of each of its queues it is not a member of yet, ringing the line of
   * `extension`@`context`, paused as it is (a re-add after a PBX restart keeps the pause and its
   * reason). Answers how many the PBX added (each says so with `QueueMemberAdded`).
   */
  async #addToQueues(agent: AgentState, extension: string, context: string): Promise<number> {
    const dir = this.ctx.dir();
    const phone = dir.phoneAt(extension, context);
    if (!phone) throw notLogged(agent.agentId);
    const iface = agentMemberInterface(phone.lineId);
    let added = 0;
    for (const queue of dir.queues.values()) {
      const member = queue.members.find((member) => member.agent_id === agent.agentId);
      if (!member || agent.memberships.has(queue.name)) continue;
      const response = await this.ctx.action("QueueAdd", {
        Queue: queue.name,
        Interface: iface,
        StateInterface: this.ctx.elsewhere?.(phone) ? undefined : phone.interface ?? undefined,
        MemberName: dir.agents.get(agent.agentId)?.number ?? agent.agentNumber,
        Penalty: String(member.penalty),
        Paused: agent.logged && agent.paused ? "true" : "false",
        Reason: agent.logged && agent.paused ? agent.pausedReason ?? undefined : undefined,
      });
      // "Already there": a login this process does not remember (a restart of svc) is kept
      if (!response.ok && !/already there/i.test(response.message.get("Message") ?? "")) {
        throw new PlatformRefusal("pbx_refused", pbxMessage("QueueAdd", response));
      }
      if (response.ok) added++;
      agent.memberships.set(queue.name, { iface, penalty: member.penalty });
    }
    return added;
  }

  /**
   * Removes the member `iface` from `queue`; one the PBX does not have is gone already. Answers
   * whether the PBX removed it (it says so with `QueueMemberRemoved`).
   */
  async #queueRemove(queue: string, iface: string): Promise<boolean> {
    const response = await this.ctx.action("QueueRemove", { Queue: queue, Interface: iface });
    if (!response.ok && !/not there/i.test(response.message.get("Message") ?? "")) {
      throw new PlatformRefusal("pbx_refused", pbxMessage("QueueRemove", response));
    }
    return response.ok;
  }

  #logged(agentId: number): AgentState {
    const agent = this.#agents.get(agentId);
    if (!agent?.logged) throw notLogged(agentId);
    return agent;
  }

  /** The agent a member event names (`MemberName` or `Name` = the agent number), its queue. */
  #memberAgent(event: AmiMessage): { agent: AgentState; queue: string; iface: string } | null {
    const number = event.get("MemberName") ?? event.get("Name");
    const queue = event.get("Queue");
    const iface = event.get("Interface") ?? event.get("Location");
    if (!number || !queue || !iface) return null;
    const record = this.ctx.dir().agentNumbered(number);
    return record ? { agent: this.#state(record.id, record.number), queue, iface } : null;
  }

  #loggedIn(
    agent: AgentState,
    extension: string,
    context: string,
    paused: boolean,
    reason: string | null,
  ): void {
    if (agent.logged) return;
    Object.assign(agent, {
      logged: true,
      paused,
      pausedReason: reason,
      extension,
      context,
      phoneNb: extension,
      legs: new Set(),
      loggedSinceMs: this.ctx.clock.now(),
    });
    this.#version++;
    this.#event(agent, paused ? "AgentOnPause" : "AgentReady");
  }

  #loggedOut(agent: AgentState): void {
    if (!agent.logged) return;
    agent.wrapup?.();
    agent.wrapup = null;
    agent.legs.clear();
    agent.memberships.clear();
    this.#event(agent, "AgentLoggedOut");
    Object.assign(agent, {
      logged: false,
      paused: false,
      pausedReason: null,
      extension: null,
      context: null,
      loggedSinceMs: null,
    });
    this.#version++;
  }

  /**
   * Pausing shows `AgentOnPause` at once when ready (ringing, on a call or in wrap-up it shows when
   * that ends); unpausing shows `AgentReady` when on pause and ends a wrap-up at once.
   */
  #paused(agent: AgentState, paused: boolean, reason: string | null): void {
    const changed = agent.paused !== paused;
    agent.paused = paused;
    agent.pausedReason = reason;
    this.#version++;
    if (!changed) return;
    if (paused && agent.state === "AgentReady") this.#event(agent, "AgentOnPause");
    if (!paused && agent.state === "AgentOnPause") this.#event(agent, "AgentReady");
    if (!paused && agent.state === "AgentOnWrapup") this.#endWrapup(agent, true);
  }

  /** Ends the wrap-up; `announce`: the agent is free, or rings for a call offered meanwhile. */
  #endWrapup(agent: AgentState, announce: boolean): void {
    agent.wrapup?.();
    agent.wrapup = null;
    if (announce && agent.legs.size > 0) this.#event(agent, "AgentRinging");
    else if (announce) this.#free(agent);
  }

  #free(agent: AgentState): void {
    this.#event(agent, agent.paused ? "AgentOnPause" : "AgentReady");
  }

  /** `QueuePause` in each of the agent's queues; answers how many (each says `QueueMemberPause`). */
  async #queuePause(agent: AgentState, paused: boolean, reason: string | null): Promise<number> {
    let sent = 0;
    for (const [queue, { iface }] of agent.memberships) {
      const response = await this.ctx.action("QueuePause", {
        Queue: queue,
        Interface: iface,
        Paused: paused ? "true" : "false",
        Reason: reason ?? undefined,
      });
      if (!response.ok) {
        throw new PlatformRefusal("pbx_refused", pbxMessage("QueuePause", response));
      }
      sent++;
    }
    return sent;
  }

  #event(agent: AgentState, name: AgentStateName): void {
    agent.state = name;
    agent.sinceMs = this.ctx.clock.now();
    this.#version++;
    const talking = [...agent.legs].find((leg) => leg.answeredMs !== null);
    this.ctx.emit(agentStateEvent(this.ctx.dir(), agent, name, talking?.record ?? null));
  }
}

/** What the PBX answered to an action it refused, for a refusal's message. */
export function pbxMessage(action: string, response: AmiResponse): string {
  return `Asterisk refused ${action}: ${response.message.get("Message") ?? "no reason given"}`;
}

/**
 * Queues of the simulated PBX: a waiting call is offered to one member agent at a time (logged,
 * not paused, ready, its phone free; lowest penalty, then longest idle first), rung 15 s, and
 * released after 30 s in the queue.
 */
import type { QueueRecord } from "../../store/queues.ts";
import type { Phone } from "../directory.ts";
import { agentEvent } from "./agents.ts";
import {
  endCall,
  endLeg,
  establish,
  leftQueue,
  markRung,
  newLeg,
  phoneEvent,
  phoneLeg,
  queueEvent,
  ringLeg,
} from "./legs.ts";
import type { WaitingCall } from "../port.ts";
import {
  AGENT_RING_MS,
  type AgentState,
  type Call,
  type Leg,
  QUEUE_WAIT_MS,
  type SimState,
  type Step,
} from "./state.ts";

/**
 * `call` waits in `queue`; `party` is the leg connected to the agent once it answers (null for a
 * dial from queue, where the agent then calls the destination). Offers are made at step end.
 */
export function enqueue(step: Step, call: Call, queue: QueueRecord, party: Leg | null): void {
  const number = queue.number ?? queue.name;
  const leg = newLeg(step, call, { role: "queue", name: number, number, otherDN: "" });
  leg.state = "waiting";
  const caller = call.kind === "user" && call.src.userId !== null
    ? step.dir.users.get(call.src.userId)
    : undefined;
  call.wait = {
    queueId: queue.id,
    order: step.sim.nextWaitOrder(),
    leg,
    party,
    offer: null,
    agentSees: call.kind === "user" ? call.shownNumber : call.dialled,
    number,
    callerName: caller ? [caller.firstname, caller.lastname].filter(Boolean).join(" ") : "",
    sinceMs: step.now,
  };
  const position = waitingIn(step, queue.id).length;
  queueEvent(step, call, "joined", { position });
  step.later(leg, QUEUE_WAIT_MS, (next) => {
    if (call.ended || call.wait?.leg !== leg) return;
    leftQueue(next, call, "timeout");
    return endCall(next, call);
  });
}

/** The calls waiting in queue `queueId`, longest waiting first. */
function waitingIn(step: Pick<Step, "sim">, queueId: number): Call[] {
  return [...step.sim.calls.values()]
    .filter((call) => !call.ended && call.wait?.queueId === queueId)
    .sort((a, b) => a.wait!.order - b.wait!.order);
}

/** The calls waiting in every queue now, each queue's in order. */
export function waitingCalls(sim: SimState): WaitingCall[] {
  const calls = [...sim.calls.values()].filter((call) => !call.ended && call.wait)
    .sort((a, b) => a.wait!.order - b.wait!.order);
  const positions = new Map<number, number>();
  return calls.map((call) => {
    const wait = call.wait!;
    const position = (positions.get(wait.queueId) ?? 0) + 1;
    positions.set(wait.queueId, position);
    return {
      queueId: wait.queueId,
      linkedId: call.linkedId,
      callerNumber: wait.agentSees,
      callerName: wait.callerName,
      position,
      sinceMs: wait.sinceMs,
    };
  });
}

/**
 * Calls `number` dialled in `context` for `call`: `reachNumber` of `calls.ts`, handed in (calls
 * reach queues, so queues do not import calls).
 */
export type Reach = (step: Step, call: Call, number: string, context: string) => Promise<void>;

/**
 * Offers every waiting call with no agent ringing to a free agent, longest waiting first; `reach`
 * calls the destination of a dial from queue once its agent answers.
 */
export async function dispatch(step: Step, reach: Reach): Promise<void> {
  const waiting = [...step.sim.calls.values()]
    .filter((call) => !call.ended && call.wait && !call.wait.offer)
    .sort((a, b) => a.wait!.order - b.wait!.order);
  for (const call of waiting) {
    const queue = call.wait ? step.dir.queues.get(call.wait.queueId) : undefined;
    if (!queue || call.ended || call.wait?.offer) continue;
    const found = freeAgent(step, queue);
    if (found) await offer(step, call, queue, found.agent, found.phone, reach);
  }
}

/** The member agent to offer a call of `queue` to, with its phone; null when none is free. */
export function freeAgent(
  step: Step,
  queue: QueueRecord,
): { agent: AgentState; phone: Phone } | null {
  const candidates = queue.members.flatMap((member) => {
    const agent = step.sim.agents.get(member.agent_id);
    if (!agent?.logged || agent.paused || agent.state !== "AgentReady" || agent.leg) return [];
    const phone = step.dir.phoneAt(agent.extension ?? "", agent.context ?? "");
    if (!phone) return [];
    const { policy } = step.sim.policyOf(phone.extension);
    if (policy === "busy" || policy === "unavailable" || step.sim.legsOf(phone).length) return [];
    return [{ agent, phone, penalty: member.penalty }];
  });
  candidates.sort((a, b) =>
    a.penalty - b.penalty || a.agent.idleSince - b.agent.idleSince ||
    a.agent.agentId - b.agent.agentId
  );
  return candidates[0] ?? null;
}

/** Rings `agent`'s phone for `call`: `AgentRinging`, then its user's `EventRinging`. */
async function offer(
  step: Step,
  call: Call,
  queue: QueueRecord,
  agent: AgentState,
  phone: Phone,
  reach: Reach,
): Promise<void> {
  const wait = call.wait!;
  const leg = phoneLeg(step, call, phone, "agent", wait.agentSees, {
    agentId: agent.agentId,
    queueId: queue.id,
    queued: wait,
  });
  wait.offer = leg;
  agent.leg = leg;
  agentEvent(step, agent, "AgentRinging");
  // not answered: the agent is free again at step end and the call is offered again
  const missed = (next: Step) => {
    if (leg.announced) phoneEvent(next, leg, "EventReleased");
    endLeg(next, leg);
    if (call.wait?.offer === leg) call.wait.offer = null;
  };
  await ringLeg(step, leg, AGENT_RING_MS, {
    ringing: (next) => {
      markRung(call, leg, wait.number);
      phoneEvent(next, leg, "EventRinging");
    },
    answered: (next) => agentAnswered(next, call, leg, reach),
    rejected: missed,
    busy: missed,
    noAnswer: missed,
  });
}

/**
 * The agent answered: `AgentOnCall`; a dial from queue now calls its destination from the
 * agent's phone, other calls connect the waiting party and the agent.
 */
async function agentAnswered(step: Step, call: Call, leg: Leg, reach: Reach): Promise<void> {
  const wait = call.wait;
  if (!wait) return;
  leftQueue(step, call, "answered", leg.agentId ?? undefined);
  endLeg(step, wait.leg);
  const agent = leg.agentId === null ? undefined : step.sim.agents.get(leg.agentId);
  if (agent?.leg === leg) agentEvent(step, agent, "AgentOnCall");
  if (call.kind === "from_queue") {
    call.origin = leg;
    leg.otherDN = call.dialled;
    call.src = { userId: leg.userId, username: leg.username, number: leg.name };
    phoneEvent(step, leg, "EventDialing");
    await reach(step, call, call.dialled, call.context);
    return;
  }
  const talking = wait.party ? [wait.party, leg] : [leg];
  establish(step, call, leg, talking, call.kind === "user" ? talking : [leg]);
}

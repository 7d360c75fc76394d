/**
 * Legs of the simulated PBX's calls and the end of a call: a leg rings by its phone's policy,
 * answers, is rejected, held, resumed or hung up; each party's phone events; the two parties
 * established; the call failed or ended, with its history (decisions §8 and docs/platform.md).
 * Calls reach their destination above, in `calls.ts`; agents and queues use these too.
 */
import { historyOf } from "../call_records.ts";
import type { PhoneEventType, QueueCallEvent } from "../port.ts";
import type { Directory, Phone } from "../directory.ts";
import type { Bridge, Call, Leg, LegRole, QueueWait, RingHandlers, Step } from "./state.ts";

/** Adds a leg to `call`; the first leg takes the call's linkedId as its uniqueId. */
export function newLeg(
  step: Step,
  call: Call,
  fields: Pick<Leg, "role" | "name" | "otherDN"> & Partial<Leg>,
): Leg {
  const leg: Leg = {
    uniqueId: call.legs.length ? step.sim.newId(step.now) : call.linkedId,
    call,
    lineId: null,
    number: null,
    userId: null,
    username: "",
    dn: null,
    state: "ringing",
    ended: false,
    announced: false,
    selfAnswered: false,
    answeredMs: null,
    agentId: null,
    queueId: null,
    queued: null,
    handlers: null,
    timers: new Set(),
    createdMs: step.now,
    bridge: null,
    heldBy: null,
    holdPeer: null,
    music: false,
    muted: false,
    record: "inactive",
    heardDigits: "",
    transfer: null,
    pinPrompt: null,
    ...fields,
  };
  call.legs.push(leg);
  // the party an attended transfer's consultation rings is its recipient (the last one rung)
  if (call.transfer && (leg.role === "callee" || leg.role === "agent")) {
    call.transfer.recipient = leg;
  }
  return leg;
}

/** A leg on `phone`, its events going to the phone's user. */
export function phoneLeg(
  step: Step,
  call: Call,
  phone: Phone,
  role: LegRole,
  otherDN: string,
  extra: Partial<Leg> = {},
): Leg {
  return newLeg(step, call, {
    role,
    name: phone.extension,
    lineId: phone.lineId,
    userId: phone.userId,
    username: phone.username,
    otherDN,
    ...extra,
  });
}

/** The context `leg`'s phone dials in (its call's for a leg on no phone). */
export const legContext = (dir: Directory, leg: Leg): string =>
  (leg.lineId === null ? null : dir.phoneOfLine(leg.lineId))?.context ?? leg.call.context;

/** Sends a phone event of `leg` to its user (none when the leg has no user). */
export function phoneEvent(
  step: Step,
  leg: Leg,
  eventType: PhoneEventType,
  otherDN = leg.otherDN,
): void {
  if (leg.userId === null) return;
  leg.announced = true;
  const call = leg.call;
  const context = legContext(step.dir, leg);
  step.emit({
    kind: "phone",
    userId: leg.userId,
    username: leg.username,
    eventType,
    DN: leg.dn ?? leg.name,
    otherDN,
    otherDName: step.dir.nameOf(otherDN, context, {
      number: call.shownNumber,
      name: call.shownName,
    }),
    linkedId: call.linkedId,
    uniqueId: leg.uniqueId,
    userData: { PLATFORM_USERID: String(leg.userId), ...call.userData },
    recordState: leg.record,
    ...(leg.queueId !== null && { queueId: leg.queueId }),
  });
}

/**
 * Ends `leg` without any event: its timers are cancelled, it leaves its bridge and its hold; an
 * agent's is settled at step end.
 */
export function endLeg(step: Step, leg: Leg): void {
  if (leg.ended) return;
  leg.ended = true;
  cancelTimers(leg);
  unbridge(leg);
  if (leg.holdPeer?.holdPeer === leg) leg.holdPeer.holdPeer = null;
  leg.holdPeer = null;
  if (leg.agentId !== null) step.sim.endedAgentLegs.push(leg);
}

/** `leg` ends: `EventReleased` to its user when it had an event. */
export function release(step: Step, leg: Leg): void {
  if (leg.ended) return;
  if (leg.announced) phoneEvent(step, leg, "EventReleased");
  endLeg(step, leg);
}

/** A call none of whose parties is left ends (its history). */
export async function endIfIdle(step: Step, call: Leg["call"]): Promise<void> {
  if (!call.ended && call.legs.every((leg) => leg.ended || leg.role === "queue")) {
    await endCall(step, call);
  }
}

/** `legs` talk together, out of the bridges they were in (a conference's when one is given). */
export function bridgeLegs(legs: Leg[], conference: Bridge["conference"] = null): Bridge {
  const bridge: Bridge = conference?.bridge ?? { legs: new Set(), conference };
  for (const leg of legs) {
    if (leg.bridge !== bridge) unbridge(leg);
    bridge.legs.add(leg);
    leg.bridge = bridge;
  }
  return bridge;
}

/** `leg` leaves the parties it talked with. */
export function unbridge(leg: Leg): void {
  leg.bridge?.legs.delete(leg);
  leg.bridge = null;
}

/** The other parties `leg` hears. */
export const peersOf = (leg: Leg): Leg[] =>
  leg.bridge ? [...leg.bridge.legs].filter((other) => other !== leg) : [];

export function cancelTimers(owner: { timers: Set<() => void> }): void {
  for (const cancel of [...owner.timers]) cancel();
  owner.timers.clear();
}

/**
 * Rings `leg` by its phone's policy: `busy` refuses at once, `unavailable` counts as not
 * answered at once, `auto` answers after `answer_ms`, and nothing answers after `ringMs`. The
 * handlers end the leg as they see fit.
 */
export async function ringLeg(
  step: Step,
  leg: Leg,
  ringMs: number,
  handlers: RingHandlers,
): Promise<void> {
  leg.handlers = handlers;
  const policy = step.sim.policyOf(leg.name);
  if (policy.policy === "busy") return await handlers.busy(step, leg);
  if (policy.policy === "unavailable") return await handlers.noAnswer(step, leg);
  handlers.ringing?.(step, leg);
  if (policy.policy === "auto") {
    step.later(leg, policy.answer_ms, (next) => answerLeg(next, leg, true));
  }
  step.later(leg, ringMs, async (next) => {
    if (leg.ended || leg.state !== "ringing") return;
    cancelTimers(leg);
    await handlers.noAnswer(next, leg);
  });
}

/** A ringing leg answers, by itself (`auto` policy) or through the control API. */
export async function answerLeg(step: Step, leg: Leg, bySelf: boolean): Promise<void> {
  if (leg.ended || leg.state !== "ringing") return;
  cancelTimers(leg);
  leg.state = "up";
  leg.selfAnswered = bySelf;
  leg.answeredMs = step.now;
  const rung = leg.userId === null ? undefined : leg.call.rung.get(leg.userId);
  if (rung && leg.role !== "originate") rung.answeredMs = step.now;
  await leg.handlers?.answered(step, leg);
}

/** A ringing leg is rejected through the control API. */
export async function rejectLeg(step: Step, leg: Leg): Promise<void> {
  if (leg.ended || leg.state !== "ringing") return;
  cancelTimers(leg);
  await leg.handlers?.rejected(step, leg);
}

/** A party that answered hangs up, by the rules of call_control.ts (`SimState.hangup`). */
export async function hangupLeg(step: Step, leg: Leg): Promise<void> {
  if (leg.ended || (leg.state !== "up" && leg.state !== "on_hold")) return;
  await step.sim.hangup(step, leg);
}

/**
 * The phone puts an up leg on hold (it stays with its peer, who hears music): its user gets
 * `EventOnHold`.
 */
export function holdLeg(step: Step, leg: Leg): void {
  leg.state = "on_hold";
  leg.heldBy = "phone";
  phoneEvent(step, leg, "EventOnHold");
}

/** The phone takes its held leg back: its user gets `EventEstablished` again. */
export function resumeLeg(step: Step, leg: Leg): void {
  leg.state = "up";
  leg.heldBy = null;
  phoneEvent(step, leg, "EventEstablished");
}

/** Records that `leg`'s user was rung, reached by `number`. */
export function markRung(call: Call, leg: Leg, number: string): void {
  if (leg.userId === null) return;
  const known = call.rung.get(leg.userId);
  call.rung.set(leg.userId, {
    username: leg.username,
    number,
    answeredMs: known?.answeredMs ?? null,
    ...(call.ringSrc && { src: call.ringSrc }),
  });
}

/**
 * `talking` talk together: each of `announce` gets `EventEstablished`, and every one of them that
 * answered by itself will hang up after its phone's `talk_ms`.
 */
export function establish(
  step: Step,
  call: Call,
  answering: Leg,
  talking: Leg[],
  announce: Leg[] = talking,
): void {
  call.established = true;
  call.answeredMs ??= step.now;
  call.answeredBy ??= answering.userId === null ? null : answering.username;
  const transfer = call.transfer;
  if (transfer && talking.includes(transfer.initiator)) {
    transfer.status = "answered";
    transfer.recipient = answering;
  }
  bridgeLegs(talking);
  for (const leg of announce) phoneEvent(step, leg, "EventEstablished");
  for (const leg of talking) {
    if (leg.ended || !leg.selfAnswered || leg.timers.size) continue;
    const talkMs = step.sim.policyOf(leg.name).talk_ms;
    if (talkMs > 0) step.later(leg, talkMs, (next) => hangupLeg(next, leg));
  }
}

/** The calling party gets `EventFailure` (busy, refused, too many forwards); the call ends. */
export async function failCall(step: Step, call: Call): Promise<void> {
  const origin = call.origin;
  if (origin && !origin.ended) {
    phoneEvent(step, origin, "EventFailure");
    endLeg(step, origin);
  }
  await endCall(step, call);
}

/** A queue event of `call` (supervision): who waits, as its wait tells. */
export function queueEvent(
  step: Step,
  call: Call,
  event: QueueCallEvent["event"],
  fields: Pick<QueueCallEvent, "position" | "waitMs" | "agentId" | "talkMs"> = {},
  wait: QueueWait | null = call.wait,
): void {
  if (!wait) return;
  step.emit({
    kind: "queue_call",
    event,
    queueId: wait.queueId,
    linkedId: call.linkedId,
    callerNumber: wait.agentSees,
    callerName: wait.callerName,
    ...fields,
  });
}

/** `call` leaves its queue: answered (by `agentId`), abandoned or on the queue's timeout. */
export function leftQueue(
  step: Step,
  call: Call,
  event: "answered" | "abandoned" | "timeout",
  agentId?: number,
): void {
  const wait = call.wait;
  if (!wait) return;
  const waitMs = step.now - wait.sinceMs;
  queueEvent(step, call, event, agentId === undefined ? { waitMs } : { waitMs, agentId });
  call.wait = null;
}

/**
 * Ends `call`: every party that got an event gets `EventReleased` (in leg order), agents go to
 * wrap-up at step end, and the history records are emitted as a `CallEnded`. A call still waiting
 * in a queue is abandoned.
 */
export function endCall(step: Step, call: Call): Promise<void> {
  if (call.ended) return Promise.resolve();
  leftQueue(step, call, "abandoned");
  call.ended = true;
  if (call.voicemailId !== null) {
    // the message is left as the caller hangs up, before its release (as Asterisk's VoiceMail)
    const counts = step.sim.mailboxes.get(call.voicemailId) ?? { newMessages: 0, oldMessages: 0 };
    counts.newMessages++;
    step.sim.mailboxes.set(call.voicemailId, counts);
    step.emit({ kind: "voicemail", voicemailId: call.voicemailId, ...counts });
  }
  for (const leg of call.legs) {
    if (leg.ended) continue;
    if (leg.announced) phoneEvent(step, leg, "EventReleased");
    endLeg(step, leg);
  }
  cancelTimers(call);
  call.wait = null;
  step.sim.calls.delete(call.linkedId);
  const spy = call.spy;
  if (spy?.started) {
    spy.started = false;
    const { target: _, started: __, ...fields } = spy;
    step.emit({ kind: "listen", started: false, ...fields, linkedId: call.linkedId });
  }

  const records = call.noHistory ? [] : historyOf(call, step.now);
  if (records.length) step.emit({ kind: "call_ended", linkedId: call.linkedId, records });
  return Promise.resolve();
}

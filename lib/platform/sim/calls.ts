/**
 * Calls of the simulated PBX: legs that ring by their phone's policy, the callee features (DND,
 * forwards, simultaneous calls), the phone events of each party and the history of each call
 * (decisions §8 and docs/platform.md).
 */
import { sanitizeNumber } from "../../phone_numbers.ts";
import type { ForwardKind, UserRecord } from "../../store/users.ts";
import { historyOf } from "../call_records.ts";
import { type CallVariables, type PhoneEventType, usrVariables } from "../port.ts";
import type { Phone, Target } from "../directory.ts";
import { enqueue } from "./queues.ts";
import {
  type Call,
  type CallSource,
  EXTERNAL,
  EXTERNAL_RING_MS,
  type Leg,
  type LegRole,
  MAX_REDIRECTIONS,
  type RingHandlers,
  type Step,
} from "./state.ts";

/** Starts a call (no leg yet); its linkedId is the id its first leg will take. */
export function newCall(
  step: Step,
  fields: Pick<Call, "kind" | "context" | "dialled" | "shownNumber" | "src"> & {
    variables: CallVariables;
  },
): Call {
  const { variables, ...rest } = fields;
  const call: Call = {
    ...rest,
    linkedId: step.sim.newId(step.now),
    startMs: step.now,
    userData: usrVariables(variables),
    legs: [],
    origin: null,
    dialledUsername: "",
    toQueueId: null,
    established: false,
    answeredMs: null,
    answeredBy: null,
    redirections: 0,
    rung: new Map(),
    wait: null,
    noHistory: false,
    ended: false,
    timers: new Set(),
  };
  step.sim.calls.set(call.linkedId, call);
  return call;
}

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
    handlers: null,
    timers: new Set(),
    ...fields,
  };
  call.legs.push(leg);
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

/** Sends a phone event of `leg` to its user (none when the leg has no user). */
export function phoneEvent(
  step: Step,
  leg: Leg,
  eventType: PhoneEventType,
  otherDN = leg.otherDN,
): void {
  if (leg.userId === null) return;
  leg.announced = true;
  step.emit({
    kind: "phone",
    userId: leg.userId,
    username: leg.username,
    eventType,
    DN: leg.dn ?? leg.name,
    otherDN,
    linkedId: leg.call.linkedId,
    uniqueId: leg.uniqueId,
    userData: { PLATFORM_USERID: String(leg.userId), ...leg.call.userData },
  });
}

/** Ends `leg` without any event: its timers are cancelled; an agent's is settled at step end. */
export function endLeg(step: Step, leg: Leg): void {
  if (leg.ended) return;
  leg.ended = true;
  cancelTimers(leg);
  if (leg.agentId !== null) step.sim.endedAgentLegs.push(leg);
}

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

/** A party hangs up: the whole call ends (two-party calls). */
export async function hangupLeg(step: Step, leg: Leg): Promise<void> {
  if (leg.ended || (leg.state !== "up" && leg.state !== "on_hold")) return;
  await endCall(step, leg.call);
}

/** Puts an up leg of an established call on hold: its user gets `EventOnHold`. */
export function holdLeg(step: Step, leg: Leg): void {
  leg.state = "on_hold";
  phoneEvent(step, leg, "EventOnHold");
}

/** Takes a held leg back: its user gets `EventEstablished` again. */
export function resumeLeg(step: Step, leg: Leg): void {
  leg.state = "up";
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
  });
}

/**
 * A user dials: its phone rings first (the originate leg, no event while it rings); once it
 * answers the user gets `EventDialing` and `destination` is called. A failed originate leg gives
 * `EventFailure` and no history. With `mobile` (a dial from mobile) the originate leg is the
 * outside network on that number instead, by the `external` policy, for as long as the user's
 * phone would ring: its events go to the caller as if it were the caller's phone (`DN` = the
 * phone's extension), and everything else is the same.
 */
export async function dialFromPhone(
  step: Step,
  caller: UserRecord,
  phone: Phone,
  dialled: string,
  variables: CallVariables,
  destination: (step: Step) => Target | null,
  mobile: string | null = null,
): Promise<Call> {
  const src: CallSource = {
    userId: caller.id,
    username: caller.username ?? "",
    number: phone.extension,
  };
  const call = newCall(step, {
    kind: "user",
    context: phone.context,
    dialled,
    shownNumber: phone.extension,
    src,
    variables,
  });
  const leg = mobile === null
    ? phoneLeg(step, call, phone, "originate", dialled)
    : newLeg(step, call, {
      role: "originate",
      name: EXTERNAL,
      number: mobile,
      userId: caller.id,
      username: caller.username ?? "",
      dn: phone.extension,
      otherDN: dialled,
    });
  call.origin = leg;
  const fail = (next: Step) => {
    call.noHistory = true;
    return failCall(next, call);
  };
  const ringSeconds = step.dir.users.get(caller.id)?.ring_seconds ?? caller.ring_seconds;
  await ringLeg(step, leg, ringSeconds * 1000, {
    answered: async (next) => {
      phoneEvent(next, leg, "EventDialing");
      const target = destination(next);
      if (target) await reachTarget(next, call, target, dialled);
      else await failCall(next, call);
    },
    rejected: fail,
    busy: fail,
    noAnswer: fail,
  });
  return call;
}

/** Calls `number` dialled in `context` for `call`. */
export function reachNumber(step: Step, call: Call, number: string, context: string) {
  return reachTarget(step, call, step.dir.resolve(number, context), number);
}

/** Calls `target`, reached by `number`, for `call`. */
export async function reachTarget(
  step: Step,
  call: Call,
  target: Target,
  number: string,
): Promise<void> {
  if (call.redirections === 0 && target.kind === "phone") {
    call.dialledUsername = target.phone.username;
  }
  if (target.kind === "phone") return await reachPhone(step, call, target.phone, number);
  if (target.kind === "external") return await reachExternal(step, call, number);
  if (call.kind === "to_queue") {
    // a queue cannot answer a call that waits in a queue once answered: nothing to connect
    return await endCall(step, call);
  }
  enqueue(step, call, target.queue, call.origin);
}

/** The forward of `kind` of `user` when enabled with a destination, sanitized. */
function forwardOf(user: UserRecord | null, kind: ForwardKind): string | null {
  const forward = user?.forwards[kind];
  if (!forward?.enabled) return null;
  return sanitizeNumber(forward.destination ?? "") || null;
}

/** Redirects `call` to `destination` from `context`; one redirection too many fails it. */
async function redirect(step: Step, call: Call, destination: string, context: string) {
  if (++call.redirections > MAX_REDIRECTIONS) return await failCall(step, call);
  await reachNumber(step, call, destination, context);
}

/**
 * An internal destination, callee features in this order: DND (busy), unconditional forward,
 * busy (simultaneous calls reached or `busy` policy: busy forward or failure), then the phone
 * rings until answered, rejected or `ring_seconds` (no-answer forward, else missed).
 */
async function reachPhone(step: Step, call: Call, phone: Phone, number: string): Promise<void> {
  const user = phone.userId === null ? null : step.dir.users.get(phone.userId) ?? null;
  const busy = async (next: Step) => {
    const forward = forwardOf(user, "busy");
    if (forward) await redirect(next, call, forward, phone.context);
    else await failCall(next, call);
  };
  if (user) {
    if (user.services.dnd.enabled) return await failCall(step, call);
    const unconditional = forwardOf(user, "unconditional");
    if (unconditional) return await redirect(step, call, unconditional, phone.context);
    if (step.sim.callsOfUser(user.id) >= user.simultaneous_calls) return await busy(step);
  }
  const leg = phoneLeg(step, call, phone, "callee", call.shownNumber);
  await ringLeg(step, leg, (user?.ring_seconds ?? 30) * 1000, {
    ringing: (next) => {
      markRung(call, leg, number);
      phoneEvent(next, leg, "EventRinging");
    },
    answered: (next) => connect(next, call, leg),
    // a rejection is busy, as on a real PBX (SIP 486): the busy forward applies
    rejected: (next) => {
      phoneEvent(next, leg, "EventReleased");
      endLeg(next, leg);
      return busy(next);
    },
    busy: (next) => {
      endLeg(next, leg);
      return busy(next);
    },
    noAnswer: async (next) => {
      // the phone stops ringing first (as a PBX reports it), then the call goes on or ends
      if (leg.announced) phoneEvent(next, leg, "EventReleased");
      endLeg(next, leg);
      // read again: a forward set while the phone rang applies
      const current = phone.userId === null ? null : next.dir.users.get(phone.userId) ?? null;
      const forward = forwardOf(current, "noanswer");
      if (!forward) return await endCall(next, call); // missed
      await redirect(next, call, forward, phone.context);
    },
  });
}

/** The outside network, by the `external` policy; only the calling side gets events. */
async function reachExternal(step: Step, call: Call, number: string): Promise<void> {
  const leg = newLeg(step, call, { role: "callee", name: EXTERNAL, number, otherDN: "" });
  await ringLeg(step, leg, EXTERNAL_RING_MS, {
    answered: (next) => connect(next, call, leg),
    rejected: (next) => failCall(next, call),
    busy: (next) => failCall(next, call),
    noAnswer: (next) => endCall(next, call),
  });
}

/**
 * The destination answered: the calling party and it are established, or (to-queue calls) the
 * destination is established and the call waits in the queue.
 */
async function connect(step: Step, call: Call, leg: Leg): Promise<void> {
  if (call.kind === "to_queue") {
    phoneEvent(step, leg, "EventEstablished");
    const queue = call.toQueueId === null ? undefined : step.dir.queues.get(call.toQueueId);
    if (!queue) return await endCall(step, call);
    enqueue(step, call, queue, leg);
    return;
  }
  establish(step, call, leg, call.origin ? [call.origin, leg] : [leg]);
}

/**
 * The two parties talk: each of `announce` gets `EventEstablished`, and every party that answered
 * by itself will hang up after its phone's `talk_ms`.
 */
export function establish(step: Step, call: Call, answering: Leg, announce: Leg[]): void {
  call.established = true;
  call.answeredMs ??= step.now;
  call.answeredBy ??= answering.userId === null ? null : answering.username;
  for (const leg of announce) phoneEvent(step, leg, "EventEstablished");
  for (const leg of call.legs) {
    if (leg.ended || !leg.selfAnswered) continue;
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

/**
 * Ends `call`: every party that got an event gets `EventReleased` (in leg order), agents go to
 * wrap-up at step end, and the history records are emitted as a `CallEnded`.
 */
export function endCall(step: Step, call: Call): Promise<void> {
  if (call.ended) return Promise.resolve();
  call.ended = true;
  for (const leg of call.legs) {
    if (leg.ended) continue;
    if (leg.announced) phoneEvent(step, leg, "EventReleased");
    endLeg(step, leg);
  }
  cancelTimers(call);
  call.wait = null;
  step.sim.calls.delete(call.linkedId);
  const records = call.noHistory ? [] : historyOf(call, step.now);
  if (records.length) step.emit({ kind: "call_ended", linkedId: call.linkedId, records });
  return Promise.resolve();
}

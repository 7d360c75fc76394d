/**
 * Calls of the simulated PBX and how they reach their destination: a user's dial, the callee
 * features (DND, forwards, simultaneous calls), a phone, the outside network or a queue
 * (decisions §8 and docs/platform.md). Legs ring, send each party's phone events and end, and a
 * call ends with its history, in `legs.ts`.
 */
import { sanitizeNumber } from "../../phone_numbers.ts";
import type { ForwardKind, UserRecord } from "../../store/users.ts";
import { type CallVariables, usrVariables } from "../port.ts";
import { type Phone, type Target, userName } from "../directory.ts";
import {
  endCall,
  endLeg,
  establish,
  failCall,
  markRung,
  newLeg,
  phoneEvent,
  phoneLeg,
  ringLeg,
} from "./legs.ts";
import { enqueue } from "./queues.ts";
import { reachRoom } from "./rooms.ts";
import { toVoicemail } from "./voicemail.ts";
import {
  type Call,
  type CallSource,
  EXTERNAL,
  EXTERNAL_RING_MS,
  type Leg,
  MAX_REDIRECTIONS,
  type Step,
} from "./state.ts";

/** Starts a call (no leg yet); its linkedId is the id its first leg will take. */
export function newCall(
  step: Step,
  fields: Pick<Call, "kind" | "context" | "dialled" | "shownNumber" | "shownName" | "src"> & {
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
    ringSrc: null,
    transfer: null,
    spy: null,
    voicemailId: null,
  };
  step.sim.calls.set(call.linkedId, call);
  return call;
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
    shownName: userName(caller),
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
  if (target.kind === "room") {
    // the party that dialled joins; a call with nobody dialling it (to queue) has none
    if (!call.origin) return await endCall(step, call);
    return await reachRoom(step, call.origin, target.room, target.invited ?? false);
  }
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

/**
 * Calls `number` dialled in `context` from `from`, a party of `call` already there (a transfer):
 * what is rung sees `from` calling, and the call goes on as a user's dial from `from` (forwards and
 * all), or, with `transfer`, as the attended transfer's consultation, whose failure undoes it.
 */
export async function dialFrom(
  step: Step,
  call: Call,
  from: Leg,
  number: string,
  context: string,
  transfer: Call["transfer"] = null,
): Promise<void> {
  call.kind = "user";
  call.origin = from;
  call.shownNumber = numberOf(from);
  call.shownName = ""; // the phone's user by its number, else nobody known
  call.ringSrc = { username: from.username, number: call.shownNumber };
  call.redirections = 0;
  call.transfer = transfer;
  from.otherDN = number;
  await reachNumber(step, call, number, context);
}

/** The number a party is reached by: its phone's extension, or the outside number. */
export const numberOf = (leg: Leg): string => leg.number ?? leg.dn ?? leg.name;

/** The dial reached nobody (busy, refused, looping forwards): it fails, or undoes its transfer. */
const dialFailed = (step: Step, call: Call) =>
  call.transfer ? call.transfer.failed(step) : failCall(step, call);

/** The dial was not answered: the call is missed, or its transfer undone. */
const dialMissed = (step: Step, call: Call) =>
  call.transfer ? call.transfer.failed(step) : endCall(step, call);

/** Redirects `call` to `destination` from `context`; one redirection too many fails it. */
async function redirect(step: Step, call: Call, destination: string, context: string) {
  if (++call.redirections > MAX_REDIRECTIONS) return await dialFailed(step, call);
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
    else await dialFailed(next, call);
  };
  if (user) {
    if (user.services.dnd.enabled) return await dialFailed(step, call);
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
      if (forward) return await redirect(next, call, forward, phone.context);
      // the voicemail answers (a consultation's dial never reaches it: its transfer is undone)
      const voicemail = call.transfer ? null : next.dir.voicemailOfUser(phone.userId);
      if (voicemail) return toVoicemail(next, call, voicemail);
      await dialMissed(next, call); // missed
    },
  });
}

/** The outside network, by the `external` policy; only the calling side gets events. */
async function reachExternal(step: Step, call: Call, number: string): Promise<void> {
  const leg = newLeg(step, call, { role: "callee", name: EXTERNAL, number, otherDN: "" });
  await ringLeg(step, leg, EXTERNAL_RING_MS, {
    answered: (next) => connect(next, call, leg),
    rejected: (next) => dialFailed(next, call),
    busy: (next) => dialFailed(next, call),
    noAnswer: (next) => dialMissed(next, call),
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

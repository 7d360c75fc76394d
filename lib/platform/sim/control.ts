/**
 * The simulator's control API (decisions §8): what each phone is doing, the calls in progress,
 * and the hand of a person on a phone (answer, reject, hang up, hold, resume).
 */
import { type PhoneStatus, PlatformRefusal } from "../port.ts";
import { answerLeg, hangupLeg, holdLeg, rejectLeg, resumeLeg } from "./legs.ts";
import { callCommand } from "./call_control.ts";
import type { Directory, Phone } from "../directory.ts";
import {
  EXTERNAL,
  type Leg,
  type LegState,
  type PhonePolicy,
  POLICY_NAMES,
  type PolicyName,
  type SimState,
  type Step,
} from "./state.ts";

/** What a phone is doing, as `GET /sim/phones` shows it. */
export type PhoneState = "idle" | "ringing" | "calling" | "busy" | "on_hold";

/** A phone of the control API. */
export interface SimPhone {
  extension: string;
  /** The line's user, "" for a line without user and for `external`. */
  username: string;
  state: PhoneState;
  policy: PolicyName;
  answer_ms: number;
  talk_ms: number;
  /** LinkedIds of the calls the phone is in, oldest first. */
  calls: string[];
}

/**
 * A leg of the control API: a phone's `extension`, or a `number` (outside or queue); `dtmf`, the
 * DTMF digits it heard from the others, when it heard some.
 */
export type SimLeg =
  & { uniqueId: string; state: LegState; dtmf?: string }
  & ({ extension: string } | { number: string });

export interface SimCall {
  linkedId: string;
  legs: SimLeg[];
}

export type SimAction = "answer" | "reject" | "hangup" | "hold" | "resume";

export const SIM_ACTIONS: readonly SimAction[] = ["answer", "reject", "hangup", "hold", "resume"];

/** A policy change: `answer_ms` and `talk_ms` left out take the defaults. */
export interface PolicyChange {
  policy: PolicyName;
  answer_ms?: number;
  talk_ms?: number;
}

/**
 * A leg as its phone shows it: the originate leg ringing on the caller's phone and a calling
 * party not yet answered are `calling` (a user's mobile rung first by a dial from mobile rings as
 * any outside leg); a leg up otherwise is `busy`.
 */
function legPhoneState(leg: Leg): Exclude<PhoneState, "idle"> {
  if (leg.state === "on_hold") return "on_hold";
  if (leg.state === "ringing") {
    return leg.role === "originate" && leg.lineId !== null ? "calling" : "ringing";
  }
  return leg === leg.call.origin && !leg.call.established ? "calling" : "busy";
}

/** Of several calls, the phone shows the first state of this order. */
const STATE_ORDER: PhoneState[] = ["busy", "calling", "on_hold", "ringing", "idle"];

export function phoneState(legs: Leg[]): PhoneState {
  const states = new Set(legs.map(legPhoneState));
  return STATE_ORDER.find((state) => state === "idle" || states.has(state as never))!;
}

const STATUS: Record<PhoneState, PhoneStatus> = {
  idle: 0,
  calling: 1,
  busy: 2,
  ringing: 8,
  on_hold: 16,
};

/**
 * The status of `number` as the contacts list shows it (decisions §3): -2 when it is no phone's
 * extension in `default`; -1 when the user has DND or the phone is `unavailable`; else its state.
 */
export function phoneStatus(sim: SimState, dir: Directory, number: string): PhoneStatus {
  const phone = dir.phoneAt(number, "default");
  if (!phone) return -2;
  const user = phone.userId === null ? undefined : dir.users.get(phone.userId);
  if (user?.services.dnd.enabled || sim.policyOf(phone.extension).policy === "unavailable") {
    return -1;
  }
  return STATUS[phoneState(sim.legsOf(phone))];
}

/** Every phone (by extension) and then `external`. */
export function phoneList(sim: SimState, dir: Directory): SimPhone[] {
  const view = (extension: string, username: string, phone: Phone | null): SimPhone => {
    const legs = sim.legsOf(phone);
    const { policy, answer_ms, talk_ms } = sim.policyOf(extension);
    const calls = [...new Set(legs.map((leg) => leg.call.linkedId))];
    return { extension, username, state: phoneState(legs), policy, answer_ms, talk_ms, calls };
  };
  const phones = [...dir.phones]
    .filter((phone) => dir.phoneNamed(phone.extension) === phone)
    .sort((a, b) => a.extension.localeCompare(b.extension));
  return [
    ...phones.map((phone) => view(phone.extension, phone.username, phone)),
    view(EXTERNAL, "", null),
  ];
}

/** The calls in progress, oldest first, with their legs not yet ended. */
export function callList(sim: SimState): SimCall[] {
  return [...sim.calls.values()].map((call) => ({
    linkedId: call.linkedId,
    legs: call.legs.filter((leg) => !leg.ended).map((leg): SimLeg => ({
      uniqueId: leg.uniqueId,
      ...(leg.lineId !== null ? { extension: leg.name } : { number: leg.number ?? leg.name }),
      state: leg.state,
      ...(leg.heardDigits && { dtmf: leg.heardDigits }),
    })),
  }));
}

/** The phone named `extension`, null for `external`; `no_phone` when there is none. */
function controlledPhone(dir: Directory, extension: string): Phone | null {
  if (extension === EXTERNAL) return null;
  const phone = dir.phoneNamed(extension);
  if (!phone) throw new PlatformRefusal("no_phone", `no simulated phone ${extension}`);
  return phone;
}

/**
 * Acts on `extension`'s current call: `answer`/`reject` the ringing one, `hangup` the up one (else
 * the held one), `hold` the up one of an established call, `resume` the held one; the oldest when
 * there are several. `no_call` when there is nothing to act on.
 */
export function act(step: Step, extension: string, action: SimAction): Promise<void> {
  return actOn(step, controlledPhone(step.dir, extension), action);
}

/** {@link act} on `phone` (null: the outside network). */
async function actOn(step: Step, phone: Phone | null, action: SimAction): Promise<void> {
  const extension = phone?.extension ?? EXTERNAL;
  const legs = step.sim.legsOf(phone);
  const find = (test: (leg: Leg) => boolean) => legs.find(test);
  const leg = action === "answer" || action === "reject"
    ? find((leg) => leg.state === "ringing")
    : action === "hangup"
    ? find((leg) => leg.state === "up") ?? find((leg) => leg.state === "on_hold")
    : action === "hold"
    ? find((leg) => leg.state === "up" && leg.call.established)
    : find((leg) => leg.state === "on_hold");
  if (!leg) throw new PlatformRefusal("no_call", `phone ${extension} has no call to ${action}`);
  if (action === "answer") await answerLeg(step, leg, false);
  else if (action === "reject") await rejectLeg(step, leg);
  else if (action === "hangup") await hangupLeg(step, leg);
  else if (action === "hold") holdLeg(step, leg);
  else resumeLeg(step, leg);
}

/**
 * `extension`'s user presses `digits` (`0-9*#`) on the phone's call that is up: what svc's DTMF
 * command does to that party (a meeting room asking its PIN reads them).
 */
export async function pressKeys(step: Step, extension: string, digits: string): Promise<void> {
  const phone = controlledPhone(step.dir, extension);
  const leg = step.sim.legsOf(phone).find((leg) => leg.state === "up");
  if (!leg) throw new PlatformRefusal("no_call", `phone ${extension} has no call up`);
  if (!/^[0-9*#]{1,64}$/.test(digits)) {
    throw new PlatformRefusal("bad_digits", "digits are 1 to 64 of 0-9, * and #");
  }
  await callCommand(step, leg.uniqueId, { kind: "dtmf", digits });
}

/** Sets the policy of `extension` (or `external`) for its next calls. */
export function setPolicy(step: Step, extension: string, change: PolicyChange): PhonePolicy {
  controlledPhone(step.dir, extension);
  if (!POLICY_NAMES.includes(change.policy)) {
    throw new PlatformRefusal("bad_policy", `policy must be one of ${POLICY_NAMES.join(", ")}`);
  }
  for (const field of ["answer_ms", "talk_ms"] as const) {
    const value = change[field];
    if (value !== undefined && !(Number.isInteger(value) && value >= 0)) {
      throw new PlatformRefusal("bad_policy", `${field} must be an integer ≥ 0`);
    }
  }
  const policy: PhonePolicy = {
    policy: change.policy,
    answer_ms: change.answer_ms ?? step.sim.defaults.answerMs,
    talk_ms: change.talk_ms ?? step.sim.defaults.talkMs,
  };
  step.sim.policies.set(extension, policy);
  return policy;
}

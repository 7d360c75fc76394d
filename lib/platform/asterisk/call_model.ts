/**
 * What the Asterisk adapter knows of the calls in progress (docs/asterisk.md): channels grouped by
 * `Linkedid` into calls, the legs on users' phones and outside lines, and the state svc's call
 * control gives them (holds, transfers, conferences, mute, recording). The call tracker
 * (`calls.ts`) keeps it from AMI events; `call_control.ts` and `call_commands.ts` read and change
 * it through {@link TrackerOps}.
 */
import type { CallSummary } from "../call_records.ts";
import type { RecordState } from "../call_control.ts";
import type { Directory, Phone, Target } from "../directory.ts";
import type { PhoneEventType, PlatformEvent } from "../port.ts";
import type { AgentBook } from "./agents.ts";

/**
 * A party of a call: a channel on a user's phone (its role: the caller's own phone rung first,
 * `originate`; a destination, `callee`; an agent's phone rung by a queue, `agent`), or an
 * outside line's channel (`outside`: a trunk's, never a `Local/…` one).
 */
export interface Leg {
  uniqueId: string;
  call: Call;
  role: "originate" | "callee" | "agent" | "outside";
  state: "ringing" | "up" | "on_hold";
  /** The phone it is on; null for an outside line. */
  phone: Phone | null;
  /** Its own number: the phone's extension, or the outside caller id. */
  number: string;
  /** The other party's number as this leg's user sees it. */
  otherDN: string;
  ended: boolean;
  /** A phone event was sent for this leg: its user gets `EventReleased` when it ends. */
  announced: boolean;
  createdMs: number;
  answeredMs: number | null;
  /**
   * An agent's phone answered its queue's ring, the queue not having connected it yet
   * (`AgentConnect`): a `ringall` queue whose agents answer at once connects one and hangs up the
   * others, whose legs stay ringing.
   */
  pickedUpMs: number | null;
  /** The agent whose phone this is (agent legs), the queue that rang it and the wait it rang for. */
  agentId: number | null;
  queueId: number | null;
  queued: QueueWait | null;
  /** Who holds it: its phone (it stays bridged) or svc (it waits in `svc-wait`). */
  heldBy: "phone" | "svc" | null;
  /** The other party of an svc hold or a transfer: the held one for the holder, and back. */
  holdPeer: Leg | null;
  /** It hears svc's music (`svc-hold`). */
  music: boolean;
  muted: boolean;
  record: RecordState;
  /** The `recordState` of its last phone event: a recording changed since shows in a new one. */
  recordShown: RecordState;
  /** The attended transfer it initiates, while in progress. */
  transfer: Transfer | null;
}

/** A call waiting in a queue (or about to: a dial from queue's, until the queue says it joined). */
export interface QueueWait {
  queueId: number;
  /** The number an agent sees (who waits), and the number that reached the queue. */
  agentSees: string;
  number: string;
  /** Who waits, by name ("" when unknown). */
  callerName: string;
  /** When the queue said it joined; null before. */
  joinedMs: number | null;
  /** The channel that waits (its `QueueCallerJoin`); "" before. */
  channel: string;
  /** Its phone hung up (`HangupRequest`): a call leaving unanswered then was abandoned. */
  callerHungUp: boolean;
  /**
   * The caller's `Dial` to a member was answered (its `DialEnd` `ANSWER`): the queue connects that
   * member (`AgentConnect` follows), whoever it is, so the call leaving the queue now is no timeout.
   */
  memberAnswered: boolean;
  /**
   * When it left unanswered (`QueueCallerAbandon`) while svc does not know yet why: Asterisk says
   * so on the queue's timeout too. The dialplan going on after `Queue` tells a timeout, the
   * caller's `HangupRequest` an abandon.
   */
  leftMs: number | null;
}

/** How a call started: a dial command of svc (`user`, `from_queue`, `to_queue`) or not. */
export type CallKind = "user" | "from_queue" | "to_queue" | "phone" | "incoming";

/** Every channel sharing one Linkedid. */
export interface Call extends CallSummary {
  kind: CallKind;
  /** The `USR_` variables every phone event of the call carries. */
  userData: Record<string, string>;
  legs: Leg[];
  /** The calling party's leg: it gets `EventDialing` and `EventFailure`. */
  origin: Leg | null;
  /** The channel whose dial the call follows (svc's Originate, or a transfer's dialling party). */
  originChannel: string | null;
  originUp: boolean;
  /** What svc asked in its Originate. */
  originate: { channel: string; exten: string; context: string } | null;
  /** The Originate's ActionID, to tell its `OriginateResponse` when no channel came. */
  originateId: string | null;
  context: string;
  /** The number an internal callee sees as the caller's, and the name shown with it. */
  shownNumber: string;
  shownName: string;
  /** What the number dialled reaches in the caller's context. */
  target: Target["kind"];
  established: boolean;
  /** The calling side's last Dial ended busy or congested: a hang-up then is a failure. */
  failed: boolean;
  /** The queue the call waits in: the number an agent sees and the one that reached it. */
  wait: QueueWait | null;
  noHistory: boolean;
  ended: boolean;
  /** Uniqueids of its channels not yet hung up. */
  channels: Set<string>;
  /** Whom the next legs rung see calling when not the source (a transfer's party). */
  ringSrc: { username: string; number: string } | null;
  /** The attended transfer whose consultation this call's dial is. */
  transfer: Transfer | null;
  /**
   * A call over a trunk placed by another server on behalf of a phone of this one (a dial from
   * queue for its agent, an invitation into a room): the number dialled there once the phone
   * answers (what it shows; its answer is its dialling), and whether the phone is that call's
   * caller (an invitation's: it gets no `EventRinging`, as svc's dial from a phone); else null.
   */
  placedThere: { dialled: string; asCaller: boolean } | null;
}

export interface Channel {
  uniqueId: string;
  linkedId: string;
  /** `PJSIP/alice-0000000b`: what a Hangup action names. */
  name: string;
  /** `PJSIP/alice` for `PJSIP/alice-0000000b`; null for a Local channel. */
  device: string | null;
  leg: Leg | null;
  /** The dialplan context it is in (its last `Newexten`), the priority and the application. */
  context: string;
  priority: number;
  app: string;
  /** The bridge it is in (`BridgeUniqueid`), null for none. */
  bridge: string | null;
  /** The other half of a Local channel (`LocalBridge`). */
  localPeer: string | null;
}

/** An attended transfer in progress; its id is its initiator's uniqueId. */
export interface Transfer {
  initiator: Leg;
  transferred: Leg;
  recipient: Leg | null;
  exten: string;
  context: string;
  status: "ringback" | "answered";
}

/** An ad-hoc conference (a ConfBridge named {@link conferenceName}); its id is its host's uniqueId. */
export interface Conference {
  id: string;
  host: Leg;
  /** Members in joining order (the host first), with when they joined. */
  joined: Map<Leg, number>;
  /** The members svc merged, in the order it asked, so that they join in it. */
  order: string[];
}

/** The ConfBridge of conference `id`. */
export const conferenceName = (id: string) => `svc:${id}`;

/** What the tracker needs from the adapter. */
export interface TrackerContext {
  dir(): Directory;
  now(): number;
  emit(event: PlatformEvent): void;
  /** The call `linkedId` is none of the tracker's (a supervisor's listening call). */
  ignored(linkedId: string): boolean;
  /** The meeting room the channel `uniqueId` is in (rooms.ts), null for none. */
  roomOf(uniqueId: string): string | null;
  agents: AgentBook;
  /**
   * An AMI action the PBX needs after what it did (a party left alone on hold hung up, a held party
   * taken back after its transfer failed): sent by the lease holder only, its failure logged.
   */
  repair(action: string, fields: Record<string, string>): void;
  /**
   * With several servers: `phone` is placed on another one, whose adapter tells its events (an
   * agent's queue call rung over the trunk is a call there too).
   */
  elsewhere?(phone: { registrar?: string }): boolean;
  /**
   * With several servers: `leg`, a party on another server (a phone placed there, or the caller
   * over a trunk), is established here where nothing crosses the trunk to tell that server (see
   * config_files.ts, `ESTABLISHED_EVENT`).
   */
  establishedElsewhere?(leg: Leg): void;
}

/** A new call: one svc is about to originate (before its first channel exists), or one it sees. */
export interface NewCall {
  linkedId: string;
  kind: CallKind;
  context: string;
  dialled: string;
  shownNumber: string;
  shownName: string;
  src: Call["src"];
  userData: Record<string, string>;
  /** What svc asks in its Originate; null for a call svc did not place. */
  originate: NonNullable<Call["originate"]> | null;
  /** The caller's phone: rung first by svc's Originate, or the phone that dialled. */
  callerPhone?: Phone;
  /** The number the caller's leg is rung on when not its phone's (a dial from mobile's). */
  callerNumber?: string;
  /** The queue a dial from queue waits in first. */
  queue?: { id: number; number: string };
}

/**
 * What `call_control.ts` does to the tracker's calls: the same steps the simulator's calls take
 * (`lib/platform/sim/legs.ts`), so both give the same events.
 */
export interface TrackerOps {
  ctx: TrackerContext;
  phoneEvent(leg: Leg, eventType: PhoneEventType): void;
  /** `leg` ends: `EventReleased` when it had an event. */
  release(leg: Leg): void;
  /** The call ends: every party left released, its history emitted. */
  endCall(call: Call): void;
  /** The calling party fails (`EventFailure`); the call ends. */
  failCall(call: Call): void;
  /**
   * The recording of `leg` changed (`MixMonitor*`): its user gets its current phone event again
   * with the new `recordState`, its agent on that queue call `AgentOnCall` with the new
   * `monitorState`.
   */
  recordChanged(leg: Leg): void;
  /** The channel of `leg`, if it still exists. */
  channelOf(leg: Leg): Channel | undefined;
  /** The parties `leg` hears: through its bridge and any Local channels in between. */
  peersOf(leg: Leg): Leg[];
  /** Every party of the calls in progress. */
  liveLegs(): Leg[];
}

/** `PJSIP/alice` of `PJSIP/alice-0000000b`, null for Local channels; custom names keep their path. */
export function deviceOf(channel: string): string | null {
  if (/^Local\//i.test(channel)) return null;
  return channel.replace(/-[0-9a-f]+(;\d+)?$/i, "");
}

/** The svc contexts a channel waits in while svc holds or transfers it. */
export const HOLD_CONTEXT = "svc-hold";
export const WAIT_CONTEXT = "svc-wait";
export const CONSULT_CONTEXT = "svc-consult";
export const CONFERENCE_CONTEXT = "svc-conference";

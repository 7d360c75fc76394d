/**
 * Control of calls in progress (docs/calls.md), the part of the platform port the call daemon's
 * routes (`/1.0`), the CTI channel and the REST API share: the parties of the calls now, hold,
 * answer, hang-up, mute, DTMF, recording, transfers and ad-hoc conferences. Both adapters give the
 * same phone events for the same command (the scenario table of `tests/lib/platform/`).
 *
 * A party is one leg of a call: a channel on a user's phone, or the far end of an outside call.
 * Its id is the leg's `uniqueId`, the `uniqueId` of its user's phone events, so a page that got a
 * `PhoneEvent` can act on that call.
 */

/** One party of a call in progress. */
export interface LiveCall {
  /** The leg's `uniqueId`: the call daemon's `call_id`. */
  callId: string;
  /** The call's `linkedId`, shared by its legs (`conversation_id`). */
  linkedId: string;
  /** The user whose phone this leg is on; null for an outside party. */
  userId: number | null;
  lineId: number | null;
  state: "ringing" | "up";
  /** This leg's user put the call on hold (svc's hold, or the phone's own). */
  onHold: boolean;
  muted: boolean;
  record: RecordState;
  /** The call's `USR_` variables (dial variables, `setData`), as its phone events carry them. */
  userData: Record<string, string>;
  /** The `callId`s of the parties this one hears (its peer, or a conference's other members). */
  talkingTo: string[];
  /**
   * The one other party of a two-party call, whether they hear each other or one holds the other
   * (svc's hold, a transfer): what a transfer hands over, what a conference takes in.
   */
  peerCallId: string | null;
  /** The ad-hoc conference it is in, if any. */
  conferenceId: string | null;
  /** This party's own name and number. */
  name: string;
  number: string;
  /** The other party's name and number as this party sees them (`otherDN` of its events). */
  peerName: string;
  peerNumber: string;
  /** This party placed the call (the caller's own phone, rung first by a dial). */
  isCaller: boolean;
  /** The number dialled to start the call. */
  dialled: string;
  /** `internal` between users' phones, `outbound` to an outside number, `inbound` from outside. */
  direction: "internal" | "inbound" | "outbound";
  createdMs: number;
  answeredMs: number | null;
}

export type RecordState = "inactive" | "active" | "paused";

/** What can be done to one party. */
export type CallCommand =
  /** Puts the call on hold: the other party hears music, this party's user gets `EventOnHold`. */
  | { kind: "hold" }
  /** Takes back a call svc put on hold: both talk again, the user gets `EventEstablished`. */
  | { kind: "resume" }
  /** Picks up a ringing call on a user's phone. */
  | { kind: "answer" }
  /** Ends this party's part: a ringing call is declined, a talking one hung up. */
  | { kind: "hangup" }
  /** The others stop (or start again) hearing this party. */
  | { kind: "mute"; on: boolean }
  /** Sends DTMF digits (`0-9*#`) into the call, as if this party's phone pressed them. */
  | { kind: "dtmf"; digits: string }
  /** Records the call as this party hears it; pause keeps the file and leaves silence. */
  | { kind: "record"; action: "start" | "stop" | "pause" | "resume" }
  /**
   * Attaches `USR_` variables to the party's call (xuc's `setData`): every phone event of the call
   * carries them from now on, for every party, and for whoever gets the call next.
   */
  | { kind: "attach"; variables: Record<string, string> };

export type TransferFlow = "blind" | "attended";

/**
 * A transfer: `initiator` (a user's leg) hands its peer `transferred` to `exten` dialled in
 * `context`. Its id is the initiator's `callId` (one transfer per initiator at a time).
 */
export interface Transfer {
  id: string;
  flow: TransferFlow;
  initiatorCallId: string;
  initiatorUserId: number;
  transferredCallId: string;
  /** The recipient's leg once it rings, null before. */
  recipientCallId: string | null;
  exten: string;
  context: string;
  /**
   * `ringback` while the recipient rings (attended), `answered` once it answered (attended),
   * `blind_transferred` for a blind transfer (already done).
   */
  status: "ringback" | "answered" | "blind_transferred";
}

/** A transfer as its request starts it: blind, done at once; attended, ringing its recipient. */
export function startedTransfer(request: TransferRequest, initiatorUserId: number): Transfer {
  return {
    id: request.initiatorCallId,
    flow: request.flow,
    initiatorCallId: request.initiatorCallId,
    initiatorUserId,
    transferredCallId: request.transferredCallId,
    recipientCallId: null,
    exten: request.exten,
    context: request.context,
    status: request.flow === "blind" ? "blind_transferred" : "ringback",
  };
}

export interface TransferRequest {
  flow: TransferFlow;
  initiatorCallId: string;
  transferredCallId: string;
  exten: string;
  context: string;
  /** How long the recipient rings (attended), null for the user's ring time. */
  timeoutMs: number | null;
}

/**
 * An ad-hoc conference: the host's leg and the parties merged with it, all hearing each other.
 * Its id is the host's `callId`. The host leaving ends it (every member is hung up).
 */
export interface Conference {
  id: string;
  hostCallId: string;
  hostUserId: number;
  /** Every member leg, the host first, then in the order they joined. */
  members: { callId: string; muted: boolean; joinedMs: number }[];
}

/**
 * What the platform does with calls in progress. A refusal is a `PlatformRefusal` whose reason is
 * one of {@link CallRefusal}; the PBX unreachable is `PlatformUnavailable`, as for the dials.
 */
export interface CallControl {
  /** Every party of the calls in progress, oldest call first. */
  liveCalls(): Promise<LiveCall[]>;
  /** Acts on one party; answers once the PBX took the command (its events follow). */
  callCommand(callId: string, command: CallCommand): Promise<void>;
  /**
   * Starts a transfer: a blind one is done at once (the initiator's leg ends, the transferred
   * party calls `exten`), an attended one holds the transferred party and has the initiator's
   * phone call the recipient, until `completeTransfer` or `cancelTransfer`.
   */
  startTransfer(request: TransferRequest): Promise<Transfer>;
  /** The transfers in progress (attended ones not completed nor cancelled). */
  transfers(): Promise<Transfer[]>;
  /** The transferred party and the recipient talk; the initiator's leg ends. */
  completeTransfer(id: string): Promise<void>;
  /** The recipient's leg ends; the initiator and the transferred party talk again. */
  cancelTransfer(id: string): Promise<void>;
  /**
   * Merges the host's leg and the parties (each the peer of one of the host user's legs) into a
   * conference; the host user's other legs to them end.
   */
  startConference(hostCallId: string, participantCallIds: string[]): Promise<Conference>;
  conferences(): Promise<Conference[]>;
  /** Adds a party (the peer of one of the host user's legs) to a conference. */
  addToConference(conferenceId: string, callId: string): Promise<void>;
  /** Hangs up a member (the host: the whole conference). */
  removeFromConference(conferenceId: string, callId: string): Promise<void>;
  /** Hangs up every member. */
  endConference(conferenceId: string): Promise<void>;
}

/**
 * Why a call command was refused (`PlatformRefusal.reason`): `no_call` (no such party),
 * `not_ringing` (answer of a call not ringing), `not_talking` (hold, mute, DTMF, record or a
 * transfer of a party not up with a peer), `not_held` (resume of a call svc did not hold),
 * `held_by_phone` (resume of a call its phone holds: the phone takes it back),
 * `recording_not_started` (pause or resume of no recording), `no_user` (a transfer or conference
 * from a party on no user's phone), `not_peer` (the transferred party or a participant is not the
 * initiator's or host's peer), `transfer_exists` (the initiator already transfers),
 * `no_transfer`, `no_conference`, `in_conference` (already a member), `in_transfer` (a party of a
 * transfer in progress), `not_supported` (the PBX cannot do it for this phone).
 */
export type CallRefusal =
  | "no_call"
  | "not_ringing"
  | "not_talking"
  | "not_held"
  | "held_by_phone"
  | "recording_not_started"
  | "no_user"
  | "not_peer"
  | "transfer_exists"
  | "no_transfer"
  | "no_conference"
  | "in_conference"
  | "in_transfer"
  | "not_supported";

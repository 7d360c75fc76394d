/**
 * The telephony platform as every area sees it (DESIGN.md): dial commands, user services, agent
 * login and pause, phone statuses, and a stream of platform events. The embedded simulated PBX
 * (`lib/platform/sim/`) and the Asterisk adapter (`lib/platform/asterisk/`) implement it; the routes
 * never know which one runs.
 */
import type { AgentRecord } from "../store/agents.ts";
import type { CallControl, RecordState } from "./call_control.ts";
import type { RoomControl, RoomEvent } from "./rooms.ts";
import type { CallRecord } from "../store/call_history.ts";
import type { QueueRecord } from "../store/queues.ts";
import type { UserRecord } from "../store/users.ts";

/** Extra variables of a dial command; reported in phone events as `USR_<key>` (decisions §5). */
export type CallVariables = Record<string, string>;

/** `variables` as phone events carry them: `USR_<key>`, a key already starting with `USR_` kept. */
export function usrVariables(variables: CallVariables): Record<string, string> {
  return Object.fromEntries(
    Object.entries(variables).map((
      [key, value],
    ) => [key.startsWith("USR_") ? key : `USR_${key}`, value]),
  );
}

export type PhoneEventType =
  | "EventRinging"
  | "EventDialing"
  | "EventEstablished"
  | "EventReleased"
  | "EventOnHold"
  | "EventFailure";

/**
 * What every platform event may carry: its id, the same in every svc process that saw what caused
 * it (docs/asterisk.md, "Several svc processes"), so that the listeners writing it to the store do
 * it once (`lib/store/platform_done.ts`) whichever process hands it over, and however many times.
 * Absent: the event is written as it comes, with no such check.
 */
export interface PlatformEventId {
  id?: string;
}

/** Something that happened on a user's phone (decisions §7). */
export interface PhoneEvent extends PlatformEventId {
  kind: "phone";
  userId: number;
  username: string;
  eventType: PhoneEventType;
  /** The user's own extension. */
  DN: string;
  /** The other party's number. */
  otherDN: string;
  /**
   * The other party's name: the user whose phone answers `otherDN`, else the name the call showed
   * with that number (the caller id of a dial from queue, of an outside caller on Asterisk); "" when
   * unknown.
   */
  otherDName: string;
  /** Shared by every leg of one call. */
  linkedId: string;
  /** This leg's id. */
  uniqueId: string;
  /** `PLATFORM_USERID` (the user id as a string) and the call's `USR_` variables. */
  userData: Record<string, string>;
  /** Whether this party's leg is recorded now (`LiveCall.record`). */
  recordState: RecordState;
  /** The queue that rang this party (an agent's leg of a queue call); absent otherwise. */
  queueId?: number;
}

export type AgentStateName =
  | "AgentLoggedOut"
  | "AgentReady"
  | "AgentOnPause"
  | "AgentRinging"
  | "AgentOnCall"
  | "AgentOnWrapup";

/**
 * Whether the queue call an agent is on is recorded (xuc's `monitorState`): `ACTIVE`, `PAUSED`, or
 * `DISABLED` (not on a queue call, or the call is not recorded).
 */
export type MonitorState = "ACTIVE" | "PAUSED" | "DISABLED";

/** An agent changed state (decisions §7). */
export interface AgentStateEvent extends PlatformEventId {
  kind: "agent";
  agentId: number;
  agentNumber: string;
  name: AgentStateName;
  /** The extension the agent is (or was last) logged on; "" when it never was. */
  phoneNb: string;
  /** The user of the line the agent is logged on, "" when none: the exported event's username. */
  username: string;
  /** Ids of the agent's queues. */
  queues: number[];
  /**
   * The recording of the queue call it is on; an agent on a queue call whose recording starts,
   * pauses, resumes or stops gets its `AgentOnCall` again with the new state.
   */
  monitorState: MonitorState;
}

/** A call finished: one history record per user involved (decisions §8). */
export interface CallEnded extends PlatformEventId {
  kind: "call_ended";
  linkedId: string;
  records: CallRecord[];
}

/**
 * A call in a queue (supervision, docs/supervision.md): it `joined` the queue (at `position`),
 * was `answered` by an agent after `waitMs`, was `abandoned` (its caller hung up) or left on the
 * queue's `timeout` after `waitMs`, and, answered, was `completed` after `talkMs` with the agent.
 */
export interface QueueCallEvent extends PlatformEventId {
  kind: "queue_call";
  event: "joined" | "answered" | "abandoned" | "timeout" | "completed";
  queueId: number;
  /** The call's linkedId. */
  linkedId: string;
  /** Who waits: the caller's number and name ("" when unknown). */
  callerNumber: string;
  callerName: string;
  /** `joined`: its place in the queue, from 1. */
  position?: number;
  /** `answered`, `abandoned`, `timeout`: how long it waited. */
  waitMs?: number;
  /** `answered`, `completed`: the agent that took it. */
  agentId?: number;
  /** `completed`: how long the agent talked with it. */
  talkMs?: number;
}

/** A call waiting in a queue now. */
export interface WaitingCall {
  queueId: number;
  linkedId: string;
  callerNumber: string;
  callerName: string;
  /** Its place in the queue, from 1. */
  position: number;
  /** When it joined the queue (ms since the epoch). */
  sinceMs: number;
}

/**
 * A supervisor's phone started or stopped listening to an agent's call ({@link Platform.listen}):
 * `started` once the supervisor answered and hears the call, then not once the listening ends (the
 * supervisor hung up, or the agent's call ended).
 */
export interface ListenEvent extends PlatformEventId {
  kind: "listen";
  started: boolean;
  agentId: number;
  agentNumber: string;
  /** The extension the agent is logged on. */
  phoneNb: string;
  /** The user of the agent's line, "" when none. */
  agentUsername: string;
  supervisorId: number;
  supervisorUsername: string;
  /** The listening call's id (what {@link Platform.listen} answered). */
  linkedId: string;
}

/** The messages of a voicemail box. */
export interface VoicemailCounts {
  newMessages: number;
  oldMessages: number;
}

/** A voicemail box's messages changed (a message left, listened to, deleted). */
export interface VoicemailEvent extends PlatformEventId, VoicemailCounts {
  kind: "voicemail";
  voicemailId: number;
}

export type PlatformEvent =
  | PhoneEvent
  | AgentStateEvent
  | CallEnded
  | QueueCallEvent
  | ListenEvent
  | VoicemailEvent
  | RoomEvent;

/**
 * Listener of platform events. The platform awaits it before it goes on, and calls it with the
 * events of one step in order, one call at a time, so a listener that writes them to the store
 * keeps them in order. An event with an `id` may be handed over again (by another process taking
 * over, with the events it saw): a listener writing to the store writes it once per id.
 */
export type PlatformListener = (events: PlatformEvent[]) => Promise<void>;

/**
 * Phone status of a number, as the personal contacts list view shows it (decisions §3):
 * 0 available, 1 calling, 2 busy, 8 ringing, 16 on hold, -1 deactivated or DND, -2 not a platform
 * extension.
 */
export type PhoneStatus = 0 | 1 | 2 | 8 | 16 | -1 | -2;

/** Where an agent stands, as the agent daemon shows it (decisions §9). */
export interface AgentPresence {
  agentId: number;
  logged: boolean;
  paused: boolean;
  pausedReason: string | null;
  extension: string | null;
  context: string | null;
  state: AgentStateName;
  /** When it entered `state` (ms since the epoch); null when the platform cannot tell. */
  sinceMs: number | null;
  /** When it logged in (null when logged out, or when the platform cannot tell). */
  loggedSinceMs: number | null;
}

/** The platform refused a command; routes answer it as 400 (or their area's form). */
export class PlatformRefusal extends Error {
  constructor(
    /** A stable word for the area to map: `no_line`, `already_logged`, `not_logged`, … */
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = "PlatformRefusal";
  }
}

/**
 * Where the platform's connection stands: `ready` (it takes commands, {@link Platform.reachable}),
 * `syncing` (connected, reading the PBX's state again before taking commands), `disconnected`
 * (trying to connect).
 */
export type PlatformState = "ready" | "syncing" | "disconnected";

export const PLATFORM_STATES: readonly PlatformState[] = ["ready", "syncing", "disconnected"];

/** The adapter running and its connection, as the metrics show them. */
export interface PlatformConnection {
  /** The adapter's name, a label only: `sim` or `asterisk`. */
  adapter: string;
  state: PlatformState;
}

/** One PBX server of several, as `/ready` and the metrics show it. */
export interface ServerState {
  name: string;
  state: PlatformState;
}

/** How a dial command started: the call's `linkedId`. */
export interface CallStarted {
  linkedId: string;
}

export interface Platform extends CallControl, RoomControl {
  /** Rings `caller`'s phone; once it answers, calls `destination` (an already sanitized number). */
  dialNumber(
    caller: UserRecord,
    destination: string,
    variables: CallVariables,
  ): Promise<CallStarted>;
  /** As {@link dialNumber}, toward `callee`'s phone. */
  dialUser(caller: UserRecord, callee: UserRecord, variables: CallVariables): Promise<CallStarted>;
  /**
   * The xuc CTI API's `dialFromMobile`: as {@link dialNumber}, but the user's mobile phone
   * (`mobile`, an already sanitized outside number, dialled in the context of the caller's main
   * line) is rung first instead of the user's own phone; once it answers, `destination` (already
   * sanitized) is called in that same context and sees the user's caller id. The mobile stands for
   * the user's phone in this call: its events go to the user with `DN` = the user's extension and
   * `otherDN` = `destination` (`EventDialing` once the mobile answered, then `EventEstablished`,
   * `EventReleased`; `EventFailure` when the mobile does not answer, without history); the
   * destination's side and the history are as for `dialNumber`. The user's own phone is not in the
   * call. Refusal: `no_line` (the user has no line: the context comes from it).
   */
  dialFromMobile(
    caller: UserRecord,
    mobile: string,
    destination: string,
    variables: CallVariables,
  ): Promise<CallStarted>;
  /**
   * A call placed by `queue` to `destination` on behalf of `requester`: a free agent of the queue
   * is rung first, then the destination (the spec's "dial from queue").
   */
  dialFromQueue(
    requester: UserRecord,
    queue: QueueRecord,
    destination: string,
    variables: CallVariables,
    callerId: { name: string | null; number: string | null },
  ): Promise<CallStarted>;
  /** Calls `destination`; once answered the call waits in `queue` for an agent. */
  dialToQueue(
    queue: QueueRecord,
    destination: string,
    callerIdNumber: string,
    variables: CallVariables,
  ): Promise<CallStarted>;
  /**
   * The user's DND or forwards changed (the user record is the source of truth). A real PBX
   * connector pushes them to the PBX; the simulator reads the record at each call.
   */
  userServicesChanged(user: UserRecord): Promise<void>;
  /** Logs `agent` in on the line holding `extension` in `context`, ready in its queues. */
  agentLogin(agent: AgentRecord, extension: string, context: string): Promise<void>;
  agentLogout(agentId: number): Promise<void>;
  agentPause(agentId: number, reason: string | null): Promise<void>;
  agentUnpause(agentId: number): Promise<void>;
  /**
   * The agent's queue memberships changed in the configuration (joined, left, another penalty):
   * a logged-in agent follows them now. Nothing happens for an agent that is not logged in; a PBX
   * that cannot be reached now catches up when it can (no error).
   */
  agentQueuesChanged(agentId: number): Promise<void>;
  /** The agent's presence; a never-logged agent is logged out. */
  agentPresence(agentId: number): Promise<AgentPresence>;
  /**
   * Each agent's presence, in the order asked: what `agentPresence` answers for each, at one
   * moment, in one promise (a list of 500 agents costs no 500 promises).
   */
  agentPresences(agentIds: readonly number[]): Promise<AgentPresence[]>;
  /**
   * A number that changes whenever any agent's presence may change: while it reads the same,
   * `agentPresences` answers what it answered when it was read, so a caller may keep that answer
   * (`GET /agents`). Null when the adapter cannot tell now (then ask `agentPresences`).
   */
  agentPresenceVersion(): number | null;
  /** The calls waiting in the queues now, each queue's in order. */
  queueCalls(): Promise<WaitingCall[]>;
  /**
   * A supervisor listens to an agent's call: the supervisor's phone is rung and, once it answers,
   * hears both sides of the call the agent's phone is on, without being heard (`ListenEvent`s tell
   * when it starts and stops; the listening call gives no phone event and no history). Refusals:
   * `no_line` (the supervisor has no phone), `not_logged` (the agent), `not_on_call` (the agent's
   * phone talks on no call).
   */
  listen(supervisor: UserRecord, agentId: number): Promise<CallStarted>;
  /**
   * The messages of the voicemail box `voicemailId` now (a `VoicemailEvent` tells each change).
   * Refusal: `no_voicemail` (no such enabled voicemail).
   */
  voicemailCounts(voicemailId: number): Promise<VoicemailCounts>;
  /** The status of each number (decisions §3); numbers that are no extension answer -2. */
  phoneStatuses(numbers: string[]): Promise<Map<string, PhoneStatus>>;
  /**
   * A number that changes whenever any phone status may change: while it reads the same,
   * `phoneStatuses` answers what it answered when it was read, so a caller may keep that answer.
   * Null when the connector cannot tell without asking (then ask `phoneStatuses`). A connector
   * keeping device states in memory bumps it on each device state event; one that keeps nothing
   * answers null always.
   */
  phoneStatusVersion(): number | null;
  /** Adds a listener of platform events. */
  onEvents(listener: PlatformListener): void;
  /** Starts what runs in the background (a PBX connection); main.ts calls it once. */
  start(): void;
  /**
   * The platform takes commands now (`/ready`); false while the PBX is unreachable. With `user`:
   * it takes that user's (with several PBX servers, the one the user's line is placed on is up).
   */
  reachable(user?: UserRecord): boolean;
  /**
   * With several PBX servers (docs/asterisk.md, "Several servers"): each by name, the main one
   * first, and where its connection stands; absent with one.
   */
  servers?(): ServerState[];
  /** The adapter and its connection state; `ready` exactly when {@link reachable}. */
  connection(): PlatformConnection;
  /** Stops every timer and connection: no call moves any more. */
  close(): Promise<void>;
}

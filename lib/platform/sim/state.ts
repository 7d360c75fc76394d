/**
 * The simulator's memory: calls and their legs, phone policies, agent presences, and the step
 * every change runs in. Nothing here is stored: a restart hangs every call up (DESIGN.md).
 */
import type { AgentView } from "../agent_rules.ts";
import type { RecordState } from "../call_control.ts";
import type { RoomConfig } from "../rooms.ts";
import type { ListenEvent, PlatformEvent, VoicemailCounts } from "../port.ts";
import type { Rung } from "../call_records.ts";
import type { Directory, Phone } from "../directory.ts";

/** How a simulated phone answers (decisions §8). */
export type PolicyName = "auto" | "manual" | "busy" | "unavailable";

export const POLICY_NAMES: readonly PolicyName[] = ["auto", "manual", "busy", "unavailable"];

export interface PhonePolicy {
  policy: PolicyName;
  /** How long an `auto` phone rings before it answers. */
  answer_ms: number;
  /** How long a phone that answered by itself talks before it hangs up; 0 never. */
  talk_ms: number;
}

/** The pseudo-phone of the outside network: every number that is no extension nor queue. */
export const EXTERNAL = "external";

/** How long the outside network rings before the call counts as not answered. */
export const EXTERNAL_RING_MS = 30_000;
/** How long a queue rings one agent before offering the call again. */
export const AGENT_RING_MS = 15_000;
/** How long a call waits in a queue for an agent. */
export const QUEUE_WAIT_MS = 30_000;
/** Forwards followed by one call at most; one more fails the call. */
export const MAX_REDIRECTIONS = 5;

/** Something that owns timers, cancelled together when it ends. */
export interface TimerOwner {
  timers: Set<() => void>;
}

export type LegState = "ringing" | "up" | "on_hold" | "waiting";

/**
 * What a leg is to its call: the caller's own phone rung first (`originate`), a destination
 * (`callee`), an agent's phone rung by a queue (`agent`), the queue a call waits in (`queue`), or
 * a supervisor's phone listening to an agent's call (`spy`: no phone event, no history).
 */
export type LegRole = "originate" | "callee" | "agent" | "queue" | "spy";

/** What happens when a ringing leg is answered, rejected, busy, or not answered in time. */
export interface RingHandlers {
  /** The phone starts ringing (not for `busy` and `unavailable` phones, which never ring). */
  ringing?(step: Step, leg: Leg): void;
  answered(step: Step, leg: Leg): Promise<void> | void;
  rejected(step: Step, leg: Leg): Promise<void> | void;
  busy(step: Step, leg: Leg): Promise<void> | void;
  noAnswer(step: Step, leg: Leg): Promise<void> | void;
}

/** One party of a call: a phone, the outside network, or a queue. */
export interface Leg extends TimerOwner {
  /** Asterisk-like `"<epoch seconds>.<counter>"`; the call's first leg holds its linkedId. */
  uniqueId: string;
  call: Call;
  role: LegRole;
  /** The phone's extension, `external`, or the queue's number (its name when it has none). */
  name: string;
  /** The phone's line; null for the outside network and queues. */
  lineId: number | null;
  /** The outside number called (outside network legs). */
  number: string | null;
  /** The user who gets this leg's phone events; null: nobody does. */
  userId: number | null;
  username: string;
  /**
   * The `DN` of this leg's phone events when it is not `name`: the user's extension for the user's
   * mobile rung by a dial from mobile (an outside network leg standing for the user's phone).
   */
  dn: string | null;
  /** The other party's number as this leg's user sees it. */
  otherDN: string;
  state: LegState;
  ended: boolean;
  /** A phone event was sent for this leg: its user gets `EventReleased` when it ends. */
  announced: boolean;
  /** Answered by its policy rather than through the control API: it hangs up after `talk_ms`. */
  selfAnswered: boolean;
  answeredMs: number | null;
  /** The agent whose phone this is (agent legs). */
  agentId: number | null;
  /** The queue that rang this agent leg, and the wait it rang for. */
  queueId: number | null;
  queued: QueueWait | null;
  handlers: RingHandlers | null;
  createdMs: number;
  /** The parties this one talks with (itself included); null when it talks with nobody. */
  bridge: Bridge | null;
  /** Who holds this leg on hold: its phone (still bridged, the peer hears music) or svc. */
  heldBy: "phone" | "svc" | null;
  /**
   * svc holds: the other party of the hold (the held party for the one that holds, and the other
   * way round), to bridge them back.
   */
  holdPeer: Leg | null;
  /** The leg hears music: svc holds it (its peer's hold, or a transfer's). */
  music: boolean;
  muted: boolean;
  record: RecordState;
  /** The DTMF digits this leg heard from the others (the control API shows them). */
  heardDigits: string;
  /** The attended transfer this leg initiates, while it is in progress. */
  transfer: Transfer | null;
  /** The meeting room asking this leg its PIN (`rooms.ts`), while it does. */
  pinPrompt: PinPrompt | null;
}

/** Legs that hear each other: two parties, an ad-hoc conference's members, a room's. */
export interface Bridge {
  legs: Set<Leg>;
  conference: Conference | null;
  room?: Room | null;
}

/** A meeting room with someone in it (`rooms.ts`): its members hear each other. */
export interface Room {
  config: RoomConfig;
  bridge: Bridge;
  /** Members in joining order, with when each joined. */
  members: Map<Leg, number>;
  recording: boolean;
  startedMs: number;
}

/** A room asking a leg its PIN: the digits typed since the last `#`, the wrong tries so far. */
export interface PinPrompt {
  room: RoomConfig;
  typed: string;
  tries: number;
}

/** An attended transfer in progress (call_control.ts); its id is its initiator's uniqueId. */
export interface Transfer {
  initiator: Leg;
  transferred: Leg;
  /** The leg rung (then answered) for it, null before one rings. */
  recipient: Leg | null;
  exten: string;
  context: string;
  status: "ringback" | "answered";
  /** The initiator's dial reached nobody (busy, refused, not answered): the transfer is undone. */
  failed(step: Step): Promise<void>;
}

/** An ad-hoc conference; its id is its host's uniqueId. */
export interface Conference {
  id: string;
  host: Leg;
  bridge: Bridge;
  /** Members in joining order (the host first), with when they joined. */
  joined: Map<Leg, number>;
}

/** A call waiting in a queue for an agent. */
export interface QueueWait {
  queueId: number;
  /** Enqueue order: the longest waiting call is offered first. */
  order: number;
  /** The leg standing for the queue (`waiting` in the control API). */
  leg: Leg;
  /** The party connected to the agent once it answers (null for dial from queue). */
  party: Leg | null;
  /** The agent leg ringing for this call, if any. */
  offer: Leg | null;
  /** The number the agent sees. */
  agentSees: string;
  /** The number the agent was reached by, for its history record. */
  number: string;
  /** Who waits, as supervision shows it, and since when. */
  callerName: string;
  sinceMs: number;
}

/** Who placed a call, as its history records tell it. */
export interface CallSource {
  userId: number | null;
  username: string;
  number: string;
}

/** What a supervisor's listening call listens to (`ListenEvent`'s fields), and whether it does. */
export interface Spy extends Omit<ListenEvent, "kind" | "started" | "linkedId" | "id"> {
  /** The agent's leg it listens to: the listening ends with it. */
  target: Leg;
  started: boolean;
}

/**
 * A call: every leg sharing one linkedId. `user` calls start from a user's phone (dial number or
 * user), `from_queue` calls from a queue's agent, `to_queue` calls end in a queue; a `listen` call
 * is a supervisor's phone listening to an agent's call (its `spy`).
 */
export interface Call extends TimerOwner {
  linkedId: string;
  kind: "user" | "from_queue" | "to_queue" | "listen";
  startMs: number;
  /** The `USR_` variables every phone event of the call carries. */
  userData: Record<string, string>;
  legs: Leg[];
  /** The calling party's leg: it gets `EventDialing` and `EventFailure`. */
  origin: Leg | null;
  /** The context in which the destination is dialled. */
  context: string;
  /** The number dialled, as dialled. */
  dialled: string;
  /** The user reached by the number dialled (before any forward), "" for none. */
  dialledUsername: string;
  /** The number an internal callee sees as the caller's, and the name shown with it. */
  shownNumber: string;
  shownName: string;
  /** The queue a `to_queue` call waits in once its destination answered. */
  toQueueId: number | null;
  src: CallSource;
  established: boolean;
  /** When the destination answered. */
  answeredMs: number | null;
  /** Username of the party that answered the calling party, for the caller's history. */
  answeredBy: string | null;
  redirections: number;
  rung: Map<number, Rung>;
  wait: QueueWait | null;
  /** A call whose originate leg failed leaves no history. */
  noHistory: boolean;
  ended: boolean;
  /**
   * Whom the next legs rung see calling, when not the call's source: the transferred party of a
   * blind transfer, or the initiator of an attended one (its user's history record names them).
   */
  ringSrc: { username: string; number: string } | null;
  /** The attended transfer whose initiator this call's dial is for (its outcomes are the transfer's). */
  transfer: Transfer | null;
  /** A `listen` call's supervisor and agent. */
  spy: Spy | null;
  /** The voicemail box that took the call (not answered): a message is left when it ends. */
  voicemailId: number | null;
}

/** An agent's presence, in memory (decisions §8). */
export interface AgentState extends AgentView, TimerOwner {
  /** When it last became free: the longest idle agent is offered a call first. */
  idleSince: number;
  /** The leg of the queue call it is ringing for or talking on. */
  leg: Leg | null;
}

/**
 * One step of the simulator: the directory it reads, its time, and the events it emits, handed
 * to the listeners once the step is done.
 */
export interface Step {
  readonly sim: SimState;
  readonly dir: Directory;
  readonly now: number;
  emit(event: PlatformEvent): void;
  /** Runs `task` as a step of its own in `ms`; cancelled when `owner` ends. */
  later(owner: TimerOwner, ms: number, task: (step: Step) => Promise<void> | void): void;
}

/** Everything the simulator keeps in memory. */
export class SimState {
  /** Calls in progress, in start order. */
  readonly calls = new Map<string, Call>();
  readonly policies = new Map<string, PhonePolicy>();
  readonly agents = new Map<number, AgentState>();
  /** Agent legs ended during the current step, settled at its end. */
  endedAgentLegs: Leg[] = [];
  /** Ad-hoc conferences by id. */
  readonly conferences = new Map<string, Conference>();
  /** The voicemail boxes' messages, by voicemail id (none: empty). */
  readonly mailboxes = new Map<number, VoicemailCounts>();
  /** The meeting rooms with someone in them, by room id. */
  readonly rooms = new Map<string, Room>();
  /**
   * A party hangs up (its phone, a timer, svc): set by mod.ts to the rules of call_control.ts,
   * which reach the legs of transfers and conferences from above.
   */
  hangup: (step: Step, leg: Leg) => Promise<void> = () => Promise.resolve();
  #counter = 0;
  #waitOrder = 0;

  constructor(readonly defaults: { answerMs: number; talkMs: number }) {}

  /** A new leg id: epoch seconds and a counter, as Asterisk's uniqueid. */
  newId(now: number): string {
    return `${Math.floor(now / 1000)}.${++this.#counter}`;
  }

  nextWaitOrder(): number {
    return ++this.#waitOrder;
  }

  /** The policy of the phone named `name` (or of `external`); `auto` with the defaults at first. */
  policyOf(name: string): PhonePolicy {
    return this.policies.get(name) ??
      { policy: "auto", answer_ms: this.defaults.answerMs, talk_ms: this.defaults.talkMs };
  }

  /** Legs not ended, of every call. */
  *activeLegs(): Generator<Leg> {
    for (const call of this.calls.values()) {
      for (const leg of call.legs) if (!leg.ended) yield leg;
    }
  }

  /** The active legs of `phone` (or of the outside network when null), oldest first. */
  legsOf(phone: Phone | null): Leg[] {
    return [...this.activeLegs()].filter((leg) =>
      phone ? leg.lineId === phone.lineId : leg.name === EXTERNAL && leg.role !== "queue"
    );
  }

  /** How many calls `userId` is in (a leg ringing or up on one of its phones). */
  callsOfUser(userId: number): number {
    const linked = new Set<string>();
    for (const leg of this.activeLegs()) if (leg.userId === userId) linked.add(leg.call.linkedId);
    return linked.size;
  }
}

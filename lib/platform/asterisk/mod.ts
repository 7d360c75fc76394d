/**
 * The Asterisk adapter (`SVC_PLATFORM=asterisk`, docs/asterisk.md): the {@link Platform} every
 * area calls, on a real Asterisk 20/22 reached over AMI. Commands become AMI actions (Originate,
 * DBPut/DBDel, QueueAdd/QueueRemove/QueuePause); AMI events become the phone events, agent states
 * and history records the simulator gives for the same scenario; the configuration daemon's
 * records become the files Asterisk includes (config_files.ts, config_writer.ts).
 *
 * With several svc processes on one store, each keeps its own AMI connection and follows every
 * event (so any of them answers statuses and presences), but only the holder of a lease in the
 * store hands events to the listeners (outbox, history) and writes the configuration files. Each
 * event gets an id every process computes alike from the AMI stream (see `#emit`), and every
 * process keeps the events of the last minute: a process taking the lease over hands those over
 * first, the listeners writing each id once, so the events the last holder had not written are
 * written, once (docs/asterisk.md, "Several svc processes").
 */
import type { Clock } from "../../clock.ts";
import { PlatformUnavailable, StoreUnavailable } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { AgentRecord } from "../../store/agents.ts";
import { type LeaseTaken, releaseLeaseAt, takeLeaseAt } from "../../store/lease.ts";
import type { QueueRecord } from "../../store/queues.ts";
import type { Store } from "../../store/store.ts";
import { type UserRecord, users } from "../../store/users.ts";
import { Directory, type DirectoryLoader, directoryLoader, type Phone } from "../directory.ts";
import {
  type AgentPresence,
  type CallStarted,
  type CallVariables,
  type PhoneStatus,
  type Platform,
  type PlatformConnection,
  type PlatformEvent,
  type PlatformListener,
  PlatformRefusal,
  usrVariables,
  type VoicemailCounts,
  type WaitingCall,
} from "../port.ts";
import { notLogged } from "../agent_rules.ts";
import { EventDelivery } from "../delivery.ts";
import type {
  CallCommand,
  Conference,
  LiveCall,
  Transfer,
  TransferRequest,
} from "../call_control.ts";
import type { RoomCommand, RoomState } from "../rooms.ts";
import { AgentBook, pbxMessage } from "./agents.ts";
import {
  AmiClient,
  type AmiClientOptions,
  type AmiResponse,
  AmiUnavailable,
} from "./ami_client.ts";
import type { AmiMessage } from "./ami_message.ts";
import { ASTDB_FAMILY, keysToWrite, userKeys, writeKeys } from "./astdb.ts";
import { CallCommands } from "./call_commands.ts";
import { CallTracker, DIAL_DROPPED_EVENT, dialAnnouncement, type NewCall } from "./calls.ts";
import { ASTERISK_FILES, ConfigWriter } from "./config_writer.ts";
import {
  AGENT_HEADER,
  AGENT_TRUNK_EVENT,
  CALL_HEADER,
  DIALLED_HEADER,
  ESTABLISHED_EVENT,
  LINK_EVENT,
  LISTEN_CONTEXT,
  listenExten,
  PLACED_FOR_CALLER,
  ROOM_INVITE_CONTEXT,
  type ServerPlacement,
  TRUNK_DEVICE,
  trunkName,
} from "./config_files.ts";
import type { Leg } from "./call_model.ts";
import { RoomBook } from "./rooms.ts";
import { listenAnnouncement, Spies, type SpyFields } from "./listen.ts";

export interface AsteriskOptions {
  store: Store;
  /** Times of records and wrap-ups (tests may pass a manual clock; network timers are real). */
  clock: Clock;
  logger: Logger;
  ami: Omit<AmiClientOptions, "logger">;
  /** `SVC_ASTERISK_CONFIG_DIR`. */
  configDir: string;
  /** `SVC_ASTERISK_RECORDINGS_DIR`: where MixMonitor writes; "" for Asterisk's own. */
  recordingsDir?: string;
  /** How often the directory is read again while nothing is asked (default 500 ms). */
  directoryRefreshMs?: number;
  /**
   * With several servers (`SVC_ASTERISK_SERVERS`): this server's name, which scopes its lease and
   * its processes' presence in the store; absent with one server (the keys of before).
   */
  server?: string;
  /** With several servers: the lease every server's platform of this process shares. */
  lease?: PlatformLease;
  /** With several servers: where this server's files go (config_files.ts). */
  placement?: () => ServerPlacement | undefined;
  /**
   * With several servers: the `USR_` variables of call `linkedId` on the other servers (its dial
   * variables, `setData`), which a call coming from one over a trunk takes on (`SvcLink`).
   */
  linkedData?: (linkedId: string) => Record<string, string> | null;
  /** With several servers: sends a `UserEvent` on server `server`'s AMI (several.ts). */
  userEventOn?: (server: string, fields: Record<string, string>) => void;
}

/**
 * The lease of the process that turns AMI events into store writes and writes the files: one for
 * all the servers when svc drives several (several.ts).
 */
export const LEASE_KEY: Deno.KvKey = ["platform_lease"];
/**
 * A holder renews its lease every {@link LEASE_TICK_MS}, the others try to take it as often: a
 * holder that dies loses it within {@link LEASE_MS}, and another holds it a tick later at most
 * (takeover within 4 s).
 */
export const LEASE_MS = 3_000;
export const LEASE_TICK_MS = 1_000;
/**
 * A holder that gives the lease up (its AMI connection lost or stalled while another process's is
 * not, its store writes failing) does not take it again for this long, so that a process placed
 * better takes it first.
 */
export const STEP_DOWN_MS = 2 * LEASE_TICK_MS;

/**
 * How a platform takes, renews and gives back its lease: its own (one server), or the one every
 * server's platform of a process shares (several servers, several.ts).
 */
export interface PlatformLease {
  /** Takes or renews it; `reachable`: this platform's Asterisk is (the lease's strength). */
  take(now: number, releasedAs: string | null, reachable: boolean): Promise<LeaseTaken>;
  /** Gives it back (a step down): the lease as given back, for `take`'s `releasedAs`. */
  release(): Promise<string | null>;
  /** The platform closes: gives it back if it is its own. */
  close(): Promise<void>;
}

/**
 * A listening call where the agent's phone and the supervisor's are not on the same server
 * (several.ts): placed on the agent's, with the agent's presence (the main server's) and the
 * supervisor's server, null for this one.
 */
export interface ListenAcross {
  presence: AgentPresence;
  supervisorOn: string | null;
}

/** A platform's own lease (one server). */
function ownLease(store: Store, owner: string): PlatformLease {
  return {
    take: (now, releasedAs, reachable) =>
      takeLeaseAt(store, LEASE_KEY, owner, now, LEASE_MS, releasedAs, reachable ? 1 : 0),
    release: () => releaseLeaseAt(store, LEASE_KEY, owner),
    close: () => releaseLeaseAt(store, LEASE_KEY, owner).then(() => {}),
  };
}
/**
 * Each process says every tick whether it is connected to Asterisk (`ProcessPresence`, kept
 * {@link LEASE_MS}): a holder losing its connection gives the lease up only to a process that has
 * one (alone, it keeps it and hands over what its resync finds at once).
 */
const PRESENCE = "platform_process";
/** Every process keeps the events it saw this long (and this many at most), for a takeover. */
const SEEN_MS = 60_000;
const SEEN_MAX = 20_000;
/** Events handed to the listeners at once (what a takeover hands over, what a burst brings). */
const REPLAY_CHUNK = 500;
/** The `UserEvent` each process sends once logged in: where the ids of the events after it start. */
const MARK_EVENT = "SvcMark";

/** How long a resync waits for Asterisk's `FullyBooted` after a login before going on. */
const BOOT_WAIT_MS = 10_000;

/** What a dial from queue's destination may look like as its `SvcLink` tells it (a number). */
const DIALLED = /^[0-9A-Za-z*#+._-]{1,40}$/;

/** A queue call waits this long for an agent (the simulator's wait). */
const QUEUE_WAIT_MS = 30_000;

/** The contacts list view's status of an Asterisk device state (decisions §12). */
const DEVICE_STATUS: Record<string, PhoneStatus> = {
  NOT_INUSE: 0,
  INUSE: 2,
  BUSY: 2,
  RINGINUSE: 2,
  RINGING: 8,
  ONHOLD: 16,
};

export class AsteriskPlatform implements Platform {
  readonly #ami: AmiClient;
  readonly #loader: DirectoryLoader;
  #dir = new Directory([], [], [], [], []);
  readonly #agents: AgentBook;
  readonly #calls: CallTracker;
  readonly #commands: CallCommands;
  readonly #spies: Spies;
  readonly #rooms: RoomBook;
  readonly #writer: ConfigWriter;
  /** Device → its last known state (`DeviceStateChange`). */
  readonly #devices = new Map<string, string>();
  /** Voicemail id → its messages as last told (`MessageWaiting`): `<new>/<old>`. */
  readonly #mailboxes = new Map<number, string>();
  readonly #listeners: PlatformListener[] = [];
  /** Events of the AMI event being handled, handed over once it is. */
  #batch: PlatformEvent[] = [];
  /**
   * The events handed over on their way to the listeners, in order, {@link REPLAY_CHUNK} at most
   * at once; none once this process has given the lease up (the next holder hands them over).
   */
  readonly #delivery = new EventDelivery(
    async (batch) => this.#leader && await this.#tellListeners(batch),
    REPLAY_CHUNK,
  );
  #statusVersion = 0;
  readonly #owner = crypto.randomUUID();
  #leader = false;
  /** Until when (`performance.now()`) this process does not take the lease (it gave it up). */
  #steppedDownUntil = 0;
  /**
   * The lease as this process gave it back, and the first batch seen since: taken again with
   * nobody else having held it meanwhile, this process hands over its own events of that time too
   * (nobody else did).
   */
  #releasedAs: string | null = null;
  #downFrom: number | null = null;
  /**
   * The last `SvcMark` seen on this connection (null: none yet, or the connection was lost since)
   * and how many AMI events came after it: an AMI event's place in the stream every connection
   * gets alike, so every process names it alike (see `#emit`).
   */
  #mark: string | null = null;
  #sinceMark = 0;
  #marksSent = 0;
  /** What the events emitted now come from: an AMI event's place, or null (not replayable). */
  #cause: { key: string; replayable: boolean } | null = null;
  /** Events emitted under the current cause, per kind (a second one of a kind gets `#2`). */
  readonly #underCause = new Map<string, number>();
  #localIds = 0;
  /** Events whose id is this process's own (not computed from the AMI stream): never replayed. */
  readonly #local = new WeakSet<PlatformEvent>();
  /**
   * Calls that went on while this process's connection was lost: what it saw of them may differ
   * from what the others saw, so their events are not replayed.
   */
  readonly #gapCalls = new Set<string>();
  /** The events of the last {@link SEEN_MS}, as handed over (or not, by a follower), in order. */
  readonly #seen: { at: number; seq: number; events: PlatformEvent[] }[] = [];
  #seenCount = 0;
  #seenBatches = 0;
  /** Store writes of the lease's that nothing waits for (`close()` does). */
  readonly #storeWrites = new Set<Promise<unknown>>();
  #timers: ReturnType<typeof setInterval>[] = [];
  #closed = false;
  readonly #firstSync = Promise.withResolvers<void>();
  /** The current connection's resync is done (see `reachable`). */
  #synced = false;
  #resyncing = false;
  /** This server's lease and where its processes say they are (see {@link PRESENCE}). */
  readonly #lease: PlatformLease;
  readonly #presence: Deno.KvKey;
  /**
   * Calls that came over a trunk from another server: their `Linkedid` here → the id the caller's
   * server gave the call (`SvcLink`), which their events carry: one call, one id.
   */
  readonly #links = new Map<string, string>();
  /**
   * Those of {@link #links} placed by the other server on behalf of a phone here (a queue's call to
   * its agent, an invitation): that server keeps their history records (config_files.ts,
   * `AGENT_HEADER`).
   */
  readonly #placedLinks = new Set<string>();
  /** Resolved by `FullyBooted` on the current connection (Asterisk may accept logins earlier). */
  #booted = Promise.withResolvers<void>();

  constructor(readonly options: AsteriskOptions) {
    const { store, logger } = options;
    this.#lease = options.lease ?? ownLease(store, this.#owner);
    this.#presence = options.server === undefined ? [PRESENCE] : [PRESENCE, options.server];
    this.#loader = directoryLoader(store);
    // a lost or stalled connection is noticed within 10 s (decisions §12): a ping after 4 s of
    // silence, answered within 5 s (SVC_AMI_KEEPALIVE_MS, SVC_AMI_TIMEOUT_MS)
    // ActionIDs are the process's own: events naming them (a UserEvent) reach every process
    // a line over 64 KiB (a huge channel variable) is cut, its event kept (docs/asterisk.md)
    this.#ami = new AmiClient({
      keepaliveMs: 4000,
      timeoutMs: 5000,
      maxLineBytes: 64 * 1024,
      actionIdPrefix: `svc-${this.#owner.slice(0, 8)}-`,
      ...options.ami,
      logger,
    });
    const ctx = {
      dir: () => this.#dir,
      emit: (event: PlatformEvent) => this.#emit(event),
      now: () => options.clock.now(),
      ignored: (linkedId: string) => this.#spies.has(linkedId),
      roomOf: (uniqueId: string) => this.#rooms.roomOf(uniqueId),
      elsewhere: (phone: { registrar?: string }) => {
        const placement = options.placement?.();
        return !!placement && phone.registrar !== placement.server &&
          placement.peers.some((peer) => peer.name === phone.registrar);
      },
    };
    this.#spies = new Spies(ctx.emit);
    this.#rooms = new RoomBook({
      ...ctx,
      action: (action, fields) => this.#action(action, fields),
      recordingsDir: options.recordingsDir ?? "",
      phoneOfChannel: (uniqueId) => this.#calls.phoneOfChannel(uniqueId),
    });
    this.#agents = new AgentBook({
      ...ctx,
      // a wrap-up ending on the clock has no AMI event to carry its state: handed over at once,
      // named after the AMI event that started it (every process sets the same timer)
      clock: {
        now: () => options.clock.now(),
        after: (ms, task) => {
          const cause = this.#cause;
          return options.clock.after(ms, async () => {
            this.#setCause(cause && { ...cause, key: `${cause.key}+${ms}` });
            try {
              await task();
            } finally {
              this.#setCause(null);
              this.#handOver();
            }
          });
        },
      },
      logger,
      action: (action, fields) => this.#action(action, fields),
    });
    this.#calls = new CallTracker({
      ...ctx,
      agents: this.#agents,
      repair: (action, fields) => this.#repair(action, fields),
      establishedElsewhere: (leg) => this.#establishedElsewhere(leg),
    });
    this.#commands = new CallCommands({
      tracker: this.#calls,
      dir: () => this.#dir,
      now: () => options.clock.now(),
      action: (action, fields) => this.#action(action, fields),
      recordingsDir: options.recordingsDir ?? "",
      roomOf: ctx.roomOf,
    });
    this.#writer = new ConfigWriter({
      store,
      dir: options.configDir,
      logger,
      reload: (modules) => this.#reload(modules),
      isLeader: () => this.#leader,
      placement: options.placement,
    });
    this.#ami.onEvent((event) => this.#onEvent(event));
    this.#ami.onConnect(() => this.#sendMark());
    this.#ami.onConnect(() => this.#resync());
    this.#ami.onStall((stalled) => {
      this.#statusVersion++; // every phone shows -1 while it lasts
      // once Asterisk answers again (the connection stays): resynced, for what the stall cut
      // short or held back (a DND change is written at the next resync)
      if (!stalled && !this.#resyncing) void this.#resync();
    });
    // events may have been missed: the ids start again from this process's next mark, and the
    // lease goes to a process that missed nothing (it hands over what this one did not)
    this.#ami.onDisconnect(() => {
      this.#mark = null;
      if (!this.#closed) this.#inBackground(this.#giveUpToOthers("AMI connection lost"));
    });
    this.#ami.onStall((stalled) => {
      if (stalled) this.#inBackground(this.#giveUpToOthers("AMI connection stalled"));
    });
    this.#ami.onDisconnect((reason) => {
      this.#synced = false;
      this.#booted = Promise.withResolvers();
      this.#statusVersion++;
      if (!this.#closed) logger.warn("Asterisk unreachable", { reason });
    });
  }

  /** Whether `start()` ran. */
  get started(): boolean {
    return this.#timers.length > 0;
  }

  /** Connects to Asterisk, takes the lease when free, writes the configuration files. */
  start(): void {
    this.#timers.push(setInterval(() => this.#refresh(), this.options.directoryRefreshMs ?? 500));
    this.#timers.push(setInterval(() => this.#takeLease(), LEASE_TICK_MS));
    void this.#refresh();
    void this.#takeLease().then(() => {
      if (!this.#closed) this.#writer.start();
    });
    this.#ami.start();
  }

  /**
   * Logged in to the AMI and resynced: Asterisk accepts logins before it has booted, and what svc
   * shows (agents, device states) is only right once the resync after `FullyBooted` is done.
   */
  reachable(): boolean {
    return this.#ami.connected && this.#synced;
  }

  connection(): PlatformConnection {
    const state = !this.#ami.connected ? "disconnected" : this.#synced ? "ready" : "syncing";
    return { adapter: "asterisk", state };
  }

  dialNumber(
    caller: UserRecord,
    destination: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return this.#dialFromPhone(caller, destination, variables, (phone) => ({
      exten: destination,
      context: phone.context,
    }));
  }

  /**
   * A Local channel into the caller's line context calls the mobile (the dialplan routes an outside
   * number from there, as for `dialNumber`); once it answers, that channel runs `destination` in
   * the same context. No `CallerID`: Asterisk would set it as both the caller id and the connected
   * line of the Local channel, and the two halves of a Local channel cross them over, so the mobile
   * and the destination would see the same one. Instead the Local channel gets the user's as caller
   * id (what the destination sees) and the destination's as connected line (what its other half
   * shows the mobile).
   */
  dialFromMobile(
    caller: UserRecord,
    mobile: string,
    destination: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return this.#dialFromPhone(caller, destination, variables, (phone) => ({
      exten: destination,
      context: phone.context,
    }), mobile);
  }

  /** The callee's extension, dialled in its own line's context: a user can always be reached. */
  async dialUser(
    caller: UserRecord,
    callee: UserRecord,
    variables: CallVariables,
  ): Promise<CallStarted> {
    const target = (await this.#directory()).phoneOfUser(callee.id);
    if (!target) throw noLine(callee);
    return await this.#dialFromPhone(caller, target.extension, variables, () => ({
      exten: target.extension,
      context: target.context,
    }));
  }

  /**
   * A Local channel waits in the queue (`svc-queue-out`) until an agent answers; the Originate
   * then dials the destination from that agent's phone, in the queue's context.
   */
  async dialFromQueue(
    _requester: UserRecord,
    queue: QueueRecord,
    destination: string,
    variables: CallVariables,
    callerId: { name: string | null; number: string | null },
  ): Promise<CallStarted> {
    const current = (await this.#directory()).queues.get(queue.id) ?? queue;
    const shown = callerId.number ?? current.number ?? current.name;
    const shownName = callerId.name ?? current.display_name ?? current.name;
    const text = callerIdText(shownName, shown);
    return await this.#originate({
      kind: "from_queue",
      context: current.context,
      dialled: destination,
      shownNumber: shown,
      shownName,
      src: { userId: null, username: "", number: shown },
      userData: usrVariables(variables),
      originate: {
        channel: `Local/${current.id}@svc-queue-out`,
        exten: destination,
        context: current.context,
      },
      queue: { id: current.id, number: current.number ?? current.name },
    }, {
      callerId: text,
      timeoutMs: QUEUE_WAIT_MS,
      variables,
      // the destination sees the queue (not the agent who answered): svc-user sets it back; an
      // agent on another server is told what it dials (config_files.ts, DIALLED_HEADER)
      channelVariables: [`SVC_CALLERID=${text}`, `__SVC_DIALLED=${destination}`],
    });
  }

  /** The destination is called first (a Local channel); once it answers it waits in the queue. */
  async dialToQueue(
    queue: QueueRecord,
    destination: string,
    callerIdNumber: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    const current = (await this.#directory()).queues.get(queue.id) ?? queue;
    return await this.#originate({
      kind: "to_queue",
      context: current.context,
      dialled: destination,
      shownNumber: callerIdNumber,
      shownName: "",
      src: { userId: null, username: "", number: callerIdNumber },
      userData: usrVariables(variables),
      originate: {
        channel: `Local/${destination}@${current.context}`,
        exten: String(current.id),
        context: "svc-queue-in",
      },
    }, {
      callerId: callerIdText(callerIdNumber, callerIdNumber),
      timeoutMs: QUEUE_WAIT_MS,
      variables,
    });
  }

  /**
   * Writes the user's DND and forwards into the AstDB. The record is already stored: while the
   * PBX is unreachable the change waits for the next connection, which writes every user's.
   */
  async userServicesChanged(user: UserRecord): Promise<void> {
    this.#statusVersion++;
    if (!this.#ami.connected) return; // the next connection writes every user's
    try {
      await writeKeys((action, fields) => this.#action(action, fields), userKeys(user));
    } catch (error) {
      // the connection was lost meanwhile: the next one writes every user's
      if (!(error instanceof PlatformUnavailable)) throw error;
    }
  }

  async agentLogin(agent: AgentRecord, extension: string, context: string): Promise<void> {
    await this.#command(() => this.#agents.login(agent, extension, context));
  }

  async agentLogout(agentId: number): Promise<void> {
    await this.#command(() => this.#agents.logout(agentId));
  }

  async agentPause(agentId: number, reason: string | null): Promise<void> {
    await this.#command(() => this.#agents.pause(agentId, reason));
  }

  async agentUnpause(agentId: number): Promise<void> {
    await this.#command(() => this.#agents.unpause(agentId));
  }

  /**
   * A logged-in agent joins, leaves or takes its new penalty in its queues now. While the PBX is
   * unreachable nothing is sent: the next connection's resync has every logged-in agent follow its
   * queues as they are then.
   */
  async agentQueuesChanged(agentId: number): Promise<void> {
    if (!this.reachable()) return;
    try {
      await this.#command(() => this.#agents.followQueues(agentId));
    } catch (error) {
      // the connection was lost meanwhile: the next one's resync follows the configuration
      if (!(error instanceof PlatformUnavailable)) throw error;
    }
  }

  agentPresence(agentId: number): Promise<AgentPresence> {
    return Promise.resolve(this.#agents.presence(agentId));
  }

  agentPresences(agentIds: readonly number[]): Promise<AgentPresence[]> {
    return Promise.resolve(agentIds.map((agentId) => this.#agents.presence(agentId)));
  }

  agentPresenceVersion(): number {
    return this.#agents.version;
  }

  queueCalls(): Promise<WaitingCall[]> {
    return Promise.resolve(this.#calls.waitingCalls());
  }

  /**
   * The supervisor's phone is originated into `svc-listen`, where `ChanSpy` listens to the
   * channel of the agent's call (its uniqueid in `SVC_SPY`); announced first (`SvcListen`) so that
   * every process follows it as this one does.
   */
  async listen(
    supervisor: UserRecord,
    agentId: number,
    across?: ListenAcross,
  ): Promise<CallStarted> {
    if (!this.reachable()) throw new PlatformUnavailable("not connected to Asterisk");
    const dir = await this.#directory();
    const phone = dir.phoneOfUser(supervisor.id);
    if (!phone?.interface) throw noLine(supervisor);
    const presence = across?.presence ?? this.#agents.presence(agentId);
    if (!presence.logged) throw notLogged(agentId);
    const agentPhone = dir.phoneAt(presence.extension!, presence.context!);
    const target = agentPhone
      ? this.#calls.liveLegs().filter((leg) =>
        leg.phone?.lineId === agentPhone.lineId && leg.state !== "ringing" &&
        this.#calls.channelOf(leg)?.device !== null
      ).at(-1)
      : undefined;
    if (!agentPhone || !target) {
      throw new PlatformRefusal("not_on_call", `agent ${agentId} is on no call`);
    }
    const user = dir.users.get(supervisor.id) ?? supervisor;
    const agentUser = agentPhone.userId === null ? undefined : dir.users.get(agentPhone.userId);
    const fields: SpyFields = {
      agentId,
      agentNumber: dir.agents.get(agentId)?.number ?? "",
      phoneNb: presence.extension!,
      agentUsername: agentPhone.username,
      supervisorId: supervisor.id,
      supervisorUsername: user.username ?? "",
    };
    const linkedId = crypto.randomUUID();
    // a supervisor of another server: rung over the trunk (config_files.ts, listenExten)
    const channel = across?.supervisorOn
      ? `PJSIP/${listenExten(phone.lineId)}@${trunkName(across.supervisorOn)}`
      : phone.interface;
    this.#spies.add(linkedId, fields, channel);
    // every process registers it before its channel's first event (see #originate)
    this.#action("UserEvent", listenAnnouncement(linkedId, fields, channel)).catch(() => {});
    const response = await this.#action("Originate", {
      Channel: channel,
      Context: LISTEN_CONTEXT,
      Exten: "s",
      Priority: "1",
      CallerID: callerIdText(
        (agentUser && fullName(agentUser)) || fields.agentNumber,
        fields.phoneNb,
      ),
      Timeout: String(user.ring_seconds * 1000),
      ChannelId: linkedId,
      Variable: [`SVC_SPY=${target.uniqueId}`],
      Async: "true",
    });
    if (!response.ok) {
      this.#spies.forget(linkedId);
      throw new PlatformRefusal("pbx_refused", pbxMessage("Originate", response));
    }
    return { linkedId };
  }

  /** `MailboxCount` of the voicemail's mailbox (`<number>@<context>`). */
  async voicemailCounts(voicemailId: number): Promise<VoicemailCounts> {
    const voicemail = (await this.#loader.load({ recent: true })).voicemails.get(voicemailId);
    if (!voicemail?.enabled) {
      throw new PlatformRefusal("no_voicemail", `no voicemail ${voicemailId}`);
    }
    if (!this.reachable()) throw new PlatformUnavailable("not connected to Asterisk");
    const response = await this.#action("MailboxCount", {
      Mailbox: `${voicemail.number}@${voicemail.context}`,
    });
    if (!response.ok) {
      throw new PlatformRefusal("pbx_refused", pbxMessage("MailboxCount", response));
    }
    const count = (field: string) => Number(response.message.get(field)) || 0;
    return { newMessages: count("NewMessages"), oldMessages: count("OldMessages") };
  }

  /**
   * A phone's status from its device state (decisions §12: Asterisk cannot tell a phone calling
   * out from one talking, so 1 never shows); -1 with DND, for a device unavailable or unknown, and
   * for every phone while the PBX is unreachable.
   */
  async phoneStatuses(numbers: string[]): Promise<Map<string, PhoneStatus>> {
    const dir = await this.#loader.load({ recent: true });
    return new Map(numbers.map((number) => [number, this.#status(dir, number)]));
  }

  /** Bumped by every AMI event that may change a status; null when the directory must be read. */
  phoneStatusVersion(): number | null {
    return this.#loader.recent() ? this.#statusVersion : null;
  }

  onEvents(listener: PlatformListener): void {
    this.#listeners.push(listener);
  }

  liveCalls(): Promise<LiveCall[]> {
    const calls = this.#commands.liveCalls();
    if (!this.#links.size) return Promise.resolve(calls);
    // a call from another server: its id there (one call, one id)
    return Promise.resolve(
      calls.map((call) => ({ ...call, linkedId: this.#links.get(call.linkedId) ?? call.linkedId })),
    );
  }

  /** The parties (`callId`s) here that are trunks to another server of svc's (several.ts). */
  trunkParties(): Set<string> {
    const trunks = this.#calls.liveLegs().filter((leg) => this.#calls.overTrunk(leg));
    return new Set(trunks.map((leg) => leg.uniqueId));
  }

  async callCommand(callId: string, command: CallCommand): Promise<void> {
    await this.#command(() => this.#commands.command(callId, command));
  }

  async startTransfer(request: TransferRequest): Promise<Transfer> {
    return await this.#command(() => this.#commands.startTransfer(request));
  }

  transfers(): Promise<Transfer[]> {
    return Promise.resolve(this.#commands.transfers());
  }

  async completeTransfer(id: string): Promise<void> {
    await this.#command(() => this.#commands.completeTransfer(id));
  }

  async cancelTransfer(id: string): Promise<void> {
    await this.#command(() => this.#commands.cancelTransfer(id));
  }

  async startConference(hostCallId: string, participantCallIds: string[]): Promise<Conference> {
    return await this.#command(() =>
      this.#commands.startConference(hostCallId, participantCallIds)
    );
  }

  conferences(): Promise<Conference[]> {
    return Promise.resolve(this.#commands.conferences());
  }

  async addToConference(conferenceId: string, callId: string): Promise<void> {
    await this.#command(() => this.#commands.addToConference(conferenceId, callId));
  }

  async removeFromConference(conferenceId: string, callId: string): Promise<void> {
    await this.#command(() => this.#commands.removeFromConference(conferenceId, callId));
  }

  async endConference(conferenceId: string): Promise<void> {
    await this.#command(() => this.#commands.endConference(conferenceId));
  }

  rooms(): Promise<RoomState[]> {
    return Promise.resolve(this.#rooms.rooms());
  }

  async roomCommand(roomId: string, callId: string, command: RoomCommand): Promise<void> {
    await this.#command(() => this.#rooms.command(roomId, callId, command));
  }

  async recordRoom(roomId: string, on: boolean): Promise<void> {
    await this.#command(() => this.#rooms.record(roomId, on));
  }

  async endRoom(roomId: string): Promise<void> {
    await this.#command(() => this.#rooms.end(roomId));
  }

  /**
   * The user's phone is originated into `svc-room-invite`, which joins the ConfBridge of the room
   * (its id in `SVC_ROOM`) without asking its PIN; the phone shows the room calling. The call is
   * registered as a dial of the room's number, so the user gets the events of one. A phone of
   * another server (`phoneOn`, several.ts) is originated over the trunk, with what a call svc
   * places there on the phone's behalf carries (config_files.ts: `AGENT_HEADER`,
   * `DIALLED_HEADER`, the call's id).
   */
  async inviteToRoom(user: UserRecord, roomId: string, phoneOn?: string): Promise<CallStarted> {
    const dir = await this.#directory();
    const room = dir.rooms.get(roomId);
    if (!room?.number) throw new PlatformRefusal("no_room", `no room ${roomId} to join`);
    const phone = dir.phoneOfUser(user.id);
    if (!phone?.interface) throw noLine(user);
    this.#rooms.checkNotFull(room);
    const current = dir.users.get(user.id) ?? user;
    const channel = phoneOn ? `PJSIP/${phone.extension}@${trunkName(phoneOn)}` : phone.interface;
    const headers = (linkedId: string) =>
      phoneOn
        ? [
          `PJSIP_HEADER(add,${CALL_HEADER})=${linkedId}`,
          `PJSIP_HEADER(add,${AGENT_HEADER})=${PLACED_FOR_CALLER}`,
          `PJSIP_HEADER(add,${DIALLED_HEADER})=${room.number}`,
        ]
        : [];
    return await this.#originate({
      kind: "user",
      context: room.context,
      dialled: room.number,
      shownNumber: phone.extension,
      shownName: fullName(current),
      src: { userId: user.id, username: user.username ?? "", number: phone.extension },
      userData: {},
      originate: { channel, exten: "s", context: ROOM_INVITE_CONTEXT },
      callerPhone: phone,
    }, {
      callerId: callerIdText(room.name || room.number, room.number),
      timeoutMs: current.ring_seconds * 1000,
      variables: {},
      channelVariables: (linkedId) => [`SVC_ROOM=${room.id}`, ...headers(linkedId)],
    });
  }

  /** Disconnects (with a Logoff), stops every timer, gives the lease back. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) clearInterval(timer);
    this.#agents.close();
    await this.#ami.close();
    await this.#writer.close();
    await this.#delivery.idle();
    await Promise.all(this.#storeWrites);
    if (this.#leader) await this.#lease.close().catch(() => null);
  }

  /**
   * Resolves once every event Asterisk sent before now is handled and handed to the listeners
   * (a Ping's answer comes after them on the connection). For tests and benchmarks.
   */
  async settled(): Promise<void> {
    if (this.#ami.connected) await this.#ami.action("Ping").catch(() => null);
    await this.#delivery.idle();
  }

  /** Resolves once the first connection's resync is done (tests and benchmarks start there). */
  firstSync(): Promise<void> {
    return this.#firstSync.promise;
  }

  /** The events this process keeps for a takeover, in order (tests). */
  seenEvents(): PlatformEvent[] {
    return this.#seen.flatMap((batch) => batch.events);
  }

  /** Whether this process holds the platform lease (tests). */
  leading(): boolean {
    return this.#leader;
  }

  /** The linkedIds of the calls in progress (tests). */
  calls(): string[] {
    return this.#calls.calls();
  }

  // --- commands ---------------------------------------------------------------------------------

  /**
   * Rings the caller's own phone first; once it answers the dialplan calls `exten`@`context`.
   * With `mobile`, a Local channel calling the mobile in the caller's line context is rung first
   * instead (see `dialFromMobile`); its events go to the caller as its phone's.
   */
  async #dialFromPhone(
    caller: UserRecord,
    dialled: string,
    variables: CallVariables,
    target: (phone: Phone) => { exten: string; context: string },
    mobile: string | null = null,
  ): Promise<CallStarted> {
    const dir = await this.#directory();
    const phone = dir.phoneOfUser(caller.id);
    // a dial from mobile needs only the line's context and extension, not its device
    if (!phone || (mobile === null && !phone.interface)) throw noLine(caller);
    const device = phone.interface ?? "";
    const user = dir.users.get(caller.id) ?? caller;
    const { exten, context } = target(phone);
    const shown = callerIdText(fullName(user), phone.extension);
    const init = {
      kind: "user" as const,
      context,
      dialled,
      shownNumber: phone.extension,
      shownName: fullName(user),
      src: { userId: caller.id, username: caller.username ?? "", number: phone.extension },
      userData: usrVariables(variables),
    };
    const timeoutMs = user.ring_seconds * 1000;
    if (mobile === null) {
      return await this.#originate({
        ...init,
        originate: { channel: device, exten, context },
        callerPhone: phone,
      }, { callerId: shown, timeoutMs, variables });
    }
    const callee = dir.phoneAt(exten, context);
    const calleeUser = callee?.userId == null ? undefined : dir.users.get(callee.userId);
    const calleeName = (calleeUser && fullName(calleeUser)) || exten;
    return await this.#originate({
      ...init,
      originate: { channel: `Local/${mobile}@${context}`, exten, context },
      // the mobile stands for the caller's phone: its events go to the caller
      callerPhone: { ...phone, userId: caller.id, username: caller.username ?? "" },
      callerNumber: mobile,
    }, {
      callerId: null,
      timeoutMs,
      variables,
      channelVariables: [
        `CALLERID(all)=${shown}`,
        `CONNECTEDLINE(all)=${callerIdText(calleeName, exten)}`,
      ],
    });
  }

  /**
   * Registers the call (its linkedId is the ChannelId svc gives the first channel: Asterisk uses
   * it as Uniqueid and Linkedid), then sends the Originate, asynchronous: its progress comes as
   * events. A synchronous refusal (an extension that does not exist) is a refusal of the command.
   */
  async #originate(
    init: Omit<NewCall, "linkedId" | "originate"> & {
      originate: NonNullable<NewCall["originate"]>;
    },
    options: {
      /** The Originate's `CallerID`; null: none. */
      callerId: string | null;
      timeoutMs: number;
      variables: CallVariables;
      /** The channel's own variables (given the call's id). */
      channelVariables?: string[] | ((linkedId: string) => string[]);
    },
  ): Promise<CallStarted> {
    if (!this.reachable()) throw new PlatformUnavailable("not connected to Asterisk");
    const linkedId = crypto.randomUUID();
    const variables = [
      // `__`: every leg of the call inherits them
      ...Object.entries(usrVariables(options.variables)).map(([key, value]) => `__${key}=${value}`),
      ...(typeof options.channelVariables === "function"
        ? options.channelVariables(linkedId)
        : options.channelVariables ?? []),
    ];
    const call = this.#calls.start({ ...init, linkedId });
    let response: AmiResponse;
    try {
      // every process registers the call as this one did (docs/asterisk.md, "Several svc
      // processes"): the same events, whichever process hands them over. Written before the
      // Originate, and Asterisk runs a session's actions in turn: it comes before any channel's
      // event (its answer is not waited for: the Originate's tells)
      this.#action("UserEvent", dialAnnouncement({ ...init, linkedId })).catch(() => {});
      response = await this.#action("Originate", {
        Channel: init.originate.channel,
        Context: init.originate.context,
        Exten: init.originate.exten,
        Priority: "1",
        CallerID: options.callerId ?? undefined,
        Timeout: String(options.timeoutMs),
        ChannelId: linkedId,
        Variable: variables,
        Async: "true",
      }, (actionId) => call.originateId = actionId);
    } catch (error) {
      this.#calls.forget(linkedId);
      if (error instanceof TypeError) {
        throw new PlatformRefusal("bad_variables", "variables must hold no line break");
      }
      throw error;
    }
    if (!response.ok) {
      this.#calls.forget(linkedId);
      this.#action("UserEvent", { UserEvent: DIAL_DROPPED_EVENT, Call: linkedId }).catch(() => {});
      throw new PlatformRefusal("pbx_refused", pbxMessage("Originate", response));
    }
    return { linkedId };
  }

  /**
   * An action the PBX needs after what it did (call control's repairs: a party left alone on hold
   * hung up, a transfer's parties bridged back): the lease holder sends it, every process having
   * seen the same events; a failure (the channel gone meanwhile) is logged.
   */
  #repair(action: string, fields: Record<string, string>): void {
    if (!this.#leader) return;
    this.#action(action, fields).then((response) => {
      if (!response.ok) {
        this.options.logger.info("call control repair refused", {
          action,
          message: response.message.get("Message"),
        });
      }
    }, (error) => {
      this.options.logger.warn("call control repair failed", { action, error: String(error) });
    });
  }

  /** An AMI action; not connected or connection lost: {@link PlatformUnavailable}. */
  async #action(
    action: string,
    fields: Record<string, string | string[] | undefined> = {},
    onActionId?: (actionId: string) => void,
  ): Promise<AmiResponse> {
    try {
      return await this.#ami.action(action, fields, onActionId);
    } catch (error) {
      if (error instanceof AmiUnavailable) throw new PlatformUnavailable(error.message);
      throw error;
    }
  }

  /** Runs a command once the directory is fresh, handing over the events it caused. */
  async #command<T>(run: () => Promise<T>): Promise<T> {
    if (!this.reachable()) throw new PlatformUnavailable("not connected to Asterisk");
    await this.#directory();
    try {
      return await run();
    } finally {
      this.#handOver();
    }
  }

  /** The directory as stored now (a command must see the last configuration change). */
  async #directory(): Promise<Directory> {
    this.#dir = await this.#loader.load();
    return this.#dir;
  }

  async #refresh(): Promise<void> {
    try {
      const dir = await this.#loader.load();
      if (dir !== this.#dir) this.#statusVersion++;
      this.#dir = dir;
    } catch (error) {
      this.options.logger.warn("directory not read", { error: String(error) });
    }
  }

  async #reload(modules: string[]): Promise<void> {
    for (const module of modules) {
      const response = await this.#action("Reload", { Module: module });
      if (!response.ok) throw new Error(pbxMessage(`Reload ${module}`, response));
    }
  }

  // --- events -----------------------------------------------------------------------------------

  /** One AMI event: handled at once, in arrival order; what it caused is handed over. */
  #onEvent(event: AmiMessage): void {
    this.#setCause(this.#placeOf(event));
    try {
      if (event.event === "UserEvent") {
        const name = event.get("UserEvent");
        if (name === LINK_EVENT) this.#link(event);
        if (name === ESTABLISHED_EVENT) this.#establishedHere(event);
        if (name === AGENT_TRUNK_EVENT) {
          this.#calls.agentTrunk(event.get("Uniqueid") ?? "", Number(event.get("Line")));
        }
      }
      switch (event.event) {
        case "DeviceStateChange":
          this.#devices.set(event.get("Device") ?? "", event.get("State") ?? "");
          this.#statusVersion++;
          break;
        case "QueueMemberAdded":
          this.#agents.memberPresent(event);
          break;
        case "QueueMemberRemoved":
          this.#agents.memberRemoved(event);
          break;
        case "QueueMemberPause":
          this.#agents.memberPaused(event);
          break;
        case "QueueMemberPenalty":
          this.#agents.memberPenalty(event);
          break;
        case "FullyBooted":
          this.#booted.resolve();
          break;
        case "MessageWaiting":
          this.#messageWaiting(event);
          break;
        case "Shutdown":
          this.options.logger.warn("Asterisk is shutting down", {
            restart: event.get("Restart"),
          });
          break;
        default:
          // a listening call's events are its own; its channel's others the tracker leaves alone
          if (this.#spies.handle(event) && event.event !== "Newchannel") break;
          if (this.#calls.handle(event)) this.#statusVersion++;
          // a room's join: its party's EventEstablished (the tracker's) first, then the room's
          this.#rooms.handle(event);
      }
    } catch (error) {
      // a PBX sending what svc does not expect must never stop the others' events
      this.options.logger.error("AMI event not handled", {
        event: event.event,
        error: String(error),
        stack: (error as Error)?.stack,
      });
    }
    this.#setCause(null);
    this.#handOver();
  }

  /**
   * A mailbox's messages changed: the `VoicemailEvent` of the voicemail svc knows it as. Asterisk
   * also tells the state of the mailboxes it loads (a reload): told only when it differs from the
   * last one seen (none seen: empty).
   */
  #messageWaiting(event: AmiMessage): void {
    const [number = "", context = "default"] = (event.get("Mailbox") ?? "").split("@");
    const voicemail = this.#dir.voicemailAt(number, context);
    if (!voicemail) return;
    const counts = {
      newMessages: Number(event.get("New")) || 0,
      oldMessages: Number(event.get("Old")) || 0,
    };
    const seen = `${counts.newMessages}/${counts.oldMessages}`;
    if ((this.#mailboxes.get(voicemail.id) ?? "0/0") === seen) return;
    this.#mailboxes.set(voicemail.id, seen);
    this.#emit({ kind: "voicemail", voicemailId: voicemail.id, ...counts });
  }

  // --- event ids and hand-over ------------------------------------------------------------------

  /**
   * Where `event` stands in the AMI stream: its place after the last `SvcMark` (every connection
   * gets Asterisk's events in one order, so every process connected since that mark names it
   * alike); replayable unless no mark was seen on this connection yet, or it is about a call this
   * process followed across a lost connection.
   */
  #placeOf(event: AmiMessage): { key: string; replayable: boolean } | null {
    if (event.event === "UserEvent" && event.get("UserEvent") === MARK_EVENT) {
      this.#mark = event.get("Mark") ?? null;
      this.#sinceMark = 0;
    } else this.#sinceMark++;
    if (this.#mark === null) return null;
    const linkedId = event.get("Linkedid");
    const replayable = linkedId === undefined || !this.#gapCalls.has(linkedId);
    return { key: `${this.#mark}.${this.#sinceMark}`, replayable };
  }

  #setCause(cause: { key: string; replayable: boolean } | null): void {
    this.#cause = cause;
    this.#underCause.clear();
  }

  /**
   * Once logged in: a `SvcMark` every connection gets, from which the ids of this process's events
   * start (those before it are its own, never replayed), and the calls followed across the lost
   * connection, whose events are not replayed either.
   */
  #sendMark(): void {
    this.#mark = null;
    const alive = new Set(this.#calls.calls());
    for (const linkedId of this.#gapCalls) {
      if (!alive.has(linkedId)) this.#gapCalls.delete(linkedId);
    }
    for (const linkedId of alive) this.#gapCalls.add(linkedId);
    const mark = `${this.#owner.slice(0, 8)}-${++this.#marksSent}`;
    this.#action("UserEvent", { UserEvent: MARK_EVENT, Mark: mark }).catch((error) => {
      this.options.logger.warn("AMI mark not sent", { error: String(error) });
    });
  }

  /**
   * An event of the adapter gets its id: `<its cause's place>:<kind, whose, what>` when emitted
   * while handling an AMI event (or a timer that one set), the same in every process that saw the
   * same stream; else (a resync, a command's answer, before this connection's mark) an id of this
   * process's own, and the event is never handed over by a takeover.
   */
  #emit(localEvent: PlatformEvent): void {
    const cause = this.#cause;
    const event = this.#linked(localEvent);
    const linkedId = localEvent.kind === "agent" || localEvent.kind === "voicemail"
      ? undefined
      : localEvent.kind === "room"
      ? localEvent.participant?.linkedId
      : localEvent.linkedId;
    const ownId = !cause?.replayable || (linkedId !== undefined && this.#gapCalls.has(linkedId));
    if (localEvent.kind === "call_ended") {
      this.#gapCalls.delete(localEvent.linkedId);
      this.#links.delete(localEvent.linkedId);
      this.#placedLinks.delete(localEvent.linkedId);
    }
    if (ownId) {
      const local = { ...event, id: `${this.#owner}:${++this.#localIds}` };
      this.#local.add(local);
      this.#batch.push(local);
      return;
    }
    const what = eventKind(event);
    const n = (this.#underCause.get(what) ?? 0) + 1;
    this.#underCause.set(what, n);
    this.#batch.push({ ...event, id: `${cause.key}:${what}${n > 1 ? `#${n}` : ""}` });
  }

  /** A call from another server tells the id its server gave it (`SvcLink`, config_files.ts). */
  #link(event: AmiMessage): void {
    const local = event.get("Linkedid");
    const call = event.get("Call")?.trim();
    if (local && call && call !== local && /^[A-Za-z0-9.-]{1,64}$/.test(call)) {
      this.#links.set(local, call);
      // placed on behalf of a phone here: a queue's agent (1), an invitation's caller
      const placed = event.get("Agent");
      if (placed === "1" || placed === PLACED_FOR_CALLER) this.#placedLinks.add(local);
      const dialled = event.get("Dialled")?.trim() ?? "";
      if (this.#placedLinks.has(local) && DIALLED.test(dialled)) {
        this.#calls.placedThere(local, dialled, placed === PLACED_FOR_CALLER);
      }
      const data = this.options.linkedData?.(call);
      if (data) this.#calls.addUserData(local, data);
    }
  }

  /**
   * A party of call `leg.call` on another server is established here (calls.ts): svc tells that
   * server (the lease holder does, once), naming the call as that server knows it.
   */
  #establishedElsewhere(leg: Leg): void {
    if (!this.#leader) return;
    const device = this.#calls.channelOf(leg)?.device ?? "";
    const server = leg.phone?.registrar ??
      (device.startsWith(TRUNK_DEVICE) ? device.slice(TRUNK_DEVICE.length) : "");
    const call = this.#links.get(leg.call.linkedId) ?? leg.call.linkedId;
    this.options.userEventOn?.(server, {
      UserEvent: ESTABLISHED_EVENT,
      Call: call,
      By: leg.call.answeredBy ?? "",
    });
  }

  /**
   * `ESTABLISHED_EVENT`: call `Call` (this server's id, or the one it came with) is established
   * on the other server, answered by user `By` there.
   */
  #establishedHere(event: AmiMessage): void {
    const call = event.get("Call") ?? "";
    const by = event.get("By")?.trim() ?? "";
    const answeredBy = /^[\w.@+-]{1,128}$/.test(by) ? by : null;
    if (this.#calls.calls().includes(call)) return this.#calls.establishedThere(call, answeredBy);
    for (const [local, linked] of this.#links) {
      if (linked === call) this.#calls.establishedThere(local, answeredBy);
    }
  }

  /** A `UserEvent` svc sends on this server for another's call (several.ts). */
  userEvent(fields: Record<string, string>): void {
    if (!this.reachable()) return;
    this.#action("UserEvent", fields).catch((error) => {
      this.options.logger.warn("user event failed", { error: String(error) });
    });
  }

  /** The `USR_` variables of call `linkedId` in progress here, null for none (several servers). */
  callData(linkedId: string): Record<string, string> | null {
    return this.#calls.userData(linkedId);
  }

  /** `event` with the id of its call as the caller's server gave it, for a call from another. */
  #linked(event: PlatformEvent): PlatformEvent {
    if (!this.#links.size) return event;
    if (event.kind === "phone" || event.kind === "queue_call") {
      const call = this.#links.get(event.linkedId);
      return call ? { ...event, linkedId: call } : event;
    }
    if (event.kind === "call_ended") {
      const call = this.#links.get(event.linkedId);
      const records = this.#placedLinks.has(event.linkedId)
        ? []
        : event.records.map((record) => ({ ...record, id: call ?? record.id }));
      return call ? { ...event, linkedId: call, records } : event;
    }
    if (event.kind === "room") {
      const linked = <T extends { linkedId: string }>(one: T): T => {
        const call = this.#links.get(one.linkedId);
        return call ? { ...one, linkedId: call } : one;
      };
      return {
        ...event,
        participant: event.participant && linked(event.participant),
        participants: event.participants.map(linked),
      };
    }
    return event;
  }

  /**
   * Hands the batch to the listeners, in order, one batch at a time: phone and agent events,
   * then the finished calls' history, as the simulator does. Only the lease holder does; every
   * process keeps the batch for {@link SEEN_MS} (a takeover hands it over).
   */
  #handOver(): void {
    const events = this.#batch;
    if (!events.length) return;
    this.#batch = [];
    this.#remember(events);
    if (this.#leader) this.#deliver(events);
  }

  /** Queues `events` for the listeners (`lib/platform/delivery.ts`). */
  #deliver(events: PlatformEvent[]): void {
    this.#delivery.push(events);
  }

  /** `batch` to every listener in turn; false when the store failed this process (it stepped down). */
  async #tellListeners(batch: PlatformEvent[]): Promise<boolean> {
    for (const listener of this.#listeners) {
      try {
        await listener(batch);
      } catch (error) {
        if (error instanceof StoreUnavailable) {
          // the store fails this process: another takes over and writes what this one could
          // not (each listener writes each id once)
          this.#stepDown("store unavailable", error);
          return false;
        }
        this.options.logger.error("platform listener failed", {
          error: String(error),
          events: batch.length,
        });
      }
    }
    return true;
  }

  /** Keeps `events` among those seen, the oldest beyond {@link SEEN_MS} or {@link SEEN_MAX} gone. */
  #remember(events: PlatformEvent[]): void {
    const now = performance.now();
    this.#seen.push({ at: now, seq: this.#seenBatches++, events });
    this.#seenCount += events.length;
    while (
      this.#seen.length > 1 &&
      (this.#seen[0]!.at < now - SEEN_MS || this.#seenCount > SEEN_MAX)
    ) this.#seenCount -= this.#seen.shift()!.events.length;
  }

  /**
   * The lease taken over: the events seen, in order, are handed over before any new one (those
   * the last holder wrote are skipped by the listeners), but those this process named itself:
   * only those of the batches from `ownFrom` on are (nobody held the lease since this process
   * gave it up then).
   */
  #handOverSeen(ownFrom: number | null): void {
    const batches = this.#seen.map((batch) =>
      batch.events.filter((event) =>
        !this.#local.has(event) || (ownFrom !== null && batch.seq >= ownFrom)
      )
    );
    const count = batches.reduce((sum, events) => sum + events.length, 0);
    if (count === 0) return;
    this.options.logger.info("platform events seen handed over", { events: count });
    // batch by batch, as they were handed over the first time (each batch's history last)
    for (const events of batches) if (events.length) this.#deliver(events);
  }

  /**
   * This process's connection was lost (or stalls): when another process is connected, the lease
   * goes to it (see {@link PRESENCE}); else this one keeps it, nobody sees more.
   */
  async #giveUpToOthers(reason: string): Promise<void> {
    if (!this.#leader) return;
    try {
      const now = this.options.clock.now();
      const others = await this.options.store.list<ProcessPresence>({ prefix: this.#presence });
      const connected = others.some(({ key, value }) =>
        key.at(-1) !== this.#owner && value.reachable && value.until > now
      );
      if (!connected) return;
    } catch {
      // the store fails too: let another process try
    }
    this.#stepDown(reason);
  }

  /**
   * This process stops handing events over and gives the lease back, not to take it again for
   * {@link STEP_DOWN_MS}: another process, placed better, takes over and hands over what this one
   * did not.
   */
  #stepDown(reason: string, error?: unknown): void {
    this.#steppedDownUntil = performance.now() + STEP_DOWN_MS;
    if (!this.#leader) return;
    this.#leader = false;
    this.options.logger.warn("platform lease given up", {
      reason,
      ...(error !== undefined && { error: String(error) }),
    });
    this.#downFrom = this.#seenBatches;
    this.#releasedAs = null;
    this.#inBackground(
      this.#lease.release().then(
        (releasedAs) => this.#releasedAs = releasedAs,
        () => null,
      ),
    );
  }

  /** A store write nothing waits for but `close()`; its failure is the lease's business. */
  #inBackground(write: Promise<unknown>): void {
    const settled = write.catch(() => null).finally(() => this.#storeWrites.delete(settled));
    this.#storeWrites.add(settled);
  }

  /**
   * After each login: what svc shows is read again from Asterisk (device states, channels, queue
   * members), the AstDB is brought in line with the user records, and the configuration files
   * are written (and reloaded) if a write failed meanwhile.
   */
  async #resync(): Promise<void> {
    const logger = this.options.logger;
    this.#resyncing = true;
    try {
      const booted = await within(this.#booted.promise, BOOT_WAIT_MS);
      if (!booted) logger.warn("no FullyBooted from Asterisk: resync anyway");
      await this.#directory();
      const devices = await this.#action("DeviceStateList");
      this.#devices.clear();
      for (const item of devices.items) {
        this.#devices.set(item.get("Device") ?? "", item.get("State") ?? "");
      }
      const channels = await this.#action("CoreShowChannels");
      const alive = new Set(channels.items.map((item) => item.get("Uniqueid") ?? ""));
      this.#calls.resync(alive);
      this.#spies.resync(alive);
      this.#handOver();
      const queues = await this.#action("QueueStatus");
      this.#calls.resyncQueues(
        queues.items.filter((item) => item.event === "QueueEntry"),
        new Map(
          channels.items.map((item) => [item.get("Uniqueid") ?? "", item.get("Linkedid") ?? ""]),
        ),
      );
      await this.#agents.resync(queues.items.filter((item) => item.event === "QueueMember"));
      this.#handOver();
      await this.#rooms.resync();
      this.#handOver();
      await this.#syncAstdb();
      this.#statusVersion++;
      if (this.#leader) await this.#writer.sync();
      logger.info("Asterisk connected", { devices: devices.items.length });
    } catch (error) {
      this.#handOver();
      logger.error("resync with Asterisk failed", { error: String(error) });
    }
    // a failed resync most likely lost the connection: the next login resyncs again
    this.#resyncing = false;
    this.#synced = this.#ami.connected;
    this.#statusVersion++;
    this.#firstSync.resolve();
  }

  /** Writes the AstDB keys that differ from the user records (all users, at each connection). */
  async #syncAstdb(): Promise<void> {
    const tree = await this.#action("DBGetTree", { Family: ASTDB_FAMILY });
    const current = tree.items.map((item) => ({
      key: item.get("Key") ?? "",
      value: item.get("Val") ?? "",
    }));
    const writes = keysToWrite(current, await users.all(this.options.store));
    await writeKeys((action, fields) => this.#action(action, fields), writes);
  }

  /**
   * Takes or renews the lease, every {@link LEASE_TICK_MS}: when free, expired or held by a
   * process placed worse (the lease tells how its holder is placed: connected to Asterisk and
   * resynced, or not), so the lease goes to a process that sees Asterisk's events whenever one
   * does. Taken over: what this process saw is handed over first.
   */
  async #takeLease(): Promise<void> {
    if (this.#closed) return;
    const reachable = this.reachable();
    const presence: ProcessPresence = { reachable, until: this.options.clock.now() + LEASE_MS };
    // the lease's own write tells what fails
    this.#inBackground(
      this.options.store.set([...this.#presence, this.#owner], presence, {
        expireIn: 2 * LEASE_MS,
      }),
    );
    if (performance.now() < this.#steppedDownUntil) return;
    try {
      const { held, untouched } = await this.#lease.take(
        this.options.clock.now(),
        this.#releasedAs,
        reachable,
      );
      if (this.#closed || performance.now() < this.#steppedDownUntil) {
        // given up meanwhile: back at once to whoever takes it
        if (held && !this.options.lease) await this.#lease.release();
        return;
      }
      const taken = held && !this.#leader;
      // a shared lease lost (another server's platform of this process gave it up): what this
      // one sees meanwhile is handed over if this process takes it back untouched
      if (this.#leader && !held) this.#downFrom ??= this.#seenBatches;
      this.#leader = held;
      if (taken) {
        this.options.logger.info("platform lease taken", { owner: this.#owner });
        this.#handOverSeen(untouched ? this.#downFrom : null);
        this.#releasedAs = this.#downFrom = null;
        // the last holder may have died between writing a file and reloading its module
        if (this.#ami.connected) await this.#reload(ASTERISK_FILES.map((file) => file.module));
      }
    } catch (error) {
      // the store failed: the lease may lapse, another process takes over
      if (this.#leader) this.#stepDown("platform lease not renewed", error);
      else this.options.logger.warn("platform lease not renewed", { error: String(error) });
    }
  }

  #status(dir: Directory, number: string): PhoneStatus {
    const phone = dir.phoneAt(number, "default");
    if (!phone) return -2;
    const user = phone.userId === null ? undefined : dir.users.get(phone.userId);
    if (user?.services.dnd.enabled || !this.reachable()) return -1;
    return DEVICE_STATUS[this.#devices.get(phone.interface ?? "") ?? ""] ?? -1;
  }
}

/**
 * What tells an event from the others a cause gave: its kind, whose it is and what happened (an
 * AMI event gives one user at most one event of a type on a channel, one agent one state, one
 * call one queue event of each kind and one end).
 */
function eventKind(event: PlatformEvent): string {
  switch (event.kind) {
    case "phone":
      return `p/${event.userId}/${event.eventType}/${event.uniqueId}`;
    case "agent":
      return `a/${event.agentId}/${event.name}`;
    case "queue_call":
      return `q/${event.queueId}/${event.event}/${event.linkedId}`;
    case "call_ended":
      return `e/${event.linkedId}`;
    case "listen":
      return `l/${event.linkedId}/${event.started}`;
    case "voicemail":
      return `v/${event.voicemailId}/${event.newMessages}/${event.oldMessages}`;
    case "room":
      return `r/${event.roomId}/${event.event}/${event.participant?.callId ?? ""}`;
  }
}

/** What each process says of itself every lease tick (see {@link PRESENCE}). */
interface ProcessPresence {
  reachable: boolean;
  /** Stale after this time (ms). */
  until: number;
}

/** True when `promise` settles within `ms`, false after; no timer is left either way. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), ms));
  try {
    return await Promise.race([promise.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}

const noLine = (user: UserRecord) =>
  new PlatformRefusal("no_line", `user ${user.username ?? user.id} has no line`);

const fullName = (user: UserRecord) =>
  [user.firstname, user.lastname].filter((part) => part).join(" ");

/** `"Name" <number>`, the quotes and brackets of the name left out. */
const callerIdText = (name: string, number: string) =>
  `"${name.replace(/["<>\\]/g, "")}" <${number}>`;

/**
 * Several Asterisk servers behind one svc (`SVC_ASTERISK_SERVERS`, docs/asterisk.md "Several
 * servers"): one {@link AsteriskPlatform} per server (its own AMI connection, files, lease), behind
 * the one {@link Platform} the areas call. A user's command goes to the server the user's line is
 * placed on (its `registrar`; the main server when none); queues, agents and meeting rooms are the
 * main server's. A call to a user of another server crosses a trunk svc writes on both sides,
 * carrying svc's call id, so its events and history have one `linkedId` (config_files.ts,
 * `SvcLink`). The servers file is read again when it changes: a server added starts, one removed
 * stops, one changed starts again.
 */
import type { Clock } from "../../clock.ts";
import { PlatformUnavailable } from "../../errors.ts";
import type { Logger } from "../../log.ts";
import type { AgentRecord } from "../../store/agents.ts";
import type { QueueRecord } from "../../store/queues.ts";
import type { Store } from "../../store/store.ts";
import type { UserRecord } from "../../store/users.ts";
import type {
  CallCommand,
  Conference,
  LiveCall,
  Transfer,
  TransferRequest,
} from "../call_control.ts";
import { type Directory, type DirectoryLoader, directoryLoader } from "../directory.ts";
import {
  type AgentPresence,
  type CallStarted,
  type CallVariables,
  type PhoneStatus,
  type Platform,
  type PlatformConnection,
  type PlatformListener,
  type ServerState,
  type VoicemailCounts,
  type WaitingCall,
} from "../port.ts";
import type { RoomCommand, RoomState } from "../rooms.ts";
import type { ServerPlacement } from "./config_files.ts";
import {
  AsteriskPlatform,
  LEASE_KEY,
  LEASE_MS,
  LEASE_TICK_MS,
  type PlatformLease,
  STEP_DOWN_MS,
} from "./mod.ts";
import { type LeaseTaken, releaseLeaseAt, takeLeaseAt } from "../../store/lease.ts";
import { type AsteriskServer, parseServers, readServers, trunkSecret } from "./servers.ts";

export interface AsteriskServersOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** `SVC_ASTERISK_SERVERS`: the servers file. */
  path: string;
  /** `SVC_AMI_KEEPALIVE_MS`, `SVC_AMI_TIMEOUT_MS`: every server's connection. */
  keepaliveMs: number;
  timeoutMs: number;
  /** How often the file is checked for a change (default 1000 ms). */
  watchMs?: number;
  /** Each server's directory refresh (default 500 ms). */
  directoryRefreshMs?: number;
}

interface Running {
  server: AsteriskServer;
  platform: AsteriskPlatform;
  placement: ServerPlacement;
}

export class AsteriskServers implements Platform {
  readonly #options: AsteriskServersOptions;
  readonly #loader: DirectoryLoader;
  /** The running servers, the main one first (the file's order). */
  #running = new Map<string, Running>();
  #mainName = "";
  readonly #listeners: PlatformListener[] = [];
  #fileText = "";
  /** The directory as last read: which server a user's line is on, without waiting. */
  #dir: Directory | null = null;
  #dirTimer: ReturnType<typeof setInterval> | null = null;
  #watch: ReturnType<typeof setInterval> | null = null;
  #started = false;
  #closed = false;
  /** Reloads of the file run one at a time. */
  #reloading: Promise<void> = Promise.resolve();
  /** The one lease every server's platform shares: one process hands over every server's events. */
  readonly #lease: SharedLease;

  private constructor(options: AsteriskServersOptions) {
    this.#options = options;
    this.#loader = directoryLoader(options.store);
    this.#lease = new SharedLease(
      options.store,
      () => this.#all().filter((platform) => platform.reachable()).length,
    );
  }

  /**
   * The servers of the file, each with its adapter (nothing connects before `start()`); a file
   * that cannot be read or used throws its {@link ServersFileError}.
   */
  static async open(options: AsteriskServersOptions): Promise<AsteriskServers> {
    const servers = new AsteriskServers(options);
    const text = await Deno.readTextFile(options.path).catch(() => null);
    await servers.#apply(text === null ? await readServers(options.path) : parseServers(text));
    servers.#fileText = text ?? "";
    return servers;
  }

  // --- the servers -------------------------------------------------------------------------------

  /** Starts, stops or restarts servers so that `list` runs; every placement follows it. */
  async #apply(list: AsteriskServer[]): Promise<void> {
    const secrets = new Map<string, string>();
    for (const a of list) {
      for (const b of list) {
        if (a.name < b.name) secrets.set(`${a.name}/${b.name}`, await trunkSecret(a, b));
      }
    }
    const main = list[0]!.name;
    const placementOf = (server: AsteriskServer): ServerPlacement => ({
      server: server.name,
      main,
      peers: list.filter((peer) => peer.name !== server.name).map((peer) => ({
        name: peer.name,
        sipHost: peer.sipHost,
        sipPort: peer.sipPort,
        secret: secrets.get([server.name, peer.name].sort().join("/"))!,
      })),
    });
    const next = new Map<string, Running>();
    const stopped: Running[] = [];
    for (const server of list) {
      const running = this.#running.get(server.name);
      if (running && JSON.stringify(running.server) === JSON.stringify(server)) {
        running.placement = placementOf(server);
        next.set(server.name, running);
        continue;
      }
      if (running) stopped.push(running);
      next.set(server.name, this.#create(server, placementOf(server)));
    }
    for (const [name, running] of this.#running) if (!next.has(name)) stopped.push(running);
    this.#running = next;
    this.#mainName = main;
    await Promise.all(stopped.map((running) => running.platform.close()));
    if (this.#started) {
      for (const running of next.values()) {
        if (!stopped.includes(running) && !running.platform.started) running.platform.start();
      }
    }
  }

  #create(server: AsteriskServer, placement: ServerPlacement): Running {
    const { store, clock, logger } = this.#options;
    const running: Running = {
      server,
      placement,
      platform: new AsteriskPlatform({
        store,
        clock,
        logger: serverLogger(logger, server.name),
        ami: {
          host: server.amiHost,
          port: server.amiPort,
          username: server.amiUser,
          secret: server.amiSecret,
          keepaliveMs: this.#options.keepaliveMs,
          timeoutMs: this.#options.timeoutMs,
        },
        configDir: server.configDir,
        recordingsDir: server.recordingsDir,
        directoryRefreshMs: this.#options.directoryRefreshMs,
        server: server.name,
        placement: () => running.placement,
        lease: this.#lease,
        linkedData: (linkedId) => {
          for (const platform of this.#all()) {
            const data = platform.callData(linkedId);
            if (data) return data;
          }
          return null;
        },
        userEventOn: (name, fields) => this.#running.get(name)?.platform.userEvent(fields),
      }),
    };
    for (const listener of this.#listeners) running.platform.onEvents(listener);
    return running;
  }

  /** Reads the file again when its text changed; a file that cannot be used keeps the servers. */
  #reload(): Promise<void> {
    this.#reloading = this.#reloading.then(async () => {
      if (this.#closed) return;
      let text: string;
      try {
        text = await Deno.readTextFile(this.#options.path);
      } catch (error) {
        // logged once per outage; the servers running keep running
        if (this.#fileText !== "") {
          this.#options.logger.warn("servers file not read", { error: (error as Error).name });
          this.#fileText = "";
        }
        return;
      }
      if (text === this.#fileText) return;
      this.#fileText = text;
      try {
        const list = parseServers(text);
        await this.#apply(list);
        this.#options.logger.info("servers file read", {
          servers: list.map((server) => server.name),
        });
      } catch (error) {
        this.#options.logger.warn("servers file not used", { error: (error as Error).message });
      }
    });
    return this.#reloading;
  }

  /** The main server (the file's first). */
  get #main(): AsteriskPlatform {
    return this.#running.get(this.#mainName)!.platform;
  }

  /** The server `user`'s line is placed on: its `registrar`, else (or gone) the main one. */
  async #forUser(user: UserRecord): Promise<AsteriskPlatform> {
    const phone = (await this.#directory()).phoneOfUser(user.id);
    return this.#named(phone?.registrar);
  }

  async #directory(): Promise<Directory> {
    return this.#dir = await this.#loader.load({ recent: true });
  }

  #named(name: string | undefined): AsteriskPlatform {
    return (name === undefined ? undefined : this.#running.get(name)?.platform) ?? this.#main;
  }

  /** The server following the call (`callId`, a leg's id), else the main one (which refuses). */
  async #forCall(callId: string): Promise<AsteriskPlatform> {
    for (const { platform } of this.#running.values()) {
      if ((await platform.liveCalls()).some((call) => call.callId === callId)) return platform;
    }
    return this.#main;
  }

  #all(): AsteriskPlatform[] {
    return [...this.#running.values()].map((running) => running.platform);
  }

  async #concat<T>(read: (platform: AsteriskPlatform) => Promise<T[]>): Promise<T[]> {
    return (await Promise.all(this.#all().map(read))).flat();
  }

  // --- the port ----------------------------------------------------------------------------------

  async dialNumber(
    caller: UserRecord,
    destination: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return await (await this.#forUser(caller)).dialNumber(caller, destination, variables);
  }

  async dialUser(
    caller: UserRecord,
    callee: UserRecord,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return await (await this.#forUser(caller)).dialUser(caller, callee, variables);
  }

  async dialFromMobile(
    caller: UserRecord,
    mobile: string,
    destination: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    const server = await this.#forUser(caller);
    return await server.dialFromMobile(caller, mobile, destination, variables);
  }

  dialFromQueue(
    requester: UserRecord,
    queue: QueueRecord,
    destination: string,
    variables: CallVariables,
    callerId: { name: string | null; number: string | null },
  ): Promise<CallStarted> {
    return this.#main.dialFromQueue(requester, queue, destination, variables, callerId);
  }

  dialToQueue(
    queue: QueueRecord,
    destination: string,
    callerIdNumber: string,
    variables: CallVariables,
  ): Promise<CallStarted> {
    return this.#main.dialToQueue(queue, destination, callerIdNumber, variables);
  }

  /** Written on the user's server (its dialplan reads them); every server's resync writes all. */
  async userServicesChanged(user: UserRecord): Promise<void> {
    await (await this.#forUser(user)).userServicesChanged(user);
  }

  agentLogin(agent: AgentRecord, extension: string, context: string): Promise<void> {
    return this.#main.agentLogin(agent, extension, context);
  }

  agentLogout(agentId: number): Promise<void> {
    return this.#main.agentLogout(agentId);
  }

  agentPause(agentId: number, reason: string | null): Promise<void> {
    return this.#main.agentPause(agentId, reason);
  }

  agentUnpause(agentId: number): Promise<void> {
    return this.#main.agentUnpause(agentId);
  }

  agentQueuesChanged(agentId: number): Promise<void> {
    return this.#main.agentQueuesChanged(agentId);
  }

  agentPresence(agentId: number): Promise<AgentPresence> {
    return this.#main.agentPresence(agentId);
  }

  agentPresences(agentIds: readonly number[]): Promise<AgentPresence[]> {
    return this.#main.agentPresences(agentIds);
  }

  agentPresenceVersion(): number | null {
    return this.#main.agentPresenceVersion();
  }

  queueCalls(): Promise<WaitingCall[]> {
    return this.#main.queueCalls();
  }

  /**
   * Placed on the server of the phone the agent is logged on (the agent's channel is there), with
   * the agent's presence (the main server's): a supervisor of another server is rung over the
   * trunk (docs/asterisk.md, "Several servers").
   */
  async listen(supervisor: UserRecord, agentId: number): Promise<CallStarted> {
    const supervisorOn = await this.#forUser(supervisor);
    if (!supervisorOn.reachable()) {
      throw new PlatformUnavailable("the supervisor's server is not connected");
    }
    const presence = await this.#main.agentPresence(agentId);
    const dir = await this.#directory();
    const agentPhone = presence.logged && presence.extension && presence.context
      ? dir.phoneAt(presence.extension, presence.context)
      : null;
    const agentOn = this.#named(agentPhone?.registrar);
    return await agentOn.listen(supervisor, agentId, {
      presence,
      supervisorOn: supervisorOn === agentOn ? null : supervisorOn.options.server ?? null,
    });
  }

  /**
   * Asked of the server of the box's user's line: its messages are left there (the user's
   * extension rings out to `VoiceMail` on that server); a box of nobody's, of the main one.
   */
  async voicemailCounts(voicemailId: number): Promise<VoicemailCounts> {
    const dir = await this.#directory();
    const owner = [...dir.users.values()].find((user) => user.voicemail_id === voicemailId);
    const server = owner ? this.#named(dir.phoneOfUser(owner.id)?.registrar) : this.#main;
    return await server.voicemailCounts(voicemailId);
  }

  /** Each number's status from the server its line is placed on. */
  async phoneStatuses(numbers: string[]): Promise<Map<string, PhoneStatus>> {
    const dir = await this.#directory();
    const byServer = new Map<AsteriskPlatform, string[]>();
    for (const number of numbers) {
      const server = this.#named(dir.phoneNamed(number)?.registrar);
      byServer.set(server, [...byServer.get(server) ?? [], number]);
    }
    const statuses = new Map<string, PhoneStatus>();
    for (const [server, some] of byServer) {
      for (const [number, status] of await server.phoneStatuses(some)) {
        statuses.set(number, status);
      }
    }
    return new Map(numbers.map((number) => [number, statuses.get(number) ?? -1]));
  }

  /** The servers' versions added up (each only grows); null when one must read the directory. */
  phoneStatusVersion(): number | null {
    let sum = 0;
    for (const platform of this.#all()) {
      const version = platform.phoneStatusVersion();
      if (version === null) return null;
      sum += version;
    }
    return this.#loader.recent() ? sum : null;
  }

  onEvents(listener: PlatformListener): void {
    this.#listeners.push(listener);
    for (const platform of this.#all()) platform.onEvents(listener);
  }

  start(): void {
    this.#started = true;
    for (const platform of this.#all()) platform.start();
    this.#watch = setInterval(() => void this.#reload(), this.#options.watchMs ?? 1000);
    const refresh = () => this.#directory().catch(() => null);
    this.#dirTimer = setInterval(refresh, this.#options.directoryRefreshMs ?? 500);
    void refresh();
  }

  /** Some server takes commands; with `user`, the user's server does. */
  reachable(user?: UserRecord): boolean {
    if (!user) return this.#all().some((platform) => platform.reachable());
    const phone = (this.#loader.recent() ?? this.#dir)?.phoneOfUser(user.id);
    return this.#named(phone?.registrar).reachable();
  }

  /** `ready` while some server is ({@link reachable}), else the best state of theirs. */
  connection(): PlatformConnection {
    const states = this.#all().map((platform) => platform.connection().state);
    const state = states.includes("ready")
      ? "ready"
      : states.includes("syncing")
      ? "syncing"
      : "disconnected";
    return { adapter: "asterisk", state };
  }

  servers(): ServerState[] {
    return [...this.#running.values()].map(({ server, platform }) => ({
      name: server.name,
      state: platform.connection().state,
    }));
  }

  /**
   * Every server's parties, one call across servers shown as on one server: the trunk legs are
   * left out, a trunk leg a party hears is shown as the user's party beyond it, and a user's party hearing only a trunk hears
   * what that call's trunk party on the other server hears (nobody while held there, a
   * conference there).
   */
  async liveCalls(): Promise<LiveCall[]> {
    const byServer = await Promise.all(this.#all().map((platform) => platform.liveCalls()));
    const trunksOf = (i: number, linkedId: string) =>
      byServer.flatMap((calls, j) =>
        j === i
          ? []
          : calls.flatMap((call) =>
            call.linkedId === linkedId && call.userId === null ? [{ call, server: j }] : []
          )
      );
    /** The user's party beyond trunk leg `callId` of server `i`, when there is exactly one. */
    const beyond = (i: number, callId: string) => {
      const trunk = byServer[i]!.find((call) => call.callId === callId && call.userId === null);
      if (!trunk) return callId;
      const users = byServer.flatMap((calls, j) =>
        j === i
          ? []
          : calls.filter((call) => call.linkedId === trunk.linkedId && call.userId !== null)
      );
      return users.length === 1 ? users[0]!.callId : callId;
    };
    // the trunks between svc's servers are no parties: a call across them is one call
    const trunks = this.#all().map((platform) => platform.trunkParties());
    return byServer.flatMap((calls, i) =>
      calls.filter((call) => !trunks[i]!.has(call.callId)).map((call): LiveCall => {
        const peers = call.talkingTo.map((id) => calls.find((other) => other.callId === id));
        const overTrunk = call.userId !== null && peers.length > 0 &&
          peers.every((peer) => peer?.userId === null);
        const across = overTrunk ? trunksOf(i, call.linkedId) : [];
        if (across.length === 1) {
          const { call: trunk, server } = across[0]!;
          return {
            ...call,
            talkingTo: trunk.talkingTo.map((id) => beyond(server, id)),
            conferenceId: trunk.conferenceId,
          };
        }
        return {
          ...call,
          talkingTo: call.talkingTo.map((id) => beyond(i, id)),
          peerCallId: call.peerCallId && beyond(i, call.peerCallId),
        };
      })
    );
  }

  async callCommand(callId: string, command: CallCommand): Promise<void> {
    await (await this.#forCall(callId)).callCommand(callId, command);
  }

  /**
   * On the initiator's server; a party on another server is the trunk leg the initiator talks
   * to there (the initiator's peer).
   */
  async startTransfer(request: TransferRequest): Promise<Transfer> {
    const server = await this.#forCall(request.initiatorCallId);
    const here = await server.liveCalls();
    let { transferredCallId } = request;
    if (transferredCallId && !here.some((call) => call.callId === transferredCallId)) {
      const initiator = here.find((call) => call.callId === request.initiatorCallId);
      const peer = initiator?.peerCallId;
      if (peer && here.find((call) => call.callId === peer)?.userId === null) {
        transferredCallId = peer;
      }
    }
    return await server.startTransfer({ ...request, transferredCallId });
  }

  transfers(): Promise<Transfer[]> {
    return this.#concat((platform) => platform.transfers());
  }

  async completeTransfer(id: string): Promise<void> {
    await (await this.#withTransfer(id)).completeTransfer(id);
  }

  async cancelTransfer(id: string): Promise<void> {
    await (await this.#withTransfer(id)).cancelTransfer(id);
  }

  /** On the host's server: a participant of another server is its trunk leg there. */
  async startConference(hostCallId: string, participantCallIds: string[]): Promise<Conference> {
    const server = await this.#forCall(hostCallId);
    const participants = await Promise.all(
      participantCallIds.map((callId) => this.#localId(server, callId)),
    );
    return await this.#foreignMembers(
      server,
      await server.startConference(hostCallId, participants),
    );
  }

  /** Each server's, a member that is a trunk leg shown as the party of the other server. */
  async conferences(): Promise<Conference[]> {
    const lists = await Promise.all(
      this.#all().map(async (platform) =>
        await Promise.all(
          (await platform.conferences()).map((conference) =>
            this.#foreignMembers(platform, conference)
          ),
        )
      ),
    );
    return lists.flat();
  }

  async addToConference(conferenceId: string, callId: string): Promise<void> {
    const server = await this.#withConference(conferenceId);
    await server.addToConference(conferenceId, await this.#localId(server, callId));
  }

  async removeFromConference(conferenceId: string, callId: string): Promise<void> {
    const server = await this.#withConference(conferenceId);
    await server.removeFromConference(conferenceId, await this.#localId(server, callId));
  }

  /**
   * `callId` as `server` knows the party: its own leg, or, for a party of another server, the
   * trunk leg of that call on `server` (the one party there with no user); else as it is (the
   * server refuses it).
   */
  async #localId(server: AsteriskPlatform, callId: string): Promise<string> {
    const here = await server.liveCalls();
    if (here.some((call) => call.callId === callId)) return callId;
    const there = (await this.#concat((platform) => platform.liveCalls()))
      .find((call) => call.callId === callId);
    const trunks = here.filter((call) => call.linkedId === there?.linkedId && call.userId === null);
    return trunks.length === 1 ? trunks[0]!.callId : callId;
  }

  /** `conference` of `server`, a member that is a trunk leg shown as the user's leg beyond it. */
  async #foreignMembers(server: AsteriskPlatform, conference: Conference): Promise<Conference> {
    const here = await server.liveCalls();
    const others = (await Promise.all(
      this.#all().filter((platform) => platform !== server).map((platform) => platform.liveCalls()),
    )).flat();
    const shown = (callId: string) => {
      const trunk = here.find((call) => call.callId === callId && call.userId === null);
      const users = trunk
        ? others.filter((call) => call.linkedId === trunk.linkedId && call.userId !== null)
        : [];
      return users.length === 1 ? users[0]!.callId : callId;
    };
    return {
      ...conference,
      members: conference.members.map((member) => ({ ...member, callId: shown(member.callId) })),
    };
  }

  async endConference(conferenceId: string): Promise<void> {
    await (await this.#withConference(conferenceId)).endConference(conferenceId);
  }

  rooms(): Promise<RoomState[]> {
    return this.#main.rooms();
  }

  roomCommand(roomId: string, callId: string, command: RoomCommand): Promise<void> {
    return this.#main.roomCommand(roomId, callId, command);
  }

  recordRoom(roomId: string, on: boolean): Promise<void> {
    return this.#main.recordRoom(roomId, on);
  }

  endRoom(roomId: string): Promise<void> {
    return this.#main.endRoom(roomId);
  }

  /** The rooms are the main server's: a phone of another server is called in over the trunk. */
  async inviteToRoom(user: UserRecord, roomId: string): Promise<CallStarted> {
    const server = await this.#forUser(user);
    if (server === this.#main) return await server.inviteToRoom(user, roomId);
    if (!server.reachable()) throw new PlatformUnavailable("the user's server is not connected");
    return await this.#main.inviteToRoom(user, roomId, server.options.server);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#watch !== null) clearInterval(this.#watch);
    if (this.#dirTimer !== null) clearInterval(this.#dirTimer);
    await this.#reloading;
    await Promise.all(this.#all().map((platform) => platform.close()));
    await this.#lease.giveBack();
  }

  /** Every server's events handed over (tests and benchmarks). */
  async settled(): Promise<void> {
    await Promise.all(this.#all().map((platform) => platform.settled()));
  }

  /** Every server's first resync done (tests and benchmarks). */
  async firstSync(): Promise<void> {
    await Promise.all(this.#all().map((platform) => platform.firstSync()));
  }

  /** The calls every server follows (tests and benchmarks, as {@link AsteriskPlatform.calls}). */
  calls(): string[] {
    return this.#all().flatMap((platform) => platform.calls());
  }

  /** One server's adapter, by name (tests). */
  server(name: string): AsteriskPlatform | undefined {
    return this.#running.get(name)?.platform;
  }

  /** Reads the servers file now, as the watch would (tests). */
  reloadNow(): Promise<void> {
    return this.#reload();
  }

  async #withTransfer(id: string): Promise<AsteriskPlatform> {
    for (const platform of this.#all()) {
      if ((await platform.transfers()).some((transfer) => transfer.id === id)) return platform;
    }
    return this.#main;
  }

  async #withConference(id: string): Promise<AsteriskPlatform> {
    for (const platform of this.#all()) {
      if ((await platform.conferences()).some((conference) => conference.id === id)) {
        return platform;
      }
    }
    return this.#main;
  }
}

/**
 * The lease of a process driving several servers (docs/asterisk.md, "Several servers"): the
 * process holding it hands over every server's events and writes every server's files. Its
 * strength is how many servers the process reaches: a process reaching more takes it from one
 * reaching fewer. Every server's platform takes it each tick; one write a tick serves them all,
 * and one giving it up (its connection lost while another process reaches that server) gives it
 * up for all of them.
 */
class SharedLease implements PlatformLease {
  readonly #owner = crypto.randomUUID();
  /** The last take, shared by the platforms ticking within the same half tick. */
  #last: { at: number; taken: Promise<LeaseTaken> } | null = null;
  #releasedAs: string | null = null;
  #downUntil = 0;

  constructor(private readonly store: Store, private readonly strength: () => number) {}

  take(now: number): Promise<LeaseTaken> {
    const at = performance.now();
    if (at < this.#downUntil) return Promise.resolve({ held: false, untouched: false });
    if (this.#last && at - this.#last.at < LEASE_TICK_MS / 2) return this.#last.taken;
    const taken = takeLeaseAt(
      this.store,
      LEASE_KEY,
      this.#owner,
      now,
      LEASE_MS,
      this.#releasedAs,
      this.strength(),
    ).then((result) => {
      if (result.held) this.#releasedAs = null;
      return result;
    });
    this.#last = { at, taken };
    return taken;
  }

  async release(): Promise<string | null> {
    this.#downUntil = performance.now() + STEP_DOWN_MS;
    this.#last = null;
    this.#releasedAs = await releaseLeaseAt(this.store, LEASE_KEY, this.#owner);
    return this.#releasedAs;
  }

  /** One server's platform closes (a server removed): the others keep the lease. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Every server's platform closed: the lease goes back. */
  async giveBack(): Promise<void> {
    await releaseLeaseAt(this.store, LEASE_KEY, this.#owner).catch(() => null);
  }
}

/** Every line of one server's adapter names the server. */
function serverLogger(logger: Logger, server: string): Logger {
  const withServer = (fields?: Record<string, unknown>) => ({ server, ...fields });
  return {
    debug: (msg, fields) => logger.debug(msg, withServer(fields)),
    info: (msg, fields) => logger.info(msg, withServer(fields)),
    warn: (msg, fields) => logger.warn(msg, withServer(fields)),
    error: (msg, fields) => logger.error(msg, withServer(fields)),
    enabled: (level) => logger.enabled(level),
  };
}

/**
 * The CTI sockets of this process (docs/cti.md): who holds which, what each one is sent.
 *
 * - Events come from the live feed (`lib/events/feed.ts`), so a socket sees what any process
 *   sharing the store published: the user's `PhoneEvent`s and `UserConfigUpdate`s (by username),
 *   the `AgentStateEvent`s of the user's agent, and of the agents its rights profile covers once
 *   the client subscribed to them (a supervisor's).
 * - Phone statuses (the user's own phone; the numbers of the user's personal contacts, and those a
 *   socket subscribed to, read through lib/presence/hints.ts) are read from the platform whenever
 *   its status version moves or the numbers hidden from watchers change, every `STATUS_POLL_MS` at
 *   most, in one pass for every socket; each
 *   user's sockets are sent the statuses that changed for that user, each subscribed socket those
 *   of its own numbers.
 * - A socket whose unsent bytes pass the send buffer setting is closed (4008): a slow reader never
 *   holds back the others nor grows the process.
 * - Some time before its token expires a socket is sent a renewed one (`AuthenticationToken`,
 *   lib/cti_session/token_renewal.ts) and stays open, signed in with it; only a socket whose token
 *   cannot be renewed (its user was deleted) is closed at the expiry (4001).
 *
 * Memory (docs/cti.md, "Memory"): what a socket costs above Deno's own WebSocket is kept to one
 * small {@link CtiSession}. What is the same for every socket of a user (the user's configuration,
 * number, contacts, statuses, agent) is one {@link CtiUser}, each message to a user is serialised
 * once for all of the user's sockets, the socket's events go to the session itself (no closures),
 * and one timer renews the sockets' tokens and closes those whose token expired.
 */
import { agentOfUser } from "../agent_control.ts";
import type { Identity } from "../auth/tokens.ts";
import type { CoreServices } from "../core_services.ts";
import {
  type CtiNotice,
  type EventMessage,
  type ExportedMessage,
  isNotice,
  isUserEvent,
} from "../events/messages.ts";
import type { LogEntry } from "../events/outbox.ts";
import type { PhoneStatus } from "../platform/port.ts";
import { currentHidden, watchedStatuses } from "../presence/hints.ts";
import { covers } from "../rights/rights.ts";
import { listContacts } from "../store/contacts.ts";
import { getExtension } from "../store/extensions.ts";
import { getLine } from "../store/lines.ts";
import { getUser, type UserRecord } from "../store/users.ts";
import { lineConfigMessage, lineConfigOf } from "../cti_session/line_config.ts";
import { type Renewal, renewalAt, renewSocketToken } from "../cti_session/token_renewal.ts";
import { ExpiryQueue } from "./expiry.ts";
import {
  type CtiMessage,
  eventToCti,
  loggedOn,
  phoneHintStatus,
  phoneStatusUpdate,
  type UserConfig,
  userConfigOf,
} from "./messages.ts";
import { SupervisionFeed } from "./supervision.ts";

/** How often the platform's status version is looked at while sockets watch numbers. */
export const STATUS_POLL_MS = 200;
/** How often a user's personal contacts (their numbers are watched) and record are read again. */
const REFRESH_MS = 30_000;

/** Close codes of the socket (docs/cti.md). */
export const CLOSE = {
  tokenExpired: 4001,
  slowReader: 4008,
  shutdown: 1001,
  openFailed: 1011,
} as const;

/** What the hub needs of a WebSocket (a `WebSocket` of `Deno.upgradeWebSocket`). */
export interface CtiSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(
    type: string,
    listener: EventListenerObject,
    options?: AddEventListenerOptions,
  ): void;
  readonly bufferedAmount: number;
  readonly readyState: number;
}

/**
 * What the socket's route does for a session (routes/cti_commands.ts, with the services): run one
 * message the client sent, and send what the concerns send once the hub's greeting is sent. Each
 * reports its own failures.
 */
export interface SessionHandlers {
  message(session: CtiSession, data: unknown): Promise<void>;
  opened(session: CtiSession): Promise<void>;
}

/**
 * Hands the notices of one `msgType` to this process's sockets of their user (`sessions`) in a
 * concern's own way, instead of sending each to every socket (lib/chat: each message once per
 * socket, then marked delivered).
 */
export type NoticeHandler = (sessions: ReadonlySet<CtiSession>, notice: CtiNotice) => void;

/**
 * One user's sockets in this process and what they share: the user as the sockets show it (no
 * password hash, no other field of the record), the user's number, the statuses last sent, the
 * user's agent.
 */
export class CtiUser {
  readonly sessions = new Set<CtiSession>();
  readonly id: number;
  readonly username: string;
  /** What `UserConfigUpdate` says of the user, as last read from the store. */
  config: UserConfig;
  /** The user's agent (linked, or logged on one of the user's lines), null when none. */
  agentId: number | null = null;
  /** The user's own number (main line's extension), null without one. */
  phoneNumber: string | null = null;
  ownStatus: PhoneStatus | null = null;
  /** Numbers of the personal contacts, with the status last sent for each. */
  hints = new Map<string, PhoneStatus | null>();
  /** When the contacts (and, after the open, the record) were last read. */
  refreshedAt = 0;
  /** The `LineConfig` last sent (serialised), null before the first (lib/cti_session). */
  lineConfig: string | null = null;

  constructor(record: UserRecord) {
    this.id = record.id;
    this.username = record.username ?? "";
    this.config = userConfigOf(record);
  }

  /** Sends `message` to every socket of the user, serialised once. */
  send(message: CtiMessage): void {
    const text = JSON.stringify(message);
    for (const session of this.sessions) session.sendText(text);
  }
}

/**
 * One open socket. It is its socket's event listener (`handleEvent`), so that a socket costs no
 * closure; until the socket opens, `user` is the user read before the upgrade, then the one
 * {@link CtiUser} every socket of that user shares.
 */
export class CtiSession implements EventListenerObject {
  #closed = false;
  /** When the hub registered it (ms), the end of time until then. */
  openedAt = Infinity;
  /** The messages being run, in order, the greeting first; null when none is. */
  #running: Promise<void> | null = null;
  /** When the hub next looks at the token: to renew it, or (not renewed) to close the socket. */
  deadline: number;
  /**
   * The numbers the socket subscribed to (`subscribeToPhoneHints`) with the status last sent for
   * each; null when none.
   */
  hints: Map<string, PhoneStatus> | null = null;

  constructor(
    readonly hub: CtiHub,
    readonly socket: CtiSocket,
    /** Whom the token speaks for: the one the socket opened with, then each renewal's. */
    public identity: Identity,
    public user: CtiUser,
    /** When the token expires (the renewed one's once renewed). */
    public tokenExpiresAt: number,
    readonly handlers: SessionHandlers,
  ) {
    this.deadline = renewalAt(hub.services.clock.now(), tokenExpiresAt);
    socket.addEventListener("open", this, { once: true });
    socket.addEventListener("message", this);
    socket.addEventListener("close", this, { once: true });
    // no "error" listener: a reset connection is followed by "close", which detaches the session
  }

  get username(): string {
    return this.user.username;
  }

  get closed(): boolean {
    return this.#closed || this.socket.readyState > 1;
  }

  handleEvent(event: Event): void {
    if (event.type === "message") {
      const { data } = event as MessageEvent;
      // messages arriving before the greeting is sent wait for it, in order
      this.#run(() => this.handlers.message(this, data));
    } else if (event.type === "open") {
      this.#run(async () => {
        await this.hub.open(this);
        if (!this.closed) await this.handlers.opened(this);
      });
    } else if (event.type === "close") this.hub.detach(this);
  }

  #run(task: () => Promise<void>): void {
    const running = (this.#running ?? Promise.resolve()).then(task).catch((error) => {
      this.hub.services.logger.error("CTI socket task failed", { error: String(error) });
    });
    this.#running = running;
    running.then(() => {
      if (this.#running === running) this.#running = null; // idle: hold no promise
    });
  }

  /** Sends `message`, or closes the socket when the client is too far behind. */
  send(message: CtiMessage): void {
    this.sendText(JSON.stringify(message));
  }

  /** Sends a serialised message (see {@link send}). */
  sendText(text: string): void {
    if (this.closed) return;
    if (this.socket.bufferedAmount > this.hub.services.config.ctiSendBuffer) {
      this.close(CLOSE.slowReader, "send buffer full: the client reads too slowly");
      return;
    }
    try {
      this.socket.send(text);
    } catch {
      this.#closed = true; // closed under us: the close event detaches it
    }
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.#closed = true;
    try {
      this.socket.close(code, reason);
    } catch { /* already closing */ }
  }
}

/** The user's own number: the first extension of the main line. */
export async function ownNumber(services: CoreServices, lineIds: number[]): Promise<string | null> {
  const lineId = lineIds[0];
  const line = lineId === undefined ? null : await getLine(services.store, lineId);
  const extensionId = line?.extension_ids[0];
  const extension = extensionId === undefined
    ? null
    : await getExtension(services.store, extensionId);
  return extension?.exten ?? null;
}

export class CtiHub {
  readonly #byUser = new Map<string, CtiUser>();
  /** Sessions sent the covered agents' states (`subscribeToAgentEvents` of a supervisor). */
  readonly #allAgents = new Set<CtiSession>();
  /** Sessions watching numbers of their own (`subscribeToPhoneHints`). */
  readonly #hinted = new Set<CtiSession>();
  /** Open sessions, by {@link CtiSession.deadline}: one timer renews their tokens. */
  readonly #expiries: ExpiryQueue<CtiSession>;
  /** The renewals being made, by the identity renewed: sockets sharing a token share one. */
  readonly #renewing = new Map<Identity, Promise<Renewal | null>>();
  #unsubscribe: (() => void) | null = null;
  #cancelPoll: (() => void) | null = null;
  #statusVersion: number | null = null;
  /** The numbers hidden from watchers when the statuses were last read. */
  #hidden: ReadonlySet<string> | null = null;
  #polling: Promise<void> | null = null;
  /** What supervisors' sockets follow (queue and agent statistics, waiting calls, lists). */
  readonly supervision: SupervisionFeed;
  readonly #noticeHandlers = new Map<string, NoticeHandler>();

  constructor(readonly services: CoreServices) {
    this.supervision = new SupervisionFeed(services);
    this.#expiries = new ExpiryQueue(
      services.clock,
      (session) => session.deadline,
      (session) => this.#deadline(session),
    );
  }

  /** Sockets open now. */
  get size(): number {
    let size = 0;
    for (const user of this.#byUser.values()) size += user.sessions.size;
    return size;
  }

  /** How many sockets `username` holds in this process. */
  count(username: string): number {
    return this.#byUser.get(username)?.sessions.size ?? 0;
  }

  /**
   * Registers a socket that opened and sends the greeting: `LoggedOn`, the user's configuration,
   * the own phone's status and the personal contacts' statuses. When the user's state cannot be
   * read the socket is closed (1011).
   */
  async open(session: CtiSession): Promise<void> {
    try {
      await this.#open(session);
    } catch (error) {
      this.services.logger.error("CTI socket could not open", { error: String(error) });
      session.close(CLOSE.openFailed, "the server could not read the user's state");
    }
  }

  async #open(session: CtiSession): Promise<void> {
    const { services } = this;
    const read = session.user; // as read before the upgrade
    const lineIds = read.config.lineIds;
    const agentId = (await agentOfUser(services, { id: read.id, line_ids: lineIds }))?.id ?? null;
    const phoneNumber = await ownNumber(services, lineIds);
    if (session.closed) return; // gone meanwhile: its close event has come already
    const user = this.#byUser.get(read.username) ?? read;
    this.#byUser.set(user.username, user);
    user.config = read.config; // the newest read, for every socket of the user
    user.agentId = agentId;
    if (user.phoneNumber !== phoneNumber) {
      user.phoneNumber = phoneNumber;
      user.ownStatus = null;
    }
    session.user = user;
    session.openedAt = services.clock.now();
    user.sessions.add(session);
    this.#expiries.add(session);
    this.#unsubscribe ??= services.feed.subscribeAll((entries) => this.#handle(entries));
    session.send(loggedOn(user, phoneNumber));
    session.send({ msgType: "UserConfigUpdate", ctiMessage: user.config });
    await this.#readContacts(user);
    await this.#sendStatuses([user], session);
    this.#startPolling();
  }

  /** A socket's deadline came: its token is renewed, or, expired, the socket is closed. */
  async #deadline(session: CtiSession): Promise<void> {
    if (session.closed) return;
    if (this.services.clock.now() >= session.tokenExpiresAt) {
      session.close(CLOSE.tokenExpired, "token expired: sign in again and reconnect");
      return;
    }
    try {
      await this.#renew(session);
    } catch (error) {
      this.services.logger.error("CTI token renewal failed", { error: String(error) });
    }
  }

  /**
   * Sends `session` its renewed token and keeps it open with it; without a renewal (the user is
   * gone) the socket closes at its token's expiry; a renewal that failed is tried again halfway
   * to it.
   */
  async #renew(session: CtiSession): Promise<void> {
    const { identity } = session;
    let renewing = this.#renewing.get(identity);
    if (!renewing) {
      renewing = renewSocketToken(this.services, identity);
      this.#renewing.set(identity, renewing);
      renewing.catch(() => {}).finally(() => this.#renewing.delete(identity));
    }
    let renewal: Renewal | null = null;
    let failed = false;
    try {
      renewal = await renewing;
    } catch (error) {
      failed = true;
      this.services.logger.warn("CTI token renewal failed", { error: String(error) });
    }
    if (session.closed || !session.user.sessions.has(session)) return; // gone meanwhile
    const now = this.services.clock.now();
    if (renewal) {
      session.identity = renewal.identity;
      session.tokenExpiresAt = renewal.expiresAt;
      for (const message of renewal.messages) session.send(message);
      session.deadline = renewalAt(now, renewal.expiresAt);
    } else {
      const left = session.tokenExpiresAt - now;
      session.deadline = failed && left > 2_000 ? now + left / 2 : session.tokenExpiresAt;
    }
    this.#expiries.add(session);
  }

  /** Forgets a closed socket. */
  detach(session: CtiSession): void {
    this.#expiries.delete(session);
    this.#allAgents.delete(session);
    this.#hinted.delete(session);
    this.supervision.detach(session);
    const user = session.user;
    if (!user.sessions.delete(session)) return; // never opened
    if (user.sessions.size === 0 && this.#byUser.get(user.username) === user) {
      this.#byUser.delete(user.username);
    }
    if (this.#byUser.size === 0) this.#stop();
  }

  /** The user as just read from the store (by a command), for every socket of the user. */
  refresh(session: CtiSession, record: UserRecord): void {
    session.user.config = userConfigOf(record);
  }

  /**
   * Sends `session` the state of every agent its user's rights profile covers from now on (what
   * it covers kept up to date by the supervision feed).
   */
  async followAllAgents(session: CtiSession): Promise<void> {
    if (!session.user.sessions.has(session)) return;
    await this.supervision.followAgentEvents(session);
    if (!session.closed) this.#allAgents.add(session);
  }

  /** Hands the notices of `msgType` to `handler` from now on (see {@link NoticeHandler}). */
  handleNotices(msgType: string, handler: NoticeHandler): void {
    this.#noticeHandlers.set(msgType, handler);
  }

  /**
   * Adds `numbers` to those `session` watches and sends it each one's status now
   * (`PhoneHintStatusEvent`), then each change.
   */
  async watchNumbers(session: CtiSession, numbers: string[]): Promise<void> {
    if (!session.user.sessions.has(session)) return; // not open
    const statuses = await watchedStatuses(this.services, numbers);
    if (session.closed) return; // its close event detaches it
    const hints = session.hints ??= new Map();
    for (const number of numbers) {
      const status = statuses.get(number) ?? -2;
      hints.set(number, status);
      session.send(phoneHintStatus(number, status));
    }
    if (hints.size) this.#hinted.add(session);
    this.#startPolling();
  }

  /** `session` watches no number of its own any more. */
  unwatchNumbers(session: CtiSession): void {
    session.hints = null;
    this.#hinted.delete(session);
  }

  /** Closes every socket (server shutdown). */
  close(): void {
    for (const user of [...this.#byUser.values()]) {
      for (const session of [...user.sessions]) {
        session.close(CLOSE.shutdown, "server shutting down");
        this.detach(session);
      }
    }
    this.#stop();
  }

  #stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#cancelPoll?.();
    this.#cancelPoll = null;
    this.supervision.close();
  }

  /**
   * The live feed's events: users' and agents' go to their sockets; any event may have changed
   * what supervisors follow.
   */
  #handle(entries: LogEntry<ExportedMessage>[]): void {
    const users = entries.filter((entry): entry is LogEntry<EventMessage> =>
      isUserEvent(entry.event)
    );
    if (users.length) this.#dispatch(users);
    for (const { event, createdAt } of entries) {
      if (isNotice(event)) this.#deliver(event, createdAt);
    }
    this.supervision.changed();
  }

  /**
   * A CTI notice to its user's sockets, or to every socket (username ""): those open when it was
   * written (the feed hands a process's first socket what others wrote a moment before; what a
   * socket opening then shows is read afresh); through the handler of its `msgType` when a concern
   * set one.
   */
  #deliver(notice: CtiNotice, createdAt: number): void {
    const handler = this.#noticeHandlers.get(notice.message.msgType);
    const text = handler ? "" : JSON.stringify(notice.message);
    const users = notice.username === ""
      ? this.#byUser.values()
      : [this.#byUser.get(notice.username)].filter((user) => user !== undefined);
    for (const user of users) {
      const open = [...user.sessions].filter((session) => session.openedAt <= createdAt);
      if (handler) handler(new Set(open), notice);
      else for (const session of open) session.sendText(text);
    }
  }

  /** Hands each event to the sockets it is for, serialised once per event and user. */
  #dispatch(entries: LogEntry<EventMessage>[]): void {
    for (const { event } of entries) {
      const message = event.message;
      const user = this.#byUser.get(event.username);
      if (message.msgType === "PhoneEvent") {
        user?.send(message);
      } else if (message.msgType === "UserConfigUpdate") {
        // with the names, as on open: the event itself carries only the services
        const { msgType, ...fields } = message;
        user?.send({ msgType, ctiMessage: { ...user.config, ...fields } });
      } else {
        // the agent logged on the user's line is the user's agent from now on (as agentOfUser says)
        if (user) user.agentId = message.agentId;
        const text = JSON.stringify(eventToCti(event));
        for (const each of this.#byUser.values()) {
          if (each.agentId !== message.agentId) continue;
          for (const session of each.sessions) session.sendText(text);
        }
        for (const session of this.#allAgents) {
          if (session.user.agentId === message.agentId) continue; // sent above
          const coverage = this.supervision.coverage(session);
          if (coverage && covers(coverage.agents, message.agentId)) session.sendText(text);
        }
      }
    }
  }

  /** Reads the user's contact numbers, once for all of the user's sockets. */
  async #readContacts(user: CtiUser): Promise<void> {
    const contacts = await listContacts(this.services.store, user.id);
    const numbers = new Set(contacts.map((contact) => contact.number).filter(Boolean));
    const hints = new Map<string, PhoneStatus | null>();
    for (const number of numbers) hints.set(number, user.hints.get(number) ?? null);
    user.hints = hints;
    user.refreshedAt = this.services.clock.now();
  }

  #startPolling(): void {
    if (this.#cancelPoll || this.#byUser.size === 0) return;
    this.#cancelPoll = this.services.clock.after(STATUS_POLL_MS, async () => {
      this.#cancelPoll = null;
      try {
        this.#polling ??= this.#pollStatuses().finally(() => this.#polling = null);
        await this.#polling;
      } catch (error) {
        this.services.logger.warn("CTI status poll failed", { error: String(error) });
      }
      this.#startPolling();
    });
  }

  /** Sends the statuses that changed, when the platform says some may have. */
  async #pollStatuses(): Promise<void> {
    const { clock, platform, store } = this.services;
    const now = clock.now();
    for (const user of [...this.#byUser.values()]) {
      if (now - user.refreshedAt < REFRESH_MS) continue;
      await this.#readContacts(user);
      // names, mobile, lines changed in confd show in the next UserConfigUpdate of every socket
      const record = await getUser(store, user.id);
      if (record) {
        user.config = userConfigOf(record);
        await this.#sendLineConfig(user, record);
      }
    }
    const version = platform.phoneStatusVersion();
    // a user may have been hidden from watchers, or shown again (lib/presence/hints.ts)
    const hidden = await currentHidden(store);
    if (version !== null && version === this.#statusVersion && hidden === this.#hidden) return;
    await this.#sendStatuses([...this.#byUser.values()]);
    this.#statusVersion = version;
    this.#hidden = hidden;
  }

  /** Sends the user's sockets its `LineConfig` when it changed since the last sent. */
  async #sendLineConfig(user: CtiUser, record: UserRecord): Promise<void> {
    if (user.lineConfig === null) return; // not greeted yet: the greeting sends it
    const text = JSON.stringify(lineConfigMessage(await lineConfigOf(this.services.store, record)));
    if (text === user.lineConfig) return;
    user.lineConfig = text;
    for (const session of user.sessions) session.sendText(text);
  }

  /**
   * Reads the statuses `users` and the subscribed sockets watch, in one pass; sends each user's
   * sockets those that changed, and `greeted` (a socket just opened) all of its user's; each
   * subscribed socket those of its own numbers that changed.
   */
  async #sendStatuses(users: CtiUser[], greeted?: CtiSession): Promise<void> {
    const own = new Set<string>();
    const watched = new Set<string>();
    for (const user of users) {
      if (user.phoneNumber !== null) own.add(user.phoneNumber);
      for (const number of user.hints.keys()) watched.add(number);
    }
    // a socket just opened has subscribed to nothing yet
    const sessions = greeted ? [] : [...this.#hinted];
    for (const session of sessions) for (const number of session.hints!.keys()) watched.add(number);
    if (own.size === 0 && watched.size === 0) return;
    const [owns, hints] = await Promise.all([
      own.size ? this.services.platform.phoneStatuses([...own]) : new Map<string, PhoneStatus>(),
      watchedStatuses(this.services, [...watched]),
    ]);
    for (const user of users) {
      const send = (last: PhoneStatus | null, status: PhoneStatus, message: CtiMessage) => {
        if (status !== last) user.send(message);
        else if (greeted?.user === user) greeted.send(message);
      };
      if (user.phoneNumber !== null) {
        const status = owns.get(user.phoneNumber) ?? -2;
        send(user.ownStatus, status, phoneStatusUpdate(status));
        user.ownStatus = status;
      }
      for (const [number, last] of user.hints) {
        const status = hints.get(number);
        if (status === undefined) continue; // a contact read meanwhile: its socket's open sends it
        send(last, status, phoneHintStatus(number, status));
        user.hints.set(number, status);
      }
    }
    for (const session of sessions) {
      for (const [number, last] of session.hints ?? []) {
        const status = hints.get(number);
        if (status === undefined || status === last) continue; // subscribed meanwhile: sent then
        session.hints!.set(number, status);
        // a number of the user's contacts went to each of the user's sockets above
        if (!session.user.hints.has(number)) session.send(phoneHintStatus(number, status));
      }
    }
  }
}

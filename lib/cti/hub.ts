/**
 * The CTI sockets of this process (docs/cti.md): who holds which, what each one is sent.
 *
 * - Events come from the live feed (`lib/events/feed.ts`), so a socket sees what any process
 *   sharing the store published: the user's `PhoneEvent`s and `UserConfigUpdate`s (by username),
 *   the `AgentStateEvent`s of the user's agent, and of every agent once the client subscribed to
 *   them with the agent daemon's `agentd.agents.read`.
 * - Phone statuses (the user's own phone, the numbers of the user's personal contacts) are read
 *   from the platform whenever its status version moves, every `STATUS_POLL_MS` at most, in one
 *   read for every socket; each socket is sent the statuses that changed for it.
 * - A socket whose unsent bytes pass the send buffer setting is closed (4008): a slow reader never
 *   holds back the others nor grows the process. Its token's expiry closes it too (4001).
 */
import type { Identity } from "../auth/tokens.ts";
import type { LogEntry } from "../events/outbox.ts";
import type { PhoneStatus } from "../platform/port.ts";
import type { Services } from "../services.ts";
import { listContacts } from "../store/contacts.ts";
import { getExtension } from "../store/extensions.ts";
import { getLine } from "../store/lines.ts";
import type { UserRecord } from "../store/users.ts";
import {
  type CtiMessage,
  eventToCti,
  loggedOn,
  phoneHintStatus,
  phoneStatusUpdate,
  userConfig,
} from "./messages.ts";

/** How often the platform's status version is looked at while sockets watch numbers. */
export const STATUS_POLL_MS = 200;
/** How often a socket's personal contacts are read again (their numbers are watched). */
const CONTACTS_REFRESH_MS = 30_000;

/** Close codes of the socket (docs/cti.md). */
export const CLOSE = {
  tokenExpired: 4001,
  slowReader: 4008,
  shutdown: 1001,
} as const;

/** What the hub needs of a WebSocket (a `WebSocket` of `Deno.upgradeWebSocket`). */
export interface CtiSocket {
  send(data: string): void;
  close(code?: number, reason?: string): void;
  readonly bufferedAmount: number;
  readonly readyState: number;
}

/** One open socket. */
export class CtiSession {
  /** The user's agent (linked, or logged on one of the user's lines), null when none. */
  agentId: number | null = null;
  /** Sent every agent's state (`subscribeToAgentEvents` with `agentd.agents.read`). */
  allAgents = false;
  /** The user's own number (main line's extension), null without one. */
  phoneNumber: string | null = null;
  /** Numbers of the personal contacts, with the status last sent for each. */
  hints = new Map<string, PhoneStatus | null>();
  ownStatus: PhoneStatus | null = null;
  contactsReadAt = 0;
  #closed = false;
  cancelExpiry: () => void = () => {};

  constructor(
    readonly socket: CtiSocket,
    readonly identity: Identity,
    public user: UserRecord,
    readonly tokenExpiresAt: number,
    readonly sendBuffer: number,
  ) {}

  get username(): string {
    return this.user.username ?? "";
  }

  get closed(): boolean {
    return this.#closed || this.socket.readyState > 1;
  }

  /** Sends `message`, or closes the socket when the client is too far behind. */
  send(message: CtiMessage): void {
    if (this.closed) return;
    if (this.socket.bufferedAmount > this.sendBuffer) {
      this.close(CLOSE.slowReader, "send buffer full: the client reads too slowly");
      return;
    }
    try {
      this.socket.send(JSON.stringify(message));
    } catch {
      this.#closed = true; // closed under us: the close event detaches it
    }
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.#closed = true;
    this.cancelExpiry();
    try {
      this.socket.close(code, reason);
    } catch { /* already closing */ }
  }
}

const configOf = (user: UserRecord) => userConfig(user).ctiMessage as Record<string, unknown>;

/** The user's own number: the first extension of the main line. */
async function ownNumber(services: Services, user: UserRecord): Promise<string | null> {
  const lineId = user.line_ids[0];
  const line = lineId === undefined ? null : await getLine(services.store, lineId);
  const extensionId = line?.extension_ids[0];
  const extension = extensionId === undefined
    ? null
    : await getExtension(services.store, extensionId);
  return extension?.exten ?? null;
}

export class CtiHub {
  readonly #byUser = new Map<string, Set<CtiSession>>();
  #unsubscribe: (() => void) | null = null;
  #cancelPoll: (() => void) | null = null;
  #statusVersion: number | null = null;
  #polling: Promise<void> | null = null;

  constructor(readonly services: Services) {}

  /** Sockets open now. */
  get size(): number {
    let size = 0;
    for (const sessions of this.#byUser.values()) size += sessions.size;
    return size;
  }

  /** How many sockets `username` holds in this process. */
  count(username: string): number {
    return this.#byUser.get(username)?.size ?? 0;
  }

  /**
   * Registers an open socket and sends the greeting: `LoggedOn`, the user's configuration, the
   * own phone's status and the personal contacts' statuses.
   */
  async open(session: CtiSession, agentId: number | null): Promise<void> {
    const { services } = this;
    session.agentId = agentId;
    session.phoneNumber = await ownNumber(services, session.user);
    const delay = Math.max(0, session.tokenExpiresAt - services.clock.now());
    session.cancelExpiry = services.clock.after(
      delay,
      () => session.close(CLOSE.tokenExpired, "token expired: sign in again and reconnect"),
    );
    let sessions = this.#byUser.get(session.username);
    if (!sessions) this.#byUser.set(session.username, sessions = new Set());
    sessions.add(session);
    this.#unsubscribe ??= services.feed.subscribe((entries) => this.#dispatch(entries));
    session.send(loggedOn(session.user, session.phoneNumber));
    session.send(userConfig(session.user));
    await this.#readContacts(session);
    await this.#sendStatuses([session], true);
    this.#startPolling();
  }

  /** Forgets a closed socket. */
  detach(session: CtiSession): void {
    session.cancelExpiry();
    const sessions = this.#byUser.get(session.username);
    sessions?.delete(session);
    if (sessions?.size === 0) this.#byUser.delete(session.username);
    if (this.#byUser.size === 0) this.#stop();
  }

  /** Closes every socket (server shutdown). */
  close(): void {
    for (const sessions of [...this.#byUser.values()]) {
      for (const session of [...sessions]) {
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
  }

  /** Hands each event to the sockets it is for. */
  #dispatch(entries: LogEntry[]): void {
    for (const { event } of entries) {
      const message = event.message;
      const toUser = this.#byUser.get(event.username);
      if (message.msgType !== "AgentStateEvent") {
        if (!toUser) continue;
        const cti = eventToCti(event);
        for (const session of toUser) {
          // with the names, as on open: the event itself carries only the services
          session.send(
            message.msgType === "UserConfigUpdate"
              ? {
                msgType: cti.msgType,
                ctiMessage: { ...configOf(session.user), ...cti.ctiMessage as object },
              }
              : cti,
          );
        }
        continue;
      }
      const cti = eventToCti(event);
      // the agent logged on the user's line is the user's agent from now on (as agentOfUser says)
      for (const session of toUser ?? []) session.agentId = message.agentId;
      for (const sessions of this.#byUser.values()) {
        for (const session of sessions) {
          if (session.allAgents || session.agentId === message.agentId) session.send(cti);
        }
      }
    }
  }

  /** Reads the user's contact numbers once for all `sessions` (the same user's sockets). */
  async #readContacts(...sessions: CtiSession[]): Promise<void> {
    const contacts = await listContacts(this.services.store, sessions[0]!.user.id);
    const numbers = new Set(contacts.map((contact) => contact.number).filter(Boolean));
    for (const session of sessions) {
      const hints = new Map<string, PhoneStatus | null>();
      for (const number of numbers) hints.set(number, session.hints.get(number) ?? null);
      session.hints = hints;
      session.contactsReadAt = this.services.clock.now();
    }
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
    const { clock, platform } = this.services;
    const sessions = [...this.#byUser.values()].flatMap((set) => [...set]);
    const now = clock.now();
    for (const userSessions of this.#byUser.values()) {
      const due = [...userSessions].filter((s) => now - s.contactsReadAt >= CONTACTS_REFRESH_MS);
      if (due.length) await this.#readContacts(...due); // one read for the user's sockets
    }
    const version = platform.phoneStatusVersion();
    if (version !== null && version === this.#statusVersion) return;
    await this.#sendStatuses(sessions, false);
    this.#statusVersion = version;
  }

  /** Reads the statuses `sessions` watch in one platform call; sends the changed ones (all). */
  async #sendStatuses(sessions: CtiSession[], all: boolean): Promise<void> {
    const numbers = new Set<string>();
    for (const session of sessions) {
      if (session.phoneNumber !== null) numbers.add(session.phoneNumber);
      for (const number of session.hints.keys()) numbers.add(number);
    }
    if (numbers.size === 0) return;
    const statuses = await this.services.platform.phoneStatuses([...numbers]);
    for (const session of sessions) {
      if (session.phoneNumber !== null) {
        const status = statuses.get(session.phoneNumber) ?? -2;
        if (all || status !== session.ownStatus) session.send(phoneStatusUpdate(status));
        session.ownStatus = status;
      }
      for (const [number, last] of session.hints) {
        const status = statuses.get(number) ?? -2;
        if (all || status !== last) session.send(phoneHintStatus(number, status));
        session.hints.set(number, status);
      }
    }
  }
}

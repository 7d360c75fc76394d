/**
 * One AMI connection to Asterisk: login, ActionID correlation, event lists, keepalive, a stalled
 * peer told from a slow one, bounded input, and reconnection with backoff. Behaviour follows the
 * recorded sessions of `tests/peers/asterisk_transcripts/` and the faults of
 * `tests/lib/platform/asterisk/ami_faults_test.ts` (docs/asterisk.md, "A stalled or hostile
 * Asterisk").
 */
import type { Logger } from "../../log.ts";
import { type AmiMessage, AmiParser, formatAction } from "./ami_message.ts";

/** Not connected, connection lost, or no response in time: the action may or may not have run. */
export class AmiUnavailable extends Error {
  override name = "AmiUnavailable";
}

export interface AmiResponse {
  /** The `Response:` message (for a list, the one with `EventList: start`). */
  message: AmiMessage;
  /** `Response: Success` (or `Goodbye`). */
  ok: boolean;
  /** The items of an event list, in order, without the `...Complete` event. */
  items: AmiMessage[];
  /** The `...Complete` event ending an event list. */
  complete?: AmiMessage;
}

export interface AmiClientOptions {
  host: string;
  port: number;
  username: string;
  /** Never logged. */
  secret: string;
  logger: Logger;
  /** A Ping is sent after this long without anything read (default 10 s). */
  keepaliveMs?: number;
  /**
   * The deadline of every response (default 5 s): a Ping unanswered in this time drops the
   * connection; another action fails, and if nothing at all was read since it was sent the
   * connection counts as stalled (see `connected`) until a byte comes or its Ping's deadline
   * drops it.
   */
  timeoutMs?: number;
  /**
   * Longest line kept, in bytes without its CRLF: the rest of a longer line is cut off before
   * parsing, its message kept (logged). Unset: no cut, a message over `maxMessageChars` is
   * dropped whole (the Asterisk adapter sets 64 KiB, docs/asterisk.md).
   */
  maxLineBytes?: number;
  /** Longest message kept, in characters (default 1 MiB): a longer one is dropped (logged). */
  maxMessageChars?: number;
  /** Delays between connection attempts; the last one repeats. A refused login waits the last. */
  backoffMs?: number[];
  /** Prefix of the ActionIDs (default `svc-`). */
  actionIdPrefix?: string;
}

type Fields = Record<string, string | string[] | undefined>;

interface Pending {
  action: string;
  resolve(response: AmiResponse): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
  /** The `EventList: start` response, once an event list has begun. */
  list?: AmiMessage;
  items: AmiMessage[];
}

const encoder = new TextEncoder();

const CR = 13;
const LF = 10;

/**
 * Cuts every line of a byte stream (up to its CRLF; a bare LF does not end a line, as in the
 * parser) to `max` bytes, keeping its CRLF, so that no value Asterisk sends makes svc hold more
 * than that per line, however long it is and wherever the reads cut it. Streams that need no cut
 * pass through untouched (a backward search per `max` bytes read).
 */
export class LineCap {
  /** Bytes of the current line so far (a trailing CR included). */
  #len = 0;
  /** The last byte seen (kept or cut) was a CR. */
  #cr = false;
  /** Dropping the rest of an over-long line until its CRLF. */
  #skipping = false;
  /** The first bytes of a line begun in an earlier chunk (for `onCut`). */
  #head = new Uint8Array();

  constructor(
    readonly max: number,
    /** Told of each cut line, with its first bytes (its key). */
    readonly onCut: (head: Uint8Array) => void = () => {},
  ) {}

  /** The chunk with its over-long lines cut (the same array when nothing was cut). */
  cut(chunk: Uint8Array): Uint8Array {
    const n = chunk.length;
    if (n === 0) return chunk;
    let kept: Uint8Array[] | undefined;
    /** Start of the bytes not yet kept or dropped. */
    let from = 0;
    let pos = 0;
    while (pos < n) {
      if (this.#skipping) {
        kept ??= [];
        const end = this.#lineEnd(chunk, pos, n);
        if (end < 0) {
          pos = n;
          from = n;
          break;
        }
        kept.push(CRLF);
        this.#skipping = false;
        this.#len = 0;
        pos = end + 1;
        from = pos;
        continue;
      }
      // the line may hold `room` more bytes, then its CR and LF
      const room = this.max - this.#len;
      const last = this.#lastLineEnd(chunk, pos, Math.min(pos + room + 2, n));
      if (last >= 0) {
        this.#len = 0;
        pos = last + 1;
        continue;
      }
      const rest = n - pos;
      if (rest <= room || (rest === room + 1 && chunk[n - 1] === CR)) {
        this.#len += rest; // the line may still end in time
        const start = n - this.#len;
        if (start >= 0) this.#head = chunk.slice(start, Math.min(n, start + HEAD));
        break;
      }
      // over-long: keep `room` bytes of it, drop the rest up to its CRLF (a CR ending the last
      // chunk, kept then, may stay in the value)
      const cutAt = pos + Math.max(room, 0);
      (kept ??= []).push(chunk.subarray(from, cutAt));
      const lineStart = cutAt - this.max;
      this.onCut(lineStart >= 0 ? chunk.subarray(lineStart, lineStart + HEAD) : this.#head);
      this.#skipping = true;
      pos = cutAt;
      from = cutAt;
    }
    this.#cr = chunk[n - 1] === CR;
    if (kept === undefined) return chunk;
    if (from < n) kept.push(chunk.subarray(from, n));
    let size = 0;
    for (const part of kept) size += part.length;
    const out = new Uint8Array(size);
    let at = 0;
    for (const part of kept) {
      out.set(part, at);
      at += part.length;
    }
    return out;
  }

  /** Whether the LF at `i` ends a line (a CR before it, in this chunk or the last one). */
  #endsLine(chunk: Uint8Array, i: number): boolean {
    return i > 0 ? chunk[i - 1] === CR : this.#cr;
  }

  /** The index of the first line-ending LF in `[from, to)`, or -1. */
  #lineEnd(chunk: Uint8Array, from: number, to: number): number {
    for (let i = chunk.indexOf(LF, from); i >= 0 && i < to; i = chunk.indexOf(LF, i + 1)) {
      if (this.#endsLine(chunk, i)) return i;
    }
    return -1;
  }

  /** The index of the last line-ending LF in `[from, to)`, or -1. */
  #lastLineEnd(chunk: Uint8Array, from: number, to: number): number {
    if (to <= from) return -1;
    for (let i = chunk.lastIndexOf(LF, to - 1); i >= from; i = chunk.lastIndexOf(LF, i - 1)) {
      if (this.#endsLine(chunk, i)) return i;
      if (i === 0) break;
    }
    return -1;
  }
}

const CRLF = new Uint8Array([CR, LF]);
/** Bytes of a cut line told (its key). */
const HEAD = 40;

function isOk(response: string): boolean {
  const lower = response.toLowerCase();
  return lower === "success" || lower === "goodbye";
}

function isListEnd(event: AmiMessage, name: string): boolean {
  return event.get("EventList")?.toLowerCase() === "complete" || name.endsWith("Complete");
}

/**
 * @example
 * const ami = new AmiClient({ host: "127.0.0.1", port: 5038, username: "svc", secret, logger });
 * ami.onEvent((event) => console.log(event.event));
 * ami.start();
 * if (await ami.waitConnected(5000)) await ami.action("Ping");
 */
export class AmiClient {
  readonly #options: AmiClientOptions;
  readonly #keepaliveMs: number;
  readonly #timeoutMs: number;
  readonly #backoffMs: number[];
  readonly #prefix: string;
  readonly #maxLine: number | undefined;
  readonly #maxMessage: number;
  #running: Promise<void> | undefined;
  #closing = false;
  /** The socket of the current attempt, logged in or not. */
  #conn: Deno.TcpConn | undefined;
  #loggedIn = false;
  /** An action went unanswered past its deadline with nothing read since it was sent. */
  #stalled = false;
  #writing: Promise<void> = Promise.resolve();
  /** Why we closed the current socket ourselves. */
  #dropReason: string | undefined;
  #pending = new Map<string, Pending>();
  /** Timed-out actions whose late response or list items must not reach the event listeners. */
  #abandoned = new Set<string>();
  #nextId = 0;
  #lastRead = 0;
  #keepalive: ReturnType<typeof setTimeout> | undefined;
  #pinging = false;
  #garbage = 0;
  #cutLines = 0;
  #sleep: { timer: ReturnType<typeof setTimeout>; wake: () => void } | undefined;
  #connectAbort: AbortController | undefined;
  #eventListeners: ((event: AmiMessage) => void)[] = [];
  #connectListeners: (() => void | Promise<void>)[] = [];
  #disconnectListeners: ((reason: string) => void)[] = [];
  #stallListeners: ((stalled: boolean) => void)[] = [];
  #connectWaiters = new Set<(connected: boolean) => void>();

  constructor(options: AmiClientOptions) {
    this.#options = options;
    this.#keepaliveMs = options.keepaliveMs ?? 10_000;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#backoffMs = options.backoffMs?.length
      ? options.backoffMs
      : [100, 250, 500, 1000, 2000, 3000];
    this.#prefix = options.actionIdPrefix ?? "svc-";
    this.#maxLine = options.maxLineBytes;
    this.#maxMessage = options.maxMessageChars ?? 1024 * 1024;
  }

  /** Connects in the background, and again after every loss, until `close()`. */
  start(): void {
    if (this.#running !== undefined || this.#closing) return;
    this.#running = this.#run();
  }

  /**
   * Logged in right now, and not stalled: no action went unanswered past its deadline while
   * nothing at all was read (a frozen Asterisk, a half-open connection). While stalled every
   * action fails at once, nothing is sent but the Ping that decides: a byte read ends the stall,
   * the Ping's deadline drops the connection.
   */
  get connected(): boolean {
    return this.#loggedIn && !this.#stalled;
  }

  /** Resolves true once connected, false after `ms` or on close. */
  waitConnected(ms: number): Promise<boolean> {
    if (this.connected) return Promise.resolve(true);
    if (this.#closing) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (connected: boolean) => {
        clearTimeout(timer);
        this.#connectWaiters.delete(done);
        resolve(connected);
      };
      const timer = setTimeout(() => done(false), ms);
      this.#connectWaiters.add(done);
    });
  }

  /**
   * Sends an action and answers its response (and list items). Error responses resolve too
   * (`ok` false); rejects with AmiUnavailable at once when not logged in, on connection loss
   * and after `timeoutMs`, and with a TypeError for a field holding CR or LF. `onActionId` gets
   * the ActionID before the action is sent: events naming it (an async Originate's
   * `OriginateResponse`) may be handled before the response's promise settles.
   */
  action(
    action: string,
    fields: Fields = {},
    onActionId?: (actionId: string) => void,
  ): Promise<AmiResponse> {
    const conn = this.#conn;
    if (!this.#loggedIn || this.#closing || conn === undefined) {
      return Promise.reject(new AmiUnavailable(`AMI not connected (${action})`));
    }
    if (this.#stalled) {
      return Promise.reject(new AmiUnavailable(`AMI not answering (${action})`));
    }
    return this.#send(conn, action, fields, this.#timeoutMs, onActionId);
  }

  /** Unsolicited events (and events of actions that are not lists), in order, synchronously. */
  onEvent(listener: (event: AmiMessage) => void): void {
    this.#eventListeners.push(listener);
  }

  /** Called after each successful login (to resynchronise state). */
  onConnect(listener: () => void | Promise<void>): void {
    this.#connectListeners.push(listener);
  }

  /** Called when a logged-in connection ends (with "closed" after `close()`). */
  onDisconnect(listener: (reason: string) => void): void {
    this.#disconnectListeners.push(listener);
  }

  /** Called when the connection stalls (true) and when a byte ends the stall (false). */
  onStall(listener: (stalled: boolean) => void): void {
    this.#stallListeners.push(listener);
  }

  /** Logs off if logged in, closes, stops reconnecting; no timer is left behind. */
  async close(): Promise<void> {
    if (this.#closing) return await this.#running;
    this.#closing = true;
    this.#connectAbort?.abort();
    this.#wake();
    const conn = this.#conn;
    if (conn !== undefined && this.#loggedIn) {
      // Asterisk answers Goodbye and closes; do not wait long for it
      await this.#send(conn, "Logoff", {}, Math.min(this.#timeoutMs, 1000)).catch(() => {});
    }
    if (conn !== undefined) this.#drop(conn, "closed");
    await this.#running;
    for (const done of [...this.#connectWaiters]) done(false);
  }

  async #run(): Promise<void> {
    let attempt = 0;
    let reported = ""; // the kind of failure already logged in this outage
    while (!this.#closing) {
      const outcome = await this.#session();
      if (this.#closing) break;
      if (outcome.kind === "lost") {
        attempt = 0;
        reported = "";
      } else {
        this.#reportFailure(outcome, reported === outcome.kind);
        reported = outcome.kind;
      }
      const last = this.#backoffMs.length - 1;
      const delay = outcome.kind === "refused"
        ? this.#backoffMs[last]!
        : this.#backoffMs[Math.min(attempt, last)]!;
      attempt++;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => this.#wake(), delay);
        this.#sleep = { timer, wake: resolve };
      });
    }
  }

  /** The first failure of an outage is logged (an error for a refused login), repeats quietly. */
  #reportFailure(outcome: { kind: string; reason: string }, repeated: boolean): void {
    const { host, port, username, logger } = this.#options;
    if (repeated) {
      logger.debug("AMI connection attempt failed", { host, port, error: outcome.reason });
    } else if (outcome.kind === "refused") {
      logger.error("AMI login refused", { host, port, user: username, message: outcome.reason });
    } else logger.warn("AMI connection failed", { host, port, error: outcome.reason });
  }

  #wake(): void {
    const sleep = this.#sleep;
    if (sleep === undefined) return;
    this.#sleep = undefined;
    clearTimeout(sleep.timer);
    sleep.wake();
  }

  /** One connection: connect, log in, serve until it ends. */
  async #session(): Promise<{ kind: "unreachable" | "refused" | "lost"; reason: string }> {
    const { host, port, username, secret, logger } = this.#options;
    const abort = new AbortController();
    this.#connectAbort = abort;
    const timer = setTimeout(() => abort.abort(), this.#timeoutMs);
    let conn: Deno.TcpConn;
    try {
      conn = await Deno.connect({ hostname: host, port, signal: abort.signal });
    } catch (error) {
      return {
        kind: "unreachable",
        reason: error instanceof Error ? error.message : String(error),
      };
    } finally {
      clearTimeout(timer);
      this.#connectAbort = undefined;
    }
    // each action is one write: send it at once (Nagle with delayed ACKs costs up to 40 ms)
    conn.setNoDelay(true);
    this.#conn = conn;
    this.#dropReason = undefined;
    this.#writing = Promise.resolve();
    this.#garbage = 0;
    const reading = this.#read(conn);
    if (this.#closing) this.#drop(conn, "closed");

    let login;
    try {
      login = await this.#send(conn, "Login", { Username: username, Secret: secret, Events: "on" });
    } catch (error) {
      this.#drop(conn, "login failed");
      await reading;
      return {
        kind: "unreachable",
        reason: error instanceof Error ? error.message : String(error),
      };
    }
    if (!login.ok) {
      this.#drop(conn, "login refused");
      await reading;
      return { kind: "refused", reason: login.message.get("Message") ?? "" };
    }

    if (this.#conn !== conn) return { kind: "unreachable", reason: await reading };
    this.#loggedIn = true;
    logger.info("AMI connected", { host, port, user: username });
    this.#armKeepalive();
    for (const done of [...this.#connectWaiters]) done(true);
    for (const listener of this.#connectListeners) {
      try {
        Promise.resolve(listener()).catch((error) => this.#listenerFailed("onConnect", error));
      } catch (error) {
        this.#listenerFailed("onConnect", error);
      }
    }

    const reason = await reading;
    if (!this.#closing) logger.warn("AMI connection lost", { host, port, reason });
    for (const listener of this.#disconnectListeners) {
      try {
        listener(reason);
      } catch (error) {
        this.#listenerFailed("onDisconnect", error);
      }
    }
    return { kind: "lost", reason };
  }

  /** Reads and dispatches until the socket ends; then fails what is pending. Answers why. */
  async #read(conn: Deno.TcpConn): Promise<string> {
    const parser = new AmiParser({
      maxMessage: this.#maxMessage,
      onGarbage: (reason) => this.#reportGarbage(reason),
    });
    const max = this.#maxLine;
    const lines = max === undefined ? undefined : new LineCap(max, (head) => this.#reportCut(head));
    const buffer = new Uint8Array(65536);
    let reason = "closed by Asterisk";
    try {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) break;
        this.#lastRead = performance.now();
        if (this.#stalled && this.#conn === conn) this.#setStalled(false);
        const chunk = buffer.subarray(0, n);
        for (const message of parser.push(lines ? lines.cut(chunk) : chunk)) {
          this.#dispatch(message);
        }
      }
    } catch (error) {
      reason = `read failed: ${error instanceof Error ? error.message : String(error)}`;
    }
    reason = this.#closing ? "closed" : this.#dropReason ?? reason;
    try {
      conn.close();
    } catch { /* closed already by #drop */ }
    this.#conn = undefined;
    this.#loggedIn = false;
    this.#stalled = false; // the disconnect listeners are told next
    this.#pinging = false;
    clearTimeout(this.#keepalive);
    this.#keepalive = undefined;
    this.#abandoned.clear();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const action of pending) {
      clearTimeout(action.timer);
      action.reject(new AmiUnavailable(`AMI connection lost (${action.action}): ${reason}`));
    }
    return reason;
  }

  /** Closes the socket ourselves; the read loop then ends with `reason`. */
  #drop(conn: Deno.TcpConn, reason: string): void {
    if (this.#conn !== conn) return;
    this.#dropReason ??= reason;
    this.#loggedIn = false;
    try {
      conn.close();
    } catch { /* already closed */ }
  }

  #send(
    conn: Deno.TcpConn,
    action: string,
    fields: Fields,
    timeoutMs = this.#timeoutMs,
    onActionId?: (actionId: string) => void,
  ): Promise<AmiResponse> {
    const id = `${this.#prefix}${++this.#nextId}`;
    let text: string;
    try {
      text = formatAction(action, fields, id);
    } catch (error) {
      return Promise.reject(error);
    }
    onActionId?.(id);
    const sentAt = performance.now();
    return new Promise<AmiResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        if (this.#abandoned.size >= 1000) this.#abandoned.clear(); // a bound, not a cache
        this.#abandoned.add(id);
        reject(new AmiUnavailable(`AMI: no response to ${action} within ${timeoutMs} ms`));
        if (action === "Ping" || action === "Logoff") return;
        // not a byte since it was sent: a frozen or unreachable peer, not a slow action (Asterisk
        // answers a session's actions in turn, and sends its events between them)
        if (this.#lastRead < sentAt && this.#loggedIn && this.#conn === conn) {
          this.#setStalled(true, action);
        }
        this.#ping(); // is the connection alive?
      }, timeoutMs);
      this.#pending.set(id, { action, resolve, reject, timer, items: [] });
      const bytes = encoder.encode(text);
      const write = this.#writing.then(async () => {
        for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
      });
      this.#writing = write.catch(() => {});
      write.catch((error) => {
        const pending = this.#pending.get(id);
        if (pending === undefined) return;
        this.#pending.delete(id);
        clearTimeout(pending.timer);
        reject(
          new AmiUnavailable(
            `AMI write failed (${action}): ${error instanceof Error ? error.message : error}`,
          ),
        );
        this.#drop(conn, "write failed");
      });
    });
  }

  #dispatch(message: AmiMessage): void {
    const event = message.event;
    const id = message.actionId;
    if (event === undefined) {
      const response = message.response;
      const pending = id === undefined ? undefined : this.#pending.get(id);
      if (response === undefined || pending === undefined) {
        if (id === undefined || !this.#abandoned.has(id)) {
          this.#options.logger.debug("AMI message for no pending action", {
            actionId: id,
            response,
          });
        } else if (message.get("EventList")?.toLowerCase() !== "start") this.#abandoned.delete(id!);
        return;
      }
      if (message.get("EventList")?.toLowerCase() === "start") {
        pending.list = message;
        return;
      }
      this.#settle(id!, pending, { message, ok: isOk(response), items: [] });
      return;
    }
    if (id !== undefined) {
      const pending = this.#pending.get(id);
      if (pending?.list !== undefined) {
        if (isListEnd(message, event)) {
          this.#settle(id, pending, {
            message: pending.list,
            ok: true,
            items: pending.items,
            complete: message,
          });
        } else pending.items.push(message);
        return;
      }
      if (this.#abandoned.has(id) && message.get("Privilege") === undefined) {
        if (isListEnd(message, event)) this.#abandoned.delete(id);
        return;
      }
    }
    for (const listener of this.#eventListeners) {
      try {
        listener(message);
      } catch (error) {
        this.#listenerFailed("onEvent", error);
      }
    }
    if (event === "Shutdown") {
      // Asterisk closes the socket right after; refuse new actions from now on
      const conn = this.#conn;
      if (conn !== undefined) {
        this.#drop(conn, `Asterisk shut down (${message.get("Shutdown") ?? ""})`);
      }
    }
  }

  #settle(id: string, pending: Pending, response: AmiResponse): void {
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    pending.resolve(response);
  }

  #armKeepalive(): void {
    clearTimeout(this.#keepalive);
    const idle = performance.now() - this.#lastRead;
    this.#keepalive = setTimeout(() => {
      this.#keepalive = undefined;
      if (performance.now() - this.#lastRead >= this.#keepaliveMs) this.#ping();
      else this.#armKeepalive();
    }, Math.max(0, this.#keepaliveMs - idle));
  }

  /** Pings; no answer in time drops the connection (the reconnect follows). */
  #ping(): void {
    const conn = this.#conn;
    if (this.#pinging || !this.#loggedIn || conn === undefined) return;
    this.#pinging = true;
    clearTimeout(this.#keepalive);
    this.#keepalive = undefined;
    this.#send(conn, "Ping", {}).then(
      () => {
        if (this.#conn !== conn) return;
        this.#pinging = false;
        if (this.#loggedIn) this.#armKeepalive();
      },
      () => {
        if (this.#conn !== conn) return;
        this.#pinging = false;
        this.#drop(conn, `no answer to Ping within ${this.#timeoutMs} ms`);
      },
    );
  }

  #setStalled(stalled: boolean, action?: string): void {
    if (this.#stalled === stalled) return;
    this.#stalled = stalled;
    const { host, port, logger } = this.#options;
    if (stalled) {
      logger.warn("AMI not answering: actions refused until it does", {
        host,
        port,
        action,
        timeoutMs: this.#timeoutMs,
      });
    } else {
      logger.info("AMI answering again", { host, port });
      for (const done of [...this.#connectWaiters]) done(true);
    }
    for (const listener of this.#stallListeners) {
      try {
        listener(stalled);
      } catch (error) {
        this.#listenerFailed("onStall", error);
      }
    }
  }

  #reportCut(head: Uint8Array): void {
    this.#cutLines++;
    if (this.#cutLines <= 10 || this.#cutLines % 1000 === 0) {
      const text = new TextDecoder().decode(head);
      this.#options.logger.warn("AMI line cut", {
        maxBytes: this.#maxLine,
        key: text.slice(0, Math.max(0, text.indexOf(":"))) || undefined,
        count: this.#cutLines,
      });
    }
  }

  #reportGarbage(reason: string): void {
    this.#garbage++;
    // enough to diagnose, not a line per garbage line of a flood
    if (this.#garbage <= 10 || this.#garbage % 1000 === 0) {
      this.#options.logger.warn("AMI input skipped", { reason, count: this.#garbage });
    }
  }

  #listenerFailed(kind: string, error: unknown): void {
    this.#options.logger.error(`AMI ${kind} listener failed`, {
      error: error instanceof Error ? error.message : String(error),
    });
  }
}

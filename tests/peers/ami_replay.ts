/**
 * A test AMI server on 127.0.0.1 that replays real Asterisk sessions
 * (`tests/peers/asterisk_transcripts/*.jsonl`).
 *
 * Each connection plays one transcript: the banner, then each recorded action ("send") followed
 * by what Asterisk sent after it. A recorded action is either client-driven (the script waits
 * for the client to send an action of that name, then plays what followed it, with the client's
 * ActionID) or auto (played by itself: the phones' and the recorder's side of the scenario; its
 * own response and list items are not sent). Any other client action gets a plausible answer
 * from the fallback library built from all transcripts.
 *
 * Faults, for the tests of a stalled or hostile Asterisk (issue 27 §3): a freeze (SIGSTOP: nothing
 * read or written, new connections left waiting, all resumed by `thaw()`), a half-open connection
 * (packets dropped: the open connections never read nor write again and are never closed), a
 * flood of events svc does not use, and huge values in the recorded messages.
 */
import { AmiMessage, AmiParser } from "../../lib/platform/asterisk/ami_message.ts";

export const TRANSCRIPTS = new URL("./asterisk_transcripts/", import.meta.url);

/** The recorded actions the client has to send itself unless `auto` says otherwise. */
export const CLIENT_DRIVEN = new Set([
  "login",
  "logoff",
  "originate",
  "dbput",
  "dbdel",
  "queueadd",
  "queueremove",
  "queuepause",
  "reload",
]);

/**
 * The actions svc sends for a command, in a session recorded from svc itself (the recorder's
 * sessions only): the client has to send each; svc's own queries (resync, keepalive, reloads)
 * are played by themselves.
 */
export const SVC_DRIVEN = new Set([
  ...CLIENT_DRIVEN,
  "hangup",
  "redirect",
  "bridge",
  "userevent",
  "setvar",
  "mixmonitor",
  "stopmixmonitor",
  "mixmonitormute",
  "muteaudio",
  "playdtmf",
  "confbridgekick",
  "confbridgemute",
  "confbridgeunmute",
  "confbridgestartrecord",
  "confbridgestoprecord",
  "pjsipnotify",
  "mailboxcount",
]);
SVC_DRIVEN.delete("reload");

export interface RecordLine {
  t: number;
  dir: "send" | "recv";
  data: string;
  eof?: boolean;
}

interface Step {
  /** 0-based index among the transcript's recorded sends. */
  index: number;
  t: number;
  action: AmiMessage;
  recvs: RecordLine[];
}

interface Transcript {
  opening: RecordLine[];
  steps: Step[];
}

export interface AmiReplayOptions {
  /** Transcript names (without `.jsonl`) played by connection 1, 2…; the last one repeats. */
  connections: string[];
  /** Scale of the recorded gaps: 0 = none (default), 1 = real time, 10 = ten times faster. */
  speed?: number;
  /** Whether a recorded send (index among sends) is played by itself; default: not CLIENT_DRIVEN. */
  auto?: (action: AmiMessage, index: number) => boolean;
  /** Answer every Login with the recorded failure of 01a, then close. */
  refuseLogin?: boolean;
  /** Delay before that failure (Asterisk takes 1 s); 0 by default. */
  refuseLoginDelayMs?: number;
  /** Close each connection after that many messages sent (the banner counts). */
  dropAfter?: number;
  /** Raw text written right after the banner on each connection. */
  garbage?: string[];
  /** Delay of every answer to a client action. */
  slowMs?: number;
  /**
   * `[from, to]` (indexes among recorded sends): once the send `to` is played, play from `from`
   * again, for ever (a benchmark dialling again and again). Each round maps Uniqueids afresh.
   */
  loop?: [number, number];
  /**
   * Stall (see {@link AmiReplay.freeze} and {@link AmiReplay.halfOpen}) right after a connection
   * has written the message `after` (counted as `dropAfter` counts, the banner first), or the
   * first recorded message matching it.
   */
  stallAfter?: { kind: "freeze" | "half-open"; after: number | RegExp };
  /** Events svc does not use (VarSet, RTCPSent) written before each recorded message. */
  flood?: number;
  /**
   * Each recorded message matching `match` gets one more header, `ChanVariable(SVC_BLOB)` (what
   * manager.conf's `channelvars` adds), holding `bytes` characters.
   */
  bloat?: { match: RegExp; bytes: number };
  /**
   * The recorded lines of each connection changed before they are played: events Asterisk may
   * send in another order (its threads race), played in that order.
   */
  rewrite?: (records: RecordLine[]) => RecordLine[];
  /**
   * More recorded Uniqueids to replace as they are played: another replay's mapping to its
   * client's ids ({@link AmiReplay.uniqueIds}), for a session that names that other server's
   * calls (svc's call id carried across a trunk between two servers).
   */
  alsoMap?: () => [RegExp, string][];
  /**
   * A recorded line is played once this says so (checked every 10 ms): another replay's turn.
   * Meanwhile the script's state is "gated" (what `waiting()` answers).
   */
  gate?: (record: RecordLine) => boolean;
}

/** What a connection held by a fault waits for. */
type Hold = PromiseWithResolvers<void>;

/**
 * Events Asterisk 22 sends and svc does not use: a channel variable set (its value `bytes` long
 * when given), an RTCP report.
 */
export function unusedEvent(n: number, bytes?: number): string {
  const channel = "Channel: PJSIP/flood-00000001\r\nChannelState: 6\r\nChannelStateDesc: Up\r\n" +
    "CallerIDNum: 1999\r\nCallerIDName: Flood\r\nConnectedLineNum: <unknown>\r\n" +
    "ConnectedLineName: <unknown>\r\nLanguage: en\r\nAccountCode: \r\nContext: flood\r\n" +
    "Exten: s\r\nPriority: 1\r\nUniqueid: 1700000000.999\r\nLinkedid: 1700000000.999\r\n";
  if (n % 2 === 0 || bytes !== undefined) {
    const value = bytes === undefined ? String(n) : "v".repeat(bytes);
    return `Event: VarSet\r\nPrivilege: dialplan,all\r\n${channel}Variable: FLOOD\r\n` +
      `Value: ${value}\r\n\r\n`;
  }
  return `Event: RTCPSent\r\nPrivilege: reporting,all\r\n${channel}To: 127.0.0.1:16002\r\n` +
    `From: 127.0.0.1:16000\r\nSSRC: 0x2b4d1e2f\r\nPT: 200(SR)\r\nReportCount: 0\r\n` +
    `SentNTP: 1700000000.${n}\r\nSentRTP: ${160 * n}\r\nSentPackets: ${n}\r\n` +
    `SentOctets: ${160 * n}\r\n\r\n`;
}

const parsed = new Map<string, Promise<RecordLine[]>>();

function load(name: string): Promise<RecordLine[]> {
  let records = parsed.get(name);
  if (records === undefined) {
    records = Deno.readTextFile(new URL(`${name}.jsonl`, TRANSCRIPTS)).then((text) =>
      text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as RecordLine)
    );
    parsed.set(name, records);
  }
  return records;
}

/** Parses one recorded message (what the transcript holds is well-formed). */
function message(data: string): AmiMessage {
  return new AmiParser({ banner: false }).push(data)[0] ?? new AmiMessage([]);
}

function toTranscript(records: RecordLine[]): Transcript {
  const transcript: Transcript = { opening: [], steps: [] };
  for (const record of records) {
    if (record.dir === "send") {
      transcript.steps.push({
        index: transcript.steps.length,
        t: record.t,
        action: message(record.data),
        recvs: [],
      });
    } else (transcript.steps.at(-1)?.recvs ?? transcript.opening).push(record);
  }
  return transcript;
}

/** Sets (or with null removes) the ActionID line of a recorded message, keeping its position. */
function withActionId(data: string, id: string | null): string {
  const lines = data.slice(0, -4).split("\r\n");
  const at = lines.findIndex((line) => /^actionid: /i.test(line));
  if (id === null) {
    if (at >= 0) lines.splice(at, 1);
  } else if (at >= 0) lines[at] = `ActionID: ${id}`;
  else lines.splice(1, 0, `ActionID: ${id}`);
  return lines.join("\r\n") + "\r\n\r\n";
}

interface Fallback {
  response: string;
  /** The `...Complete` event of a list action. */
  complete?: string;
}

/** For each action name (lower case): the first recorded Success (else any) answer to it. */
async function fallbackLibrary(): Promise<{ library: Map<string, Fallback>; unknown: string }> {
  const library = new Map<string, Fallback & { ok: boolean }>();
  let unknown = "Response: Error\r\nMessage: Invalid/unknown command\r\n\r\n";
  const names: string[] = [];
  for await (const entry of Deno.readDir(TRANSCRIPTS)) {
    if (entry.name.endsWith(".jsonl")) names.push(entry.name.slice(0, -6));
  }
  for (const name of names.sort()) {
    const records = await load(name);
    records.forEach((record, i) => {
      if (record.dir !== "send") return;
      const action = message(record.data);
      const id = action.actionId;
      const key = action.get("Action")?.toLowerCase();
      if (id === undefined || key === undefined) return;
      const answers = records.slice(i + 1).filter((r) => r.dir === "recv" && !r.eof)
        .map((r) => ({ data: r.data, parsed: message(r.data) }))
        .filter((r) => r.parsed.actionId === id);
      const response = answers.find((r) => r.parsed.response !== undefined);
      if (response === undefined) return;
      if (key === "nosuchaction") unknown = response.data;
      const ok = response.parsed.response === "Success";
      if (library.get(key)?.ok ?? (library.has(key) && !ok)) return;
      const entry: Fallback & { ok: boolean } = { response: response.data, ok };
      if (response.parsed.get("EventList")?.toLowerCase() === "start") {
        const complete = answers.find((r) => r.parsed.get("EventList") === "Complete");
        if (complete !== undefined) {
          entry.complete = complete.data.replace(/\r\nListItems: \d+/, "\r\nListItems: 0")
            .replace(/\r\nItems: \d+/, "\r\nItems: 0");
        }
      }
      library.set(key, entry);
    });
  }
  return { library, unknown };
}

let libraryPromise: ReturnType<typeof fallbackLibrary> | undefined;

/**
 * What Asterisk says after the queue member actions it carried out (`app_queue`'s events), for
 * those answered from the fallback library: svc follows its agents from these events.
 */
const MEMBER_EVENTS: Record<
  string,
  (action: AmiMessage, names: Map<string, string>) => string
> = {
  queueadd: (action, names) => memberEvent("QueueMemberAdded", action, names),
  queueremove: (action, names) => memberEvent("QueueMemberRemoved", action, names),
  queuepause: (action, names) => memberEvent("QueueMemberPause", action, names),
};

function memberEvent(event: string, action: AmiMessage, names: Map<string, string>): string {
  const paused = /^(true|1|yes)$/i.test(action.get("Paused") ?? "");
  const iface = action.get("Interface") ?? "";
  const fields = [
    ["Event", event],
    ["Privilege", "agent,all"],
    ["Queue", action.get("Queue") ?? ""],
    ["MemberName", names.get(`${action.get("Queue")}/${iface}`) ?? iface],
    ["Interface", action.get("Interface") ?? ""],
    ["StateInterface", action.get("StateInterface") ?? action.get("Interface") ?? ""],
    ["Membership", "dynamic"],
    ["Penalty", action.get("Penalty") ?? "0"],
    ["Paused", paused ? "1" : "0"],
    ["PausedReason", paused ? action.get("Reason") ?? "" : ""],
  ];
  return fields.map(([key, value]) => `${key}: ${value}\r\n`).join("") + "\r\n";
}

/** A boundary-safe pattern for a recorded Uniqueid (`1.1` must not hit `1.10`). */
function tokenPattern(token: string): RegExp {
  const escaped = token.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![\\w.-])${escaped}(?![\\w-]|\\.\\d)`, "g");
}

/** Starts a replay server on 127.0.0.1 on a random port. */
export async function startAmiReplay(options: AmiReplayOptions): Promise<AmiReplay> {
  libraryPromise ??= fallbackLibrary();
  const transcripts = await Promise.all(
    options.connections.map(async (name) => {
      const records = await load(name);
      return toTranscript(options.rewrite ? options.rewrite([...records]) : records);
    }),
  );
  const { library, unknown } = await libraryPromise;
  const refused =
    (await load("01a-login-failed")).find((r) => r.data.includes("Authentication failed"))!.data;
  const replay = new AmiReplay(options, transcripts, library, unknown, refused);
  replay.start();
  return replay;
}

export class AmiReplay {
  port = 0;
  /** Every action received, in order, across connections. */
  readonly actions: AmiMessage[] = [];
  /** Connections accepted so far. */
  connections = 0;
  refuseLogin: boolean;
  refuseLoginDelayMs: number;
  dropAfter: number | undefined;
  slowMs: number;
  readonly speed: number;
  #listener: Deno.Listener | undefined;
  #accepting: Promise<void> | undefined;
  #sessions = new Set<Session>();
  #current: Session | undefined;

  /**
   * The recorded time the current connection's script has come to: what it plays next or the
   * client action it waits for (0 before any connection, Infinity once over). Two replays of one
   * recording session's servers keep in step by it (`gate`).
   */
  position(): number {
    return this.#current?.position ?? 0;
  }

  /** The current connection's recorded Uniqueids replaced so far, each by the client's id. */
  uniqueIds(): [RegExp, string][] {
    return this.#current?.uniqueIds ?? [];
  }
  #waiters: ((state: string) => void)[] = [];
  /** New connections wait for this (a freeze or a half-open fault). */
  #held: Hold | undefined;

  constructor(
    readonly options: AmiReplayOptions,
    readonly transcripts: Transcript[],
    readonly library: Map<string, Fallback>,
    readonly unknown: string,
    readonly refused: string,
  ) {
    this.refuseLogin = options.refuseLogin ?? false;
    this.refuseLoginDelayMs = options.refuseLoginDelayMs ?? 0;
    this.dropAfter = options.dropAfter;
    this.slowMs = options.slowMs ?? 0;
    this.speed = options.speed ?? 0;
  }

  /** Listens (again, on the same port after `stop()`). */
  start(): void {
    if (this.#listener !== undefined) return;
    const listener = Deno.listen({ hostname: "127.0.0.1", port: this.port });
    this.port = (listener.addr as Deno.NetAddr).port;
    this.#listener = listener;
    this.#accepting = (async () => {
      for (;;) {
        let conn: Deno.TcpConn;
        try {
          conn = await listener.accept();
          conn.setNoDelay(true); // one write per message, as Asterisk sends them
        } catch {
          return; // listener closed
        }
        // accepted by the kernel, served once the fault is over (the others in its backlog)
        await this.#held?.promise;
        if (this.#listener !== listener) {
          conn.close();
          return;
        }
        const transcript = this
          .transcripts[Math.min(this.connections, this.transcripts.length - 1)]!;
        this.connections++;
        const session = new Session(this, conn, transcript);
        this.#sessions.add(session);
        this.#current = session;
        session.done.then(() => this.#sessions.delete(session));
      }
    })();
  }

  /** Closes the listener and every connection (a connect is then refused), like a stopped PBX. */
  async stop(): Promise<void> {
    this.#listener?.close();
    this.#listener = undefined;
    this.#held?.resolve();
    this.#held = undefined;
    await this.#accepting;
    const sessions = [...this.#sessions];
    for (const session of sessions) session.close();
    await Promise.all(sessions.map((session) => session.done));
  }

  close(): Promise<void> {
    return this.stop();
  }

  /**
   * Resolves once the current connection's script waits for a client action (answers its name),
   * or with "end" once the script is over: what was recorded up to there has been written.
   */
  waiting(): Promise<string> {
    const state = this.#current?.state;
    if (state !== undefined && state !== "playing") return Promise.resolve(state);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Writes raw text to every open connection now. */
  inject(data: string): void {
    for (const session of this.#sessions) session.write(data, false);
  }

  /**
   * As a SIGSTOPped Asterisk: the open connections read and write nothing (what the client sends
   * waits in the socket), new ones are accepted by the kernel but served only at `thaw()`, which
   * resumes everything where it stood.
   */
  freeze(): void {
    this.#held ??= Promise.withResolvers();
    for (const session of this.#sessions) session.hold();
  }

  /**
   * As a half-open connection (the peer gone, packets dropped, no close): the open connections
   * never read nor write again and stay open until `stop()`; new ones wait for `thaw()` (the
   * network back).
   */
  halfOpen(): void {
    this.#held ??= Promise.withResolvers();
    for (const session of this.#sessions) session.kill();
  }

  /** Ends a freeze or a half-open fault: frozen connections go on, new ones are served. */
  thaw(): void {
    const held = this.#held;
    this.#held = undefined;
    held?.resolve();
    for (const session of this.#sessions) session.release();
  }

  /** A freeze or a half-open fault is on. */
  get stalled(): boolean {
    return this.#held !== undefined;
  }

  /**
   * Writes `count` events svc does not use to every open connection, each holding a value of
   * `bytes` characters if given, as fast as the client reads them (each connection's writes
   * awaited by batches: the server holds little).
   */
  async flood(count: number, { bytes }: { bytes?: number } = {}): Promise<void> {
    const batch = bytes === undefined ? 64 : 1;
    await Promise.all([...this.#sessions].map(async (session) => {
      for (let i = 0; i < count; i++) {
        session.write(unusedEvent(i, bytes), false);
        if (i % batch === batch - 1) await session.drained();
      }
      await session.drained();
    }));
  }

  /** Connections open now (a frozen one stays open until it has read what it held). */
  get open(): number {
    return this.#sessions.size;
  }

  /** Starts the fault of `stallAfter`. */
  stall(kind: "freeze" | "half-open"): void {
    if (kind === "freeze") this.freeze();
    else this.halfOpen();
  }

  /** A session's state changed. */
  notify(session: Session): void {
    if (session !== this.#current || session.state === "playing") return;
    for (const resolve of this.#waiters.splice(0)) resolve(session.state);
  }

  isAuto(step: Step): boolean {
    if (this.options.auto !== undefined) return this.options.auto(step.action, step.index);
    return !CLIENT_DRIVEN.has(step.action.get("Action")?.toLowerCase() ?? "");
  }
}

/** One connection playing one transcript. */
class Session {
  state = "playing";
  readonly done: Promise<void>;
  #closed = false;
  /** Nothing more is written (a close is queued after what was). */
  #draining = false;
  #sent = 0;
  #writing: Promise<unknown> = Promise.resolve();
  #timers = new Map<ReturnType<typeof setTimeout>, () => void>();
  /** Recorded ActionID → the client's (null: the client gave none). */
  #ids = new Map<string, string | null>();
  /** ActionIDs of auto sends: what carries them is not sent. */
  #autoIds = new Set<string>();
  /** Recorded Uniqueid → the client's ChannelId. */
  #uniqueIds: [RegExp, string][] = [];

  /** The recorded time of what the script plays next, or waits for (Infinity once over). */
  position = 0;

  /** The recorded Uniqueids replaced so far, each by the client's id. */
  get uniqueIds(): [RegExp, string][] {
    return this.#uniqueIds;
  }
  /** `<queue>/<interface>` → the member name a QueueAdd gave it (for the member events). */
  #memberNames = new Map<string, string>();
  /** A client ChannelId waiting for the recorded Newchannel of the originated channel. */
  #channelId: string | undefined;
  /** Index of the step being played (or waited for). */
  #at = -1;
  /**
   * Client actions received for the steps of those indexes, in order: a client may send the next
   * before the replay played the answer of the last (svc announces a dial and originates it at once).
   */
  #queued: { step: number; action: AmiMessage }[] = [];
  #wake: (() => void) | undefined;
  #lastT = 0;
  #lastWall = performance.now();
  /** Reading, playing and writing wait for this (a freeze or a half-open fault). */
  #hold: Hold | undefined;
  /** Half-open: held for good. */
  #dead = false;
  /** `stallAfter` has fired on this connection. */
  #stalled = false;

  constructor(
    readonly server: AmiReplay,
    readonly conn: Deno.TcpConn,
    readonly transcript: Transcript,
  ) {
    // done once reading, playing and the last write are over (no op left for the sanitizers)
    this.done = Promise.all([this.#read(), this.#play()]).then(() => this.#writing).then(() => {});
  }

  /** Stops reading, writing and playing until `release()`. */
  hold(): void {
    if (!this.#closed) this.#hold ??= Promise.withResolvers();
  }

  /** Held for good: `release()` no longer frees it, only `close()`. */
  kill(): void {
    this.hold();
    this.#dead = true;
  }

  release(): void {
    if (this.#dead) return;
    this.#hold?.resolve();
    this.#hold = undefined;
  }

  /** Resolves once what was written so far is out. */
  drained(): Promise<void> {
    return this.#writing.then(() => {});
  }

  /** Waits while held. */
  async #held(): Promise<void> {
    while (this.#hold !== undefined && !this.#closed) await this.#hold.promise;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#hold?.resolve(); // what waits goes on, and finds the connection closed
    try {
      this.conn.close();
    } catch { /* already closed */ }
    for (const [timer, resolve] of this.#timers) {
      clearTimeout(timer);
      resolve();
    }
    this.#timers.clear();
    this.#wake?.();
    if (this.state !== "end") this.#setState("end");
  }

  /** Writes one message (counted for `dropAfter` and `stallAfter` unless `counted` is false). */
  write(data: string, counted = true): void {
    if (this.#closed || this.#draining) return;
    let stallHere: "freeze" | "half-open" | undefined;
    if (counted) {
      this.#sent++;
      const stall = this.server.options.stallAfter;
      if (
        stall !== undefined && !this.#stalled &&
        (typeof stall.after === "number" ? this.#sent >= stall.after : stall.after.test(data))
      ) {
        this.#stalled = true;
        stallHere = stall.kind;
      }
    }
    const bytes = new TextEncoder().encode(data);
    this.#writing = this.#writing.then(async () => {
      // the message that starts a stall goes out; the ones after it wait
      if (stallHere === undefined) await this.#held();
      for (let at = 0; at < bytes.length && !this.#closed;) {
        at += await this.conn.write(bytes.subarray(at));
      }
      if (stallHere !== undefined) this.server.stall(stallHere);
    }).catch(() => this.close());
    if (!counted) return;
    const limit = this.server.dropAfter;
    if (limit !== undefined && this.#sent >= limit) this.#closeAfterWrites();
  }

  #closeAfterWrites(): void {
    this.#draining = true;
    this.#writing = this.#writing.then(() => this.close());
  }

  #sleep(ms: number): Promise<void> {
    if (ms <= 0 || this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        resolve();
      }, ms);
      this.#timers.set(timer, resolve);
    });
  }

  /** Waits until recorded time `t` (scaled by `speed`) since the last reference point. */
  async #until(t: number): Promise<void> {
    const speed = this.server.speed;
    if (speed > 0) {
      const target = this.#lastWall + ((t - this.#lastT) * 1000) / speed;
      await this.#sleep(target - performance.now());
      this.#lastWall = target;
    }
    this.#lastT = t;
  }

  #setState(state: string): void {
    this.state = state;
    this.server.notify(this);
  }

  async #read(): Promise<void> {
    const parser = new AmiParser({ banner: false });
    const buffer = new Uint8Array(65536);
    for (;;) {
      let n: number | null;
      try {
        n = await this.conn.read(buffer);
      } catch {
        n = null;
      }
      if (n === null) break;
      // read by the kernel all the same; handled once the fault is over (never if half-open)
      await this.#held();
      if (this.#closed) break;
      for (const action of parser.push(buffer.subarray(0, n))) this.#received(action);
    }
    this.close();
  }

  /** The index of the next client-driven step at or after `from`, or -1. */
  #nextClientStep(from: number): number {
    const steps = this.transcript.steps;
    for (let i = Math.max(from, 0); i < steps.length; i++) {
      if (!this.server.isAuto(steps[i]!)) return i;
    }
    return -1;
  }

  #received(action: AmiMessage): void {
    this.server.actions.push(action);
    const name = action.get("Action")?.toLowerCase() ?? "";
    if (name === "queueadd" && action.get("MemberName") !== undefined) {
      this.#memberNames.set(
        `${action.get("Queue")}/${action.get("Interface")}`,
        action.get("MemberName")!,
      );
    }
    // waiting for a client action (its name is the state), not playing, over or gated
    const waitingHere = !["playing", "end", "gated"].includes(this.state);
    const last = this.#queued.at(-1);
    const next = this.#nextClientStep(
      last ? last.step + 1 : waitingHere ? this.#at : this.#at + 1,
    );
    const step = this.transcript.steps[next];
    if (step !== undefined && step.action.get("Action")?.toLowerCase() === name) {
      this.#queued.push({ step: next, action });
      this.#wake?.();
      return;
    }
    void this.#fallback(action, name);
  }

  async #fallback(action: AmiMessage, name: string): Promise<void> {
    await this.#sleep(this.server.slowMs);
    const id = action.actionId ?? null;
    const entry = this.server.library.get(name);
    if (entry === undefined) {
      const text = this.server.unknown.replace(
        /unknown command: [^.]*\./,
        `unknown command: ${action.get("Action") ?? ""}.`,
      );
      this.write(withActionId(text, id));
      return;
    }
    this.write(withActionId(entry.response, id));
    if (entry.complete !== undefined) this.write(withActionId(entry.complete, id));
    if (name === "logoff") this.#closeAfterWrites();
    const memberEvent = MEMBER_EVENTS[name];
    if (memberEvent !== undefined && /^Response: Success/.test(entry.response)) {
      this.write(memberEvent(action, this.#memberNames));
    }
  }

  async #play(): Promise<void> {
    this.#lastWall = performance.now();
    for (const record of this.transcript.opening) {
      if (this.#closed) return;
      await this.#playRecord(record);
      if (record.data.startsWith("Asterisk Call Manager")) {
        for (const garbage of this.server.options.garbage ?? []) this.write(garbage, false);
      }
    }
    const steps = this.transcript.steps;
    const loop = this.server.options.loop;
    for (let index = 0; index < steps.length; index++) {
      const step = steps[index]!;
      if (this.#closed) return;
      if (loop && index === loop[0]) this.#uniqueIds = []; // a new round: new calls
      if (loop && index === loop[1]) index = loop[0] - 1; // after this one, back to the first
      this.#at = step.index;
      const id = step.action.actionId;
      if (this.server.isAuto(step)) {
        await this.#until(step.t);
        if (id !== undefined) this.#autoIds.add(id);
        let dropUnnamedResponse = id === undefined;
        for (const record of step.recvs) {
          if (this.#closed) return;
          if (
            dropUnnamedResponse && /^Response: /.test(record.data) &&
            !/\r\nActionID: /i.test(record.data)
          ) {
            dropUnnamedResponse = false;
            await this.#until(record.t);
            continue;
          }
          await this.#playRecord(record);
        }
        continue;
      }
      const name = step.action.get("Action") ?? "";
      this.position = step.t;
      while (this.#queued.length === 0 && !this.#closed) {
        this.#setState(name);
        await new Promise<void>((resolve) => this.#wake = resolve);
        this.#wake = undefined;
      }
      if (this.#closed) return;
      const action = this.#queued.shift()!.action;
      this.#setState("playing");
      await this.#sleep(this.server.slowMs);
      this.#lastT = step.t;
      this.#lastWall = performance.now();
      if (name.toLowerCase() === "login" && this.server.refuseLogin) {
        await this.#sleep(this.server.refuseLoginDelayMs);
        this.write(withActionId(this.server.refused, action.actionId ?? null));
        this.#closeAfterWrites();
        return;
      }
      if (id !== undefined) this.#ids.set(id, action.actionId ?? null);
      const channelId = action.get("ChannelId");
      const recordedChannelId = step.action.get("ChannelId");
      if (channelId !== undefined && channelId !== recordedChannelId) {
        if (recordedChannelId !== undefined) {
          this.#uniqueIds.push([tokenPattern(recordedChannelId), channelId]);
        } else this.#channelId = channelId;
      }
      for (const record of step.recvs) {
        if (this.#closed) return;
        await this.#playRecord(record);
      }
    }
    this.position = Infinity;
    if (!this.#closed) this.#setState("end");
  }

  async #playRecord(record: RecordLine): Promise<void> {
    this.position = record.t;
    await this.#until(record.t);
    await this.#held();
    const gate = this.server.options.gate;
    if (gate && !gate(record)) {
      // waiting for the other replay: `waiting()` answers "gated" meanwhile
      this.#setState("gated");
      while (!this.#closed && !gate(record)) await this.#sleep(10);
      if (!this.#closed) this.#setState("playing");
    }
    if (this.#closed) return;
    if (record.eof) {
      this.#closeAfterWrites();
      this.#setState("end");
      return;
    }
    let data = record.data;
    const id = /\r\nActionID: ([^\r]*)\r\n/i.exec(data)?.[1] ??
      /^ActionID: ([^\r]*)\r\n/i.exec(data)?.[1];
    if (id !== undefined) {
      if (this.#autoIds.has(id)) return;
      const mapped = this.#ids.get(id);
      if (mapped !== undefined) data = withActionId(data, mapped);
    }
    if (this.#channelId !== undefined && data.startsWith("Event: Newchannel\r\n")) {
      const event = message(data);
      const uniqueId = event.get("Uniqueid");
      if (uniqueId !== undefined && uniqueId === event.get("Linkedid")) {
        this.#uniqueIds.push([tokenPattern(uniqueId), this.#channelId]);
        this.#channelId = undefined;
      }
    }
    for (const [pattern, replacement] of this.#uniqueIds) data = data.replace(pattern, replacement);
    for (const [pattern, replacement] of this.server.options.alsoMap?.() ?? []) {
      data = data.replace(pattern, replacement);
    }
    const { flood, bloat } = this.server.options;
    for (let i = 0; i < (flood ?? 0); i++) this.write(unusedEvent(i), false);
    if (bloat !== undefined && bloat.match.test(data)) {
      data = `${data.slice(0, -2)}ChanVariable(SVC_BLOB): ${"x".repeat(bloat.bytes)}\r\n\r\n`;
    }
    this.write(data);
    if (flood) await this.drained(); // as fast as the client reads, holding little
  }
}

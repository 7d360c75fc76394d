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
  "pjsipnotify",
]);
SVC_DRIVEN.delete("reload");

interface RecordLine {
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

/** A boundary-safe pattern for a recorded Uniqueid (`1.1` must not hit `1.10`). */
function tokenPattern(token: string): RegExp {
  const escaped = token.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`(?<![\\w.-])${escaped}(?![\\w-]|\\.\\d)`, "g");
}

/** Starts a replay server on 127.0.0.1 on a random port. */
export async function startAmiReplay(options: AmiReplayOptions): Promise<AmiReplay> {
  libraryPromise ??= fallbackLibrary();
  const transcripts = await Promise.all(
    options.connections.map(async (name) => toTranscript(await load(name))),
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
  #waiters: ((state: string) => void)[] = [];

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
  /** A client ChannelId waiting for the recorded Newchannel of the originated channel. */
  #channelId: string | undefined;
  /** Index of the step being played (or waited for). */
  #at = -1;
  /** A client action queued for the step of that index. */
  #queued: { step: number; action: AmiMessage } | undefined;
  #wake: (() => void) | undefined;
  #lastT = 0;
  #lastWall = performance.now();

  constructor(
    readonly server: AmiReplay,
    readonly conn: Deno.TcpConn,
    readonly transcript: Transcript,
  ) {
    // done once reading, playing and the last write are over (no op left for the sanitizers)
    this.done = Promise.all([this.#read(), this.#play()]).then(() => this.#writing).then(() => {});
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
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

  /** Writes one message (counted for `dropAfter` unless `counted` is false). */
  write(data: string, counted = true): void {
    if (this.#closed || this.#draining) return;
    const bytes = new TextEncoder().encode(data);
    this.#writing = this.#writing.then(async () => {
      for (let at = 0; at < bytes.length && !this.#closed;) {
        at += await this.conn.write(bytes.subarray(at));
      }
    }).catch(() => this.close());
    if (!counted) return;
    this.#sent++;
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
    const waitingHere = this.state !== "playing" && this.state !== "end";
    const next = this.#nextClientStep(waitingHere ? this.#at : this.#at + 1);
    const step = this.transcript.steps[next];
    if (
      step !== undefined && this.#queued === undefined &&
      step.action.get("Action")?.toLowerCase() === name
    ) {
      this.#queued = { step: next, action };
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
      while (this.#queued === undefined && !this.#closed) {
        this.#setState(name);
        await new Promise<void>((resolve) => this.#wake = resolve);
        this.#wake = undefined;
      }
      if (this.#closed) return;
      const action = this.#queued!.action;
      this.#queued = undefined;
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
    if (!this.#closed) this.#setState("end");
  }

  async #playRecord(record: RecordLine): Promise<void> {
    await this.#until(record.t);
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
    this.write(data);
  }
}

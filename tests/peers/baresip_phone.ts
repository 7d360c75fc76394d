/**
 * Headless SIP test phones: baresip (Debian's `baresip-core`, 1.0.0) registered on a test PBX
 * over 127.0.0.1, with no sound card: it sends an endless sine (the `ausine` module), plays what it
 * hears into a bridge nobody reads (`aubridge`) and can record each call's audio (the `sndfile`
 * module). Each phone is driven through baresip's `ctrl_tcp` socket (`PhoneControl`): accept,
 * hang up, dial, hold, DTMF…, and its call events (`CALL_INCOMING`, `CALL_ESTABLISHED`,
 * `CALL_CLOSED`, `REGISTER_OK`…). `findBaresip()` tells whether baresip is installed.
 */
import { dirname } from "node:path";
import { sleep, until } from "../e2e/svc_http.ts";
import { isFile, onPath, type PeerProcess, reservePorts, spawnPeer } from "./peer_process.ts";

/** The baresip modules a phone loads (`<modules>/<name>.so`). */
const MODULES = ["g711", "aubridge", "ausine", "uuid", "account", "menu", "ctrl_tcp", "sndfile"];

/** Where baresip is: its binary and its modules' directory. */
export interface Baresip {
  binary: string;
  modules: string;
}

/**
 * The `baresip` on PATH and its modules (`<prefix>/lib/baresip/modules`, all those a phone
 * loads), or null when either is missing.
 */
export function findBaresip(): Baresip | null {
  const binary = onPath("baresip");
  if (!binary) return null;
  const modules = `${dirname(dirname(Deno.realPathSync(binary)))}/lib/baresip/modules`;
  return MODULES.every((name) => isFile(`${modules}/${name}.so`)) ? { binary, modules } : null;
}

/** How a phone answers an incoming call: at once, when told (`accept`), or early media only. */
export type AnswerMode = "auto" | "manual" | "early";

export interface PhoneOptions {
  /** The PBX it registers on (UDP, 127.0.0.1). */
  pbx: { sipPort: number };
  /** Its SIP user (the PJSIP endpoint and digest user) and password. */
  user: string;
  password: string;
  /** `auto` unless told; changed at run time with `ctrl.answerMode()`. */
  answerMode?: AnswerMode;
  /**
   * Records each call: `<recordingsDir>/dump-<time>-dec.wav` (what it heard, 8 kHz mono) and
   * `-enc.wav` (what it sent), `<time>` to the second the call started (a call of the same second
   * writes over the other's).
   */
  record?: boolean;
  /** The frequency of the tone it sends, in Hz; 440 unless told. */
  toneHz?: number;
  /** Its config dir; a new temporary one, removed by `stop()`, unless told. */
  dir?: string;
  /** baresip's RTP port range; 17000–17999 unless told (phones can share it). */
  rtpPorts?: [number, number];
  /** Where baresip is; `findBaresip()` unless told. */
  baresip?: Baresip;
}

export interface Phone {
  user: string;
  /** Its config dir (`baresip -f`). */
  dir: string;
  /** Its SIP port on 127.0.0.1 (UDP and TCP; baresip also takes the next one, for TLS). */
  sipPort: number;
  /** Its control socket's port on 127.0.0.1. */
  ctrlPort: number;
  ctrl: PhoneControl;
  /** Where its calls are recorded, with `record`; else null. */
  recordingsDir: string | null;
  /** The recordings so far (full paths, oldest first); none without `record`. */
  recordings(): Promise<string[]>;
  process: PeerProcess;
  /** Closes the control socket and stops baresip (it un-registers); removes a temporary dir. */
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The `config` and `accounts` files of a phone, by name. */
function phoneConfig(
  options: {
    user: string;
    password: string;
    answerMode: AnswerMode;
    pbxSipPort: number;
    sipPort: number;
    ctrlPort: number;
    toneHz: number;
    rtpPorts: [number, number];
    modules: string;
    recordingsDir: string | null;
  },
): Record<string, string> {
  const { user, sipPort, recordingsDir } = options;
  const recording: [string, string][] = recordingsDir
    ? [["module", "sndfile.so"], ["snd_path", recordingsDir]]
    : [];
  const settings: [string, string | number][] = [
    ["poll_method", "epoll"],
    ["sip_listen", `127.0.0.1:${sipPort}`],
    // an address: baresip 1.0.0 cannot bind an interface by its name
    ["net_interface", "127.0.0.1"],
    ["call_local_timeout", 120],
    ["call_max_calls", 4],
    // nobody reads these bridges: no sound card needed
    ["audio_player", `aubridge,${user}-${sipPort}-heard`],
    ["audio_alert", `aubridge,${user}-${sipPort}-alert`],
    ["audio_source", `ausine,${options.toneHz}`],
    ["ausrc_srate", 48000],
    ["ausrc_channels", 2],
    ["audio_level", "no"],
    ["rtp_ports", options.rtpPorts.join("-")],
    ["rtcp_mux", "no"],
    ["jitter_buffer_delay", "5-10"],
    ["module_path", options.modules],
    ["module", "g711.so"],
    ["module", "aubridge.so"],
    ["module", "ausine.so"],
    ...recording,
    ["module_tmp", "uuid.so"],
    ["module_tmp", "account.so"],
    // menu gives the commands (accept, hangup, dial…), ctrl_tcp the socket that takes them
    ["module_app", "menu.so"],
    ["module_app", "ctrl_tcp.so"],
    ["ctrl_tcp_listen", `127.0.0.1:${options.ctrlPort}`],
  ];
  const account = [
    `<sip:${user}@127.0.0.1:${options.pbxSipPort}>`,
    `auth_pass=${options.password}`,
    `answermode=${options.answerMode}`,
    "audio_codecs=pcmu,pcma",
    "regint=600",
    "mwi=no",
    "pubint=0",
  ];
  return {
    config: settings.map(([key, value]) => `${key.padEnd(24)}${value}`).join("\n") + "\n",
    accounts: account.join(";") + "\n",
    contacts: "",
  };
}

/**
 * Starts a test phone registering as `user` on `pbx`, and resolves once its control socket
 * answers (it may still be registering: the PBX tells when it is, e.g. `pbx.registered([user])`).
 *
 * @example
 * await using alice = await startPhone({ pbx, user: "alice", password: "alice-sip" });
 * const since = alice.ctrl.mark();
 * await alice.ctrl.dial("1002");
 * await alice.ctrl.waitEvent("CALL_ESTABLISHED", since);
 * await alice.ctrl.hangup();
 */
export async function startPhone(options: PhoneOptions): Promise<Phone> {
  const baresip = options.baresip ?? findBaresip();
  if (!baresip) throw new Error("no baresip with its modules: apt-get install baresip-core");
  const { user } = options;
  const temporary = options.dir === undefined;
  const dir = options.dir ?? await Deno.makeTempDir({ prefix: `svc-phone-${user}-` });
  const recordingsDir = options.record ? `${dir}/recordings` : null;
  await Deno.mkdir(recordingsDir ?? dir, { recursive: true });
  // a port reserved here may be taken before baresip binds it (another test's process, a client's
  // ephemeral port): baresip then exits "Address already in use", and starts again on others
  for (let attempt = 1;; attempt++) {
    const sipPort = reservePorts(2);
    const ctrlPort = reservePorts();
    const files = phoneConfig({
      user,
      password: options.password,
      answerMode: options.answerMode ?? "auto",
      pbxSipPort: options.pbx.sipPort,
      sipPort,
      ctrlPort,
      toneHz: options.toneHz ?? 440,
      rtpPorts: options.rtpPorts ?? [17000, 17999],
      modules: baresip.modules,
      recordingsDir,
    });
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    // its own dir as working directory: baresip 1.0.0 may dump core when stopped after a call
    const process = spawnPeer(`${user}'s phone`, baresip.binary, ["-f", dir], { cwd: dir });
    try {
      const ctrl = await PhoneControl.connect(user, ctrlPort, process);
      return phoneOf({ user, dir, sipPort, ctrlPort, ctrl, recordingsDir, process, temporary });
    } catch (error) {
      await process.stop();
      const taken = process.output.some((line) => line.includes("Address already in use"));
      if (taken && attempt < 3) continue;
      if (temporary) await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw error;
    }
  }
}

/** The {@link Phone} of a started baresip. */
function phoneOf(
  { user, dir, sipPort, ctrlPort, ctrl, recordingsDir, process, temporary }:
    & Pick<Phone, "user" | "dir" | "sipPort" | "ctrlPort" | "ctrl" | "recordingsDir" | "process">
    & { temporary: boolean },
): Phone {
  const stop = async () => {
    await ctrl.close();
    await process.stop();
    if (temporary) await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  const phone: Phone = {
    user,
    dir,
    sipPort,
    ctrlPort,
    ctrl,
    recordingsDir,
    async recordings() {
      if (!recordingsDir) return [];
      const names: string[] = [];
      for await (const entry of Deno.readDir(recordingsDir)) {
        if (entry.name.endsWith(".wav")) names.push(entry.name);
      }
      return names.sort().map((name) => `${recordingsDir}/${name}`);
    },
    process,
    stop,
    [Symbol.asyncDispose]: stop,
  };
  return phone;
}

/** An event of a phone's control socket (`{"event":true,"type":"CALL_INCOMING",…}`). */
export interface PhoneEvent {
  type: string;
  [key: string]: unknown;
}

/** baresip's answer to a command. */
export interface CommandAnswer {
  ok: boolean;
  data?: string;
}

/**
 * A client of baresip's `ctrl_tcp` socket: netstring-framed JSON (`45:{"command":"hangup",
 * "params":"","token":"t1"},`) commands, answered by `{"response":true,"ok":…,"token":"t1"}`; the
 * same socket streams the phone's events, kept in `events`.
 */
export class PhoneControl {
  readonly events: PhoneEvent[] = [];
  readonly #answers = new Map<string, (answer: CommandAnswer) => void>();
  #serial = 0;
  readonly #reading: Promise<void>;

  private constructor(readonly name: string, readonly conn: Deno.TcpConn) {
    this.#reading = this.#read();
  }

  /**
   * Connects to a phone's control port, retrying while baresip starts (15 s at most; stops
   * retrying if `process` exits).
   */
  static async connect(name: string, port: number, process?: PeerProcess): Promise<PhoneControl> {
    const end = performance.now() + 15_000;
    for (;;) {
      try {
        return new PhoneControl(name, await Deno.connect({ hostname: "127.0.0.1", port }));
      } catch (error) {
        if (process?.exited) {
          throw new Error(`${name} exited:\n${process.output.slice(-20).join("\n")}`);
        }
        if (performance.now() > end) throw new Error(`${name}'s control socket: ${error}`);
        await sleep(100);
      }
    }
  }

  /** Sends a command and answers baresip's response (fails after 5 s without one). */
  async command(command: string, params = ""): Promise<CommandAnswer> {
    const token = `${this.name}-${++this.#serial}`;
    const body = new TextEncoder().encode(JSON.stringify({ command, params, token }));
    const head = new TextEncoder().encode(`${body.length}:`);
    const frame = new Uint8Array(head.length + body.length + 1);
    frame.set(head);
    frame.set(body, head.length);
    frame[frame.length - 1] = 0x2c; // ','
    const answer = new Promise<CommandAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#answers.delete(token);
        reject(new Error(`${this.name}'s phone did not answer ${command}`));
      }, 5_000);
      this.#answers.set(token, (value) => {
        clearTimeout(timer);
        resolve(value);
      });
    });
    for (let done = 0; done < frame.length;) done += await this.conn.write(frame.subarray(done));
    return await answer;
  }

  /** Sends a command that must succeed; answers its data. */
  async do(command: string, params = ""): Promise<string> {
    const answer = await this.command(command, params);
    if (!answer.ok) throw new Error(`${this.name}: ${command} ${params} failed: ${answer.data}`);
    return answer.data ?? "";
  }

  /** Answers the ringing call. */
  accept = () => this.do("accept");
  /** Hangs up the current call; while it rings, rejects it (486, Asterisk's `BUSY`). */
  hangup = () => this.do("hangup");
  /** Calls `target`: a number of the PBX, or a full `sip:` URI. */
  dial = (target: string) => this.do("dial", target);
  /** How it answers the next calls. */
  answerMode = (mode: AnswerMode) => this.do("answermode", mode);
  /** Puts the current call on hold (re-INVITE `sendonly`). */
  hold = () => this.do("hold");
  /** Takes the current call off hold. */
  resume = () => this.do("resume");
  /** Sends `digits` as DTMF (RFC 2833), one after the other. */
  sendDtmf = async (digits: string) => {
    for (const digit of digits) await this.do("sndcode", digit);
  };
  /** baresip's list of its calls, as text. */
  listCalls = () => this.do("listcalls");

  /** The number of events so far: `since` for `waitEvent` and `saw`. */
  mark(): number {
    return this.events.length;
  }

  /** The first event of `type` since `since`, waiting up to `ms` for it. */
  async waitEvent(type: string, since: number, ms = 20_000): Promise<PhoneEvent> {
    await until(() => this.saw(type, since), ms, `${this.name}'s phone: ${type}`);
    return this.events.slice(since).find((event) => event.type === type)!;
  }

  /** Whether an event of `type` came since `since`. */
  saw(type: string, since: number): boolean {
    return this.events.slice(since).some((event) => event.type === type);
  }

  async close(): Promise<void> {
    try {
      this.conn.close();
    } catch {
      // closed already
    }
    await this.#reading;
  }

  async #read(): Promise<void> {
    let buffer = new Uint8Array(0);
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.conn.readable) {
        const joined = new Uint8Array(buffer.length + chunk.length);
        joined.set(buffer);
        joined.set(chunk, buffer.length);
        buffer = joined;
        for (;;) {
          const colon = buffer.indexOf(0x3a); // ':'
          if (colon < 0) break;
          const length = Number(decoder.decode(buffer.subarray(0, colon)));
          if (buffer.length < colon + 1 + length + 1) break;
          this.#take(decoder.decode(buffer.subarray(colon + 1, colon + 1 + length)));
          buffer = buffer.slice(colon + 1 + length + 1); // and the trailing ','
        }
      }
    } catch {
      // closed by `close()`
    }
  }

  #take(body: string): void {
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(body);
    } catch {
      return;
    }
    if (message.event) this.events.push(message as PhoneEvent);
    else if (message.response) {
      const token = String(message.token ?? "");
      this.#answers.get(token)?.({
        ok: message.ok === true,
        data: message.data === undefined ? undefined : String(message.data),
      });
      this.#answers.delete(token);
    }
  }
}

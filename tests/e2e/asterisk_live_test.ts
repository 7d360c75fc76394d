/**
 * End-to-end against a REAL Asterisk 22 and real SIP phones (Debian's `baresip-core`), when one is
 * installed: `SVC_TEST_ASTERISK` names its prefix (`<prefix>/sbin/asterisk`), else an `asterisk`
 * on PATH, else `/opt/asterisk`. Without one the test is skipped with a one-line notice; no
 * Asterisk can be installed from the registries the project reaches, so CI skips it.
 *
 * The PBX comes from `shared/peers/asterisk/start.sh` (config written first, then edited: its users
 * and queue are svc's now, through `#tryinclude` of the files svc generates); three phones from
 * `phone.sh` (alice, bob, carol, answering by themselves unless told). The real svc server drives
 * it through the unchanged routes, and every scenario is checked at svc's `eventUrl` receiver:
 * dial user and number, DND, the three forwards, an agent and its queue (to and from queue),
 * the history, the contacts list view's live status, and a PBX restart (back within 5 s, the
 * agent still logged in, a new dial working).
 */
import assert from "node:assert/strict";
import { dirname } from "node:path";
import { ensureDebianPackages } from "../peers/debian.ts";
import { freePort, readLines } from "../peers/process.ts";
import { type RunningServer, startServer } from "./server.ts";
import {
  call,
  eventReceiver,
  expectStatus,
  login,
  type Person,
  phoneUser,
  type Receiver,
  sleep,
  until,
  V2,
} from "./svc_http.ts";

const PEERS = new URL("../../../shared/peers/asterisk/", import.meta.url).pathname;
const ADMIN = { login: "admin", password: "asterisk-live-admin" };

// ---- where Asterisk is ------------------------------------------------------------------------

const isFile = (path: string) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
};

/** An executable `name` in a PATH directory, or null. */
function onPath(name: string): string | null {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (!dir) continue;
    const path = `${dir}/${name}`;
    try {
      const info = Deno.statSync(path);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return path;
    } catch {
      // not there
    }
  }
  return null;
}

/**
 * Asterisk's prefix: `SVC_TEST_ASTERISK` (a wrong one fails the test, it does not skip it), else
 * that of the `asterisk` on PATH (`<prefix>/sbin/asterisk`), else `/opt/asterisk` if it has one.
 */
function asteriskPrefix(): string | null {
  const given = Deno.env.get("SVC_TEST_ASTERISK");
  if (given) return given.replace(/\/+$/, "");
  const binary = onPath("asterisk");
  if (binary) return dirname(dirname(Deno.realPathSync(binary)));
  return isFile("/opt/asterisk/sbin/asterisk") ? "/opt/asterisk" : null;
}

const PREFIX = asteriskPrefix();
if (PREFIX === null) {
  console.log("asterisk_live_test: no Asterisk (set SVC_TEST_ASTERISK to its prefix): skipped");
}

// ---- small helpers ----------------------------------------------------------------------------

/** A run of `count` TCP ports free on 127.0.0.1 a moment ago (baresip uses SIP port + 1 too). */
function freePorts(count: number): number {
  for (;;) {
    const base = freePort();
    const held: Deno.Listener[] = [];
    try {
      for (let port = base + 1; port < base + count; port++) {
        held.push(Deno.listen({ hostname: "127.0.0.1", port }));
      }
      return base;
    } catch {
      // one is taken: another run
    } finally {
      for (const listener of held) listener.close();
    }
  }
}

/**
 * The ports of a run, all different: Asterisk's SIP (UDP) and AMI, the three phones' SIP ports
 * (2 apart: baresip also opens the next one) and their control ports.
 */
function allocatePorts() {
  const taken = new Set<number>();
  const pick = (count: number): number => {
    for (;;) {
      const base = freePorts(count);
      const run = Array.from({ length: count }, (_, i) => base + i);
      if (run.some((port) => taken.has(port))) continue;
      for (const port of run) taken.add(port);
      return base;
    }
  };
  return {
    sip: pick(1),
    ami: pick(1),
    /** alice's; bob's and carol's are 2 and 4 above. */
    phones: pick(6),
    controls: [pick(1), pick(1), pick(1)],
  };
}

/** A process of ours: its last output lines, and a stop that always reaps it. */
interface Child {
  name: string;
  pid: number;
  output: string[];
  status: Promise<Deno.CommandStatus>;
  /**
   * SIGTERM, a second one after 3 s (baresip then stops without waiting for its un-registration
   * to be answered), SIGKILL after 10 s; resolves once it exited and its output was read.
   */
  stop(): Promise<void>;
}

/**
 * Starts `args` in `cwd` (the run's work directory: baresip 1.0.0 may dump core when stopped after
 * a call, and the core file must not land in the repository).
 */
function spawn(name: string, cwd: string, args: string[], env: Record<string, string> = {}): Child {
  const child = new Deno.Command(args[0]!, {
    args: args.slice(1),
    cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output: string[] = [];
  const keep = (line: string) => {
    output.push(line);
    if (output.length > 300) output.shift();
  };
  // both streams read to their end: a full pipe would block the process
  const reading = Promise.all([readLines(child.stdout, keep), readLines(child.stderr, keep)]);
  let exited = false;
  const status = child.status.finally(() => (exited = true));
  const signal = (sig: Deno.Signal) => {
    if (exited) return;
    try {
      child.kill(sig);
    } catch {
      // gone meanwhile
    }
  };
  let stopping: Promise<void> | undefined;
  return {
    name,
    pid: child.pid,
    output,
    status,
    stop() {
      stopping ??= (async () => {
        signal("SIGTERM");
        const again = setTimeout(() => signal("SIGTERM"), 3_000);
        const stubborn = setTimeout(() => signal("SIGKILL"), 10_000);
        try {
          await status;
          await reading;
        } finally {
          clearTimeout(again);
          clearTimeout(stubborn);
        }
      })();
      return stopping;
    },
  };
}

/** Runs a command to its end and answers its output; a failure throws with it. */
async function run(args: string[], env: Record<string, string> = {}): Promise<string> {
  const output = await new Deno.Command(args[0]!, {
    args: args.slice(1),
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
  if (!output.success) throw new Error(`${args.join(" ")} failed (${output.code}):\n${text}`);
  return text;
}

/**
 * Waits until each user of `expected` got as many phone events since `since` as listed, then
 * asserts them (event types, in order, per user), that the users of `none` got none, and that all
 * share one linkedId; answers it.
 */
async function expectPhoneEvents(
  receiver: Receiver,
  since: number,
  expected: Record<string, string[]>,
  none: string[] = [],
): Promise<string> {
  const users = Object.keys(expected);
  await until(
    () => users.every((user) => receiver.phone(since, user).length >= expected[user]!.length),
    20_000,
    `phone events ${JSON.stringify(expected)}; got ${JSON.stringify(receiver.phone(since))}`,
  );
  for (const user of users) {
    const types = receiver.phone(since, user).map((event) => event.eventType);
    assert.deepEqual(types, expected[user], `${user}'s phone events`);
  }
  for (const user of none) {
    assert.deepEqual(receiver.phone(since, user), [], `no phone event for ${user}`);
  }
  const linkedIds = new Set(receiver.phone(since).map((event) => event.linkedId));
  assert.equal(linkedIds.size, 1, `one call: ${[...linkedIds]}`);
  return [...linkedIds][0]!;
}

/** Waits until agent `number` went through `names` since `since` (and nothing else). */
async function expectAgentStates(
  receiver: Receiver,
  since: number,
  number: string,
  names: string[],
): Promise<void> {
  await until(
    () => receiver.agent(since, number).length >= names.length,
    20_000,
    `agent ${number}: ${names.join(", ")}; got ${receiver.agent(since, number).join(", ")}`,
  );
  assert.deepEqual(receiver.agent(since, number), names, `agent ${number}'s states`);
}

// ---- a baresip phone's control socket (ctrl_tcp: netstring-framed JSON) ----------------------

interface PhoneEvent {
  type: string;
  [key: string]: unknown;
}

/** Commands to a test phone (`accept`, `hangup`, `answermode manual`…) and its call events. */
class PhoneControl {
  readonly events: PhoneEvent[] = [];
  readonly #answers = new Map<string, (answer: { ok: boolean; data?: string }) => void>();
  #serial = 0;
  readonly #reading: Promise<void>;

  private constructor(readonly name: string, readonly conn: Deno.TcpConn) {
    this.#reading = this.#read();
  }

  /** Connects to the phone's control port, retrying while baresip starts (15 s at most). */
  static async connect(name: string, port: number): Promise<PhoneControl> {
    const end = performance.now() + 15_000;
    for (;;) {
      try {
        return new PhoneControl(name, await Deno.connect({ hostname: "127.0.0.1", port }));
      } catch (error) {
        if (performance.now() > end) throw new Error(`${name}'s phone control: ${error}`);
        await sleep(100);
      }
    }
  }

  /** Sends a command and answers baresip's response (fails after 5 s without one). */
  async command(command: string, params = ""): Promise<{ ok: boolean; data?: string }> {
    const token = `${this.name}-${++this.#serial}`;
    const body = new TextEncoder().encode(JSON.stringify({ command, params, token }));
    const frame = new Uint8Array([
      ...new TextEncoder().encode(`${body.length}:`),
      ...body,
      ...new TextEncoder().encode(","),
    ]);
    const answer = new Promise<{ ok: boolean; data?: string }>((resolve, reject) => {
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

  /** Sends a command that must succeed. */
  async do(command: string, params = ""): Promise<void> {
    const answer = await this.command(command, params);
    assert.ok(answer.ok, `${this.name}: ${command} ${params}: ${answer.data ?? ""}`);
  }

  mark(): number {
    return this.events.length;
  }

  /** The first event of `type` since `since`, waiting up to `ms` for it. */
  async waitEvent(type: string, since: number, ms = 20_000): Promise<PhoneEvent> {
    await until(
      () => this.events.slice(since).some((e) => e.type === type),
      ms,
      `${this.name}'s phone: ${type}`,
    );
    return this.events.slice(since).find((e) => e.type === type)!;
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
    const chunk = new Uint8Array(65536);
    for (;;) {
      let n: number | null;
      try {
        n = await this.conn.read(chunk);
      } catch {
        n = null;
      }
      if (n === null) return;
      const joined = new Uint8Array(buffer.length + n);
      joined.set(buffer);
      joined.set(chunk.subarray(0, n), buffer.length);
      buffer = joined;
      for (;;) {
        const colon = buffer.indexOf(0x3a); // ':'
        if (colon < 0) break;
        const length = Number(new TextDecoder().decode(buffer.subarray(0, colon)));
        if (buffer.length < colon + 1 + length + 1) break;
        const body = new TextDecoder().decode(buffer.subarray(colon + 1, colon + 1 + length));
        buffer = buffer.slice(colon + 1 + length + 1); // the trailing ','
        let message: Record<string, unknown>;
        try {
          message = JSON.parse(body);
        } catch {
          continue;
        }
        if (message.event) this.events.push(message as PhoneEvent);
        else if (message.response) {
          const token = String(message.token ?? "");
          this.#answers.get(token)?.({ ok: message.ok === true, data: String(message.data) });
          this.#answers.delete(token);
        }
      }
    }
  }
}

// ---- the PBX ----------------------------------------------------------------------------------

/** Drops the sections named in `names` (`[alice]`, `[alice](endpoint-tpl)`…) from a config. */
function withoutSections(text: string, names: string[]): string {
  let dropping = false;
  return text.split("\n").filter((line) => {
    const section = /^\[([^\]]+)\]/.exec(line);
    if (section) dropping = names.includes(section[1]!);
    return !dropping;
  }).join("\n");
}

/** Drops the dialplan entries (`exten => X,…` and the ` same =>` lines after it) of `extens`. */
function withoutExtensions(text: string, extens: string[]): string {
  let dropping = false;
  return text.split("\n").filter((line) => {
    const exten = /^exten\s*=>\s*([^,]+),/.exec(line);
    if (exten) dropping = extens.includes(exten[1]!.trim());
    else if (!/^\s+same\s*=>/.test(line)) dropping = false;
    return !dropping;
  }).join("\n");
}

async function editConfig(path: string, edit: (text: string) => string): Promise<void> {
  await Deno.writeTextFile(path, edit(await Deno.readTextFile(path)));
}

const tryInclude = (dir: string, file: string) => (text: string) =>
  `${text.trimEnd()}\n\n; svc's generated configuration\n#tryinclude ${dir}/${file}\n`;

interface Pbx {
  workDir: string;
  sipPort: number;
  amiPort: number;
  /** The running Asterisk (start.sh execs it: this is Asterisk's PID). */
  process: Child | null;
  start(): void;
  stop(): Promise<void>;
  /** An Asterisk CLI command (`asterisk -rx`): its output. */
  cli(command: string): Promise<string>;
}

function pbx(prefix: string, workDir: string, sipPort: number, amiPort: number): Pbx {
  const etc = `${workDir}/etc`;
  const env = { ASTERISK_PREFIX: prefix, RTP_START: "16000", RTP_END: "16999" };
  const self: Pbx = {
    workDir,
    sipPort,
    amiPort,
    process: null,
    start() {
      self.process = spawn("asterisk", workDir, [
        "bash",
        `${PEERS}start.sh`,
        workDir,
        String(sipPort),
        String(amiPort),
        "0",
      ], { ...env, ASTERISK_KEEP_CONFIG: "1" });
    },
    async stop() {
      await self.process?.stop();
      self.process = null;
    },
    async cli(command: string) {
      const output = await new Deno.Command(`${prefix}/sbin/asterisk`, {
        args: ["-C", `${etc}/asterisk.conf`, "-rx", command],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      return new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    },
  };
  return self;
}

/**
 * Writes start.sh's configuration into `workDir`, then hands users and queues over to svc: its
 * alice, bob, 1001–1003 and queue support go, and each of pjsip.conf, extensions.conf and
 * queues.conf ends with a `#tryinclude` of svc's file in `configDir`.
 */
async function writePbxConfig(pbx: Pbx, prefix: string, configDir: string): Promise<void> {
  await run([
    "bash",
    `${PEERS}start.sh`,
    pbx.workDir,
    String(pbx.sipPort),
    String(pbx.amiPort),
    "0",
  ], { ASTERISK_PREFIX: prefix, ASTERISK_CONFIG_ONLY: "1" });
  const etc = `${pbx.workDir}/etc`;
  await editConfig(
    `${etc}/pjsip.conf`,
    (text) => tryInclude(configDir, "pjsip_svc.conf")(withoutSections(text, ["alice", "bob"])),
  );
  await editConfig(
    `${etc}/extensions.conf`,
    (text) =>
      tryInclude(configDir, "extensions_svc.conf")(
        withoutExtensions(text, ["1001", "1002", "3001"]),
      ),
  );
  await editConfig(
    `${etc}/queues.conf`,
    (text) => tryInclude(configDir, "queues_svc.conf")(withoutSections(text, ["support"])),
  );
  const pjsip = await Deno.readTextFile(`${etc}/pjsip.conf`);
  assert.match(pjsip, /^\[transport-udp\]$/m, "the transport stays");
  assert.doesNotMatch(pjsip, /^\[(alice|bob)\]/m);
  assert.doesNotMatch(await Deno.readTextFile(`${etc}/extensions.conf`), /^exten => 100[12],/m);
  const manager = await Deno.readTextFile(`${etc}/manager.conf`);
  assert.match(manager, /^\[admin\]$/m);
  assert.match(manager, /^read = all$/m);
  assert.match(manager, /^write = all$/m);
}

/** True once Asterisk's AMI accepts the admin's login (a probe of our own, closed at once). */
async function amiAcceptsLogin(port: number): Promise<boolean> {
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: "127.0.0.1", port });
  } catch {
    return false;
  }
  try {
    const decoder = new TextDecoder();
    let text = "";
    const buffer = new Uint8Array(4096);
    const login = "Action: Login\r\nActionID: probe\r\nUsername: admin\r\nSecret: admin\r\n" +
      "Events: off\r\n\r\n";
    let sent = false;
    const deadline = setTimeout(() => conn.close(), 3_000);
    try {
      for (;;) {
        const n = await conn.read(buffer);
        if (n === null) return false;
        text += decoder.decode(buffer.subarray(0, n));
        if (!sent && text.includes("\r\n")) {
          await conn.write(new TextEncoder().encode(login));
          sent = true;
        }
        if (/ActionID: probe/.test(text) && text.includes("\r\n\r\n")) {
          return /Response: Success/.test(text);
        }
      }
    } finally {
      clearTimeout(deadline);
    }
  } catch {
    return false;
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the deadline or by Asterisk
    }
  }
}

// ---- the test ---------------------------------------------------------------------------------

/** The agent states of one queue call answered and ended. */
const QUEUE_CALL = ["AgentRinging", "AgentOnCall", "AgentOnWrapup", "AgentReady"];

const ALICE: Person = {
  username: "alice",
  password: "alice-pw",
  exten: "1001",
  secret: "alice-pw-sip",
};
// bob rings 8 s when nobody answers (the no-answer forward), not 30
const BOB: Person = {
  username: "bob",
  password: "bob-pw",
  exten: "1002",
  secret: "bob-pw-sip",
  fields: { ring_seconds: 8 },
};
const CAROL: Person = {
  username: "carol",
  password: "carol-pw",
  exten: "1003",
  secret: "carol-pw-sip",
};

Deno.test({
  name: "on a real Asterisk with three SIP phones: the whole scenario through the unchanged routes",
  ignore: PREFIX === null,
  // child processes' pipes and the phones' sockets close asynchronously; everything is reaped
  // in `finally`, so the sanitizers would only report those closings
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const prefix = PREFIX!;
    /** A step that must pass for the next ones to make sense. */
    const step = async (name: string, fn: () => Promise<void>) => {
      if (!await t.step(name, fn)) throw new Error(`step failed: ${name}`);
    };
    assert.ok(
      isFile(`${prefix}/sbin/asterisk`),
      `no ${prefix}/sbin/asterisk: set SVC_TEST_ASTERISK to Asterisk's prefix`,
    );
    await ensureDebianPackages(["baresip-core"], "baresip phones for the live Asterisk test");

    // short: Asterisk's control socket lives under it (< 90 characters)
    const workDir = await Deno.makeTempDir({ dir: "/tmp", prefix: "svc-ast-" });
    const configDir = `${workDir}/svc`;
    const ports = allocatePorts();
    const asterisk = pbx(prefix, workDir, ports.sip, ports.ami);
    const receiver = eventReceiver();
    const phones: Child[] = [];
    const controls: Record<string, PhoneControl> = {};
    let server: RunningServer | undefined;
    try {
      await writePbxConfig(asterisk, prefix, configDir);
      // svc first: it writes its three files at start-up, Asterisk unreachable or not, so that
      // Asterisk boots with every #tryinclude present (as the operator's would)
      server = await startServer({
        SVC_KV: `${workDir}/svc.kv`,
        SVC_ADMIN_LOGIN: ADMIN.login,
        SVC_ADMIN_PASSWORD: ADMIN.password,
        SVC_EVENT_URL: receiver.url,
        SVC_PLATFORM: "asterisk",
        SVC_AMI_PORT: String(asterisk.amiPort),
        SVC_AMI_USERNAME: "admin",
        SVC_AMI_SECRET: "admin",
        SVC_ASTERISK_CONFIG_DIR: configDir,
      });
      const svc = server;
      const unreachable = await call(svc, "GET", "/ready");
      assert.deepEqual([unreachable.status, unreachable.body], [503, {
        status: "unavailable",
        platform: "unreachable",
      }]);
      await until(
        async () => {
          const texts = await Promise.all(
            ["pjsip_svc.conf", "extensions_svc.conf", "queues_svc.conf"].map((file) =>
              Deno.readTextFile(`${configDir}/${file}`).catch(() => "")
            ),
          );
          return texts.every((text) => text.startsWith("; "));
        },
        5_000,
        "svc's three files written before Asterisk starts",
      );

      asterisk.start();
      await until(
        async () => /fully booted/i.test(await asterisk.cli("core waitfullybooted")),
        60_000,
        "Asterisk fully booted",
      );
      const ready = async () => (await call(svc, "GET", "/ready")).status === 200;
      await until(ready, 10_000, "svc connected to Asterisk (/ready 200)");

      const admin = await login(svc, "webservice", ADMIN.login, ADMIN.password);
      const ids: Record<string, number> = {};
      const api = (method: string, path: string, body?: unknown, status = 200) =>
        expectStatus(status, svc, method, path, { token: admin, body });

      await step("users, agent and queue through /1.1 reach Asterisk", async () => {
        for (const person of [ALICE, BOB, CAROL]) {
          ids[person.username] = await phoneUser(svc, admin, person);
        }
        const agent = (await api("POST", "/1.1/agents", { number: "8001" }, 201)).body.id;
        const queue = (await api("POST", "/1.1/queues", { name: "support", number: "3001" }, 201))
          .body.id;
        ids.queue = queue;
        await api("PUT", `/1.1/queues/${queue}/members/agents/${agent}`, { penalty: 0 }, 204);

        const read = (file: string) => Deno.readTextFile(`${configDir}/${file}`).catch(() => "");
        await until(
          async () => {
            const [pjsip, extensions, queues] = await Promise.all(
              ["pjsip_svc.conf", "extensions_svc.conf", "queues_svc.conf"].map(read),
            );
            return ["alice", "bob", "carol"].every((name) =>
              new RegExp(`^\\[${name}\\]\\ntype = endpoint$`, "m").test(pjsip!)
            ) && /^exten => 3001,1,/m.test(extensions!) &&
              /^exten => 1003,hint,/m.test(extensions!) &&
              /^\[support\]$/m.test(queues!);
          },
          3_000,
          "svc's files hold the users and the queue",
        );
        // svc reloads the modules once the files are written (at most once a second each)
        await until(
          async () => {
            const outputs = await Promise.all([
              ...["alice", "bob", "carol"].map((name) =>
                asterisk.cli(`pjsip show endpoint ${name}`)
              ),
              asterisk.cli("dialplan show 3001@default"),
              asterisk.cli("queue show support"),
            ]);
            return ["alice", "bob", "carol"].every((name, i) =>
              new RegExp(`Endpoint:\\s+${name}\\b`).test(outputs[i]!)
            ) && /Queue\(support/.test(outputs[3]!) && /^support has/m.test(outputs[4]!);
          },
          2_000,
          "Asterisk reloaded svc's files",
        );
      });

      await step("three phones register", async () => {
        const people = [ALICE, BOB, CAROL];
        for (const [i, person] of people.entries()) {
          const ctrlPort = ports.controls[i]!;
          phones.push(spawn(`${person.username}'s phone`, workDir, [
            "bash",
            `${PEERS}phone.sh`,
            `${workDir}/${person.username}`,
            person.username,
            person.secret,
            String(ports.phones + 2 * i),
            String(asterisk.sipPort),
            "auto",
            String(ctrlPort),
          ], { PHONE_RTP_PORTS: "17000-17999" }));
          controls[person.username] = await PhoneControl.connect(person.username, ctrlPort);
        }
        await until(
          async () => {
            const contacts = await asterisk.cli("pjsip show contacts");
            return people.every((person) =>
              new RegExp(`Contact:\\s+${person.username}/sip:\\S+\\s+\\S+\\s+Avail`).test(contacts)
            );
          },
          30_000,
          "alice, bob and carol registered and reachable",
        );
      });

      const alice = controls.alice!;
      const bob = controls.bob!;
      const carol = controls.carol!;
      // a dial needs its user connected: alice logs in, as her softphone would
      const aliceToken = await login(svc, "login", ALICE.username, ALICE.password);
      /** Waits until Asterisk has no channel left: the last call is over. */
      const pbxIdle = () =>
        until(
          async () => /^0 active channels/m.test(await asterisk.cli("core show channels count")),
          20_000,
          "no channel left on Asterisk",
        );
      const bobStatus = async () => {
        const view = await expectStatus(200, svc, "GET", `${V2}/contact/personal`, {
          token: aliceToken,
        });
        const entry = view.body.entries.find((e: { entry: string[] }) => e.entry[2] === "1002");
        return entry.status as number;
      };

      await step(
        "dial user: both answer, bob hangs up; the list view shows bob busy",
        async () => {
          await expectStatus(201, svc, "POST", `${V2}/contact/personal`, {
            token: aliceToken,
            body: { firstname: "Bob", lastname: "Phone", number: "1002" },
          });
          await until(async () => await bobStatus() === 0, 10_000, "bob available");
          const since = receiver.mark();
          const bobSince = bob.mark();
          await api("POST", `${V2}/dial/user/alice`, { username: "bob", variables: { crm: "7" } });
          await receiver.waitFor(
            since,
            (e) => e.username === "bob" && e.eventType === "EventEstablished",
            "bob talks",
          );
          await until(async () => await bobStatus() === 2, 5_000, "bob busy in the list view");
          await bob.waitEvent("CALL_ESTABLISHED", bobSince);
          await bob.do("hangup");
          await pbxIdle();
          const linkedId = await expectPhoneEvents(receiver, since, {
            alice: ["EventDialing", "EventEstablished", "EventReleased"],
            bob: ["EventRinging", "EventEstablished", "EventReleased"],
          });
          assert.match(linkedId, /^[0-9a-f-]{36}$/, "the ChannelId svc gave");
          const dialing = receiver.phone(since, "alice")[0]!;
          assert.deepEqual([dialing.DN, dialing.otherDN, dialing.uniqueId], [
            "1001",
            "1002",
            linkedId,
          ]);
          for (const event of receiver.phone(since)) {
            assert.deepEqual(event.userData, {
              PLATFORM_USERID: String(ids[event.username]),
              USR_crm: "7",
            });
          }
          await until(async () => await bobStatus() === 0, 5_000, "bob available again");
        },
      );

      await step("dial number 1002: alice hangs up", async () => {
        const since = receiver.mark();
        const aliceSince = alice.mark();
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await receiver.waitFor(
          since,
          (e) => e.username === "bob" && e.eventType === "EventEstablished",
          "bob talks",
        );
        await alice.waitEvent("CALL_ESTABLISHED", aliceSince);
        await alice.do("hangup");
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventEstablished", "EventReleased"],
        });
      });

      await step("DND on bob: alice's call fails, bob's phone never rings", async () => {
        await api("POST", `${V2}/dnd/bob`, { state: true });
        await until(async () => await bobStatus() === -1, 5_000, "DND shows as -1");
        const since = receiver.mark();
        const bobSince = bob.mark();
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await pbxIdle();
        await expectPhoneEvents(receiver, since, { alice: ["EventDialing", "EventFailure"] }, [
          "bob",
        ]);
        assert.ok(!bob.saw("CALL_INCOMING", bobSince), "bob's phone never rang");
        await api("POST", `${V2}/dnd/bob`, { state: false });
      });

      await step("unconditional forward bob → carol", async () => {
        const forward = `${V2}/forward/unconditional/bob`;
        await api("POST", forward, { destination: "1003", enabled: true });
        const since = receiver.mark();
        const [bobSince, carolSince] = [bob.mark(), carol.mark()];
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await carol.waitEvent("CALL_ESTABLISHED", carolSince);
        await carol.do("hangup");
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
        }, ["bob"]);
        assert.ok(!bob.saw("CALL_INCOMING", bobSince), "bob's phone never rang");
        await api("POST", forward, { destination: "1003", enabled: false });
      });

      await step("busy forward: bob rejects, carol takes the call", async () => {
        const forward = `${V2}/forward/busy/bob`;
        await api("POST", forward, { destination: "1003", enabled: true });
        await bob.do("answermode", "manual");
        const since = receiver.mark();
        const [aliceSince, bobSince] = [alice.mark(), bob.mark()];
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await bob.waitEvent("CALL_INCOMING", bobSince);
        await bob.do("hangup"); // while it rings: 486, DIALSTATUS BUSY
        await receiver.waitFor(
          since,
          (e) => e.username === "carol" && e.eventType === "EventEstablished",
          "carol talks",
        );
        await alice.waitEvent("CALL_ESTABLISHED", aliceSince);
        await alice.do("hangup");
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventReleased"],
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
        });
        await api("POST", forward, { destination: "1003", enabled: false });
      });

      await step("no-answer forward: bob rings 8 s, carol takes the call", async () => {
        const forward = `${V2}/forward/noanswer/bob`;
        await api("POST", forward, { destination: "1003", enabled: true });
        const since = receiver.mark();
        const [bobSince, carolSince] = [bob.mark(), carol.mark()];
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await bob.waitEvent("CALL_INCOMING", bobSince);
        await carol.waitEvent("CALL_ESTABLISHED", carolSince, 30_000);
        await carol.do("hangup");
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventReleased"],
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
        });
        await api("POST", forward, { destination: "1003", enabled: false });
        await bob.do("answermode", "auto");
      });

      const agentStatus = async () => (await api("GET", "/agents/by-number/8001")).body;

      await step("agent 8001 logs in on bob's phone, pauses, unpauses", async () => {
        const since = receiver.mark();
        await api("POST", "/agents/by-number/8001/login", {
          extension: "1002",
          context: "default",
        }, 204);
        await expectAgentStates(receiver, since, "8001", ["AgentReady"]);
        await until(
          async () => /\b8001 \(/.test(await asterisk.cli("queue show support")),
          5_000,
          "8001 a member of support on Asterisk",
        );
        await api("POST", "/agents/by-number/8001/pause", { reason: "lunch" }, 204);
        await api("POST", "/agents/by-number/8001/unpause", undefined, 204);
        await expectAgentStates(receiver, since, "8001", [
          "AgentReady",
          "AgentOnPause",
          "AgentReady",
        ]);
        const status = await agentStatus();
        assert.deepEqual(
          [status.logged, status.paused, status.extension, status.state],
          [true, false, "1002", "AgentReady"],
        );
      });

      await step("a queue call: alice dials 3001, the agent answers on bob's phone", async () => {
        const since = receiver.mark();
        const bobSince = bob.mark();
        await api("POST", `${V2}/dial/number/alice`, { destination: "3001" });
        await bob.waitEvent("CALL_ESTABLISHED", bobSince, 30_000);
        await bob.do("hangup");
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventEstablished", "EventReleased"],
        });
        assert.equal(receiver.phone(since, "alice")[0]!.otherDN, "3001");
        await expectAgentStates(receiver, since, "8001", QUEUE_CALL);
      });

      await step("dial to queue: carol is called first, then the agent", async () => {
        const since = receiver.mark();
        const bobSince = bob.mark();
        await api("POST", `${V2}/dial/toqueue`, {
          destination: "1003",
          queueName: "support",
          callerIdNumber: "3001",
        });
        await bob.waitEvent("CALL_ESTABLISHED", bobSince, 30_000);
        await carol.do("hangup");
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventEstablished", "EventReleased"],
        }, ["alice"]);
        await expectAgentStates(receiver, since, "8001", QUEUE_CALL);
      });

      await step("dial from queue: the agent answers first, then carol is called", async () => {
        const since = receiver.mark();
        const carolSince = carol.mark();
        await api("POST", `${V2}/dial/fromqueue/alice`, {
          destination: "1003",
          queueId: ids.queue,
        });
        await carol.waitEvent("CALL_ESTABLISHED", carolSince, 30_000);
        await carol.do("hangup");
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          bob: ["EventRinging", "EventDialing", "EventEstablished", "EventReleased"],
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
        }, ["alice"]);
        assert.equal(receiver.phone(since, "carol")[0]!.otherDN, "3001", "carol sees the queue");
        await expectAgentStates(receiver, since, "8001", QUEUE_CALL);
      });

      await step("the history tells alice's and bob's calls", async () => {
        const history = async (user: string) =>
          (await api("GET", `${V2}/history/${user}?size=20`)).body.data.entries as {
            dstUsername: string;
            dstNum: string;
            status: string;
          }[];
        await until(async () => (await history("alice")).length === 7, 10_000, "7 calls of alice");
        assert.deepEqual(
          (await history("alice")).map((e) => [e.dstUsername, e.dstNum, e.status]),
          [
            ["bob", "3001", "emitted"], // the queue call
            ["carol", "1002", "emitted"], // no-answer forward
            ["carol", "1002", "emitted"], // busy forward
            ["carol", "1002", "emitted"], // unconditional forward
            ["bob", "1002", "emitted"], // DND: not answered
            ["bob", "1002", "emitted"], // dial number
            ["bob", "1002", "emitted"], // dial user
          ],
        );
        const missed = (await history("bob")).filter((e) => e.status === "missed");
        assert.equal(missed.length, 2, "bob missed the busy and the no-answer forward calls");
      });

      await step(
        "Asterisk restarts: svc back within 5 s, the agent still logged in",
        async () => {
          await asterisk.stop();
          await until(
            async () => (await call(svc, "GET", "/ready")).status === 503,
            15_000,
            "/ready 503 while Asterisk is down",
          );
          assert.deepEqual((await call(svc, "GET", "/ready")).body, {
            status: "unavailable",
            platform: "unreachable",
          });
          asterisk.start();
          await until(() => amiAcceptsLogin(asterisk.amiPort), 60_000, "Asterisk accepts logins");
          await until(ready, 5_000, "/ready 200 within 5 s of Asterisk accepting logins");
          assert.equal((await agentStatus()).logged, true);
          // dynamic members do not survive a restart: svc adds the agent back
          await until(
            async () => /\b8001 \(/.test(await asterisk.cli("queue show support")),
            15_000,
            "8001 a member of support again",
          );
          const status = await agentStatus();
          assert.deepEqual([status.logged, status.extension, status.state], [
            true,
            "1002",
            "AgentReady",
          ]);
          // the phones' registrations come back from the AstDB; reachable after a qualify
          await until(
            async () => {
              const contacts = await asterisk.cli("pjsip show contacts");
              return ["alice", "bob"].every((name) =>
                new RegExp(`Contact:\\s+${name}/sip:\\S+\\s+\\S+\\s+Avail`).test(contacts)
              );
            },
            60_000,
            "alice and bob reachable again",
          );

          const since = receiver.mark();
          const bobSince = bob.mark();
          await api("POST", `${V2}/dial/user/alice`, { username: "bob" });
          await bob.waitEvent("CALL_ESTABLISHED", bobSince);
          await bob.do("hangup");
          await pbxIdle();
          await expectPhoneEvents(receiver, since, {
            alice: ["EventDialing", "EventEstablished", "EventReleased"],
            bob: ["EventRinging", "EventEstablished", "EventReleased"],
          });
        },
      );
    } catch (error) {
      // what the peers said helps more than the assertion alone
      const tail = (lines: string[]) => lines.slice(-40).join("\n");
      console.error(`--- asterisk\n${tail(asterisk.process?.output ?? [])}`);
      for (const phone of phones) console.error(`--- ${phone.name}\n${tail(phone.output)}`);
      const svcLines = server?.stderrLines.filter((line) => !line.includes('"msg":"request"'));
      if (svcLines) console.error(`--- svc (request lines left out)\n${tail(svcLines)}`);
      throw error;
    } finally {
      for (const control of Object.values(controls)) await control.close();
      // phones first (they un-register), then svc, then the PBX
      await Promise.all(phones.map((phone) => phone.stop()));
      if (server) await server.stop();
      await asterisk.stop();
      await receiver.close();
      await Deno.remove(workDir, { recursive: true });
    }
  },
});

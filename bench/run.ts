/**
 * `deno task bench`: drives a bare `Deno.serve` hello world and the real server with wrk on
 * loopback and prints, for each scenario, requests per second, latencies and the ratio to the
 * first scenario (the baseline). Each route runs just after `bench/hello_server.ts json <bytes>`
 * answering as many bytes as it does (checked), and its row holds it to a share of that bare
 * answer's requests per second (issue 28): the contacts list 75 %, the slowest list of each area
 * 50 % (`/1.1/users?limit=100` among 10,000 users, the agent daemon's `/agents` with 500 agents,
 * the deprecated 1.0 API's `historyByUsername`, the 2.0 call history, both a page of 100 calls).
 * Those four must read the store on every request, so each also runs after `json-kv <bytes>`, the
 * same bare answer after one Deno KV read, and its row says what that read alone costs. A route
 * with a target and its bare answer then run once more, in turn, and each keeps the better of its
 * two runs: between two runs a minute apart either moves by 10-20 % on a shared machine.
 *
 * Also measured, without wrk: events delivered per second by the event export (decisions §7) to
 * a local `Deno.serve` receiver in this process, from a store file holding 20,000 due events; and
 * the time from `POST /dial/number` on the real server to its first event (`EventDialing`) at a
 * receiver in this process (simulated phones answering at once: `SVC_SIM_ANSWER_MS=0`); the same on
 * the Asterisk adapter (`SVC_PLATFORM=asterisk`) against the test AMI server replaying the recorded
 * dial of `02-dial-answered`; and the AMI parser's messages per second next to a bare decode-and-split
 * baseline (`bench/ami.ts`).
 *
 * Personal contacts: the list view of a CTI user with 20 contacts under wrk, and the times to
 * import a 10,000-line CSV (plain body) and to export those 10,000 contacts, for another CTI user.
 *
 * CTI sockets (`GET /svc/api/2.0/cti`), on a server of their own: its RSS (`VmRSS`) at start and
 * with 10,000 idle sockets of 10 users, held by `bench/ws_clients.ts` in a process of its own; then
 * the delay from `POST /dnd/{username}` to its `UserConfigUpdate` on each of the user's 1,000
 * sockets. Each next to a bare `Deno.serve` WebSocket server (`bench/ws_server.ts`) holding as many
 * sockets and broadcasting a message of the same size to 1,000 of them (targets, issue 28: RSS ≤
 * the bare server's + 40 MB, fan-out p99 < 50 ms).
 *
 * Metrics: `GET /metrics` under wrk, once the other scenarios have filled the request histogram (a
 * scrape formats every series and reads the event outbox from the store).
 *
 * Password hashing and users imports (`bench/hashing.ts`): t_hash, imports with and without
 * passwords, a login storm and `GET /health` meanwhile, each next to its floor or bare baseline.
 * The write path (`bench/writes.ts`), cold start and idle memory (`bench/startup.ts`), memory after
 * malformed requests (`bench/memory.ts`): rows next to their baselines (`bench/rows.ts`). Supervision
 * at 500 agents in 50 queues (`bench/supervision.ts`): `GET /supervision/agents` and `…/queues`
 * under wrk next to bare JSON answers of their size, and the delay from a change to a supervisor's
 * page (its CTI socket) next to a bare WebSocket broadcast. Calls per second through svc with one
 * and with two real Asterisk servers (`bench/servers.ts`, skipped without Asterisk), next to the
 * same Originates from a bare AMI client.
 *
 * `deno task bench PART…` runs some parts only (`PARTS`); with `--json`, a last line holds every
 * figure, the rows with their ratio to the baseline (`bench/rows.ts`). `BENCH_PROFILE=1` profiles
 * the server under each wrk scenario (`bench/profile.ts`).
 *
 * Add a scenario by appending to `scenarios`: a name, its share of the bare answer if it has a
 * target, and a function answering what wrk requests.
 * Settings: BENCH_SECONDS (wrk -d, default 10), BENCH_CONNECTIONS (-c, 50), BENCH_THREADS (-t, 1),
 * BENCH_SCENARIOS (words of the scenarios to run, e.g. `history,contact`: see `chosenScenarios`),
 * BENCH_V8 (more V8 flags for the server, after `--expose-gc`, e.g. `,--min-semi-space-size=16`),
 * BENCH_KV (the server's SVC_KV, default `:memory:`; a file or a KV Connect URL measures that store).
 */
import {
  BenchError,
  bounded,
  callSvc,
  freePort,
  interrupt,
  pause,
  rssKb,
  run,
  startDeno,
  startSvcProcess,
  waitReady,
} from "./processes.ts";
import { startAmiReplay } from "../tests/peers/ami_replay.ts";
import { amiParserBench } from "./ami.ts";
import { amiLoadBench } from "./ami_load.ts";
import { dayBench } from "./day.ts";
import { memoryBench } from "./memory.ts";
import { startProfile } from "./profile.ts";
import { printRows, type Row, withRatio } from "./rows.ts";
import { hashingBench } from "./hashing.ts";
import { startupBench } from "./startup.ts";
import { pool } from "./supervision_centre.ts";
import { supervisionBench } from "./supervision.ts";
import { queueHistoryBench } from "./queue_history.ts";
import { serversBench } from "./servers.ts";
import { writesBench } from "./writes.ts";
import { systemClock } from "../lib/clock.ts";
import { EventExport } from "../lib/events/export.ts";
import { type EventMessage, platformMessage } from "../lib/events/messages.ts";
import { createLogger } from "../lib/log.ts";
import { Store } from "../lib/store/store.ts";

/** What wrk requests. */
interface Target {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

/** The servers every scenario may use, started once. */
interface Servers {
  /** Base URL of `bench/hello_server.ts`. */
  hello: string;
  /**
   * Starts `bench/hello_server.ts json <bytes>` (once per size), the least an authenticated JSON
   * route answering that many bytes does, and checks that it answers that many bytes with
   * `Content-Type` and `X-Request-Id`; answers its base URL.
   */
  bareJson(bytes: number): Promise<string>;
  /**
   * Starts `bench/hello_server.ts json-kv <bytes>` (once per size): the same answer after one
   * Deno KV read, shared by the requests that arrive while one runs; answers its base URL.
   */
  bareJsonAfterRead(bytes: number): Promise<string>;
  /** Base URL of the real server (`main.ts` on the store of BENCH_KV). */
  svc: string;
  /** A token of the administrator web service user. */
  adminToken: string;
  /** Where the real server posts its events. */
  events: ReturnType<typeof dialingReceiver>;
  /** The real server's process id. */
  pid: number;
  /** The port of the real server's inspector, with `BENCH_PROFILE=1`. */
  inspector?: number;
}

/** One real server: its URL, an administrator's token, its event receiver. */
type Svc = Omit<Servers, "hello" | "bareJson" | "bareJsonAfterRead">;

interface Scenario {
  name: string;
  /**
   * The bare hello world, the first scenario: the table's baseline. Every other scenario runs
   * after the bare JSON answer of as many bytes as it answers (`bench/hello_server.ts json`).
   */
  hello?: boolean;
  /** The target (issue 28): at least this share (%) of the req/s of that bare JSON answer. */
  share?: number;
  /**
   * The route must read the store on each request (what it keeps may have been changed by another
   * process sharing the store): it runs after the bare answer given after one Deno KV read too
   * (`bench/hello_server.ts json-kv`), which its row shows beside its baseline.
   */
  readsStore?: boolean;
  /** Prepares what the scenario needs (records, tokens) and answers the request to repeat. */
  setup(servers: Servers): Target | Promise<Target>;
}

/** One wrk run of the table. */
interface WrkResult {
  name: string;
  /** The bytes of the body answered. */
  bytes: number;
  figures: Figures;
  /** A route's: the name of the bare JSON answer of its bytes, run just before it. */
  bare?: string;
  /** A route's: its target, the least share (%) of the bare answer's req/s. */
  share?: number;
  /** A route's that reads the store: the name of the bare answer after one Deno KV read. */
  afterRead?: string;
}

/** One-shot operations timed during the setups, printed after the table. */
const timings: { name: string; ms: number }[] = [];

/** Times `fn`, keeping the figure for the report. */
async function timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const result = await fn();
  timings.push({ name, ms: performance.now() - started });
  return result;
}

/** Throughputs measured outside wrk, printed after the table. */
const rates: { name: string; count: number; ms: number }[] = [];

/**
 * Publishes `users` × `perUser` phone events into a temporary store file, then starts an
 * `EventExport` posting them (signed, as with `SVC_EVENT_SECRET`) to a receiver in this process,
 * and times from `start()` until the receiver has them all.
 */
async function eventDelivery(users = 200, perUser = 100): Promise<void> {
  const total = users * perUser;
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-events-" });
  let received = 0;
  const { promise: allReceived, resolve } = Promise.withResolvers<void>();
  const receiver = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      await request.arrayBuffer();
      if (++received === total) resolve();
      return new Response(null, { status: 204 });
    },
  );
  const store = await Store.open(`${dir}/events.kv`);
  const events = new EventExport({
    store,
    clock: systemClock,
    logger: createLogger("warn"),
    url: `http://127.0.0.1:${receiver.addr.port}/pbx/1.0/event/bench/dropbox/`,
    secret: "bench-secret",
    retentionMs: 3_600_000,
  });
  try {
    const messages: EventMessage[] = [];
    for (let n = 0; n < perUser; n++) {
      for (let u = 0; u < users; u++) {
        messages.push(platformMessage({
          kind: "phone",
          userId: u + 1,
          username: `user${u}`,
          eventType: "EventRinging",
          DN: `${10000 + u}`,
          otherDN: "0612345678",
          otherDName: "",
          linkedId: `1767225600.${n}`,
          uniqueId: `1767225600.${n * users + u}`,
          userData: { PLATFORM_USERID: String(u + 1) },
          recordState: "inactive",
        }));
      }
    }
    for (let start = 0; start < total; start += 500) {
      await events.publish(messages.slice(start, start + 500));
    }
    const started = performance.now();
    events.start();
    const timeout = bounded(300_000);
    const timedOut = new Promise<never>((_, reject) => {
      timeout.addEventListener("abort", () => reject(new BenchError("events: not all received")));
    });
    timedOut.catch(() => {}); // it may settle after the race, when nobody listens any more
    await Promise.race([allReceived, timedOut]);
    rates.push({
      name: `events delivered to a local receiver (${total.toLocaleString("en-US")} events, ` +
        `${users} users, store file)`,
      count: total,
      ms: performance.now() - started,
    });
  } finally {
    await events.close();
    await receiver.shutdown();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** A receiver of the real server's events that tells when each `EventDialing` comes. */
function dialingReceiver() {
  const waiting: ((at: number) => void)[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    async (request) => {
      const event = await request.json();
      if (event.message?.ctiMessage?.eventType === "EventDialing") {
        waiting.shift()?.(performance.now());
      }
      return new Response(null, { status: 204 });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/bench/dropbox/`,
    /** When the next `EventDialing` arrives. */
    nextDialing: () => new Promise<number>((resolve) => waiting.push(resolve)),
    close: () => server.shutdown(),
  };
}

/** Median and 90th percentile, in ms, of `count` dials one after the other. */
async function dialLatency(servers: Servers, count = 30): Promise<void> {
  const csv = "firstname,lastname,username,password,line_protocol,context,exten\n" +
    "Dial,Bench,dialer,dialer-password,sip,default,1999\n";
  await call(servers, "POST", "/1.1/users/import", csv, "text/csv");
  const dial = {
    path: "/svc/api/2.0/dial/number/dialer",
    body: { destination: "+33 6 12 34 56 78" },
  };
  const { p50, p90 } = await timeDials(servers, "dialer", dial, count);
  latencies.push({
    name:
      `POST /dial/number → first event at the receiver (${count} dials, phones answering at once)`,
    p50,
    p90,
  });
}

/**
 * The same on the Asterisk adapter: a second server with `SVC_PLATFORM=asterisk` connected to the
 * test AMI server replaying the recorded dial of `02-dial-answered` for each Originate.
 */
async function asteriskDialLatency(stack: AsyncDisposableStack, count = 30): Promise<void> {
  const replay = await startAmiReplay({ connections: ["02-dial-answered"], loop: [1, 1] });
  stack.defer(() => replay.close());
  const configDir = await Deno.makeTempDir({ prefix: "svc-bench-asterisk-" });
  stack.defer(() => Deno.remove(configDir, { recursive: true }));
  const servers = await startSvc(stack, {
    SVC_PLATFORM: "asterisk",
    SVC_AMI_PORT: String(replay.port),
    SVC_AMI_USERNAME: "admin",
    SVC_AMI_SECRET: "admin",
    SVC_ASTERISK_CONFIG_DIR: configDir,
    SVC_KV: ":memory:",
  }, "/ready");
  const csv = "firstname,username,password,line_protocol,context,exten,sip_username\n" +
    "Alice,alice,alice-password,sip,default,1001,alice\n" +
    "Bob,bob,bob-password,sip,default,1002,bob\n";
  await call(servers, "POST", "/1.1/users/import", csv, "text/csv");
  const dial = { path: "/svc/api/2.0/dial/user/alice", body: { username: "bob" } };
  const { p50, p90 } = await timeDials(servers, "alice", dial, count);
  latencies.push({
    name: `Asterisk: POST /dial/user → first event at the receiver (${count} dials, replayed AMI)`,
    p50,
    p90,
  });
}

/** Logs `username` in, then times `count` dials to their `EventDialing` at the receiver. */
async function timeDials(
  servers: Svc,
  username: string,
  dial: { path: string; body: unknown },
  count: number,
): Promise<{ p50: number; p90: number }> {
  const login = await fetch(`${servers.svc}/svc/api/2.0/auth/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ login: username, password: `${username}-password` }),
    signal: bounded(10_000),
  });
  if (!login.ok) throw new BenchError(`${username} login: ${login.status} ${await login.text()}`);
  await login.body?.cancel();
  const samples: number[] = [];
  for (let n = 0; n < count; n++) {
    const dialing = servers.events.nextDialing();
    const started = performance.now();
    await call(servers, "POST", dial.path, JSON.stringify(dial.body), "application/json");
    const timeout = bounded(10_000);
    const arrived = await Promise.race([
      dialing,
      new Promise<never>((_, reject) =>
        timeout.addEventListener("abort", () => reject(new BenchError("no EventDialing came")))
      ),
    ]);
    samples.push(arrived - started);
  }
  samples.sort((a, b) => a - b);
  const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
  return { p50: at(0.5), p90: at(0.9) };
}

/** Latencies measured outside wrk, printed after the table. */
const latencies: { name: string; p50: number; p90: number }[] = [];

/** Calls the real server as the administrator; a non-2xx answer stops the bench. */
async function call(servers: Svc, method: string, path: string, body: string, type: string) {
  await callSvc(servers.svc, servers.adminToken, method, path, body, type);
}

/** `count` CSV rows, each a user with a SIP line and an extension in the `bench` context. */
function usersCsv(first: number, count: number): string {
  const rows = ["firstname,lastname,line_protocol,context,exten"];
  for (let n = first; n < first + count; n++) rows.push(`User,${n},sip,bench,${10000 + n}`);
  return rows.join("\n");
}

/**
 * Creates a CTI user through `/1.1/users` and logs it in; answers its token. The login costs one
 * password hash (PBKDF2), once.
 */
async function ctiToken(servers: Servers, username: string): Promise<string> {
  const password = `${username}-password`;
  const user = JSON.stringify({ firstname: "Bench", lastname: username, username, password });
  await call(servers, "POST", "/1.1/users", user, "application/json");
  const response = await fetch(`${servers.svc}/svc/api/2.0/auth/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ login: username, password }),
    signal: bounded(10_000),
  });
  if (!response.ok) throw new BenchError(`${username} login: ${response.status}`);
  return (await response.json()).token;
}

/** Calls the 2.0 API with a CTI user's token; a non-2xx answer stops the bench. */
const callAs = (
  token: string,
  servers: Servers,
  method: string,
  path: string,
  body?: string,
  type?: string,
) => callSvc(servers.svc, token, method, path, body, type);

/** `count` contact lines under the export's header, each a distinct contact. */
function contactsCsv(count: number): string {
  const rows = ["company,email,fax,firstname,lastname,mobile,number"];
  for (let n = 0; n < count; n++) {
    rows.push(
      `"Acme, Inc.",contact${n}@example.com,,Émilie,Dupont ${n},06${String(n).padStart(8, "0")},` +
        `${1000 + (n % 9000)}`,
    );
  }
  return rows.join("\r\n") + "\r\n";
}

/** Times importing then exporting 10,000 contacts for a CTI user of its own. */
async function contactsImportExport(servers: Servers): Promise<void> {
  const token = await ctiToken(servers, "bench-importer");
  const csv = contactsCsv(10_000);
  const path = "/svc/api/2.0/contact";
  const imported = await timed(
    "POST /contact/import/personal, 10,000 lines (plain text/csv body)",
    () => callAs(token, servers, "POST", `${path}/import/personal`, csv, "text/csv;charset=UTF-8"),
  );
  const { created, failed } = JSON.parse(imported);
  if (created.length !== 10_000 || failed.length !== 0) {
    throw new BenchError(`import: ${created.length} created, ${failed.length} failed`);
  }
  const exported = await timed(
    "GET /contact/export/personal, 10,000 contacts",
    () => callAs(token, servers, "GET", `${path}/export/personal`),
  );
  const lines = exported.split("\r\n").length - 2;
  if (lines !== 10_000) throw new BenchError(`export: ${lines} lines`);
}

/** Idle sockets held open for the memory figures, spread evenly over `CTI_USERS` users. */
const CTI_SOCKETS = 10_000;
const CTI_USERS = 10;
/**
 * Events fanned out, one every `FANOUT_GAP_MS`, after `FANOUT_WARMUP` that are not measured: 20 s,
 * during which the CTI hub reads again the personal contacts of the sockets opened first (every
 * 30 s, lib/cti/hub.ts), so that the delays include its periodic work.
 */
const FANOUT_EVENTS = 40;
const FANOUT_GAP_MS = 500;
const FANOUT_WARMUP = 3;

/** A server's memory before and while it holds idle sockets, printed after the table. */
const memory: { name: string; startKb: number; heldKb: number; sockets: number }[] = [];
/** Fan-out delays (ms, one per socket and event), printed after the table. */
const fanouts: { name: string; samples: number[] }[] = [];
/**
 * The targets of the CTI sockets (issue 28): svc's RSS with every socket open at most the bare
 * WebSocket server's plus this (MB), and the fan-out's p99 under this (ms).
 */
const CTI_RSS_MARGIN_MB = 40;
const FANOUT_P99_MS = 50;

/** The `q` quantile of `samples` (the lower one). */
const quantileOf = (samples: readonly number[]) => {
  const sorted = samples.toSorted((a, b) => a - b);
  return (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

/**
 * Starts the client process (`bench/ws_clients.ts`, its own process so that a server's memory is
 * measured alone) and answers how to send it a command and wait for its reply.
 */
function wsClients(stack: AsyncDisposableStack) {
  const { child } = startDeno(stack, ["run", "--allow-net", "bench/ws_clients.ts"], {}, {
    manyFiles: true,
    pipes: true,
  });
  const writer = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  stack.defer(async () => {
    await writer.close().catch(() => {});
    await reader.cancel().catch(() => {});
  });
  let buffered = "";
  return async (command: unknown, timeoutMs: number): Promise<Record<string, unknown>> => {
    await writer.write(new TextEncoder().encode(JSON.stringify(command) + "\n"));
    const timeout = bounded(timeoutMs);
    const timedOut = new Promise<never>((_, reject) => {
      timeout.addEventListener("abort", () => {
        reject(new BenchError(`the WebSocket clients did not answer within ${timeoutMs / 1000}s`));
      });
    });
    timedOut.catch(() => {}); // it may settle after the race, when nobody listens any more
    while (!buffered.includes("\n")) {
      const { value, done } = await Promise.race([reader.read(), timedOut]);
      if (done) throw new BenchError("the WebSocket client process stopped");
      buffered += value;
    }
    const end = buffered.indexOf("\n");
    const reply = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (reply.error) throw new BenchError(`WebSocket clients: ${reply.error}`);
    return reply;
  };
}

/** A WebSocket server measured by {@link holdAndFanOut}. */
interface SocketServer {
  name: string;
  pid: number;
  /** Where each group's sockets connect (the first group is sent the events). */
  groups: { url: string; group: string }[];
  /** Messages the server sends a socket once open, before it counts as open. */
  greeting: number;
  /** The request causing the `round`th event to the first group's sockets. */
  event(round: number): Target;
  /** What the event's message contains. */
  match: string;
  /** The fan-out line's name. */
  fanout: string;
}

/**
 * Measures the server's RSS, opens `CTI_SOCKETS` sockets from a client process, measures it again
 * once they are all open (and 3 s more), then times `FANOUT_EVENTS` events to the first group's
 * sockets.
 */
async function holdAndFanOut(stack: AsyncDisposableStack, server: SocketServer): Promise<void> {
  await pause(1000);
  const startKb = await rssKb(server.pid);
  const send = wsClients(stack);
  const count = CTI_SOCKETS / server.groups.length;
  const started = performance.now();
  for (const { url, group } of server.groups) {
    await send({ open: { url, count, group, greeting: server.greeting } }, 300_000);
  }
  timings.push({
    name: `${server.name}: opening ${CTI_SOCKETS.toLocaleString("en-US")} sockets, 100 at a time`,
    ms: performance.now() - started,
  });
  await pause(3000);
  const heldKb = await rssKb(server.pid);
  memory.push({ name: server.name, startKb, heldKb, sockets: CTI_SOCKETS });
  const fanout = (rounds: number, first: number) =>
    send({
      fanout: {
        group: server.groups[0]!.group,
        requests: Array.from({ length: rounds }, (_, n) => server.event(first + n)),
        match: server.match,
        gapMs: FANOUT_GAP_MS,
        timeoutMs: 10_000,
      },
    }, 300_000);
  await fanout(FANOUT_WARMUP, 0);
  const { samples } = await fanout(FANOUT_EVENTS, FANOUT_WARMUP);
  fanouts.push({ name: server.fanout, samples: samples as number[] });
  await send({ close: true }, 60_000);
}

/** A message shaped and sized as svc's `UserConfigUpdate`, for the baseline to broadcast. */
const configUpdate = (dnd: boolean) =>
  JSON.stringify({
    msgType: "UserConfigUpdate",
    ctiMessage: {
      userId: 1,
      firstName: "Bench",
      lastName: "Socket 0",
      fullName: "Bench Socket 0",
      mobileNumber: "",
      lineIds: [1],
      dndEnabled: dnd,
      uncFwdEnabled: false,
      uncFwdDestination: "",
      naFwdEnabled: false,
      naFwdDestination: "",
      busyFwdEnabled: false,
      busyFwdDestination: "",
    },
  });

/**
 * The CTI socket (`GET /svc/api/2.0/cti`): RSS with 10,000 idle sockets of 10 users, and the
 * delay from `POST /dnd/{username}` to its `UserConfigUpdate` on each of the user's 1,000 sockets;
 * each next to a bare `Deno.serve` WebSocket server (`bench/ws_server.ts`) holding as many sockets
 * and broadcasting a message of the same size to 1,000 of them. Answers the two rows.
 */
async function ctiSockets(): Promise<Row[]> {
  const groups = (url: (n: number) => string) =>
    Array.from({ length: CTI_USERS }, (_, n) => ({ url: url(n), group: `${n}` }));
  const measured = memory.length;
  {
    await using stack = new AsyncDisposableStack();
    const port = freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = startDeno(stack, ["run", "--allow-net", "bench/ws_server.ts", `${port}`], {}, {
      manyFiles: true,
    });
    await waitReady(`${base}/`, server);
    await holdAndFanOut(stack, {
      name: "bare Deno.serve WebSocket echo server (baseline)",
      pid: server.pid,
      groups: groups((n) => `ws://127.0.0.1:${port}/ws?group=${n}`),
      greeting: 0,
      event: (round) => ({
        url: `${base}/broadcast?group=0`,
        method: "POST",
        headers: {},
        body: configUpdate(round % 2 === 0),
      }),
      match: "dndEnabled",
      fanout: "bare Deno.serve: POST /broadcast → its message on each of 1,000 sockets (baseline)",
    });
  }
  await using stack = new AsyncDisposableStack();
  const servers = await startSvc(
    stack,
    {
      SVC_CTI_MAX_PER_USER: String(CTI_SOCKETS),
      SVC_KV: ":memory:",
    },
    "/health",
    { manyFiles: true },
  );
  const rows = ["firstname,lastname,username,password,line_protocol,context,exten"];
  for (let n = 0; n < CTI_USERS; n++) {
    rows.push(`Bench,Socket ${n},socket${n},socket${n}-password,sip,default,${1900 + n}`);
  }
  await call(servers, "POST", "/1.1/users/import", rows.join("\n"), "text/csv");
  const tokens: string[] = [];
  for (let n = 0; n < CTI_USERS; n++) {
    const response = await fetch(`${servers.svc}/svc/api/2.0/auth/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ login: `socket${n}`, password: `socket${n}-password` }),
      signal: bounded(10_000),
    });
    if (!response.ok) throw new BenchError(`socket${n} login: ${response.status}`);
    tokens.push((await response.json()).token);
  }
  const ws = servers.svc.replace(/^http/, "ws");
  await holdAndFanOut(stack, {
    name: "svc GET /svc/api/2.0/cti",
    pid: servers.pid,
    groups: groups((n) => `${ws}/svc/api/2.0/cti?token=${tokens[n]}`),
    greeting: 3, // LoggedOn, UserConfigUpdate, PhoneStatusUpdate
    event: (round) => ({
      url: `${servers.svc}/svc/api/2.0/dnd/socket0`,
      method: "POST",
      headers: {
        Authorization: `Bearer ${servers.adminToken}`,
        "Content-Type": "application/json",
      },
      body: JSON.stringify({ state: round % 2 === 0 }),
    }),
    match: "dndEnabled",
    fanout: "svc: POST /dnd/{username} → UserConfigUpdate on each of the user's 1,000 CTI sockets",
  });
  const [bareMemory, svcMemory] = memory.slice(measured) as [Memory, Memory];
  const [bareFanout, svcFanout] = fanouts.slice(measured) as [Fanout, Fanout];
  const mb = (kb: number) => kb * 1024 / 1e6;
  const perSocket = ({ startKb, heldKb }: Memory) =>
    `${((heldKb - startKb) * 1024 / CTI_SOCKETS / 1000).toFixed(1)} kB per socket`;
  const svcAt = quantileOf(svcFanout.samples);
  const bareAt = quantileOf(bareFanout.samples);
  return [
    {
      name: `svc's RSS with ${CTI_SOCKETS.toLocaleString("en-US")} idle CTI sockets ` +
        `(${CTI_USERS} users)`,
      value: mb(svcMemory.heldKb),
      unit: "MB",
      baseline: {
        name: "bare Deno.serve WebSocket server holding as many",
        value: mb(bareMemory.heldKb),
      },
      ratioAs: "+",
      target: {
        text: `≤ the bare server's + ${CTI_RSS_MARGIN_MB} MB`,
        met: mb(svcMemory.heldKb) <= mb(bareMemory.heldKb) + CTI_RSS_MARGIN_MB,
      },
      detail: `at start svc ${mb(svcMemory.startKb).toFixed(1)} MB, bare ` +
        `${mb(bareMemory.startKb).toFixed(1)} MB; svc ${perSocket(svcMemory)}, bare ` +
        perSocket(bareMemory),
    },
    {
      name: "fan-out: POST /dnd/{username} → UserConfigUpdate on each of the user's 1,000 CTI " +
        "sockets, p99",
      value: svcAt(0.99),
      unit: "ms",
      baseline: {
        name: "bare POST /broadcast → its message on each of 1,000 sockets, p99",
        value: bareAt(0.99),
      },
      target: { text: `< ${FANOUT_P99_MS} ms`, met: svcAt(0.99) < FANOUT_P99_MS },
      detail: `p50 ${svcAt(0.5).toFixed(1)} ms (bare ${bareAt(0.5).toFixed(1)} ms); ` +
        `${FANOUT_EVENTS} events, ${FANOUT_GAP_MS} ms apart`,
    },
  ];
}

type Memory = typeof memory[number];
type Fanout = typeof fanouts[number];

/**
 * The agent daemon's list (`GET /agents`): a call centre the size of the supervision bench's, on
 * the phones of the users imported by the `/1.1/users` scenario (context `bench`, extensions
 * 10000…): `AGENTS` agents, each in two of `AGENT_QUEUES` queues, `LOGGED_AGENTS` of them logged in
 * (the others logged out), `PAUSED_AGENTS` of those paused.
 */
const AGENTS = 500;
const AGENT_QUEUES = 50;
const LOGGED_AGENTS = 400;
const PAUSED_AGENTS = 80;

async function agentsCentre(servers: Servers): Promise<void> {
  const created = async (path: string, body: unknown) =>
    JSON.parse(
      await callSvc(servers.svc, servers.adminToken, "POST", path, JSON.stringify(body)),
    ) as { id: number };
  const queueIds: number[] = [];
  for (let q = 0; q < AGENT_QUEUES; q++) {
    const queue = await created("/1.1/queues", {
      name: `agents${q}`,
      display_name: `Agents ${q}`,
      number: `${3000 + q}`,
      context: "default",
    });
    queueIds.push(queue.id);
  }
  const agentIds: number[] = new Array(AGENTS);
  await pool([...Array(AGENTS).keys()], 8, async (n) => {
    const agent = await created("/1.1/agents", {
      number: `${8000 + n}`,
      firstname: "Agent",
      lastname: `${n}`,
    });
    agentIds[n] = agent.id;
  });
  const memberships = [...Array(AGENTS).keys()].flatMap((n) =>
    [n % AGENT_QUEUES, (n + 13) % AGENT_QUEUES].map((q, penalty) => ({ n, q, penalty }))
  );
  await pool(memberships, 8, ({ n, q, penalty }) =>
    call(
      servers,
      "PUT",
      `/1.1/queues/${queueIds[q]}/members/agents/${agentIds[n]}`,
      JSON.stringify({ penalty }),
      "application/json",
    ));
  await pool([...Array(LOGGED_AGENTS).keys()], 8, (n) =>
    call(
      servers,
      "POST",
      `/agents/by-id/${agentIds[n]}/login`,
      JSON.stringify({ extension: `${10000 + n}`, context: "bench" }),
      "application/json",
    ));
  await pool([...Array(PAUSED_AGENTS).keys()], 8, (n) =>
    call(
      servers,
      "POST",
      `/agents/by-id/${agentIds[n * 5]}/pause`,
      JSON.stringify({ reason: "lunch" }),
      "application/json",
    ));
}

/** The calls in the history of `HISTORY_USER`, asked as one page by the two history scenarios. */
const HISTORY_CALLS = 100;
const HISTORY_USER = "bench-history";
let historyFilled: Promise<void> | null = null;

/**
 * Gives `HISTORY_USER` (a CTI user with a phone, logged in) `HISTORY_CALLS` finished calls, once
 * for both history scenarios: dials to outside numbers through `POST /dial/number`, its phone
 * hanging up 1 ms after answering (`PUT /sim/phones/{extension}/policy`); answers once the
 * history holds them all.
 */
function callHistory(servers: Servers): Promise<void> {
  return historyFilled ??= (async () => {
    const password = `${HISTORY_USER}-password`;
    const csv = "firstname,lastname,username,password,line_protocol,context,exten\n" +
      `History,Bench,${HISTORY_USER},${password},sip,default,1998\n`;
    await call(servers, "POST", "/1.1/users/import", csv, "text/csv");
    const login = await fetch(`${servers.svc}/svc/api/2.0/auth/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ login: HISTORY_USER, password }),
      signal: bounded(10_000),
    });
    if (!login.ok) throw new BenchError(`${HISTORY_USER} login: ${login.status}`);
    await login.body?.cancel();
    const policy = { policy: "auto", answer_ms: 0, talk_ms: 1 };
    await call(
      servers,
      "PUT",
      "/svc/api/2.0/sim/phones/1998/policy",
      JSON.stringify(policy),
      "application/json",
    );
    await timed(`POST /dial/number ×${HISTORY_CALLS} (the history of one user)`, async () => {
      for (let n = 0; n < HISTORY_CALLS; n++) {
        const destination = `06${String(n).padStart(8, "0")}`;
        await call(
          servers,
          "POST",
          `/svc/api/2.0/dial/number/${HISTORY_USER}`,
          JSON.stringify({ destination }),
          "application/json",
        );
      }
    });
    const deadline = Date.now() + 30_000;
    for (;;) {
      const answer = await callSvc(
        servers.svc,
        servers.adminToken,
        "GET",
        `/svc/api/2.0/history/${HISTORY_USER}?size=${HISTORY_CALLS}`,
      );
      const { entries } = JSON.parse(answer).data as { entries: unknown[] };
      if (entries.length === HISTORY_CALLS) return;
      if (Date.now() > deadline) {
        throw new BenchError(`history: ${entries.length} of ${HISTORY_CALLS} calls within 30 s`);
      }
      await pause(100);
    }
  })();
}

const scenarios: Scenario[] = [
  {
    name: "bare Deno.serve hello world",
    hello: true,
    setup: ({ hello }) => ({ url: `${hello}/` }),
  },
  {
    name: "GET /svc/api/2.0/auth/check (valid token)",
    setup: ({ svc, adminToken }) => ({
      url: `${svc}/svc/api/2.0/auth/check`,
      headers: { Authorization: `Bearer ${adminToken}` },
    }),
  },
  {
    name: "GET /1.1/users?limit=100 (10,000 users)",
    share: 50,
    readsStore: true,
    setup: async (servers) => {
      const context = JSON.stringify({
        name: "bench",
        user_ranges: [{ start: "10000", end: "99999" }],
      });
      await call(servers, "POST", "/1.1/contexts", context, "application/json");
      await timed(
        "POST /1.1/users/import, 5,000 rows (user + line + SIP + extension)",
        () => call(servers, "POST", "/1.1/users/import", usersCsv(0, 5000), "text/csv"),
      );
      await call(servers, "POST", "/1.1/users/import", usersCsv(5000, 5000), "text/csv");
      return {
        url: `${servers.svc}/1.1/users?limit=100`,
        headers: { Authorization: `Bearer ${servers.adminToken}` },
      };
    },
  },
  {
    // after /1.1/users: its agents log in on the phones of the users imported there
    name: `GET /agents (${AGENTS} agents in ${AGENT_QUEUES} queues, ${LOGGED_AGENTS} logged in, ` +
      `${PAUSED_AGENTS} paused)`,
    share: 50,
    readsStore: true,
    setup: async (servers) => {
      await timed(
        `${AGENTS} agents, ${AGENT_QUEUES} queues, ${AGENTS * 2} memberships, ` +
          `${LOGGED_AGENTS} logins, ${PAUSED_AGENTS} pauses (/1.1, /agents)`,
        () => agentsCentre(servers),
      );
      return {
        url: `${servers.svc}/agents`,
        headers: { Authorization: `Bearer ${servers.adminToken}` },
      };
    },
  },
  {
    name: `GET /svc/api/2.0/history/{username}?size=${HISTORY_CALLS} (a user with ` +
      `${HISTORY_CALLS} calls)`,
    share: 50,
    readsStore: true,
    setup: async (servers) => {
      await callHistory(servers);
      return {
        url: `${servers.svc}/svc/api/2.0/history/${HISTORY_USER}?size=${HISTORY_CALLS}`,
        headers: { Authorization: `Bearer ${servers.adminToken}` },
      };
    },
  },
  {
    // the deprecated API's one list; no token (the client address is allowed), and each request
    // connects the user it names, a write
    name: `GET /svc/api/1.0/historyByUsername/{domain}/{username}?size=${HISTORY_CALLS} ` +
      `(the same user)`,
    share: 50,
    readsStore: true,
    setup: async (servers) => {
      await callHistory(servers);
      return {
        url: `${servers.svc}/svc/api/1.0/historyByUsername/bench/${HISTORY_USER}?size=` +
          `${HISTORY_CALLS}`,
      };
    },
  },
  {
    name: "GET /svc/api/2.0/contact/personal (CTI user, 20 contacts)",
    share: 75,
    setup: async (servers) => {
      const token = await ctiToken(servers, "bench-contacts");
      for (let n = 0; n < 20; n++) {
        // every number's status is asked of the platform: a few look like extensions
        const number = n % 5 === 0 ? `${1000 + n}` : `06${String(n).padStart(8, "0")}`;
        const contact = { firstname: "Contact", lastname: `Person ${n}`, number };
        await callAs(
          token,
          servers,
          "POST",
          "/svc/api/2.0/contact/personal",
          JSON.stringify(contact),
        );
      }
      await contactsImportExport(servers);
      return {
        url: `${servers.svc}/svc/api/2.0/contact/personal`,
        headers: { Authorization: `Bearer ${token}` },
      };
    },
  },
  {
    // last: the scenarios before have filled the request histogram with their routes
    name: "GET /metrics (a Prometheus scrape, with the outbox read)",
    setup: ({ svc, adminToken }) => ({
      url: `${svc}/metrics`,
      headers: { Authorization: `Bearer ${adminToken}` },
    }),
  },
];

/** Of two wrk runs of one target, the one with more requests per second. */
const faster = (a: Figures, b: Figures): Figures => b.requestsPerSec > a.requestsPerSec ? b : a;

interface Figures {
  requestsPerSec: number;
  /** wrk's own spelling, e.g. `1.23ms`. */
  avg: string;
  p50: string;
  p90: string;
  p99: string;
  /** Non-2xx/3xx answers plus socket errors. */
  errors: number;
  /**
   * Of those, the requests unanswered within wrk's timeout (2 s): a route that slow under
   * `BENCH_CONNECTIONS` is measured (its row says how many), the bench goes on.
   */
  timeouts: number;
}

const seconds = Number(Deno.env.get("BENCH_SECONDS") ?? "10");
const connections = Deno.env.get("BENCH_CONNECTIONS") ?? "50";
const threads = Deno.env.get("BENCH_THREADS") ?? "1";
const kv = Deno.env.get("BENCH_KV") ?? ":memory:";

/** Installs wrk from Debian when it is not on PATH. */
async function ensureWrk(): Promise<void> {
  try {
    await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" }).output();
    return;
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  if (Deno.uid() !== 0) throw new BenchError("wrk is missing: install it (apt-get install wrk)");
  const env = { DEBIAN_FRONTEND: "noninteractive" };
  console.log("wrk is missing: running apt-get update, then apt-get install -y wrk");
  await run("apt-get", ["update"], 300_000, { env });
  await run("apt-get", ["install", "-y", "wrk"], 300_000, { env });
}

/** Starts `bench/hello_server.ts` with `args` after its port; answers its base URL. */
async function startBare(stack: AsyncDisposableStack, ...args: string[]): Promise<string> {
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  // the store of `json-kv`: Deno KV, a file when the bench's store is one (BENCH_KV)
  const store = args[0] === "json-kv" ? ["--unstable-kv", "--allow-read", "--allow-write"] : [];
  const server = startDeno(stack, [
    "run",
    "--allow-net",
    ...store,
    "bench/hello_server.ts",
    `${port}`,
    ...args,
  ]);
  await waitReady(`${base}/`, server);
  return base;
}

/**
 * Starts `bench/hello_server.ts json <bytes>` and checks what it answers: `bytes` bytes of JSON,
 * with `Content-Type` and `X-Request-Id`, as the route it stands beside. Answers its base URL.
 */
async function startBareJson(
  stack: AsyncDisposableStack,
  bytes: number,
  ...afterRead: ["json-kv", string] | []
): Promise<string> {
  const [mode, store] = afterRead.length ? afterRead : ["json"];
  const base = await startBare(stack, mode, `${bytes}`, ...store === undefined ? [] : [store]);
  const response = await fetch(`${base}/`, {
    headers: { Authorization: "Bearer x" },
    signal: bounded(10_000),
  });
  const answered = (await response.arrayBuffer()).byteLength;
  if (
    answered !== bytes || response.headers.get("content-type") !== "application/json" ||
    !response.headers.get("x-request-id")
  ) {
    throw new BenchError(`the bare JSON answer of ${bytes} bytes answers ${answered} bytes`);
  }
  return base;
}

async function startServers(stack: AsyncDisposableStack): Promise<Servers> {
  const hello = await startBare(stack);
  const bare = new Map<number, Promise<string>>();
  const bareJson = (bytes: number) => {
    let started = bare.get(bytes);
    if (!started) bare.set(bytes, started = startBareJson(stack, bytes));
    return started;
  };
  const afterRead = new Map<number, Promise<string>>();
  // a store of the bench's kind, its own: in memory, or a file (in a temporary folder removed
  // at the end) when the bench's is a file
  let bareStore = ":memory:";
  if (kv !== ":memory:" && !/^https?:/.test(kv)) {
    const dir = await Deno.makeTempDir({ prefix: "svc-bench-bare-" });
    stack.defer(() => Deno.remove(dir, { recursive: true }));
    bareStore = `${dir}/bare.kv`;
  }
  const bareJsonAfterRead = (bytes: number) => {
    let started = afterRead.get(bytes);
    if (!started) {
      afterRead.set(bytes, started = startBareJson(stack, bytes, "json-kv", bareStore));
    }
    return started;
  };
  const inspector = Deno.env.get("BENCH_PROFILE") ? freePort() : undefined;
  const svc = await startSvc(
    stack,
    {
      SVC_SIM_ANSWER_MS: "0",
      SVC_SIM_TALK_MS: "0",
      SVC_KV: kv,
      // the deprecated 1.0 API answers this client address only
      SVC_DEPRECATED_API_HOST: "127.0.0.1",
    },
    "/health",
    { inspector },
  );
  return { ...svc, hello, bareJson, bareJsonAfterRead, inspector };
}

/**
 * Starts the real server with `env` on a free port, its events posted to a receiver of its own,
 * and answers it once `readyPath` answers, with an administrator's token.
 */
async function startSvc(
  stack: AsyncDisposableStack,
  env: Record<string, string>,
  readyPath = "/health",
  options: { manyFiles?: boolean; inspector?: number } = {},
): Promise<Svc> {
  const events = dialingReceiver();
  stack.defer(() => events.close());
  const svc = await startSvcProcess(stack, { SVC_EVENT_URL: events.url, ...env }, {
    readyPath,
    ...options,
  });
  return { ...svc, events };
}

/**
 * One request through fetch, so a wrong target fails clearly instead of measuring errors; answers
 * the bytes of its body.
 */
async function probe(target: Target): Promise<number> {
  const response = await fetch(target.url, {
    method: target.method,
    headers: target.headers,
    body: target.body,
    signal: bounded(10_000),
  });
  const body = new Uint8Array(await response.arrayBuffer());
  if (!response.ok) {
    const text = new TextDecoder().decode(body);
    throw new BenchError(`${target.method ?? "GET"} ${target.url}: ${response.status} ${text}`);
  }
  return body.byteLength;
}

/** wrk's `-s` script for a method or a body other than a plain GET. */
function luaScript(target: Target): string {
  const lines = [`wrk.method = "${target.method ?? "GET"}"`];
  if (target.body !== undefined) {
    if (target.body.includes("]==]")) throw new BenchError("a body may not contain ]==]");
    lines.push(`wrk.body = [==[${target.body}]==]`);
  }
  return lines.join("\n") + "\n";
}

async function wrk(target: Target, options: { connections?: string } = {}): Promise<Figures> {
  const args = [
    "-t",
    threads,
    "-c",
    options.connections ?? connections,
    "-d",
    `${seconds}s`,
    "--latency",
  ];
  for (const [name, value] of Object.entries(target.headers ?? {})) {
    args.push("-H", `${name}: ${value}`);
  }
  const script = target.method || target.body !== undefined ? await Deno.makeTempFile() : null;
  try {
    if (script) {
      await Deno.writeTextFile(script, luaScript(target));
      args.push("-s", script);
    }
    const output = await run("wrk", [...args, target.url], (seconds + 30) * 1000, {
      capture: true,
    });
    return parseWrk(output);
  } finally {
    if (script) await Deno.remove(script);
  }
}

function parseWrk(output: string): Figures {
  const find = (pattern: RegExp) => {
    const match = output.match(pattern);
    if (!match?.[1]) throw new BenchError(`cannot read ${pattern} in wrk's output:\n${output}`);
    return match[1];
  };
  const socketErrors = output.match(
    /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/,
  );
  const errors = Number(output.match(/Non-2xx or 3xx responses: (\d+)/)?.[1] ?? 0) +
    (socketErrors?.slice(1).reduce((sum, n) => sum + Number(n), 0) ?? 0);
  return {
    requestsPerSec: Number(find(/Requests\/sec:\s+([\d.]+)/)),
    avg: find(/^\s+Latency\s+(\S+)/m),
    p50: find(/^\s+50%\s+(\S+)/m),
    p90: find(/^\s+90%\s+(\S+)/m),
    p99: find(/^\s+99%\s+(\S+)/m),
    errors,
    timeouts: Number(socketErrors?.[4] ?? 0),
  };
}

function printTable(results: WrkResult[]): void {
  const baseline = results[0]?.figures.requestsPerSec ?? 0;
  const rows = [
    ["scenario", "req/s", "vs baseline", "avg", "p50", "p90", "p99", "errors (timeouts)"],
    ...results.map(({ name, figures: f }) => [
      name,
      Math.round(f.requestsPerSec).toLocaleString("en-US"),
      `${(f.requestsPerSec / baseline * 100).toFixed(1)}%`,
      f.avg,
      f.p50,
      f.p90,
      f.p99,
      f.timeouts ? `${f.errors} (${f.timeouts})` : String(f.errors),
    ]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
  for (const row of rows) {
    console.log(
      row.map((cell, i) => i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))
        .join("  "),
    );
  }
}

/** The CTI socket part's figures: memory, then fan-out delays, each after its baseline. */
function printSockets(): void {
  const mb = (kb: number) => kb * 1024 / 1e6;
  for (const { name, startKb, heldKb, sockets } of memory) {
    const perSocket = ((heldKb - startKb) * 1024 / sockets / 1000).toFixed(1);
    const held = `${mb(heldKb).toFixed(1)} MB with ${sockets.toLocaleString("en-US")} idle sockets`;
    console.log(
      `${name}: RSS ${mb(startKb).toFixed(1)} MB at start, ${held}, ${perSocket} kB per socket`,
    );
  }
  for (const { name, samples } of fanouts) {
    const at = quantileOf(samples);
    const max = Math.max(...samples).toFixed(1);
    console.log(
      `${name}: p50 ${at(0.5).toFixed(1)} ms, p99 ${at(0.99).toFixed(1)} ms, max ${max} ms ` +
        `(${FANOUT_EVENTS} events, ${FANOUT_GAP_MS} ms apart)`,
    );
  }
}

/**
 * The scenarios whose name holds one of the words of `BENCH_SCENARIOS` (comma-separated), the
 * hello world always; all when it is unset. A scenario's setup may need an earlier one's (`/agents`
 * logs in on the users the users page imported).
 */
function chosenScenarios(): Scenario[] {
  const words = Deno.env.get("BENCH_SCENARIOS")?.split(",").filter(Boolean) ?? [];
  if (!words.length) return scenarios;
  return scenarios.filter((scenario) =>
    scenario.hello || words.some((word) => scenario.name.includes(word))
  );
}

/**
 * The parts of the bench, in the order they run; `deno task bench <part>…` runs only those, and
 * `--json` prints the figures as one JSON object at the end.
 */
const PARTS = [
  "http",
  "events",
  "dial",
  "ami",
  "amiload",
  "cti",
  "writes",
  "hashing",
  "startup",
  "memory",
  "supervision",
  "queuehistory",
  "servers",
  "day",
] as const;
type Part = typeof PARTS[number];

function chosenParts(args: string[]): { parts: Set<Part>; json: boolean } {
  const named = args.filter((arg) => !arg.startsWith("--"));
  const unknown = named.filter((name) => !(PARTS as readonly string[]).includes(name));
  if (unknown.length) {
    throw new BenchError(`unknown part ${unknown.join(", ")}: choose among ${PARTS.join(", ")}`);
  }
  return {
    parts: new Set(named.length ? named as Part[] : PARTS),
    json: args.includes("--json"),
  };
}

async function main(): Promise<void> {
  const { parts, json } = chosenParts(Deno.args);
  await using stack = new AsyncDisposableStack();
  const results: WrkResult[] = [];
  /** The figures of every part that reports rows: each with its baseline, ratio and target. */
  const rows: Row[] = [];
  const servers = parts.has("http") || parts.has("dial") ? await startServers(stack) : null;
  if (servers && parts.has("http")) {
    await ensureWrk();
    console.log(
      `wrk -t${threads} -c${connections} -d${seconds}s --latency on 127.0.0.1; SVC_KV=${kv}`,
    );
    for (const scenario of chosenScenarios()) {
      const target = await scenario.setup(servers);
      const bytes = await probe(target);
      // just before the route, the bare JSON answer of as many bytes
      const bare = scenario.hello ? undefined : {
        name: `bare Deno.serve JSON answer of the same ${bytes.toLocaleString("en-US")} bytes ` +
          `(for ${scenario.name.split(" (")[0]})`,
        url: `${await servers.bareJson(bytes)}/`,
      };
      const afterRead = scenario.readsStore
        ? {
          name: `bare Deno.serve JSON answer of the same ${bytes.toLocaleString("en-US")} bytes ` +
            `after one Deno KV read (for ${scenario.name.split(" (")[0]})`,
          url: `${await servers.bareJsonAfterRead(bytes)}/`,
        }
        : undefined;
      const headers = { Authorization: "Bearer x" };
      const baselines: WrkResult[] = [];
      for (const baseline of [bare, afterRead]) {
        if (!baseline) continue;
        console.log(`- ${baseline.name}`);
        const figures = await wrk({ url: baseline.url, headers });
        baselines.push({ name: baseline.name, bytes, figures });
      }
      console.log(`- ${scenario.name}`);
      const stopProfile = servers.inspector ? await startProfile(servers.inspector) : null;
      const route: WrkResult = {
        name: scenario.name,
        bytes,
        bare: bare?.name,
        afterRead: afterRead?.name,
        share: scenario.share,
        figures: await wrk(target),
      };
      if (stopProfile) console.log(await stopProfile());
      if (bare && scenario.share !== undefined) {
        // a row with a target: the bare answer and the route once more, in turn, and the better
        // of two of each (the machine's phases move either by 10-20 % between runs)
        console.log(`- again: ${bare.name}, then the route`);
        baselines[0]!.figures = faster(
          baselines[0]!.figures,
          await wrk({ url: bare.url, headers }),
        );
        route.figures = faster(route.figures, await wrk(target));
      }
      results.push(...baselines, route);
    }
    rows.push(...httpRows(results));
  }
  if (parts.has("events")) {
    console.log("- events delivered per second to a local receiver");
    await eventDelivery();
  }
  if (servers && parts.has("dial")) {
    console.log("- from POST /dial/number to the first event");
    await dialLatency(servers);
    console.log("- the same on the Asterisk adapter, against the replayed AMI session");
    await asteriskDialLatency(stack);
  }
  if (parts.has("ami")) {
    console.log("- AMI parser throughput");
    // in pairs: the bare decode-and-split, then the parser, on the same bytes
    const parsed = await amiParserBench();
    for (let n = 0; n + 1 < parsed.length; n += 2) {
      const [bare, parser] = [parsed[n]!, parsed[n + 1]!];
      rows.push({
        name: `AMI ${parser.name}: messages/s`,
        value: parser.count / parser.ms * 1000,
        unit: "/s",
        baseline: { name: `AMI ${bare.name}`, value: bare.count / bare.ms * 1000 },
        ratioAs: "%",
        detail: `${parser.count.toLocaleString("en-US")} messages of ` +
          `${Math.round(parser.bytes / parser.count)} B, the best of 5`,
      });
    }
  }
  if (parts.has("amiload")) {
    console.log("- the Asterisk adapter under load: 50 calls in flight, a flood of events");
    rows.push(...await amiLoadBench());
  }
  if (parts.has("cti")) {
    // the delays suffer from whatever else runs on the machine: say how busy it was
    const load = Deno.loadavg()[0]!.toFixed(2);
    console.log(
      `- CTI sockets: ${CTI_SOCKETS.toLocaleString("en-US")} idle, then fan-out to 1,000 of them ` +
        `(load average ${load} before)`,
    );
    rows.push(...await ctiSockets());
  }
  if (parts.has("writes")) {
    console.log(`- DND changes per second (load average ${Deno.loadavg()[0]!.toFixed(2)} before)`);
    rows.push(...await writesBench(kv));
  }
  if (parts.has("hashing")) {
    console.log("- password hashing: imports with and without passwords, a login storm");
    rows.push(...await hashingBench());
  }
  if (parts.has("startup")) {
    console.log(`- cold start and idle RSS (load average ${Deno.loadavg()[0]!.toFixed(2)} before)`);
    rows.push(...await startupBench());
  }
  if (parts.has("memory")) {
    console.log("- RSS after 10,000 malformed requests");
    rows.push(...await memoryBench());
  }
  if (parts.has("supervision")) {
    await ensureWrk();
    rows.push(...await supervisionBench({ kv, wrk, seconds }));
  }
  if (parts.has("queuehistory")) rows.push(...await queueHistoryBench());
  if (parts.has("servers")) rows.push(...await serversBench());
  if (parts.has("day")) {
    console.log("- a day of traffic on the simulator (100,000 calls), then the idle period");
    rows.push(...await dayBench());
  }
  console.log();
  if (results.length) printTable(results);
  console.log();
  for (const { name, ms } of timings) console.log(`${name}: ${(ms / 1000).toFixed(2)} s`);
  for (const { name, p50, p90 } of latencies) {
    console.log(`${name}: p50 ${p50.toFixed(1)} ms, p90 ${p90.toFixed(1)} ms`);
  }
  for (const { name, count, ms } of rates) {
    const perSecond = Math.round(count / ms * 1000).toLocaleString("en-US");
    console.log(`${name}: ${perSecond}/s (${(ms / 1000).toFixed(2)} s)`);
  }
  printSockets();
  printRows(rows);
  if (json) {
    console.log(JSON.stringify({
      date: new Date().toISOString(),
      cores: navigator.hardwareConcurrency,
      wrk: results,
      timings,
      latencies,
      rates,
      memory,
      rows: rows.map(withRatio),
    }));
  }
  const failed = results.filter(({ figures }) => figures.errors > figures.timeouts);
  if (failed.length > 0) {
    throw new BenchError(`errors during ${failed.map(({ name }) => name).join(", ")}`);
  }
}

/**
 * The rows of the wrk table: each route's req/s next to those of the bare JSON answer of its bytes
 * run just before it, held to its share of them where issue 28 gives one (the contacts list 75 %,
 * the slowest list of each area 50 %).
 */
function httpRows(results: readonly WrkResult[]): Row[] {
  const hello = results[0];
  const rate = (name?: string) => results.find((result) => result.name === name)?.figures;
  return results.flatMap(({ name, bytes, figures, bare: bareName, afterRead, share }) => {
    const bare = results.find(({ name }) => name === bareName);
    if (!bare) return [];
    const percent = figures.requestsPerSec / bare.figures.requestsPerSec * 100;
    const read = rate(afterRead);
    // what the runtime charges a route that must read the store, and how far svc is from that
    const readShare = read
      ? `; the bare answer after one Deno KV read: ${Math.round(read.requestsPerSec)}/s, ${
        (read.requestsPerSec / bare.figures.requestsPerSec * 100).toFixed(1)
      } % of the bare answer's (svc is ${
        (figures.requestsPerSec / read.requestsPerSec * 100).toFixed(1)
      } % of it)`
      : "";
    const helloShare = hello
      ? `; the bare answer is ${
        (bare.figures.requestsPerSec / hello.figures.requestsPerSec * 100).toFixed(1)
      } % of the hello world`
      : "";
    return [{
      name: `${name}: req/s`,
      value: figures.requestsPerSec,
      unit: "/s",
      baseline: { name: bare.name, value: bare.figures.requestsPerSec },
      ratioAs: "%" as const,
      ...(share === undefined
        ? {}
        : { target: { text: `≥ ${share} % of the bare answer's`, met: percent >= share } }),
      detail: `${bytes.toLocaleString("en-US")} B; p99 ${figures.p99}, bare ${bare.figures.p99}` +
        (figures.timeouts ? `; ${figures.timeouts} requests unanswered within wrk's 2 s` : "") +
        readShare + helloShare,
    }];
  });
}

const onSignal = () => interrupt.abort();
Deno.addSignalListener("SIGINT", onSignal);
Deno.addSignalListener("SIGTERM", onSignal);
try {
  await main();
} catch (error) {
  console.error(`bench: ${error instanceof BenchError ? error.message : error}`);
  Deno.exit(1);
}
Deno.exit(0);

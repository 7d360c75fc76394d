/**
 * Calls per second through svc with one and with two real Asterisk servers on this machine (issue
 * 47), each beside the same calls placed by a bare AMI client on the same servers in the same run.
 *
 * - **The servers**: throw-away Asterisks of `tests/peers/asterisk_pbx.ts` (none installed: one line
 *   says the part is skipped, no row), fresh ones for each configuration, with a dialplan of the
 *   bench's own added: an outside number (`0XXXXX…` in `default`) that answers and hangs up after
 *   `HOLD_MS`, and `bench-phone`, where each user's "phone" answers.
 * - **svc**: the real server process (`main.ts`, `SVC_PLATFORM=asterisk`): one server through
 *   `SVC_AMI_*` and `SVC_ASTERISK_CONFIG_DIR`, two through `SVC_ASTERISK_SERVERS` (the second one
 *   `b`). `USERS` users built through `/1.1`, each with a line whose device is a custom endpoint,
 *   `Local/<exten>@bench-phone/n`; with two servers every other line is placed on `b`
 *   (`PUT /1.1/lines/{id}` `{"registrar": "b"}`). svc writes its files, then the Asterisks start
 *   (as `tests/e2e/recorded_pbx.ts` does).
 * - **The call**: `POST /svc/api/2.0/dial/number/{username}` to the outside number: svc sends its
 *   Originate to the caller's server; the caller's "phone" (a Local channel) answers at once, the
 *   outside number answers, the call ends after `HOLD_MS`. Why this shape: svc's `dialNumber`
 *   rings the caller's own device first, and a user's SIP phone that is not registered fails at
 *   once (no contact): a custom Local line is the device that needs no SIP phone, and the call
 *   still takes svc's whole path (route, user's server, Originate, the events of every channel,
 *   the call's end and its history record). A call counts once its caller's `EventReleased` reached
 *   the event receiver (svc hands it over with the `call_ended` of the call, which writes its
 *   history record); the history records are counted at the end (one per call).
 * - **Load**: `CALLS` calls, `USERS` at a time (each user dials again once its last call ended), after
 *   `WARMUP` calls not counted; with two servers the callers alternate between them.
 * - **Baseline**: the same Originates (same channel, context and number) sent straight to each
 *   server's AMI by a bare client (a socket, a login, the Originate, the `Hangup` of the channel it
 *   named), with the same concurrency, on the same servers once svc has stopped.
 *
 * Run alone: `flock /tmp/svc-asterisk-live.lock deno run -A bench/servers.ts` (`BENCH_SERVERS_CALLS`,
 * `BENCH_SERVERS_USERS`; `BENCH_VERBOSE=1` tells each step on stderr).
 */
import { join } from "node:path";
import { BenchError, bounded, callSvc, interrupt, pause, startSvcProcess } from "./processes.ts";
import { printRows, type Row } from "./rows.ts";
import { findAsterisk, type Pbx, preparePbx } from "../tests/peers/asterisk_pbx.ts";

/** Calls counted per configuration, and calls in flight (one per user). */
const CALLS = Number(Deno.env.get("BENCH_SERVERS_CALLS") ?? 600);
// enough that the servers, not the calls' own length, bound the rate: with 40 at a time both svc
// and the bare client were at 40 / the call's length (about 0.8 s) on the 2-core machine
const USERS = Number(Deno.env.get("BENCH_SERVERS_USERS") ?? 200);
/** Calls before the counted ones (the servers' and svc's first calls), not counted. */
const WARMUP = 100;
/** How long the outside number stays up once it answered. */
const HOLD_MS = 300;
/** The outside number every call dials. */
const OUTSIDE = "0612345678";
/** A call not ended within this long counts as failed. */
const CALL_TIMEOUT_MS = 30_000;

const extenOf = (i: number) => String(1001 + i);
const userOf = (i: number) => `bench${extenOf(i)}`;
/** The custom endpoint of user `i`'s line: a Local channel answering in `bench-phone`. */
const deviceOf = (i: number) => `Local/${extenOf(i)}@bench-phone/n`;

/** Added to each server's extensions.conf (after svc's `#tryinclude`). */
const BENCH_DIALPLAN = [
  "",
  "[default]",
  "exten => _0XXXXX.,1,NoOp(bench outside call to ${EXTEN})",
  " same => n,Dial(Local/${EXTEN}@bench-outside/n,30)",
  " same => n,Hangup()",
  "[bench-outside]",
  "exten => _X.,1,Answer()",
  ` same => n,Wait(${HOLD_MS / 1000})`,
  " same => n,Hangup()",
  "[bench-phone]",
  "exten => _X.,1,Answer()",
  " same => n,Wait(120)",
  " same => n,Hangup()",
  "",
].join("\n");

/** What one run of `CALLS` calls gave. */
interface Run {
  ms: number;
  ok: number;
  failed: number;
  /** Each counted call's time from its command to its end (ms). */
  latencies: number[];
}

/**
 * Runs `WARMUP` calls then `CALLS` counted ones, `USERS` at a time: worker `i` places its calls
 * through `call(i)` (true: the call ended as it should), one after the other.
 */
async function drive(call: (i: number) => Promise<boolean>): Promise<Run> {
  const phase = async (count: number): Promise<Run> => {
    let next = 0;
    let ok = 0;
    let failed = 0;
    const latencies: number[] = [];
    const started = performance.now();
    await Promise.all(Array.from({ length: USERS }, async (_, i) => {
      while (next < count) {
        if (interrupt.signal.aborted) throw new BenchError("interrupted");
        next++;
        const at = performance.now();
        if (await call(i)) {
          ok++;
          latencies.push(performance.now() - at);
        } else failed++;
      }
    }));
    return { ms: performance.now() - started, ok, failed, latencies };
  };
  await phase(WARMUP);
  return await phase(CALLS);
}

// --- svc ----------------------------------------------------------------------------------------

/** Where svc posts its events: each caller's end of call (`EventReleased`, `EventFailure`). */
function endsReceiver() {
  const waiting = new Map<string, (ok: boolean) => void>();
  let events = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const event = await request.json();
    events++;
    const cti = event.message?.ctiMessage;
    const type = cti?.eventType;
    // the caller's own leg: its phone is the DN
    if (
      (type === "EventReleased" || type === "EventFailure") && cti.DN === event.username?.slice(5)
    ) {
      const resolve = waiting.get(event.username);
      waiting.delete(event.username);
      resolve?.(type === "EventReleased");
    }
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/events`,
    get events() {
      return events;
    },
    /** True once `username`'s call ended, false if it failed or did not end in time. */
    ended(username: string): Promise<boolean> {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiting.delete(username);
          resolve(false);
        }, CALL_TIMEOUT_MS);
        waiting.set(username, (ok) => {
          clearTimeout(timer);
          resolve(ok);
        });
      });
    },
    close: () => server.shutdown(),
  };
}

/** Builds the users through `/1.1`: user, line, extension, custom endpoint; logs each in. */
async function buildUsers(
  svc: { svc: string; adminToken: string },
  placeOn: (i: number) => string | null,
): Promise<void> {
  const api = async (method: string, path: string, body?: unknown) => {
    const text = await callSvc(
      svc.svc,
      svc.adminToken,
      method,
      `/1.1${path}`,
      JSON.stringify(body),
    );
    return text ? JSON.parse(text) : null;
  };
  for (let i = 0; i < USERS; i++) {
    const user = await api("POST", "/users", {
      firstname: "Bench",
      lastname: extenOf(i),
      username: userOf(i),
      password: `${userOf(i)}-password`,
    });
    const line = await api("POST", "/lines", { context: "default" });
    const extension = await api("POST", "/extensions", { exten: extenOf(i), context: "default" });
    const custom = await api("POST", "/endpoints/custom", { interface: deviceOf(i) });
    await api("PUT", `/lines/${line.id}/extensions/${extension.id}`);
    await api("PUT", `/lines/${line.id}/endpoints/custom/${custom.id}`);
    await api("PUT", `/users/${user.id}/lines/${line.id}`);
    const server = placeOn(i);
    if (server) await api("PUT", `/lines/${line.id}`, { registrar: server });
  }
  for (let i = 0; i < USERS; i++) {
    const response = await fetch(`${svc.svc}/svc/api/2.0/auth/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ login: userOf(i), password: `${userOf(i)}-password` }),
      signal: bounded(30_000),
    });
    if (!response.ok) throw new BenchError(`login ${userOf(i)}: ${response.status}`);
    await response.body?.cancel();
  }
}

/** Waits until `test` holds, checking every 100 ms, at most `ms`. */
async function until(test: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!await test()) {
    if (interrupt.signal.aborted) throw new BenchError("interrupted");
    if (performance.now() > end) throw new BenchError(`servers: not within ${ms} ms: ${what}`);
    await pause(100);
  }
}

/** With BENCH_VERBOSE=1, where the part is (stderr). */
const progress = (what: string) => {
  if (Deno.env.get("BENCH_VERBOSE") === "1") console.error(`  servers: ${what}`);
};

const read = (path: string) => Deno.readTextFile(path).catch(() => "");

/**
 * svc on `pbxs` (prepared, not running): started, its users built and placed, its files written,
 * then the Asterisks started; the calls through it; svc stopped. Answers the run and the history
 * records svc wrote.
 */
async function svcRun(pbxs: Pbx[], dir: string): Promise<Run & { records: number }> {
  await using stack = new AsyncDisposableStack();
  const names = pbxs.map((_, n) => n === 0 ? "main" : "b");
  const events = endsReceiver();
  stack.defer(() => events.close());
  let env: Record<string, string>;
  if (pbxs.length === 1) {
    const [pbx] = pbxs as [Pbx];
    env = {
      SVC_AMI_PORT: String(pbx.amiPort),
      SVC_AMI_USERNAME: pbx.ami.username,
      SVC_AMI_SECRET: pbx.ami.secret,
      SVC_ASTERISK_CONFIG_DIR: pbx.configDir,
    };
  } else {
    const file = join(dir, "servers.json");
    await Deno.writeTextFile(
      file,
      JSON.stringify(pbxs.map((pbx, n) => ({
        name: names[n],
        amiHost: "127.0.0.1",
        amiPort: pbx.amiPort,
        amiUser: pbx.ami.username,
        amiSecret: pbx.ami.secret,
        configDir: pbx.configDir,
        sipHost: "127.0.0.1",
        sipPort: pbx.sipPort,
      }))),
    );
    env = { SVC_ASTERISK_SERVERS: file };
  }
  const svc = await startSvcProcess(stack, {
    ...env,
    SVC_PLATFORM: "asterisk",
    SVC_KV: join(dir, `svc-${pbxs.length}.kv`),
    SVC_EVENT_URL: events.url,
    SVC_HASH_ITERATIONS: "100000",
  }, { readyPath: "/health" });
  const serverOf = (i: number) => i % pbxs.length;
  await buildUsers(svc, (i) => serverOf(i) === 0 ? null : names[serverOf(i)]!);
  // svc's files first, each user's extension on its own server: then Asterisk reads them
  await until(
    async () => {
      for (const [n, pbx] of pbxs.entries()) {
        const text = await read(join(pbx.configDir, "extensions_svc.conf"));
        for (let i = 0; i < USERS; i++) {
          const placed = serverOf(i) === n
            ? `hint,${deviceOf(i)}`
            : `1,NoOp\\(call to \\S+ on server ${names[serverOf(i)]}\\)`;
          if (!new RegExp(`^exten => ${extenOf(i)},${placed}$`, "m").test(text)) return false;
        }
      }
      return true;
    },
    20_000,
    "svc's files with every user on its server",
  );
  progress("svc's files written; Asterisk starting");
  await Promise.all(pbxs.map((pbx) => pbx.start()));
  await until(
    async () => {
      const response = await fetch(`${svc.svc}/ready`, { signal: bounded(5_000) });
      const body = await response.json().catch(() => null);
      return response.ok &&
        (body?.servers ?? [{ state: "ready" }]).every((s: { state: string }) =>
          s.state === "ready"
        );
    },
    30_000,
    "svc ready on every server",
  );
  progress("svc ready on every server; calls");
  const run = await drive(async (i) => {
    const ended = events.ended(userOf(i));
    const response = await fetch(`${svc.svc}/svc/api/2.0/dial/number/${userOf(i)}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${svc.adminToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({ destination: OUTSIDE }),
      signal: bounded(CALL_TIMEOUT_MS),
    });
    if (!response.ok) {
      throw new BenchError(`dial ${userOf(i)}: ${response.status} ${await response.text()}`);
    }
    await response.body?.cancel();
    return await ended;
  });
  progress(`calls done: ${run.ok} ended, ${run.failed} failed; history`);
  // one history record per call of each caller (the counted ones and the warm-up's)
  let records = 0;
  for (let i = 0; i < USERS; i++) {
    const text = await callSvc(
      svc.svc,
      svc.adminToken,
      "GET",
      `/svc/api/2.0/history/${userOf(i)}?size=1000`,
    );
    records += JSON.parse(text).data.entries.length;
  }
  return { ...run, records };
}

// --- the bare AMI client --------------------------------------------------------------------------

const encoder = new TextEncoder();

/** A bare AMI client: logged in with every event, Originates, the `Hangup` of each channel named. */
async function bareAmi(pbx: Pbx) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: pbx.amiPort });
  conn.setNoDelay(true);
  const waiting = new Map<string, (ok: boolean) => void>();
  /** Originates by ActionID, to their channel id (a refused one fails at once). */
  const actions = new Map<string, string>();
  let loggedIn: (ok: boolean) => void = () => {};
  const login = new Promise<boolean>((resolve) => loggedIn = resolve);
  let chain = Promise.resolve();
  const send = (text: string) => {
    chain = chain.then(async () => {
      const bytes = encoder.encode(text);
      for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
    });
    return chain;
  };
  const reading = (async () => {
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(65536);
    let rest = "";
    let banner = true;
    for (;;) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) break;
      rest += decoder.decode(buffer.subarray(0, n), { stream: true });
      if (banner) {
        // `Asterisk Call Manager/<version>`: one line before the first message
        const end = rest.indexOf("\r\n");
        if (end < 0) continue;
        rest = rest.slice(end + 2);
        banner = false;
      }
      let pos = 0;
      for (let end; (end = rest.indexOf("\r\n\r\n", pos)) >= 0; pos = end + 4) {
        const message = rest.slice(pos, end);
        const field = (name: string) => {
          const at = message.indexOf(`\n${name}: `);
          const start = at < 0 ? (message.startsWith(`${name}: `) ? 0 : -1) : at + 1;
          if (start < 0) return "";
          const value = start + name.length + 2;
          const stop = message.indexOf("\r\n", value);
          return message.slice(value, stop < 0 ? undefined : stop);
        };
        if (message.startsWith("Event: Hangup\r\n")) {
          const id = field("Uniqueid");
          waiting.get(id)?.(true);
          waiting.delete(id);
        } else if (message.startsWith("Response: ")) {
          const actionId = field("ActionID");
          if (actionId === "login") loggedIn(message.startsWith("Response: Success"));
          const id = actions.get(actionId);
          actions.delete(actionId);
          if (id !== undefined && !message.startsWith("Response: Success")) {
            waiting.get(id)?.(false);
            waiting.delete(id);
          }
        } else if (message.startsWith("Event: OriginateResponse\r\n")) {
          if (field("Response") === "Failure") {
            const id = field("Uniqueid") || field("ChannelId");
            waiting.get(id)?.(false);
            waiting.delete(id);
          }
        }
      }
      rest = rest.slice(pos);
    }
  })();
  await send(
    `Action: Login\r\nActionID: login\r\nUsername: ${pbx.ami.username}\r\n` +
      `Secret: ${pbx.ami.secret}\r\nEvents: on\r\n\r\n`,
  );
  const refused = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000));
  if (!await Promise.race([login, refused])) {
    throw new BenchError("servers: the bare AMI client's login was refused");
  }
  let serial = 0;
  return {
    /** Originates user `i`'s call; true once the channel it named hung up. */
    call(i: number): Promise<boolean> {
      const id = crypto.randomUUID();
      const actionId = `o${++serial}`;
      const ended = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          waiting.delete(id);
          resolve(false);
        }, CALL_TIMEOUT_MS);
        waiting.set(id, (ok) => {
          clearTimeout(timer);
          resolve(ok);
        });
      });
      actions.set(actionId, id);
      send(
        `Action: Originate\r\nActionID: ${actionId}\r\nChannel: ${deviceOf(i)}\r\n` +
          `Context: default\r\nExten: ${OUTSIDE}\r\nPriority: 1\r\nTimeout: ${CALL_TIMEOUT_MS}\r\n` +
          `ChannelId: ${id}\r\nAsync: true\r\n\r\n`,
      ).catch(() => {});
      return ended;
    },
    async close() {
      await send("Action: Logoff\r\nActionID: logoff\r\n\r\n").catch(() => {});
      try {
        conn.close();
      } catch {
        // closed by Asterisk
      }
      await reading;
    },
  };
}

/** The same calls straight to each server's AMI: caller `i` on server `i % servers`. */
async function bareRun(pbxs: Pbx[]): Promise<Run> {
  const clients = await Promise.all(pbxs.map(bareAmi));
  try {
    return await drive((i) => clients[i % clients.length]!.call(i));
  } finally {
    for (const client of clients) await client.close();
  }
}

// --- the part -------------------------------------------------------------------------------------

/** One configuration: `count` fresh servers, svc's calls through them, then the bare client's. */
async function configuration(
  prefix: string,
  count: number,
): Promise<{ svc: Run & { records: number }; bare: Run }> {
  await using stack = new AsyncDisposableStack();
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-servers-" });
  stack.defer(() => Deno.remove(dir, { recursive: true }));
  const pbxs: Pbx[] = [];
  for (let n = 0; n < count; n++) {
    const pbx = await preparePbx({
      prefix,
      config: { "extensions.conf": (ours) => ours + BENCH_DIALPLAN },
    });
    stack.defer(() => pbx.stop());
    pbxs.push(pbx);
  }
  const svc = await svcRun(pbxs, dir);
  progress("svc stopped; the bare client's calls");
  const bare = await bareRun(pbxs);
  progress("bare calls done");
  return { svc, bare };
}

const perSecond = (run: Run) => run.ok / run.ms * 1000;
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
};

export async function serversBench(): Promise<Row[]> {
  const prefix = findAsterisk();
  if (!prefix) {
    console.log("- servers: skipped, no Asterisk installed (findAsterisk() found none)");
    return [];
  }
  const runs = [];
  for (const count of [1, 2]) {
    console.log(
      `- servers: ${count} Asterisk server${count > 1 ? "s" : ""}, ${CALLS} calls ` +
        `(${USERS} at a time, ${HOLD_MS} ms each) through svc, then through a bare AMI client ` +
        `(load average ${Deno.loadavg()[0]!.toFixed(2)} before)`,
    );
    runs.push({ count, ...await configuration(prefix, count) });
  }
  const [one, two] = runs as [typeof runs[0], typeof runs[0]];
  const describe = (run: Run) =>
    `${run.ok} ended${run.failed ? `, ${run.failed} FAILED` : ""} in ` +
    `${(run.ms / 1000).toFixed(2)} s, command → end p50 ${
      quantile(run.latencies, 0.5).toFixed(0)
    } ` +
    `ms, p99 ${quantile(run.latencies, 0.99).toFixed(0)} ms`;
  const rows = runs.map(({ count, svc, bare }): Row => ({
    name: `Asterisk, ${count} server${count > 1 ? "s" : ""}: calls/s through svc ` +
      `(POST /dial/number → the caller's EventReleased)`,
    value: perSecond(svc),
    unit: "/s",
    baseline: { name: `the same Originates from a bare AMI client`, value: perSecond(bare) },
    ratioAs: "%",
    detail: `svc: ${describe(svc)}, ${svc.records} history records for ` +
      `${svc.ok + svc.failed + WARMUP} calls; bare: ${describe(bare)}` +
      (count > 1
        ? `; ${count} servers over 1: svc ${(perSecond(svc) / perSecond(one.svc)).toFixed(2)} ×, ` +
          `bare ${(perSecond(bare) / perSecond(one.bare)).toFixed(2)} ×`
        : ""),
  }));
  for (const { svc, bare } of [one, two]) {
    if (svc.failed > CALLS / 10 || bare.failed > CALLS / 10) {
      printRows(rows);
      throw new BenchError("servers: more than a tenth of the calls failed");
    }
  }
  return rows;
}

if (import.meta.main) {
  // stopped as `deno task bench` is: what runs stops, every server is stopped on the way out
  const onSignal = () => interrupt.abort();
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
  printRows(await serversBench());
  Deno.exit(0);
}

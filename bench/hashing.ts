/**
 * Password hashing and users imports (docs/performance.md), each figure next to its bare baseline
 * measured in the same run:
 *
 * - t_hash: one PBKDF2-SHA256 derivation at the default cost on one core (Web Crypto, in this
 *   process), the unit of the floors below; next to the time each core gives a hash when every
 *   core hashes at once (bare hashing in this process);
 * - `POST /1.1/users/import` of 5,000 rows without passwords (user, SIP line, extension), on a fresh
 *   server each time, next to writing the same records and index keys straight to Deno KV
 *   (`:memory:`) from this process, each index key checked free as the import must (target, issue
 *   28: ≤ 2 × that);
 * - the same import of 200 rows with passwords, at once and as a job (`Prefer: respond-async`,
 *   until `GET /1.1/jobs/{id}` says it ended), next to the floor rows × t_hash / cores (target
 *   ≤ 1.1 × the floor), with the `GET /health` delays meanwhile;
 * - 500 `POST /auth/login`, 50 at once, next to the floor cores / t_hash per second (target
 *   ≥ 0.9 × the floor), with the `GET /health` delays meanwhile. The `/health` baseline is the
 *   same prober on the idle server.
 *
 * The floors assume every core free. On a machine shared with other work, the rate of bare hashing
 * (`cores` derivations at a time in this process) measured just before each of those rows tells
 * what the machine gave at that moment.
 *
 * Run alone with `deno run -A bench/hashing.ts [--json]`; `deno task bench` runs it too.
 */
import { buildUser } from "../lib/store/users.ts";
import { BenchError, callSvc, pause, startSvcProcess } from "./processes.ts";
import { median, printRows, type Row, withRatio } from "./rows.ts";

const cores = navigator.hardwareConcurrency;
const ITERATIONS = 600_000;

/** One real server of its own (`main.ts`, `:memory:` store, default hashing settings). */
interface Server {
  url: string;
  token: string;
  stop(): Promise<void>;
}

async function startServer(): Promise<Server> {
  const stack = new AsyncDisposableStack();
  try {
    const { svc, adminToken } = await startSvcProcess(stack, { SVC_KV: ":memory:" });
    return { url: svc, token: adminToken, stop: () => stack.disposeAsync() };
  } catch (error) {
    await stack.disposeAsync();
    throw error;
  }
}

/** One request as the administrator; a non-2xx answer stops the bench. Answers the JSON body. */
async function send(
  server: Server,
  method: string,
  path: string,
  body?: unknown,
  type = "application/json",
) {
  const text = await callSvc(
    server.url,
    server.token,
    method,
    path,
    body === undefined || typeof body === "string" ? body : JSON.stringify(body),
    type,
  );
  return text ? JSON.parse(text) : null;
}

function quantile(samples: number[], q: number): number {
  const sorted = samples.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** One derivation at the default cost, as `lib/auth/passwords.ts` does it, in ms. */
async function oneHash(): Promise<number> {
  const started = performance.now();
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode("bench-password"),
    "PBKDF2",
    false,
    ["deriveBits"],
  );
  await crypto.subtle.deriveBits(
    {
      name: "PBKDF2",
      hash: "SHA-256",
      salt: crypto.getRandomValues(new Uint8Array(16)),
      iterations: ITERATIONS,
    },
    key,
    256,
  );
  return performance.now() - started;
}

/**
 * Derivations per second with `cores` of them at a time in this process, `count` in all: what the
 * machine gives to bare hashing at that moment (other work on it takes its share).
 */
async function bareHashRate(count: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: cores }, async () => {
    while (next++ < count) await oneHash();
  }));
  return count / (performance.now() - started) * 1000;
}

/** `perSecond` against `rate`, the bare hashing of this moment. */
const againstBare = (perSecond: number, rate: number) =>
  `bare hashing just before: ${rate.toFixed(1)}/s, ${(perSecond / rate).toFixed(2)} × that`;

/**
 * Asks `GET /health` one request after the other, 10 ms apart, until stopped; answers the delays
 * (ms).
 */
function healthProber(url: string) {
  const samples: number[] = [];
  let running = true;
  const done = (async () => {
    while (running) {
      const started = performance.now();
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(30_000) });
      await response.arrayBuffer();
      if (!response.ok) throw new BenchError(`GET /health: ${response.status}`);
      samples.push(performance.now() - started);
      await pause(10);
    }
  })();
  return {
    async stop() {
      running = false;
      await done;
      return samples;
    },
  };
}

const healthFigures = (samples: number[]) =>
  `p50 ${quantile(samples, 0.5).toFixed(1)} ms, p99 ${quantile(samples, 0.99).toFixed(1)} ms, ` +
  `max ${Math.max(...samples).toFixed(1)} ms (${samples.length} requests)`;

/** `count` rows from `first`: users with a SIP line and an extension, with passwords if asked. */
function usersCsv(first: number, count: number, passwords: boolean): string {
  const rows = [
    `firstname,lastname,line_protocol,context,exten${passwords ? ",username,password" : ""}`,
  ];
  for (let n = first; n < first + count; n++) {
    const login = passwords ? `,hash${n},hash${n}-password` : "";
    rows.push(`User,${n},sip,bench,${10000 + n}${login}`);
  }
  return rows.join("\n");
}

const BENCH_CONTEXT = { name: "bench", user_ranges: [{ start: "10000", end: "99999" }] };
const CSV_TYPE = "text/csv";

/** Times one 5,000-row import without passwords on a fresh server. */
async function importWithoutPasswords(): Promise<number> {
  const server = await startServer();
  try {
    await send(server, "POST", "/1.1/contexts", BENCH_CONTEXT);
    const started = performance.now();
    const { created } = await send(
      server,
      "POST",
      "/1.1/users/import",
      usersCsv(0, 5000, false),
      CSV_TYPE,
    );
    const ms = performance.now() - started;
    if (created.length !== 5000) throw new BenchError(`${created.length} rows created`);
    return ms;
  } finally {
    await server.stop();
  }
}

/** The records one row of that import creates (user, SIP line, endpoint, extension), as svc builds them. */
async function rowRecords(n: number) {
  const text = () => crypto.randomUUID().slice(0, 8);
  // the user as svc builds it (decisions §10's defaults), with its line
  const user = {
    ...await buildUser(n, { firstname: "User", lastname: `${n}` }),
    line_ids: [n],
    caller_id: `"User ${n}"`,
    password_hash: null,
  };
  const sip = {
    id: n,
    username: text(),
    secret: text(),
    type: "friend",
    host: "dynamic",
    options: [],
    line_id: n,
  };
  const exten = `${10000 + n}`;
  const extension = { id: n, exten, context: "bench", enabled: true, line_id: n };
  const line = {
    id: n,
    name: text(),
    protocol: "sip",
    context: "bench",
    position: 1,
    provisioning_code: `${100000 + n}`,
    caller_id_name: `User ${n}`,
    caller_id_num: exten,
    caller_id_explicit: false,
    device_id: null,
    endpoint: { type: "sip", id: n },
    extension_ids: [n],
    user_ids: [n],
  };
  const records: [Deno.KvKey, unknown][] = [
    [["endpoints_sip", n], sip],
    [["extensions", n], extension],
    [["lines", n], line],
    [["users", n], user],
  ];
  // the unique values, each an index key naming its record: the import must find them free
  const indexes: [Deno.KvKey, Deno.KvKey][] = [
    [["endpoints_sip_by_username", sip.username], ["endpoints_sip", n]],
    [["extensions_by_exten", "bench", exten], ["extensions", n]],
    [["lines_by_name", line.name], ["lines", n]],
    [["lines_by_provisioning_code", line.provisioning_code], ["lines", n]],
    [["users_by_uuid", user.uuid], ["users", n]],
  ];
  return { records, indexes };
}

/**
 * The bare baseline of that import: what it must write, straight to Deno KV, one atomic operation
 * after the other: per row the four records as svc builds them and their five index keys, each
 * index key checked free in the operation that writes it (the import answers a taken value as a
 * conflict and never overwrites it), within Deno KV's limits for one operation (1,000 mutations,
 * 100 checks). With `flat`, the first baseline of this bench instead: records of the same sizes made
 * of one long string, no check (cheaper to serialise than the real records; 50 operations rather
 * than 250).
 */
async function bareKvWrite(rows: number, { flat = false } = {}): Promise<number> {
  const kv = await Deno.openKv(":memory:");
  try {
    const filler = (bytes: number) => "x".repeat(bytes);
    const started = performance.now();
    let op = kv.atomic();
    let mutations = 0;
    let checks = 0;
    for (let n = 1; n <= rows; n++) {
      const { records, indexes } = flat
        ? {
          records: [
            [["users", n], { id: n, uuid: crypto.randomUUID(), data: filler(700) }],
            [["lines", n], { id: n, data: filler(300) }],
            [["endpoints_sip", n], { id: n, data: filler(180) }],
            [["extensions", n], { id: n, data: filler(120) }],
          ] as [Deno.KvKey, unknown][],
          indexes: ["users_by_uuid", "lines_by_name", "lines_by_code", "sip_by_name", "ext"]
            .map((index) => [[index, `${index}-${n}`], ["users", n]] as [Deno.KvKey, Deno.KvKey]),
        }
        : await rowRecords(n);
      const rowChecks = flat ? 0 : indexes.length;
      if (mutations + records.length + indexes.length > 900 || checks + rowChecks > 100) {
        if (!(await op.commit()).ok) throw new BenchError("bare write: an index key was taken");
        op = kv.atomic();
        mutations = checks = 0;
      }
      for (const [key, value] of [...records, ...indexes]) op.set(key, value);
      if (!flat) { for (const [key] of indexes) op.check({ key, versionstamp: null }); }
      mutations += records.length + indexes.length;
      checks += rowChecks;
    }
    await op.commit();
    return performance.now() - started;
  } finally {
    kv.close();
  }
}

/** Waits for the job at `path` to end, reading it every 100 ms; answers its view. */
async function jobEnd(server: Server, path: string) {
  for (;;) {
    const job = await send(server, "GET", path);
    if (job.state === "succeeded" || job.state === "failed") return job;
    await pause(100);
  }
}

/**
 * Runs every measurement and answers the rows (`bench/rows.ts`), each with its baseline.
 *
 * @example
 * printRows(await hashingBench());
 */
export async function hashingBench(): Promise<Row[]> {
  const rows: Row[] = [];
  // the figures suffer from whatever else runs on the machine: say how busy it was
  const load = Deno.loadavg()[0]!.toFixed(2);
  await oneHash(); // warm-up
  const tHash = median(await sequence(7, oneHash));
  // what one core gives each hash when every core hashes: the floors below assume t_hash
  const allCoresMs = cores / await bareHashRate(8 * cores) * 1000;
  rows.push({
    name: `one password hash (PBKDF2-SHA256, ${
      ITERATIONS.toLocaleString("en-US")
    } iterations) on one core: t_hash`,
    value: tHash,
    unit: "ms",
    detail: `median of 7, ${cores} cores; load average ${load} at the start`,
    baseline: {
      name: `bare hashing, ${cores} at once: ms per hash on each core (cores / its rate)`,
      value: allCoresMs,
    },
  });

  const imports = await sequence(3, importWithoutPasswords);
  const bare = await sequence(3, () => bareKvWrite(5000));
  const flat = await sequence(3, () => bareKvWrite(5000, { flat: true }));
  rows.push({
    name:
      "POST /1.1/users/import, 5,000 rows without passwords (user + SIP line + extension), median of 3 fresh servers",
    value: median(imports) / 1000,
    unit: "s",
    detail: `runs ${imports.map((ms) => (ms / 1000).toFixed(2)).join(", ")} s; flat records of ` +
      `the same sizes without the checks: ${(median(flat) / 1000).toFixed(2)} s, ` +
      `${(median(imports) / median(flat)).toFixed(2)} × that`,
    baseline: {
      name:
        "the same 20,000 records and 25,000 index keys, each checked free, straight to Deno KV (:memory:)",
      value: median(bare) / 1000,
      unit: "s",
    },
    target: { text: "≤ 2 × the bare Deno KV writes", met: median(imports) <= 2 * median(bare) },
  });

  const server = await startServer();
  try {
    await send(server, "POST", "/1.1/contexts", BENCH_CONTEXT);
    await healthProber(server.url).stop(); // one request: the connection and the route warm up
    const idle = healthProber(server.url);
    await pause(3000);
    const idleSamples = await idle.stop();
    const idleP99 = quantile(idleSamples, 0.99);
    const healthBaseline = {
      name: "GET /health p99 on the idle server",
      value: idleP99,
      unit: "ms",
    };

    // 200 rows with passwords, at once, with /health asked meanwhile
    const floor = 200 * tHash / cores;
    let bare = await bareHashRate(8 * cores);
    const prober = healthProber(server.url);
    let started = performance.now();
    await send(server, "POST", "/1.1/users/import", usersCsv(0, 200, true), CSV_TYPE);
    const syncMs = performance.now() - started;
    const duringImport = await prober.stop();
    rows.push({
      name: "POST /1.1/users/import, 200 rows with passwords",
      value: syncMs / 1000,
      unit: "s",
      detail: `${(syncMs / 200).toFixed(1)} ms per row; ${againstBare(200 / syncMs * 1000, bare)}`,
      baseline: { name: "floor rows × t_hash / cores", value: floor / 1000, unit: "s" },
      target: { text: "≤ 1.1 × the floor", met: syncMs <= 1.1 * floor },
    });
    rows.push({
      name: "GET /health p99 during that import",
      value: quantile(duringImport, 0.99),
      unit: "ms",
      detail: healthFigures(duringImport),
      baseline: healthBaseline,
      target: { text: "< 50 ms", met: quantile(duringImport, 0.99) < 50 },
    });

    // the same as a job
    bare = await bareHashRate(8 * cores);
    started = performance.now();
    const accepted = await fetch(`${server.url}/1.1/users/import`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${server.token}`,
        "Content-Type": CSV_TYPE,
        Prefer: "respond-async",
      },
      body: usersCsv(200, 200, true),
    });
    await accepted.body?.cancel();
    if (accepted.status !== 202) throw new BenchError(`job: ${accepted.status}`);
    const job = await jobEnd(server, accepted.headers.get("location")!);
    const jobMs = performance.now() - started;
    if (job.state !== "succeeded") throw new BenchError(`job: ${JSON.stringify(job.errors)}`);
    rows.push({
      name: "the same as a job (Prefer: respond-async, 202, then GET /1.1/jobs/{id} every 100 ms)",
      value: jobMs / 1000,
      unit: "s",
      detail: againstBare(200 / jobMs * 1000, bare),
      baseline: { name: "floor rows × t_hash / cores", value: floor / 1000, unit: "s" },
      target: { text: "≤ 1.1 × the floor", met: jobMs <= 1.1 * floor },
    });

    // the login storm over the 400 users just imported
    bare = await bareHashRate(8 * cores);
    const storm = await loginStorm(server, 500, 50, 400);
    const floorRate = cores / tHash * 1000;
    rows.push({
      name: "500 POST /svc/api/2.0/auth/login, 50 at once",
      value: storm.perSecond,
      unit: "/s",
      detail: `${storm.failures} failures; ${againstBare(storm.perSecond, bare)}`,
      baseline: { name: "cores / t_hash", value: floorRate, unit: "/s" },
      target: {
        text: "≥ 0.9 × cores / t_hash, no failure",
        met: storm.perSecond >= 0.9 * floorRate && storm.failures === 0,
      },
    });
    rows.push({
      name: "GET /health p99 during the login storm",
      value: quantile(storm.health, 0.99),
      unit: "ms",
      detail: healthFigures(storm.health),
      baseline: healthBaseline,
      target: { text: "< 50 ms", met: quantile(storm.health, 0.99) < 50 },
    });
  } finally {
    await server.stop();
  }
  return rows;
}

/** Runs `fn` `count` times, one after the other. */
async function sequence<T>(count: number, fn: () => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (let n = 0; n < count; n++) results.push(await fn());
  return results;
}

/** `total` logins of the users `hash0`… (`users` of them), `concurrency` at once, with /health. */
async function loginStorm(server: Server, total: number, concurrency: number, users: number) {
  let next = 0;
  let failures = 0;
  const prober = healthProber(server.url);
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const n = next++ % users;
      const response = await fetch(`${server.url}/svc/api/2.0/auth/login`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ login: `hash${n}`, password: `hash${n}-password` }),
        signal: AbortSignal.timeout(120_000),
      });
      await response.arrayBuffer();
      if (response.status !== 200) failures++;
    }
  }));
  const ms = performance.now() - started;
  return { perSecond: total / ms * 1000, failures, health: await prober.stop() };
}

if (import.meta.main) {
  const rows = await hashingBench();
  printRows(rows);
  if (Deno.args.includes("--json")) {
    const date = new Date().toISOString();
    console.log(JSON.stringify({ date, cores, results: rows.map(withRatio) }));
  }
}

/**
 * A contact centre's day on the simulator (issue 27 §4), against the real server process: 100,000
 * calls of every kind the simulator has — answered, busy, not answered, forwarded, queued to
 * agents, to the outside — dialled through the 2.0 API at a steady rate (compressed into at most
 * 15 minutes), then an idle period as long as the event retention (set to 60 s here: the idle hour
 * of the default retention, compressed). Checked, not just timed:
 *
 * - every event reaches `eventUrl` once (no `X-Svc-Event-Id` twice) and every dial ended for its
 *   caller (`EventReleased` or `EventFailure` on the caller's phone);
 * - the call history holds one record for each dial's caller (read from the store file once the
 *   server stopped);
 * - the server's RSS at the end of the idle period against the one before the traffic (target:
 *   within 20 MB), and the store file's size before, after the traffic and after the idle period
 *   (the event log and outbox past their retention are gone; the history stays, bounded by
 *   `SVC_CALL_HISTORY_RETENTION_DAYS`).
 *
 * Run alone: `deno run -A bench/day.ts [calls]` (`BENCH_DAY_CALLS`, `BENCH_DAY_RATE` per second;
 * `BENCH_PROFILE=1` prints where the server's time went from the 10th to the 30th second).
 */
import { join } from "node:path";
import { BenchError, bounded, callSvc, pause, rssKb, startSvcProcess } from "./processes.ts";
import { startProfile } from "./profile.ts";
import { printRows, type Row } from "./rows.ts";

const PROFILE = Deno.env.get("BENCH_PROFILE") === "1";

/** The people: 40 callers, 30 who answer, 10 agents' phones, 10 forwarding, 5 busy, 5 not answering. */
const CALLERS = range(1001, 40);
const ANSWERING = range(1041, 30);
const AGENT_PHONES = range(1071, 10);
const FORWARDING = range(1081, 10);
const BUSY = range(1091, 5);
const NOT_ANSWERING = range(1096, 5);
const QUEUE_NUMBER = "3000";
const OUTSIDE = "0612345678";

function range(first: number, count: number): string[] {
  return Array.from({ length: count }, (_, i) => String(first + i));
}

const username = (extension: string) => `u${extension}`;

/** The kinds of call, each with its share of the day (in 20ths). */
const KINDS = [
  ["answered", 9],
  ["queue", 4],
  ["forwarded", 2],
  ["busy", 2],
  ["not answered", 1],
  ["outside", 2],
] as const;
type Kind = typeof KINDS[number][0];
const SCHEDULE: Kind[] = KINDS.flatMap(([kind, share]) => Array<Kind>(share).fill(kind));

/** What reaches `eventUrl`: ids seen, duplicates, the final events of each caller. */
function eventReceiver() {
  const seen = new Set<string>();
  let duplicates = 0;
  let lastAt = performance.now();
  const ends = new Map<string, number>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const event = await request.json();
    const id = request.headers.get("X-Svc-Event-Id") ?? "";
    lastAt = performance.now();
    if (seen.has(id)) duplicates++;
    seen.add(id);
    const type = event.message?.ctiMessage?.eventType;
    if (type === "EventReleased" || type === "EventFailure") {
      // a caller's own leg: its phone is the DN
      if (event.message.ctiMessage.DN && CALLERS.includes(event.message.ctiMessage.DN)) {
        const key = `${event.username} ${event.message.ctiMessage.uniqueId}`;
        ends.set(key, (ends.get(key) ?? 0) + 1);
      }
    }
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/events`,
    get received() {
      return seen.size;
    },
    get duplicates() {
      return duplicates;
    },
    /** The callers' legs that ended, by caller. */
    endedLegs(): Map<string, number> {
      const byCaller = new Map<string, number>();
      for (const key of ends.keys()) {
        const caller = key.split(" ")[0]!;
        byCaller.set(caller, (byCaller.get(caller) ?? 0) + 1);
      }
      return byCaller;
    },
    /** Legs whose end came more than once. */
    get endedTwice() {
      return [...ends.values()].filter((n) => n > 1).length;
    },
    quietFor: () => performance.now() - lastAt,
    close: () => server.shutdown(),
  };
}

/** The store file and its WAL, in MB. */
async function storeMb(path: string): Promise<number> {
  let bytes = 0;
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    bytes += await Deno.stat(file).then((info) => info.size, () => 0);
  }
  return bytes / 1e6;
}

async function provision(svc: string, token: string): Promise<void> {
  const all = [...CALLERS, ...ANSWERING, ...AGENT_PHONES, ...FORWARDING, ...BUSY, ...NOT_ANSWERING];
  const rows = all.map((extension) => {
    const ring = NOT_ANSWERING.includes(extension) ? 1 : 30;
    return `${username(extension)},${username(extension)},${username(extension)}-password,` +
      `sip,default,${extension},${username(extension)},${ring},20`;
  });
  const csv = "firstname,username,password,line_protocol,context,exten,sip_username," +
    "ring_seconds,simultaneous_calls\n" + rows.join("\n") + "\n";
  await callSvc(svc, token, "POST", "/1.1/users/import", csv, "text/csv");
  const api = (method: string, path: string, body?: unknown) =>
    callSvc(svc, token, method, path, body === undefined ? undefined : JSON.stringify(body));
  const queue = JSON.parse(
    await api("POST", "/1.1/queues", { name: "day", number: QUEUE_NUMBER, wrapup_seconds: 0 }),
  );
  for (const [i, extension] of AGENT_PHONES.entries()) {
    const number = String(8001 + i);
    const agent = JSON.parse(await api("POST", "/1.1/agents", { number, firstname: `A${i}` }));
    await api("PUT", `/1.1/queues/${queue.id}/members/agents/${agent.id}`, { penalty: 0 });
    await api("POST", `/agents/by-number/${number}/login`, { extension, context: "default" });
  }
  for (const [i, extension] of FORWARDING.entries()) {
    await api("POST", `/svc/api/2.0/forward/unconditional/${username(extension)}`, {
      destination: ANSWERING[i % ANSWERING.length],
      enabled: true,
    });
  }
  for (const extension of BUSY) {
    await api("PUT", `/svc/api/2.0/sim/phones/${extension}/policy`, { policy: "busy" });
  }
  for (const extension of NOT_ANSWERING) {
    await api("PUT", `/svc/api/2.0/sim/phones/${extension}/policy`, { policy: "manual" });
  }
  // dialling needs the caller connected: one login each
  for (const extension of CALLERS) {
    const response = await fetch(`${svc}/svc/api/2.0/auth/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        login: username(extension),
        password: `${username(extension)}-password`,
      }),
      signal: bounded(30_000),
    });
    if (!response.ok) throw new BenchError(`login ${extension}: ${response.status}`);
    await response.body?.cancel();
  }
}

/** The dial of call `n`: its caller and request. */
function dialOf(n: number): { caller: string; path: string; body: unknown } {
  const caller = CALLERS[n % CALLERS.length]!;
  const kind = SCHEDULE[n % SCHEDULE.length]!;
  const pick = (pool: string[]) => pool[Math.floor(n / SCHEDULE.length) % pool.length]!;
  const user = (pool: string[]) => ({
    path: `/svc/api/2.0/dial/user/${username(caller)}`,
    body: { username: username(pick(pool)) },
  });
  const number = (destination: string) => ({
    path: `/svc/api/2.0/dial/number/${username(caller)}`,
    body: { destination },
  });
  const dial = {
    "answered": () => user(ANSWERING),
    "queue": () => number(QUEUE_NUMBER),
    "forwarded": () => user(FORWARDING),
    "busy": () => user(BUSY),
    "not answered": () => user(NOT_ANSWERING),
    "outside": () => number(OUTSIDE),
  }[kind]();
  return { caller: username(caller), ...dial };
}

/** Counts the history records of each user, from the store file (the server stopped). */
async function historyByUser(path: string): Promise<Map<number, number>> {
  const kv = await Deno.openKv(path);
  try {
    const counts = new Map<number, number>();
    for await (const entry of kv.list({ prefix: ["call_history"] }, { batchSize: 1000 })) {
      const userId = entry.key[1] as number;
      counts.set(userId, (counts.get(userId) ?? 0) + 1);
    }
    return counts;
  } finally {
    kv.close();
  }
}

export async function dayBench(
  calls = Number(Deno.env.get("BENCH_DAY_CALLS") ?? 100_000),
  rate = Number(Deno.env.get("BENCH_DAY_RATE") ?? 120),
): Promise<Row[]> {
  await using stack = new AsyncDisposableStack();
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-day-" });
  stack.defer(() => Deno.remove(dir, { recursive: true }));
  const kvPath = join(dir, "svc.kv");
  const receiver = eventReceiver();
  stack.defer(() => receiver.close());
  const retentionS = 60;
  const { svc, adminToken, pid } = await startSvcProcess(stack, {
    SVC_KV: kvPath,
    SVC_EVENT_URL: receiver.url,
    SVC_EVENT_RETENTION: String(retentionS),
    SVC_SIM_ANSWER_MS: "30",
    SVC_SIM_TALK_MS: "150",
    SVC_HASH_ITERATIONS: "100000",
  }, { readyPath: "/ready", inspector: PROFILE ? 9341 : 0 });
  await provision(svc, adminToken);
  await pause(5_000);
  const startRss = await rssKb(pid);
  const startStore = await storeMb(kvPath);

  // the day: `rate` dials a second, each answered before the next second's are sent
  const dialled = new Map<string, number>();
  const failures: string[] = [];
  const started = performance.now();
  const dialLatencies: number[] = [];
  let stopProfile: (() => Promise<string>) | null = null;
  for (let n = 0; n < calls;) {
    const second = performance.now();
    // BENCH_PROFILE=1: where the server's time goes, from the 10th second for 20 s
    if (PROFILE && n === rate * 10) stopProfile = await startProfile(9341);
    if (stopProfile && n === rate * 30) {
      console.log(await stopProfile());
      stopProfile = null;
    }
    const batch = [];
    for (let i = 0; i < rate && n < calls; i++, n++) {
      const { caller, path, body } = dialOf(n);
      batch.push((async () => {
        const sent = performance.now();
        const response = await fetch(`${svc}${path}`, {
          method: "POST",
          headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
          body: JSON.stringify(body),
          signal: bounded(60_000),
        });
        dialLatencies.push(performance.now() - sent);
        const text = await response.text();
        if (response.ok) dialled.set(caller, (dialled.get(caller) ?? 0) + 1);
        else failures.push(`${response.status} ${text.slice(0, 200)}`);
      })());
    }
    await Promise.all(batch);
    const left = 1000 - (performance.now() - second);
    if (left > 0) await pause(left);
    if (n % (rate * 60) < rate) {
      console.log(
        `  ${n.toLocaleString("en-US")} calls dialled, ${
          receiver.received.toLocaleString("en-US")
        } ` +
          `events received, RSS ${(await rssKb(pid) / 1024).toFixed(0)} MiB`,
      );
    }
  }
  if (failures.length) {
    throw new BenchError(`${failures.length} dials refused, e.g. ${failures.slice(0, 3)}`);
  }
  // every call ends (talk, ring times), then the events drain
  for (;;) {
    const live = JSON.parse(await callSvc(svc, adminToken, "GET", "/svc/api/2.0/sim/calls"));
    if (live.length === 0 && receiver.quietFor() > 5_000) break;
    await pause(1_000);
  }
  const dayMinutes = (performance.now() - started) / 60_000;
  const endRss = await rssKb(pid);
  const endStore = await storeMb(kvPath);
  // the idle period: the event retention and a minute for the store's expiry sweep
  await pause((retentionS + 60) * 1000);
  const idleRss = await rssKb(pid);
  const idleStore = await storeMb(kvPath);

  // what the callers saw and what the history holds
  const ended = receiver.endedLegs();
  const missingEnds = [...dialled].filter(([caller, n]) => (ended.get(caller) ?? 0) !== n);
  const users = JSON.parse(await callSvc(svc, adminToken, "GET", "/1.1/users?limit=1000"))
    .items as {
      id: number;
      username: string;
    }[];
  Deno.kill(pid, "SIGTERM");
  for (let i = 0; i < 100; i++) {
    if (!(await Deno.stat(`/proc/${pid}`).then(() => true, () => false))) break;
    await pause(100);
  }
  const history = await historyByUser(kvPath);
  const incomplete = [...dialled].filter(([caller, n]) => {
    const id = users.find((user) => user.username === caller)?.id;
    return id === undefined || (history.get(id) ?? 0) < n;
  });
  const historyRecords = [...history.values()].reduce((a, b) => a + b, 0);
  dialLatencies.sort((a, b) => a - b);
  const p99 = dialLatencies[Math.floor(dialLatencies.length * 0.99)] ?? 0;
  const detail = `${calls.toLocaleString("en-US")} calls at ${rate}/s, ` +
    `${receiver.received.toLocaleString("en-US")} events, ${receiver.duplicates} twice, ` +
    `${receiver.endedTwice} legs ended twice, ${missingEnds.length} callers missing an end, ` +
    `${historyRecords.toLocaleString("en-US")} history records, ${incomplete.length} callers ` +
    `with history missing; dial p99 ${p99.toFixed(0)} ms`;
  const complete = receiver.duplicates === 0 && receiver.endedTwice === 0 &&
    missingEnds.length === 0 && incomplete.length === 0;
  return [
    {
      name: "day of traffic: minutes for the calls, every event once, history complete",
      value: dayMinutes,
      unit: "min",
      baseline: { name: "at most", value: 15 },
      target: { text: "≤ 15 min, nothing lost or twice", met: dayMinutes <= 15 && complete },
      detail,
    },
    {
      name: "day of traffic: RSS after the idle period",
      value: idleRss / 1024,
      unit: "MB",
      baseline: { name: "before the traffic", value: startRss / 1024 },
      ratioAs: "+",
      target: { text: "≤ before + 20 MB", met: idleRss - startRss <= 20 * 1024 },
      detail: `${(endRss / 1024).toFixed(0)} MiB when the calls ended`,
    },
    {
      name: "day of traffic: store file after the idle period",
      value: idleStore,
      unit: "MB",
      baseline: { name: "before the traffic", value: startStore },
      detail: `${endStore.toFixed(1)} MB when the calls ended; the history stays ` +
        `(${historyRecords.toLocaleString("en-US")} records)`,
    },
  ];
}

if (import.meta.main) {
  const calls = Number(Deno.args[0] ?? Deno.env.get("BENCH_DAY_CALLS") ?? 100_000);
  printRows(await dayBench(calls));
}

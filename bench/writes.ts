/**
 * The write path (`deno task bench writes`): DND changes per second, each producing one
 * `UserConfigUpdate` event that the server posts to a receiver in this process. `WRITERS` users
 * each get one client loop toggling its DND (`POST /svc/api/2.0/dnd/{username}`), one request at a
 * time, `CHANGES` changes in all; the figure is the changes divided by the time from the first
 * request to the last event received. The receiver also checks that every event came and that each
 * user's came in order (its DND alternates).
 *
 * Baseline: the same client loops asking `GET /health` as many times, in the same run: what the
 * client gets from the server when the server does (almost) nothing. Target (issue 28): ≥ 2,500
 * changes a second.
 */
import { BenchError, bounded, callSvc, freePort, startSvcProcess } from "./processes.ts";
import { startProfile } from "./profile.ts";
import type { Row } from "./rows.ts";

/** Users written to at once, one client loop each. */
const WRITERS = 50;
/** Changes measured (after `WARMUP`), spread evenly over the writers. */
const CHANGES = 5_000;
const WARMUP = 500;

/** A receiver of the server's events counting the `UserConfigUpdate`s and checking their order. */
function eventReceiver() {
  const lastState = new Map<string, boolean>();
  let received = 0;
  let outOfOrder = 0;
  let waiting: { count: number; resolve: (at: number) => void } | null = null;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const event = await request.json();
    const update = event.message;
    if (update?.msgType === "UserConfigUpdate") {
      const user = String(update.userId);
      if (lastState.get(user) === update.dndEnabled) outOfOrder++;
      lastState.set(user, update.dndEnabled);
      if (waiting && ++received >= waiting.count) waiting.resolve(performance.now());
      else if (!waiting) received++;
    }
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/bench/dropbox/`,
    /** Resets the count; answers when `count` more events have come (`performance.now()`). */
    expect(count: number): Promise<number> {
      received = 0;
      const { promise, resolve } = Promise.withResolvers<number>();
      waiting = { count, resolve };
      return promise;
    },
    outOfOrder: () => outOfOrder,
    close: () => server.shutdown(),
  };
}

/** Runs `count` requests from `WRITERS` loops, loop `n` making the requests of `request(n, i)`. */
async function loops(count: number, request: (writer: number, i: number) => Promise<void>) {
  const perWriter = Math.ceil(count / WRITERS);
  await Promise.all(
    Array.from({ length: WRITERS }, async (_, writer) => {
      for (let i = 0; i < perWriter; i++) await request(writer, i);
    }),
  );
  return perWriter * WRITERS;
}

export async function writesBench(kv: string): Promise<Row[]> {
  await using stack = new AsyncDisposableStack();
  const receiver = eventReceiver();
  stack.defer(() => receiver.close());
  const inspector = Deno.env.get("BENCH_PROFILE") ? freePort() : 0;
  const { svc, adminToken } = await startSvcProcess(stack, {
    SVC_EVENT_URL: receiver.url,
    SVC_KV: kv,
  }, { inspector });
  const rows = ["firstname,lastname,username"];
  for (let n = 0; n < WRITERS; n++) rows.push(`Writer,${n},writer${n}`);
  await callSvc(svc, adminToken, "POST", "/1.1/users/import", rows.join("\n"), "text/csv");
  const states = new Array<boolean>(WRITERS).fill(false);
  const dnd = async (writer: number) => {
    states[writer] = !states[writer];
    const response = await fetch(`${svc}/svc/api/2.0/dnd/writer${writer}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json" },
      body: JSON.stringify({ state: states[writer] }),
      signal: bounded(60_000),
    });
    await response.body?.cancel();
    if (!response.ok) throw new BenchError(`POST /dnd: ${response.status}`);
  };
  const health = async () => {
    const response = await fetch(`${svc}/health`, { signal: bounded(60_000) });
    await response.body?.cancel();
    if (!response.ok) throw new BenchError(`GET /health: ${response.status}`);
  };
  const timeout = (ms: number) => {
    const timedOut = new Promise<never>((_, reject) => {
      const signal = bounded(ms);
      signal.addEventListener("abort", () => reject(new BenchError("events missing")));
    });
    timedOut.catch(() => {}); // it settles after the race, when nobody listens any more
    return timedOut;
  };
  // warm-up: connections, the server's code paths
  let arrived = receiver.expect(WARMUP);
  await loops(WARMUP, dnd);
  await Promise.race([arrived, timeout(60_000)]);
  arrived = receiver.expect(CHANGES);
  const stopProfile = inspector ? await startProfile(inspector) : null;
  const started = performance.now();
  const made = await loops(CHANGES, dnd);
  const answered = performance.now();
  const done = await Promise.race([arrived, timeout(120_000)]);
  if (stopProfile) console.log(await stopProfile());
  const changesPerSecond = made / (done - started) * 1000;
  if (receiver.outOfOrder() > 0) {
    throw new BenchError(`${receiver.outOfOrder()} events came out of order for their user`);
  }
  const healthStarted = performance.now();
  const asked = await loops(CHANGES, health);
  const healthPerSecond = asked / (performance.now() - healthStarted) * 1000;
  return [{
    name: `DND changes per second, each event delivered to a local receiver (${WRITERS} users, ` +
      `${made.toLocaleString("en-US")} changes, SVC_KV=${kv})`,
    value: changesPerSecond,
    unit: "/s",
    baseline: { name: "GET /health from the same client", value: healthPerSecond },
    ratioAs: "%",
    target: { text: "≥ 2,500/s", met: changesPerSecond >= 2500 },
    detail: `the last answer came after ${((answered - started) / 1000).toFixed(2)} s, the ` +
      `last event ${((done - started) / 1000).toFixed(2)} s`,
  }];
}

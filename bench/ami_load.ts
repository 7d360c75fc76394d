/**
 * The Asterisk adapter under load (issue 27 §2), against the real server process
 * (`SVC_PLATFORM=asterisk`) and an AMI server in this process that plays the recorded session of
 * a dial (`tests/peers/asterisk_transcripts/02-dial-answered.jsonl`) once per call, each copy
 * with its own channels, ids and users:
 *
 * - **50 calls in flight**: a dial every 60 ms (`POST /dial/user`, 100 callers, 100 callees),
 *   each call held 3 s as the recording's call is, so that each dial finds 50 calls in flight;
 *   the time from each dial's request to its caller's first `PhoneEvent` at the event receiver
 *   (`EventDialing`). Beside it, the same with one call alone, in the same run. Target: p99 < 50 ms.
 *   And the harsher burst: 50 dials sent in the same millisecond (no target: the burst is
 *   50 in one second, `tests/e2e/asterisk_live_burst_test.ts`).
 * - **20,000 events/s**: the recorded call's events, copy after copy, at 20,000 events/s for
 *   20 s: the server's RSS after 5 s and at the end (target: within 10 MB); then as fast as the
 *   adapter reads them for 20 s (the socket's backpressure makes the rate the adapter's; target
 *   ≥ 20,000/s), beside a bare Deno TCP reader splitting the same bytes into messages.
 *
 * Run alone: `deno run -A bench/ami_load.ts`.
 */
import { join } from "node:path";
import { BenchError, bounded, callSvc, pause, rssKb, startSvcProcess } from "./processes.ts";
import { printRows, type Row } from "./rows.ts";

const encoder = new TextEncoder();
const TRANSCRIPT = new URL(
  "../tests/peers/asterisk_transcripts/02-dial-answered.jsonl",
  import.meta.url,
);

/** The recorded call: what Asterisk sent after the Originate, split where it paused (hang-up). */
async function recordedCall(): Promise<{ setup: string; hangup: string }> {
  const lines = (await Deno.readTextFile(TRANSCRIPT)).split("\n").filter(Boolean)
    .map((line) => JSON.parse(line) as { t: number; dir: string; data: string });
  const originate = lines.findIndex((line) => line.data.startsWith("Action: Originate"));
  const logoff = lines.findIndex((line) => line.data.startsWith("Action: Logoff"));
  const after = lines.slice(originate + 1, logoff).filter((line) => line.dir === "recv");
  const pauseAt = after.findIndex((line, i) => i > 0 && line.t - after[i - 1]!.t > 1);
  const text = (part: typeof after) => part.map((line) => line.data).join("");
  return { setup: text(after.slice(0, pauseAt)), hangup: text(after.slice(pauseAt)) };
}

/** One copy of the recorded call: its users, ids and the Originate's ActionID put in. */
function copyOf(
  text: string,
  call: { n: number; caller: string; callee: string; actionId: string; channelId?: string },
): string {
  // the caller's channel takes the id svc gave it (Originate's ChannelId), as Asterisk does
  const id = (i: number) =>
    i === 0 && call.channelId ? call.channelId : `1800000000.${call.n * 2 + i}`;
  const suffix = (i: number) => (call.n * 2 + i).toString(16).padStart(8, "0");
  // placeholders first: a user's name holds its extension
  return text
    .replaceAll("1795439518.0", "\u0000id0")
    .replaceAll("1795439518.1", "\u0000id1")
    .replaceAll("1001", "\u0000ext0")
    .replaceAll("1002", "\u0000ext1")
    .replaceAll("alice-00000000", `${call.caller}-${suffix(0)}`)
    .replaceAll("bob-00000001", `${call.callee}-${suffix(1)}`)
    .replaceAll("PJSIP/alice", `PJSIP/${call.caller}`)
    .replaceAll("PJSIP/bob", `PJSIP/${call.callee}`)
    .replaceAll("orig-0002", call.actionId)
    .replaceAll("Alice", call.caller)
    .replaceAll("Bob", call.callee)
    .replaceAll("\u0000id0", id(0))
    .replaceAll("\u0000id1", id(1))
    .replaceAll("\u0000ext0", extensionOf(call.caller))
    .replaceAll("\u0000ext1", extensionOf(call.callee));
}

const userName = (i: number) => `u${1001 + i}`;
/** Callers u1001…, callees after them; a caller dials again once its last call ended. */
const CALLERS = 100;
/** How long each call lasts (the recorded call's hang-up comes then), and how many overlap. */
const HOLD_MS = 3_000;
const IN_FLIGHT = 50;
/** The flood's rate for the memory figure (issue 27 §2). */
const FLOOD_RATE = 20_000;
const extensionOf = (name: string) => name.slice(1);
/** Actions answered with an empty event list; every other one `Success`. */
const LISTS = new Set(["devicestatelist", "coreshowchannels", "queuestatus", "dbgettree"]);

/** An AMI server: logs the client in, answers its actions, plays a call for each Originate. */
function amiServer(call: { setup: string; hangup: string }, holdMs: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let calls = 0;
  const served: Promise<void>[] = [];
  const serve = async (conn: Deno.TcpConn) => {
    // Asterisk's manager sets TCP_NODELAY (main/manager.c): without it, an event written right
    // after an action's answer waits for svc's delayed ACK, 40 ms
    conn.setNoDelay(true);
    const write = serialWriter(conn);
    const text = (message: string) => write(encoder.encode(message)).catch(() => {});
    await answering(conn, write, (field) => {
      const caller = field("Channel").replace("PJSIP/", "");
      const callee = userName(Number(field("Exten")) - 1001);
      const copy = {
        n: calls++,
        caller,
        callee,
        actionId: field("ActionID"),
        channelId: field("ChannelId") || undefined,
      };
      text(copyOf(call.setup, copy));
      setTimeout(() => text(copyOf(call.hangup, copy)), holdMs);
    }).done;
    conn.close();
  };
  (async () => {
    for (;;) {
      const conn = await listener.accept().catch(() => null);
      if (!conn) return;
      served.push(serve(conn));
    }
  })();
  return {
    port: listener.addr.port,
    close() {
      listener.close();
    },
  };
}

/** Where the server posts its events: when each caller's first `EventDialing` came. */
function receiver() {
  const waiting = new Map<string, (at: number) => void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const event = await request.json();
    if (event.message?.ctiMessage?.eventType === "EventDialing") {
      const resolve = waiting.get(event.username);
      waiting.delete(event.username);
      resolve?.(performance.now());
    }
    return new Response(null, { status: 204 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/events`,
    dialing(username: string): Promise<number> {
      return new Promise((resolve) => waiting.set(username, resolve));
    },
    close: () => server.shutdown(),
  };
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
};

/** One dial of `caller` to `callee`: the time from its request to the caller's `EventDialing`. */
async function dialToFirstEvent(
  svc: { svc: string; adminToken: string },
  events: ReturnType<typeof receiver>,
  caller: string,
  callee: string,
): Promise<number> {
  const dialing = events.dialing(caller);
  const started = performance.now();
  const response = await fetch(`${svc.svc}/svc/api/2.0/dial/user/${caller}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${svc.adminToken}`, "Content-Type": "application/json" },
    body: JSON.stringify({ username: callee }),
    signal: bounded(30_000),
  });
  if (!response.ok) throw new BenchError(`dial ${caller}: ${response.status}`);
  await response.body?.cancel();
  const timeout = bounded(30_000);
  const arrived = await Promise.race([
    dialing,
    new Promise<never>((_, reject) =>
      timeout.addEventListener("abort", () => reject(new BenchError("no EventDialing came")))
    ),
  ]);
  return arrived - started;
}

/** `count` dials at once (caller i dials i + CALLERS), `rounds` times, each round's calls ended. */
async function dialsAtOnce(
  svc: { svc: string; adminToken: string },
  events: ReturnType<typeof receiver>,
  count: number,
  rounds: number,
): Promise<number[]> {
  const samples: number[] = [];
  for (let round = 0; round < rounds; round++) {
    samples.push(
      ...await Promise.all(Array.from(
        { length: count },
        (_, i) => dialToFirstEvent(svc, events, userName(i), userName(i + CALLERS)),
      )),
    );
    await pause(HOLD_MS + 500); // the calls end before the next round
  }
  return samples;
}

/**
 * The bench process's own longest stall while `work` runs (ms): how late a 5 ms timer fired at
 * worst. The AMI server and the event receiver run in this process, so a pause of its own (its
 * collector, after the parts before) delays the dials it times as if svc had.
 */
async function withStalls<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let stallMs = 0;
  let running = true;
  const watch = async () => {
    while (running) {
      const before = performance.now();
      await pause(5);
      stallMs = Math.max(stallMs, performance.now() - before - 5);
    }
  };
  const watching = watch();
  try {
    return { result: await work(), stallMs };
  } finally {
    running = false;
    await watching;
  }
}

/**
 * Dials one every `HOLD_MS / IN_FLIGHT`, each call held `HOLD_MS`: once the first `IN_FLIGHT` are
 * up, each new dial finds that many calls in flight. Answers the delays of those, `count` of them.
 */
async function dialsWhileInFlight(
  svc: { svc: string; adminToken: string },
  events: ReturnType<typeof receiver>,
  count: number,
): Promise<number[]> {
  const every = HOLD_MS / IN_FLIGHT;
  const dials: Promise<number>[] = [];
  for (let n = 0; n < IN_FLIGHT + count; n++) {
    const i = n % CALLERS;
    dials.push(dialToFirstEvent(svc, events, userName(i), userName(i + CALLERS)));
    await pause(every);
  }
  const samples = await Promise.all(dials);
  await pause(HOLD_MS + 500);
  return samples.slice(IN_FLIGHT);
}

export async function amiLoadBench(): Promise<Row[]> {
  await using stack = new AsyncDisposableStack();
  const call = await recordedCall();
  const ami = amiServer(call, HOLD_MS);
  stack.defer(() => ami.close());
  const events = receiver();
  stack.defer(() => events.close());
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-ami-" });
  stack.defer(() => Deno.remove(dir, { recursive: true }));
  const svc = await startSvcProcess(stack, {
    SVC_PLATFORM: "asterisk",
    SVC_AMI_PORT: String(ami.port),
    SVC_AMI_USERNAME: "admin",
    SVC_AMI_SECRET: "admin",
    SVC_ASTERISK_CONFIG_DIR: join(dir, "asterisk"),
    SVC_KV: join(dir, "svc.kv"),
    SVC_EVENT_URL: events.url,
    SVC_HASH_ITERATIONS: "100000",
  }, { readyPath: "/ready" });
  const rows = Array.from(
    { length: 2 * CALLERS },
    (_, i) =>
      `${userName(i)},${userName(i)},${userName(i)}-password,sip,default,${1001 + i},${
        userName(i)
      }`,
  );
  await callSvc(
    svc.svc,
    svc.adminToken,
    "POST",
    "/1.1/users/import",
    "firstname,username,password,line_protocol,context,exten,sip_username\n" + rows.join("\n"),
    "text/csv",
  );
  for (let i = 0; i < CALLERS; i++) {
    const response = await fetch(`${svc.svc}/svc/api/2.0/auth/login`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ login: userName(i), password: `${userName(i)}-password` }),
      signal: bounded(30_000),
    });
    if (!response.ok) throw new BenchError(`login ${userName(i)}: ${response.status}`);
    await response.body?.cancel();
  }
  await dialsAtOnce(svc, events, IN_FLIGHT, 1); // warm-up
  const alone = await dialsAtOnce(svc, events, 1, 20);
  const { result: inFlight, stallMs } = await withStalls(() =>
    dialsWhileInFlight(svc, events, 200)
  );
  const atOnce = await dialsAtOnce(svc, events, IN_FLIGHT, 4);
  const p99 = quantile(inFlight, 0.99);
  return [
    {
      name:
        `AMI replay, ${IN_FLIGHT} calls in flight: dial → first PhoneEvent at the receiver, p99`,
      value: p99,
      unit: "ms",
      baseline: { name: "one call alone, p99", value: quantile(alone, 0.99) },
      target: { text: "< 50 ms", met: p99 < 50 },
      detail:
        `a dial every ${HOLD_MS / IN_FLIGHT} ms, each call ${HOLD_MS / 1000} s: p50 ${
          quantile(inFlight, 0.5).toFixed(1)
        } ms over ${inFlight.length} dials; alone p50 ${quantile(alone, 0.5).toFixed(1)} ms; ` +
        `the bench process's own longest stall meanwhile (its AMI server and event receiver): ${
          stallMs.toFixed(1)
        } ms`,
    },
    {
      name: `AMI replay, ${IN_FLIGHT} dials in the same millisecond: dial → first PhoneEvent, p99`,
      value: quantile(atOnce, 0.99),
      unit: "ms",
      baseline: { name: "one call alone, p99", value: quantile(alone, 0.99) },
      detail: `p50 ${quantile(atOnce, 0.5).toFixed(1)} ms over ${atOnce.length} dials (a burst ` +
        "beyond the issue's 50 in one second: every dial's work queued at once)",
    },
    ...await floodRows(stack, call),
  ];
}

/**
 * The flood: a second svc process on its own AMI server that, once svc logged in, sends copies of
 * the recorded call at the rate for `pacedSeconds` (its memory), then as fast as svc reads
 * for `seconds`; beside it a bare reader of the same bytes.
 */
async function floodRows(
  stack: AsyncDisposableStack,
  call: { setup: string; hangup: string },
  seconds = 20,
  // at the rate long enough to reach its plateau (about 17 s on the 2-core machine), and
  // as long again: a leak would rise over the second half
  pacedSeconds = 40,
): Promise<Row[]> {
  const events = (call.setup + call.hangup).split("\r\n\r\n").length - 1;
  const chunkOf = (copies: number) =>
    encoder.encode(
      Array.from({ length: copies }, (_, n) =>
        copyOf(call.setup + call.hangup, {
          n: 100_000 + n,
          caller: userName(n % 50),
          callee: userName(50 + n % 50),
          actionId: "none",
        })).join(""),
    );
  const big = { bytes: chunkOf(500), events: events * 500 };
  const small = { bytes: chunkOf(20), events: events * 20 };

  /**
   * Sends copies of the call for `seconds`, as fast as the reader takes them or at `rate` events/s
   * (small chunks, paced, for `pacedSeconds`); answers the events/s, after calling `each` once a
   * second.
   */
  const pour = async (
    write: (bytes: Uint8Array) => Promise<void>,
    each: () => Promise<void>,
    rate?: number,
  ) => {
    const duration = rate ? pacedSeconds : seconds;
    const chunk = rate ? small : big;
    const started = performance.now();
    let sent = 0;
    let marks = 0;
    while (performance.now() - started < duration * 1000) {
      await write(chunk.bytes);
      sent += chunk.events;
      if (performance.now() - started > (marks + 1) * 1000) {
        marks++;
        await each();
      }
      if (rate) await pause(Math.max(0, sent / rate * 1000 - (performance.now() - started)));
    }
    return sent / ((performance.now() - started) / 1000);
  };

  // the bare reader: reads and splits messages as the parser bench's baseline does
  const bareListener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const bare = (async () => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: bareListener.addr.port });
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(65536);
    let rest = "";
    for (;;) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) break;
      rest += decoder.decode(buffer.subarray(0, n), { stream: true });
      let pos = 0;
      for (let end; (end = rest.indexOf("\r\n\r\n", pos)) >= 0; pos = end + 4);
      rest = rest.slice(pos);
    }
    conn.close();
  })();
  const bareConn = await bareListener.accept();
  const bareRate = await pour(serialWriter(bareConn), async () => {});
  bareConn.close();
  bareListener.close();
  await bare;

  // svc: its own AMI server, the flood starting once it has resynced
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  stack.defer(() => listener.close());
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-flood-" });
  stack.defer(() => Deno.remove(dir, { recursive: true }));
  const starting = startSvcProcess(stack, {
    SVC_PLATFORM: "asterisk",
    SVC_AMI_PORT: String(listener.addr.port),
    SVC_AMI_USERNAME: "admin",
    SVC_AMI_SECRET: "admin",
    SVC_ASTERISK_CONFIG_DIR: join(dir, "asterisk"),
    SVC_KV: join(dir, "svc.kv"),
  }, { readyPath: "/health" });
  const conn = await listener.accept();
  // the login and the resync, answered as the call server does, then the flood
  const write = serialWriter(conn);
  const answers = answering(conn, write);
  const { pid } = await starting;
  await pause(2_000);
  // at the rate, the memory: RSS each second, and at the end
  const rss: number[] = [];
  const pacedRate = await pour(write, async () => void rss.push(await rssKb(pid)), FLOOD_RATE);
  const rssEnd = await rssKb(pid);
  rss.push(rssEnd);
  // bounded: the second half's highest RSS against the first half's. The RSS of a process taking
  // a flood steps up and down by 10-20 MB as its heap grows and is collected, so a figure read at
  // one instant (it was 5 s against the end of 20 s) measures where the collector was, not growth;
  // a leak makes the second half's peak the higher one.
  const half = Math.floor(rss.length / 2);
  const firstPeak = Math.max(...rss.slice(0, half));
  const secondPeak = Math.max(...rss.slice(half));
  // then as fast as svc reads
  const svcRate = await pour(write, async () => {});
  const rssFast = await rssKb(pid);
  answers.stop();
  conn.close();
  const grewMb = (secondPeak - firstPeak) / 1024;
  return [
    {
      name: "AMI events read by the Asterisk adapter (a recorded call's, copy after copy)",
      value: svcRate,
      unit: "/s",
      baseline: { name: "bare Deno TCP reader splitting messages", value: bareRate },
      ratioAs: "%",
      target: { text: "≥ 20,000/s", met: svcRate >= 20_000 },
      detail: `${seconds} s, RSS ${(rssFast / 1024).toFixed(0)} MB at the end`,
    },
    {
      name: `AMI flood at ${FLOOD_RATE.toLocaleString("en-US")} events/s: svc's highest RSS ` +
        "of the second half over the first's",
      value: grewMb,
      unit: "MB",
      baseline: { name: "highest RSS of the first half", value: firstPeak / 1024 },
      ratioAs: "%",
      target: { text: "< 10 MB", met: grewMb < 10 },
      detail: `${pacedSeconds} s at ${pacedRate.toFixed(0)} events/s; RSS each second (MB): ` +
        rss.map((kb) => (kb / 1024).toFixed(0)).join(" "),
    },
  ];
}

/** Writes to `conn` one after the other, so that two writers never mix their bytes. */
function serialWriter(conn: Deno.Conn): (bytes: Uint8Array) => Promise<void> {
  let chain = Promise.resolve();
  return (bytes) => {
    chain = chain.then(async () => {
      for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
    });
    return chain;
  };
}

/**
 * Answers svc's login and actions on `conn` through `writeBytes` (resync lists empty, a Logoff
 * ends it); an Originate goes to `originate` (its fields) after its `Success`.
 */
function answering(
  conn: Deno.Conn,
  writeBytes: (bytes: Uint8Array) => Promise<void>,
  originate: (field: (name: string) => string) => void = () => {},
) {
  let stopped = false;
  const write = (text: string) => writeBytes(encoder.encode(text));
  const done = (async () => {
    await write("Asterisk Call Manager/11.0.0\r\n");
    const decoder = new TextDecoder();
    const buffer = new Uint8Array(65536);
    let rest = "";
    while (!stopped) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) return;
      rest += decoder.decode(buffer.subarray(0, n), { stream: true });
      for (let end; (end = rest.indexOf("\r\n\r\n")) >= 0;) {
        const message = rest.slice(0, end);
        rest = rest.slice(end + 4);
        const field = (name: string) =>
          message.match(new RegExp(`^${name}: (.*)$`, "mi"))?.[1]?.trim() ?? "";
        const action = field("Action").toLowerCase();
        const id = `ActionID: ${field("ActionID")}\r\n`;
        if (action === "login") {
          await write(`Response: Success\r\n${id}Message: Authentication accepted\r\n\r\n`);
          await write(
            "Event: FullyBooted\r\nPrivilege: system,all\r\nStatus: Fully Booted\r\n\r\n",
          );
        } else if (LISTS.has(action)) {
          await write(`Response: Success\r\n${id}EventList: start\r\nMessage: follows\r\n\r\n`);
          await write(`Event: ListComplete\r\n${id}EventList: Complete\r\nListItems: 0\r\n\r\n`);
        } else if (action === "logoff") {
          await write(`Response: Goodbye\r\n${id}\r\n`);
          return;
        } else {
          await write(`Response: Success\r\n${id}\r\n`);
          if (action === "originate") originate(field);
        }
      }
    }
  })().catch(() => {});
  return { stop: () => stopped = true, done };
}

if (import.meta.main) printRows(await amiLoadBench());

/**
 * A stalled or hostile Asterisk (issue 27 §3), on the AMI replay server's faults
 * (tests/peers/ami_replay.ts): frozen (SIGSTOP) then resumed, a half-open connection, a flood of
 * events svc does not use, 1 MiB values. First the AMI client alone, then the whole adapter
 * through the app: noticed within the bound, 503 `Unreachable` at once meanwhile, resynced after
 * with no event twice and no call left open, the events svc uses in order, memory bounded.
 * `tests/e2e/asterisk_live_faults_test.ts` does the same on a real Asterisk.
 */
import assert from "node:assert/strict";
import {
  AmiClient,
  type AmiClientOptions,
  LineCap,
} from "../../../../lib/platform/asterisk/ami_client.ts";
import type { AmiMessage } from "../../../../lib/platform/asterisk/ami_message.ts";
import { createLogger } from "../../../../lib/log.ts";
import type { CallStarted } from "../../../../lib/platform/port.ts";
import { apiCall, confd, login, webServiceUser } from "../../../helpers.ts";
import {
  type AmiReplay,
  type AmiReplayOptions,
  startAmiReplay,
  TRANSCRIPTS,
} from "../../../peers/ami_replay.ts";
import { capture, check, onAsterisk } from "../scenario_runner.ts";
import { SCENARIOS } from "../scenarios.ts";
import { asteriskContext } from "./fixtures.ts";

const V2 = "/svc/api/2.0";

/** Short keepalive and deadline, so that a test waits little (the defaults are 5 s and 5 s). */
const FAST = { keepaliveMs: 150, timeoutMs: 300 };

/** Waits until `test` holds, checking every 10 ms; fails after `ms` naming `what`. */
async function until(test: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!await test()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

interface Client {
  server: AmiReplay;
  ami: AmiClient;
  events: AmiMessage[];
  logs: { level: string; msg: string; [field: string]: unknown }[];
  connects: number;
  disconnects: string[];
  stalls: boolean[];
}

/**
 * Runs `body` with a replay server (with faults) and a started client, then closes both; the
 * events `keep` says (all by default) are kept in `events`.
 */
async function withClient(
  replay: AmiReplayOptions,
  client: Partial<AmiClientOptions>,
  body: (t: Client) => Promise<void>,
  keep: (event: AmiMessage) => boolean = () => true,
): Promise<void> {
  const server = await startAmiReplay(replay);
  const logs: Client["logs"] = [];
  const t: Client = {
    server,
    events: [],
    logs,
    connects: 0,
    disconnects: [],
    stalls: [],
    ami: new AmiClient({
      host: "127.0.0.1",
      port: server.port,
      username: "admin",
      secret: "admin",
      logger: createLogger("debug", (line) => logs.push(JSON.parse(line))),
      backoffMs: [20, 50],
      actionIdPrefix: "t-",
      ...client,
    }),
  };
  t.ami.onEvent((event) => {
    if (keep(event)) t.events.push(event);
  });
  t.ami.onConnect(() => void t.connects++);
  t.ami.onDisconnect((reason) => t.disconnects.push(reason));
  t.ami.onStall((stalled) => t.stalls.push(stalled));
  try {
    t.ami.start();
    assert.equal(await t.ami.waitConnected(3000), true);
    await body(t);
  } finally {
    await t.ami.close();
    await server.close();
  }
}

const named = (actions: AmiMessage[], name: string) =>
  actions.filter((action) => action.get("Action") === name);

/** The Event names of a transcript's recv stream, in order. */
async function recordedEvents(name: string): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(`${name}.jsonl`, TRANSCRIPTS));
  return text.split("\n").filter((line) => line !== "")
    .map((line) => JSON.parse(line).data as string)
    .filter((data) => data.startsWith("Event: "))
    .map((data) => data.slice(7, data.indexOf("\r\n")));
}

// --- the AMI client --------------------------------------------------------------------------

Deno.test("frozen Asterisk, idle: the keepalive Ping's deadline drops the connection; back after", async () => {
  await withClient({ connections: ["02-dial-answered"] }, FAST, async (t) => {
    assert.equal(await t.server.waiting(), "Originate");
    t.server.freeze();
    await until(() => t.disconnects.length === 1, 10_000, "the freeze noticed");
    assert.match(t.disconnects[0]!, /no answer to Ping within 300 ms/);
    // meanwhile: refused at once, reconnection attempts go on (the kernel accepts them)
    await assert.rejects(t.ami.action("CoreStatus"), /AMI not connected/);
    const attempts = t.server.connections;
    await until(() => t.logs.some((l) => l.msg === "AMI connection failed"), 3000, "a try");
    assert.equal(t.ami.connected, false);
    t.server.thaw();
    assert.equal(await t.ami.waitConnected(5000), true);
    assert.equal(t.connects, 2);
    assert.ok(t.server.connections > attempts);
    assert.equal((await t.ami.action("Ping")).ok, true);
  });
});

Deno.test("frozen Asterisk: an action unanswered while nothing comes stalls the connection; the next ones fail at once and never reach Asterisk", async () => {
  // no idle Ping here: the action's deadline is what tells
  const options = { keepaliveMs: 60_000, timeoutMs: 300 };
  await withClient({ connections: ["02-dial-answered"] }, options, async (t) => {
    assert.equal(await t.server.waiting(), "Originate");
    t.server.freeze();
    await assert.rejects(t.ami.action("CoreStatus"), /no response to CoreStatus within 300 ms/);
    // nothing read since it was sent: stalled, told at once
    assert.equal(t.ami.connected, false);
    assert.deepEqual(t.stalls, [true]);
    await assert.rejects(t.ami.action("CoreSettings"), /AMI not answering \(CoreSettings\)/);
    assert.deepEqual(t.disconnects, [], "refused before the connection is dropped");
    const stalled = t.logs.filter((l) => l.msg.startsWith("AMI not answering"));
    assert.deepEqual(stalled.map((l) => [l.level, l.action]), [["warn", "CoreStatus"]]);
    // the Ping sent then goes unanswered: dropped
    await until(() => t.disconnects.length === 1, 10_000, "the drop");
    assert.match(t.disconnects[0]!, /no answer to Ping/);
    t.server.thaw();
    assert.equal(await t.ami.waitConnected(5000), true);
    // the frozen connection reads what waited in its socket, then its end
    await until(() => t.server.open === 1, 5000, "the frozen connection read out");
    const first = t.server.actions.slice(
      0,
      t.server.actions.findIndex((a, i) => i > 0 && a.get("Action") === "Login"),
    );
    assert.deepEqual(named(first, "CoreStatus").length, 1, "sent before the stall: it may run");
    assert.deepEqual(named(t.server.actions, "CoreSettings"), [], "never sent");
  });
});

Deno.test("a slow Asterisk is not a stalled one: a byte before the deadline keeps the connection; a late answer ends a stall", async (t) => {
  await t.step("an event comes while the action waits: not stalled", async () => {
    await withClient({ connections: ["02-dial-answered"] }, FAST, async (t) => {
      t.server.slowMs = 1000;
      const slow = t.ami.action("CoreStatus");
      await until(() => named(t.server.actions, "CoreStatus").length === 1, 2000, "sent");
      t.server.slowMs = 0;
      t.server.inject("Event: Tick\r\n\r\n");
      await assert.rejects(slow, /no response to CoreStatus/);
      assert.equal(t.ami.connected, true);
      assert.deepEqual(t.stalls, []);
      assert.equal((await t.ami.action("Ping")).ok, true);
      assert.deepEqual(t.disconnects, []);
    });
  });

  await t.step("nothing comes, then the Ping's answer: stalled, then connected again", async () => {
    await withClient(
      { connections: ["02-dial-answered"] },
      { keepaliveMs: 60_000, timeoutMs: 300 },
      async (t) => {
        t.server.slowMs = 600; // this action's answer only: the Ping after it is answered at once
        const slow = t.ami.action("CoreStatus");
        await until(() => named(t.server.actions, "CoreStatus").length === 1, 2000, "sent");
        t.server.slowMs = 0;
        await assert.rejects(slow, /no response to CoreStatus/);
        await until(() => t.stalls.length === 2, 2000, "the stall over");
        assert.deepEqual(t.stalls, [true, false]);
        assert.equal(t.ami.connected, true);
        assert.equal((await t.ami.action("Ping")).ok, true);
        assert.deepEqual(t.disconnects, []);
        assert.equal(t.connects, 1);
      },
    );
  });
});

Deno.test("half-open connection (packets dropped, no close): noticed, actions refused at once, back with the network", async () => {
  const options = { keepaliveMs: 60_000, timeoutMs: 300 };
  await withClient({ connections: ["02-dial-answered"] }, options, async (t) => {
    assert.equal(await t.server.waiting(), "Originate");
    t.server.halfOpen();
    await assert.rejects(t.ami.action("CoreStatus"), /no response to CoreStatus/);
    assert.equal(t.ami.connected, false);
    await assert.rejects(t.ami.action("CoreSettings"), /AMI not answering/);
    assert.deepEqual(t.disconnects, [], "refused before the connection is dropped");
    await until(() => t.disconnects.length === 1, 10_000, "the drop");
    assert.match(t.disconnects[0]!, /no answer to Ping/);
    // new connections get nowhere either while the network is down
    await until(() => t.logs.some((l) => l.msg === "AMI connection failed"), 3000, "a try");
    assert.equal(t.ami.connected, false);
    t.server.thaw();
    assert.equal(await t.ami.waitConnected(5000), true);
    assert.equal(t.connects, 2);
    assert.equal((await t.ami.action("Ping")).ok, true);
  });
});

/** Events svc uses (given a 1 MiB header by the replay's `bloat`). */
const USED =
  /^Event: (Newchannel|Newstate|DialEnd|BridgeEnter|BridgeLeave|Hangup|QueueCallerJoin|QueueCallerLeave|AgentCalled|QueueMemberAdded|QueueMemberPause|UserEvent)\r\n/;

Deno.test("1 MiB values: each line cut to 64 KiB, every event kept in order", async () => {
  const bloat = {
    match: /^Event: (Newchannel|Newstate|DialEnd|BridgeEnter|Hangup)\r\n/,
    bytes: 1 << 20,
  };
  await withClient(
    { connections: ["02-dial-answered"], bloat },
    { maxLineBytes: 64 * 1024 },
    async (t) => {
      assert.equal(await t.server.waiting(), "Originate");
      await t.ami.action("Originate", { Channel: "PJSIP/alice", ChannelId: "call-1" });
      assert.equal(await t.server.waiting(), "Logoff");
      const recorded = await recordedEvents("02-dial-answered");
      await until(() => t.events.length >= recorded.length, 5000, "every event");
      assert.deepEqual(t.events.map((e) => e.event), recorded);
      const bloated = t.events.filter((e) => e.has("ChanVariable(SVC_BLOB)"));
      assert.equal(
        bloated.length,
        recorded.filter((name) => bloat.match.test(`Event: ${name}\r\n`)).length,
      );
      for (const event of bloated) {
        assert.equal(event.get("ChanVariable(SVC_BLOB)"), "x".repeat(64 * 1024 - 24));
      }
      const hangups = t.events.filter((e) => e.event === "Hangup");
      assert.deepEqual(hangups.map((e) => e.get("Uniqueid")), ["1795439518.1", "call-1"]);
      const cut = t.logs.filter((l) => l.msg === "AMI line cut");
      assert.equal(cut.length, 10, "logged, not a line per cut line");
      assert.equal(cut[0]!.key, "ChanVariable(SVC_BLOB)");
      assert.equal(t.logs.filter((l) => l.msg === "AMI input skipped").length, 0);
      assert.equal(t.server.connections, 1);
    },
  );
});

Deno.test("LineCap: lines cut to the cap wherever the reads cut the stream", () => {
  // a reference: split on CRLF (a bare LF is inside a value), cut each line
  const reference = (text: string, max: number) =>
    text.split("\r\n").map((line) => line.slice(0, max));
  const pieces = ["a", "b", "\r", "\n", "\r\n", "x".repeat(10)];
  let seed = 27;
  const random = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  for (let round = 0; round < 5000; round++) {
    const max = 1 + random(12);
    let text = "";
    for (let i = random(60); i > 0; i--) text += pieces[random(pieces.length)];
    const bytes = new TextEncoder().encode(text);
    const cap = new LineCap(max);
    const out: number[] = [];
    for (let at = 0; at < bytes.length;) {
      const size = 1 + random(10);
      out.push(...cap.cut(bytes.subarray(at, at + size)));
      at += size;
    }
    const got = new TextDecoder().decode(new Uint8Array(out)).split("\r\n");
    const want = reference(text, max);
    assert.equal(got.length, want.length, JSON.stringify({ text, max }));
    got.forEach((line, i) => {
      // a CR ending a read, kept before the line was known too long, may stay in the value
      if (line !== want[i]) assert.equal(line, want[i] + "\r", JSON.stringify({ text, max }));
    });
  }
  // a stream that needs no cut passes through as it came
  const chunk = new TextEncoder().encode("Event: Hangup\r\nCause: 16\r\n\r\n");
  assert.equal(new LineCap(64).cut(chunk), chunk);
});

Deno.test("a flood of events svc does not use and of 1 MiB values: memory bounded, the events svc uses in order", async () => {
  const unused = (event: AmiMessage) => event.event === "VarSet" || event.event === "RTCPSent";
  let flooded = 0;
  const replay = {
    connections: ["02-dial-answered"],
    flood: 5000, // before each of the call's messages
    bloat: { match: USED, bytes: 1 << 20 },
  };
  const keep = (event: AmiMessage) => unused(event) ? (flooded++, false) : true;
  await withClient(replay, { maxLineBytes: 64 * 1024 }, async (t) => {
    const start = Deno.memoryUsage().rss;
    let peak = start;
    const sampler = setInterval(() => peak = Math.max(peak, Deno.memoryUsage().rss), 20);
    try {
      // 300 MiB of huge values svc does not use, then the call amid 5,000 events per message
      // (about 150 MB): far more than the bound
      await t.server.flood(300, { bytes: 1 << 20 });
      assert.equal(await t.server.waiting(), "Originate");
      await t.ami.action("Originate", { Channel: "PJSIP/alice", ChannelId: "call-1" });
      assert.equal(await t.server.waiting(), "Logoff");
      const recorded = await recordedEvents("02-dial-answered");
      await until(() => t.events.length >= recorded.length, 10_000, "every event");
      assert.deepEqual(t.events.map((e) => e.event), recorded);
    } finally {
      clearInterval(sampler);
    }
    assert.ok(flooded > 250_000, `${flooded} events svc does not use`);
    const grown = (peak - start) / (1 << 20);
    assert.ok(grown < 256, `RSS grew by ${grown.toFixed(0)} MiB for about 450 MB read`);
    assert.equal(t.server.connections, 1);
  }, keep);
});

// --- the adapter through the app ---------------------------------------------------------------

const DIAL_ANSWERED = SCENARIOS.find((s) => s.transcript === "02-dial-answered")!;

/** Right after this message of 02 both are talking (alice's channel enters the bridge). */
const BOTH_TALKING = /^Event: BridgeEnter\r\n(?:[^\r]*\r\n)*Channel: PJSIP\/alice-/;

/**
 * Plays 02 (alice dials bob, both answer) on the adapter until both talk, where the replay stalls
 * (`kind`); `during` runs while the fault lasts, then the fault ends and the reconnection (01b:
 * a plain login) resyncs: the call, over meanwhile, must end exactly once. Answers every action
 * the replay received, the stalled connection's included (read once the fault ended).
 */
async function stalledMidCall(
  kind: "freeze" | "half-open",
  env: Record<string, string>,
  during: (c: {
    replay: AmiReplay;
    v2: (method: string, path: string, body?: unknown) => Promise<Response>;
    a: Awaited<ReturnType<typeof asteriskContext>>;
  }) => Promise<void>,
): Promise<AmiMessage[]> {
  const replay = await startAmiReplay({
    // after the fault: a login (with FullyBooted), nothing going on
    connections: ["02-dial-answered", "02-dial-answered"],
    stallAfter: { kind, after: BOTH_TALKING },
  });
  const a = await asteriskContext(replay.port, env);
  const { ctx, w, platform } = a;
  try {
    const events = capture(ctx);
    platform.start();
    await platform.firstSync();
    const ws = await webServiceUser(ctx, ["svc.rest.#"]);
    const v2 = apiCall(ctx, V2, await login(ctx, "webservice", ws.login));
    await login(ctx, "login", "alice"); // dialling needs alice connected
    assert.equal(await replay.waiting(), "Originate");
    const started = [await DIAL_ANSWERED.steps[0]!.command(w) as CallStarted];
    await until(() => replay.stalled, 5000, "the replay stalled with both talking");
    // (not `settled()`: its Ping would wait for the fault)
    const talking = () => events.flatMap((e) => e.kind === "phone" ? [e.eventType] : []);
    await until(() => talking().length === 4, 5000, "both talking");
    assert.deepEqual(talking(), [
      "EventDialing",
      "EventRinging",
      "EventEstablished",
      "EventEstablished",
    ]);

    await during({ replay, v2, a });

    replay.thaw();
    await until(() => platform.reachable(), 10_000, "reconnected and resynced");
    await platform.settled();
    if (kind === "freeze") {
      // the frozen connection has written what it held, to a socket svc had closed
      await until(() => replay.open === 1, 5000, "the frozen connection gone");
      await platform.settled();
    }
    // exactly the table's events and history: the call ended once, none came twice
    check(DIAL_ANSWERED, { events, started, w });
    assert.deepEqual(platform.calls(), [], "no call left open");
    const ready = await ctx.app.request("/ready");
    assert.equal(ready.status, 200);
    await ready.body?.cancel();
    return replay.actions;
  } finally {
    await a.close();
    await replay.close();
  }
}

/** What every command answers while Asterisk is unreachable. */
const UNREACHABLE = { error: "Unreachable", message: "the telephony platform is unreachable" };

/** While the fault lasts: noticed within 10 s, /ready 503, a dial 503 at once, statuses -1. */
async function noticedAndRefused(
  { replay, v2, a }: Parameters<Parameters<typeof stalledMidCall>[2]>[0],
): Promise<void> {
  await until(() => !a.platform.reachable(), 10_000, "the fault noticed (issue 27: within 10 s)");
  const ready = await a.ctx.app.request("/ready");
  assert.equal(ready.status, 503);
  assert.deepEqual(await ready.json(), { status: "unavailable", platform: "unreachable" });
  const originates = named(replay.actions, "Originate").length;
  const dial = await v2("POST", "/dial/user/alice", { username: "bob" });
  assert.equal(dial.status, 503);
  assert.deepEqual(await dial.json(), UNREACHABLE);
  assert.equal(replay.stalled, true, "answered while Asterisk still stalls: at once");
  assert.equal(named(replay.actions, "Originate").length, originates);
  assert.deepEqual(Object.fromEntries(await a.platform.phoneStatuses(["1001", "1002"])), {
    "1001": -1,
    "1002": -1,
  });
}

Deno.test("Asterisk frozen mid-call, then resumed: noticed, 503 at once meanwhile, resynced with the call ended once", async () => {
  const env = { SVC_AMI_KEEPALIVE_MS: "200", SVC_AMI_TIMEOUT_MS: "400" };
  await stalledMidCall("freeze", env, noticedAndRefused);
});

Deno.test("a half-open AMI connection mid-call: noticed, 503 at once meanwhile, resynced with the call ended once", async () => {
  const env = { SVC_AMI_KEEPALIVE_MS: "200", SVC_AMI_TIMEOUT_MS: "400" };
  await stalledMidCall("half-open", env, noticedAndRefused);
});

Deno.test("commands while the freeze is not noticed yet: the first 503 at its deadline, the next at once, never run", async () => {
  // no idle Ping: the first command's deadline is what tells
  const env = { SVC_AMI_KEEPALIVE_MS: "60000", SVC_AMI_TIMEOUT_MS: "400" };
  const actions = await stalledMidCall("freeze", env, async ({ replay, v2, a }) => {
    assert.equal(a.platform.reachable(), true, "not noticed yet");
    const first = await v2("POST", "/dial/user/alice", { username: "bob" });
    assert.equal(first.status, 503);
    assert.deepEqual(await first.json(), UNREACHABLE);
    assert.equal(a.platform.reachable(), false, "stalled: noticed");
    const next = await v2("POST", "/dial/number/alice", { destination: "1003" });
    assert.equal(next.status, 503);
    assert.deepEqual(await next.json(), UNREACHABLE);
    assert.equal(replay.stalled, true);
  });
  // once thawed, the frozen connection read what waited in its socket: the first dial's
  // Originate (sent before the stall was known: it may run, its answer said Unreachable), never
  // the next one's
  const originates = named(actions, "Originate").map((action) => action.get("Exten"));
  assert.deepEqual(originates, ["1002", "1002"]);
});

Deno.test("a stall that ends without a reconnection (a slow Asterisk): resynced, what it held back written", async () => {
  const replay = await startAmiReplay({ connections: ["02-dial-answered"] });
  const env = { SVC_AMI_KEEPALIVE_MS: "60000", SVC_AMI_TIMEOUT_MS: "300" };
  const a = await asteriskContext(replay.port, env);
  const { ctx, w, platform } = a;
  try {
    platform.start();
    await platform.firstSync();
    const resyncs = () => named(replay.actions, "CoreShowChannels").length;
    assert.equal(resyncs(), 1);
    // this answer only comes late, and nothing meanwhile: stalled
    replay.slowMs = 1000;
    await assert.rejects(
      platform.agentLogin(w.agent, "1002", "default"),
      { name: "PlatformUnavailable" },
    );
    replay.slowMs = 0; // the Ping sent then is answered at once: the stall ends
    assert.equal(platform.reachable(), false);
    // meanwhile bob goes on DND through /1.1: stored, not written (not connected)
    const api = await confd(ctx);
    const dnd = await api.put(`/users/${w.bob.id}/services/dnd`, { enabled: true });
    assert.equal(dnd.status, 204, await dnd.text());
    await until(() => platform.reachable(), 5000, "the stall over");
    await until(() => resyncs() === 2, 5000, "a resync on the same connection");
    await until(
      () => named(replay.actions, "DBPut").some((put) => put.get("Key") === `dnd/${w.bob.id}`),
      5000,
      "bob's DND written",
    );
    assert.equal(replay.connections, 1);
  } finally {
    await a.close();
    await replay.close();
  }
});

Deno.test("the scenario table under a flood of unused events and 1 MiB values: the same events, in order", async () => {
  const faults: Partial<AmiReplayOptions> = {
    flood: 20,
    bloat: { match: USED, bytes: 1 << 20 },
  };
  for (const scenario of SCENARIOS.filter((s) => s.transcript)) {
    check(scenario, await onAsterisk(scenario, faults));
  }
});

/**
 * Two REAL Asterisk servers behind one svc (issue 47, docs/asterisk.md "Several servers"), where
 * Asterisk and baresip are installed (skipped with a one-line notice otherwise): `main` with
 * alice's and carol's phones, the queue and the rooms, `mds1` with bob's phone, each with its own
 * ports and directories (`recorded_servers.ts`). The scenario table's call-control scenarios run
 * with bob on the other server and must give the table's events per user, one `linkedId` per
 * call across the servers and the table's history (`checkAcross`); then `mds1` is stopped
 * mid-run (bob's routes 503, alice's work, `/ready` and `/metrics` say which) and started again
 * (resynced within 5 s). bob, on mds1, also listens to agent carol's call on main: he hears it.
 *
 * With `SVC_RECORD_TRANSCRIPTS=<dir>` each scenario's two AMI sessions are written there as
 * `servers/<transcript>.<server>.jsonl` (`tests/peers/asterisk_transcripts/servers/`), which
 * `tests/lib/platform/asterisk/several_servers_replay_test.ts` replays in CI.
 * `SVC_TEST_SCENARIO=<part of a transcript name>` plays only those scenarios, and no other step.
 */
import assert from "node:assert/strict";
import type { PlatformEvent } from "../../lib/platform/port.ts";
import { OUTSIDE_ROUTE, quietManager } from "../peers/asterisk_pbx.ts";
import { livePeers } from "../peers/live_peers.ts";
import { capture, checkAcross } from "../lib/platform/scenario_runner.ts";
import { SCENARIOS } from "../lib/platform/scenarios.ts";
import { livePhones, PEOPLE, playSteps } from "./live_phones.ts";
import { apiCall, login, webServiceUser } from "../helpers.ts";
import {
  ACROSS,
  acrossTranscript,
  SERVERS,
  undoServices,
} from "../lib/platform/asterisk/across.ts";
import { type RecordedServers, startRecordedServers, svcOnServers } from "./recorded_servers.ts";
import { sleep, until } from "./svc_http.ts";
import type { Phone } from "../peers/baresip_phone.ts";
import {
  count,
  heardSince,
  recordingSince,
  timeline,
  TONES,
  windowsWithBoth,
} from "./live_audio.ts";

const { prefix: PREFIX, missing } = livePeers("asterisk_live_servers_test");
const RECORD_TO = Deno.env.get("SVC_RECORD_TRANSCRIPTS");
/** Comma-separated parts of transcript names: only those scenarios. */
const ONLY = (Deno.env.get("SVC_TEST_SCENARIO") ?? "").split(",");

Deno.test({
  name: "two real Asterisk servers behind one svc: calls across them, one of them down and back",
  ignore: missing,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const servers = await startRecordedServers({
      prefix: PREFIX!,
      config: {
        main: {
          "extensions.conf": (ours) => `${ours}\n${OUTSIDE_ROUTE}\n`,
          "manager.conf": quietManager,
        },
        mds1: { "manager.conf": quietManager },
      },
      phones: Object.fromEntries(
        Object.values(PEOPLE).map((user) => [
          user,
          { user, answerMode: "manual" as const, toneHz: TONES[user], record: true },
        ]),
      ),
      registerMs: 20_000,
    });
    try {
      const chosen = SCENARIOS.filter((one) =>
        ACROSS.includes(one.transcript ?? "") && ONLY.some((part) => one.transcript!.includes(part))
      );
      for (const scenario of chosen) {
        const ok = await t.step(`${scenario.name} (bob on mds1)`, async () => {
          await playAcross(servers, scenario);
        });
        if (!ok) console.log(`asterisk_live_servers_test: ${scenario.name} failed`);
      }
      // a run of chosen scenarios (SVC_TEST_SCENARIO) plays only those
      if (ONLY.some(Boolean)) return;
      await t.step(
        "the 1.0 API and the CTI socket: alice calls bob on the other server",
        async () => {
          await otherApis(servers);
        },
      );
      await t.step("what bob on mds1 hears listening to agent carol on main", async () => {
        await whatTheSupervisorHears(servers);
      });
      await t.step("mds1 down: bob's routes 503, alice's work; back: resynced", async () => {
        await serverDownAndBack(servers);
      });
    } finally {
      await servers.stop();
    }
  },
});

async function playAcross(servers: RecordedServers, scenario: typeof SCENARIOS[number]) {
  const w = await svcOnServers(servers.file);
  let passed = false;
  try {
    await scenario.prepare?.(w.w);
    const events: PlatformEvent[] = capture(w.ctx);
    w.platform.start();
    await w.platform.firstSync();
    const settle = async () => {
      await sleep(400);
      await w.platform.settled();
    };
    const sim = livePhones(servers.phones, settle);
    const started = await playSteps(scenario.steps, w.w, sim, settle);
    await until(() => w.platform.calls().length === 0, 10_000, "no call left");
    await settle();
    checkAcross(scenario, { events, started, w: w.w });
    await undoServices(w.w, scenario.transcript!);
    await settle();
    passed = true;
  } finally {
    // a scenario stopped half-way leaves no agent logged in for the next ones
    if (!passed) await w.platform.agentLogout(w.w.agent.id).catch(() => {});
    await w.close();
    for (const phone of Object.values(servers.phones)) await phone.ctrl.hangup().catch(() => {});
    await sleep(300);
    if (RECORD_TO && scenario.transcript) {
      await Deno.mkdir(`${RECORD_TO}/servers`, { recursive: true });
      for (const name of SERVERS) {
        await Deno.writeTextFile(
          `${RECORD_TO}/${acrossTranscript(scenario.transcript, name)}.jsonl`,
          servers.recorder[name].text(),
        );
      }
    }
  }
}

/**
 * The call of a user of main to a user of mds1 through the other ways in: the deprecated 1.0 API
 * (`dialByUsername`) and the CTI socket's `dial`, on svc served over real HTTP: both phones ring
 * and answer, the CTI client sees alice's `PhoneEvent`s, and bob's events carry alice's call id.
 */
async function otherApis(servers: RecordedServers) {
  const w = await svcOnServers(servers.file, { SVC_DEPRECATED_API_HOST: "127.0.0.1" });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    w.ctx.app.fetch,
  );
  const base = `127.0.0.1:${server.addr.port}`;
  const [alice, bob] = [servers.phones.alice!.ctrl, servers.phones.bob!.ctrl];
  try {
    w.platform.start();
    await w.platform.firstSync();
    const events = capture(w.ctx);
    /** Both phones answer, then alice hangs up: the call's linkedIds on each side. */
    const talk = async (dial: () => Promise<void>) => {
      const [aliceSince, bobSince] = [alice.mark(), bob.mark()];
      const from = events.length;
      await dial();
      await alice.waitEvent("CALL_INCOMING", aliceSince);
      await alice.accept();
      await bob.waitEvent("CALL_INCOMING", bobSince);
      await bob.accept();
      await until(
        () =>
          events.slice(from).filter((e) => e.kind === "phone" && e.eventType === "EventEstablished")
            .length === 2,
        10_000,
        "both established",
      );
      await alice.hangup();
      await until(() => w.platform.calls().length === 0, 10_000, "the call ended");
      await sleep(300);
      await w.platform.settled();
      const ids = (username: string) =>
        new Set(
          events.slice(from).flatMap((e) =>
            e.kind === "phone" && e.username === username ? [e.linkedId] : []
          ),
        );
      assert.deepEqual([...ids("bob")], [...ids("alice")], "one call id on both servers");
      assert.equal(ids("alice").size, 1);
    };
    const token = await login(w.ctx, "login", "alice");
    await talk(async () => {
      const response = await fetch(`http://${base}/svc/api/1.0/dialByUsername/d/alice/`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ username: "bob" }),
      });
      assert.equal(response.status, 200, await response.text());
    });
    const socket = new WebSocket(`ws://${base}/svc/api/2.0/cti?token=${token}`);
    const messages: { msgType: string; ctiMessage: Record<string, unknown> }[] = [];
    socket.onmessage = (event) => messages.push(JSON.parse(event.data));
    const closed = new Promise((resolve) => socket.addEventListener("close", resolve));
    try {
      await until(() => messages.some((m) => m.msgType === "LoggedOn"), 10_000, "LoggedOn");
      const from = messages.length;
      await talk(() =>
        Promise.resolve(
          socket.send(JSON.stringify({ claz: "web", command: "dial", destination: "1002" })),
        )
      );
      const seen = messages.slice(from).filter((m) => m.msgType === "PhoneEvent")
        .map((m) => [m.ctiMessage.eventType, m.ctiMessage.otherDN]);
      assert.deepEqual(seen, [
        ["EventDialing", "1002"],
        ["EventEstablished", "1002"],
        ["EventReleased", "1002"],
      ]);
    } finally {
      socket.close();
      await closed;
    }
  } finally {
    await w.close();
    await server.shutdown();
  }
}

/**
 * A supervisor of another server hears the call: bob (mds1) listens to agent 8001 on carol's phone
 * (main) talking with alice; bob's phone hears both tones over the trunk, nobody hears bob's.
 */
async function whatTheSupervisorHears(servers: RecordedServers) {
  const w = await svcOnServers(servers.file);
  const { alice, bob, carol } = servers.phones as Record<"alice" | "bob" | "carol", Phone>;
  try {
    w.platform.start();
    await w.platform.firstSync();
    const before = {
      bob: new Set(await bob.recordings()),
      carol: new Set(await carol.recordings()),
    };
    await w.platform.agentLogin(w.w.agent, "1003", "default");
    const [aliceSince, carolSince, bobSince] = [
      alice.ctrl.mark(),
      carol.ctrl.mark(),
      bob.ctrl.mark(),
    ];
    await w.platform.dialNumber(w.w.alice, "1003", {});
    await alice.ctrl.waitEvent("CALL_INCOMING", aliceSince);
    await alice.ctrl.accept();
    await carol.ctrl.waitEvent("CALL_INCOMING", carolSince);
    await carol.ctrl.accept();
    await sleep(1000);
    const listening = capture(w.ctx);
    await w.platform.listen(w.w.bob, w.w.agent.id);
    await bob.ctrl.waitEvent("CALL_INCOMING", bobSince);
    await bob.ctrl.accept();
    await sleep(3000);
    await alice.ctrl.hangup();
    await until(() => w.platform.calls().length === 0, 10_000, "the call ended");
    await until(
      () => listening.filter((event) => event.kind === "listen").length === 2,
      10_000,
      "listening started and stopped",
    );
    assert.deepEqual(
      listening.flatMap((e) => e.kind === "phone" && e.username === "bob" ? [e.eventType] : []),
      [],
      "the listening call is no call of bob's",
    );
    await sleep(500);
    const bobAudio = await recordingSince(bob, before.bob);
    const bobHeard = timeline(bobAudio, TONES);
    assert.ok(count(bobHeard, "alice") + count(bobHeard, "carol") >= 20, `bob: ${bobHeard}`);
    const both = windowsWithBoth(bobAudio, "alice", "carol");
    assert.ok(both >= 10, `bob hears both sides: ${both} windows of 100 ms`);
    const carolHeard = await heardSince(carol, before.carol);
    assert.equal(count(carolHeard, "bob"), 0, `nobody hears bob: ${carolHeard}`);
    await w.platform.agentLogout(w.w.agent.id);
  } finally {
    await w.close();
  }
}

/**
 * mds1 stops while alice and bob are idle: bob's dial answers 503 `Unreachable`, alice's call to
 * the outside route goes on (its end and history record handed over: main's events are not
 * held up), `/ready` and the metrics name mds1; bob's DND set through `/1.1`
 * meanwhile is stored; mds1 starts again: within 5 s svc is ready again and Asterisk has bob's DND
 * (its AstDB, which svc's resync writes).
 */
async function serverDownAndBack(servers: RecordedServers) {
  const w = await svcOnServers(servers.file);
  try {
    const events = capture(w.ctx);
    w.platform.start();
    await w.platform.firstSync();
    const ws = await webServiceUser(w.ctx, ["svc.rest.#", "svc.rest.metrics.read"]);
    const token = await login(w.ctx, "webservice", ws.login);
    const v2 = apiCall(w.ctx, "/svc/api/2.0", token);
    await login(w.ctx, "login", "alice");
    await login(w.ctx, "login", "bob");
    const dial = (username: string) =>
      v2("POST", `/dial/number/${username}`, { destination: "0123456789" });
    const servers_ = async () => (await (await w.ctx.app.request("/ready")).json()).servers;
    const mds1 = servers.pbx.mds1;
    await mds1.halt();
    await until(
      async () => JSON.stringify(await servers_()).includes('"mds1","state":"disconnected"'),
      15_000,
      "mds1 seen down",
    );
    assert.deepEqual(await servers_(), [
      { name: "main", state: "ready" },
      { name: "mds1", state: "disconnected" },
    ]);
    assert.equal((await w.ctx.app.request("/ready")).status, 200, "main still takes commands");
    const bobs = await dial("bob");
    assert.equal(bobs.status, 503, await bobs.clone().text());
    assert.equal((await bobs.json()).error, "Unreachable");
    const alice = servers.phones.alice!.ctrl;
    const ringing = alice.mark();
    const alices = await dial("alice");
    assert.equal(alices.status, 200, await alices.clone().text());
    await alice.waitEvent("CALL_INCOMING", ringing);
    // main's events go on meanwhile: alice answers, the outside number too
    await alice.accept();
    await until(
      () =>
        events.some((event) =>
          event.kind === "phone" && event.username === "alice" &&
          event.eventType === "EventEstablished"
        ),
      10_000,
      "alice's call established while mds1 is down",
    );
    const scraped = await (await w.ctx.app.request("/metrics", {
      headers: { Authorization: `Bearer ${token}` },
    })).text();
    assert.match(scraped, /^svc_platform_server_state\{server="mds1",state="disconnected"\} 1$/m);
    assert.match(scraped, /^svc_platform_server_state\{server="main",state="ready"\} 1$/m);
    await alice.hangup();
    // and it ends with its history record
    await until(
      () =>
        events.some((event) =>
          event.kind === "call_ended" && event.records.some((r) => r.userId === w.w.alice.id)
        ),
      10_000,
      "alice's call's end while mds1 is down",
    );
    // bob's DND through the configuration daemon: stored, written to mds1 once it is back
    const dnd = await w.w.api.put(`/users/${w.w.bob.id}/services/dnd`, { enabled: true });
    assert.equal(dnd.status, 204, await dnd.clone().text());
    await mds1.start();
    const back = performance.now();
    await until(
      async () => JSON.stringify(await servers_()).includes('"mds1","state":"ready"'),
      10_000,
      "mds1 ready again",
    );
    const took = performance.now() - back;
    assert.ok(took < 5000, `mds1 resynced ${Math.round(took)} ms after it booted`);
    await until(
      async () =>
        new RegExp(`/svc/dnd/${w.w.bob.id}\\s*: 1`).test(await mds1.cli("database show svc")),
      5000,
      "bob's DND in mds1's AstDB",
    );
    const dndOff = await v2("POST", "/dnd/bob", { state: false });
    assert.equal(dndOff.status, 200, `bob's routes work again: ${await dndOff.text()}`);
  } finally {
    await w.close();
  }
}

/**
 * The Asterisk adapter through the real app, against a replay of recorded AMI sessions: Asterisk
 * down at start and back, a refused login, a restart in the middle (agents added back, calls ended),
 * garbled input, live phone statuses, and the unchanged 2.0, 1.0 and `/agents` routes playing the
 * recorded queue scenario.
 */
import assert from "node:assert/strict";
import type { AgentStateMessage, PhoneEventMessage } from "../../../../lib/events/messages.ts";
import { createLogger } from "../../../../lib/log.ts";
import { AsteriskPlatform } from "../../../../lib/platform/asterisk/mod.ts";
import { type PlatformEvent, PlatformRefusal } from "../../../../lib/platform/port.ts";
import { PlatformUnavailable } from "../../../../lib/errors.ts";
import { getUser } from "../../../../lib/store/users.ts";
import { apiCall, confd, login, type TestContext, webServiceUser } from "../../../helpers.ts";
import { CLIENT_DRIVEN, startAmiReplay } from "../../../peers/ami_replay.ts";
import { ALLOWED_V4, v1 } from "../../../legacy/fixtures.ts";
import { capture, onAsterisk } from "../scenario_runner.ts";
import { SCENARIOS } from "../scenarios.ts";
import { asteriskContext } from "./fixtures.ts";

const V2 = "/svc/api/2.0";

/** Waits until `test` holds, checking every 20 ms for at most `ms`. */
async function until(test: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!await test()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Sets bob's DND through the configuration daemon, as an administrator would. */
async function bobOnDnd(ctx: TestContext, bobId: number): Promise<void> {
  const api = await confd(ctx);
  const response = await api.put(`/users/${bobId}/services/dnd`, { enabled: true });
  assert.equal(response.status, 204, await response.text());
}

const actionsNamed = (actions: { get(key: string): string | undefined }[], name: string) =>
  actions.filter((action) => action.get("Action") === name);

Deno.test("Asterisk down at start: svc serves, control routes 503 at once, all back by itself", async (t) => {
  // a replay that is not listening yet: connect() is refused, as with a stopped Asterisk
  const replay = await startAmiReplay({ connections: ["02-dial-answered"] });
  await replay.stop();
  const a = await asteriskContext(replay.port, { SVC_DEPRECATED_API_HOST: ALLOWED_V4 });
  const { ctx, w, platform } = a;
  try {
    platform.start();
    const ws = await webServiceUser(ctx, ["svc.rest.#"]);
    const v2 = apiCall(ctx, V2, await login(ctx, "webservice", ws.login));
    await login(ctx, "login", "alice"); // dialling needs alice connected
    const agentd = await webServiceUser(ctx, ["agentd.#"]);
    const agents = apiCall(ctx, "/agents", await login(ctx, "webservice", agentd.login));

    await t.step("/ready says the platform is unreachable", async () => {
      const ready = await ctx.app.request("/ready");
      assert.equal(ready.status, 503);
      assert.deepEqual(await ready.json(), { status: "unavailable", platform: "unreachable" });
      assert.deepEqual(platform.connection(), { adapter: "asterisk", state: "disconnected" });
    });

    await t.step("the configuration files are written anyway", async () => {
      await until(
        () => Deno.stat(`${a.configDir}/pjsip_svc.conf`).then(() => true, () => false),
        3000,
        "pjsip_svc.conf",
      );
      const pjsip = await Deno.readTextFile(`${a.configDir}/pjsip_svc.conf`);
      assert.match(pjsip, /^\[alice\]\ntype = endpoint$/m);
      assert.match(pjsip, /^password = alice-sip$/m);
    });

    await t.step(
      "2.0, 1.0 and /agents control routes: 503 Unreachable, nothing changed",
      async () => {
        const unreachable = {
          error: "Unreachable",
          message: "the telephony platform is unreachable",
        };
        for (
          const [path, body] of [
            ["/dial/number/alice", { destination: "1002" }],
            ["/dial/user/alice", { username: "bob" }],
            ["/dnd/bob", { state: true }],
            ["/forward/unconditional/bob", { destination: "1003", enabled: true }],
          ] as const
        ) {
          const response = await v2("POST", path, body);
          assert.equal(response.status, 503, path);
          assert.deepEqual(await response.json(), unreachable, path);
        }
        const bob = (await getUser(ctx.services.store, w.bob.id))!;
        assert.equal(bob.services.dnd.enabled, false);
        assert.equal(bob.forwards.unconditional.enabled, false);
        const legacy = await v1(ctx, "POST", "/dial/default/alice", { number: "1002" });
        assert.equal(legacy.status, 503);
        assert.equal((await legacy.json()).error, "Unreachable");
        const agent = await agents("POST", "/by-number/8001/login", {
          extension: "1002",
          context: "default",
        });
        assert.equal(agent.status, 503);
        assert.deepEqual(await agent.json(), { error: "Unreachable" });
      },
    );

    await t.step("listening, a voicemail's counts: unreachable; no such voicemail", async () => {
      await assert.rejects(() => platform.listen(w.carol, w.agent.id), PlatformUnavailable);
      const box = await w.api.create("/voicemails", {
        name: "bob",
        number: "1002",
        context: "default",
      });
      await assert.rejects(() => platform.voicemailCounts(box.id), PlatformUnavailable);
      await assert.rejects(
        () => platform.voicemailCounts(box.id + 100),
        (error) => error instanceof PlatformRefusal && error.reason === "no_voicemail",
      );
    });

    await t.step("what needs only the store still works; /1.1 stores DND for later", async () => {
      const history = await v2("GET", "/history/alice?size=5");
      assert.equal(history.status, 200);
      const status = await agents("GET", "/by-number/8001");
      assert.equal(status.status, 200);
      assert.equal((await status.json()).logged, false);
      await bobOnDnd(ctx, w.bob.id);
      assert.deepEqual(Object.fromEntries(await platform.phoneStatuses(["1001", "1002"])), {
        "1001": -1,
        "1002": -1,
      });
    });

    await t.step("Asterisk back: connected within 5 s, DND written, modules reloaded", async () => {
      replay.start();
      const back = performance.now();
      await until(() => platform.reachable(), 5000, "reconnected");
      assert.ok(performance.now() - back < 5000);
      await until(
        () => actionsNamed(replay.actions, "Reload").length >= 5,
        5000,
        "the five modules reloaded",
      );
      await platform.settled();
      const puts = actionsNamed(replay.actions, "DBPut").map((a) => [a.get("Key"), a.get("Val")]);
      assert.deepEqual(puts, [[`dnd/${w.bob.id}`, "1"]]);
      assert.deepEqual(
        actionsNamed(replay.actions, "Reload").map((a) => a.get("Module")).sort(),
        ["app_confbridge.so", "app_queue.so", "app_voicemail.so", "pbx_config.so", "res_pjsip.so"],
      );
      const ready = await ctx.app.request("/ready");
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: "ready" });
      assert.deepEqual(platform.connection(), { adapter: "asterisk", state: "ready" });
    });
  } finally {
    await a.close();
    await replay.close();
  }
});

Deno.test("a refused AMI login: logged without the secret, retried, commands 503", async () => {
  const replay = await startAmiReplay({ connections: ["02-dial-answered"], refuseLogin: true });
  const a = await asteriskContext(replay.port, { SVC_AMI_SECRET: "hunter2-not-logged" });
  try {
    a.platform.start();
    await until(() => replay.connections >= 2, 5000, "a second attempt");
    assert.equal(a.platform.reachable(), false);
    assert.deepEqual(a.platform.connection(), { adapter: "asterisk", state: "disconnected" });
    await assert.rejects(
      () => a.platform.dialNumber(a.w.alice, "1002", {}),
      { name: "PlatformUnavailable" },
    );
    const logs = a.ctx.logs.join("\n");
    assert.match(logs, /admin/);
    assert.doesNotMatch(logs, /hunter2/);
  } finally {
    await a.close();
    await replay.close();
  }
});

Deno.test("Asterisk restarted mid-way: reconnected, agents added back, calls ended", async () => {
  // 18a: logged in, SIGTERM 1 s later (Shutdown, close); 18b: the restarted Asterisk
  const replay = await startAmiReplay({
    connections: ["18a-restart-shutdown", "18b-restart-reconnect"],
    speed: 1,
  });
  const a = await asteriskContext(replay.port);
  const { w, platform } = a;
  try {
    const events = capture(a.ctx);
    platform.start();
    await platform.firstSync();
    await platform.agentLogin(w.agent, "1002", "default");
    await platform.agentPause(w.agent.id, "lunch");
    const { linkedId } = await platform.dialNumber(w.alice, "1002", {});
    assert.equal((await platform.agentPresence(w.agent.id)).logged, true);
    await until(() => replay.connections === 2 && platform.reachable(), 6000, "reconnected");
    await until(
      () => actionsNamed(replay.actions, "QueueAdd").length === 2,
      15_000,
      "the agent added back",
    );
    await platform.settled();
    // added back as it was: same queue and interface, paused with its reason
    const added = actionsNamed(replay.actions, "QueueAdd").map((action) =>
      ["Queue", "Interface", "MemberName", "StateInterface", "Paused", "Reason"].map((key) =>
        action.get(key)
      )
    );
    const bobLine = `Local/${w.bob.line_ids[0]}@svc-agent`;
    assert.deepEqual(added, [
      ["support", bobLine, "8001", "PJSIP/bob", "false", undefined],
      ["support", bobLine, "8001", "PJSIP/bob", "true", "lunch"],
    ]);
    const pauses = actionsNamed(replay.actions, "QueuePause");
    assert.deepEqual(pauses.map((action) => [action.get("Paused"), action.get("Reason")]), [
      ["true", "lunch"],
    ]);
    assert.deepEqual(await platform.agentPresence(w.agent.id), {
      agentId: w.agent.id,
      logged: true,
      paused: true,
      pausedReason: "lunch",
      extension: "1002",
      context: "default",
      state: "AgentOnPause",
      sinceMs: a.ctx.clock.now(),
      loggedSinceMs: a.ctx.clock.now(),
    });
    // the whole list's presences are each agent's, in the order asked (an unknown id logged out)
    assert.deepEqual(await platform.agentPresences([99_999, w.agent.id]), [
      await platform.agentPresence(99_999),
      await platform.agentPresence(w.agent.id),
    ]);
    // the dial never rang alice's phone: it failed with the restart, without history
    const phone = events.filter((event) => event.kind === "phone");
    assert.deepEqual(
      phone.map((event) => [event.username, event.eventType, event.linkedId]),
      [["alice", "EventFailure", linkedId]],
    );
    const agentNames = events.flatMap((event) => event.kind === "agent" ? [event.name] : []);
    assert.deepEqual(agentNames, ["AgentReady", "AgentOnPause"], "never logged out");
    assert.equal(platform.calls().length, 0);
  } finally {
    await a.close();
    await replay.close();
  }
});

Deno.test("svc started while a call waits in a queue: QueueStatus shows it until it leaves", async () => {
  // 31 (recorded live by svc): alice's phone dialled queue 3001 before svc logged in, then hung up
  // the resync's queries are answered as recorded (not played by themselves): QueueStatus is read
  const resync = new Set(["devicestatelist", "coreshowchannels", "queuestatus", "dbgettree"]);
  const replay = await startAmiReplay({
    connections: ["31-queue-resync"],
    speed: 1,
    auto: (action) => {
      const name = action.get("Action")?.toLowerCase() ?? "";
      return !CLIENT_DRIVEN.has(name) && !resync.has(name);
    },
  });
  const a = await asteriskContext(replay.port);
  const { w, platform } = a;
  try {
    const events = capture(a.ctx);
    platform.start();
    await platform.firstSync();
    const waiting = await platform.queueCalls();
    assert.deepEqual(waiting.map(({ sinceMs, ...call }) => [call, a.ctx.clock.now() - sinceMs]), [
      [{
        queueId: w.queue.id,
        linkedId: "1795828198.0",
        callerNumber: "1001",
        callerName: "alice",
        position: 1,
      }, 4000], // QueueEntry's Wait: 4 (s)
    ]);
    await until(async () => (await platform.queueCalls()).length === 0, 5000, "she hung up");
    // svc never saw her join: nothing is counted
    assert.deepEqual(events.filter((event) => event.kind === "queue_call"), []);
  } finally {
    await a.close();
    await replay.close();
  }
});

Deno.test("garbled AMI input is logged and skipped: the scenario's events are unchanged", async () => {
  const scenario = SCENARIOS.find((s) => s.transcript === "02-dial-answered")!;
  const garbage = [
    "no colon on this line\r\n\r\n",
    "Event: NotAnAsteriskEvent\r\nFoo: bar\r\n\r\n",
    "Event: Hangup\r\nUniqueid: nobody\r\n\r\n",
    "Event: Newstate\r\nChannelState: x\r\n\r\n",
    `Event: Newchannel\r\nChannel: PJSIP/alice-1\r\nUniqueid: ${"9".repeat(3_000_000)}\r\n\r\n`,
    "\u0000\u0001binary\r\n\r\n",
  ];
  const outcome = await onAsterisk(scenario, { garbage });
  const phone = outcome.events.flatMap((e) => e.kind === "phone" ? [e.eventType] : []);
  assert.deepEqual(phone, [
    "EventDialing",
    "EventRinging",
    "EventEstablished",
    "EventEstablished",
    "EventReleased",
    "EventReleased",
  ]);
});

Deno.test("phone statuses follow the device states; DND, unknown numbers, no PBX", async () => {
  const replay = await startAmiReplay({ connections: ["02-dial-answered"], speed: 1 });
  const a = await asteriskContext(replay.port);
  const { ctx, w, platform } = a;
  try {
    platform.start();
    await platform.firstSync();
    const statuses = async () =>
      Object.fromEntries(await platform.phoneStatuses(["1001", "1002", "1003", "3001", "0612"]));
    // no device state reported yet (the replay's DeviceStateList is empty): -1
    assert.deepEqual(await statuses(), {
      "1001": -1,
      "1002": -1,
      "1003": -1,
      "3001": -2,
      "0612": -2,
    });
    const before = platform.phoneStatusVersion();
    await platform.dialUser(w.alice, w.bob, {});
    // bob's phone rings then talks for 2 s (the recording), then both are free again
    await until(async () => (await statuses())["1002"] === 2, 3000, "bob in use");
    assert.notEqual(platform.phoneStatusVersion(), before);
    assert.equal((await statuses())["1001"], 2);
    await until(async () => (await statuses())["1002"] === 0, 5000, "bob free again");
    assert.equal((await statuses())["1001"], 0);

    // the contacts list view shows them, through the route
    const alice = apiCall(ctx, V2, await login(ctx, "login", "alice"));
    const created = await alice("POST", "/contact/personal", { lastname: "Bob", number: "1002" });
    assert.equal(created.status, 201, await created.text());
    const view = await (await alice("GET", "/contact/personal")).json();
    assert.deepEqual(view.entries.map((e: { status: number }) => e.status), [0]);

    await bobOnDnd(ctx, w.bob.id);
    assert.equal((await statuses())["1002"], -1, "DND");

    await replay.stop();
    await until(() => !platform.reachable(), 3000, "disconnected");
    assert.equal((await statuses())["1001"], -1, "no PBX");
  } finally {
    await a.close();
    await replay.close();
  }
});

Deno.test("the recorded queue scenario through the unchanged /agents, 2.0 and 1.0 routes", async (t) => {
  const replay = await startAmiReplay({
    connections: ["12-queue-agent"],
    auto: (action) => !CLIENT_DRIVEN.has((action.get("Action") ?? "").toLowerCase()),
  });
  const a = await asteriskContext(replay.port, { SVC_DEPRECATED_API_HOST: ALLOWED_V4 });
  const { ctx, w, platform } = a;
  try {
    platform.start();
    await platform.firstSync();
    const agentd = await webServiceUser(ctx, ["agentd.#"]);
    const agents = apiCall(ctx, "/agents", await login(ctx, "webservice", agentd.login));
    const ws = await webServiceUser(ctx, ["svc.rest.#"]);
    const v2 = apiCall(ctx, V2, await login(ctx, "webservice", ws.login));
    const played = async () => {
      await replay.waiting();
      await platform.settled();
    };
    const status = async () => await (await agents("GET", "/by-number/8001")).json();

    await t.step("agent login through /agents: a queue member, AgentReady", async () => {
      const response = await agents("POST", "/by-number/8001/login", {
        extension: "1002",
        context: "default",
      });
      assert.equal(response.status, 204, await response.text());
      await played();
      const agent = await status();
      assert.equal(agent.logged, true);
      assert.equal(agent.extension, "1002");
      assert.equal(agent.state, "AgentReady");
    });

    await t.step(
      "alice dials the queue through 2.0: the agent answers, then hangs up",
      async () => {
        await login(ctx, "login", "alice");
        const response = await v2("POST", "/dial/number/alice", { destination: "3001" });
        assert.equal(response.status, 200, await response.text());
        await played();
        assert.equal((await status()).state, "AgentReady");
      },
    );

    await t.step("pause through /agents, a second call waits; unpause through 1.0", async () => {
      const pause = await agents("POST", "/by-number/8001/pause", { reason: "lunch" });
      assert.equal(pause.status, 204);
      await played();
      assert.equal((await status()).paused, true);
      const dial = await v1(ctx, "POST", "/dial/default/alice", { number: "3001" });
      assert.equal(dial.status, 200, await dial.text());
      await played();
      const toggle = await v1(ctx, "POST", "/togglePause", { phoneNumber: "1002" });
      assert.equal(toggle.status, 200, await toggle.text());
      await played();
      assert.equal((await status()).paused, false);
    });

    await t.step("logoff through /agents", async () => {
      const response = await agents("POST", "/by-number/8001/logoff");
      assert.equal(response.status, 204);
      await played();
      assert.equal((await status()).logged, false);
    });

    await t.step("the events went to the outbox, the calls to the history", async () => {
      const retained = await ctx.services.events.retained();
      const bob = retained
        .filter((event) => event.username === "bob" && event.message.msgType === "PhoneEvent")
        .map((event) => (event.message as PhoneEventMessage).ctiMessage.eventType);
      assert.deepEqual(bob, [
        "EventRinging",
        "EventEstablished",
        "EventReleased",
        "EventRinging",
        "EventEstablished",
        "EventReleased",
      ]);
      const agentStates = retained
        .filter((event) => event.message.msgType === "AgentStateEvent")
        .map((event) => (event.message as AgentStateMessage).name);
      assert.deepEqual(agentStates, [
        "AgentReady",
        "AgentRinging",
        "AgentOnCall",
        "AgentOnWrapup",
        "AgentReady",
        "AgentOnPause",
        "AgentReady",
        "AgentRinging",
        "AgentOnCall",
        "AgentOnWrapup",
        "AgentReady",
        "AgentLoggedOut",
      ]);
      const history = await (await v2("GET", "/history/bob?size=10")).json();
      assert.deepEqual(
        history.data.entries.map((e: { status: string; srcUsername: string }) => [
          e.status,
          e.srcUsername,
        ]),
        [["answered", "alice"], ["answered", "alice"]],
      );
    });
    void w;
  } finally {
    await a.close();
    await replay.close();
  }
});

Deno.test("two processes on one store: only the lease holder hands events over and writes files", async () => {
  const replay = await startAmiReplay({ connections: ["02-dial-answered"] });
  const a = await asteriskContext(replay.port);
  const otherDir = await Deno.makeTempDir({ prefix: "svc-asterisk-b-" });
  const b = new AsteriskPlatform({
    store: a.ctx.services.store,
    clock: a.ctx.clock,
    logger: createLogger("error", () => {}),
    ami: { host: "127.0.0.1", port: replay.port, username: "admin", secret: "admin" },
    configDir: otherDir,
  });
  try {
    const eventsOfA = capture(a.ctx);
    const eventsOfB: PlatformEvent[] = [];
    b.onEvents((batch) => {
      eventsOfB.push(...batch);
      return Promise.resolve();
    });
    a.platform.start();
    await a.platform.firstSync();
    b.start();
    await b.firstSync();
    await until(
      () => Deno.stat(`${a.configDir}/pjsip_svc.conf`).then(() => true, () => false),
      3000,
      "the leader's files",
    );
    // each connection replays the recorded call for its own dial
    await a.platform.dialUser(a.w.alice, a.w.bob, {});
    await b.dialUser(a.w.alice, a.w.bob, {});
    await until(
      () => replay.actions.filter((x) => x.get("Action") === "Originate").length === 2,
      3000,
      "two dials",
    );
    await a.platform.settled();
    await b.settled();
    assert.equal(eventsOfA.filter((event) => event.kind === "phone").length, 6);
    assert.deepEqual(eventsOfB, [], "not the lease holder: nothing handed over");
    assert.deepEqual([...Deno.readDirSync(otherDir)], [], "nor any file written");

    // the holder stops: the other takes the lease over and writes the files
    await a.platform.close();
    await until(
      () => Deno.stat(`${otherDir}/pjsip_svc.conf`).then(() => true, () => false),
      8000,
      "the files of the new lease holder",
    );
  } finally {
    await b.close();
    await replay.close();
    await Deno.remove(otherDir, { recursive: true });
    await a.close();
  }
});

Deno.test("Asterisk refusing a command: agentd 503, a dial to no extension 400", async () => {
  // 19-errors: a QueueAdd into a queue Asterisk does not have, an Originate to no extension
  const replay = await startAmiReplay({
    connections: ["19-errors"],
    auto: (_action, index) => ![0, 8, 19].includes(index),
  });
  const a = await asteriskContext(replay.port);
  const { ctx, platform } = a;
  try {
    platform.start();
    await platform.firstSync();
    await replay.waiting();
    const agentd = await webServiceUser(ctx, ["agentd.#"]);
    const agents = apiCall(ctx, "/agents", await login(ctx, "webservice", agentd.login));
    const response = await agents("POST", "/by-number/8001/login", {
      extension: "1002",
      context: "default",
    });
    assert.equal(response.status, 503);
    assert.deepEqual(await response.json(), {
      error: "Asterisk refused QueueAdd: Unable to add interface to queue: No such queue",
    });
    assert.equal((await platform.agentPresence(a.w.agent.id)).logged, false);

    await replay.waiting();
    const ws = await webServiceUser(ctx, ["svc.rest.#"]);
    const v2 = apiCall(ctx, V2, await login(ctx, "webservice", ws.login));
    await login(ctx, "login", "alice");
    const dial = await v2("POST", "/dial/number/alice", { destination: "1099" });
    assert.equal(dial.status, 400);
    assert.deepEqual(await dial.json(), {
      error: "BadRequest",
      message: "Asterisk refused Originate: Extension does not exist.",
    });
    assert.deepEqual(platform.calls(), [], "the refused dial left nothing behind");
  } finally {
    await a.close();
    await replay.close();
  }
});

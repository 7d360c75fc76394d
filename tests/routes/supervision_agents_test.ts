/**
 * `GET /supervision/agents` (docs/supervision.md) through the real app, on the simulator in
 * virtual time: each state and since when, a queue call ringing unanswered (missed), answered
 * and talked, pause and login time (live, then counted), calls outside the queues (incoming,
 * outgoing), the `?queue=` filter.
 */
import assert from "node:assert/strict";
import { addAgent } from "../lib/platform/fixtures.ts";
import { expectError } from "../helpers.ts";
import { at, callCenter } from "./supervision_fixtures.ts";

Deno.test("an agent's state, since when, and its counts since midnight", async (s) => {
  const { t, ctx, bob, agent, queue, api } = await callCenter();
  const start = ctx.clock.now();
  const today = (figures: { today: Record<string, unknown> }) => {
    const { answered, missed, talkSeconds, pauseSeconds, loginSeconds } = figures.today;
    return { answered, missed, talkSeconds, pauseSeconds, loginSeconds };
  };

  await s.step("never logged in", async () => {
    assert.deepEqual(await api.json("/supervision/agents"), [{
      id: agent.id,
      number: "8001",
      firstname: null,
      lastname: null,
      state: "logged_out",
      call: null,
      since: null,
      paused: false,
      pausedReason: null,
      extension: null,
      loggedSince: null,
      queues: [{ id: queue.id, name: "sales", penalty: 0 }],
      today: {
        day: "2026-01-01",
        answered: 0,
        missed: 0,
        talkSeconds: 0,
        pauseSeconds: 0,
        loginSeconds: 0,
      },
    }]);
  });

  await s.step("logged in: ready since then; the login time grows", async () => {
    await t.sim.agentLogin(agent, "1001", "default");
    await t.advance(10_000);
    const figures = await api.agent(agent.id);
    assert.deepEqual(
      [figures.state, figures.since, figures.loggedSince, figures.extension],
      ["ready", at(start), at(start), "1001"],
    );
    assert.equal(figures.today.loginSeconds, 10);
  });

  await s.step("on pause with a reason: the pause time grows, then is counted", async () => {
    await t.sim.agentPause(agent.id, "lunch");
    await t.advance(60_000);
    let figures = await api.agent(agent.id);
    assert.deepEqual(
      [figures.state, figures.paused, figures.pausedReason, figures.since],
      ["paused", true, "lunch", at(start + 10_000)],
    );
    assert.deepEqual(today(figures), {
      answered: 0,
      missed: 0,
      talkSeconds: 0,
      pauseSeconds: 60,
      loginSeconds: 70,
    });
    await t.sim.agentUnpause(agent.id);
    await t.advance(5000);
    figures = await api.agent(agent.id);
    assert.equal(figures.state, "ready");
    assert.equal(figures.today.pauseSeconds, 60, "counted, no longer growing");
    assert.equal(figures.today.loginSeconds, 75);
  });

  await s.step("a queue call rings 15 s unanswered: missed; rung again", async () => {
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    let figures = await api.agent(agent.id);
    assert.deepEqual([figures.state, figures.call], ["ringing", "queue"]);
    await t.advance(15_000);
    figures = await api.agent(agent.id);
    assert.deepEqual([figures.state, figures.call], ["ringing", "queue"]);
    assert.equal(figures.since, at(start + 90_000), "rung again just now");
    assert.equal(figures.today.missed, 1);
  });

  await s.step("answered: on a queue call; the talk time grows, then is counted", async () => {
    await t.advance(2000);
    await t.sim.act("1001", "answer");
    await t.advance(30_000);
    let figures = await api.agent(agent.id);
    assert.deepEqual(
      [figures.state, figures.call, figures.since],
      ["on_call", "queue", at(start + 92_000)],
    );
    assert.deepEqual([figures.today.answered, figures.today.talkSeconds], [1, 30]);
    await t.sim.act("1002", "hangup");
    await t.advance(10_000);
    figures = await api.agent(agent.id);
    assert.equal(figures.state, "ready");
    assert.deepEqual(today(figures), {
      answered: 1,
      missed: 1,
      talkSeconds: 30,
      pauseSeconds: 60,
      loginSeconds: 132,
    });
  });

  await s.step("logged out: the login time is counted", async () => {
    await t.sim.agentLogout(agent.id);
    await t.advance(60_000);
    const figures = await api.agent(agent.id);
    assert.deepEqual(
      [figures.state, figures.since, figures.loggedSince, figures.extension],
      ["logged_out", at(start + 132_000), null, null],
    );
    assert.equal(figures.today.loginSeconds, 132);
    const history = await api.json("/supervision/history?from=2026-01-01");
    assert.deepEqual(history.agents, [{
      day: "2026-01-01",
      agentId: agent.id,
      number: "8001",
      firstname: null,
      lastname: null,
      answered: 1,
      missed: 1,
      talkSeconds: 30,
      pauseSeconds: 60,
      loginSeconds: 132,
    }]);
  });
});

Deno.test("a wrap-up, and a pause asked for during a call", async () => {
  const { t, bob, agent, queue, api } = await callCenter();
  await t.api.put(`/queues/${queue.id}`, { wrapup_seconds: 10 });
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.sim.act("1001", "answer");
  await t.sim.agentPause(agent.id, "files");
  assert.deepEqual(
    [(await api.agent(agent.id)).state, (await api.agent(agent.id)).paused],
    ["on_call", true],
  );
  await t.advance(5000);
  await t.sim.act("1002", "hangup");
  assert.equal((await api.agent(agent.id)).state, "wrapup");
  assert.equal((await api.queue()).agents.wrapup, 1);
  await t.advance(10_000);
  const figures = await api.agent(agent.id);
  assert.deepEqual([figures.state, figures.pausedReason], ["paused", "files"]);
  await t.advance(20_000);
  assert.equal((await api.agent(agent.id)).today.pauseSeconds, 20, "from the end of the wrap-up");
});

Deno.test("calls outside the queues: incoming, outgoing, over ready and paused", async (s) => {
  const { t, ctx, alice, bob, agent, api } = await callCenter();
  const start = ctx.clock.now();
  await t.sim.agentLogin(agent, "1001", "default");

  await s.step("the agent's phone dials out: on an outgoing call, from its start", async () => {
    await t.advance(1000);
    // a dial rings the caller's own phone first: dialling out already
    await t.sim.dialNumber(alice, "1002", {});
    let figures = await api.agent(agent.id);
    assert.deepEqual(
      [figures.state, figures.call, figures.since],
      ["on_call", "outgoing", at(start + 1000)],
    );
    await t.advance(1000);
    await t.sim.act("1001", "answer");
    await t.advance(2000);
    await t.sim.act("1002", "answer");
    figures = await api.agent(agent.id);
    assert.deepEqual(
      [figures.state, figures.call, figures.since],
      ["on_call", "outgoing", at(start + 2000)],
      "since the agent's own phone answered",
    );
    assert.deepEqual((await api.queue()).agents.ready, 0, "not available to the queue");
    assert.deepEqual((await api.queue()).agents.onCall, 1);
    await t.sim.act("1002", "hangup");
    assert.deepEqual((await api.agent(agent.id)).state, "ready");
  });

  await s.step(
    "a call to its phone: ringing, then on an incoming call; paused stays told",
    async () => {
      await t.sim.agentPause(agent.id, "coffee");
      await t.sim.dialNumber(bob, "1001", {});
      await t.sim.act("1002", "answer");
      let figures = await api.agent(agent.id);
      assert.deepEqual([figures.state, figures.call, figures.paused], [
        "ringing",
        "incoming",
        true,
      ]);
      await t.sim.act("1001", "answer");
      figures = await api.agent(agent.id);
      assert.deepEqual(
        [figures.state, figures.call, figures.pausedReason],
        ["on_call", "incoming", "coffee"],
      );
      await t.sim.act("1001", "hangup");
      figures = await api.agent(agent.id);
      assert.deepEqual([figures.state, figures.call], ["paused", null]);
      assert.equal(figures.today.talkSeconds, 0, "talk time is the queues' only");
    },
  );
});

Deno.test("GET /supervision/agents?queue=: the agents of those queues", async () => {
  const { t, agent, queue, api } = await callCenter();
  const other = await t.api.create("/queues", { name: "support" });
  const second = await addAgent(t, "8002", other.id);
  await addAgent(t, "8003", queue.id);
  const numbers = async (query: string) =>
    (await api.json(`/supervision/agents${query}`)).map((each: { number: string }) => each.number);
  assert.deepEqual(await numbers(""), ["8001", "8002", "8003"]);
  assert.deepEqual(await numbers(`?queue=${queue.id}`), ["8001", "8003"]);
  assert.deepEqual(await numbers(`?queue=${other.id}`), ["8002"]);
  assert.deepEqual(await numbers(`?queue=${other.id},${queue.id}`), ["8001", "8002", "8003"]);
  assert.deepEqual(await numbers("?queue=999"), []);
  await expectError(await api.request("GET", "/supervision/agents?queue=x"), 400, "BadRequest");
  void agent;
  void second;
});

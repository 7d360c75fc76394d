/**
 * `GET /supervision/queues` and `GET /supervision/queues/{queueId}/calls` (docs/supervision.md)
 * through the real app, step by step on the simulator in virtual time: a caller waiting (the
 * longest wait growing with time), answered within and after the service level, abandoned early
 * and late, a timeout, talk time; the `?queue=` filter and its errors.
 */
import assert from "node:assert/strict";
import { expectError } from "../helpers.ts";
import { at, callCenter } from "./supervision_fixtures.ts";

const NOTHING_YET = {
  entered: 0,
  answered: 0,
  abandoned: 0,
  abandonedShort: 0,
  timeout: 0,
  answeredWithinServiceLevel: 0,
  serviceLevelPercent: null,
  abandonedAfterShortPercent: null,
  meanWaitSeconds: null,
  maxWaitSeconds: 0,
  meanTalkSeconds: null,
};

Deno.test("a queue's figures, call after call", async (s) => {
  const { t, ctx, bob, carol, agent, queue, api } = await callCenter();
  const start = ctx.clock.now();

  await s.step("nothing yet: no call, no agent logged", async () => {
    assert.deepEqual(await api.json("/supervision/queues"), [{
      id: queue.id,
      name: "sales",
      displayName: null,
      number: "3000",
      timeZone: "UTC",
      serviceLevelSeconds: 20,
      waitingCalls: 0,
      longestWaitSeconds: 0,
      agents: { members: 1, logged: 0, ready: 0, ringing: 0, onCall: 0, wrapup: 0, paused: 0 },
      today: { day: "2026-01-01", ...NOTHING_YET },
    }]);
    assert.deepEqual(await api.json(`/supervision/queues/${queue.id}/calls`), []);
  });

  await s.step("the agent logs in, then pauses", async () => {
    await t.sim.agentLogin(agent, "1001", "default");
    assert.deepEqual((await api.queue()).agents, {
      members: 1,
      logged: 1,
      ready: 1,
      ringing: 0,
      onCall: 0,
      wrapup: 0,
      paused: 0,
    });
    await t.sim.agentPause(agent.id, "lunch");
    assert.equal((await api.queue()).agents.paused, 1);
    assert.equal((await api.queue()).agents.ready, 0);
  });

  await s.step("a caller waiting: the longest wait grows with time", async () => {
    const { linkedId } = await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    let figures = await api.queue();
    assert.equal(figures.waitingCalls, 1);
    assert.equal(figures.longestWaitSeconds, 0);
    assert.equal(figures.today.entered, 1);
    await t.advance(7000);
    figures = await api.queue();
    assert.equal(figures.longestWaitSeconds, 7);
    assert.deepEqual(await api.json(`/supervision/queues/${queue.id}/calls`), [{
      position: 1,
      callerNumber: "1002",
      callerName: "bob",
      waitingSince: at(start),
      waitSeconds: 7,
      linkedId,
    }]);
  });

  await s.step("a second caller behind, who hangs up after 3 s: a short abandon", async () => {
    await t.sim.dialNumber(carol, "3000", {});
    await t.sim.act("1003", "answer");
    const calls = await api.json(`/supervision/queues/${queue.id}/calls`);
    assert.deepEqual(calls.map((call: { position: number }) => call.position), [1, 2]);
    assert.equal(calls[1].callerNumber, "1003");
    assert.equal(calls[1].waitSeconds, 0);
    assert.equal((await api.queue()).waitingCalls, 2);
    await t.advance(3000);
    await t.sim.act("1003", "hangup");
    const figures = await api.queue();
    assert.equal(figures.waitingCalls, 1);
    assert.equal(figures.longestWaitSeconds, 10);
    assert.deepEqual(
      [figures.today.entered, figures.today.abandoned, figures.today.abandonedShort],
      [2, 1, 1],
    );
    assert.equal(figures.today.abandonedAfterShortPercent, 0);
  });

  await s.step("answered after 12 s: within the service level", async () => {
    await t.sim.agentUnpause(agent.id);
    assert.equal((await api.queue()).agents.ringing, 1);
    assert.equal((await api.queue()).waitingCalls, 1, "still waiting while the agent rings");
    await t.advance(2000);
    await t.sim.act("1001", "answer");
    const figures = await api.queue();
    assert.equal(figures.waitingCalls, 0);
    assert.equal(figures.longestWaitSeconds, 0);
    assert.equal(figures.agents.onCall, 1);
    assert.deepEqual(figures.today, {
      day: "2026-01-01",
      ...NOTHING_YET,
      entered: 2,
      answered: 1,
      abandoned: 1,
      abandonedShort: 1,
      answeredWithinServiceLevel: 1,
      serviceLevelPercent: 50,
      abandonedAfterShortPercent: 0,
      meanWaitSeconds: 12,
      maxWaitSeconds: 12,
    });
  });

  await s.step("the call ends after 60 s of talk: the mean talk time", async () => {
    await t.advance(60_000);
    await t.sim.act("1002", "hangup");
    const figures = await api.queue();
    assert.equal(figures.today.meanTalkSeconds, 60);
    assert.equal(figures.agents.onCall, 0);
    assert.equal(figures.agents.ready, 1, "no wrap-up time: ready again");
  });

  await s.step("answered after 25 s: past the service level; the means move", async () => {
    await t.sim.agentPause(agent.id, null);
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.advance(25_000);
    await t.sim.agentUnpause(agent.id);
    await t.sim.act("1001", "answer");
    await t.advance(30_000);
    await t.sim.act("1001", "hangup");
    const { today } = await api.queue();
    assert.deepEqual(
      [today.entered, today.answered, today.answeredWithinServiceLevel, today.serviceLevelPercent],
      [3, 2, 1, 33.3],
    );
    assert.equal(today.meanWaitSeconds, 19, "(12 + 25) / 2, rounded");
    assert.equal(today.maxWaitSeconds, 25);
    assert.equal(today.meanTalkSeconds, 45, "(60 + 30) / 2");
  });

  await s.step("abandoned after 12 s: not a short one", async () => {
    await t.sim.agentPause(agent.id, null);
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.advance(12_000);
    await t.sim.act("1002", "hangup");
    const { today } = await api.queue();
    assert.deepEqual([today.entered, today.abandoned, today.abandonedShort], [4, 2, 1]);
    assert.equal(today.abandonedAfterShortPercent, 25);
  });

  await s.step("a call left on the queue's timeout (30 s)", async () => {
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.advance(29_000);
    assert.equal((await api.queue()).longestWaitSeconds, 29);
    await t.advance(1000);
    const figures = await api.queue();
    assert.equal(figures.waitingCalls, 0);
    assert.deepEqual([figures.today.entered, figures.today.timeout], [5, 1]);
    assert.equal(figures.today.serviceLevelPercent, 20);
    assert.equal(figures.today.answered, 2, "unchanged");
  });
});

Deno.test("SVC_SUPERVISION_SERVICE_LEVEL and SVC_SUPERVISION_SHORT_ABANDON, per queue", async () => {
  const { t, bob, agent, api } = await callCenter({
    SVC_SUPERVISION_SERVICE_LEVEL: "20,sales=5",
    SVC_SUPERVISION_SHORT_ABANDON: "2",
  });
  assert.equal((await api.queue()).serviceLevelSeconds, 5);
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.agentPause(agent.id, null);
  // abandoned after 3 s: not short with 2
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.advance(3000);
  await t.sim.act("1002", "hangup");
  // answered after 6 s: past 5
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.advance(6000);
  await t.sim.agentUnpause(agent.id);
  await t.sim.act("1001", "answer");
  const { today } = await api.queue();
  assert.deepEqual(
    [today.abandoned, today.abandonedShort, today.answered, today.answeredWithinServiceLevel],
    [1, 0, 1, 0],
  );
});

Deno.test("?queue=: repeated or comma-separated ids; unknown ones left out; others 400", async (s) => {
  const { ctx, t, api } = await callCenter();
  const other = await t.api.create("/queues", { name: "support", display_name: "Support" });
  const third = await t.api.create("/queues", { name: "billing" });
  const ids = async (query: string) =>
    (await api.json(`/supervision/queues${query}`)).map((queue: { id: number }) => queue.id);

  await s.step("all of them, in id order, without the parameter", async () => {
    assert.deepEqual(await ids(""), [1, other.id, third.id]);
    assert.equal((await api.queue(other.id)).displayName, "Support");
  });
  await s.step("repeated, comma-separated, both; unknown ids left out", async () => {
    assert.deepEqual(await ids(`?queue=${third.id}&queue=1`), [1, third.id]);
    assert.deepEqual(await ids(`?queue=${other.id},${third.id}`), [other.id, third.id]);
    assert.deepEqual(await ids(`?queue=1,${third.id}&queue=${other.id}`), [1, other.id, third.id]);
    assert.deepEqual(await ids("?queue=999"), []);
    assert.deepEqual(await ids("?queue=%201%20"), [1], "spaces around an id");
  });
  await s.step("a value that is no id: 400 BadRequest", async () => {
    for (const query of ["?queue=sales", "?queue=", "?queue=1,,2", "?queue=-1", "?queue=1.5"]) {
      await expectError(
        await api.request("GET", `/supervision/queues${query}`),
        400,
        "BadRequest",
        /is no queue id/,
      );
    }
  });
  await s.step(
    "the calls of an unknown queue, or of a value no queue has: 404 QueueNotFound",
    async () => {
      for (const id of ["999", "01", "x", "1e3"]) {
        await expectError(
          await api.request("GET", `/supervision/queues/${id}/calls`),
          404,
          "QueueNotFound",
          new RegExp(`queue ${id} does not exist`),
        );
      }
    },
  );
  void ctx;
});

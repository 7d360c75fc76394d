/**
 * Scenario tests of the simulator's queues in virtual time: a user dialling a queue number, dial
 * from queue and dial to queue, each with a ready agent and with none (docs/platform.md).
 */
import assert from "node:assert/strict";
import type { PlatformEvent } from "../../../lib/platform/port.ts";
import {
  addAgent,
  agentAndQueue,
  agentSummary,
  assertPhoneEvents,
  history,
  phoneEvents,
  phoneUser,
  simSetup,
} from "./fixtures.ts";

/** Every event in one line each, phone and agent events interleaved as emitted. */
const timeline = (events: PlatformEvent[]) =>
  events.flatMap((event) =>
    event.kind === "phone"
      ? [`${event.username} ${event.eventType} ${event.DN}>${event.otherDN}`]
      : event.kind === "agent"
      ? [`agent ${event.agentNumber} ${event.name}`]
      : []
  );

/**
 * alice 1001 (agent 8001 of queue sales 3000, logged on her phone), bob 1002, carol 1003; every
 * phone answers by hand.
 */
async function callCenter(wrapupSeconds = 0) {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001");
  const bob = await phoneUser(t, "bob", "1002");
  const carol = await phoneUser(t, "carol", "1003");
  const { agent, queue } = await agentAndQueue(t, "8001", {
    name: "sales",
    number: "3000",
    wrapup_seconds: wrapupSeconds,
  });
  for (const extension of ["1001", "1002", "1003"]) {
    await t.sim.setPolicy(extension, { policy: "manual" });
  }
  return { t, alice, bob, carol, agent, queue, users: [alice, bob, carol] };
}

Deno.test("a user dials a queue: the ready agent rings, answers, talks, wraps up", async () => {
  const { t, alice, bob, agent, queue, users } = await callCenter(10);
  await t.sim.agentLogin(agent, "1001", "default");
  assert.deepEqual(agentSummary(t.take()), [["AgentReady", "8001", "1001", "alice", [queue.id]]]);

  const start = t.ctx.clock.now();
  const { linkedId } = await t.sim.dialNumber(bob, "3000", { order: "12" });
  await t.sim.act("1002", "answer");
  assert.deepEqual(t.sim.calls()[0]?.legs.map((leg) => [Object.values(leg)[1], leg.state]), [
    ["1002", "up"],
    ["3000", "waiting"],
    ["1001", "ringing"],
  ]);
  await t.advance(4000);
  await t.sim.act("1001", "answer");
  await t.advance(60_000);
  await t.sim.act("1002", "hangup");
  const ended = [...t.events];
  assert.equal((await t.sim.agentPresence(agent.id)).state, "AgentOnWrapup");
  await t.advance(9999);
  assert.equal((await t.sim.agentPresence(agent.id)).state, "AgentOnWrapup");
  await t.advance(1);
  const events = t.take();

  assert.deepEqual(timeline(events), [
    "bob EventDialing 1002>3000",
    "agent 8001 AgentRinging",
    "alice EventRinging 1001>1002",
    "agent 8001 AgentOnCall",
    "bob EventEstablished 1002>3000",
    "alice EventEstablished 1001>1002",
    "bob EventReleased 1002>3000",
    "alice EventReleased 1001>1002",
    "agent 8001 AgentOnWrapup",
    "agent 8001 AgentReady",
  ]);
  assert.deepEqual(
    ended.filter((event) => event.kind === "call_ended").map((event) => event.linkedId),
    [linkedId],
  );
  assertPhoneEvents(
    events,
    [
      ["bob", "EventDialing", "1002", "3000", "B"],
      ["alice", "EventRinging", "1001", "1002", "A"],
      ["bob", "EventEstablished", "1002", "3000", "B"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["bob", "EventReleased", "1002", "3000", "B"],
      ["alice", "EventReleased", "1001", "1002", "A"],
    ],
    { users, linkedId, firstLeg: "B", usr: { USR_order: "12" } },
  );
  for (const event of agentSummary(events)) {
    assert.deepEqual(event.slice(1), ["8001", "1001", "alice", [queue.id]]);
  }
  const common = { id: linkedId, startMs: start, endMs: start + 64_000, srcUsername: "bob" };
  assert.deepEqual(await history(t, bob), [{
    ...common,
    userId: bob.id,
    answeredMs: start + 4000,
    dstUsername: "alice",
    srcNum: "1002",
    dstNum: "3000",
    status: "emitted",
  }]);
  assert.deepEqual(await history(t, alice), [{
    ...common,
    userId: alice.id,
    answeredMs: start + 4000,
    dstUsername: "alice",
    srcNum: "1002",
    dstNum: "3000",
    status: "answered",
  }]);
});

Deno.test("a user dials a queue with no agent: waits 30 s, then released", async (s) => {
  const { t, alice, bob, agent, users } = await callCenter();

  await s.step("nobody logged", async () => {
    const { linkedId } = await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.advance(29_999);
    assert.equal(t.sim.calls()[0]?.legs[1]?.state, "waiting");
    await t.advance(1);
    assertPhoneEvents(
      t.take(),
      [
        ["bob", "EventDialing", "1002", "3000", "B"],
        ["bob", "EventReleased", "1002", "3000", "B"],
      ],
      { users, linkedId, firstLeg: "B" },
    );
    assert.deepEqual(
      (await history(t, bob)).map((r) => [r.status, r.dstUsername, r.answeredMs]),
      [["emitted", "", null]],
    );
    assert.deepEqual(await history(t, alice), []);
  });

  await s.step("an agent logging in meanwhile is offered the call at once", async () => {
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.advance(10_000);
    await t.sim.agentLogin(agent, "1001", "default");
    assert.deepEqual(timeline(t.take()), [
      "bob EventDialing 1002>3000",
      "agent 8001 AgentReady",
      "agent 8001 AgentRinging",
      "alice EventRinging 1001>1002",
    ]);
    // alice lets it ring 15 s: offered again; the 30 s count from the call's entry in the queue
    await t.advance(20_000);
    assert.deepEqual(timeline(t.take()), [
      "alice EventReleased 1001>1002",
      "agent 8001 AgentReady",
      "agent 8001 AgentRinging",
      "alice EventRinging 1001>1002",
      "bob EventReleased 1002>3000",
      "alice EventReleased 1001>1002",
      "agent 8001 AgentReady",
    ]);
    assert.equal((await history(t, alice))[0]?.status, "missed");
  });

  await s.step("a paused agent or one whose phone is busy is not offered calls", async () => {
    await t.sim.agentPause(agent.id, "lunch");
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.sim.agentUnpause(agent.id);
    await t.sim.act("1001", "answer");
    await t.sim.act("1001", "hangup");
    t.take();
    // alice busy on another call
    await t.sim.dialNumber(alice, "1003", {});
    await t.sim.act("1001", "answer");
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    assert.deepEqual(timeline(t.take()), [
      "alice EventDialing 1001>1003",
      "carol EventRinging 1003>1001",
      "bob EventDialing 1002>3000",
    ]);
    await t.sim.act("1001", "hangup");
    assert.deepEqual(timeline(t.take()), [
      "alice EventReleased 1001>1003",
      "carol EventReleased 1003>1001",
      "agent 8001 AgentRinging",
      "alice EventRinging 1001>1002",
    ]);
  });
});

Deno.test("an agent not answering within 15 s: the call is offered to the next one", async () => {
  const { t, alice, bob, carol, agent, queue, users } = await callCenter();
  const second = await addAgent(t, "8002", queue.id);
  await t.sim.agentLogin(agent, "1001", "default");
  await t.advance(1000);
  await t.sim.agentLogin(second, "1003", "default");
  t.take();

  const { linkedId } = await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.advance(15_000);
  await t.sim.act("1003", "answer");
  await t.sim.act("1003", "hangup");
  const events = t.take();
  assert.deepEqual(timeline(events), [
    "bob EventDialing 1002>3000",
    "agent 8001 AgentRinging",
    "alice EventRinging 1001>1002",
    "alice EventReleased 1001>1002",
    "agent 8001 AgentReady",
    "agent 8002 AgentRinging",
    "carol EventRinging 1003>1002",
    "agent 8002 AgentOnCall",
    "bob EventEstablished 1002>3000",
    "carol EventEstablished 1003>1002",
    "bob EventReleased 1002>3000",
    "carol EventReleased 1003>1002",
    "agent 8002 AgentOnWrapup",
    "agent 8002 AgentReady",
  ]);
  assertPhoneEvents(
    events,
    [
      ["bob", "EventDialing", "1002", "3000", "B"],
      ["alice", "EventRinging", "1001", "1002", "A"],
      ["alice", "EventReleased", "1001", "1002", "A"],
      ["carol", "EventRinging", "1003", "1002", "C"],
      ["bob", "EventEstablished", "1002", "3000", "B"],
      ["carol", "EventEstablished", "1003", "1002", "C"],
      ["bob", "EventReleased", "1002", "3000", "B"],
      ["carol", "EventReleased", "1003", "1002", "C"],
    ],
    { users, linkedId, firstLeg: "B" },
  );
  assert.equal((await history(t, alice))[0]?.status, "missed");
  assert.equal((await history(t, carol))[0]?.status, "answered");
  assert.equal((await history(t, bob))[0]?.dstUsername, "carol");
});

Deno.test("dial from queue with a ready agent: the agent's phone first, then the destination", async () => {
  const { t, alice, bob, agent, queue, users } = await callCenter();
  await t.sim.agentLogin(agent, "1001", "default");
  t.take();
  const start = t.ctx.clock.now();
  const { linkedId } = await t.sim.dialFromQueue(bob, queue, "1002", { campaign: "c1" }, {
    name: "Sales",
    number: "0140000000",
  });
  await t.advance(2000);
  await t.sim.act("1001", "answer");
  await t.advance(3000);
  await t.sim.act("1002", "answer");
  await t.advance(30_000);
  await t.sim.act("1001", "hangup");
  const events = t.take();
  assert.deepEqual(timeline(events), [
    "agent 8001 AgentRinging",
    "alice EventRinging 1001>1002",
    "agent 8001 AgentOnCall",
    "alice EventDialing 1001>1002",
    "bob EventRinging 1002>0140000000",
    "alice EventEstablished 1001>1002",
    "bob EventEstablished 1002>0140000000",
    "alice EventReleased 1001>1002",
    "bob EventReleased 1002>0140000000",
    "agent 8001 AgentOnWrapup",
    "agent 8001 AgentReady",
  ]);
  assertPhoneEvents(
    events,
    [
      ["alice", "EventRinging", "1001", "1002", "A"],
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["bob", "EventRinging", "1002", "0140000000", "B"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["bob", "EventEstablished", "1002", "0140000000", "B"],
      ["alice", "EventReleased", "1001", "1002", "A"],
      ["bob", "EventReleased", "1002", "0140000000", "B"],
    ],
    { users, linkedId, usr: { USR_campaign: "c1" } },
  );
  const common = {
    id: linkedId,
    startMs: start,
    answeredMs: start + 5000,
    endMs: start + 35_000,
    srcUsername: "alice",
    srcNum: "1001",
    dstNum: "1002",
  };
  assert.deepEqual(await history(t, alice), [{
    ...common,
    userId: alice.id,
    dstUsername: "bob",
    status: "emitted",
  }]);
  assert.deepEqual(await history(t, bob), [{
    ...common,
    userId: bob.id,
    dstUsername: "bob",
    status: "answered",
  }]);
});

Deno.test("dial from queue: the callee sees the queue's number without a caller id; the destination busy fails the agent's call", async () => {
  const { t, bob, agent, queue, users, alice } = await callCenter();
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.setPolicy("1002", { policy: "busy" });
  t.take();
  const { linkedId } = await t.sim.dialFromQueue(bob, queue, "1002", {}, {
    name: null,
    number: null,
  });
  await t.sim.act("1001", "answer");
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventRinging", "1001", "1002", "A"],
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["alice", "EventFailure", "1001", "1002", "A"],
    ],
    { users, linkedId },
  );
  assert.equal((await history(t, alice))[0]?.status, "emitted");

  await t.sim.setPolicy("1002", { policy: "manual" });
  await t.sim.dialFromQueue(bob, queue, "1002", {}, { name: null, number: null });
  await t.sim.act("1001", "answer");
  assert.deepEqual(timeline(t.take()).slice(-1), ["bob EventRinging 1002>3000"]);
});

Deno.test("dial from queue with no free agent: waits 30 s silently, then ends", async () => {
  const { t, alice, bob, agent, queue } = await callCenter();
  // the only agent is on pause
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.agentPause(agent.id, null);
  const { linkedId } = await t.sim.dialFromQueue(alice, queue, "1002", {}, {
    name: null,
    number: null,
  });
  assert.deepEqual(t.sim.calls(), [{
    linkedId,
    legs: [{ uniqueId: linkedId, number: "3000", state: "waiting" }],
  }]);
  await t.advance(30_000);
  assert.deepEqual(timeline(t.take()), ["agent 8001 AgentReady", "agent 8001 AgentOnPause"]);
  assert.deepEqual(t.sim.calls(), []);
  assert.deepEqual(await history(t, alice), []);
  assert.deepEqual(await history(t, bob), []);
});

Deno.test("dial to queue with a ready agent: the destination first, then the queue", async () => {
  const { t, alice, bob, agent, queue, users } = await callCenter();
  await t.sim.agentLogin(agent, "1001", "default");
  t.take();
  const start = t.ctx.clock.now();
  const { linkedId } = await t.sim.dialToQueue(queue, "1002", "0611223344", { lead: "9" });
  await t.advance(1000);
  await t.sim.act("1002", "answer");
  await t.advance(1000);
  await t.sim.act("1001", "answer");
  await t.advance(1000);
  await t.sim.act("1001", "hangup");
  const events = t.take();
  assert.deepEqual(timeline(events), [
    "bob EventRinging 1002>0611223344",
    "bob EventEstablished 1002>0611223344",
    "agent 8001 AgentRinging",
    "alice EventRinging 1001>1002",
    "agent 8001 AgentOnCall",
    "alice EventEstablished 1001>1002",
    "bob EventReleased 1002>0611223344",
    "alice EventReleased 1001>1002",
    "agent 8001 AgentOnWrapup",
    "agent 8001 AgentReady",
  ]);
  assertPhoneEvents(
    events,
    [
      ["bob", "EventRinging", "1002", "0611223344", "B"],
      ["bob", "EventEstablished", "1002", "0611223344", "B"],
      ["alice", "EventRinging", "1001", "1002", "A"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["bob", "EventReleased", "1002", "0611223344", "B"],
      ["alice", "EventReleased", "1001", "1002", "A"],
    ],
    { users, linkedId, firstLeg: "B", usr: { USR_lead: "9" } },
  );
  const common = {
    id: linkedId,
    startMs: start,
    endMs: start + 3000,
    srcUsername: "",
    srcNum: "0611223344",
    dstNum: "1002",
  };
  assert.deepEqual(await history(t, bob), [{
    ...common,
    userId: bob.id,
    answeredMs: start + 1000,
    dstUsername: "bob",
    status: "answered",
  }]);
  assert.deepEqual(await history(t, alice), [{
    ...common,
    userId: alice.id,
    answeredMs: start + 2000,
    dstUsername: "alice",
    dstNum: "3000",
    status: "answered",
  }]);
});

Deno.test("dial to queue with no agent: the destination answers, waits 30 s, released", async () => {
  const { t, bob, queue, users } = await callCenter();
  const { linkedId } = await t.sim.dialToQueue(queue, "1002", "0611223344", {});
  await t.sim.act("1002", "answer");
  await t.advance(30_000);
  assertPhoneEvents(
    t.take(),
    [
      ["bob", "EventRinging", "1002", "0611223344", "B"],
      ["bob", "EventEstablished", "1002", "0611223344", "B"],
      ["bob", "EventReleased", "1002", "0611223344", "B"],
    ],
    { users, linkedId, firstLeg: "B" },
  );
  assert.deepEqual((await history(t, bob)).map((r) => r.status), ["answered"]);
});

Deno.test("dial to queue toward an outside number: only the agent gets events", async () => {
  const { t, agent, queue, users } = await callCenter();
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.setPolicy("external", { policy: "auto", answer_ms: 500, talk_ms: 0 });
  t.take();
  const { linkedId } = await t.sim.dialToQueue(queue, "0699887766", "3000", {});
  await t.advance(500);
  await t.sim.act("1001", "answer");
  await t.sim.act("external", "hangup");
  assertPhoneEvents(
    phoneEvents(t.take()),
    [
      ["alice", "EventRinging", "1001", "0699887766", "A"],
      ["alice", "EventEstablished", "1001", "0699887766", "A"],
      ["alice", "EventReleased", "1001", "0699887766", "A"],
    ],
    { users, linkedId },
  );
});

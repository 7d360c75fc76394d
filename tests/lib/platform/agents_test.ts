/**
 * Agents of the simulated PBX in virtual time: login, logout, pause and unpause with their
 * refusals, and the states a queue call moves an agent through (docs/platform.md).
 */
import assert from "node:assert/strict";
import { PlatformRefusal } from "../../../lib/platform/port.ts";
import { agentAndQueue, agentSummary, phoneUser, simSetup } from "./fixtures.ts";

const refused = (reason: string) => (error: unknown) =>
  error instanceof PlatformRefusal && error.reason === reason;

/** alice 1001 and bob 1002 (manual phones), agents 8001 and 8002 in queue sales 3000. */
async function agents(wrapupSeconds = 0) {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001");
  const bob = await phoneUser(t, "bob", "1002");
  const { agent, queue } = await agentAndQueue(t, "8001", {
    name: "sales",
    number: "3000",
    wrapup_seconds: wrapupSeconds,
  });
  const other = await t.api.create("/agents", { number: "8002" });
  for (const extension of ["1001", "1002"]) await t.sim.setPolicy(extension, { policy: "manual" });
  return { t, alice, bob, agent, other, queue };
}

Deno.test("login, pause, unpause, logout: events and presence", async () => {
  const { t, agent, queue } = await agents();
  const loggedOut = {
    agentId: agent.id,
    logged: false,
    paused: false,
    pausedReason: null,
    extension: null,
    context: null,
    state: "AgentLoggedOut",
    sinceMs: null,
    loggedSinceMs: null,
  };
  assert.deepEqual(await t.sim.agentPresence(agent.id), loggedOut);

  const loginMs = t.ctx.clock.now();
  await t.sim.agentLogin(agent, "1001", "default");
  assert.deepEqual(await t.sim.agentPresence(agent.id), {
    ...loggedOut,
    logged: true,
    extension: "1001",
    context: "default",
    state: "AgentReady",
    sinceMs: loginMs,
    loggedSinceMs: loginMs,
  });
  // the whole list's presences are each agent's, in the order asked (an unknown id logged out)
  assert.deepEqual(await t.sim.agentPresences([99_999, agent.id]), [
    await t.sim.agentPresence(99_999),
    await t.sim.agentPresence(agent.id),
  ]);
  await t.advance(5000);
  await t.sim.agentPause(agent.id, "lunch");
  assert.deepEqual(await t.sim.agentPresence(agent.id), {
    ...loggedOut,
    logged: true,
    paused: true,
    pausedReason: "lunch",
    extension: "1001",
    context: "default",
    state: "AgentOnPause",
    sinceMs: loginMs + 5000,
    loggedSinceMs: loginMs,
  });
  await t.sim.agentUnpause(agent.id);
  await t.sim.agentUnpause(agent.id); // nothing to do: no event
  await t.advance(5000);
  await t.sim.agentLogout(agent.id);
  assert.deepEqual(await t.sim.agentPresence(agent.id), {
    ...loggedOut,
    sinceMs: loginMs + 10_000,
  });

  const where = ["8001", "1001", "alice", [queue.id]];
  assert.deepEqual(agentSummary(t.take()), [
    ["AgentReady", ...where],
    ["AgentOnPause", ...where],
    ["AgentReady", ...where],
    ["AgentLoggedOut", ...where],
  ]);
  assert.deepEqual(t.take(), []);
});

Deno.test("agent refusals: no_extension, already_logged, extension_in_use, not_logged", async () => {
  const { t, agent, other, queue } = await agents();
  await assert.rejects(() => t.sim.agentLogin(agent, "1999", "default"), refused("no_extension"));
  await assert.rejects(
    () => t.sim.agentLogin(agent, "1001", "from-extern"),
    refused("no_extension"),
  );
  await t.sim.agentLogin(agent, "1001", "default");
  await assert.rejects(() => t.sim.agentLogin(agent, "1002", "default"), refused("already_logged"));
  await assert.rejects(
    () => t.sim.agentLogin(other, "1001", "default"),
    refused("extension_in_use"),
  );
  for (
    const command of [
      () => t.sim.agentLogout(other.id),
      () => t.sim.agentPause(other.id, null),
      () => t.sim.agentUnpause(other.id),
    ]
  ) {
    await assert.rejects(command, refused("not_logged"));
  }
  await t.sim.agentLogin(other, "1002", "default");
  assert.deepEqual(
    agentSummary(t.take()).map(([name, number, phoneNb, username, queues]) => [
      name,
      number,
      phoneNb,
      username,
      queues,
    ]),
    [
      ["AgentReady", "8001", "1001", "alice", [queue.id]],
      ["AgentReady", "8002", "1002", "bob", []],
    ],
  );
});

Deno.test("a queue call moves the agent: Ringing → OnCall → OnWrapup → Ready", async () => {
  const { t, bob, agent } = await agents(20);
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  assert.equal((await t.sim.agentPresence(agent.id)).state, "AgentRinging");
  await t.sim.act("1001", "answer");
  assert.equal((await t.sim.agentPresence(agent.id)).state, "AgentOnCall");
  await t.sim.act("1001", "hangup");
  assert.equal((await t.sim.agentPresence(agent.id)).state, "AgentOnWrapup");
  await t.advance(20_000);
  assert.equal((await t.sim.agentPresence(agent.id)).state, "AgentReady");
  assert.deepEqual(agentSummary(t.take()).map(([name]) => name), [
    "AgentReady",
    "AgentRinging",
    "AgentOnCall",
    "AgentOnWrapup",
    "AgentReady",
  ]);
});

Deno.test("pause during a call: AgentOnPause when it ends (after the wrap-up)", async (s) => {
  const { t, bob, agent } = await agents(10);
  await t.sim.agentLogin(agent, "1001", "default");

  await s.step("paused while on call", async () => {
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.sim.act("1001", "answer");
    await t.sim.agentPause(agent.id, "break");
    const presence = await t.sim.agentPresence(agent.id);
    assert.deepEqual([presence.paused, presence.state], [true, "AgentOnCall"]);
    await t.sim.act("1002", "hangup");
    await t.advance(10_000);
    assert.deepEqual(agentSummary(t.take()).map(([name]) => name), [
      "AgentReady",
      "AgentRinging",
      "AgentOnCall",
      "AgentOnWrapup",
      "AgentOnPause",
    ]);
  });

  await s.step("paused while ringing, not answered: AgentOnPause; no call offered", async () => {
    await t.sim.agentUnpause(agent.id);
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.sim.agentPause(agent.id, null);
    await t.sim.act("1001", "reject");
    assert.deepEqual(agentSummary(t.take()).map(([name]) => name), [
      "AgentReady",
      "AgentRinging",
      "AgentOnPause",
    ]);
    await t.sim.act("1002", "hangup");
  });

  await s.step("unpause during the wrap-up ends it at once", async () => {
    await t.sim.agentUnpause(agent.id);
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.sim.act("1001", "answer");
    await t.sim.act("1001", "hangup");
    await t.advance(1000);
    await t.sim.agentUnpause(agent.id);
    assert.equal(t.ctx.clock.pending, 0, "the wrap-up timer is gone");
    assert.deepEqual(agentSummary(t.take()).map(([name]) => name), [
      "AgentReady",
      "AgentRinging",
      "AgentOnCall",
      "AgentOnWrapup",
      "AgentReady",
    ]);
  });

  await s.step("pause during the wrap-up: AgentOnPause when it ends", async () => {
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.sim.act("1001", "answer");
    await t.sim.act("1001", "hangup");
    await t.sim.agentPause(agent.id, "files");
    await t.advance(10_000);
    assert.deepEqual(agentSummary(t.take()).map(([name]) => name).slice(-2), [
      "AgentOnWrapup",
      "AgentOnPause",
    ]);
  });
});

Deno.test("logout while ringing: the call is offered again; while on a call: no wrap-up", async () => {
  const { t, agent, other, queue } = await agents(10);
  await t.api.put(`/queues/${queue.id}/members/agents/${other.id}`, { penalty: 0 });
  await t.sim.agentLogin(agent, "1001", "default");
  await t.advance(1000);
  await t.sim.agentLogin(other, "1002", "default");
  const carol = await phoneUser(t, "carol", "1003");
  await t.sim.setPolicy("1003", { policy: "manual" });
  t.take();

  await t.sim.dialNumber(carol, "3000", {});
  await t.sim.act("1003", "answer");
  await t.sim.agentLogout(agent.id);
  assert.deepEqual(
    t.take().flatMap((event) =>
      event.kind === "phone"
        ? [`${event.username} ${event.eventType}`]
        : event.kind === "agent"
        ? [`${event.agentNumber} ${event.name}`]
        : []
    ),
    [
      "carol EventDialing",
      "8001 AgentRinging",
      "alice EventRinging",
      "alice EventReleased",
      "8001 AgentLoggedOut",
      "8002 AgentRinging",
      "bob EventRinging",
    ],
  );
  await t.sim.act("1002", "answer");
  await t.sim.agentLogout(other.id);
  await t.sim.act("1002", "hangup");
  assert.deepEqual(agentSummary(t.take()).map(([name, number]) => `${number} ${name}`), [
    "8002 AgentOnCall",
    "8002 AgentLoggedOut",
  ]);
  assert.equal(t.ctx.clock.pending, 0);
});

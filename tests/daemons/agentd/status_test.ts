/**
 * Agent statuses (decisions §9): the list and one agent by id or number, before and after login,
 * on pause, the `state_interface` of each line kind, and a queue call moving the agent through its
 * states with its `AgentStateEvent`s in order.
 */
import assert from "node:assert/strict";
import type { AgentStatus } from "../../../lib/agent_control.ts";
import { bearer, type Confd, setup } from "../../helpers.ts";
import { agentEvents, agentSummary, phoneUser } from "../../lib/platform/fixtures.ts";
import { agentdClient, callCenter, loggedOut, tokenHolding } from "./fixtures.ts";

Deno.test("GET /agents, /agents/by-id/{id} and /agents/by-number/{number}", async (t) => {
  const { t: sim, agent, queue, api, origin } = await callCenter();
  const other = await sim.api.create("/agents", { number: "8002" });
  const support = await sim.api.create("/queues", { name: "support", number: "3001" });
  for (const queueId of [queue.id, support.id]) {
    const path = `/queues/${queueId}/members/agents/${other.id}`;
    assert.equal((await sim.api.put(path, { penalty: 0 })).status, 204);
  }
  const second: AgentStatus = {
    ...loggedOut(agent, queue, origin),
    id: other.id,
    number: "8002",
    queues: [{ id: queue.id, name: "sales" }, { id: support.id, name: "support" }],
  };

  await t.step("every agent, in id order, logged out: the four login fields null", async () => {
    assert.deepEqual(await api.status(""), [loggedOut(agent, queue, origin), second]);
  });
  await t.step("one agent by id and by number", async () => {
    assert.deepEqual(await api.status(`/by-id/${agent.id}`), loggedOut(agent, queue, origin));
    assert.deepEqual(await api.status("/by-number/8002"), second);
    assert.deepEqual(await api.status(`/by-id/${other.id}`), second);
  });
  await t.step("an agent in no queue has no queues", async () => {
    const alone = await sim.api.create("/agents", { number: "8003" });
    assert.deepEqual((await api.status<AgentStatus>("/by-number/8003")).queues, []);
    assert.equal((await api.status<AgentStatus[]>("")).at(-1)?.id, alone.id);
  });
  await t.step("no agent at all: an empty list", async () => {
    const empty = await setup();
    const client = agentdClient(empty, bearer(await tokenHolding(empty, ["agentd.agents.read"])));
    assert.deepEqual(await client.status(""), []);
  });
});

Deno.test("the status follows login, pause, unpause and logoff", async () => {
  const { t, agent, queue, api, origin } = await callCenter();
  const sip = await t.api.get("/endpoints/sip/1").then((response) => response.json());
  const ready: AgentStatus = {
    ...loggedOut(agent, queue, origin),
    logged: true,
    extension: "1001",
    context: "default",
    state_interface: `SIP/${sip.username}`,
    state: "AgentReady",
  };
  t.take();

  await api.command(`/by-id/${agent.id}/login`, { extension: "1001", context: "default" });
  assert.deepEqual(await api.status(`/by-id/${agent.id}`), ready);
  assert.deepEqual(await api.status(""), [ready]);

  await api.command("/by-number/8001/pause", { reason: "lunch" });
  const paused = { ...ready, paused: true, paused_reason: "lunch", state: "AgentOnPause" };
  assert.deepEqual(await api.status("/by-number/8001"), paused);

  await api.command("/by-number/8001/unpause");
  assert.deepEqual(await api.status("/by-number/8001"), ready);

  await api.command("/by-number/8001/pause");
  assert.deepEqual(await api.status("/by-number/8001"), { ...paused, paused_reason: null });

  await api.command(`/by-id/${agent.id}/logoff`);
  assert.deepEqual(await api.status(`/by-id/${agent.id}`), loggedOut(agent, queue, origin));

  assert.deepEqual(agentSummary(t.take()), [
    ["AgentReady", "8001", "1001", "alice", [queue.id]],
    ["AgentOnPause", "8001", "1001", "alice", [queue.id]],
    ["AgentReady", "8001", "1001", "alice", [queue.id]],
    ["AgentOnPause", "8001", "1001", "alice", [queue.id]],
    ["AgentLoggedOut", "8001", "1001", "alice", [queue.id]],
  ]);
});

/** A line in `default` holding `exten`, with an endpoint of `kind` (none: no endpoint). */
async function lineWith(api: Confd, exten: string, kind: "sip" | "sccp" | "custom" | "none") {
  const line = await api.create("/lines", { context: "default" });
  const extension = await api.create("/extensions", { exten, context: "default" });
  assert.equal((await api.put(`/lines/${line.id}/extensions/${extension.id}`)).status, 204);
  if (kind === "none") return { line, endpoint: null };
  const body = kind === "custom" ? { interface: `dahdi/i1/${exten}` } : {};
  const endpoint = await api.create(`/endpoints/${kind}`, body);
  const path = `/lines/${line.id}/endpoints/${kind}/${endpoint.id}`;
  assert.equal((await api.put(path)).status, 204);
  return { line, endpoint };
}

Deno.test("state_interface: SIP/<username>, SCCP/<line name>, the custom interface", async (t) => {
  const { t: sim, agent, api } = await callCenter();
  const loggedOn = async (exten: string) => {
    await api.command(`/by-id/${agent.id}/login`, { extension: exten, context: "default" });
    const status = await api.status<AgentStatus>(`/by-id/${agent.id}`);
    // the list (read from the whole collections) says the same
    assert.deepEqual(await api.status<AgentStatus[]>(""), [status]);
    await api.command(`/by-id/${agent.id}/logoff`);
    assert.equal(status.extension, exten);
    return status.state_interface;
  };

  // none of these lines has a user: a line holding the extension is all a login needs
  await t.step("SIP", async () => {
    const { endpoint } = await lineWith(sim.api, "1101", "sip");
    assert.match(endpoint.username, /^\w+$/);
    assert.equal(await loggedOn("1101"), `SIP/${endpoint.username}`);
  });
  await t.step("SCCP", async () => {
    const { line } = await lineWith(sim.api, "1102", "sccp");
    assert.equal(await loggedOn("1102"), `SCCP/${line.name}`);
  });
  await t.step("custom", async () => {
    await lineWith(sim.api, "1103", "custom");
    assert.equal(await loggedOn("1103"), "dahdi/i1/1103");
  });
  await t.step("a line without endpoint: null", async () => {
    await lineWith(sim.api, "1104", "none");
    assert.equal(await loggedOn("1104"), null);
  });
});

Deno.test("a queue call: AgentRinging → AgentOnCall → AgentOnWrapup → AgentReady", async () => {
  const { t, agent, queue, api } = await callCenter(10);
  const carol = await phoneUser(t, "carol", "1003");
  for (const extension of ["1001", "1003"]) await t.sim.setPolicy(extension, { policy: "manual" });
  await api.command("/by-number/8001/login", { extension: "1001", context: "default" });
  const state = async () => (await api.status<AgentStatus>("/by-number/8001")).state;
  assert.equal(await state(), "AgentReady");
  t.take();

  await t.sim.dialNumber(carol, "3000", {});
  await t.sim.act("1003", "answer"); // carol's own phone: the call goes on to the queue
  assert.equal(await state(), "AgentRinging");
  await t.sim.act("1001", "answer");
  assert.equal(await state(), "AgentOnCall");
  await t.advance(30_000);
  await t.sim.act("1003", "hangup");
  assert.equal(await state(), "AgentOnWrapup");
  await t.advance(9_999);
  assert.equal(await state(), "AgentOnWrapup");
  await t.advance(1);
  assert.equal(await state(), "AgentReady");

  const events = agentEvents(t.take());
  assert.deepEqual(events.map((event) => event.name), [
    "AgentRinging",
    "AgentOnCall",
    "AgentOnWrapup",
    "AgentReady",
  ]);
  for (const event of events) {
    assert.deepEqual(
      [event.agentId, event.agentNumber, event.phoneNb, event.username, event.queues],
      [agent.id, "8001", "1001", "alice", [queue.id]],
    );
  }
});

Deno.test("pause on a call shows AgentOnPause once it ends; unpause in wrap-up ends it", async () => {
  const { t, api } = await callCenter(60);
  const carol = await phoneUser(t, "carol", "1003");
  await api.command("/by-number/8001/login", { extension: "1001", context: "default" });
  const status = () => api.status<AgentStatus>("/by-number/8001");
  const call = async () => {
    await t.sim.dialNumber(carol, "3000", {});
    await t.sim.act("1003", "answer");
    await t.sim.act("1001", "answer");
  };
  for (const extension of ["1001", "1003"]) await t.sim.setPolicy(extension, { policy: "manual" });

  await call();
  await api.command("/by-number/8001/pause", { reason: "break" });
  let now = await status();
  assert.deepEqual([now.state, now.paused, now.paused_reason], ["AgentOnCall", true, "break"]);
  await t.sim.act("1003", "hangup");
  now = await status();
  assert.deepEqual([now.state, now.paused, now.paused_reason], ["AgentOnWrapup", true, "break"]);
  await t.advance(60_000);
  now = await status();
  assert.deepEqual([now.state, now.paused, now.paused_reason], ["AgentOnPause", true, "break"]);

  await api.command("/by-number/8001/unpause");
  await call();
  await t.sim.act("1003", "hangup");
  assert.equal((await status()).state, "AgentOnWrapup");
  await api.command("/by-number/8001/unpause");
  now = await status();
  assert.deepEqual([now.state, now.paused, now.paused_reason], ["AgentReady", false, null]);
  t.take();
});

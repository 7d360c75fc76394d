/**
 * An agent's queues through the agent daemon (`POST /agents/by-id/{id}/add` and `…/remove`
 * `{"queue_id"}`) and through the configuration daemon (`/1.1/queues/{id}/members/agents/{id}`):
 * both change the store's membership, and a logged-in agent follows it at once (the simulator).
 * Every error of `add` and `remove`.
 */
import assert from "node:assert/strict";
import type { AgentStatus } from "../../../lib/agent_control.ts";
import { agentEvents, phoneUser } from "../../lib/platform/fixtures.ts";
import { callCenter, expectAgentdError } from "./fixtures.ts";

const alicesLine = { extension: "1001", context: "default" };

Deno.test("add and remove: the queue's members, the agent's status, 204 without body", async () => {
  const { t, agent, queue, api } = await callCenter();
  const support = await t.api.create("/queues", { name: "support", number: "3001" });
  const queuesOf = async () => (await api.status<AgentStatus>(`/by-id/${agent.id}`)).queues;
  const members = async (id: number) => (await (await t.api.get(`/queues/${id}`)).json()).agents;

  await api.command(`/by-id/${agent.id}/add`, { queue_id: support.id });
  assert.deepEqual(await queuesOf(), [{ id: queue.id, name: "sales" }, {
    id: support.id,
    name: "support",
  }]);
  assert.deepEqual(await members(support.id), [{ id: agent.id, penalty: 0 }]);

  await api.command(`/by-id/${agent.id}/remove`, { queue_id: queue.id, other: "ignored" });
  assert.deepEqual(await queuesOf(), [{ id: support.id, name: "support" }]);
  assert.deepEqual(await members(queue.id), []);
  // a logged-out agent: nothing moved on the platform
  assert.deepEqual(agentEvents(t.take()), []);
});

/** A queue `support` (3001) without members, and carol (1003) waiting in it. */
async function callWaitingInSupport(cc: Awaited<ReturnType<typeof callCenter>>) {
  const { t, api, agent } = cc;
  const support = await t.api.create("/queues", { name: "support", number: "3001" });
  const carol = await phoneUser(t, "carol", "1003");
  for (const extension of ["1001", "1003"]) await t.sim.setPolicy(extension, { policy: "manual" });
  await api.command(`/by-id/${agent.id}/login`, alicesLine);
  await t.sim.dialNumber(carol, "3001", {});
  await t.sim.act("1003", "answer"); // carol's phone answers: the call waits in support
  t.take();
  return support as { id: number };
}

Deno.test("live: a logged-in agent added to a queue is offered its waiting call at once", async (t) => {
  await t.step("through /agents/by-id/{id}/add", async () => {
    const cc = await callCenter();
    const support = await callWaitingInSupport(cc);
    await cc.api.command(`/by-id/${cc.agent.id}/add`, { queue_id: support.id });
    const events = agentEvents(cc.t.take());
    assert.deepEqual(events.map((event) => [event.name, event.queues]), [
      ["AgentRinging", [cc.queue.id, support.id]],
    ]);
    await cc.t.sim.act("1001", "answer");
    assert.equal((await cc.api.status<AgentStatus>("/by-number/8001")).state, "AgentOnCall");
  });
  await t.step("through PUT /1.1/queues/{id}/members/agents/{agent_id}", async () => {
    const cc = await callCenter();
    const support = await callWaitingInSupport(cc);
    const path = `/queues/${support.id}/members/agents/${cc.agent.id}`;
    assert.equal((await cc.t.api.put(path, { penalty: 3 })).status, 204);
    assert.deepEqual(agentEvents(cc.t.take()).map((event) => event.name), ["AgentRinging"]);
  });
});

Deno.test("live: an agent removed from a queue is no longer offered its calls", async (t) => {
  for (const how of ["/agents remove", "DELETE /1.1 member"]) {
    await t.step(how, async () => {
      const cc = await callCenter();
      const { t: sim, api, agent, queue } = cc;
      const carol = await phoneUser(sim, "carol", "1003");
      await api.command(`/by-id/${agent.id}/login`, alicesLine);
      if (how === "/agents remove") {
        await api.command(`/by-id/${agent.id}/remove`, { queue_id: queue.id });
      } else {
        const path = `/queues/${queue.id}/members/agents/${agent.id}`;
        assert.equal((await sim.api.delete(path)).status, 204);
      }
      sim.take();
      await sim.sim.setPolicy("1003", { policy: "manual" });
      await sim.sim.dialNumber(carol, "3000", {});
      await sim.sim.act("1003", "answer");
      assert.deepEqual(agentEvents(sim.take()), []);
      const status = await api.status<AgentStatus>("/by-number/8001");
      // still logged in, in no queue
      assert.deepEqual([status.logged, status.state, status.queues], [true, "AgentReady", []]);
    });
  }
});

Deno.test("live: a penalty changed through /1.1 decides the next call", async () => {
  const { t, api, queue } = await callCenter();
  const other = await t.api.create("/agents", { number: "8002" });
  const member = (id: number) => `/queues/${queue.id}/members/agents/${id}`;
  assert.equal((await t.api.put(member(other.id), { penalty: 5 })).status, 204);
  const carol = await phoneUser(t, "carol", "1003");
  for (const extension of ["1001", "1002", "1003"]) {
    await t.sim.setPolicy(extension, { policy: "manual" });
  }
  await api.command("/by-number/8001/login", alicesLine);
  await api.command("/by-number/8002/login", { extension: "1002", context: "default" });
  const rung = async () => {
    await t.sim.dialNumber(carol, "3000", {});
    await t.sim.act("1003", "answer");
    const ringing = agentEvents(t.take()).filter((event) => event.name === "AgentRinging");
    await t.sim.act("1003", "hangup");
    t.take();
    return ringing.map((event) => event.agentNumber);
  };
  t.take();
  assert.deepEqual(await rung(), ["8001"]);
  assert.equal((await t.api.put(member(1), { penalty: 10 })).status, 204);
  assert.deepEqual(await rung(), ["8002"]);
});

Deno.test("add and remove: every error, checked in order", async (t) => {
  const { t: sim, agent, queue, api } = await callCenter();
  const support = await sim.api.create("/queues", { name: "support", number: "3001" });
  for (const command of ["add", "remove"]) {
    const path = `/by-id/${agent.id}/${command}`;
    await t.step(`${command}: 400 invalid fields: queue_id`, async () => {
      const bodies = [
        undefined,
        "",
        "{",
        "[]",
        "null",
        "{}",
        { queue_id: "1" },
        {
          queue_id: 1.5,
        },
        { queue_id: null },
        { queue_id: 2 ** 53 },
        { queueId: 1 },
      ];
      for (const body of bodies) {
        await expectAgentdError(await api.post(path, body), 400, "invalid fields: queue_id");
      }
      // the body is checked before the agent
      const unknown = await api.post("/by-id/999/" + command, {});
      await expectAgentdError(unknown, 400, "invalid fields: queue_id");
    });
    await t.step(`${command}: 404 no such agent, before the queue`, async () => {
      for (const named of ["/by-id/999", "/by-id/abc", "/by-id/01"]) {
        const response = await api.post(`${named}/${command}`, { queue_id: 999 });
        await expectAgentdError(response, 404, "no such agent");
      }
    });
    await t.step(`${command}: 404 no such queue`, async () => {
      for (const queueId of [999, 0, -1]) {
        const response = await api.post(path, { queue_id: queueId });
        await expectAgentdError(response, 404, "no such queue");
      }
    });
    await t.step(`${command}: only by id`, async () => {
      const response = await api.post(`/by-number/8001/${command}`, { queue_id: queue.id });
      await expectAgentdError(response, 404, `no route for POST /agents/by-number/8001/${command}`);
    });
  }
  await t.step("add: 409 agent already in queue", async () => {
    const response = await api.post(`/by-id/${agent.id}/add`, { queue_id: queue.id });
    await expectAgentdError(response, 409, "agent already in queue");
  });
  await t.step("remove: 409 agent not in queue", async () => {
    const response = await api.post(`/by-id/${agent.id}/remove`, { queue_id: support.id });
    await expectAgentdError(response, 409, "agent not in queue");
  });
  await t.step("nothing changed", async () => {
    const status = await api.status<AgentStatus>(`/by-id/${agent.id}`);
    assert.deepEqual(status.queues, [{ id: queue.id, name: "sales" }]);
  });
});

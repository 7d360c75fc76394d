/**
 * The agent daemon's routes on every agent at once, `POST /agents/logoff` and `POST /agents/relog`,
 * and its service status, `GET /agents/status` and `GET /status`.
 */
import assert from "node:assert/strict";
import type { AgentStatus } from "../../../lib/agent_control.ts";
import { bearer } from "../../helpers.ts";
import { agentEvents, agentSummary } from "../../lib/platform/fixtures.ts";
import { asteriskContext } from "../../lib/platform/asterisk/fixtures.ts";
import { agentdClient, callCenter, expectAgentdError, tokenHolding } from "./fixtures.ts";

/** The call center with agents 8001 on alice's line, 8002 on bob's (paused) and 8003 logged out. */
async function threeAgents() {
  const cc = await callCenter();
  const { t, api, queue } = cc;
  for (const number of ["8002", "8003"]) {
    const agent = await t.api.create("/agents", { number });
    const path = `/queues/${queue.id}/members/agents/${agent.id}`;
    assert.equal((await t.api.put(path, { penalty: 0 })).status, 204);
  }
  await api.command("/by-number/8001/login", { extension: "1001", context: "default" });
  await api.command("/by-number/8002/login", { extension: "1002", context: "default" });
  await api.command("/by-number/8002/pause", { reason: "lunch" });
  t.take();
  const where = async () =>
    (await api.status<AgentStatus[]>("")).map((s) => [s.number, s.state, s.extension]);
  return { ...cc, where };
}

Deno.test("POST /agents/logoff: every logged agent logs off; 204", async () => {
  const { t, api, where } = await threeAgents();
  await api.command("/logoff");
  assert.deepEqual(await where(), [
    ["8001", "AgentLoggedOut", null],
    ["8002", "AgentLoggedOut", null],
    ["8003", "AgentLoggedOut", null],
  ]);
  assert.deepEqual(agentSummary(t.take()).map(([name, number]) => [name, number]), [
    ["AgentLoggedOut", "8001"],
    ["AgentLoggedOut", "8002"],
  ]);
  // nobody logged in: nothing to do, 204 all the same; a body is not read
  await api.command("/logoff", "{not json");
  assert.deepEqual(t.take(), []);
});

Deno.test("POST /agents/relog: every logged agent logs off and back on where it was; 204", async () => {
  const { t, api, where } = await threeAgents();
  await api.command("/relog?recurse=True");
  // back on the same line, ready: the pause does not survive a relog
  assert.deepEqual(await where(), [
    ["8001", "AgentReady", "1001"],
    ["8002", "AgentReady", "1002"],
    ["8003", "AgentLoggedOut", null],
  ]);
  assert.deepEqual(agentEvents(t.take()).map((event) => [event.name, event.agentNumber]), [
    ["AgentLoggedOut", "8001"],
    ["AgentReady", "8001"],
    ["AgentLoggedOut", "8002"],
    ["AgentReady", "8002"],
  ]);
});

Deno.test("POST /agents/relog: an agent the platform refuses to log back stays off, logged", async () => {
  const { t, api, where } = await threeAgents();
  // bob's extension is disabled while 8002 is logged on it: it cannot log back on
  const [extension] = (await (await t.api.get("/extensions?search=1002")).json()).items;
  const disabled = await t.api.put(`/extensions/${extension.id}`, { enabled: false });
  assert.equal(disabled.status, 204, await disabled.text());
  await api.command("/relog");
  assert.deepEqual(await where(), [
    ["8001", "AgentReady", "1001"],
    ["8002", "AgentLoggedOut", null],
    ["8003", "AgentLoggedOut", null],
  ]);
  const warning = t.ctx.logs.map((line) => JSON.parse(line))
    .find((line) => line.msg === "agent not relogged");
  assert.deepEqual([warning?.agent, warning?.reason], ["8002", "no_extension"]);
});

Deno.test("POST /agents/logoff and /agents/relog: 503 when the store fails", async () => {
  const { t, api } = await threeAgents();
  t.ctx.services.store.close();
  await expectAgentdError(await api.post("/logoff"), 503, "Unreachable");
  await expectAgentdError(await api.post("/relog"), 503, "Unreachable");
});

Deno.test("GET /agents/status and GET /status: each component ok or fail", async (t) => {
  await t.step("the simulator and the store answer", async () => {
    const { t: sim } = await callCenter();
    const token = await tokenHolding(sim.ctx, ["agentd.status.read"]);
    for (const path of ["/agents/status", "/status"]) {
      const response = await sim.ctx.app.request(path, { headers: bearer(token) });
      assert.equal(response.status, 200);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      assert.deepEqual(await response.json(), {
        store: { status: "ok" },
        platform: { status: "ok" },
      });
    }
  });
  await t.step("the store fails: still 200, the store fail", async () => {
    const { t: sim } = await callCenter();
    const client = agentdClient(sim.ctx, bearer(await tokenHolding(sim.ctx, ["agentd.#"])));
    sim.ctx.services.store.close();
    assert.deepEqual(await client.status("/status"), {
      store: { status: "fail" },
      platform: { status: "ok" },
    });
  });
  await t.step("Asterisk unreachable: the platform fails", async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close(); // nothing listens there: the adapter never connects
    const a = await asteriskContext(port);
    try {
      const token = await tokenHolding(a.ctx, ["agentd.status.read"]);
      const response = await a.ctx.app.request("/status", { headers: bearer(token) });
      assert.deepEqual(await response.json(), {
        store: { status: "ok" },
        platform: { status: "fail" },
      });
    } finally {
      await a.close();
    }
  });
});

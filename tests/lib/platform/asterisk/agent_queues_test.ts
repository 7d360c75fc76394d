/**
 * A logged-in agent's queues changed in the configuration, on Asterisk (a replay of the recorded
 * queue session, `12-queue-agent`): `POST /agents/by-id/{id}/add` and `…/remove` send `QueueAdd`
 * and `QueueRemove` for that queue only, a penalty changed through `/1.1` sends `QueuePenalty`,
 * and a logged-out agent's changes send nothing. The replay answers what it did not record from
 * its library of recorded answers (QueueAdd and QueueRemove: Success; QueuePenalty: unknown).
 */
import assert from "node:assert/strict";
import type { AgentStatus } from "../../../../lib/agent_control.ts";
import { apiCall, confd, login, webServiceUser } from "../../../helpers.ts";
import { CLIENT_DRIVEN, startAmiReplay } from "../../../peers/ami_replay.ts";
import { asteriskContext } from "./fixtures.ts";

Deno.test("add/remove of a logged-in agent: QueueAdd/QueueRemove on Asterisk; logged out: none", async (t) => {
  const replay = await startAmiReplay({
    connections: ["12-queue-agent"],
    auto: (action) => !CLIENT_DRIVEN.has((action.get("Action") ?? "").toLowerCase()),
  });
  const a = await asteriskContext(replay.port);
  const { ctx, w, platform } = a;
  try {
    platform.start();
    await platform.firstSync();
    const admin = await webServiceUser(ctx, ["agentd.#"]);
    const agents = apiCall(ctx, "/agents", await login(ctx, "webservice", admin.login));
    const api = await confd(ctx);
    const sales = await api.create("/queues", { name: "sales" });
    const queueActions = () =>
      replay.actions
        .filter((action) => /^Queue(Add|Remove|Penalty)$/.test(action.get("Action") ?? ""))
        .map((action) =>
          ["Action", "Queue", "Interface", "MemberName", "Penalty", "Paused"].map((key) =>
            action.get(key)
          )
        );
    const command = async (path: string, body?: unknown) => {
      const response = await agents("POST", path, body);
      assert.equal(response.status, 204, await response.text());
      await replay.waiting();
      await platform.settled();
    };
    const status = async () => await (await agents("GET", `/by-id/${w.agent.id}`)).json();
    const bobsLine = `Local/${w.bob.line_ids[0]}@svc-agent`;

    await t.step("logged out: add and remove send nothing", async () => {
      await command(`/by-id/${w.agent.id}/add`, { queue_id: sales.id });
      await command(`/by-id/${w.agent.id}/remove`, { queue_id: sales.id });
      assert.deepEqual(queueActions(), []);
    });

    await t.step("login on bob's phone: a member of support (the recorded QueueAdd)", async () => {
      await command(`/by-number/8001/login`, { extension: "1002", context: "default" });
      assert.deepEqual(queueActions(), [
        ["QueueAdd", "support", bobsLine, "8001", "0", "false"],
      ]);
      assert.equal((await status()).state, "AgentReady");
    });

    await t.step("add to sales: QueueAdd into sales alone", async () => {
      await command(`/by-id/${w.agent.id}/add`, { queue_id: sales.id });
      assert.deepEqual(queueActions().slice(1), [
        ["QueueAdd", "sales", bobsLine, "8001", "0", "false"],
      ]);
      const now: AgentStatus = await status();
      assert.deepEqual(now.queues.map((queue) => queue.name), ["support", "sales"]);
      assert.deepEqual([now.logged, now.state], [true, "AgentReady"]);
    });

    await t.step("remove from sales: QueueRemove from sales alone", async () => {
      await command(`/by-id/${w.agent.id}/remove`, { queue_id: sales.id });
      assert.deepEqual(queueActions().slice(2), [
        ["QueueRemove", "sales", bobsLine, undefined, undefined, undefined],
      ]);
      assert.deepEqual((await status()).queues.map((queue: { name: string }) => queue.name), [
        "support",
      ]);
    });

    await t.step(
      "a penalty changed through /1.1: QueuePenalty (the replay refuses it)",
      async () => {
        const path = `/queues/${w.queue.id}/members/agents/${w.agent.id}`;
        const response = await api.put(path, { penalty: 4 });
        // the configuration holds the change; the PBX refusing to follow it live is logged
        assert.equal(response.status, 204, await response.text());
        assert.ok(a.ctx.logs.some((line) => line.includes("agent's queues not followed live")));
        await platform.settled();
        assert.deepEqual(queueActions().slice(3), [
          ["QueuePenalty", "support", bobsLine, undefined, "4", undefined],
        ]);
        const queue = await (await api.get(`/queues/${w.queue.id}`)).json();
        assert.deepEqual(queue.agents, [{ id: w.agent.id, penalty: 4 }]);
      },
    );

    await t.step("removed from its last queue, the agent stays logged in", async () => {
      await command(`/by-id/${w.agent.id}/remove`, { queue_id: w.queue.id });
      assert.deepEqual(queueActions().slice(4), [
        ["QueueRemove", "support", bobsLine, undefined, undefined, undefined],
      ]);
      const now: AgentStatus = await status();
      assert.deepEqual([now.logged, now.state, now.queues], [true, "AgentReady", []]);
    });
  } finally {
    await a.close();
    await replay.close();
  }
});

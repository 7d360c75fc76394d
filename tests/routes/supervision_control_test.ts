/**
 * The supervisor's commands (docs/supervision.md, "Control") through the real app: pause (with a
 * reason), unpause, log out, add to a queue (with a penalty) and remove, their refusals (unknown
 * agent or queue, not logged in, no member, bad bodies), and every supervision route's ACL.
 */
import assert from "node:assert/strict";
import { addAgent } from "../lib/platform/fixtures.ts";
import { getQueue } from "../../lib/store/queues.ts";
import { expectError, expectForbidden } from "../helpers.ts";
import { callCenter, supervisionApi } from "./supervision_fixtures.ts";

Deno.test("pause with a reason, unpause, log out: 204; the agent follows", async (s) => {
  const { t, ctx, agent, api } = await callCenter();
  const presence = () => ctx.services.platform.agentPresence(agent.id);
  await t.sim.agentLogin(agent, "1001", "default");

  await s.step("pause with a reason", async () => {
    await api.command(`/supervision/agents/${agent.id}/pause`, { reason: "training" });
    assert.deepEqual([(await presence()).state, (await presence()).pausedReason], [
      "AgentOnPause",
      "training",
    ]);
    const figures = await api.agent(agent.id);
    assert.deepEqual([figures.state, figures.pausedReason], ["paused", "training"]);
  });
  await s.step("unpause; pause without a body, with {} or a null reason", async () => {
    await api.command(`/supervision/agents/${agent.id}/unpause`);
    assert.equal((await presence()).state, "AgentReady");
    for (const body of [undefined, {}, { reason: null }]) {
      await api.command(`/supervision/agents/${agent.id}/pause`, body);
      assert.deepEqual([(await presence()).paused, (await presence()).pausedReason], [true, null]);
      await api.command(`/supervision/agents/${agent.id}/unpause`);
    }
  });
  await s.step("log out", async () => {
    await api.command(`/supervision/agents/${agent.id}/logout`);
    assert.equal((await presence()).logged, false);
  });
  await s.step("not logged in: 409 AgentNotLoggedIn on each", async () => {
    for (const action of ["pause", "unpause", "logout"]) {
      await expectError(
        await api.request("POST", `/supervision/agents/${agent.id}/${action}`),
        409,
        "AgentNotLoggedIn",
        /agent 8001 is not logged in/,
      );
    }
  });
  await s.step("an unknown agent, or a value no agent has: 404 AgentNotFound", async () => {
    for (const id of ["999", "01", "x", "1.5"]) {
      for (const action of ["pause", "unpause", "logout"]) {
        await expectError(
          await api.request("POST", `/supervision/agents/${id}/${action}`),
          404,
          "AgentNotFound",
          new RegExp(`agent ${id.replace(".", "\\.")} does not exist`),
        );
      }
    }
  });
  await s.step(
    "a pause body that is not JSON, or not the model: 400 JsonErrorDecoding",
    async () => {
      await t.sim.agentLogin(agent, "1001", "default");
      for (
        const body of [
          "{oops",
          "[]",
          '"x"',
          '{"reason":5}',
          JSON.stringify({ reason: "x".repeat(257) }),
        ]
      ) {
        await expectError(
          await api.request("POST", `/supervision/agents/${agent.id}/pause`, body),
          400,
          "JsonErrorDecoding",
        );
      }
      assert.equal((await presence()).paused, false, "nothing done");
    },
  );
});

Deno.test("add to a queue with a penalty, change it, remove: the configuration and live", async (s) => {
  const { t, ctx, bob, queue, api } = await callCenter();
  const other = await addAgent(t, "8002", (await t.api.create("/queues", { name: "support" })).id);
  const members = async () => (await getQueue(ctx.services.store, queue.id))!.members;
  const path = `/supervision/queues/${queue.id}/agents/${other.id}`;

  await s.step("a logged-in agent added is offered the waiting call at once", async () => {
    await t.sim.agentLogin(other, "1003", "default");
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    assert.equal((await api.queue()).waitingCalls, 1);
    await api.command(path, { penalty: 3 });
    assert.deepEqual((await members()).at(-1), { agent_id: other.id, penalty: 3 });
    const figures = await api.agent(other.id);
    assert.equal(figures.state, "ringing");
    assert.deepEqual(figures.queues.map((each) => [each.name, each.penalty]), [
      ["sales", 3],
      ["support", 0],
    ]);
    await t.sim.act("1002", "hangup");
  });
  await s.step("added again: takes the new penalty; no body: 0", async () => {
    await api.command(path, { penalty: 1 });
    assert.deepEqual((await members()).at(-1), { agent_id: other.id, penalty: 1 });
    await api.command(path);
    assert.deepEqual((await members()).at(-1), { agent_id: other.id, penalty: 0 });
    assert.equal((await members()).length, 2);
  });
  await s.step("a bad penalty or body: 400 JsonErrorDecoding", async () => {
    for (const body of ['{"penalty":-1}', '{"penalty":1.5}', '{"penalty":"1"}', "{oops", "[]"]) {
      await expectError(await api.request("POST", path, body), 400, "JsonErrorDecoding");
    }
  });
  await s.step("removed: 204; removed again: 409 AgentNotInQueue", async () => {
    const response = await api.request("DELETE", path);
    assert.equal(response.status, 204);
    assert.deepEqual((await members()).map((m) => m.agent_id), [1]);
    await expectError(
      await api.request("DELETE", path),
      409,
      "AgentNotInQueue",
      /agent 8002 is not in queue sales/,
    );
  });
  await s.step("an unknown queue or agent: 404", async () => {
    for (const method of ["POST", "DELETE"]) {
      await expectError(
        await api.request(method, `/supervision/queues/999/agents/${other.id}`),
        404,
        "QueueNotFound",
        /queue 999 does not exist/,
      );
      await expectError(
        await api.request(method, `/supervision/queues/${queue.id}/agents/999`),
        404,
        "AgentNotFound",
        /agent 999 does not exist/,
      );
      await expectError(
        await api.request(method, `/supervision/queues/0${queue.id}/agents/${other.id}`),
        404,
        "QueueNotFound",
      );
      await expectError(
        await api.request(method, `/supervision/queues/${queue.id}/agents/x`),
        404,
        "AgentNotFound",
      );
    }
  });
});

Deno.test("every supervision route refuses a token without its ACL, takes one with it", async (s) => {
  const { ctx, agent, queue } = await callCenter();
  const q = queue.id;
  const a = agent.id;
  await ctx.services.platform.agentLogin(agent, "1001", "default");
  const routes: [string, string, string, unknown?][] = [
    ["GET", "/supervision/queues", "svc.rest.supervision.queues.read"],
    ["GET", `/supervision/queues/${q}/calls`, `svc.rest.supervision.queues.${q}.calls.read`],
    [
      "GET",
      `/supervision/queues/${q}/intervals`,
      `svc.rest.supervision.queues.${q}.intervals.read`,
    ],
    ["GET", "/supervision/agents", "svc.rest.supervision.agents.read"],
    ["GET", "/supervision/history?from=2026-01-01", "svc.rest.supervision.history.read"],
    ["POST", `/supervision/agents/${a}/pause`, `svc.rest.supervision.agents.${a}.pause.create`],
    [
      "POST",
      `/supervision/agents/${a}/unpause`,
      `svc.rest.supervision.agents.${a}.unpause.create`,
    ],
    [
      "POST",
      `/supervision/queues/${q}/agents/${a}`,
      `svc.rest.supervision.queues.${q}.agents.${a}.create`,
      { penalty: 2 },
    ],
    [
      "DELETE",
      `/supervision/queues/${q}/agents/${a}`,
      `svc.rest.supervision.queues.${q}.agents.${a}.delete`,
    ],
    ["POST", `/supervision/agents/${a}/logout`, `svc.rest.supervision.agents.${a}.logout.create`],
  ];
  const holding = async (acls: string[]) => {
    const identity = { userId: "0", login: "acl-check", userType: "webservice" as const, acls };
    return supervisionApi(ctx, (await ctx.services.tokens.issue(identity)).token);
  };
  const narrow = await holding(["svc.rest.supervision.other.#", "confd.#"]);
  for (const [method, path, acl, body] of routes) {
    await s.step(`${method} ${path} needs ${acl}`, async () => {
      await expectForbidden(await narrow.request(method, path, body), acl);
      const allowed = await (await holding([acl])).request(method, path, body);
      assert.ok(allowed.status < 300, `${method} ${path}: ${allowed.status}`);
      await allowed.body?.cancel();
    });
  }
});

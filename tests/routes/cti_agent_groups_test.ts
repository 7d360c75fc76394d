/**
 * The agent group commands of the CTI socket (docs/cti.md, "Agent groups") over a real HTTP
 * server on loopback: `setAgentGroup` and the four commands changing the queues of a group's
 * agents, each checked against the queue members `/1.1/queues/{id}` shows and the `QueueMember`
 * messages of a socket following the members; the refusals of a CTI user without a rights profile
 * and of a supervisor whose profile lacks a queue or the right to change queues (nothing changed),
 * unknown ids, missing and mistyped fields.
 */
import assert from "node:assert/strict";
import { groupOfAgent } from "../../lib/agent_groups/store.ts";
import { SETTLE_MS } from "../../lib/cti/supervision.ts";
import { findUserByUsername } from "../../lib/store/users.ts";
import { rightsAdmin } from "../helpers.ts";
import { addAgent } from "../lib/platform/fixtures.ts";
import { command, ofType, refusal, type World, world } from "./cti_center.ts";

/**
 * The centre with a third agent 8003 in sales (penalty 1), a fourth 8004 in sales (penalty 0) in
 * no group, and the group `team` of 8001 (sales 0), 8002 (support 0) and 8003 (sales 1).
 */
async function teams() {
  const w = await world();
  const third = await addAgent(w.t, "8003", w.queue.id);
  assert.equal(
    (await w.admin.put(`/queues/${w.queue.id}/members/agents/${third.id}`, { penalty: 1 }))
      .status,
    204,
  );
  const fourth = await addAgent(w.t, "8004", w.queue.id);
  const team = (await w.admin.create("/agentgroups", { name: "team" })).id as number;
  for (const agent of [w.agent, w.second, third]) {
    assert.equal((await w.admin.put(`/agentgroups/${team}/agents/${agent.id}`)).status, 204);
  }
  return { ...w, third: third.id, fourth: fourth.id, team };
}

/** Each queue's members as `/1.1/queues/{id}` shows them: `{agentId: penalty}`. */
async function members(w: World) {
  const of = async (id: number) => {
    const view = await (await w.admin.get(`/queues/${id}`)).json();
    return Object.fromEntries(
      view.agents.map((agent: { id: number; penalty: number }) => [agent.id, agent.penalty]),
    );
  };
  return { sales: await of(w.queue.id), support: await of(w.support) };
}

Deno.test("a plain CTI user is refused every agent group command, and nothing changes", async () => {
  const w = await teams();
  try {
    const before = await members(w);
    const pat = await w.plain();
    const fromTo = {
      groupId: w.team,
      fromQueueId: w.queue.id,
      fromPenalty: 0,
      toQueueId: w.support,
      toPenalty: 0,
    };
    const inQueue = { groupId: w.team, queueId: w.support, penalty: 0 };
    const cases: [string, Record<string, unknown>][] = [
      ["setAgentGroup", { agentId: w.fourth, groupId: w.team }],
      ["addAgentsInGroup", fromTo],
      ["moveAgentsInGroup", fromTo],
      ["removeAgentGroupFromQueueGroup", { ...inQueue, queueId: w.queue.id }],
      ["addAgentsNotInQueueFromGroupTo", inQueue],
    ];
    for (const [name, fields] of cases) {
      pat.web(name, fields);
      assert.deepEqual(await refusal(pat, name), {
        error: "Forbidden",
        message: "the user has no supervisor rights profile",
      }, name);
    }
    assert.deepEqual(await members(w), before);
    assert.equal(await groupOfAgent(w.ctx.services.store, w.fourth), null);
  } finally {
    await w.close();
  }
});

Deno.test("setAgentGroup: the agent's group, shown in its AgentConfig; every error", async () => {
  const w = await teams();
  try {
    const { store } = w.ctx.services;
    const sam = await w.supervisor();
    sam.web("getList", { objectType: "agent" });
    await sam.type("AgentList");

    await command(sam, "setAgentGroup", { agentId: w.fourth, groupId: w.team });
    assert.equal(await groupOfAgent(store, w.fourth), w.team);
    await w.flush();
    const config = await sam.next(
      ofType("AgentConfig", (m) => m.ctiMessage.id === w.fourth),
      "8004's AgentConfig",
    );
    assert.equal(config.ctiMessage.groupId, w.team);
    const view = await (await w.admin.get(`/agentgroups/${w.team}`)).json();
    assert.deepEqual(view.agents.map((agent: { number: string }) => agent.number), [
      "8001",
      "8002",
      "8003",
      "8004",
    ]);

    // moved to another group: out of team; null: in none
    const night = (await w.admin.create("/agentgroups", { name: "night" })).id;
    await command(sam, "setAgentGroup", { agentId: w.fourth, groupId: night });
    assert.equal(await groupOfAgent(store, w.fourth), night);
    await command(sam, "setAgentGroup", { agentId: w.fourth, groupId: null });
    assert.equal(await groupOfAgent(store, w.fourth), null);

    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ groupId: w.team }, "BadRequest", /field agentId/],
      [{ agentId: w.fourth }, "BadRequest", /field groupId/],
      [{ agentId: String(w.fourth), groupId: w.team }, "BadRequest", /field agentId/],
      [{ agentId: w.fourth, groupId: "1" }, "BadRequest", /field groupId/],
      [{ agentId: 1.5, groupId: w.team }, "BadRequest", /field agentId/],
      [{ agentId: 999, groupId: w.team }, "AgentNotFound", /agent 999/],
      [{ agentId: w.fourth, groupId: 999 }, "AgentGroupNotFound", /agent group 999/],
    ];
    for (const [fields, error, message] of cases) {
      sam.web("setAgentGroup", fields);
      const answer = await refusal(sam, "setAgentGroup");
      assert.equal(answer.error, error, JSON.stringify(fields));
      assert.match(String(answer.message), message);
    }
    assert.equal(await groupOfAgent(store, w.fourth), null);
  } finally {
    await w.close();
  }
});

Deno.test("the queues of a group's agents: add, move, remove, add those not in the queue", async (t) => {
  const w = await teams();
  try {
    await w.t.sim.agentLogin(w.agent, "1001", "default");
    const sam = await w.supervisor();
    sam.web("getList", { objectType: "queuemember" });
    await sam.type("QueueMemberList");
    const [a1, a2, a3, a4] = [w.agent.id, w.second.id, w.third, w.fourth];
    const from = (
      fromQueueId: number,
      fromPenalty: number,
      toQueueId: number,
      toPenalty: number,
    ) => ({
      groupId: w.team,
      fromQueueId,
      fromPenalty,
      toQueueId,
      toPenalty,
    });
    const { queue: { id: sales }, support } = w;

    await t.step("addAgentsInGroup: those in sales at 0 join support at 2", async () => {
      await command(sam, "addAgentsInGroup", from(sales, 0, support, 2));
      assert.deepEqual(await members(w), {
        sales: { [a1]: 0, [a3]: 1, [a4]: 0 },
        support: { [a2]: 0, [a1]: 2 },
      });
      await w.flush();
      assert.deepEqual((await sam.type("QueueMember")).ctiMessage, {
        agentId: a1,
        queueId: support,
        penalty: 2,
      });
      // 8001, logged in on alice's phone, followed on the platform: a call to support rings it
      await w.t.sim.dialNumber(w.bob, "3001", {});
      await w.t.sim.act("1002", "answer");
      assert.equal((await w.api.agent(a1)).state, "ringing");
      await w.t.sim.act("1002", "hangup");
      assert.equal((await w.api.agent(a1)).state, "ready");
    });

    await t.step("moveAgentsInGroup within one queue: only the penalty changes", async () => {
      await command(sam, "moveAgentsInGroup", from(support, 2, support, 5));
      assert.deepEqual((await members(w)).support, { [a2]: 0, [a1]: 5 });
    });

    await t.step("moveAgentsInGroup: those in sales at 1 leave it for support at 1", async () => {
      await command(sam, "moveAgentsInGroup", from(sales, 1, support, 1));
      assert.deepEqual(await members(w), {
        sales: { [a1]: 0, [a4]: 0 },
        support: { [a2]: 0, [a1]: 5, [a3]: 1 },
      });
      await w.flush();
      const changes = [
        (await sam.type("QueueMember")).ctiMessage,
        (await sam.type("QueueMember")).ctiMessage,
        (await sam.type("QueueMember")).ctiMessage,
      ];
      assert.deepEqual(
        new Set(changes.map((m) => JSON.stringify(m))),
        new Set([
          { agentId: a1, queueId: support, penalty: 5 }, // the step before's, sent with these
          { agentId: a3, queueId: support, penalty: 1 },
          { agentId: a3, queueId: sales, penalty: -1 },
        ].map((m) => JSON.stringify(m))),
      );
    });

    await t.step("removeAgentGroupFromQueueGroup: those in support at 5 leave it", async () => {
      await command(sam, "removeAgentGroupFromQueueGroup", {
        groupId: w.team,
        queueId: support,
        penalty: 5,
      });
      assert.deepEqual((await members(w)).support, { [a2]: 0, [a3]: 1 });
    });

    await t.step(
      "addAgentsNotInQueueFromGroupTo: the group's agents not in sales join it",
      async () => {
        await command(sam, "addAgentsNotInQueueFromGroupTo", {
          groupId: w.team,
          queueId: sales,
          penalty: 3,
        });
        assert.deepEqual(
          (await members(w)).sales,
          { [a1]: 0, [a4]: 0, [a2]: 3, [a3]: 3 },
          "8001 keeps its penalty, 8004 is in no group",
        );
      },
    );

    await t.step("nobody at that penalty: nothing changes, no error", async () => {
      const before = await members(w);
      await command(sam, "moveAgentsInGroup", from(sales, 9, support, 0));
      assert.deepEqual(await members(w), before);
      assert.equal(sam.messages.filter(ofType("Error")).length, 0);
    });
  } finally {
    await w.close();
  }
});

Deno.test("the group commands' errors: unknown ids, fields; a queue or right the profile lacks", async () => {
  const w = await teams();
  try {
    const before = await members(w);
    const sam = await w.supervisor();
    const { queue: { id: sales }, support, team } = w;
    const fromTo = (more: Record<string, unknown>) => ({
      groupId: team,
      fromQueueId: sales,
      fromPenalty: 0,
      toQueueId: support,
      toPenalty: 0,
      ...more,
    });
    const inQueue = (more: Record<string, unknown>) => ({
      groupId: team,
      queueId: sales,
      penalty: 0,
      ...more,
    });
    const cases: [string, Record<string, unknown>, string, RegExp][] = [
      ["addAgentsInGroup", fromTo({ groupId: 999 }), "AgentGroupNotFound", /agent group 999/],
      ["moveAgentsInGroup", fromTo({ fromQueueId: 999 }), "QueueNotFound", /queue 999/],
      ["moveAgentsInGroup", fromTo({ toQueueId: 999 }), "QueueNotFound", /queue 999/],
      ["addAgentsInGroup", fromTo({ toPenalty: -1 }), "BadRequest", /field toPenalty/],
      ["addAgentsInGroup", fromTo({ fromPenalty: undefined }), "BadRequest", /field fromPenalty/],
      ["moveAgentsInGroup", fromTo({ groupId: "team" }), "BadRequest", /field groupId/],
      ["moveAgentsInGroup", fromTo({ toQueueId: null }), "BadRequest", /field toQueueId/],
      ["removeAgentGroupFromQueueGroup", inQueue({ queueId: 999 }), "QueueNotFound", /999/],
      ["removeAgentGroupFromQueueGroup", inQueue({ penalty: "0" }), "BadRequest", /penalty/],
      ["addAgentsNotInQueueFromGroupTo", inQueue({ groupId: 999 }), "AgentGroupNotFound", /999/],
      ["addAgentsNotInQueueFromGroupTo", { groupId: team }, "BadRequest", /field queueId/],
      ["addAgentsNotInQueueFromGroupTo", inQueue({ penalty: 2 ** 31 }), "BadRequest", /penalty/],
    ];
    for (const [name, fields, error, message] of cases) {
      sam.web(name, fields);
      const answer = await refusal(sam, name);
      assert.equal(answer.error, error, `${name} ${JSON.stringify(fields)}`);
      assert.match(String(answer.message), message);
    }
    assert.deepEqual(await members(w), before);

    // a supervisor of the group and of support only: a move out of sales is refused before
    // anything changes, and so is an add reading sales
    const give = await rightsAdmin(w.ctx);
    const pat = (await findUserByUsername(w.ctx.services.store, "pat"))!;
    const narrow = await w.plain();
    const notCovered = {
      error: "Forbidden",
      message: `queue ${sales} is not in the user's rights profile`,
    };
    await give(pat.id, {
      profile: "supervisor",
      groupIds: [team],
      queueIds: [support],
      changeQueues: true,
    });
    for (const name of ["moveAgentsInGroup", "addAgentsInGroup"]) {
      narrow.web(name, fromTo({}));
      assert.deepEqual(await refusal(narrow, name), notCovered, name);
    }
    // both queues, but not the right to change queues
    await give(pat.id, { profile: "supervisor", groupIds: [team], queueIds: [sales, support] });
    narrow.web("moveAgentsInGroup", fromTo({}));
    assert.deepEqual(await refusal(narrow, "moveAgentsInGroup"), {
      error: "Forbidden",
      message: "the user's rights profile does not allow changing agents' queues",
    });
    assert.deepEqual(await members(w), before);
    await give(pat.id, {
      profile: "supervisor",
      groupIds: [team],
      queueIds: [sales, support],
      changeQueues: true,
    });
    // what it holds, it may do
    await command(narrow, "addAgentsInGroup", fromTo({}));
    assert.equal((await members(w)).support[w.agent.id], 0);
    await w.ctx.clock.advance(SETTLE_MS);
  } finally {
    await w.close();
  }
});

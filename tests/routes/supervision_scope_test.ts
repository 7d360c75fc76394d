/**
 * A supervisor restricted by its rights profile (docs/supervision.md, "Who is a supervisor"), on
 * the call centre of cti_center.ts (queue sales with agent 8001 on alice's phone, queue support
 * with agent 8002 on dave's): carl supervises sales only. Every place supervision is served shows
 * him sales and its agent alone, and refuses (403 `Forbidden`, never a partial answer) what he
 * names of support: the REST routes, the agent daemon's list, `/metrics`, the event stream, the
 * CTI socket's every supervisor command and subscription. A change of his profile holds at his
 * next request with the same token, and on his open socket within a second.
 */
import assert from "node:assert/strict";
import { SETTLE_MS } from "../../lib/cti/supervision.ts";
import { mayListen, rightsOf } from "../../lib/rights/rights.ts";
import { phoneUser } from "../lib/platform/fixtures.ts";
import { bearer, ctiUser, login, rightsAdmin } from "../helpers.ts";
import { parseExposition } from "../prometheus.ts";
import { SseReader } from "../sse.ts";
import { command, named, ofType, refusal, settled, world } from "./cti_center.ts";
import type { Message } from "./cti_fixtures.ts";
import { supervisionApi, V2 } from "./supervision_fixtures.ts";

/** The centre with calls of both queues answered, and carl, a supervisor of sales only. */
async function scoped() {
  const w = await world();
  const { sim } = w.t;
  const dave = await phoneUser(w.t, "dave", "1004");
  await sim.setPolicy("1004", { policy: "manual" });
  await sim.agentLogin(w.agent, "1001", "default");
  await sim.agentLogin(w.second, "1004", "default");
  // carol calls sales, answered by 8001; bob calls support, answered by 8002
  for (
    const [caller, exten, number, phone] of [[w.carol, "1003", "3000", "1001"], [
      w.bob,
      "1002",
      "3001",
      "1004",
    ]] as const
  ) {
    await sim.dialNumber(caller, number, {});
    await sim.act(exten, "answer");
    await w.t.advance(2000);
    await sim.act(phone, "answer");
    await w.t.advance(10_000);
    await sim.act(exten, "hangup");
  }
  const carl = await ctiUser(w.ctx, "carl");
  const give = await rightsAdmin(w.ctx);
  const sales = w.queue.id;
  await give(carl.id, { profile: "supervisor", queueIds: [sales] });
  const token = await login(w.ctx, "login", "carl");
  return { ...w, dave, carl, give, sales, token, api: supervisionApi(w.ctx, token), web: w.api };
}

const forbidden = async (response: Response, message: RegExp) => {
  const body = await response.json();
  assert.equal(response.status, 403, JSON.stringify(body));
  assert.equal(body.error, "Forbidden");
  assert.match(body.message, message);
};

const QUEUE_REFUSED = (id: number) =>
  new RegExp(`^queue ${id} is not in the user's rights profile$`);
const AGENT_REFUSED = (id: number) =>
  new RegExp(`^agent ${id} is not in the user's rights profile$`);

Deno.test("REST: a supervisor of sales sees sales and its agent, and is refused support by id", async () => {
  const w = await scoped();
  try {
    const { api, sales, support } = w;
    const queues = await api.json("/supervision/queues");
    assert.deepEqual(queues.map((q: { id: number }) => q.id), [sales]);
    const agents = await api.json("/supervision/agents");
    assert.deepEqual(agents.map((a: { id: number }) => a.id), [w.agent.id]);
    assert.deepEqual(agents[0].queues.map((q: { id: number }) => q.id), [sales]);
    assert.deepEqual(
      (await api.json(`/supervision/queues?queue=${sales}`)).map((q: { id: number }) => q.id),
      [sales],
    );
    // by id: support, and a queue that does not exist, alike
    for (const id of [support, 999]) {
      for (
        const path of [
          `/supervision/queues?queue=${id}`,
          `/supervision/queues?queue=${sales},${id}`,
          `/supervision/agents?queue=${id}`,
          `/supervision/queues/${id}/calls`,
          `/supervision/queues/${id}/intervals`,
        ]
      ) await forbidden(await api.request("GET", path), QUEUE_REFUSED(id));
    }
    assert.equal((await api.request("GET", `/supervision/queues/${sales}/calls`)).status, 200);
    assert.equal((await api.request("GET", `/supervision/queues/${sales}/intervals`)).status, 200);
    // the history: rows of sales and of 8001 alone
    const day = new Date(w.ctx.clock.now()).toISOString().slice(0, 10);
    const history = await api.json(`/supervision/history?from=${day}`);
    assert.deepEqual(history.queues.map((row: { queueId: number }) => row.queueId), [sales]);
    assert.deepEqual([...new Set(history.agents.map((row: { agentId: number }) => row.agentId))], [
      w.agent.id,
    ]);
    const whole = await w.web.json(`/supervision/history?from=${day}`);
    assert.equal(whole.queues.length, 2, "a web service user sees both");
    const csv = await (await api.request("GET", `/supervision/history?from=${day}`, undefined, {
      Accept: "text/csv",
    })).text();
    assert.ok(!csv.includes("support"), csv);

    // commands: on 8001 yes, on 8002 (not in sales) no
    await forbidden(
      await api.request("POST", `/supervision/agents/${w.second.id}/pause`),
      AGENT_REFUSED(w.second.id),
    );
    await forbidden(
      await api.request("POST", `/supervision/agents/${w.second.id}/logout`),
      AGENT_REFUSED(w.second.id),
    );
    await forbidden(
      await api.request("PUT", `/supervision/agents/${w.second.id}/group`, { groupId: null }),
      AGENT_REFUSED(w.second.id),
    );
    await api.command(`/supervision/agents/${w.agent.id}/pause`, { reason: "coffee" });
    await api.command(`/supervision/agents/${w.agent.id}/unpause`);
    assert.equal((await w.web.agent(w.second.id)).state, "ready", "8002 untouched");
    // memberships: not without the right to change queues, and never outside the profile
    const refusedChange = /does not allow changing agents' queues/;
    await forbidden(
      await api.request("POST", `/supervision/queues/${sales}/agents/${w.agent.id}`, {
        penalty: 2,
      }),
      refusedChange,
    );
    await w.give(w.carl.id, { profile: "supervisor", queueIds: [sales], changeQueues: true });
    await forbidden(
      await api.request("POST", `/supervision/queues/${support}/agents/${w.agent.id}`),
      QUEUE_REFUSED(support),
    );
    await forbidden(
      await api.request("POST", `/supervision/queues/${sales}/agents/${w.second.id}`),
      AGENT_REFUSED(w.second.id),
    );
    await forbidden(
      await api.request("DELETE", `/supervision/queues/${support}/agents/${w.second.id}`),
      QUEUE_REFUSED(support),
    );
    await api.command(`/supervision/queues/${sales}/agents/${w.agent.id}`, { penalty: 2 });
    // a group it does not cover
    const team = (await w.admin.create("/agentgroups", { name: "team" })).id as number;
    await forbidden(
      await api.request("PUT", `/supervision/agents/${w.agent.id}/group`, { groupId: team }),
      /^agent group \d+ is not in the user's rights profile$/,
    );
  } finally {
    await w.close();
  }
});

Deno.test("the agent daemon's list, /metrics and the event stream: what the profile covers", async () => {
  const w = await scoped();
  try {
    const { ctx, token, sales, support } = w;
    // GET /agents: 8001 alone; the other agent daemon's routes stay a web service user's
    const agents = await ctx.app.request("/agents", { headers: bearer(token) });
    assert.equal(agents.status, 200);
    assert.deepEqual((await agents.json()).map((a: { id: number }) => a.id), [w.agent.id]);
    const other = await ctx.app.request(`/agents/by-id/${w.agent.id}`, { headers: bearer(token) });
    assert.equal(other.status, 401);

    // /metrics: supervision's series alone, of sales and 8001
    const scrape = await ctx.app.request("/metrics", { headers: bearer(token) });
    assert.equal(scrape.status, 200);
    const families = parseExposition(await scrape.text());
    assert.deepEqual([...families.keys()].sort(), [
      "svc_agents",
      "svc_queue_calls_total",
      "svc_queue_calls_waiting",
      "svc_queue_longest_wait_seconds",
    ]);
    for (const name of ["svc_queue_calls_waiting", "svc_queue_longest_wait_seconds"]) {
      assert.deepEqual(families.get(name)!.samples.map((s) => s.labels.queue), ["sales"], name);
    }
    const agentsCounted = families.get("svc_agents")!.samples.reduce((sum, s) => sum + s.value, 0);
    assert.equal(agentsCounted, 1);
    assert.ok(
      families.get("svc_queue_calls_total")!.samples.every((s) => s.labels.queue === "sales"),
    );

    // the event stream: the QueueStatistics of sales alone, nothing else
    const response = await ctx.app.request(`${V2}/events/stream`, { headers: bearer(token) });
    assert.equal(response.status, 200);
    const stream = new SseReader(response);
    const statistics = (queueId: number) => ({
      username: "" as const,
      message: { msgType: "QueueStatistics" as const, ctiMessage: { queueId, counters: [] } },
    });
    await ctx.services.events.publish([statistics(support), statistics(sales)]);
    await ctx.services.events.publish([{
      username: "alice",
      message: { msgType: "UserConfigUpdate", userId: w.alice.id, dndEnabled: true } as never,
    }]);
    await ctx.services.events.publish([statistics(support), statistics(sales)]);
    const [first, second] = await stream.take(2);
    assert.deepEqual([first!.data.message.ctiMessage, second!.data.message.ctiMessage], [
      { queueId: sales, counters: [] },
      { queueId: sales, counters: [] },
    ]);
    // given support too: the stream carries it after its next read of the profile
    await w.give(w.carl.id, { profile: "supervisor", queueIds: [sales, support] });
    await ctx.clock.advance(1000);
    await ctx.services.events.publish([statistics(support)]);
    const [, , third] = await stream.take(3);
    assert.deepEqual(third!.data.message.ctiMessage, { queueId: support, counters: [] });
    await stream.cancel();

    // without a profile: refused, as before
    await w.give(w.carl.id, null);
    for (const path of ["/metrics", `${V2}/events/stream`]) {
      const refused = await ctx.app.request(path, { headers: bearer(token) });
      assert.equal(refused.status, 403, path);
      await refused.body?.cancel();
    }
    assert.equal((await ctx.app.request("/agents", { headers: bearer(token) })).status, 401);
  } finally {
    await w.close();
  }
});

Deno.test("a change of profile holds at the next request, with the same token", async () => {
  const w = await scoped();
  try {
    const { api, sales, support } = w;
    const ids = async () =>
      (await api.json("/supervision/queues")).map((q: { id: number }) => q.id);
    assert.deepEqual(await ids(), [sales]);
    await w.give(w.carl.id, { profile: "supervisor", queueIds: [support] });
    assert.deepEqual(await ids(), [support]);
    await w.give(w.carl.id, { profile: "admin" });
    assert.deepEqual(await ids(), [sales, support]);
    // a group covers its agents: 8002 in a group carl covers, with sales
    const team = (await w.admin.create("/agentgroups", { name: "team" })).id as number;
    assert.equal((await w.admin.put(`/agentgroups/${team}/agents/${w.second.id}`)).status, 204);
    await w.give(w.carl.id, { profile: "supervisor", queueIds: [sales], groupIds: [team] });
    const agents = await api.json("/supervision/agents");
    assert.deepEqual(agents.map((a: { id: number }) => a.id), [w.agent.id, w.second.id]);
    assert.deepEqual(agents[1].queues, [], "8002's queue (support) is not shown");
    await api.command(`/supervision/agents/${w.second.id}/pause`);
    // mayListen: the profile's listen right, for the agents it covers
    const rights = (await rightsOf(w.ctx.services.store, w.carl.id))!;
    assert.equal(mayListen(rights, w.agent.id), false);
    await w.give(w.carl.id, { profile: "supervisor", queueIds: [sales], listen: true });
    const listening = (await rightsOf(w.ctx.services.store, w.carl.id))!;
    assert.equal(mayListen(listening, w.agent.id), true);
    assert.equal(mayListen(listening, w.second.id), false);
  } finally {
    await w.close();
  }
});

/** Carl's socket, greeted. */
async function socketOf(w: Awaited<ReturnType<typeof scoped>>) {
  const client = await w.open(w.token);
  await client.type("RightProfile");
  return client;
}

Deno.test("CTI: lists, statistics and calls of sales alone; support refused by id", async () => {
  const w = await scoped();
  try {
    const { sales, support } = w;
    const carl = await socketOf(w);
    carl.web("getList", { objectType: "queue" });
    assert.deepEqual(
      ((await carl.type("QueueList")).ctiMessage as unknown as { id: number }[]).map((q) => q.id),
      [sales],
    );
    carl.web("getList", { objectType: "agent" });
    const agentList = (await carl.type("AgentList")).ctiMessage as unknown as { id: number }[];
    assert.deepEqual(agentList.map((a) => a.id), [w.agent.id]);
    carl.web("getList", { objectType: "queuemember" });
    assert.deepEqual((await carl.type("QueueMemberList")).ctiMessage, [
      { agentId: w.agent.id, queueId: sales, penalty: 0 },
    ]);
    carl.web("subscribeToQueueStats");
    carl.web("subscribeToAgentStats");
    carl.web("subscribeToAgentEvents");
    await settled(carl);
    const queueIds = carl.messages.filter(ofType("QueueStatistics")).map((m) =>
      m.ctiMessage.queueId
    );
    assert.deepEqual(queueIds, [sales]);
    const agentIds = carl.messages.filter(ofType("AgentStatistics")).map((m) => m.ctiMessage.id);
    assert.deepEqual(agentIds, [w.agent.id]);
    for (
      const [objectType, msgType] of [
        ["queue", "QueueConfig"],
        ["agent", "AgentConfig"],
        ["queuemember", "QueueMember"],
      ] as const
    ) {
      await command(carl, "getConfig", { objectType });
      const ids = carl.messages.filter(ofType(msgType)).map((m) =>
        m.ctiMessage.queueId ?? m.ctiMessage.id
      );
      assert.ok(ids.every((id) => id === sales || id === w.agent.id), `${objectType}: ${ids}`);
    }
    await command(carl, "getAgentDirectory");
    const directory = carl.messages.findLast(ofType("AgentDirectory"))!.ctiMessage.directory as {
      agent: { id: number };
    }[];
    assert.deepEqual(directory.map((entry) => entry.agent.id), [w.agent.id]);

    // by id: support refused, whatever it is asked for
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["subscribeToQueueCalls", { queueId: support }, QUEUE_REFUSED(support)],
      ["subscribeToQueueCalls", { queueId: 999 }, QUEUE_REFUSED(999)],
      ["getQueueStatistics", { queueId: support }, QUEUE_REFUSED(support)],
      [
        "getQueueCallHistory",
        { queue: support, size: 5 },
        /^queue \d+ is not in the user's rights profile$/,
      ],
      ["getQueueCallHistory", { queue: "support", size: 5 }, /^queue "support" is not in/],
      ["getQueueCallHistory", { queue: "nowhere", size: 5 }, /^queue "nowhere" is not in/],
      ["pauseAgent", { agentid: w.second.id }, AGENT_REFUSED(w.second.id)],
      ["unpauseAgent", { agentid: w.second.id }, AGENT_REFUSED(w.second.id)],
      ["agentLogout", { agentid: w.second.id }, AGENT_REFUSED(w.second.id)],
      [
        "setAgentQueue",
        { agentId: w.agent.id, queueId: sales, penalty: 1 },
        /does not allow changing/,
      ],
      ["removeAgentFromQueue", { agentId: w.agent.id, queueId: sales }, /does not allow changing/],
      ["setAgentGroup", { agentId: w.second.id, groupId: null }, AGENT_REFUSED(w.second.id)],
    ];
    for (const [name, fields, message] of cases) {
      carl.web(name, fields);
      const answer = await refusal(carl, name);
      assert.equal(answer.error, "Forbidden", `${name}: ${JSON.stringify(answer)}`);
      assert.match(String(answer.message), message, name);
    }
    // the customer history: the calls of the queues it covers only (bob called support)
    carl.web("findCustomerCallHistory", {
      id: 7,
      request: { filters: [{ field: "src_num", value: "1002" }] },
    });
    const bobs = await carl.type("CustomerCallHistoryResponseWithId");
    assert.deepEqual(bobs.ctiMessage.response, { total: 0, list: [] });
    carl.web("findCustomerCallHistory", {
      id: 8,
      request: { filters: [{ field: "src_num", value: "1003" }] },
    });
    assert.equal(
      ((await carl.type("CustomerCallHistoryResponseWithId")).ctiMessage.response as {
        total: number;
      }).total,
      1,
    );

    // live: 8002 pauses, support's figures change; carl hears nothing of it
    const before = carl.messages.length;
    await w.t.sim.agentPause(w.second.id, "lunch");
    await w.t.sim.agentPause(w.agent.id, "coffee");
    await w.flush();
    await w.ctx.clock.advance(SETTLE_MS);
    await carl.seen(
      ofType(
        "AgentStatistics",
        (m) => m.ctiMessage.id === w.agent.id && named(m.ctiMessage.statistics).Paused === true,
      ),
      "8001's change",
    );
    await carl.seen(
      ofType(
        "AgentStateEvent",
        (m) => m.ctiMessage.agentId === w.agent.id && m.ctiMessage.name === "AgentOnPause",
      ),
      "8001's state",
    );
    await settled(carl);
    const later = carl.messages.slice(before);
    const leaks = later.filter((m) =>
      (m.msgType === "QueueStatistics" && m.ctiMessage.queueId !== sales) ||
      (m.msgType === "AgentStatistics" && m.ctiMessage.id !== w.agent.id) ||
      (m.msgType === "AgentStateEvent" && m.ctiMessage.agentId !== w.agent.id)
    );
    assert.deepEqual(leaks, []);
    // a command on its own agent: allowed
    await command(carl, "unpauseAgent", { agentid: w.agent.id });
    assert.equal((await w.web.agent(w.agent.id)).paused, false);
  } finally {
    await w.close();
  }
});

Deno.test("CTI: a change of profile reaches the open socket within a second, lists sent whole again", async () => {
  const w = await scoped();
  try {
    const { sales, support } = w;
    const carl = await socketOf(w);
    for (const objectType of ["queue", "agent", "queuemember"]) carl.web("getList", { objectType });
    carl.web("subscribeToQueueStats");
    carl.web("subscribeToQueueCalls", { queueId: sales });
    await settled(carl);
    const queueList = (test: (ids: number[]) => boolean) =>
      carl.next(
        ofType("QueueList", (m) =>
          test((m.ctiMessage as unknown as { id: number }[]).map((q) => q.id))),
        "a QueueList",
      );
    const startedAt = w.ctx.clock.now();
    await w.give(w.carl.id, {
      profile: "supervisor",
      queueIds: [sales, support],
      changeQueues: true,
    });
    assert.deepEqual((await carl.type("RightProfile")).ctiMessage, {
      profile: "Supervisor",
      rights: ["changeQueues"],
    });
    await w.flush();
    await queueList((ids) => ids.join() === [sales, support].join());
    assert.ok(w.ctx.clock.now() - startedAt <= SETTLE_MS, "within a second");
    await carl.seen(
      ofType("QueueStatistics", (m) => m.ctiMessage.queueId === support),
      "support's figures",
    );
    const agents = await carl.type("AgentList");
    assert.equal((agents.ctiMessage as unknown as unknown[]).length, 2);
    // the commands follow at once: support's calls, membership changes
    await command(carl, "subscribeToQueueCalls", { queueId: support });
    await carl.seen(
      ofType("QueueCalls", (m) => m.ctiMessage.queueId === support),
      "support's calls",
    );
    await command(carl, "setAgentQueue", { agentId: w.second.id, queueId: sales, penalty: 3 });
    assert.equal((await w.web.queue(sales)).agents.members, 2);

    // sales taken away: its lists and figures no longer come, its calls no longer followed
    await w.give(w.carl.id, { profile: "supervisor", queueIds: [support] });
    await carl.type("RightProfile");
    await w.flush();
    await queueList((ids) => ids.join() === String(support));
    const mark = carl.messages.length;
    await w.t.sim.dialNumber(w.carol, "3000", {});
    await w.t.sim.act("1003", "answer");
    await w.flush();
    await w.ctx.clock.advance(SETTLE_MS);
    await settled(carl);
    const fromSales = carl.messages.slice(mark).filter((m: Message) =>
      (m.msgType === "QueueStatistics" || m.msgType === "QueueCalls") &&
      m.ctiMessage.queueId === sales
    );
    assert.deepEqual(fromSales, []);

    // no profile left: NoRight, empty lists, nothing more
    await w.give(w.carl.id, null);
    assert.equal((await carl.type("RightProfile")).ctiMessage.profile, "NoRight");
    await w.flush();
    await queueList((ids) => ids.length === 0);
  } finally {
    await w.close();
  }
});

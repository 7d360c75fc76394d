/**
 * The supervisors' commands of the CTI channel (docs/cti.md, "Supervision") over a real HTTP
 * server on loopback and Deno's own WebSocket client, on the simulator in virtual time: queue and
 * agent statistics, a queue's waiting calls, the lists, membership and control of other agents,
 * each now and live, each checked against `GET /supervision/…`; the refusals of a plain CTI user
 * (no rights profile, whatever its token holds), of bad and unknown ids. A supervisor restricted
 * to some queues: supervision_scope_test.ts.
 */
import assert from "node:assert/strict";
import { findUserByUsername } from "../../lib/store/users.ts";
import { queueStatistics } from "../../lib/supervision/mod.ts";
import { agentRefusal, command, named, ofType, refusal, settled, world } from "./cti_center.ts";
import type { Message } from "./cti_fixtures.ts";

Deno.test("a CTI user without a rights profile is refused every supervisor command", async () => {
  const w = await world();
  try {
    const pat = await w.plain();
    const { agent, queue } = w;
    const cases: [string, Record<string, unknown>][] = [
      ["subscribeToQueueStats", {}],
      ["subscribeToAgentStats", {}],
      ["subscribeToQueueCalls", { queueId: queue.id }],
      ["getQueueStatistics", { queueId: queue.id }],
      ["getList", { objectType: "queue" }],
      ["getList", { objectType: "agent" }],
      ["getList", { objectType: "queuemember" }],
      ["getList", { objectType: "agentgroup" }],
      ["getConfig", { objectType: "queue" }],
      ["getAgentDirectory", {}],
      ["setAgentQueue", { agentId: agent.id, queueId: queue.id, penalty: 1 }],
      ["removeAgentFromQueue", { agentId: agent.id, queueId: queue.id }],
      ["pauseAgent", { agentid: agent.id }],
      ["unpauseAgent", { agentid: agent.id }],
      ["agentLogout", { agentid: agent.id }],
      ["getQueueCallHistory", { queue: queue.id, size: 5 }],
    ];
    for (const [command, fields] of cases) {
      pat.web(command, fields);
      assert.deepEqual(await refusal(pat, command), {
        error: "Forbidden",
        message: "the user has no supervisor rights profile",
      }, command);
    }
    // nothing was subscribed, nothing changed
    await w.t.sim.agentLogin(agent, "1001", "default");
    await w.flush();
    await settled(pat);
    assert.ok(!pat.messages.some((m) => /Statistics|QueueCalls|List/.test(m.msgType)));
    assert.deepEqual((await w.api.queue(queue.id)).agents.members, 1, "no membership changed");
    assert.equal((await w.api.agent(agent.id)).state, "ready", "not paused nor logged out");
  } finally {
    await w.close();
  }
});

Deno.test("a CTI token's ACLs grant no supervision: only a rights profile does", async () => {
  const w = await world();
  try {
    const { tokens } = w.ctx.services;
    const pat = (await findUserByUsername(w.ctx.services.store, "pat"))!;
    const token = (await tokens.issue({
      userId: String(pat.id),
      login: "pat",
      userType: "cti",
      // what an earlier version's supervisor held, and the ACLs it stood for
      acls: ["alias.ctiuser", "alias.supervisor", "svc.rest.supervision.#", "agentd.agents.read"],
    })).token;
    const narrow = await w.open(token);
    narrow.web("subscribeToQueueStats");
    assert.equal((await refusal(narrow, "subscribeToQueueStats")).error, "Forbidden");
    narrow.web("subscribeToQueueCalls", { queueId: w.queue.id });
    assert.equal((await refusal(narrow, "subscribeToQueueCalls")).error, "Forbidden");
  } finally {
    await w.close();
  }
});

Deno.test("subscribeToQueueStats: every queue now, then each queue that changed", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    sam.web("subscribeToQueueStats");
    const first = await sam.type("QueueStatistics");
    const second = await sam.type("QueueStatistics");
    const figures = await w.api.json("/supervision/queues");
    assert.deepEqual(
      [first.ctiMessage, second.ctiMessage],
      figures.map((queue: never) => queueStatistics(queue).ctiMessage),
    );

    await w.t.sim.agentLogin(w.agent, "1001", "default");
    await w.flush();
    const changed = await sam.type("QueueStatistics");
    assert.equal(changed.ctiMessage.queueId, w.queue.id);
    assert.deepEqual(
      changed.ctiMessage,
      queueStatistics(await w.api.queue(w.queue.id)).ctiMessage,
    );
    assert.equal(named(changed.ctiMessage.counters, "statName").AvailableAgents, 1);
    await settled(sam);
    const since = sam.messages.indexOf(changed) + 1;
    assert.ok(!sam.messages.slice(since).some(ofType("QueueStatistics")), "support did not change");

    // a caller waits: sent within the refresh, the wait as it is then
    await w.t.sim.agentPause(w.agent.id, "lunch");
    await w.t.sim.dialNumber(w.bob, "3000", {});
    await w.t.sim.act("1002", "answer");
    await w.flush();
    const waiting = await sam.next(
      ofType("QueueStatistics", (m) => named(m.ctiMessage.counters, "statName").WaitingCalls === 1),
      "a caller waiting",
    );
    assert.equal(named(waiting.ctiMessage.counters, "statName").PausedAgents, 1);
  } finally {
    await w.close();
  }
});

Deno.test("getQueueStatistics: one queue's figures once; an unknown queue, a bad id", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    sam.web("getQueueStatistics", { queueId: w.support, window: 3600, xqos: 20 });
    const answer = await sam.type("QueueStatistics");
    assert.deepEqual(answer.ctiMessage, queueStatistics(await w.api.queue(w.support)).ctiMessage);
    sam.web("getQueueStatistics", { queueId: 999 });
    assert.deepEqual(await refusal(sam, "getQueueStatistics"), {
      error: "QueueNotFound",
      message: "queue 999 does not exist",
    });
    sam.web("getQueueStatistics", { queueId: "1" });
    assert.equal((await refusal(sam, "getQueueStatistics")).error, "BadRequest");
    sam.web("getQueueStatistics", {});
    assert.equal((await refusal(sam, "getQueueStatistics")).error, "BadRequest");
    // no subscription: a change sends nothing
    await w.t.sim.agentLogin(w.agent, "1001", "default");
    await w.flush();
    await settled(sam);
    assert.equal(sam.messages.filter(ofType("QueueStatistics")).length, 1);
  } finally {
    await w.close();
  }
});

/** The `AgentStatistics` of agent `id` among `messages`, newest first, as objects. */
const agentStats = (messages: Message[], id: number) =>
  messages.filter(ofType("AgentStatistics", (m) => m.ctiMessage.id === id)).reverse()
    .map((m) => named(m.ctiMessage.statistics));

Deno.test("subscribeToAgentStats: every agent now, then each agent that changed", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    sam.web("subscribeToAgentStats");
    await sam.type("AgentStatistics");
    await sam.type("AgentStatistics");
    assert.deepEqual(agentStats(sam.messages, w.agent.id)[0], {
      State: "logged_out",
      StateSince: "",
      Call: "",
      CallNumber: "",
      Paused: false,
      PausedReason: "",
      PhoneNumber: "",
      LoginDateTime: "",
      AnsweredCalls: 0,
      MissedCalls: 0,
      TalkTime: 0,
      PauseTime: 0,
      LoginTime: 0,
    });
    const loggedAt = new Date(w.ctx.clock.now()).toISOString();
    await w.t.sim.agentLogin(w.agent, "1001", "default");
    await w.flush();
    await sam.next(ofType("AgentStatistics"), "the agent logged in");
    const ready = agentStats(sam.messages, w.agent.id)[0]!;
    assert.deepEqual(
      [ready.State, ready.StateSince, ready.PhoneNumber, ready.LoginDateTime],
      ["ready", loggedAt, "1001", loggedAt],
    );
    await settled(sam);
    assert.equal(agentStats(sam.messages, w.second.id).length, 1, "8002 did not change");

    // a queue call rings it, then it answers: the caller's number, then the day's counts
    await w.t.sim.dialNumber(w.bob, "3000", {});
    await w.t.sim.act("1002", "answer");
    await w.flush();
    await sam.next(
      ofType("AgentStatistics", (m) => named(m.ctiMessage.statistics).State === "ringing"),
      "ringing",
    );
    assert.deepEqual(
      [
        agentStats(sam.messages, w.agent.id)[0]!.Call,
        agentStats(sam.messages, w.agent.id)[0]!.CallNumber,
      ],
      ["queue", "1002"],
    );
    await w.t.sim.act("1001", "answer");
    await w.t.advance(30_000); // durations alone changing: nothing sent
    await w.flush();
    await sam.next(
      ofType("AgentStatistics", (m) => named(m.ctiMessage.statistics).State === "on_call"),
      "on the call",
    );
    const before = sam.messages.length;
    await w.t.advance(10_000);
    await w.flush();
    await settled(sam);
    assert.ok(!sam.messages.slice(before).some(ofType("AgentStatistics")));
    await w.t.sim.act("1002", "hangup");
    await w.flush();
    await sam.next(
      ofType("AgentStatistics", (m) => named(m.ctiMessage.statistics).State === "ready"),
      "ready again",
    );
    const after = agentStats(sam.messages, w.agent.id)[0]!;
    const rest = await w.api.agent(w.agent.id);
    assert.deepEqual(
      [after.AnsweredCalls, after.TalkTime, after.CallNumber],
      [rest.today.answered, rest.today.talkSeconds, ""],
    );
    assert.equal(after.AnsweredCalls, 1);
  } finally {
    await w.close();
  }
});

Deno.test("subscribeToQueueCalls: the calls waiting now and on each change; unsubscribing", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    sam.web("subscribeToQueueCalls", { queueId: 999 });
    assert.deepEqual(await refusal(sam, "subscribeToQueueCalls"), {
      error: "QueueNotFound",
      message: "queue 999 does not exist",
    });
    sam.web("subscribeToQueueCalls", { queueId: "x" });
    assert.equal((await refusal(sam, "subscribeToQueueCalls")).error, "BadRequest");
    sam.web("subscribeToQueueCalls", { queueId: w.queue.id });
    assert.deepEqual((await sam.type("QueueCalls")).ctiMessage, { queueId: w.queue.id, calls: [] });

    const joined = new Date(w.ctx.clock.now()).toISOString();
    await w.t.sim.dialNumber(w.bob, "3000", {});
    await w.t.sim.act("1002", "answer");
    await w.flush();
    const one = await sam.type("QueueCalls");
    assert.deepEqual(one.ctiMessage, {
      queueId: w.queue.id,
      calls: [{ position: 1, name: "bob", number: "1002", queueTime: joined }],
    });
    const rest = await w.api.json(`/supervision/queues/${w.queue.id}/calls`);
    assert.deepEqual(
      rest.map((call: Record<string, unknown>) => [call.callerNumber, call.waitingSince]),
      [["1002", joined]],
    );

    await w.t.sim.dialNumber(w.carol, "3000", {});
    await w.t.sim.act("1003", "answer");
    await w.flush();
    const two = await sam.type("QueueCalls");
    assert.deepEqual(
      (two.ctiMessage.calls as { number: string; position: number }[]).map((c) => [
        c.position,
        c.number,
      ]),
      [[1, "1002"], [2, "1003"]],
    );
    await w.t.sim.act("1002", "hangup");
    await w.flush();
    const left = await sam.type("QueueCalls");
    assert.deepEqual(
      (left.ctiMessage.calls as { number: string; position: number }[]).map((c) => [
        c.position,
        c.number,
      ]),
      [[1, "1003"]],
    );

    sam.web("unSubscribeToQueueCalls", { queueId: w.queue.id });
    await settled(sam);
    await w.t.sim.act("1003", "hangup");
    await w.flush();
    await settled(sam);
    assert.ok(!sam.messages.slice(-1).some(ofType("QueueCalls")));
    assert.equal(sam.messages.filter(ofType("QueueCalls")).length, 4);
  } finally {
    await w.close();
  }
});

Deno.test("getList: queues, agents, members; then their changes; setAgentQueue and removeAgentFromQueue", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    sam.web("getList", { objectType: "basequeuemember" });
    assert.equal((await refusal(sam, "getList")).error, "BadRequest");
    sam.web("getList", { objectType: "queue" });
    assert.deepEqual((await sam.type("QueueList")).ctiMessage, [
      { id: w.queue.id, name: "sales", displayName: "sales", number: "3000" },
      { id: w.support, name: "support", displayName: "support", number: "3001" },
    ]);
    sam.web("getList", { objectType: "agent" });
    assert.deepEqual((await sam.type("AgentList")).ctiMessage, [
      { id: w.agent.id, number: "8001", firstName: "", lastName: "", groupId: null },
      { id: w.second.id, number: "8002", firstName: "", lastName: "", groupId: null },
    ]);
    sam.web("getList", { objectType: "queuemember" });
    assert.deepEqual((await sam.type("QueueMemberList")).ctiMessage, [
      { agentId: w.agent.id, queueId: w.queue.id, penalty: 0 },
      { agentId: w.second.id, queueId: w.support, penalty: 0 },
    ]);

    // 8001 joins support with penalty 2: one QueueMember, and the REST figures agree
    await command(sam, "setAgentQueue", { agentId: w.agent.id, queueId: w.support, penalty: 2 });
    await w.flush();
    assert.deepEqual((await sam.type("QueueMember")).ctiMessage, {
      agentId: w.agent.id,
      queueId: w.support,
      penalty: 2,
    });
    assert.deepEqual((await w.api.agent(w.agent.id)).queues, [
      { id: w.queue.id, name: "sales", penalty: 0 },
      { id: w.support, name: "support", penalty: 2 },
    ]);
    // the penalty changes; no penalty given: 0, as the REST route
    await command(sam, "setAgentQueue", { agentId: w.agent.id, queueId: w.support });
    await w.flush();
    assert.equal((await sam.type("QueueMember")).ctiMessage.penalty, 0);

    // refusals
    const refused: [string, Record<string, unknown>, string, string][] = [
      ["setAgentQueue", { agentId: 999, queueId: w.support }, "AgentNotFound", "agent 999"],
      ["setAgentQueue", { agentId: w.agent.id, queueId: 999 }, "QueueNotFound", "queue 999"],
      ["setAgentQueue", { agentId: w.agent.id, queueId: w.support, penalty: -1 }, "BadRequest", ""],
      ["setAgentQueue", { agentId: "8001", queueId: w.support }, "BadRequest", ""],
      ["removeAgentFromQueue", { agentId: 999, queueId: w.support }, "AgentNotFound", "agent 999"],
      [
        "removeAgentFromQueue",
        { agentId: w.agent.id, queueId: 999 },
        "QueueNotFound",
        "queue 999",
      ],
      [
        "removeAgentFromQueue",
        { agentId: w.second.id, queueId: w.queue.id },
        "AgentNotInQueue",
        "agent 8002 is not in queue sales",
      ],
    ];
    for (const [command, fields, error, message] of refused) {
      sam.web(command, fields);
      const answer = await refusal(sam, command);
      assert.equal(answer.error, error, JSON.stringify(fields));
      assert.match(String(answer.message), new RegExp(message));
    }

    // 8001 leaves support: penalty -1, as xuc tells a removal
    await command(sam, "removeAgentFromQueue", { agentId: w.agent.id, queueId: w.support });
    await w.flush();
    assert.deepEqual((await sam.type("QueueMember")).ctiMessage, {
      agentId: w.agent.id,
      queueId: w.support,
      penalty: -1,
    });
    assert.deepEqual((await w.api.agent(w.agent.id)).queues.map((q: { id: number }) => q.id), [
      w.queue.id,
    ]);

    // a queue created through /1.1: its QueueConfig at the next refresh
    const made = await w.t.api.create("/queues", { name: "billing", number: "3002" }) as {
      id: number;
    };
    await w.t.sim.agentLogin(w.agent, "1001", "default"); // any event
    await w.flush();
    assert.deepEqual((await sam.type("QueueConfig")).ctiMessage, {
      id: made.id,
      name: "billing",
      displayName: "billing",
      number: "3002",
    });
  } finally {
    await w.close();
  }
});

Deno.test("pauseAgent, unpauseAgent, agentLogout of another agent: a supervisor's", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    sam.web("subscribeToAgentStats");
    await sam.type("AgentStatistics");
    await sam.type("AgentStatistics");
    const id = w.agent.id;
    sam.web("pauseAgent", { agentid: id });
    assert.deepEqual(await agentRefusal(sam, "pauseAgent"), {
      error: "NotLogged",
      message: "agent 8001 is not logged in",
    });
    await w.t.sim.agentLogin(w.agent, "1001", "default");
    await w.flush();

    await command(sam, "pauseAgent", { agentid: id, reason: " coaching " });
    await w.flush();
    await sam.next(
      ofType("AgentStatistics", (m) => named(m.ctiMessage.statistics).State === "paused"),
      "paused",
    );
    assert.equal(agentStats(sam.messages, id)[0]!.PausedReason, "coaching");
    assert.deepEqual(
      [(await w.api.agent(id)).state, (await w.api.agent(id)).pausedReason],
      ["paused", "coaching"],
    );
    await command(sam, "unpauseAgent", { agentid: id });
    await w.flush();
    await sam.next(
      ofType("AgentStatistics", (m) => named(m.ctiMessage.statistics).State === "ready"),
      "ready",
    );
    await command(sam, "agentLogout", { agentid: id });
    await w.flush();
    await sam.next(
      ofType("AgentStatistics", (m) => named(m.ctiMessage.statistics).State === "logged_out"),
      "logged out",
    );
    assert.equal((await w.api.agent(id)).state, "logged_out");
    sam.web("agentLogout", { agentid: id });
    assert.equal((await agentRefusal(sam, "agentLogout")).error, "NotLogged");
    sam.web("unpauseAgent", { agentid: 999 });
    assert.deepEqual(await agentRefusal(sam, "unpauseAgent"), {
      error: "AgentNotFound",
      message: "agent 999 does not exist",
    });
    // without agentid: the supervisor's own agent, which sam has none of
    sam.web("pauseAgent");
    assert.equal((await agentRefusal(sam, "pauseAgent")).error, "AgentNotFound");
  } finally {
    await w.close();
  }
});

Deno.test("a closed socket follows nothing: no refresh left behind", async () => {
  const w = await world();
  try {
    const sam = await w.supervisor();
    sam.web("subscribeToQueueStats");
    sam.web("subscribeToAgentStats");
    sam.web("subscribeToQueueCalls", { queueId: w.queue.id });
    await sam.type("QueueCalls");
    const { supervision } = w.ctx.services.cti;
    assert.equal(supervision.active, true);
    await w.t.sim.agentLogin(w.agent, "1001", "default"); // a refresh is due
    sam.socket.close();
    await sam.closed;
    for (let i = 0; i < 50 && supervision.active; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(supervision.active, false);
    await w.flush(); // nothing to send to, nothing fails
    await w.ctx.clock.advance(2_000);
    assert.ok(!w.ctx.logs.some((line) => line.includes("supervision figures not sent")));
  } finally {
    await w.close();
  }
});

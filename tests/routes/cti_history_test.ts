/**
 * The call history commands of the CTI socket (docs/cti.md, "Call history") over a real HTTP
 * server on loopback, on the simulator in virtual time: alice calls bob; carol calls queue sales,
 * answered after 4 s by agent 8001 (logged in on alice's phone) and talks 30 s; bob calls sales
 * while the agent is paused and hangs up after 2 s. Each history is checked, with who may ask
 * for it and every error.
 */
import assert from "node:assert/strict";
import { login } from "../helpers.ts";
import { command, ofType, refusal, world } from "./cti_center.ts";

/** The centre after the three calls; alice's socket; when it started. */
async function afterCalls() {
  const w = await world();
  const { sim } = w.t;
  const start = w.ctx.clock.now();
  await sim.agentLogin(w.agent, "1001", "default");
  // alice calls bob, 5 s of talk
  await sim.dialNumber(w.alice, "1002", {});
  await sim.act("1001", "answer");
  await sim.act("1002", "answer");
  await w.t.advance(5000);
  await sim.act("1001", "hangup");
  // carol calls sales: the agent on alice's phone answers after 4 s, they talk 30 s
  await w.t.advance(1000);
  await sim.dialNumber(w.carol, "3000", {});
  await sim.act("1003", "answer");
  await w.t.advance(4000);
  await sim.act("1001", "answer");
  await w.t.advance(30_000);
  await sim.act("1003", "hangup");
  // bob calls sales while the agent is paused, and gives up after 2 s
  await sim.agentPause(w.agent.id, "lunch");
  await w.t.advance(1000);
  await sim.dialNumber(w.bob, "3000", {});
  await sim.act("1002", "answer");
  await w.t.advance(2000);
  await sim.act("1002", "hangup");
  await sim.agentUnpause(w.agent.id);
  const alice = await w.as(w.alice);
  return { ...w, start, aliceSocket: alice };
}

/** `YYYY-MM-DD HH:MM:SS` of `ms`, UTC, as the entries show it. */
const shown = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace("T", " ");

Deno.test("getUserCallHistory, getUserCallHistoryByDays: the user's own calls, with names", async () => {
  const w = await afterCalls();
  try {
    const alice = w.aliceSocket;
    alice.web("getUserCallHistory", { size: 10 });
    const history = (await alice.type("CallHistory")).ctiMessage as unknown as Record<
      string,
      unknown
    >[];
    assert.equal(history.length, 2, JSON.stringify(history));
    // newest first: carol's queue call rang alice's phone (the agent's), then alice's call to bob
    assert.deepEqual(
      history.map((entry) => [entry.status, entry.srcNum, entry.srcFirstName]),
      [["answered", "1003", "carol"], ["emitted", "1001", "alice"]],
    );
    assert.deepEqual(history[1], {
      start: shown(w.start),
      duration: "00:00:05",
      srcUsername: "alice",
      dstUsername: "bob",
      srcNum: "1001",
      dstNum: "1002",
      status: "emitted",
      srcFirstName: "alice",
      srcLastName: "",
      dstFirstName: "bob",
      dstLastName: "",
    });

    // `size` left out: 10; 1: the newest only; another user named: ignored, the user's own
    alice.web("getUserCallHistory", { size: 1, username: "bob" });
    assert.deepEqual((await alice.type("CallHistory")).ctiMessage, [history[0]]);
    alice.web("getUserCallHistory");
    assert.deepEqual((await alice.type("CallHistory")).ctiMessage, history);

    alice.web("getUserCallHistoryByDays", { days: 1 });
    assert.deepEqual((await alice.type("CallHistoryByDays")).ctiMessage, history);
    // a day (and a minute) later (the socket closed meanwhile: its timers would run all day):
    // none in the last day, both in the last two
    alice.socket.close();
    await alice.closed;
    await w.t.advance(86_400_000 + 60_000);
    const later = await w.open(await login(w.ctx, "login", "alice"));
    later.web("getUserCallHistoryByDays");
    assert.deepEqual((await later.type("CallHistoryByDays")).ctiMessage, []);
    later.web("getUserCallHistoryByDays", { days: 2 });
    assert.deepEqual((await later.type("CallHistoryByDays")).ctiMessage, history);

    // bob's: the call from alice, answered, and his own call to the queue
    const bob = await w.as(w.bob);
    bob.web("getUserCallHistory", { size: 10 });
    const bobs = (await bob.type("CallHistory")).ctiMessage as unknown as Record<string, unknown>[];
    assert.deepEqual(bobs.map((entry) => [entry.status, entry.dstNum]), [
      ["emitted", "3000"],
      ["answered", "1002"],
    ]);
  } finally {
    await w.close();
  }
});

Deno.test("the user histories' errors, and a token denying them", async () => {
  const w = await afterCalls();
  try {
    const alice = w.aliceSocket;
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ["getUserCallHistory", { size: 0 }, /field size/],
      ["getUserCallHistory", { size: 1001 }, /field size/],
      ["getUserCallHistory", { size: "10" }, /field size/],
      ["getUserCallHistory", { size: 2.5 }, /field size/],
      ["getUserCallHistoryByDays", { days: 0 }, /field days/],
      ["getUserCallHistoryByDays", { days: 366 }, /field days/],
      ["getUserCallHistoryByDays", { days: null }, /field days/],
      ["getAgentCallHistory", { size: -1 }, /field size/],
    ];
    for (const [name, fields, message] of cases) {
      alice.web(name, fields);
      const answer = await refusal(alice, name);
      assert.equal(answer.error, "BadRequest", `${name} ${JSON.stringify(fields)}`);
      assert.match(String(answer.message), message);
    }
    await command(alice, "getConfig"); // still open

    const { token } = await w.ctx.services.tokens.issue({
      userId: String(w.alice.id),
      login: "alice",
      userType: "cti",
      acls: ["alias.ctiuser", "!svc.rest.history.#", "!agentd.users.me.agents.read"],
    });
    const denied = await w.open(token);
    const denials: [string, string][] = [
      ["getUserCallHistory", "svc.rest.history.alice.read"],
      ["getUserCallHistoryByDays", "svc.rest.history.days.alice.read"],
      ["getAgentCallHistory", "agentd.users.me.agents.read"],
    ];
    for (const [name, acl] of denials) {
      denied.web(name, { size: 1 });
      assert.deepEqual(await refusal(denied, name), {
        error: "Forbidden",
        message: `missing ACL ${acl}`,
      });
    }
  } finally {
    await w.close();
  }
});

Deno.test("getAgentCallHistory: the queue calls the user's own agent answered", async () => {
  const w = await afterCalls();
  try {
    const alice = w.aliceSocket;
    alice.web("getAgentCallHistory", { size: 10 });
    assert.deepEqual((await alice.type("CallHistory")).ctiMessage, [{
      start: shown(w.start + 6000),
      duration: "00:00:30",
      srcUsername: "",
      dstUsername: "",
      srcNum: "1003",
      dstNum: "8001",
      status: "answered",
      srcFirstName: "",
      srcLastName: "carol",
      dstFirstName: "",
      dstLastName: "",
    }]);

    // a user without an agent
    const pat = await w.plain();
    pat.web("getAgentCallHistory", { size: 5 });
    assert.deepEqual(await refusal(pat, "getAgentCallHistory"), {
      error: "AgentNotFound",
      message: "user pat has no agent",
    });
  } finally {
    await w.close();
  }
});

Deno.test("getQueueCallHistory: a queue's calls, by id or name; a supervisor's", async () => {
  const w = await afterCalls();
  try {
    const sam = await w.supervisor();
    const expected = [
      ["missed", "1002", "bob", "", "00:00:00"],
      ["answered", "1003", "carol", "8001", "00:00:30"],
    ];
    const summary = (message: { ctiMessage: unknown }) =>
      (message.ctiMessage as Record<string, unknown>[]).map((
        entry,
      ) => [entry.status, entry.srcNum, entry.srcLastName, entry.dstNum, entry.duration]);
    for (const queue of [w.queue.id, String(w.queue.id), "sales"]) {
      sam.web("getQueueCallHistory", { queue, size: 10 });
      assert.deepEqual(summary(await sam.type("CallHistory")), expected, String(queue));
    }
    sam.web("getQueueCallHistory", { queue: "sales", size: 1 });
    assert.deepEqual(summary(await sam.type("CallHistory")), expected.slice(0, 1));
    sam.web("getQueueCallHistory", { queue: w.support });
    assert.deepEqual((await sam.type("CallHistory")).ctiMessage, []);
    // a call waiting now: ongoing
    await w.t.sim.agentPause(w.agent.id, "again");
    await w.t.sim.dialNumber(w.bob, "3000", {});
    await w.t.sim.act("1002", "answer");
    sam.web("getQueueCallHistory", { queue: "sales", size: 1 });
    assert.equal(summary(await sam.type("CallHistory"))[0]![0], "ongoing");

    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ queue: 999 }, "QueueNotFound", /queue 999 does not exist/],
      [{ queue: "nosuch" }, "QueueNotFound", /queue "nosuch"/],
      [{}, "BadRequest", /field queue/],
      [{ queue: "" }, "BadRequest", /field queue/],
      [{ queue: true }, "BadRequest", /field queue/],
      [{ queue: "sales", size: 0 }, "BadRequest", /field size/],
    ];
    for (const [fields, error, message] of cases) {
      sam.web("getQueueCallHistory", fields);
      const answer = await refusal(sam, "getQueueCallHistory");
      assert.equal(answer.error, error, JSON.stringify(fields));
      assert.match(String(answer.message), message);
    }

    const pat = await w.plain();
    pat.web("getQueueCallHistory", { queue: "sales", size: 10 });
    assert.deepEqual(await refusal(pat, "getQueueCallHistory"), {
      error: "Forbidden",
      message: "the user has no supervisor rights profile",
    });
    assert.equal(pat.messages.filter(ofType("CallHistory")).length, 0);
  } finally {
    await w.close();
  }
});

Deno.test("findCustomerCallHistory: a caller's queue calls, answered with the request's id", async () => {
  const w = await afterCalls();
  try {
    const sam = await w.supervisor();
    const find = (id: unknown, value: string, size?: number) =>
      sam.web("findCustomerCallHistory", {
        id,
        request: { filters: [{ field: "src_num", operator: "=", value }], size },
      });
    find(7, "1003", 10);
    assert.deepEqual((await sam.type("CustomerCallHistoryResponseWithId")).ctiMessage, {
      id: 7,
      response: {
        total: 1,
        list: [{
          start: shown(w.start + 6000),
          duration: "00:00:30",
          waitTime: "00:00:04",
          agentName: "",
          agentNum: "8001",
          queueName: "sales",
          queueNum: "3000",
          status: "answered",
        }],
      },
    });
    find("req-8", "1002");
    const bobs = (await sam.type("CustomerCallHistoryResponseWithId")).ctiMessage as {
      id: unknown;
      response: { total: number; list: Record<string, unknown>[] };
    };
    assert.equal(bobs.id, "req-8");
    assert.deepEqual(
      bobs.response.list.map((entry) => [entry.status, entry.waitTime, entry.agentNum]),
      [["abandoned", "00:00:02", ""]],
    );
    find(9, "0000");
    assert.deepEqual((await sam.type("CustomerCallHistoryResponseWithId")).ctiMessage, {
      id: 9,
      response: { total: 0, list: [] },
    });

    const cases: [Record<string, unknown>, RegExp][] = [
      [{ request: { filters: [] } }, /field id/],
      [{ id: 1 }, /field request/],
      [{ id: 1, request: { filters: [] } }, /filters: one \{"field":"src_num"/],
      [{ id: 1, request: { filters: [{ field: "dst_num", value: "1" }] } }, /src_num/],
      [
        { id: 1, request: { filters: [{ field: "src_num", operator: "like", value: "1%" }] } },
        /src_num/,
      ],
      [{ id: 1, request: { filters: [{ field: "src_num" }] } }, /src_num/],
      [{ id: 1, request: { filters: "src_num=1003" } }, /field request.filters/],
      [{ id: 1, request: { filters: [{ field: "src_num", value: "1" }], size: 0 } }, /size/],
      [{ id: {}, request: { filters: [] } }, /field id/],
    ];
    for (const [fields, message] of cases) {
      sam.web("findCustomerCallHistory", fields);
      const answer = await refusal(sam, "findCustomerCallHistory");
      assert.equal(answer.error, "BadRequest", JSON.stringify(fields));
      assert.match(String(answer.message), message);
    }

    const pat = await w.plain();
    pat.web("findCustomerCallHistory", {
      id: 1,
      request: { filters: [{ field: "src_num", value: "1003" }] },
    });
    assert.deepEqual(await refusal(pat, "findCustomerCallHistory"), {
      error: "Forbidden",
      message: "the user has no supervisor rights profile",
    });
  } finally {
    await w.close();
  }
});

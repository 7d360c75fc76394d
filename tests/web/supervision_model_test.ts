/**
 * The wallboard's model (`web/supervision/model.js`, docs/supervision.md "The page"), its
 * functions run as the page runs them: the board built from the CTI channel's messages, the
 * thresholds and their levels, a queue's tile, an agent's row, the membership commands, the
 * durations, the reconnection's backoff, the token's renewal, the clock offset, the CAS
 * addresses and what a queue's curve draws. The last test feeds the board what the server's supervision feed really sends
 * (`lib/cti/supervision.ts`, on the simulator) and checks that the tiles and rows say what
 * `GET /supervision/queues` and `/agents` answer.
 */
import assert from "node:assert/strict";
import {
  agentQueues,
  agentRow,
  apply,
  backoff,
  casLoginUrl,
  casReturn,
  clockOffset,
  createBoard,
  curvePlan,
  curveWindow,
  DEFAULT_THRESHOLDS,
  duration,
  level,
  membershipCommands,
  niceCeiling,
  queueTile,
  readThresholds,
  renewalAt,
  STATE_LABELS,
  worst,
} from "../../web/supervision/model.js";
import { REFRESH_INTERVAL_MS, SupervisionFeed } from "../../lib/cti/supervision.ts";
import { adminProfile, setProfile } from "../../lib/rights/profiles.ts";
import type { AgentFigures, QueueFigures } from "../../lib/supervision/mod.ts";
import { addAgent, phoneUser } from "../lib/platform/fixtures.ts";
import { ctiUser } from "../helpers.ts";
import { callCenter } from "../routes/supervision_fixtures.ts";

const T0 = Date.UTC(2026, 0, 1, 9, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();

/** A `QueueStatistics` message of `counters`. */
const queueStatistics = (queueId: number, counters: Record<string, number>) => ({
  msgType: "QueueStatistics",
  ctiMessage: {
    queueId,
    counters: Object.entries(counters).map(([statName, value]) => ({ statName, value })),
  },
});

/** An `AgentStatistics` message of `stats`. */
const agentStatistics = (id: number, stats: Record<string, string | number | boolean>) => ({
  msgType: "AgentStatistics",
  ctiMessage: {
    id,
    statistics: Object.entries(stats).map(([name, value]) => ({ name, value })),
  },
});

Deno.test("the board follows the CTI channel's messages", async (t) => {
  const board = createBoard();

  await t.step("lists: queues and agents by id, what a new list lacks is gone", () => {
    assert.equal(
      apply(board, {
        msgType: "QueueList",
        ctiMessage: [
          { id: 1, name: "sales", displayName: "Sales", number: "3000" },
          { id: 2, name: "support", displayName: "", number: "3001" },
          { id: 3, name: "old", displayName: "Old", number: "3002" },
        ],
      }, T0),
      "queues",
    );
    assert.deepEqual([...board.queues.keys()], [1, 2, 3]);
    assert.equal(board.queues.get(2)!.displayName, "support", "no display name: the name");
    assert.equal(board.queues.get(1)!.calls, null, "calls not followed yet");
    apply(board, {
      msgType: "QueueList",
      ctiMessage: [
        { id: 1, name: "sales", displayName: "Sales", number: "3000" },
        { id: 2, name: "support", displayName: "Support", number: "3001" },
      ],
    }, T0);
    assert.deepEqual([...board.queues.keys()], [1, 2]);
    assert.equal(board.queues.get(2)!.displayName, "Support");
    assert.equal(
      apply(board, {
        msgType: "QueueConfig",
        ctiMessage: { id: 4, name: "vip", displayName: "VIP", number: "3004" },
      }, T0),
      "queues",
    );
    assert.deepEqual(board.queues.get(4), {
      id: 4,
      name: "vip",
      displayName: "VIP",
      number: "3004",
      stats: {},
      calls: null,
    });

    assert.equal(
      apply(board, {
        msgType: "AgentList",
        ctiMessage: [
          { id: 10, number: "8001", firstName: "Anna", lastName: "Roy" },
          { id: 11, number: "8002", firstName: "Ben", lastName: "" },
        ],
      }, T0),
      "agents",
    );
    assert.equal(
      apply(board, {
        msgType: "AgentConfig",
        ctiMessage: { id: 11, number: "8002", firstName: "Benoit", lastName: "Lee" },
      }, T0),
      "agents",
    );
    assert.deepEqual(
      [...board.agents.values()].map((a) => [a.id, a.number, a.firstName, a.lastName]),
      [[10, "8001", "Anna", "Roy"], [11, "8002", "Benoit", "Lee"]],
    );
  });

  await t.step("memberships: the whole list, then each change (penalty -1: removed)", () => {
    assert.equal(
      apply(board, {
        msgType: "QueueMemberList",
        ctiMessage: [
          { agentId: 10, queueId: 1, penalty: 0 },
          { agentId: 10, queueId: 2, penalty: 3 },
          { agentId: 11, queueId: 2, penalty: 0 },
        ],
      }, T0),
      "members",
    );
    assert.deepEqual([...agentQueues(board, 10)], [[1, 0], [2, 3]]);
    apply(
      board,
      { msgType: "QueueMember", ctiMessage: { agentId: 10, queueId: 2, penalty: -1 } },
      T0,
    );
    apply(
      board,
      { msgType: "QueueMember", ctiMessage: { agentId: 11, queueId: 1, penalty: 5 } },
      T0,
    );
    assert.deepEqual([...agentQueues(board, 10)], [[1, 0]]);
    assert.deepEqual([...agentQueues(board, 11)], [[2, 0], [1, 5]]);
    assert.deepEqual([...agentQueues(board, 12)], []);
    apply(board, { msgType: "QueueMemberList", ctiMessage: [] }, T0);
    assert.deepEqual([...agentQueues(board, 11)], [], "a new list replaces the old");
  });

  await t.step("statistics: merged into what the queue or agent had", () => {
    assert.equal(
      apply(board, queueStatistics(1, { WaitingCalls: 2, TotalNumberCallsEntered: 5 }), T0),
      "queues",
    );
    apply(board, queueStatistics(1, { WaitingCalls: 1 }), T0);
    assert.deepEqual(board.queues.get(1)!.stats, { WaitingCalls: 1, TotalNumberCallsEntered: 5 });
    // figures of a queue not listed yet: kept under its id until the list names it
    apply(board, queueStatistics(9, { WaitingCalls: 4 }), T0);
    assert.equal(board.queues.get(9)!.name, "#9");

    assert.equal(
      apply(board, agentStatistics(10, { State: "ready", AnsweredCalls: 1 }), T0 + 5),
      "agents",
    );
    apply(board, agentStatistics(10, { State: "on_call", Call: "queue" }), T0 + 9);
    const agent = board.agents.get(10)!;
    assert.deepEqual(agent.stats, { State: "on_call", AnsweredCalls: 1, Call: "queue" });
    assert.equal(agent.statsAt, T0 + 9, "when its last figures came");
  });

  await t.step("a queue's waiting calls", () => {
    const calls = [{ position: 1, name: "Hugo", number: "1101", queueTime: iso(T0) }];
    assert.equal(
      apply(board, { msgType: "QueueCalls", ctiMessage: { queueId: 1, calls } }, T0),
      "calls",
    );
    assert.deepEqual(board.queues.get(1)!.calls, calls);
  });

  await t.step("other messages change nothing", () => {
    const before = structuredClone(board);
    assert.equal(apply(board, { msgType: "Pong", ctiMessage: {} }, T0), null);
    assert.equal(apply(board, { msgType: "PhoneEvent", ctiMessage: { DN: "1001" } }, T0), null);
    assert.deepEqual(board, before);
  });
});

Deno.test("thresholds: read back from storage, and the level of a figure", async (t) => {
  await t.step("nothing stored, or garbage: the defaults", () => {
    const defaults = structuredClone(DEFAULT_THRESHOLDS);
    assert.deepEqual(readThresholds(null), defaults);
    assert.deepEqual(readThresholds("not json"), defaults);
    assert.deepEqual(readThresholds("null"), defaults);
    assert.deepEqual(readThresholds("[]"), defaults);
    assert.ok(Object.isFrozen(DEFAULT_THRESHOLDS) && Object.isFrozen(DEFAULT_THRESHOLDS.waiting));
  });

  await t.step("each field checked on its own: what is wrong is the default's", () => {
    const stored = JSON.stringify({
      waiting: { warn: 1, alert: 2 },
      longestWait: { warn: -1, alert: "60" },
      serviceLevel: { warn: 90 },
      abandoned: { warn: 2.5, alert: 1e400 }, // Infinity once parsed: not finite
      extra: { warn: 1, alert: 2 },
    });
    assert.deepEqual(readThresholds(stored), {
      waiting: { warn: 1, alert: 2 },
      longestWait: { warn: DEFAULT_THRESHOLDS.longestWait.warn, alert: 60 },
      serviceLevel: { warn: 90, alert: DEFAULT_THRESHOLDS.serviceLevel.alert },
      abandoned: { warn: 2.5, alert: DEFAULT_THRESHOLDS.abandoned.alert },
    });
  });

  await t.step("levels: higher is worse, except the service level; none is ok", () => {
    const limits = readThresholds(null); // waiting 3/6, service level 80/60
    assert.deepEqual([0, 2, 3, 5, 6, 40].map((n) => level("waiting", n, limits)), [
      "ok",
      "ok",
      "warn",
      "warn",
      "alert",
      "alert",
    ]);
    assert.deepEqual([100, 80.1, 80, 60.1, 60, 0].map((n) => level("serviceLevel", n, limits)), [
      "ok",
      "ok",
      "warn",
      "warn",
      "alert",
      "alert",
    ]);
    assert.equal(level("serviceLevel", null, limits), "ok", "no call: nothing to judge");
    assert.equal(level("abandoned", NaN, limits), "ok");
    assert.equal(worst([]), "ok");
    assert.equal(worst(["ok", "alert", "warn"]), "alert");
    assert.equal(worst(["warn", "ok"]), "warn");
    assert.equal(worst(["unknown"]), "ok");
  });
});

Deno.test("a queue's tile", async (t) => {
  const limits = readThresholds(null);
  const queue = {
    id: 1,
    name: "sales",
    displayName: "Sales",
    number: "3000",
    stats: {
      WaitingCalls: 3,
      LongestWaitTime: 42,
      AvailableAgents: 1,
      TalkingAgents: 2,
      LoggedAgents: 5,
      PausedAgents: 1,
      TotalNumberCallsEntered: 8,
      TotalNumberCallsAnswered: 5,
      TotalNumberCallsAbandonned: 1,
      PercentageAnsweredBefore15: 62.5,
    },
    calls: null as { position: number; name: string; number: string; queueTime: string }[] | null,
  };

  await t.step("before the calls are followed: the counters", () => {
    assert.deepEqual(queueTile(queue, T0, limits), {
      waiting: 3,
      longestWait: 42,
      serviceLevel: 62.5,
      entered: 8,
      answered: 5,
      abandoned: 1,
      abandonedPercent: 12.5,
      logged: 5,
      ready: 1,
      paused: 1,
      busy: 3, // logged, neither ready nor paused: ringing, on a call or in wrap-up
      levels: { waiting: "warn", longestWait: "warn", serviceLevel: "warn", abandoned: "alert" },
      level: "alert",
    });
  });

  await t.step("the calls followed: counted, and the longest wait from the oldest, now", () => {
    queue.calls = [
      { position: 1, name: "", number: "1101", queueTime: iso(T0 - 65_400) },
      { position: 2, name: "", number: "1102", queueTime: iso(T0 - 10_000) },
    ];
    const tile = queueTile(queue, T0, limits);
    assert.equal(tile.waiting, 2);
    assert.equal(tile.longestWait, 65);
    assert.equal(tile.levels.waiting, "ok");
    assert.equal(tile.levels.longestWait, "alert");
    queue.calls = [];
    assert.equal(queueTile(queue, T0, limits).longestWait, 0);
    assert.equal(queueTile(queue, T0, limits).waiting, 0);
    // a page clock a little behind the server's: never a negative wait
    queue.calls = [{ position: 1, name: "", number: "1101", queueTime: iso(T0 + 800) }];
    assert.equal(queueTile(queue, T0, limits).longestWait, 0);
  });

  await t.step("no call entered today: no service level, no abandon rate", () => {
    const empty = { ...queue, calls: [], stats: { LoggedAgents: 0 } };
    const tile = queueTile(empty, T0, limits);
    assert.equal(tile.serviceLevel, null);
    assert.equal(tile.abandonedPercent, null);
    assert.deepEqual(tile.levels, {
      waiting: "ok",
      longestWait: "ok",
      serviceLevel: "ok",
      abandoned: "ok",
    });
    assert.equal(tile.busy, 0);
  });
});

Deno.test("an agent's row", async (t) => {
  const agent = (stats: Record<string, string | number | boolean>, statsAt = T0) => ({
    id: 10,
    number: "8001",
    firstName: "Anna",
    lastName: "",
    stats,
    statsAt,
  });

  await t.step("never told anything: logged out, no time in state", () => {
    assert.deepEqual(agentRow(agent({}, 0), T0), {
      state: "logged_out",
      label: "Logged out",
      paused: false,
      pausedReason: "",
      inState: null,
      call: "",
      callNumber: "",
      answered: 0,
      missed: 0,
      talk: 0,
      logged: false,
    });
  });

  await t.step("on a queue call: its talk time grows from the last figures", () => {
    const row = agentRow(
      agent({
        State: "on_call",
        StateSince: iso(T0 - 30_000),
        Call: "queue",
        CallNumber: "1101",
        Paused: false,
        PausedReason: "",
        AnsweredCalls: 3,
        MissedCalls: 1,
        TalkTime: 100,
      }),
      T0 + 12_500,
    );
    assert.equal(row.label, "On call");
    assert.equal(row.inState, 42);
    assert.equal(row.callNumber, "1101");
    assert.equal(row.talk, 112);
    assert.deepEqual([row.answered, row.missed, row.logged], [3, 1, true]);
  });

  await t.step("on a call of its own: the talk time stays (queue calls only)", () => {
    const row = agentRow(
      agent({ State: "on_call", Call: "outgoing", TalkTime: 100 }),
      T0 + 12_500,
    );
    assert.equal(row.talk, 100);
    assert.equal(row.call, "outgoing");
  });

  await t.step("paused: the reason in the label; paused under a call: told apart", () => {
    const paused = agentRow(
      agent({ State: "paused", Paused: true, PausedReason: "lunch", StateSince: iso(T0) }),
      T0 + 61_000,
    );
    assert.equal(paused.label, "Paused: lunch");
    assert.equal(paused.inState, 61);
    assert.equal(paused.paused, true);
    assert.equal(agentRow(agent({ State: "paused", Paused: true }), T0).label, "Paused");
    const both = agentRow(agent({ State: "wrapup", Paused: true, PausedReason: "meeting" }), T0);
    assert.equal(both.label, "Wrap-up, paused: meeting");
    assert.equal(agentRow(agent({ State: "on_call", Paused: true }), T0).label, "On call, paused");
    assert.deepEqual([both.paused, both.pausedReason], [true, "meeting"]);
  });

  await t.step("the time in state on the server's clock (the page's plus the offset)", () => {
    const row = agentRow(agent({ State: "ready", StateSince: iso(T0) }), T0 + 1_000, 9_000);
    assert.equal(row.inState, 10);
    assert.equal(agentRow(agent({ State: "ready", StateSince: iso(T0) }), T0 - 5_000).inState, 0);
    assert.equal(agentRow(agent({ State: "ready", StateSince: "" }), T0).inState, null);
  });

  await t.step("every state has a label; an unknown one shows as it is", () => {
    for (const [state, label] of Object.entries(STATE_LABELS)) {
      assert.equal(agentRow(agent({ State: state }), T0).label, label);
    }
    assert.equal(agentRow(agent({ State: "dreaming" }), T0).label, "dreaming");
  });
});

Deno.test("membership commands: what takes an agent's queues from before to after", () => {
  const before = new Map([[1, 0], [2, 3], [3, 0]]);
  const after = new Map([[1, 0], [2, 1], [4, 2]]);
  assert.deepEqual(membershipCommands(7, before, after), [
    { claz: "web", command: "setAgentQueue", agentId: 7, queueId: 2, penalty: 1 },
    { claz: "web", command: "setAgentQueue", agentId: 7, queueId: 4, penalty: 2 },
    { claz: "web", command: "removeAgentFromQueue", agentId: 7, queueId: 3 },
  ]);
  assert.deepEqual(membershipCommands(7, before, new Map(before)), []);
});

Deno.test("durations, backoff, renewal, clock offset, CAS addresses", async (t) => {
  await t.step("durations: m:ss, h:mm:ss from an hour, a dash for none", () => {
    assert.deepEqual([0, 9, 59.9, 61, 3599, 3600, 36_061, -4].map(duration), [
      "0:00",
      "0:09",
      "0:59",
      "1:01",
      "59:59",
      "1:00:00",
      "10:01:01",
      "0:00",
    ]);
    assert.equal(duration(null), "–");
    assert.equal(duration(Infinity), "–");
  });

  await t.step("reconnection: 1, 2, 4 … 30 s, less up to a fifth at random", () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5, 6, 20].map((n) => backoff(n, () => 0)), [
      1000,
      2000,
      4000,
      8000,
      16_000,
      30_000,
      30_000,
      30_000,
    ]);
    assert.equal(backoff(0, () => 0.99999), 800);
    assert.equal(backoff(-3, () => 0.5), 900);
    for (let i = 0; i < 100; i++) {
      const wait = backoff(3);
      assert.ok(wait >= 6_400 && wait <= 8_000, String(wait));
    }
  });

  await t.step("a token renewed at three quarters of its life, at least 5 s on", () => {
    assert.equal(renewalAt(T0, 7200), T0 + 5_400_000);
    assert.equal(renewalAt(T0, 4), T0 + 5_000);
  });

  await t.step("the server's clock: off only past the Date header's rounding", () => {
    const now = Date.parse("2026-01-01T09:00:00.300Z");
    assert.equal(clockOffset("Thu, 01 Jan 2026 09:00:00 GMT", now), 0);
    assert.equal(clockOffset("Thu, 01 Jan 2026 09:00:01 GMT", now), 0);
    assert.equal(clockOffset("Thu, 01 Jan 2026 09:00:02 GMT", now), 2_200);
    assert.equal(clockOffset("Thu, 01 Jan 2026 09:01:00 GMT", now), 60_200);
    assert.equal(clockOffset("Thu, 01 Jan 2026 08:59:50 GMT", now), -9_800);
    assert.equal(clockOffset(null, now), 0);
    assert.equal(clockOffset("yesterday-ish", now), 0);
  });

  await t.step("CAS: the page's address without its ticket, and CAS's login address", () => {
    assert.deepEqual(casReturn("https://svc.example.com/supervision?ticket=ST-1-abc&x=1#top"), {
      service: "https://svc.example.com/supervision?x=1",
      ticket: "ST-1-abc",
    });
    assert.deepEqual(casReturn("https://svc.example.com/supervision"), {
      service: "https://svc.example.com/supervision",
      ticket: null,
    });
    assert.equal(
      casLoginUrl("https://cas.example.com/cas/", "https://svc.example.com/supervision?x=1"),
      "https://cas.example.com/cas/login?service=https%3A%2F%2Fsvc.example.com%2Fsupervision%3Fx%3D1",
    );
  });
});

Deno.test("what the server's supervision feed sends builds the figures the REST routes answer", async () => {
  const { t, ctx, bob, carol, agent, queue, api } = await callCenter();
  try {
    const second = await addAgent(t, "8002", queue.id);
    await phoneUser(t, "dave", "1004");
    // each message with when it came, as the page takes them
    const sent: { at: number; message: { msgType: string; ctiMessage: unknown } }[] = [];
    const feed = new SupervisionFeed(ctx.services);
    // an administrator's socket: every queue and agent
    const admin = await ctiUser(ctx, "ada");
    await setProfile(ctx.services.store, adminProfile(admin.id));
    const watcher = {
      sendText: (text: string) => sent.push({ at: ctx.clock.now(), message: JSON.parse(text) }),
      user: admin,
    };
    await feed.followList(watcher, "queue");
    await feed.followList(watcher, "agent");
    await feed.followList(watcher, "queuemember");
    await feed.followQueueStats(watcher);
    await feed.followAgentStats(watcher);
    await feed.followQueueCalls(watcher, queue.id);

    // agent 8001 logs in and takes bob's call; 8002 logs in and pauses; carol waits
    await t.sim.agentLogin(agent, "1001", "default");
    await t.sim.agentLogin(second, "1004", "default");
    await t.sim.agentPause(second.id, "training");
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.sim.act("1001", "answer");
    await t.advance(4_000);
    await t.sim.dialNumber(carol, "3000", {});
    await t.sim.act("1003", "answer");
    await t.advance(3_000);
    await ctx.clock.advance(REFRESH_INTERVAL_MS); // the feed's refresh

    const board = createBoard();
    const now = ctx.clock.now();
    for (const { at, message } of sent) apply(board, message, at);
    const queues: QueueFigures[] = await api.json("/supervision/queues");
    const agents: AgentFigures[] = await api.json("/supervision/agents");
    const calls: { callerNumber: string }[] = await api.json(
      `/supervision/queues/${queue.id}/calls`,
    );

    const [figures] = queues;
    const tile = queueTile(board.queues.get(queue.id)!, now, readThresholds(null));
    assert.deepEqual(
      {
        waiting: tile.waiting,
        longestWait: tile.longestWait,
        serviceLevel: tile.serviceLevel,
        entered: tile.entered,
        answered: tile.answered,
        abandoned: tile.abandoned,
        logged: tile.logged,
        ready: tile.ready,
        busy: tile.busy,
        paused: tile.paused,
      },
      {
        waiting: figures!.waitingCalls,
        longestWait: figures!.longestWaitSeconds,
        serviceLevel: figures!.today.serviceLevelPercent,
        entered: figures!.today.entered,
        answered: figures!.today.answered,
        abandoned: figures!.today.abandoned,
        logged: figures!.agents.logged,
        ready: figures!.agents.ready,
        busy: figures!.agents.ringing + figures!.agents.onCall + figures!.agents.wrapup,
        paused: figures!.agents.paused,
      },
    );
    assert.deepEqual(
      board.queues.get(queue.id)!.calls!.map((c) => c.number),
      calls.map((c) => c.callerNumber),
    );
    assert.equal(board.queues.get(queue.id)!.name, "sales");

    for (const expected of agents) {
      const shown = board.agents.get(expected.id)!;
      assert.equal(shown.number, expected.number);
      const row = agentRow(shown, now);
      assert.deepEqual(
        {
          state: row.state,
          paused: row.paused,
          pausedReason: row.pausedReason,
          inState: row.inState,
          call: row.call,
          answered: row.answered,
          missed: row.missed,
          talk: row.talk,
          queues: [...agentQueues(board, expected.id)],
        },
        {
          state: expected.state,
          paused: expected.paused,
          pausedReason: expected.pausedReason ?? "",
          inState: expected.since === null
            ? null
            : Math.floor((now - Date.parse(expected.since)) / 1000),
          call: expected.call ?? "",
          answered: expected.today.answered,
          missed: expected.today.missed,
          talk: expected.today.talkSeconds,
          queues: expected.queues.map((q) => [q.id, q.penalty]),
        },
        `agent ${expected.number}`,
      );
    }
    const onCall = agentRow(board.agents.get(agent.id)!, now);
    assert.equal(onCall.state, "on_call");
    assert.equal(onCall.callNumber, "1002", "the caller's number");
    assert.equal(agentRow(board.agents.get(second.id)!, now).label, "Paused: training");
    assert.deepEqual([tile.waiting, tile.answered, tile.busy, tile.paused], [1, 1, 1, 1]);
    assert.equal(tile.longestWait, 3);
    feed.close();
  } finally {
    await t.sim.close();
    ctx.services.store.close();
  }
});

/** A day's intervals from midnight UTC: `[entered, waitingMax, serviceLevel]` per interval. */
function day(...counts: [number, number, number | null][]) {
  return counts.map(([entered, waitingMax, serviceLevelPercent], slot) => {
    const start = Date.UTC(2026, 0, 1) + slot * 15 * 60_000;
    return {
      start: iso(start),
      time: iso(start).slice(11, 16),
      entered,
      answered: entered,
      answeredWithinServiceLevel: 0,
      abandoned: 0,
      timeout: 0,
      waitingMax,
      serviceLevelPercent,
    };
  });
}

const quiet = (n: number) => Array.from({ length: n }, () => [0, 0, null] as [0, 0, null]);

Deno.test("the day's curve: the hours it shows, its scales, its bars, its lines", async (t) => {
  await t.step("from the hour of the first call to the end of this one, 4 hours at least", () => {
    // 09:30 now, first call at 08:20: 08:00 to 10:00, widened to 06:00 to 10:00
    assert.deepEqual(curveWindow(day(...quiet(33), [1, 1, 100], ...quiet(5))), {
      from: 24,
      to: 40,
    });
    // 15:10 now, first call at 08:20: 08:00 to 16:00
    assert.deepEqual(curveWindow(day(...quiet(33), [1, 1, 100], ...quiet(27))), {
      from: 32,
      to: 64,
    });
    // 00:20 now, nothing yet: midnight to 04:00, hours to come
    assert.deepEqual(curveWindow(day(...quiet(2))), { from: 0, to: 16 });
    // a whole day past, its first call at 07:00
    assert.deepEqual(curveWindow(day(...quiet(28), [1, 1, 0], ...quiet(67))), { from: 28, to: 96 });
  });

  await t.step("the scale of calls waiting: 2, 4, 6, 8, 10, 20…", () => {
    assert.deepEqual([0, 1, 2, 3, 5, 9, 10, 11, 45, 101].map(niceCeiling), [
      2,
      2,
      2,
      4,
      6,
      10,
      10,
      20,
      60,
      200,
    ]);
  });

  await t.step("a bar per interval, the service level's line broken where no call entered", () => {
    const intervals = day(...quiet(32), [2, 3, 50], [1, 1, 100], [0, 2, null], [4, 4, 75]);
    const plan = curvePlan(intervals, { width: 520, height: 140, font: 10, warn: 80 });
    const { plot } = plan;
    assert.deepEqual(plot, { left: 24, top: 7, width: 462, height: 116, bottom: 123 });
    assert.equal(plan.from, intervals[20]!.start, "05:00 to 09:00");
    assert.equal(plan.bars.length, 16);
    assert.deepEqual(
      plan.bars.slice(12).map((bar) => [bar.start.slice(11, 16), bar.waiting, bar.serviceLevel]),
      [["08:00", 3, 50], ["08:15", 1, 100], ["08:30", 2, null], ["08:45", 4, 75]],
    );
    const slot = plot.width / 16;
    const last = plan.bars.at(-1)!;
    assert.equal(last.x, plot.left + 15.15 * slot);
    assert.equal(last.height, plot.height, "4 of a scale of 4");
    assert.equal(last.y, plot.top);
    assert.equal(plan.bars[12]!.height, plot.height * 3 / 4);
    assert.equal(plan.bars[0]!.height, 0);
    assert.deepEqual(plan.lines.map((line) => line.length), [2, 1]);
    assert.deepEqual(plan.lines[0]![0], {
      x: plot.left + 12.5 * slot,
      y: plot.top + plot.height / 2,
    });
    assert.deepEqual(plan.waitingTicks.map((tick) => [tick.value, tick.y]), [
      [0, 123],
      [2, 65],
      [4, 7],
    ]);
    assert.deepEqual(plan.levelTicks.map((tick) => tick.value), [0, 50, 100]);
    assert.ok(Math.abs(plan.warn.y - (plot.top + plot.height * 0.2)) < 1e-9, "the amber 80 %");
    // an hour mark every hour (28.9 px apart, room for 4 characters of 10 px)
    assert.deepEqual(plan.hours.map((hour) => hour.label), [
      "05:00",
      "06:00",
      "07:00",
      "08:00",
      "09:00",
    ]);
    assert.equal(plan.empty, false);
  });

  await t.step("narrow: an hour mark every 2 hours; hours to come named; an empty day said", () => {
    const plan = curvePlan(day(...quiet(2)), { width: 200, height: 80, font: 12, warn: 80 });
    assert.deepEqual(plan.hours.map((hour) => hour.label), ["00:00", "02:00", "04:00"]);
    assert.equal(plan.empty, true);
    assert.equal(plan.bars.length, 2, "the hours to come have no bar");
  });

  await t.step("the TV view's address comes back from CAS with it", () => {
    assert.equal(
      casReturn("https://svc.example.com/supervision?view=tv&ticket=ST-1").service,
      "https://svc.example.com/supervision?view=tv",
    );
  });
});

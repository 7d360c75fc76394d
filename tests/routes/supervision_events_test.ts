/**
 * Supervision's events and metrics (docs/supervision.md): `QueueStatistics` at most once a second
 * per queue whose figures changed (manual clock), in xuc's shape with username "", on the SSE
 * stream and posted to `eventUrl`, never to the user feed a CTI socket reads; `/metrics` shows
 * the queues' and agents' gauges and the queue call counters.
 */
import assert from "node:assert/strict";
import type { ExportedMessage, QueueStatisticsMessage } from "../../lib/events/messages.ts";
import type { LogEntry } from "../../lib/events/outbox.ts";
import { STATISTICS_INTERVAL_MS } from "../../lib/supervision/mod.ts";
import { bearer, eventReceiver, login, webServiceUser } from "../helpers.ts";
import { parseExposition, valueOf } from "../prometheus.ts";
import { callCenter, V2 } from "./supervision_fixtures.ts";

const STAT_NAMES = [
  "WaitingCalls",
  "LongestWaitTime",
  "AvailableAgents",
  "TalkingAgents",
  "LoggedAgents",
  "PausedAgents",
  "TotalNumberCallsEntered",
  "TotalNumberCallsAnswered",
  "TotalNumberCallsAbandonned",
  "TotalNumberCallsAbandonnedAfter15",
  "TotalNumberCallsAnsweredBefore15",
  "PercentageAnsweredBefore15",
  "PercentageAbandonnedAfter15",
  "TotalNumberCallsTimeout",
  "MeanWaitTime",
  "MaxWaitTime",
  "MeanTalkTime",
];

type Ctx = Awaited<ReturnType<typeof callCenter>>["ctx"];

/** The `QueueStatistics` published so far, oldest first. */
async function statistics(ctx: Ctx): Promise<QueueStatisticsMessage["ctiMessage"][]> {
  return (await ctx.services.events.retained())
    .filter((event) => event.message.msgType === "QueueStatistics")
    .map((event) => (event.message as QueueStatisticsMessage).ctiMessage);
}

/** A statistics message's counters as an object. */
const counters = (message: QueueStatisticsMessage["ctiMessage"]) =>
  Object.fromEntries(message.counters.map(({ statName, value }) => [statName, value]));

Deno.test("QueueStatistics: at most once a second per queue whose figures changed", async (s) => {
  const { t, ctx, bob, agent, queue } = await callCenter();
  ctx.services.supervision.start();

  await s.step("nothing is sent before start(), nor without a change", async () => {
    assert.deepEqual(await statistics(ctx), []);
  });

  await s.step('a change: sent at once, xuc\'s shape, username ""', async () => {
    await t.sim.agentLogin(agent, "1001", "default");
    const events = (await ctx.services.events.retained()).filter((event) =>
      event.message.msgType === "QueueStatistics"
    );
    assert.equal(events.length, 1);
    assert.equal(events[0]!.username, "");
    const message = events[0]!.message as QueueStatisticsMessage;
    assert.equal(message.ctiMessage.queueId, queue.id);
    assert.deepEqual(message.ctiMessage.counters.map((c) => c.statName), STAT_NAMES);
    assert.deepEqual(counters(message.ctiMessage), {
      WaitingCalls: 0,
      LongestWaitTime: 0,
      AvailableAgents: 1,
      TalkingAgents: 0,
      LoggedAgents: 1,
      PausedAgents: 0,
      TotalNumberCallsEntered: 0,
      TotalNumberCallsAnswered: 0,
      TotalNumberCallsAbandonned: 0,
      TotalNumberCallsAbandonnedAfter15: 0,
      TotalNumberCallsAnsweredBefore15: 0,
      PercentageAnsweredBefore15: 0,
      PercentageAbandonnedAfter15: 0,
      TotalNumberCallsTimeout: 0,
      MeanWaitTime: 0,
      MaxWaitTime: 0,
      MeanTalkTime: 0,
    });
  });

  await s.step(
    "another change within the second: sent when it is over, the latest figures",
    async () => {
      await t.advance(300);
      await t.sim.agentPause(agent.id, "lunch");
      await t.advance(200);
      await t.sim.dialNumber(bob, "3000", {});
      await t.sim.act("1002", "answer");
      assert.equal((await statistics(ctx)).length, 1);
      await t.advance(STATISTICS_INTERVAL_MS - 501);
      assert.equal((await statistics(ctx)).length, 1);
      await t.advance(1);
      const sent = await statistics(ctx);
      assert.equal(sent.length, 2);
      const figures = counters(sent[1]!);
      assert.deepEqual(
        [
          figures.PausedAgents,
          figures.AvailableAgents,
          figures.WaitingCalls,
          figures.LongestWaitTime,
        ],
        [1, 0, 1, 0],
      );
      assert.equal(figures.TotalNumberCallsEntered, 1);
    },
  );

  await s.step(
    "no event: nothing more, however long (the longest wait is as of the last)",
    async () => {
      await t.advance(10_000);
      assert.equal((await statistics(ctx)).length, 2);
      // asked again (a membership changed): the longest wait moved, so they are sent
      await ctx.services.supervision.queuesChanged([queue.id]);
      const sent = await statistics(ctx);
      assert.equal(sent.length, 3);
      assert.equal(counters(sent[2]!).LongestWaitTime, 10);
    },
  );

  await s.step("a change more than a second after the last: sent at once", async () => {
    await t.advance(2000);
    await t.sim.act("1002", "hangup");
    const sent = await statistics(ctx);
    assert.equal(sent.length, 4);
    assert.deepEqual(
      [counters(sent[3]!).TotalNumberCallsAbandonned, counters(sent[3]!).WaitingCalls],
      [1, 0],
    );
  });

  await s.step("the same figures again are not sent", async () => {
    await t.advance(5000);
    await ctx.services.supervision.queuesChanged([queue.id]);
    assert.equal((await statistics(ctx)).length, 4);
  });

  await s.step("two queues changed at once: one message each; close() stops them", async () => {
    const other = await t.api.create("/queues", { name: "support" });
    await t.api.put(`/queues/${other.id}/members/agents/${agent.id}`, { penalty: 0 });
    await t.sim.agentUnpause(agent.id);
    const sent = await statistics(ctx);
    assert.deepEqual(sent.slice(4).map((m) => m.queueId).sort(), [queue.id, other.id]);
    await t.advance(100);
    await t.sim.agentPause(agent.id, null);
    ctx.services.supervision.close();
    await t.advance(5000);
    await t.sim.agentUnpause(agent.id);
    assert.equal((await statistics(ctx)).length, 6);
  });
});

Deno.test("QueueStatistics that cannot be read when their second is over: logged, not thrown", async () => {
  const { t, ctx, agent } = await callCenter();
  ctx.services.supervision.start();
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.agentPause(agent.id, null); // within the second: waits for its end
  ctx.services.store.close();
  await t.advance(STATISTICS_INTERVAL_MS);
  assert.ok(ctx.logs.some((line) => line.includes("queue statistics not sent")));
});

Deno.test("QueueStatistics go to the SSE stream and eventUrl, not to the users' feed", async (s) => {
  const receiver = eventReceiver<ExportedMessage>();
  const { posted } = receiver;
  try {
    const { t, ctx, agent } = await callCenter({
      SVC_EVENT_URL: receiver.url,
    });
    ctx.services.supervision.start();
    const userFeed: LogEntry[] = [];
    const allFeed: LogEntry<ExportedMessage>[] = [];
    const unsubscribe = [
      ctx.services.feed.subscribe((entries) => userFeed.push(...entries)),
      ctx.services.feed.subscribeAll((entries) => allFeed.push(...entries)),
    ];
    const ws = await webServiceUser(ctx, ["svc.rest.events.read"]);
    const token = await login(ctx, "webservice", ws.login);
    const open = async (query: string) =>
      (await ctx.app.request(`${V2}/events/stream${query}`, { headers: bearer(token) })).body!
        .pipeThrough(new TextDecoderStream()).getReader();
    const everything = await open("");
    const alices = await open("?username=alice");

    await t.sim.agentLogin(agent, "1001", "default");

    await s.step("the live feed: subscribeAll gets it, subscribe (a CTI socket's) does not", () => {
      assert.deepEqual(allFeed.map((entry) => entry.event.message.msgType), [
        "AgentStateEvent",
        "QueueStatistics",
      ]);
      assert.deepEqual(userFeed.map((entry) => entry.event.message.msgType), ["AgentStateEvent"]);
    });

    await s.step("the SSE stream: event QueueStatistics; not in one user's stream", async () => {
      const text = await readUntil(everything, "event: QueueStatistics");
      assert.match(text, /data: \{"username":"","message":\{"msgType":"QueueStatistics"/);
      const alice = await readUntil(alices, "event: AgentStateEvent");
      assert.doesNotMatch(alice, /QueueStatistics/);
    });

    await s.step("posted to eventUrl", async () => {
      await ctx.services.events.deliverDue();
      const statistics = posted.filter((event) => event.message.msgType === "QueueStatistics");
      assert.equal(statistics.length, 1);
      assert.equal(statistics[0]!.username, "");
    });
    for (const stop of unsubscribe) stop();
    await everything.cancel();
    await alices.cancel();
    ctx.services.feed.close();
    await ctx.services.events.close();
  } finally {
    await receiver.close();
  }
});

/** Reads a stream until `marker` came (within 5 s); answers what was read. */
async function readUntil(
  reader: ReadableStreamDefaultReader<string>,
  marker: string,
): Promise<string> {
  const deadline = Date.now() + 5_000;
  let text = "";
  while (!text.includes(marker)) {
    if (Date.now() > deadline) throw new Error(`no ${marker} in ${text}`);
    const { value, done } = await reader.read();
    if (done) throw new Error("stream ended");
    text += value;
  }
  return text;
}

Deno.test("/metrics: calls waiting, longest wait, agents by state, queue calls counted", async () => {
  const token = "supervision-metrics-token-0123456789abcdef";
  const { t, ctx, bob, carol, agent } = await callCenter({ SVC_METRICS_TOKEN: token });
  const scrape = async () => {
    const response = await ctx.app.request("/metrics", { headers: bearer(token) });
    assert.equal(response.status, 200);
    return parseExposition(await response.text());
  };
  let families = await scrape();
  for (
    const [name, type] of [
      ["svc_queue_calls_waiting", "GAUGE"],
      ["svc_queue_longest_wait_seconds", "GAUGE"],
      ["svc_agents", "GAUGE"],
      ["svc_queue_calls_total", "COUNTER"],
    ] as const
  ) {
    assert.equal(families.get(name)?.type, type, name);
  }
  assert.equal(valueOf(families, "svc_queue_calls_waiting", { queue: "sales" }), 0);
  assert.equal(valueOf(families, "svc_agents", { state: "logged_out" }), 1);

  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.agentPause(agent.id, null);
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.advance(4000);
  await t.sim.dialNumber(carol, "3000", {});
  await t.sim.act("1003", "answer");
  await t.advance(2000);
  families = await scrape();
  assert.equal(valueOf(families, "svc_queue_calls_waiting", { queue: "sales" }), 2);
  assert.equal(valueOf(families, "svc_queue_longest_wait_seconds", { queue: "sales" }), 6);
  assert.equal(valueOf(families, "svc_agents", { state: "paused" }), 1);
  assert.equal(valueOf(families, "svc_agents", { state: "logged_out" }), 0);
  assert.equal(
    valueOf(families, "svc_queue_calls_total", { queue: "sales", outcome: "entered" }),
    2,
  );

  await t.sim.act("1003", "hangup");
  await t.sim.agentUnpause(agent.id);
  await t.sim.act("1001", "answer");
  families = await scrape();
  assert.equal(valueOf(families, "svc_queue_calls_waiting", { queue: "sales" }), 0);
  assert.equal(valueOf(families, "svc_agents", { state: "on_call" }), 1);
  for (const [outcome, count] of [["entered", 2], ["answered", 1], ["abandoned", 1]] as const) {
    assert.equal(
      valueOf(families, "svc_queue_calls_total", { queue: "sales", outcome }),
      count,
      outcome,
    );
  }

  // the store down: the gauges are left empty, the scrape still answers
  ctx.services.store.close();
  families = await scrape();
  assert.deepEqual(families.get("svc_queue_calls_waiting")?.samples ?? [], []);
  assert.deepEqual(families.get("svc_agents")?.samples ?? [], []);
});

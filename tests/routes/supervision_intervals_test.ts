/**
 * The day's curve (docs/supervision.md, "The day's curve"): `GET /supervision/queues/{id}/intervals`
 * answers a queue's day in intervals of 15 minutes, counted from the platform's queue call events,
 * with the calls waiting carried from one interval to the next; in the queue's own time zone; its
 * errors; and the intervals pruned with their days.
 */
import assert from "node:assert/strict";
import { readIntervalCounters } from "../../lib/store/supervision.ts";
import type { QueueIntervals } from "../../lib/supervision/schemas.ts";
import { expectError } from "../helpers.ts";
import { callCenter } from "./supervision_fixtures.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** The figures of an interval the tests compare, `[slot, entered, answered, inSl, abandoned, timeout, waitingMax, sl]`. */
const row = (curve: QueueIntervals, slot: number) => {
  const each = curve.intervals[slot]!;
  return [
    each.time,
    each.entered,
    each.answered,
    each.answeredWithinServiceLevel,
    each.abandoned,
    each.timeout,
    each.waitingMax,
    each.serviceLevelPercent,
  ];
};

Deno.test("a queue's day in intervals of 15 minutes: calls, calls waiting, service level", async () => {
  const { t, bob, carol, agent, queue, api } = await callCenter();
  const curve = async (query = ""): Promise<QueueIntervals> =>
    await api.json(`/supervision/queues/${queue.id}/intervals${query}`);

  const empty = await curve();
  assert.deepEqual(empty, {
    queueId: queue.id,
    day: "2026-01-01",
    timeZone: "UTC",
    intervalMinutes: 15,
    serviceLevelSeconds: 20,
    intervals: [{
      start: "2026-01-01T00:00:00.000Z",
      time: "00:00",
      entered: 0,
      answered: 0,
      answeredWithinServiceLevel: 0,
      abandoned: 0,
      timeout: 0,
      waitingMax: 0,
      serviceLevelPercent: null,
    }],
  }, "midnight: the interval now in, nothing in it");

  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.agentPause(agent.id, null);
  await t.advance(8 * HOUR + 14 * MINUTE + 50_000); // 08:14:50
  // two callers join in 08:00-08:15 and wait into the next interval
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.advance(5_000);
  await t.sim.dialNumber(carol, "3000", {});
  await t.sim.act("1003", "answer");
  await t.advance(10_000); // 08:15:05: carol hangs up, bob is answered after 25 s
  await t.sim.act("1003", "hangup");
  await t.advance(10_000);
  await t.sim.agentUnpause(agent.id);
  await t.sim.act("1001", "answer");
  await t.advance(30_000);
  await t.sim.act("1002", "hangup");
  // 08:31: bob again, answered within the service level
  await t.advance(15 * MINUTE);
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.advance(5_000);
  await t.sim.act("1001", "answer");
  await t.sim.act("1002", "hangup");
  // 08:46: carol waits for the queue's 30 s timeout
  await t.advance(15 * MINUTE);
  await t.sim.agentPause(agent.id, null);
  await t.sim.dialNumber(carol, "3000", {});
  await t.sim.act("1003", "answer");
  await t.advance(30_000);

  const day = await curve();
  assert.equal(day.intervals.length, 36, "00:00 to 08:45, the interval now in");
  assert.equal(day.intervals[35]!.start, "2026-01-01T08:45:00.000Z");
  assert.deepEqual(
    [32, 33, 34, 35].map((slot) => row(day, slot)),
    [
      ["08:00", 2, 0, 0, 0, 0, 2, 0],
      // nobody joined, two waited when it began; an answer with nobody entered: no level
      ["08:15", 0, 1, 0, 1, 0, 2, null],
      ["08:30", 1, 1, 1, 0, 0, 1, 100],
      ["08:45", 1, 0, 0, 0, 1, 1, 0],
    ],
  );
  for (const slot of [0, 10, 31]) {
    assert.deepEqual(row(day, slot).slice(1), [0, 0, 0, 0, 0, 0, null]);
  }
  // the intervals add up to the day's counts
  const { today } = await api.queue(queue.id);
  const sum = (field: "entered" | "answered" | "abandoned" | "timeout") =>
    day.intervals.reduce((total, each) => total + each[field], 0);
  assert.deepEqual(
    [sum("entered"), sum("answered"), sum("abandoned"), sum("timeout")],
    [today.entered, today.answered, today.abandoned, today.timeout],
  );
  assert.deepEqual(await curve("?day=2026-01-01"), day, "today, asked by its date");

  // the next day: yesterday whole, today begun
  await t.advance(16 * HOUR);
  const yesterday = await curve("?day=2026-01-01");
  assert.equal(yesterday.intervals.length, 96);
  assert.deepEqual(yesterday.intervals.slice(0, 36), day.intervals);
  assert.equal(yesterday.intervals[95]!.time, "23:45");
  const today2 = await curve();
  assert.deepEqual([today2.day, today2.intervals.length], ["2026-01-02", 4]); // 00:46
  assert.deepEqual((await curve("?day=2026-01-03")).intervals, [], "a day to come");
});

Deno.test("a queue's intervals follow its own time zone", async () => {
  const { t, bob, agent, queue, api } = await callCenter({
    SVC_SUPERVISION_TIMEZONE: "UTC,sales=Europe/Paris",
  });
  await t.sim.agentLogin(agent, "1001", "default");
  await t.advance(HOUR + 20 * MINUTE); // 01:20 UTC, 02:20 in Paris
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.sim.act("1001", "answer");
  const curve: QueueIntervals = await api.json(`/supervision/queues/${queue.id}/intervals`);
  assert.deepEqual([curve.day, curve.timeZone, curve.intervals.length], [
    "2026-01-01",
    "Europe/Paris",
    10,
  ]);
  assert.deepEqual(curve.intervals[0]!, {
    ...curve.intervals[0]!,
    start: "2025-12-31T23:00:00.000Z",
    time: "00:00",
  });
  assert.deepEqual(row(curve, 9), ["02:15", 1, 1, 1, 0, 0, 1, 100]);
});

Deno.test("GET /supervision/queues/{id}/intervals: unknown queues, days that are not, days not kept", async () => {
  const { t, queue, api } = await callCenter({ SVC_SUPERVISION_RETENTION_DAYS: "35" });
  await t.advance(40 * 24 * HOUR); // 2026-02-10: the days kept start on 2026-01-07
  const path = `/supervision/queues/${queue.id}/intervals`;
  const cases: [string, RegExp][] = [
    ["?day=", /day "" is no date/],
    ["?day=2026-02-30", /day "2026-02-30" is no date/],
    ["?day=10%20February", /is no date/],
    ["?day=2026-01-06", /day 2026-01-06 is before 2026-01-07: 35 days are kept/],
    ["?day=0001-01-01", /is before 2026-01-07/],
  ];
  for (const [query, message] of cases) {
    await expectError(await api.request("GET", `${path}${query}`), 400, "BadRequest", message);
  }
  assert.equal((await api.json(`${path}?day=2026-01-07`)).intervals.length, 96, "the oldest kept");
  assert.deepEqual((await api.json(`${path}?day=9999-12-31`)).intervals, []);
  for (const id of ["999", "01", "x", "-1", "99999999999999999999"]) {
    await expectError(
      await api.request("GET", `/supervision/queues/${id}/intervals`),
      404,
      "QueueNotFound",
    );
  }
});

Deno.test("the intervals are pruned with their days", async () => {
  const { t, ctx, bob, queue, api } = await callCenter({ SVC_SUPERVISION_RETENTION_DAYS: "2" });
  const call = async () => {
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.sim.act("1002", "hangup");
  };
  const kept = async (day: string) =>
    (await readIntervalCounters(ctx.services.store, day, queue.id)).size;
  await call();
  assert.equal(await kept("2026-01-01"), 1);
  await t.advance(24 * HOUR);
  await call();
  assert.deepEqual([await kept("2026-01-01"), await kept("2026-01-02")], [1, 1]);
  await t.advance(24 * HOUR);
  await call(); // 3 January: 1 January goes, its intervals too
  assert.deepEqual([await kept("2026-01-01"), await kept("2026-01-02")], [0, 1]);
  await expectError(
    await api.request("GET", `/supervision/queues/${queue.id}/intervals?day=2026-01-01`),
    400,
    "BadRequest",
  );
});

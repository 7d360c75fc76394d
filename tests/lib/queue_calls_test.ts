/**
 * The queue call history (lib/call_history/queue_calls.ts): what each queue call event makes of
 * its call's record, each event written once whatever the number of times it is handed over (in
 * supervision's commits, as `Supervision.handle` writes them), the reads by queue, agent and
 * caller, and the retention.
 */
import assert from "node:assert/strict";
import {
  callerQueueCalls,
  lastAgentQueueCalls,
  lastQueueCalls,
  nextRecord,
  queueCallMutations,
  type QueueCallRecord,
} from "../../lib/call_history/queue_calls.ts";
import type { QueueCallEvent } from "../../lib/platform/port.ts";
import { Store } from "../../lib/store/store.ts";
import { addCountersOnce } from "../../lib/store/supervision.ts";

const T0 = Date.UTC(2026, 0, 5, 9);

let serial = 0;
const event = (
  linkedId: string,
  kind: QueueCallEvent["event"],
  more: Partial<QueueCallEvent> = {},
): QueueCallEvent => ({
  kind: "queue_call",
  id: `e${++serial}`,
  event: kind,
  queueId: 1,
  linkedId,
  callerNumber: "0612345678",
  callerName: "Hugo",
  ...more,
});

async function withStore(test: (store: Store) => Promise<void>) {
  const store = await Store.open(":memory:");
  try {
    await test(store);
  } finally {
    store.close();
  }
}

Deno.test("each event of a queue call moves its record on", () => {
  const joined = nextRecord(null, event("c1", "joined"), T0);
  assert.deepEqual(joined, {
    queueId: 1,
    linkedId: "c1",
    joinedMs: T0,
    callerNumber: "0612345678",
    callerName: "Hugo",
    agentId: null,
    answeredMs: null,
    endMs: null,
    outcome: "waiting",
  });
  assert.equal(nextRecord(joined, event("c1", "joined"), T0 + 5), joined, "joined again: kept");
  const answered = nextRecord(
    joined,
    event("c1", "answered", { agentId: 3, waitMs: 12_000 }),
    T0 + 12_000,
  );
  assert.deepEqual(
    [answered.outcome, answered.agentId, answered.answeredMs, answered.joinedMs],
    ["answered", 3, T0 + 12_000, T0],
  );
  const completed = nextRecord(
    answered,
    event("c1", "completed", { agentId: 3, talkMs: 60_000 }),
    T0 + 72_000,
  );
  assert.deepEqual(
    [completed.outcome, completed.answeredMs, completed.endMs],
    ["completed", T0 + 12_000, T0 + 72_000],
  );
  for (const kind of ["abandoned", "timeout"] as const) {
    const left = nextRecord(joined, event("c1", kind, { waitMs: 3000 }), T0 + 3000);
    assert.deepEqual([left.outcome, left.endMs, left.agentId], [kind, T0 + 3000, null]);
  }
});

Deno.test("an event whose call has no record starts one, dated back by what it carries", () => {
  const answered = nextRecord(null, event("c2", "answered", { agentId: 4, waitMs: 8000 }), T0);
  assert.deepEqual([answered.joinedMs, answered.answeredMs, answered.agentId], [T0 - 8000, T0, 4]);
  const completed = nextRecord(null, event("c3", "completed", { agentId: 4, talkMs: 30_000 }), T0);
  assert.deepEqual(
    [completed.joinedMs, completed.answeredMs, completed.endMs, completed.outcome],
    [T0 - 30_000, T0 - 30_000, T0, "completed"],
  );
  const abandoned = nextRecord(null, event("c4", "abandoned", { waitMs: 5000 }), T0);
  assert.equal(abandoned.joinedMs, T0 - 5000);
});

const DAY = 86_400_000;

/** Writes `events` handled at `nowMs` as supervision does: each event's once, by its id. */
const record = (store: Store, events: QueueCallEvent[], nowMs: number, keepMs = 365 * DAY) =>
  addCountersOnce(store, events, () => [], (op, chunk) => {
    queueCallMutations(op, chunk, nowMs, keepMs);
  });

const ids = (records: QueueCallRecord[]) => records.map((call) => call.linkedId);

Deno.test("recorded once per event id, and read by queue, by agent and by caller", async () => {
  await withStore(async (store) => {
    const batches: QueueCallEvent[][] = [
      [event("a", "joined")],
      [event("a", "answered", { agentId: 3, waitMs: 2000 })],
      [
        event("b", "joined", { queueId: 2, callerNumber: "1002", callerName: "bob" }),
        event("b", "abandoned", { queueId: 2, callerNumber: "1002", waitMs: 4000 }),
      ],
      [event("c", "joined")],
      [event("a", "completed", { agentId: 3, talkMs: 9000 })],
    ];
    let now = T0;
    for (const batch of batches) {
      assert.equal((await record(store, batch, now)).length, batch.length);
      // handed over again (another process taking the platform over): nothing written
      assert.deepEqual(await record(store, batch, now + 999_999), []);
      now += 1000;
    }
    const queue1 = await lastQueueCalls(store, 1, 10, 0);
    assert.deepEqual(queue1.map((call) => [call.linkedId, call.outcome]), [
      ["c", "waiting"],
      ["a", "completed"],
    ]);
    const a = queue1[1]!;
    assert.deepEqual([a.joinedMs, a.answeredMs, a.endMs, a.agentId], [T0, T0 + 1000, T0 + 4000, 3]);
    assert.deepEqual(ids(await lastQueueCalls(store, 1, 1, 0)), ["c"]);
    const b = await lastQueueCalls(store, 2, 10, 0);
    assert.deepEqual(b.map((call) => [call.linkedId, call.outcome, call.callerName]), [
      ["b", "abandoned", "bob"],
    ]);
    assert.deepEqual(ids(await lastAgentQueueCalls(store, 3, 10, 0)), ["a"]);
    assert.deepEqual(await lastAgentQueueCalls(store, 4, 10, 0), []);
    const hugo = await callerQueueCalls(store, "0612345678", 1, 0);
    assert.equal(hugo.total, 2);
    assert.deepEqual(ids(hugo.records), ["c"]);
    assert.deepEqual(await callerQueueCalls(store, "", 5, 0), { total: 0, records: [] });
    assert.deepEqual(await callerQueueCalls(store, "0000", 5, 0), { total: 0, records: [] });
    assert.deepEqual(
      await callerQueueCalls(store, "9".repeat(300), 5, 0),
      { total: 0, records: [] },
      "a number too long for a key: not indexed, found nowhere",
    );
  });
});

Deno.test("the reads leave out the calls that joined before the retention's start", async () => {
  await withStore(async (store) => {
    await record(store, [event("old", "joined"), event("old", "answered", { agentId: 3 })], T0);
    await record(
      store,
      [event("new", "joined"), event("new", "answered", { agentId: 3 })],
      T0 + DAY,
    );
    const since = T0 + DAY / 2;
    assert.deepEqual(ids(await lastQueueCalls(store, 1, 10, since)), ["new"]);
    assert.deepEqual(ids(await lastAgentQueueCalls(store, 3, 10, since)), ["new"]);
    assert.deepEqual((await callerQueueCalls(store, "0612345678", 10, since)).total, 1);
    assert.deepEqual(ids(await lastQueueCalls(store, 1, 10, 0)), ["new", "old"]);
  });
});

Deno.test("a call joining the same queue twice is listed once", async () => {
  await withStore(async (store) => {
    await record(store, [event("x", "joined")], T0);
    await record(store, [event("x", "timeout", { waitMs: 30_000 })], T0 + 30_000);
    await record(store, [event("x", "joined")], T0 + 31_000);
    const calls = await lastQueueCalls(store, 1, 10, 0);
    assert.deepEqual(calls.map((call) => [call.linkedId, call.outcome]), [["x", "timeout"]]);
  });
});

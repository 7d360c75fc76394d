/**
 * The queue call history (lib/call_history/queue_calls.ts): what each queue call event makes of
 * its call's record, each event written once whatever the number of times it is handed over, the
 * reads by queue, agent and caller, and the prune with the call history's retention.
 */
import assert from "node:assert/strict";
import {
  callerQueueCalls,
  lastAgentQueueCalls,
  lastQueueCalls,
  nextRecord,
  pruneQueueCallsBefore,
  type QueueCallRecord,
  recordQueueCalls,
} from "../../lib/call_history/queue_calls.ts";
import type { QueueCallEvent } from "../../lib/platform/port.ts";
import { Store } from "../../lib/store/store.ts";

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

Deno.test("recorded once per event id, and read by queue, by agent and by caller", async () => {
  await withStore(async (store) => {
    const calls: QueueCallEvent[][] = [
      [event("a", "joined")],
      [event("a", "answered", { agentId: 3, waitMs: 2000 })],
      [event("b", "joined", { queueId: 2, callerNumber: "1002", callerName: "bob" })],
      [event("b", "abandoned", { queueId: 2, callerNumber: "1002", waitMs: 4000 })],
      [event("c", "joined")],
      [event("a", "completed", { agentId: 3, talkMs: 9000 })],
    ];
    let now = T0;
    for (const batch of calls) {
      await recordQueueCalls(store, batch, now);
      // handed over again (another process taking the platform over): nothing changes
      await recordQueueCalls(store, batch, now + 999_999);
      now += 1000;
    }
    const queue1 = await lastQueueCalls(store, 1, 10);
    assert.deepEqual(queue1.map((call) => [call.linkedId, call.outcome]), [
      ["c", "waiting"],
      ["a", "completed"],
    ]);
    const a = queue1[1]!;
    assert.deepEqual([a.joinedMs, a.answeredMs, a.endMs], [T0, T0 + 1000, T0 + 5000]);
    assert.deepEqual((await lastQueueCalls(store, 1, 1)).map((call) => call.linkedId), ["c"]);
    assert.deepEqual(
      (await lastQueueCalls(store, 2, 10)).map((call) => [call.linkedId, call.outcome]),
      [["b", "abandoned"]],
    );
    assert.deepEqual((await lastAgentQueueCalls(store, 3, 10)).map((call) => call.linkedId), ["a"]);
    assert.deepEqual(await lastAgentQueueCalls(store, 4, 10), []);
    const hugo = await callerQueueCalls(store, "0612345678", 1);
    assert.equal(hugo.total, 2);
    assert.deepEqual(hugo.records.map((call) => call.linkedId), ["c"]);
    assert.deepEqual(await callerQueueCalls(store, "", 5), { total: 0, records: [] });
    assert.deepEqual(await callerQueueCalls(store, "0000", 5), { total: 0, records: [] });
  });
});

Deno.test("the prune deletes the calls that joined before the limit, with their index keys", async () => {
  await withStore(async (store) => {
    const DAY = 86_400_000;
    const make = (linkedId: string, queueId: number, daysAgo: number, agentId?: number) =>
      recordQueueCalls(store, [
        event(linkedId, "joined", { queueId }),
        ...(agentId ? [event(linkedId, "answered", { queueId, agentId, waitMs: 0 })] : []),
      ], T0 - daysAgo * DAY);
    await make("old1", 1, 400, 3);
    await make("old2", 7, 366);
    await make("new1", 1, 10, 3);
    await make("new2", 7, 0);
    assert.equal(await pruneQueueCallsBefore(store, T0 - 365 * DAY), 2);
    const ids = (records: QueueCallRecord[]) => records.map((call) => call.linkedId);
    assert.deepEqual(ids(await lastQueueCalls(store, 1, 10)), ["new1"]);
    assert.deepEqual(ids(await lastQueueCalls(store, 7, 10)), ["new2"]);
    assert.deepEqual(ids(await lastAgentQueueCalls(store, 3, 10)), ["new1"]);
    assert.equal((await callerQueueCalls(store, "0612345678", 10)).total, 2);
    const leftKeys = await store.list({ prefix: ["queue_call_refs"] });
    assert.equal(leftKeys.length, 2);
    assert.equal(await pruneQueueCallsBefore(store, T0 - 365 * DAY), 0);
  });
});

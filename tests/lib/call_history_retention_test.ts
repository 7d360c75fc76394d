/**
 * The call history's retention (`SVC_CALL_HISTORY_RETENTION_DAYS`, pruned by the hourly cron of
 * main.ts): records of calls that started before the limit go, for every user, and nothing else.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../lib/config.ts";
import {
  type CallRecord,
  lastCalls,
  pruneCallsBefore,
  recordCalls,
} from "../../lib/store/call_history.ts";
import { Store } from "../../lib/store/store.ts";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 28, 12);

const record = (userId: number, daysAgo: number, n: number): CallRecord => ({
  id: `${userId}.${daysAgo}.${n}`,
  userId,
  startMs: NOW - daysAgo * DAY,
  answeredMs: null,
  endMs: NOW - daysAgo * DAY + 1000,
  srcUsername: "alice",
  dstUsername: "bob",
  srcNum: "1001",
  dstNum: "1002",
  status: "missed",
});

Deno.test("pruning the call history deletes the calls started before the limit, for every user", async () => {
  const store = await Store.open(":memory:");
  try {
    // users 1, 2 and 40 (not in a row: the prune finds each), 1,200 old calls for user 2
    const records = [
      ...[400, 366, 10, 0].map((days, n) => record(1, days, n)),
      ...Array.from({ length: 1200 }, (_, n) => record(2, 500 + n / 1000, n)),
      record(2, 1, 0),
      record(40, 365.5, 0),
      record(40, 364, 1),
    ];
    await recordCalls(store, records);
    const deleted = await pruneCallsBefore(store, NOW - 365 * DAY);
    assert.equal(deleted, 2 + 1200 + 1);
    const left = async (userId: number) =>
      (await lastCalls(store, userId, 2000)).map((call) => (NOW - call.startMs) / DAY);
    assert.deepEqual(await left(1), [0, 10]);
    assert.deepEqual(await left(2), [1]);
    assert.deepEqual(await left(40), [364]);
    assert.equal(await pruneCallsBefore(store, NOW - 365 * DAY), 0, "nothing more the second time");
  } finally {
    store.close();
  }
});

Deno.test("SVC_CALL_HISTORY_RETENTION_DAYS: a year by default, 1 to 36,500 days", () => {
  assert.equal(loadConfig({}).callHistoryRetentionDays, 365);
  assert.equal(loadConfig({ SVC_CALL_HISTORY_RETENTION_DAYS: "30" }).callHistoryRetentionDays, 30);
  for (const bad of ["0", "36501", "ten"]) {
    assert.throws(() => loadConfig({ SVC_CALL_HISTORY_RETENTION_DAYS: bad }), /RETENTION_DAYS/);
  }
});

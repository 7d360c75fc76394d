/**
 * Call history: one record per user per finished call (decisions §5, §8), keyed
 * `["call_history", userId, startMs, id]` so that "last n calls" and "calls of the last n days"
 * are one reverse range read that returns only what it answers.
 */
import { writeOnce } from "./platform_done.ts";
import type { Store } from "./store.ts";

/** How the call went for the record's user. */
export type CallStatus = "emitted" | "answered" | "missed";

export interface CallRecord {
  /** Unique for the user: the call's linkedId. */
  id: string;
  userId: number;
  /** When the call started (the first leg rang), ms since the epoch. */
  startMs: number;
  /** When the other party answered, null when nobody did. */
  answeredMs: number | null;
  endMs: number;
  srcUsername: string;
  dstUsername: string;
  srcNum: string;
  dstNum: string;
  status: CallStatus;
}

const historyKey = (record: CallRecord): Deno.KvKey => [
  "call_history",
  record.userId,
  record.startMs,
  record.id,
];

/** Writes `records` in one atomic operation per 500 (a call's records land together). */
export async function recordCalls(store: Store, records: CallRecord[]): Promise<void> {
  for (let start = 0; start < records.length; start += 500) {
    const chunk = records.slice(start, start + 500);
    await store.commit((op) => {
      for (const record of chunk) op.set(historyKey(record), record);
      return op;
    });
  }
}

/**
 * Writes the records of finished calls, each call's once whatever the number of times and
 * processes writing it (docs/asterisk.md, "Several svc processes"): a call whose `id` (the
 * platform event's) is marked as written is skipped, the others are written with their mark, a
 * call's records together, 10 calls per commit at most. A call without `id` is written as
 * {@link recordCalls} does. Answers how many calls were written.
 */
export async function recordCallsOnce(
  store: Store,
  calls: readonly { id?: string; records: CallRecord[] }[],
): Promise<number> {
  const commits = await writeOnce(store, "history", calls, (op, chunk) => {
    for (const call of chunk) for (const record of call.records) op.set(historyKey(record), record);
  });
  return commits.reduce((sum, commit) => sum + commit.items.length, 0);
}

/** The user's last `size` calls, newest first. */
export async function lastCalls(store: Store, userId: number, size: number): Promise<CallRecord[]> {
  const entries = await store.list<CallRecord>(
    { prefix: ["call_history", userId] },
    { reverse: true, limit: size },
  );
  return entries.map((entry) => entry.value);
}

/** The user's calls that started at or after `sinceMs`, newest first. */
export async function callsSince(
  store: Store,
  userId: number,
  sinceMs: number,
): Promise<CallRecord[]> {
  const entries = await store.list<CallRecord>(
    { start: ["call_history", userId, sinceMs], end: ["call_history", userId + 1] },
    { reverse: true },
  );
  return entries.map((entry) => entry.value);
}

/** History keys deleted per atomic operation when pruning. */
const PRUNE_CHUNK = 500;

/**
 * Deletes every record of a call that started before `beforeMs` (the retention,
 * `SVC_CALL_HISTORY_RETENTION_DAYS`); answers how many went. One range read per user with
 * history (the keys are by user, then start), so the cost is the users plus what is deleted.
 */
export async function pruneCallsBefore(store: Store, beforeMs: number): Promise<number> {
  let deleted = 0;
  let from: Deno.KvKey = ["call_history"];
  for (;;) {
    const [first] = await store.list<CallRecord>(
      { start: from, end: ["call_history", Infinity] },
      { limit: 1 },
    );
    if (!first) return deleted;
    const userId = first.key[1] as number;
    for (;;) {
      const old = await store.list<CallRecord>(
        { start: ["call_history", userId], end: ["call_history", userId, beforeMs] },
        { limit: PRUNE_CHUNK },
      );
      if (old.length === 0) break;
      await store.commit((op) => {
        for (const { key } of old) op.delete(key);
        return op;
      });
      deleted += old.length;
    }
    // the next user: ids are whole numbers, so half past this one comes after all its keys
    from = ["call_history", userId + 0.5];
  }
}

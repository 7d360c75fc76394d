/**
 * Call history: one record per user per finished call (decisions §5, §8), keyed
 * `["call_history", userId, startMs, id]` so that "last n calls" and "calls of the last n days"
 * are one reverse range read that returns only what it answers. Every write of a user's records
 * (and every deletion) sets that user's version key in the same atomic operation: a process keeps
 * the last calls it read and reads them again only once the version changed (`lastCalls`).
 */
import { writeOnce } from "./platform_done.ts";
import { batchedRead } from "./shared_read.ts";
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

/** The key every change of `userId`'s history sets. */
const versionKey = (userId: number): Deno.KvKey => ["call_history_version", userId];

/** Sets the version key of each user of `records` (once per user) in `op`. */
function changed(op: Deno.AtomicOperation, records: readonly { userId: number }[]): void {
  for (const userId of new Set(records.map((record) => record.userId))) {
    op.set(versionKey(userId), true);
  }
}

/** Writes `records` in one atomic operation per 500 (a call's records land together). */
export async function recordCalls(store: Store, records: CallRecord[]): Promise<void> {
  for (let start = 0; start < records.length; start += 500) {
    const chunk = records.slice(start, start + 500);
    await store.commit((op) => {
      for (const record of chunk) op.set(historyKey(record), record);
      changed(op, chunk);
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
    changed(op, chunk.flatMap((call) => call.records));
  });
  return commits.reduce((sum, commit) => sum + commit.items.length, 0);
}

/** The last calls a process read of a user, at a version of the user's history. */
interface KeptCalls {
  version: string | null;
  /** The store's change mark taken before `version` was read (`Store.changeMark`). */
  mark: number | null;
  /** The newest first, `read` of them asked. */
  records: readonly CallRecord[];
  read: number;
  /** The lists answered, by size: the same array while the version holds. */
  bySize: Map<number, readonly CallRecord[]>;
}

/** Users whose last calls a process keeps, per store (the least recently asked go first). */
const KEPT_USERS = 1000;
const keptCalls = new WeakMap<Store, Map<number, KeptCalls>>();
/** Per store, the version reads of the users asked while one runs, shared (`shared_read.ts`). */
const versionReads = new WeakMap<
  Store,
  (userIds: Iterable<number>) => Promise<Map<number, string | null>>
>();

function versionsOf(store: Store) {
  let read = versionReads.get(store);
  if (!read) {
    read = batchedRead(async (userIds: number[]) => {
      const versions = new Map<number, string | null>();
      for (let start = 0; start < userIds.length; start += 10) { // getMany's most
        const ids = userIds.slice(start, start + 10);
        const entries = await store.getMany(ids.map(versionKey));
        ids.forEach((id, i) => versions.set(id, entries[i]!.versionstamp));
      }
      return versions;
    });
    versionReads.set(store, read);
  }
  return read;
}

/**
 * The user's last `size` calls, newest first. What was read is kept and answered again (the same
 * array for the same size) while the user's version key, read after the caller asked, is the
 * same: a call written before, by any process, is in the answer. The version key is not even
 * read while the store's change mark is the one taken before it was (nothing was committed
 * since, by any process). Treat it as read-only.
 */
export async function lastCalls(
  store: Store,
  userId: number,
  size: number,
): Promise<readonly CallRecord[]> {
  let users = keptCalls.get(store);
  if (!users) keptCalls.set(store, users = new Map());
  const mark = store.changeMark();
  let kept = users.get(userId);
  const unchanged = mark !== null && kept?.mark === mark;
  const version = unchanged
    ? kept!.version
    : (await versionsOf(store)([userId])).get(userId) ?? null;
  kept = users.get(userId); // another request may have replaced it meanwhile
  users.delete(userId); // asked now: the last to go
  if (kept?.version !== version || (kept.read < size && kept.records.length === kept.read)) {
    const entries = await store.list<CallRecord>(
      { prefix: ["call_history", userId] },
      { reverse: true, limit: size },
    );
    const records = entries.map((entry) => entry.value);
    kept = { version, mark, records, read: size, bySize: new Map([[size, records]]) };
  } else if (!unchanged) {
    kept.mark = mark; // checked at this mark
  }
  users.set(userId, kept);
  if (users.size > KEPT_USERS) users.delete(users.keys().next().value!);
  let answer = kept.bySize.get(size);
  if (!answer) {
    if (kept.bySize.size >= 8) kept.bySize.clear();
    kept.bySize.set(size, answer = kept.records.slice(0, size));
  }
  return answer;
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
        changed(op, [{ userId }]);
        return op;
      });
      deleted += old.length;
    }
    // the next user: ids are whole numbers, so half past this one comes after all its keys
    from = ["call_history", userId + 0.5];
  }
}

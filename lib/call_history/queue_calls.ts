/**
 * The history of queue calls (docs/cti.md, "Call history"): one record per call and queue, built
 * from the platform's queue call events (`joined`, `answered`, `abandoned`, `timeout`,
 * `completed`), the same on both platforms. The user call history (`lib/store/call_history.ts`)
 * keeps each user's calls; this keeps what only the queues know: who waited in which queue, how
 * long, and which agent took the call. It answers a queue's calls, an agent's and a caller's.
 *
 * Keys (this module is the only one that knows them):
 * - `["queue_calls", queueId, joinedMs, linkedId]` → {@link QueueCallRecord}: a queue's calls in
 *   the order they joined, read backwards for the last ones;
 * - `["queue_call_refs", queueId, linkedId]` → `joinedMs`: where an event finds its call's record;
 * - `["queue_calls_by_agent", agentId, joinedMs, queueId, linkedId]` → `true`, once answered;
 * - `["queue_calls_by_caller", callerNumber, joinedMs, queueId, linkedId]` → `true`.
 *
 * Each event is written once whatever the number of processes handing it over (its id marked in
 * the same commit, `lib/store/platform_done.ts`), in a commit that checks the record it changes
 * did not change meanwhile. An event whose call has no record yet (its `joined` came before this
 * version, or was lost) starts one, dated back by the wait or talk time it carries. Records go
 * with the call history's retention (`SVC_CALL_HISTORY_RETENTION_DAYS`).
 */
import type { QueueCallEvent } from "../platform/port.ts";
import { eachId } from "../store/id_ranges.ts";
import { doneKey, markDone } from "../store/platform_done.ts";
import type { Store } from "../store/store.ts";

/** Where a queue call stands. */
export type QueueCallOutcome = "waiting" | "answered" | "completed" | "abandoned" | "timeout";

export interface QueueCallRecord {
  queueId: number;
  linkedId: string;
  /** When it joined the queue (ms since the epoch). */
  joinedMs: number;
  callerNumber: string;
  callerName: string;
  /** The agent that answered; null while nobody did. */
  agentId: number | null;
  answeredMs: number | null;
  /** When it left: hung up after the talk, abandoned or timed out; null while going on. */
  endMs: number | null;
  outcome: QueueCallOutcome;
}

/** A caller number longer than this gets no caller index (a key's size is bounded). */
const MAX_INDEXED_NUMBER = 256;

const recordKey = (record: Pick<QueueCallRecord, "queueId" | "joinedMs" | "linkedId">) => [
  "queue_calls",
  record.queueId,
  record.joinedMs,
  record.linkedId,
];
const refKey = (queueId: number, linkedId: string): Deno.KvKey => [
  "queue_call_refs",
  queueId,
  linkedId,
];
const agentKey = (record: QueueCallRecord, agentId: number): Deno.KvKey => [
  "queue_calls_by_agent",
  agentId,
  record.joinedMs,
  record.queueId,
  record.linkedId,
];
const callerKey = (record: QueueCallRecord): Deno.KvKey => [
  "queue_calls_by_caller",
  record.callerNumber,
  record.joinedMs,
  record.queueId,
  record.linkedId,
];

/** The call `event` is about as it is after the event, handled at `nowMs`. */
export function nextRecord(
  current: QueueCallRecord | null,
  event: QueueCallEvent,
  nowMs: number,
): QueueCallRecord {
  const start = (backMs: number): QueueCallRecord => ({
    queueId: event.queueId,
    linkedId: event.linkedId,
    joinedMs: nowMs - backMs,
    callerNumber: event.callerNumber,
    callerName: event.callerName,
    agentId: null,
    answeredMs: null,
    endMs: null,
    outcome: "waiting",
  });
  switch (event.event) {
    case "joined":
      return current ?? start(0);
    case "answered":
      return {
        ...current ?? start(event.waitMs ?? 0),
        agentId: event.agentId ?? current?.agentId ?? null,
        answeredMs: nowMs,
        outcome: "answered",
      };
    case "abandoned":
    case "timeout":
      return { ...current ?? start(event.waitMs ?? 0), endMs: nowMs, outcome: event.event };
    case "completed": {
      const base = current ?? start(event.talkMs ?? 0);
      return {
        ...base,
        agentId: base.agentId ?? event.agentId ?? null,
        answeredMs: base.answeredMs ?? nowMs - (event.talkMs ?? 0),
        endMs: nowMs,
        outcome: "completed",
      };
    }
  }
}

/** How many times an event's commit is tried against a record that keeps moving. */
const ATTEMPTS = 5;

/**
 * Writes what each of `events` (queue call events, in order) tells of its call, handled at
 * `nowMs`, each once (its id).
 */
export async function recordQueueCalls(
  store: Store,
  events: readonly QueueCallEvent[],
  nowMs: number,
): Promise<void> {
  for (const event of events) await recordOne(store, event, nowMs);
}

async function recordOne(store: Store, event: QueueCallEvent, nowMs: number): Promise<void> {
  const ref = refKey(event.queueId, event.linkedId);
  const mark = event.id === undefined ? null : doneKey("queue_history", event.id);
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const [refEntry, done] = await store.getMany<unknown>(mark ? [ref, mark] : [ref]);
    if (done?.versionstamp) return; // written by another process
    const joinedMs = refEntry!.value as number | null;
    const currentEntry = joinedMs === null ? null : await store.get<QueueCallRecord>(
      recordKey({ queueId: event.queueId, joinedMs, linkedId: event.linkedId }),
    );
    const current = currentEntry?.value ?? null;
    const next = nextRecord(current, event, nowMs);
    const result = await store.commit((op) => {
      op.check({ key: ref, versionstamp: refEntry!.versionstamp });
      if (currentEntry) op.check(currentEntry);
      if (event.id !== undefined) markDone(op, "queue_history", event.id);
      op.set(ref, next.joinedMs).set(recordKey(next), next);
      if (next.agentId !== null) op.set(agentKey(next, next.agentId), true);
      if (next.callerNumber && next.callerNumber.length <= MAX_INDEXED_NUMBER) {
        op.set(callerKey(next), true);
      }
      return op;
    });
    if (result.ok) return;
  }
  throw new Error(`queue call ${event.linkedId}: its record kept changing`);
}

/** The records the index keys `keys` name (their last three parts), in the same order. */
async function recordsOf(store: Store, keys: Deno.KvKey[]): Promise<QueueCallRecord[]> {
  const records: QueueCallRecord[] = [];
  for (let start = 0; start < keys.length; start += 10) { // getMany's most
    const chunk = keys.slice(start, start + 10).map((key) => {
      const [joinedMs, queueId, linkedId] = key.slice(-3) as [number, number, string];
      return recordKey({ queueId, joinedMs, linkedId });
    });
    for (const entry of await store.getMany<QueueCallRecord>(chunk)) {
      if (entry.value) records.push(entry.value);
    }
  }
  return records;
}

/** The last `size` calls that joined the queue, newest first. */
export async function lastQueueCalls(
  store: Store,
  queueId: number,
  size: number,
): Promise<QueueCallRecord[]> {
  const entries = await store.list<QueueCallRecord>(
    { prefix: ["queue_calls", queueId] },
    { reverse: true, limit: size },
  );
  return entries.map((entry) => entry.value);
}

/** The last `size` queue calls the agent answered, newest first. */
export async function lastAgentQueueCalls(
  store: Store,
  agentId: number,
  size: number,
): Promise<QueueCallRecord[]> {
  const keys = await store.list(
    { prefix: ["queue_calls_by_agent", agentId] },
    { reverse: true, limit: size },
  );
  return await recordsOf(store, keys.map((entry) => entry.key));
}

/** The last `size` queue calls from `callerNumber`, newest first, and how many there are. */
export async function callerQueueCalls(
  store: Store,
  callerNumber: string,
  size: number,
): Promise<{ total: number; records: QueueCallRecord[] }> {
  if (!callerNumber || callerNumber.length > MAX_INDEXED_NUMBER) return { total: 0, records: [] };
  const keys = await store.list(
    { prefix: ["queue_calls_by_caller", callerNumber] },
    { reverse: true },
  );
  return {
    total: keys.length,
    records: await recordsOf(store, keys.slice(0, size).map((entry) => entry.key)),
  };
}

/** Records deleted per atomic operation when pruning (4 keys each). */
const PRUNE_CHUNK = 200;

/**
 * Deletes the calls that joined a queue before `beforeMs`, with their keys; answers how many went.
 * One range read per queue with calls, then what is deleted.
 */
export async function pruneQueueCallsBefore(store: Store, beforeMs: number): Promise<number> {
  let deleted = 0;
  await eachId(store, "queue_calls", async (queueId) => {
    for (;;) {
      const old = await store.list<QueueCallRecord>(
        { start: ["queue_calls", queueId], end: ["queue_calls", queueId, beforeMs] },
        { limit: PRUNE_CHUNK },
      );
      if (old.length === 0) return;
      await store.commit((op) => {
        for (const { key, value } of old) {
          op.delete(key).delete(refKey(value.queueId, value.linkedId)).delete(callerKey(value));
          if (value.agentId !== null) op.delete(agentKey(value, value.agentId));
        }
        return op;
      });
      deleted += old.length;
    }
  });
  return deleted;
}

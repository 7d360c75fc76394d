/**
 * The history of queue calls (docs/cti.md, "Call history"): who waited in which queue, how long,
 * and which agent took the call, from the platform's queue call events (`joined`, `answered`,
 * `abandoned`, `timeout`, `completed`), the same on both platforms. The user call history
 * (`lib/store/call_history.ts`) keeps each user's calls; this answers a queue's calls, an agent's
 * and a caller's.
 *
 * Each event is written as it is, a fact of its call, without reading anything: the writes go in
 * the commit in which supervision counts the same event (`Supervision.handle`,
 * `lib/supervision/mod.ts`), each event's once whatever the number of processes handing it over,
 * so keeping the history costs no commit of its own. A call's record is made when it is read, by
 * folding its facts in order ({@link nextRecord}).
 *
 * Keys (this module is the only one that knows them), each written to expire after the call
 * history's retention (`SVC_CALL_HISTORY_RETENTION_DAYS`; Deno KV deletes expired keys in the
 * background, and the reads leave out the calls older than the retention):
 * - `["queue_call_facts", queueId, linkedId, event]` → {@link Fact};
 * - `["queue_calls", queueId, joinedMs, linkedId]` → `true`, at `joined`: a queue's calls in the
 *   order they joined;
 * - `["queue_calls_by_agent", agentId, answeredMs, queueId, linkedId]` → `true`, at `answered`;
 * - `["queue_calls_by_caller", callerNumber, joinedMs, queueId, linkedId]` → `true`, at `joined`.
 */
import type { QueueCallEvent } from "../platform/port.ts";
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

/** One event of a call, as kept: the event (its id left out) and when it was handled. */
interface Fact {
  event: Omit<QueueCallEvent, "id">;
  atMs: number;
}

/** The order a call's facts are folded in. */
const FACT_ORDER: QueueCallEvent["event"][] = [
  "joined",
  "answered",
  "abandoned",
  "timeout",
  "completed",
];

/** A caller number longer than this gets no caller index (a key's size is bounded). */
const MAX_INDEXED_NUMBER = 256;

const factKey = (queueId: number, linkedId: string, event: string): Deno.KvKey => [
  "queue_call_facts",
  queueId,
  linkedId,
  event,
];

/** The call `event` is about as it is after the event, handled at `nowMs`. */
export function nextRecord(
  current: QueueCallRecord | null,
  event: Omit<QueueCallEvent, "id">,
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

/**
 * Puts in `op` what each of `events` (queue call events handled at `nowMs`) tells of its call,
 * every key expiring after `keepMs`. Only sets: an event written twice writes the same.
 */
export function queueCallMutations(
  op: Deno.AtomicOperation,
  events: readonly QueueCallEvent[],
  nowMs: number,
  keepMs: number,
): void {
  const options = { expireIn: keepMs };
  for (const { id: _, ...event } of events) {
    const { queueId, linkedId, callerNumber } = event;
    op.set(factKey(queueId, linkedId, event.event), { event, atMs: nowMs } satisfies Fact, options);
    if (event.event === "joined") {
      op.set(["queue_calls", queueId, nowMs, linkedId], true, options);
      if (callerNumber && callerNumber.length <= MAX_INDEXED_NUMBER) {
        op.set(["queue_calls_by_caller", callerNumber, nowMs, queueId, linkedId], true, options);
      }
    }
    if (event.event === "answered" && event.agentId !== undefined) {
      op.set(["queue_calls_by_agent", event.agentId, nowMs, queueId, linkedId], true, options);
    }
  }
}

/** The call `linkedId` of `queueId` as its facts tell it, or null when none is left. */
async function recordOf(
  store: Store,
  queueId: number,
  linkedId: string,
): Promise<QueueCallRecord | null> {
  const facts = (await store.list<Fact>({ prefix: ["queue_call_facts", queueId, linkedId] }))
    .map((entry) => entry.value)
    .sort((a, b) => FACT_ORDER.indexOf(a.event.event) - FACT_ORDER.indexOf(b.event.event));
  let record: QueueCallRecord | null = null;
  for (const fact of facts) record = nextRecord(record, fact.event, fact.atMs);
  return record;
}

/** A call: its queue and linkedId. */
type CallId = [queueId: number, linkedId: string];

/** The records of `calls`, each once, in order, those that joined at `sinceMs` or later. */
async function recordsOf(
  store: Store,
  calls: CallId[],
  sinceMs: number,
): Promise<QueueCallRecord[]> {
  const once = new Map(calls.map((call) => [`${call[0]}/${call[1]}`, call]));
  const records = await Promise.all(
    [...once.values()].map(([queueId, linkedId]) => recordOf(store, queueId, linkedId)),
  );
  return records.filter((record): record is QueueCallRecord =>
    record !== null && record.joinedMs >= sinceMs
  );
}

/**
 * The calls the index `name`/`id` names at `sinceMs` or later, newest first (`limit` at most):
 * the agent's and caller's indexes end with the queue and the linkedId.
 */
async function indexed(
  store: Store,
  name: string,
  id: number | string,
  sinceMs: number,
  limit?: number,
): Promise<CallId[]> {
  const entries = await store.list(
    { start: [name, id, sinceMs], end: [name, id, Infinity] },
    { reverse: true, limit },
  );
  return entries.map(({ key }) => key.slice(-2) as CallId);
}

/** The last `size` calls that joined the queue since `sinceMs`, newest first. */
export async function lastQueueCalls(
  store: Store,
  queueId: number,
  size: number,
  sinceMs: number,
): Promise<QueueCallRecord[]> {
  const entries = await store.list(
    { start: ["queue_calls", queueId, sinceMs], end: ["queue_calls", queueId, Infinity] },
    { reverse: true, limit: size },
  );
  const calls = entries.map(({ key }): CallId => [queueId, key[3] as string]);
  return await recordsOf(store, calls, sinceMs);
}

/** The last `size` queue calls the agent answered since `sinceMs`, newest first. */
export async function lastAgentQueueCalls(
  store: Store,
  agentId: number,
  size: number,
  sinceMs: number,
): Promise<QueueCallRecord[]> {
  const calls = await indexed(store, "queue_calls_by_agent", agentId, sinceMs, size);
  return await recordsOf(store, calls, sinceMs);
}

/**
 * The last `size` queue calls from `callerNumber` since `sinceMs` to the queues `inQueue` keeps
 * (a supervisor's), newest first, and how many there are.
 */
export async function callerQueueCalls(
  store: Store,
  callerNumber: string,
  size: number,
  sinceMs: number,
  inQueue: (queueId: number) => boolean = () => true,
): Promise<{ total: number; records: QueueCallRecord[] }> {
  if (!callerNumber || callerNumber.length > MAX_INDEXED_NUMBER) return { total: 0, records: [] };
  const calls = (await indexed(store, "queue_calls_by_caller", callerNumber, sinceMs))
    .filter(([queueId]) => inQueue(queueId));
  return { total: calls.length, records: await recordsOf(store, calls.slice(0, size), sinceMs) };
}

/**
 * The store layout of supervision (docs/supervision.md); the only module that knows its keys:
 *
 * - `["supervision_day", day, "queue" | "agent", id, stat]` → `Deno.KvU64`: one counter of one
 *   queue or agent on one day (`YYYY-MM-DD`, in the queue's time zone; agents: the default one).
 *   Counters only grow, by atomic `sum` (or `max`) mutations, so writers never lose an update,
 *   whichever process writes. Days sort as text, so a range of days is one range of keys.
 * - `["supervision_interval", day, queueId, slot, stat]` → `Deno.KvU64`: one counter of one queue
 *   in one interval of its day (`slot`: the interval's index from the day's start, see
 *   `intervalOf` of `lib/supervision/days.ts`), the day's curve. Written in the same commits as
 *   the day counters, the same way.
 * - `["supervision_agent", agentId]` → {@link AgentMark}: the state an agent was last seen
 *   entering, and since when, as the counting saw it: when its next state comes, the time spent
 *   in this one (a pause, a login) is added to the counters of the days it spans.
 *
 * - `["supervision_version"]`: set by every commit that writes counters or marks (its value means
 *   nothing, its versionstamp moves with them). A reader that saw the same versionstamp before
 *   keeps what it read then ({@link readDayCounters}, {@link agentMarks}): one read of this key
 *   instead of a range of thousands, and what any process wrote shows at the next read.
 *
 * Days older than the retention are deleted by {@link pruneDaysBefore}.
 */
import type { AgentStateName } from "../platform/port.ts";
import { doneKey, markDone, writeOnce } from "./platform_done.ts";
import { sharedRead } from "./shared_read.ts";
import type { Store } from "./store.ts";

const DAY = "supervision_day";
const MARK = "supervision_agent";
const INTERVAL = "supervision_interval";
const VERSION: Deno.KvKey = ["supervision_version"];

/** A queue's counters of a day. */
export const QUEUE_STATS = [
  /** Calls that joined the queue. */
  "entered",
  /** Calls an agent answered. */
  "answered",
  /** Calls whose caller hung up while waiting. */
  "abandoned",
  /** Of those, the ones that waited less than the short-abandon seconds. */
  "abandoned_short",
  /** Calls that left on the queue's timeout. */
  "timeout",
  /** Answered calls that waited at most the service level. */
  "answered_in_sl",
  /** The waits of the answered calls, ms, summed. */
  "wait_ms",
  /** The longest wait of an answered call, ms. */
  "wait_max_ms",
  /** The talk times of the calls completed (the agent hung up or was hung up on), ms, summed. */
  "talk_ms",
  /** The calls completed. */
  "talk_calls",
] as const;

/** An agent's counters of a day. */
export const AGENT_STATS = [
  /** Queue calls the agent answered. */
  "answered",
  /** Queue calls that rang the agent and that it did not answer. */
  "missed",
  /** Time on queue calls, ms. */
  "talk_ms",
  /** Time in `AgentOnPause`, ms. */
  "pause_ms",
  /** Time logged in, ms. */
  "login_ms",
] as const;

/** A queue's counters of an interval of its day: what its curve draws. */
export const INTERVAL_STATS = [
  /** Calls that joined the queue. */
  "entered",
  /** Calls an agent answered. */
  "answered",
  /** Of those, the ones that waited at most the service level. */
  "answered_in_sl",
  /** Calls whose caller hung up while waiting. */
  "abandoned",
  /** Calls that left on the queue's timeout. */
  "timeout",
  /** The most calls waiting when one joined (its place in the queue), raised by `max`. */
  "waiting_max",
] as const;

export type QueueStat = typeof QUEUE_STATS[number];
export type IntervalStat = typeof INTERVAL_STATS[number];
export type AgentStat = typeof AGENT_STATS[number];

/** One change of a counter: `add` to it, or raise it to `max`. */
export type CounterChange =
  & { day: string; op: "add" | "max"; value: number }
  & (
    | { kind: "queue"; id: number; stat: QueueStat }
    | { kind: "agent"; id: number; stat: AgentStat }
    | { kind: "interval"; id: number; slot: number; stat: IntervalStat }
  );

/** The counters of one queue or agent on one day; a counter never written reads 0. */
export interface DayCounters<S extends string> {
  day: string;
  id: number;
  counters: Record<S, number>;
}

/** Every counter of some days. */
export interface CountersRead {
  queues: DayCounters<QueueStat>[];
  agents: DayCounters<AgentStat>[];
}

/** The state an agent was last seen entering by the counting, since when, and its login. */
export interface AgentMark {
  state: AgentStateName;
  sinceMs: number;
  /** When it logged in; null when logged out. */
  loggedSinceMs: number | null;
}

const counterKey = (change: CounterChange): Deno.KvKey =>
  change.kind === "interval"
    ? [INTERVAL, change.day, change.id, change.slot, change.stat]
    : [DAY, change.day, change.kind, change.id, change.stat];
const markKey = (agentId: number): Deno.KvKey => [MARK, agentId];

/** Mutations per commit: Deno KV takes 1,000 at most (a mark and its check go beside them). */
const CHUNK = 500;

/**
 * Puts `changes` in `op` (at most a few hundred: see {@link addCounters} for more), with the
 * version key's move: call it once per commit, in every commit that writes counters or marks. A
 * value is rounded to a whole number and a negative one is taken as 0.
 */
export function counterMutations(op: Deno.AtomicOperation, changes: CounterChange[]): void {
  for (const change of changes) {
    const value = BigInt(Math.max(0, Math.round(change.value)));
    if (change.op === "add") op.sum(counterKey(change), value);
    else op.max(counterKey(change), value);
  }
  op.set(VERSION, true);
}

/**
 * Applies `changes` to the counters in atomic commits (each a whole set of mutations: a commit
 * that fails changed nothing).
 *
 * @example
 * await addCounters(store, [{ day: "2026-01-01", kind: "queue", id: 1, stat: "entered", op: "add", value: 1 }]);
 */
export async function addCounters(store: Store, changes: CounterChange[]): Promise<void> {
  for (let start = 0; start < changes.length; start += CHUNK) {
    const chunk = changes.slice(start, start + CHUNK);
    await store.commit((op) => {
      counterMutations(op, chunk);
      return op;
    });
  }
}

/**
 * Every counter of the days `from` to `to` (both included), by day then id; counters never
 * written read 0.
 */
export async function readCounters(store: Store, from: string, to: string): Promise<CountersRead> {
  // "\uffff" after a day sorts after every key of that day
  const entries = await store.list<Deno.KvU64>({ start: [DAY, from], end: [DAY, `${to}\uffff`] });
  const queues = new Map<string, DayCounters<QueueStat>>();
  const agents = new Map<string, DayCounters<AgentStat>>();
  for (const { key, value } of entries) {
    const [, day, kind, id, stat] = key as [string, string, string, number, string];
    if (!(value instanceof Deno.KvU64)) continue;
    if (kind === "queue" && (QUEUE_STATS as readonly string[]).includes(stat)) {
      const row = queues.get(`${day}/${id}`) ??
        { day, id, counters: zeros(QUEUE_STATS) };
      queues.set(`${day}/${id}`, row);
      row.counters[stat as QueueStat] = Number(value.value);
    } else if (kind === "agent" && (AGENT_STATS as readonly string[]).includes(stat)) {
      const row = agents.get(`${day}/${id}`) ?? { day, id, counters: zeros(AGENT_STATS) };
      agents.set(`${day}/${id}`, row);
      row.counters[stat as AgentStat] = Number(value.value);
    }
  }
  const order = <S extends string>(a: DayCounters<S>, b: DayCounters<S>) =>
    a.day === b.day ? a.id - b.id : a.day < b.day ? -1 : 1;
  return { queues: [...queues.values()].sort(order), agents: [...agents.values()].sort(order) };
}

/** Every stat of `stats` at 0. */
export function zeros<S extends string>(stats: readonly S[]): Record<S, number> {
  return Object.fromEntries(stats.map((stat) => [stat, 0])) as Record<S, number>;
}

/** The agent's mark with its versionstamp (null, null when it has none). */
export async function getAgentMark(
  store: Store,
  agentId: number,
): Promise<{ mark: AgentMark | null; versionstamp: string | null }> {
  const entry = await store.get<AgentMark>(markKey(agentId));
  return { mark: entry.value, versionstamp: entry.versionstamp };
}

/**
 * As {@link getAgentMark}, and whether the state change of the platform event `eventId` was
 * counted already (`lib/store/platform_done.ts`), in one read.
 */
export async function getAgentMarkFor(
  store: Store,
  agentId: number,
  eventId: string,
): Promise<{ mark: AgentMark | null; versionstamp: string | null; counted: boolean }> {
  const [entry, done] = await store.getMany<unknown>([
    markKey(agentId),
    doneKey("supervision", eventId),
  ]);
  return {
    mark: entry!.value as AgentMark | null,
    versionstamp: entry!.versionstamp,
    counted: done!.versionstamp !== null,
  };
}

/** Every agent's mark, by agent id. */
export async function listAgentMarks(store: Store): Promise<Map<number, AgentMark>> {
  const entries = await store.list<AgentMark>({ prefix: [MARK] });
  return new Map(entries.map((entry) => [Number(entry.key[1]), entry.value]));
}

/**
 * Writes the agent's new mark with the counter changes its state change brings, in one commit
 * checked against the mark as it was read (`versionstamp`); answers false when it moved meanwhile
 * (nothing was written: read it again). With `eventId` (the state change's platform event id),
 * the commit also marks that event counted, and fails when it already was.
 */
export async function markAgent(
  store: Store,
  agentId: number,
  versionstamp: string | null,
  mark: AgentMark,
  changes: CounterChange[],
  eventId?: string,
): Promise<boolean> {
  const result = await store.commit((op) => {
    op.check({ key: markKey(agentId), versionstamp });
    if (eventId !== undefined) markDone(op, "supervision", eventId);
    counterMutations(op, changes);
    return op.set(markKey(agentId), mark);
  });
  return result.ok;
}

/**
 * Applies the counter changes of queue call events, each event's once (its `id`, see
 * `lib/store/platform_done.ts`): `changes` tells an event's; events already counted are skipped,
 * the others counted with their mark, 10 per commit at most, and with what `more` puts in the
 * same commit for them (sets only: it may be called again for the same events). Answers the
 * events counted.
 */
export async function addCountersOnce<T extends { id?: string }>(
  store: Store,
  events: readonly T[],
  changes: (event: T) => CounterChange[],
  more?: (op: Deno.AtomicOperation, events: T[]) => void,
): Promise<T[]> {
  const commits = await writeOnce(store, "supervision", events, (op, chunk) => {
    counterMutations(op, chunk.flatMap(changes));
    more?.(op, chunk);
  });
  return commits.flatMap((commit) => commit.items);
}

/**
 * Deletes the counters of the days before `day`, those of their intervals too; answers how many
 * counters went.
 */
export async function pruneDaysBefore(store: Store, day: string): Promise<number> {
  let deleted = 0;
  for (const prefix of [DAY, INTERVAL]) {
    for (;;) {
      const entries = await store.list({ prefix: [prefix], end: [prefix, day] }, { limit: CHUNK });
      if (entries.length === 0) break;
      await store.commit((op) => {
        for (const { key } of entries) op.delete(key);
        return op.set(VERSION, true);
      });
      deleted += entries.length;
    }
  }
  return deleted;
}

/**
 * What was read at one versionstamp of the version key, per store: reads of the same thing asked
 * at that version share one read (a promise, kept while the version stays); another version
 * starts afresh.
 */
const snapshots = new WeakMap<
  Store,
  { version: string | null; reads: Map<string, Promise<unknown>> }
>();
/** Per store, the version key's reads, shared by the callers asking while one runs. */
const versionReads = new WeakMap<Store, () => Promise<string | null>>();

/**
 * `read()` as of now: its answer kept from a caller that saw the same versionstamp, else read
 * again. Each answer comes from a read begun after the version key was read, itself read after
 * the caller asked (`sharedRead`), so it holds every commit made before the caller asked, by any
 * process.
 */
async function atCurrentVersion<T>(store: Store, name: string, read: () => Promise<T>): Promise<T> {
  let versionRead = versionReads.get(store);
  if (!versionRead) {
    versionRead = sharedRead(async () => (await store.get(VERSION)).versionstamp);
    versionReads.set(store, versionRead);
  }
  const version = await versionRead();
  // never written: a writer that does not move it (an older svc on the same store) may be at work
  if (version === null) return await read();
  let snapshot = snapshots.get(store);
  if (snapshot?.version !== version) {
    snapshot = { version, reads: new Map() };
    snapshots.set(store, snapshot);
  }
  const kept = snapshot.reads.get(name) as Promise<T> | undefined;
  if (kept) return await kept;
  const reading = read();
  const reads = snapshot.reads;
  reads.set(name, reading);
  reading.catch(() => {
    if (reads.get(name) === reading) reads.delete(name); // a failed read is not kept
  });
  return await reading;
}

/**
 * The counters of every queue (or every agent) on `day`, by id; an id with no counter written
 * that day is absent. Kept while no counter or mark is written (see {@link atCurrentVersion}):
 * treat the answer as read-only.
 *
 * @example
 * const today = await readDayCounters(store, "2026-01-01", "agent");
 * today.get(agentId)?.answered;
 */
export function readDayCounters(
  store: Store,
  day: string,
  kind: "queue",
): Promise<ReadonlyMap<number, Readonly<Record<QueueStat, number>>>>;
export function readDayCounters(
  store: Store,
  day: string,
  kind: "agent",
): Promise<ReadonlyMap<number, Readonly<Record<AgentStat, number>>>>;
export function readDayCounters(
  store: Store,
  day: string,
  kind: "queue" | "agent",
): Promise<ReadonlyMap<number, Readonly<Record<string, number>>>> {
  return atCurrentVersion(store, `day/${day}/${kind}`, async () => {
    const stats: readonly string[] = kind === "queue" ? QUEUE_STATS : AGENT_STATS;
    const entries = await store.list<Deno.KvU64>({ prefix: [DAY, day, kind] });
    const rows = new Map<number, Record<string, number>>();
    for (const { key, value } of entries) {
      const [, , , id, stat] = key as [string, string, string, number, string];
      if (!(value instanceof Deno.KvU64) || !stats.includes(stat)) continue;
      let row = rows.get(id);
      if (!row) rows.set(id, row = zeros(stats));
      row[stat] = Number(value.value);
    }
    return rows;
  });
}

/**
 * The counters of queue `queueId` in each interval of `day` that has any, by interval index
 * (`slot`); kept while no counter or mark is written (see {@link atCurrentVersion}): treat the
 * answer as read-only.
 *
 * @example
 * const intervals = await readIntervalCounters(store, "2026-01-01", 1);
 * intervals.get(32)?.entered; // calls that joined from 08:00 to 08:15 (UTC)
 */
export function readIntervalCounters(
  store: Store,
  day: string,
  queueId: number,
): Promise<ReadonlyMap<number, Readonly<Record<IntervalStat, number>>>> {
  return atCurrentVersion(store, `interval/${day}/${queueId}`, async () => {
    const entries = await store.list<Deno.KvU64>({ prefix: [INTERVAL, day, queueId] });
    const slots = new Map<number, Record<IntervalStat, number>>();
    for (const { key, value } of entries) {
      const [, , , slot, stat] = key as [string, string, number, number, string];
      if (!(value instanceof Deno.KvU64) || !INTERVAL_STATS.includes(stat as IntervalStat)) {
        continue;
      }
      let row = slots.get(slot);
      if (!row) slots.set(slot, row = zeros(INTERVAL_STATS));
      row[stat as IntervalStat] = Number(value.value);
    }
    return slots;
  });
}

/**
 * Every agent's mark, by agent id, as {@link listAgentMarks} reads it, kept while no counter or
 * mark is written (see {@link atCurrentVersion}): treat it as read-only.
 */
export function agentMarks(store: Store): Promise<ReadonlyMap<number, AgentMark>> {
  return atCurrentVersion(store, "marks", () => listAgentMarks(store));
}

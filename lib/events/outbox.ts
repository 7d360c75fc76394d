/**
 * The store layout of the event export (decisions §7); the only module that knows its keys:
 *
 * - `["outbox", id]` → {@link OutboxEntry}: an event still to post. Ids sort in publish order
 *   (time first, see {@link EventIds}), so listing the prefix reads the events in order.
 * - `["event_log", id]` → {@link LoggedEvent}, written with `expireIn` = the retention: what the
 *   1.0 handshake reposts.
 * - `["dead_letters", id]` → {@link OutboxEntry}: events given up on after 24 h of failures.
 * - `["outbox_lease"]` → a lease (`lib/store/lease.ts`): which process delivers right now.
 * - `["outbox_last_error"]` → {@link LastError}: the latest failed post, for `GET /events/deliveries`.
 * - `["outbox_signal"]`: rewritten by every commit that adds to the outbox, so that a process polls
 *   one key (its versionstamp) to learn that another process published.
 * - `["event_log_signal", writer]`: rewritten by every commit of a process (`writer`: the random
 *   suffix of its ids) that adds to the event log, so that the live feed of another process
 *   (`lib/events/feed.ts`) reads the log only when someone else wrote to it. Deno KV's `watch` does
 *   not see other processes' commits on a local file, hence a poll.
 *
 * Every write that touches many entries goes out in atomic chunks that stay under the Deno KV
 * limits (1,000 mutations, 800 KiB, 10 checks per commit).
 */
import { type LeaseTaken, releaseLeaseAt, takeLeaseAt } from "../store/lease.ts";
import type { Store } from "../store/store.ts";
import type { EventMessage, ExportedMessage } from "./messages.ts";

/** An event waiting in the outbox, or given up on in the dead letters. */
export interface OutboxEntry {
  id: string;
  /** When it was published (ms since the epoch). */
  createdAt: number;
  /** Posts tried so far. */
  attempts: number;
  /** Not posted before this time (ms): the backoff after a failure. */
  dueAt: number;
  /** Why the latest post failed; null before the first failure. */
  lastError: string | null;
  event: ExportedMessage;
}

/** An event kept for the 1.0 handshake. */
export interface LoggedEvent {
  createdAt: number;
  event: ExportedMessage;
}

export interface LastError {
  /** ISO time of the failure. */
  at: string;
  message: string;
}

const OUTBOX = "outbox";
const EVENT_LOG = "event_log";
const DEAD_LETTERS = "dead_letters";
const LEASE_KEY: Deno.KvKey = ["outbox_lease"];
const LAST_ERROR_KEY: Deno.KvKey = ["outbox_last_error"];
const SIGNAL_KEY: Deno.KvKey = ["outbox_signal"];
const LOG_SIGNAL = "event_log_signal";
/** A writer's log signal outlives its last write by this much, then vanishes by itself. */
const LOG_SIGNAL_MS = 24 * 3600_000;

/** At most this many mutations per commit (the Deno KV limit is 1,000; two left for the signals). */
const MAX_MUTATIONS = 998;
/** At most this many bytes of values per commit (the Deno KV limit is 800 KiB; keys count too). */
const MAX_BYTES = 600_000;
/** At most this many checks per commit (the Deno KV limit is 10). */
const MAX_CHECKS = 10;

/**
 * Makes ids that sort in publish order: `<ms, 13 digits>-<counter, 6 digits>-<4 random chars>`.
 * The time never goes backwards within a process (a clock step back keeps the last time), the
 * counter orders ids of the same millisecond, and the random part keeps two processes' ids apart.
 */
export class EventIds {
  #lastMs = 0;
  #counter = 0;
  /** This process's part of every id: tells its events from other processes'. */
  readonly suffix = randomSuffix();

  constructor(private readonly now: () => number) {}

  /**
   * A new id; with `above`, one greater than it too. A change passes the id of the last event of
   * the same record, read in its checked commit: another process may have drawn that one from a
   * clock a little ahead, or in the same millisecond with a suffix sorting after this one's.
   */
  next(above: string | null = null): { id: string; ms: number } {
    let ms = Math.max(this.now(), this.#lastMs);
    let counter = ms === this.#lastMs ? this.#counter + 1 : 0;
    if (above !== null) {
      const aboveMs = idTime(above);
      const aboveCounter = Number(above.slice(14, 20));
      if (aboveMs > ms) [ms, counter] = [aboveMs, aboveCounter + 1];
      else if (aboveMs === ms) counter = Math.max(counter, aboveCounter + 1);
    }
    this.#lastMs = ms;
    this.#counter = counter;
    const id = `${pad(ms, 13)}-${pad(counter, 6)}-${this.suffix}`;
    return { id, ms };
  }
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

function randomSuffix(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return Array.from(bytes, (byte) => alphabet[byte % alphabet.length]).join("");
}

/** The smallest id of an event published at `ms` or later. */
export function idFrom(ms: number): string {
  return pad(Math.max(0, ms), 13);
}

/** The writer (an {@link EventIds} suffix) of an event id. */
export const idWriter = (id: string): string => id.slice(21);

/** Where new events go: the outbox (with a URL), the event log (for the retention). */
export interface EventTargets {
  toOutbox: boolean;
  /** How long the event log keeps them; 0: not logged. */
  retentionMs: number;
  /** The writing process (its ids' suffix), for the event log signal. */
  writer: string;
}

/** The mutations writing new events to their targets. */
function eventMutations(entries: OutboxEntry[], { toOutbox, retentionMs }: EventTargets) {
  const mutations: Mutation[] = [];
  for (const entry of entries) {
    if (toOutbox) {
      mutations.push({ kind: "set", key: [OUTBOX, entry.id], value: entry });
    }
    if (retentionMs > 0) {
      const logged: LoggedEvent = { createdAt: entry.createdAt, event: entry.event };
      mutations.push({
        kind: "set",
        key: [EVENT_LOG, entry.id],
        value: logged,
        expireIn: retentionMs,
      });
    }
  }
  return mutations;
}

/** The signals a commit adding events to `targets` rewrites. */
const signalsOf = (targets: EventTargets) => ({
  signal: targets.toOutbox,
  logSignal: targets.retentionMs > 0 ? targets.writer : null,
});

/**
 * Writes new events to their targets, in atomic chunks under the Deno KV limits.
 */
export async function writeEvents(
  store: Store,
  entries: OutboxEntry[],
  targets: EventTargets,
): Promise<void> {
  // in order: a pass reading meanwhile must never see a later chunk without the earlier one
  await commitChunks(store, eventMutations(entries, targets), {
    sequential: true,
    ...signalsOf(targets),
  });
}

/**
 * Adds the writes of a few new events (a change's; far under the Deno KV limits) to `op`, an
 * atomic operation of the change itself: they become durable with it or not at all.
 */
export function addEvents(
  op: Deno.AtomicOperation,
  entries: OutboxEntry[],
  targets: EventTargets,
): void {
  addMutations(op, eventMutations(entries, targets), signalsOf(targets));
}

/** The event log's writers with the versionstamp of their signal (changed by each write). */
export async function logSignals(store: Store): Promise<Map<string, string>> {
  const entries = await store.list({ prefix: [LOG_SIGNAL] });
  return new Map(entries.map((entry) => [String(entry.key[1]), entry.versionstamp]));
}

/**
 * An event of the event log with its id: by default a user's (what a CTI socket is sent, see
 * `EventFeed.subscribe`); `LogEntry<ExportedMessage>` for any, supervision events included.
 */
export interface LogEntry<M extends ExportedMessage = EventMessage> {
  id: string;
  createdAt: number;
  event: M;
}

/** Up to `limit` events of the event log after the id `after` (from the start when null). */
export async function logAfter(
  store: Store,
  after: string | null,
  limit: number,
): Promise<LogEntry<ExportedMessage>[]> {
  const selector: Deno.KvListSelector = after === null
    ? { prefix: [EVENT_LOG] }
    : { prefix: [EVENT_LOG], start: [EVENT_LOG, `${after}\0`] };
  const entries = await store.list<LoggedEvent>(selector, { limit, batchSize: limit });
  return entries.map((entry) => ({ id: String(entry.key[1]), ...entry.value }));
}

/**
 * Up to `limit` outbox entries in id order: after the id `after`, or from the id `from` on, or
 * from the start; one read for a whole batch.
 */
export async function outboxBatch(
  store: Store,
  start: { after: string } | { from: string } | null,
  limit: number,
): Promise<OutboxEntry[]> {
  const selector: Deno.KvListSelector = start === null ? { prefix: [OUTBOX] } : "after" in start
    // "\0" after an id sorts before every greater id: the first key past `after`
    ? { prefix: [OUTBOX], start: [OUTBOX, `${start.after}\0`] }
    : { prefix: [OUTBOX], start: [OUTBOX, start.from] };
  const entries = await store.list<OutboxEntry>(selector, { limit, batchSize: limit });
  return entries.map((entry) => entry.value);
}

/** The id of the last event of the event log (the greatest), null when it is empty. */
export async function lastLoggedId(store: Store): Promise<string | null> {
  const [last] = await store.list({ prefix: [EVENT_LOG] }, { reverse: true, limit: 1 });
  return last === undefined ? null : String(last.key[1]);
}

/** The publication time (ms) an id starts with. */
export function idTime(id: string): number {
  return Number(id.slice(0, 13));
}

/** The versionstamp of the outbox signal: it changes whenever any process adds to the outbox. */
export async function outboxSignal(store: Store): Promise<string | null> {
  return (await store.get(SIGNAL_KEY)).versionstamp;
}

/** The outbox entries, counted up to `limit` when given (`GET /events/deliveries`, metrics). */
export function countOutbox(store: Store, limit?: number): Promise<number> {
  return store.count({ prefix: [OUTBOX] }, limit);
}

/** The dead letters, counted up to `limit`. */
export function countDeadLetters(store: Store, limit: number): Promise<number> {
  return store.count({ prefix: [DEAD_LETTERS] }, limit);
}

/** When the oldest event still in the outbox was published (ms), null when it is empty. */
export async function oldestPending(store: Store): Promise<number | null> {
  const [first] = await outboxBatch(store, null, 1);
  return first?.createdAt ?? null;
}

/** The dead letters, oldest first. */
export async function deadLetters(store: Store): Promise<OutboxEntry[]> {
  const entries = await store.list<OutboxEntry>({ prefix: [DEAD_LETTERS] });
  return entries.map((entry) => entry.value);
}

/**
 * What a delivery pass decided, written at the end of a batch: delivered entries removed, failed
 * ones rescheduled, given-up ones moved to the dead letters.
 */
export interface PassWrites {
  delivered: string[];
  retried: OutboxEntry[];
  deadLettered: OutboxEntry[];
  lastError: LastError | null;
}

export async function applyPassWrites(store: Store, writes: PassWrites): Promise<void> {
  const mutations: Mutation[] = [];
  for (const id of writes.delivered) mutations.push({ kind: "delete", key: [OUTBOX, id] });
  for (const entry of writes.retried) {
    mutations.push({ kind: "set", key: [OUTBOX, entry.id], value: entry });
  }
  for (const entry of writes.deadLettered) {
    // the set and the delete of one entry stay in one chunk: an event is always somewhere
    mutations.push({
      kind: "set",
      key: [DEAD_LETTERS, entry.id],
      value: entry,
      pairedWithNext: true,
    }, { kind: "delete", key: [OUTBOX, entry.id] });
  }
  if (writes.lastError) {
    mutations.push({ kind: "set", key: LAST_ERROR_KEY, value: writes.lastError });
  }
  await commitChunks(store, mutations);
}

export async function lastError(store: Store): Promise<LastError | null> {
  return (await store.get<LastError>(LAST_ERROR_KEY)).value;
}

/**
 * Moves every dead letter back to the outbox, due at `now`, with its attempts reset. Each move
 * checks that the dead letter is still there, so two concurrent requeues never double an event.
 * Answers how many were moved.
 */
export async function requeueDeadLetters(store: Store, now: number): Promise<number> {
  const entries = await store.list<OutboxEntry>({ prefix: [DEAD_LETTERS] });
  let moved = 0;
  for (let start = 0; start < entries.length; start += MAX_CHECKS) {
    const chunk = entries.slice(start, start + MAX_CHECKS);
    const result = await store.commit((op) => {
      for (const { key, versionstamp, value } of chunk) {
        const requeued: OutboxEntry = { ...value, attempts: 0, dueAt: now, lastError: null };
        op.check({ key, versionstamp }).delete(key).set([OUTBOX, value.id], requeued);
      }
      return op.set(SIGNAL_KEY, true);
    });
    if (result.ok) moved += chunk.length;
    else moved += await requeueOneByOne(store, chunk, now); // someone else moved some meanwhile
  }
  return moved;
}

async function requeueOneByOne(
  store: Store,
  entries: Deno.KvEntry<OutboxEntry>[],
  now: number,
): Promise<number> {
  let moved = 0;
  for (const { key, versionstamp, value } of entries) {
    const requeued: OutboxEntry = { ...value, attempts: 0, dueAt: now, lastError: null };
    const result = await store.commit((op) =>
      op.check({ key, versionstamp }).delete(key).set([OUTBOX, value.id], requeued)
        .set(SIGNAL_KEY, true)
    );
    if (result.ok) moved++;
  }
  return moved;
}

/** The retained events published at `sinceMs` or later, oldest first. */
export async function loggedEvents(store: Store, sinceMs: number): Promise<LoggedEvent[]> {
  const entries = await store.list<LoggedEvent>({
    prefix: [EVENT_LOG],
    start: [EVENT_LOG, idFrom(sinceMs)],
  });
  // expireIn removes keys lazily: the time filter is what holds
  return entries.map((entry) => entry.value).filter((logged) => logged.createdAt >= sinceMs);
}

/** Takes or renews the delivery lease (see {@link takeLeaseAt}). */
export const takeLease = (
  store: Store,
  owner: string,
  now: number,
  leaseMs: number,
  releasedAs: string | null = null,
): Promise<LeaseTaken> => takeLeaseAt(store, LEASE_KEY, owner, now, leaseMs, releasedAs);

/** Gives the delivery lease back (see {@link releaseLeaseAt}). */
export const releaseLease = (store: Store, owner: string): Promise<string | null> =>
  releaseLeaseAt(store, LEASE_KEY, owner);

type Mutation =
  | {
    kind: "set";
    key: Deno.KvKey;
    value: unknown;
    expireIn?: number;
    /** Keep this mutation and the next in the same commit. */
    pairedWithNext?: boolean;
  }
  | { kind: "delete"; key: Deno.KvKey; pairedWithNext?: boolean };

/** Rough size of a mutation in a commit: its key and its value as JSON. */
function sizeOf(mutation: Mutation): number {
  const value = mutation.kind === "set" ? JSON.stringify(mutation.value).length : 0;
  return JSON.stringify(mutation.key).length + value;
}

/**
 * Commits `mutations` in as few atomic commits as the limits allow, one after the other when
 * `sequential`, else concurrently (they touch distinct keys); with `signal`, each commit rewrites
 * the outbox signal too, with `logSignal` the event log signal of that writer. Resolves once all are
 * durable.
 */
async function commitChunks(
  store: Store,
  mutations: Mutation[],
  { sequential = false, signal = false, logSignal = null as string | null } = {},
): Promise<void> {
  const chunks: Mutation[][] = [];
  let chunk: Mutation[] = [];
  let bytes = 0;
  for (let i = 0; i < mutations.length; i++) {
    const group = mutations[i]!.pairedWithNext ? [mutations[i]!, mutations[++i]!] : [mutations[i]!];
    const size = group.reduce((sum, mutation) => sum + sizeOf(mutation), 0);
    if (chunk.length && (chunk.length + group.length > MAX_MUTATIONS || bytes + size > MAX_BYTES)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(...group);
    bytes += size;
  }
  if (chunk.length) chunks.push(chunk);
  const commit = (mutations: Mutation[]) =>
    store.commit((op) => addMutations(op, mutations, { signal, logSignal }));
  if (sequential) { for (const chunk of chunks) await commit(chunk); }
  else await Promise.all(chunks.map(commit));
}

/** Adds `mutations` to `op`; with `signal`, the outbox signal, with `logSignal` that writer's. */
function addMutations(
  op: Deno.AtomicOperation,
  mutations: Mutation[],
  { signal, logSignal }: { signal: boolean; logSignal: string | null },
): Deno.AtomicOperation {
  for (const mutation of mutations) {
    if (mutation.kind === "delete") op.delete(mutation.key);
    else {
      op.set(
        mutation.key,
        mutation.value,
        mutation.expireIn ? { expireIn: mutation.expireIn } : undefined,
      );
    }
  }
  if (logSignal !== null) op.set([LOG_SIGNAL, logSignal], true, { expireIn: LOG_SIGNAL_MS });
  return signal ? op.set(SIGNAL_KEY, true) : op;
}

/**
 * Platform events written once (docs/asterisk.md, "Several svc processes"): a platform event with
 * an `id` may be handed to the listeners by more than one process (a new lease holder hands over
 * the events it saw, some of which the last holder wrote). Each listener that writes to the store
 * (a "consumer") marks each event it wrote, in the same atomic commit as its own writes, and skips
 * the events already marked. The only module that knows the keys:
 *
 * - `["platform_done", consumer, eventId]` → `true`, written with `expireIn` = {@link DONE_TTL_MS}:
 *   the consumer wrote that event. Twice what a process keeps of the events it saw for a takeover
 *   (a minute, `lib/platform/asterisk/mod.ts`): an event is never handed over again once its mark
 *   is gone; then gone by itself, so the marks of a busy day weigh two minutes of events.
 */
import type { Store } from "./store.ts";

/** The listeners writing platform events to the store, each with its own marks. */
export type PlatformConsumer = "outbox" | "history" | "supervision";

/** How long an event stays marked as written. */
export const DONE_TTL_MS = 2 * 60_000;

const DONE = "platform_done";

/** At most this many events per commit: Deno KV takes 10 checks per commit, one per mark. */
export const MAX_ONCE_PER_COMMIT = 10;

/** How many times a chunk is committed again after another process marked some of it. */
const ATTEMPTS = 5;

/** The key marking `id` as written by `consumer`. */
export const doneKey = (consumer: PlatformConsumer, id: string): Deno.KvKey => [
  DONE,
  consumer,
  id,
];

/** Puts the mark of `id` in `op`, checked absent: the commit fails if another wrote it first. */
export function markDone(op: Deno.AtomicOperation, consumer: PlatformConsumer, id: string): void {
  const key = doneKey(consumer, id);
  op.check({ key, versionstamp: null }).set(key, true, { expireIn: DONE_TTL_MS });
}

/** Of `ids`, those `consumer` already wrote (read 10 at a time). */
export async function doneAmong(
  store: Store,
  consumer: PlatformConsumer,
  ids: readonly string[],
): Promise<Set<string>> {
  const done = new Set<string>();
  for (let start = 0; start < ids.length; start += 10) {
    const chunk = ids.slice(start, start + 10);
    const entries = await store.getMany(chunk.map((id) => doneKey(consumer, id)));
    entries.forEach((entry, i) => {
      if (entry.versionstamp !== null) done.add(chunk[i]!);
    });
  }
  return done;
}

/**
 * Writes `items` once each: in order, at most {@link MAX_ONCE_PER_COMMIT} per atomic commit, each
 * commit holding what `write` puts in it for its items plus their marks (checked absent). Items
 * already marked are skipped; an item without `id` is always written (no mark). A commit that
 * finds a mark written meanwhile (another process wrote that item) is built again without it.
 * `write` may be called again for the same items (a new attempt): it must only add to `op`.
 * `onSkipped` runs once, before the next commit, when some items were found written (another
 * process wrote them: a takeover). Answers what each committed `write` answered, in order, with
 * the items it wrote.
 *
 * @example
 * await writeOnce(store, "history", ended, (op, chunk) => {
 *   for (const event of chunk) for (const record of event.records) op.set(keyOf(record), record);
 * });
 */
export async function writeOnce<T extends { id?: string }, R>(
  store: Store,
  consumer: PlatformConsumer,
  items: readonly T[],
  write: (op: Deno.AtomicOperation, items: T[]) => R,
  onSkipped?: () => Promise<void>,
): Promise<{ items: T[]; result: R }[]> {
  const written: { items: T[]; result: R }[] = [];
  const seen = new Set<string>();
  items = items.filter((item) =>
    item.id === undefined || !seen.has(item.id) && !!seen.add(item.id)
  );
  // more than one commit's worth: most likely a takeover handing over what it saw, most of it
  // written already; read the marks first rather than fail a commit per chunk
  const readFirst = items.length > MAX_ONCE_PER_COMMIT;
  let skipped = false;
  const skipping = async (before: T[], after: T[]) => {
    if (skipped || after.length === before.length) return;
    skipped = true;
    await onSkipped?.();
  };
  for (let start = 0; start < items.length; start += MAX_ONCE_PER_COMMIT) {
    let chunk = items.slice(start, start + MAX_ONCE_PER_COMMIT);
    if (readFirst) {
      const before = chunk;
      chunk = await notDone(store, consumer, chunk);
      await skipping(before, chunk);
    }
    for (let attempt = 1; chunk.length > 0; attempt++) {
      let result: R | undefined;
      const commit = await store.commit((op) => {
        result = write(op, chunk);
        for (const item of chunk) if (item.id !== undefined) markDone(op, consumer, item.id);
        return op;
      });
      if (commit.ok) {
        written.push({ items: chunk, result: result as R });
        break;
      }
      if (attempt >= ATTEMPTS) {
        throw new Error(`${consumer}: platform events kept being written by another process`);
      }
      const before = chunk;
      chunk = await notDone(store, consumer, chunk);
      await skipping(before, chunk);
    }
  }
  return written;
}

/** The items of `items` not marked yet (those without id included). */
async function notDone<T extends { id?: string }>(
  store: Store,
  consumer: PlatformConsumer,
  items: T[],
): Promise<T[]> {
  const ids = items.flatMap((item) => item.id === undefined ? [] : [item.id]);
  if (ids.length === 0) return items;
  const done = await doneAmong(store, consumer, ids);
  return items.filter((item) => item.id === undefined || !done.has(item.id));
}

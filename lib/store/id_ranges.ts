/**
 * Walking keys grouped by a numeric id (`[name, id, …]`): the ids one after the other, one short
 * read each, however many keys each holds. What the prunes of records kept per user or per queue
 * walk (`call_history.ts`, `lib/call_history/queue_calls.ts`).
 */
import type { Store } from "./store.ts";

/**
 * Runs `visit` for each whole-number id `n` with keys `[name, n, …]`, in order; `visit` may delete
 * that id's keys.
 *
 * @example
 * await eachId(store, "call_history", async (userId) => { ... });
 */
export async function eachId(
  store: Store,
  name: string,
  visit: (id: number) => Promise<void>,
): Promise<void> {
  let from: Deno.KvKey = [name];
  for (;;) {
    const [first] = await store.list({ start: from, end: [name, Infinity] }, { limit: 1 });
    if (!first) return;
    const id = first.key[1] as number;
    await visit(id);
    // the next id: ids are whole numbers, so half past this one comes after all its keys
    from = [name, id + 0.5];
  }
}

/**
 * Work on one record taken in turn within a process: the calls for the same key run one after
 * the other, first come first served. Writers of one record that run at once lose the race for it
 * to each other and retry (`transact`); under load, some lost fifty times in a row and gave up
 * (503). Taking turns leaves only the races with other processes sharing the store.
 */

/** Per store, the last call queued for each key; a key goes once its queue is empty. */
const queues = new WeakMap<object, Map<string | number, Promise<unknown>>>();

/**
 * Runs `work` once the calls made before for the same `store` and `key` have ended (resolved or
 * failed); answers what it answers. `work` is told whether it waited for any (what its caller
 * read before may have changed meanwhile).
 *
 * @example
 * await inTurn(store, userId, () => transact(store, async (tx) => { … }));
 */
export function inTurn<T>(
  store: object,
  key: string | number,
  work: (waited: boolean) => Promise<T>,
): Promise<T> {
  let byKey = queues.get(store);
  if (!byKey) queues.set(store, byKey = new Map());
  const before = byKey.get(key);
  const run = before ? before.then(() => work(true), () => work(true)) : work(false);
  const settled = run.then(() => {}, () => {});
  byKey.set(key, settled);
  settled.then(() => {
    if (byKey.get(key) === settled) byKey.delete(key);
  });
  return run;
}

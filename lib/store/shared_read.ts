/**
 * Many requests asking the store (or the platform) the same kind of question at once share one
 * read, yet each answer is read after its request asked: a caller joins the read about to start,
 * never one already running. Under load this turns one round trip per request into one per round
 * trip, with the same freshness.
 */

/**
 * Wraps `readMany` so that the keys asked while a read runs go together in the next read, which
 * starts as soon as the running one ends; each caller gets that read's whole answer.
 *
 * @example
 * const statuses = batchedRead((numbers: string[]) => platform.phoneStatuses(numbers));
 * (await statuses(["1001", "1002"])).get("1001");
 */
export function batchedRead<K, V>(
  readMany: (keys: K[]) => Promise<Map<K, V>>,
): (keys: Iterable<K>) => Promise<Map<K, V>> {
  let running = false;
  let next: { keys: Set<K>; answer: PromiseWithResolvers<Map<K, V>> } | null = null;

  async function drain(): Promise<void> {
    while (next) {
      const batch = next;
      next = null;
      try {
        batch.answer.resolve(await readMany([...batch.keys]));
      } catch (error) {
        batch.answer.reject(error);
      }
    }
    running = false;
  }

  return (keys) => {
    next ??= { keys: new Set(), answer: Promise.withResolvers() };
    for (const key of keys) next.keys.add(key);
    const { promise } = next.answer;
    if (!running) {
      running = true;
      drain();
    }
    return promise;
  };
}

/**
 * {@link batchedRead} for a question without keys.
 *
 * @example
 * const versions = sharedRead(() => store.getMany([users.versionKey, lines.versionKey]));
 * const [usersVersion, linesVersion] = await versions();
 */
export function sharedRead<T>(read: () => Promise<T>): () => Promise<T> {
  const batch = batchedRead<null, T>(async () => new Map([[null, await read()]]));
  return async () => (await batch([null])).get(null)!;
}

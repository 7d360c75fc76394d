import type { Store } from "./store.ts";

/** A record and the unique index keys that must point at it (each index key holds `key`). */
export interface RecordWrite {
  key: Deno.KvKey;
  value: unknown;
  indexes: Deno.KvKey[];
  /** The stored version being replaced; absent when creating. */
  previous?: { versionstamp: string; indexes: Deno.KvKey[] };
}

export type WriteResult =
  | { ok: true; versionstamp: string }
  /** `conflicts` names the index keys already taken, or the record key if it changed meanwhile. */
  | { ok: false; conflicts: Deno.KvKey[] };

const same = (a: Deno.KvKey, b: Deno.KvKey) => JSON.stringify(a) === JSON.stringify(b);

/**
 * Writes a record and its unique index keys in one atomic operation: new index keys must be free,
 * index keys no longer wanted are deleted, and the record must be unchanged since it was read.
 *
 * @example
 * await writeRecord(store, { key: ["users", 1], value: user, indexes: [["users_by_username", "alice"]] });
 */
export async function writeRecord(store: Store, write: RecordWrite): Promise<WriteResult> {
  const kept = write.previous?.indexes ?? [];
  const added = write.indexes.filter((index) => !kept.some((old) => same(old, index)));
  const removed = kept.filter((old) => !write.indexes.some((index) => same(old, index)));
  const result = await store.commit((op) => {
    op.check({ key: write.key, versionstamp: write.previous?.versionstamp ?? null });
    for (const index of added) op.check({ key: index, versionstamp: null }).set(index, write.key);
    for (const index of removed) op.delete(index);
    return op.set(write.key, write.value);
  });
  if (result.ok) return { ok: true, versionstamp: result.versionstamp };
  const owners = await store.getMany<Deno.KvKey>(added);
  const conflicts = added.filter((_, i) => {
    const owner = owners[i]?.value;
    return owner != null && !same(owner, write.key);
  });
  return { ok: false, conflicts: conflicts.length ? conflicts : [write.key] };
}

/** Deletes a record and its index keys in one atomic operation, if it is still `versionstamp`. */
export async function deleteRecord(
  store: Store,
  key: Deno.KvKey,
  versionstamp: string,
  indexes: Deno.KvKey[],
): Promise<boolean> {
  const result = await store.commit((op) => {
    op.check({ key, versionstamp });
    for (const index of indexes) op.delete(index);
    return op.delete(key);
  });
  return result.ok;
}

/** Reads the record a unique index key points at. */
export async function getByIndex<T>(store: Store, index: Deno.KvKey) {
  const pointer = await store.get<Deno.KvKey>(index);
  return pointer.value ? await store.get<T>(pointer.value) : null;
}

/**
 * Allocates the next integer id of `sequence` (1, 2, 3, …), safe across processes sharing the store.
 *
 * @example
 * const id = await nextId(store, "users");
 */
export async function nextId(store: Store, sequence: string): Promise<number> {
  const key = ["ids", sequence];
  for (;;) {
    const current = await store.get<number>(key);
    const next = (current.value ?? 0) + 1;
    const result = await store.commit((op) =>
      op.check({ key, versionstamp: current.versionstamp }).set(key, next)
    );
    if (result.ok) return next;
  }
}

/** A unique field already holds this value in another record. */
export class UniqueConflict extends Error {
  constructor(readonly field: string, readonly value: string) {
    super(`${field} ${JSON.stringify(value)} is already taken`);
    this.name = "UniqueConflict";
  }
}

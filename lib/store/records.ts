/**
 * Records in Deno KV: a {@link Collection} per aggregate owns its keys and unique index keys, and
 * {@link transact} reads and writes records of any collections as one atomic operation.
 */
import type { Store } from "./store.ts";

type IndexValue = string | number;

/** A unique field already holds this value in another record. */
export class UniqueConflict extends Error {
  constructor(readonly field: string, readonly value: IndexValue | IndexValue[]) {
    super(`${field} ${JSON.stringify(value)} is already taken`);
    this.name = "UniqueConflict";
  }
}

let localWrites = 0;

/**
 * How many writes to collections and contacts this process has attempted: a cache of that data may
 * skip reading version keys while this stays the same and it accepts seeing other processes'
 * writes a little later (it reads the version keys then).
 */
export const localWriteCount = (): number => localWrites;

/**
 * Counts a write to collections or contacts, before its commit (call it whatever the commit's
 * outcome: a surplus is harmless).
 */
export function noteLocalWrite(): void {
  localWrites++;
}

/** The key every write of a collection's records changes, in the same atomic operation. */
export const versionKey = (name: string): Deno.KvKey => ["collection_versions", name];

/** Every collection by name, so that recovery can read a journal naming them. */
const registry = new Map<string, Collection<{ id: IndexValue }>>();

/** The collection called `name`, once its module is loaded. */
export function collectionNamed(name: string): Collection<{ id: IndexValue }> | undefined {
  return registry.get(name);
}

/**
 * The records of one aggregate: `[name, id]` keys, and for each unique field an index key
 * `[name_by_field, ...value]` holding the record's key.
 *
 * @example
 * const lines = new Collection<LineRecord>("lines", { name: (line) => line.name });
 */
export class Collection<T extends { id: IndexValue }> {
  constructor(
    readonly name: string,
    /** Unique fields: the value a record holds, or null when it holds none. */
    readonly unique: Record<string, (record: T) => IndexValue | IndexValue[] | null> = {},
  ) {
    registry.set(name, this as never);
  }

  key(id: IndexValue): Deno.KvKey {
    return [this.name, id];
  }

  indexKey(field: string, value: IndexValue | IndexValue[]): Deno.KvKey {
    return [`${this.name}_by_${field}`, ...[value].flat()];
  }

  /** The index keys of `record`, with the field and value each stands for. */
  indexes(record: T): { field: string; value: IndexValue | IndexValue[]; key: Deno.KvKey }[] {
    return Object.entries(this.unique).flatMap(([field, of]) => {
      const value = of(record);
      return value === null ? [] : [{ field, value, key: this.indexKey(field, value) }];
    });
  }

  async get(store: Store, id: IndexValue): Promise<T | null> {
    return (await store.get<T>(this.key(id))).value;
  }

  async findBy(store: Store, field: string, value: IndexValue | IndexValue[]): Promise<T | null> {
    const pointer = await store.get<Deno.KvKey>(this.indexKey(field, value));
    return pointer.value ? (await store.get<T>(pointer.value)).value : null;
  }

  /** Changes whenever a record of the collection is written (see {@link versionKey}). */
  get versionKey(): Deno.KvKey {
    return versionKey(this.name);
  }

  #cache: { store: Store; version: string | null; records: T[] } | null = null;

  /**
   * Every record, in id order. The list is kept in memory and read again only when the
   * collection's version key changed, so that large lists cost one read; treat it as read-only.
   */
  async all(store: Store): Promise<T[]> {
    const version = (await store.get(this.versionKey)).versionstamp;
    if (this.#cache?.store === store && this.#cache.version === version) return this.#cache.records;
    const records = (await store.list<T>({ prefix: [this.name] })).map((entry) => entry.value);
    this.#cache = { store, version, records };
    return records;
  }

  /**
   * Creates or replaces `record` in a transaction of its own; throws `UniqueConflict` when one of
   * its unique values is taken.
   */
  async put(store: Store, record: T): Promise<T> {
    await transact(store, (tx) => Promise.resolve(tx.put(this, record)));
    return record;
  }

  /** The next integer id (1, 2, 3, …), safe across processes sharing the store. */
  nextId(store: Store): Promise<number> {
    return nextId(store, this.name);
  }
}

/**
 * Allocates the next integer id of `sequence`, safe across processes sharing the store.
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

const keyText = (key: Deno.KvKey) => JSON.stringify(key);

interface Write {
  collection: Collection<{ id: IndexValue }>;
  key: Deno.KvKey;
  /** null deletes the record. */
  value: { id: IndexValue } | null;
}

/**
 * One optimistic transaction: every read is checked at commit, so the writes apply only if
 * nothing read has changed meanwhile. Index keys follow the records written.
 */
export class Transaction {
  readonly #reads = new Map<
    string,
    { key: Deno.KvKey; versionstamp: string | null; value: unknown }
  >();
  readonly #writes = new Map<string, Write>();

  constructor(readonly store: Store) {}

  async get<T extends { id: IndexValue }>(
    collection: Collection<T>,
    id: IndexValue,
  ): Promise<T | null> {
    return await this.#read(collection.key(id)) as T | null;
  }

  async findBy<T extends { id: IndexValue }>(
    collection: Collection<T>,
    field: string,
    value: IndexValue | IndexValue[],
  ): Promise<T | null> {
    const pointer = await this.#read(collection.indexKey(field, value)) as Deno.KvKey | null;
    return pointer ? await this.#read(pointer) as T | null : null;
  }

  /**
   * Every record of `collection`, checked at commit as a whole: any write to the collection
   * meanwhile runs the transaction again (for rules such as "no line uses this context").
   */
  async all<T extends { id: IndexValue }>(collection: Collection<T>): Promise<T[]> {
    await this.#read(collection.versionKey);
    return await collection.all(this.store);
  }

  /** Creates or replaces `record` (read it first when replacing, so its old index keys go). */
  put<T extends { id: IndexValue }>(collection: Collection<T>, record: T): void {
    const key = collection.key(record.id);
    this.#writes.set(keyText(key), { collection: collection as never, key, value: record });
  }

  remove<T extends { id: IndexValue }>(collection: Collection<T>, id: IndexValue): void {
    const key = collection.key(id);
    this.#writes.set(keyText(key), { collection: collection as never, key, value: null });
  }

  async #read(key: Deno.KvKey): Promise<unknown> {
    const known = this.#reads.get(keyText(key));
    if (known) return known.value;
    const entry = await this.store.get(key);
    this.#reads.set(keyText(key), { key, versionstamp: entry.versionstamp, value: entry.value });
    return entry.value;
  }

  /** Commits; answers false when something read changed, throws when a unique value is taken. */
  async commit(): Promise<boolean> {
    const added: {
      field: string;
      value: IndexValue | IndexValue[];
      key: Deno.KvKey;
      owner: Deno.KvKey;
    }[] = [];
    const removed: Deno.KvKey[] = [];
    for (const write of this.#writes.values()) {
      if (!this.#reads.has(keyText(write.key))) await this.#read(write.key);
      const previous = this.#reads.get(keyText(write.key))!.value as { id: IndexValue } | null;
      const before = previous ? write.collection.indexes(previous) : [];
      const after = write.value ? write.collection.indexes(write.value) : [];
      const beforeKeys = new Set(before.map((index) => keyText(index.key)));
      const afterKeys = new Set(after.map((index) => keyText(index.key)));
      for (const index of after) {
        if (!beforeKeys.has(keyText(index.key))) added.push({ ...index, owner: write.key });
      }
      for (const index of before) if (!afterKeys.has(keyText(index.key))) removed.push(index.key);
    }
    const addedKeys = new Set(added.map((index) => keyText(index.key)));
    // a value one record gives up and another takes in the same transaction just changes hands
    const handedOver = new Set(removed.map(keyText).filter((key) => addedKeys.has(key)));
    noteLocalWrite();
    const result = await this.store.commit((op) => {
      for (const read of this.#reads.values()) {
        if (!addedKeys.has(keyText(read.key))) op.check(read);
      }
      for (const key of removed) if (!handedOver.has(keyText(key))) op.delete(key);
      for (const index of added) {
        if (!handedOver.has(keyText(index.key))) op.check({ key: index.key, versionstamp: null });
        op.set(index.key, index.owner);
      }
      const written = new Set<string>();
      for (const write of this.#writes.values()) {
        if (write.value) op.set(write.key, write.value);
        else op.delete(write.key);
        written.add(write.collection.name);
      }
      for (const name of written) op.set(versionKey(name), true);
      return op;
    });
    if (result.ok) return true;
    if (added.length) {
      const owners = await this.store.getMany<Deno.KvKey>(added.map((index) => index.key));
      const taken = added.find((index, i) => {
        const owner = owners[i]?.value;
        return owner != null && keyText(owner) !== keyText(index.owner) &&
          !handedOver.has(keyText(index.key));
      });
      if (taken) throw new UniqueConflict(taken.field, taken.value);
    }
    return false;
  }
}

/**
 * Runs `fn` in a {@link Transaction} and commits it, running it again when something it read
 * changed meanwhile.
 *
 * @example
 * await transact(store, async (tx) => {
 *   const line = await tx.get(lines, 1);
 *   if (line) tx.put(lines, { ...line, position: 2 });
 * });
 */
export async function transact<R>(store: Store, fn: (tx: Transaction) => Promise<R>): Promise<R> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const tx = new Transaction(store);
    const result = await fn(tx);
    if (await tx.commit()) return result;
  }
  throw new Error("transaction abandoned: the records kept changing");
}

const LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789";

/** `length` random characters of `alphabet` (lowercase letters and digits by default). */
export function randomText(length: number, alphabet = LOWER_ALNUM): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (byte) => alphabet[byte % alphabet.length]).join("");
}

/**
 * A generated value for a unique field that no record of `collection` holds, read in `tx` so the
 * commit fails (and the transaction runs again) if another record takes it meanwhile.
 *
 * @example
 * const username = await unusedValue(tx, sipEndpoints, "username", () => randomText(8));
 */
export async function unusedValue<T extends { id: IndexValue }>(
  tx: Transaction,
  collection: Collection<T>,
  field: string,
  generate: () => string,
): Promise<string> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const value = generate();
    if (!await tx.findBy(collection, field, value)) return value;
  }
  throw new Error(`no free ${collection.name} ${field} found`);
}

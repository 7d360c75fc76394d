/**
 * Records in Deno KV: a {@link Collection} per aggregate owns its keys and unique index keys, and
 * {@link transact} reads and writes records of any collections as one atomic operation.
 *
 * A bulk write (`bulk.ts`) stores {@link StagedValue}s: every read here shows what the value was
 * before the write while the write is hidden (its id listed under {@link hiddenWritesKey}), and
 * what it wrote once it committed, so an import becomes visible at once, to every reader.
 */
import { StoreBusy, Unreachable } from "../errors.ts";
import { commitShared } from "./shared_commit.ts";
import { batchedRead, sharedRead } from "./shared_read.ts";
import { keepRacing, raceBackoff, type Store } from "./store.ts";

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

const keyText = (key: Deno.KvKey) => JSON.stringify(key);

/** The key every write of a collection's records changes, in the same atomic operation. */
export const versionKey = (name: string): Deno.KvKey => ["collection_versions", name];

/**
 * Lists the ids of the bulk writes that readers must not see yet: those writing, and those being
 * undone. A write is added before it writes anything and removed by its last commit (or once it is
 * undone), so a value it staged is hidden exactly while its id is here.
 */
export const hiddenWritesKey: Deno.KvKey = ["bulk_hidden"];

/**
 * A value a bulk write stored in place of a record (or of an index key's pointer): `next` is what
 * the write makes of it, `previous` what it was (absent: nothing). Readers see `previous` while the
 * write `__bulk` is hidden, `next` afterwards; the next ordinary write of the key stores a plain
 * value again.
 */
export interface StagedValue {
  __bulk: string;
  next: unknown;
  previous?: unknown;
}

/** True when `value` was stored by a bulk write (see {@link StagedValue}). */
export function isStaged(value: unknown): value is StagedValue {
  return typeof value === "object" && value !== null && "__bulk" in value;
}

/** The hidden writes an entry of {@link hiddenWritesKey} lists. */
export const hiddenWrites = (entry: Deno.KvEntryMaybe<unknown>): ReadonlySet<string> =>
  new Set((entry.value as string[] | null) ?? []);

/** What readers see of a stored value while `hidden` writes are hidden; null for nothing. */
export function visibleValue(value: unknown, hidden: ReadonlySet<string>): unknown {
  if (!isStaged(value)) return value;
  return hidden.has(value.__bulk) ? (value.previous ?? null) : value.next;
}

/** True when `value` was staged by a write still hidden: no other write may replace it. */
export const heldBy = (value: unknown, hidden: ReadonlySet<string>): boolean =>
  isStaged(value) && hidden.has(value.__bulk);

/**
 * Reads a key range and answers what readers see of it, consistent with one state of the hidden
 * writes: when the list changed during the range read (a write began, committed or was undone), the
 * range is read again.
 *
 * @example
 * const requests = await listVisible<CallbackRequestRecord>(store, { prefix: ["callback_requests", list] });
 */
export async function listVisible<T>(
  store: Store,
  selector: Deno.KvListSelector,
): Promise<Deno.KvEntry<T>[]> {
  for (;;) {
    const before = await store.get(hiddenWritesKey);
    const entries = await store.list<unknown>(selector, { batchSize: 500 });
    if (!entries.some((entry) => isStaged(entry.value))) return entries as Deno.KvEntry<T>[];
    const after = await store.get(hiddenWritesKey);
    if (after.versionstamp !== before.versionstamp) continue;
    const hidden = hiddenWrites(before);
    return entries.flatMap((entry) => {
      const value = visibleValue(entry.value, hidden);
      return value === null ? [] : [{ ...entry, value: value as T }];
    });
  }
}

/**
 * Reads `key` and answers what readers see of it, with the versionstamp of what is stored (to
 * check in an atomic operation that writes it) and whether a hidden bulk write holds it.
 */
export async function readVisible<T>(
  store: Store,
  key: Deno.KvKey,
): Promise<{ key: Deno.KvKey; value: T | null; versionstamp: string | null; held: boolean }> {
  const [entry, hidden] = await store.getMany<unknown>([key, hiddenWritesKey]);
  const writes = hiddenWrites(hidden!);
  return {
    key,
    value: visibleValue(entry!.value, writes) as T | null,
    versionstamp: entry!.versionstamp,
    held: heldBy(entry!.value, writes),
  };
}

/**
 * A write refused because a bulk write not yet committed holds the record (it replaces it); the
 * write waits for its end, and answers this (503) if it does not come.
 */
export class HeldByBulkWrite extends Unreachable {
  constructor(key: Deno.KvKey) {
    super(
      "a record is held by an import that has not finished",
      new Error(`key ${JSON.stringify(key)}`),
    );
    this.name = "HeldByBulkWrite";
  }
}

/** How long a write waits for a bulk write holding its record (its death is noticed by then). */
export const HELD_WAIT_MS = 20_000;

let recoverStale: ((store: Store) => Promise<unknown>) | null = null;

/**
 * Registers what undoes the bulk writes of dead processes; a write waiting for a held record runs
 * it now and then (`bulk.ts` registers `recoverBulkWrites`).
 */
export function onHeldRecords(recover: (store: Store) => Promise<unknown>): void {
  recoverStale = recover;
}

/**
 * Waits a little for the bulk write holding a record: answers false once `deadline` has passed.
 * Each wait but the first also undoes the writes of processes found dead (one short read when
 * there is none).
 */
export async function waitForHeld(
  store: Store,
  deadline: number,
  waited: number,
): Promise<boolean> {
  if (Date.now() >= deadline) return false;
  await new Promise((resolve) => setTimeout(resolve, Math.min(200, 25 * 2 ** waited)));
  if (waited > 0) await recoverStale?.(store);
  return true;
}

/** How a record answered by `Collection.findBy` was read, for a transaction to start from it. */
interface ReadState {
  store: Store;
  entry: Deno.KvEntryMaybe<unknown>;
  hidden: Deno.KvEntryMaybe<unknown>;
}

const readStates = new WeakMap<object, ReadState>();

/** What readers see of `entry` (read with `hidden`), remembering how it was read. */
function readRecord<T>(
  store: Store,
  entry: Deno.KvEntryMaybe<unknown>,
  hidden: Deno.KvEntryMaybe<unknown>,
): T | null {
  const record = visibleValue(entry.value, hiddenWrites(hidden));
  if (typeof record === "object" && record !== null) {
    readStates.set(record, { store, entry, hidden });
  }
  return record as T | null;
}

/** Index keys whose record key a collection remembers, at most (then it forgets them all). */
const KEPT_OWNERS = 10_000;

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

  /**
   * The record `id` as readers see it (a bulk write not yet committed shows nothing of it). The
   * records asked while a read runs are read together by the next one (`getMany`), each answer
   * from a read begun after its caller asked (`lib/store/shared_read.ts`).
   */
  async get(store: Store, id: IndexValue): Promise<T | null> {
    let read = this.#gets.get(store);
    if (!read) this.#gets.set(store, read = batchedRead((ids) => this.#visible(store, ids)));
    return (await read([id])).get(id) ?? null;
  }

  /** The records `ids` as readers see them: each `getMany` with the hidden writes' key. */
  async #visible(store: Store, ids: IndexValue[]): Promise<Map<IndexValue, T | null>> {
    const chunks: IndexValue[][] = [];
    // Deno KV reads 10 keys at most at once: 9 records and the hidden writes' key
    for (let start = 0; start < ids.length; start += 9) chunks.push(ids.slice(start, start + 9));
    const read = await Promise.all(chunks.map(async (chunk) => {
      const entries = await store.getMany<unknown>([
        ...chunk.map((id) => this.key(id)),
        hiddenWritesKey,
      ]);
      const hidden = entries.at(-1)!;
      return chunk.map((id, i) => [id, readRecord<T>(store, entries[i]!, hidden)] as const);
    }));
    return new Map(read.flat());
  }

  /**
   * The record `id` as readers see it, with the versionstamp of what is stored, for an atomic
   * operation that checks it.
   */
  entry(store: Store, id: IndexValue): Promise<Awaited<ReturnType<typeof readVisible<T>>>> {
    return readVisible<T>(store, this.key(id));
  }

  /**
   * The record holding `value` in the unique `field`, as readers see it. The key it was last found
   * at is remembered: reading that record alone (one read) answers when it still holds the value,
   * since an index key and its record are always written together; else the index is read.
   */
  async findBy(store: Store, field: string, value: IndexValue | IndexValue[]): Promise<T | null> {
    const indexKey = this.indexKey(field, value);
    const known = this.#owners.get(keyText(indexKey));
    if (known) {
      // the record last found there, read with the others asked meanwhile (see `get`)
      const record = await this.get(store, known[1] as IndexValue);
      if (record && this.holds(record, indexKey)) return record;
      this.#owners.delete(keyText(indexKey));
    }
    for (;;) {
      const [pointer, before] = await store.getMany<unknown>([indexKey, hiddenWritesKey]);
      const owner = visibleValue(pointer!.value, hiddenWrites(before!)) as Deno.KvKey | null;
      if (!owner) return null;
      const [entry, after] = await store.getMany<unknown>([owner, hiddenWritesKey]);
      if (after!.versionstamp !== before!.versionstamp) continue; // read both at one state
      const record = readRecord<T>(store, entry!, after!);
      if (!record || !this.holds(record, indexKey)) return null;
      if (this.#owners.size >= KEPT_OWNERS) this.#owners.clear();
      this.#owners.set(keyText(indexKey), owner);
      return record;
    }
  }

  /** The record keys {@link findBy} last found, by index key (checked at each use). */
  readonly #owners = new Map<string, Deno.KvKey>();

  /**
   * The id of the record {@link findBy} finds, or null. The id found last for a value is answered
   * again without reading while the store's change mark (`Store.changeMark`) is the one taken
   * before it was found: nothing was committed since, by any process. For routes that need only
   * the id (a history): an id, unlike a record, is no object callers could share and change.
   */
  async findIdBy(store: Store, field: string, value: IndexValue): Promise<IndexValue | null> {
    const mark = store.changeMark();
    let found = this.#foundIds.get(field);
    if (!found) this.#foundIds.set(field, found = new Map());
    const kept = found.get(value);
    if (kept && mark !== null && kept.mark === mark && kept.store === store) return kept.id;
    const record = await this.findBy(store, field, value);
    if (!record) return null;
    if (found.size >= KEPT_OWNERS) found.clear();
    found.set(value, { store, mark, id: record.id });
    return record.id;
  }

  /** What {@link findIdBy} found, by field and value, and the change mark taken before. */
  readonly #foundIds = new Map<
    string,
    Map<IndexValue, { store: Store; mark: number | null; id: IndexValue }>
  >();

  /**
   * True when `record` holds the value of `indexKey`: an index key a committed bulk write released
   * points at its old owner until the write's last step deletes it.
   */
  holds(record: T, indexKey: Deno.KvKey): boolean {
    const wanted = keyText(indexKey);
    return this.indexes(record).some((index) => keyText(index.key) === wanted);
  }

  /** Changes whenever a record of the collection is written (see {@link versionKey}). */
  get versionKey(): Deno.KvKey {
    return versionKey(this.name);
  }

  /** The list last read, at `version`; `mark`: the store's change mark taken before that read. */
  #cache: { store: Store; version: string | null; mark: number | null; records: T[] } | null = null;
  /**
   * Per store, the reads of records ({@link get}) and of the version key ({@link all}), shared by
   * the callers that ask while one runs: each answer still comes from a read begun after its
   * caller asked (`lib/store/shared_read.ts`), so a write made before, by any process, is seen,
   * and a busy route costs one read per round trip, not per request.
   */
  readonly #gets = new WeakMap<
    Store,
    (ids: Iterable<IndexValue>) => Promise<Map<IndexValue, T | null>>
  >();
  readonly #versionReads = new WeakMap<Store, () => Promise<string | null>>();

  #version(store: Store): Promise<string | null> {
    let read = this.#versionReads.get(store);
    if (!read) {
      read = sharedRead(async () => (await store.get(this.versionKey)).versionstamp);
      this.#versionReads.set(store, read);
    }
    return read();
  }

  /**
   * Every record, in id order. The list is kept in memory and read again only when the
   * collection's version key changed, so that large lists cost one read, and that key is not even
   * read while the store's change mark (`Store.changeMark`) is the one taken before it last was;
   * treat it as read-only. What readers see of a collection changes only with its version key: a
   * bulk write sets it in its last commit, the one that makes it visible.
   */
  async all(store: Store): Promise<T[]> {
    const mark = store.changeMark();
    const cache = this.#cache?.store === store ? this.#cache : null;
    if (cache && mark !== null && cache.mark === mark) return cache.records;
    const version = await this.#version(store);
    if (cache && cache.version === version) {
      if (this.#cache === cache) cache.mark = mark; // checked at this mark
      return cache.records;
    }
    const records = (await listVisible<T>(store, { prefix: [this.name] })).map((entry) =>
      entry.value
    );
    this.#cache = { store, version, mark, records };
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
 * Every record of each of `collections` (ten at most), all read at one state of their version
 * keys: a write to several of them (a bulk import's last commit) shows in all of them or in none.
 *
 * @example
 * const [userList, lineList] = await allOf(store, [users, lines]);
 */
export async function allOf<
  // deno-lint-ignore no-explicit-any
  const C extends readonly Collection<any>[],
>(
  store: Store,
  collections: C,
): Promise<{ -readonly [K in keyof C]: C[K] extends Collection<infer T> ? T[] : never }> {
  const keys = collections.map((collection) => collection.versionKey);
  for (;;) {
    const before = await store.getMany(keys);
    const lists = await Promise.all(collections.map((collection) => collection.all(store)));
    const after = await store.getMany(keys);
    if (after.every((entry, i) => entry.versionstamp === before[i]!.versionstamp)) {
      return lists as never;
    }
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

interface Write {
  collection: Collection<{ id: IndexValue }>;
  key: Deno.KvKey;
  /** null deletes the record. */
  value: { id: IndexValue } | null;
}

type Build = (op: Deno.AtomicOperation) => Deno.AtomicOperation;

export interface TransactionOptions {
  /**
   * Commit with the transactions of other callers committing at the same time, as one atomic
   * operation when they touch different keys (`lib/store/shared_commit.ts`): for many small
   * writes at once, such as users' DND changes. Only `check`, `set` and `delete` in `also`.
   */
  shareCommit?: boolean;
}

/**
 * One optimistic transaction: every read is checked at commit, so the writes apply only if
 * nothing read has changed meanwhile. Index keys follow the records written. Reads see what
 * readers see (a bulk write shows only once committed): the list of hidden bulk writes is read
 * with the first read and checked at commit like the rest, and a record a hidden bulk write holds
 * cannot be written ({@link HeldByBulkWrite}, which {@link transact} waits out).
 */
export class Transaction {
  readonly #reads = new Map<
    string,
    { key: Deno.KvKey; versionstamp: string | null; value: unknown; held: boolean }
  >();
  readonly #writes = new Map<string, Write>();
  readonly #extras: ((op: Deno.AtomicOperation) => void)[] = [];
  #hidden: ReadonlySet<string> | null = null;

  constructor(readonly store: Store, readonly options: TransactionOptions = {}) {}

  async get<T extends { id: IndexValue }>(
    collection: Collection<T>,
    id: IndexValue,
  ): Promise<T | null> {
    return await this.#read(collection.key(id)) as T | null;
  }

  /**
   * `record`, as `Collection.findBy` read it from this store, taken as this transaction's first
   * read (checked at commit like any other): one read less. Any other record is read again. Only
   * for a transaction's first attempt: a record that changed since makes the commit fail, and the
   * next attempt must read it anew.
   */
  async reuse<T extends { id: IndexValue }>(
    collection: Collection<T>,
    record: T,
  ): Promise<T | null> {
    const state = readStates.get(record);
    const key = collection.key(record.id);
    if (!state || state.store !== this.store || this.#hidden !== null) {
      return await this.get(collection, record.id);
    }
    if (keyText(state.entry.key) !== keyText(key)) return await this.get(collection, record.id);
    this.#reads.set(keyText(hiddenWritesKey), { ...state.hidden, held: false });
    this.#hidden = hiddenWrites(state.hidden);
    const held = heldBy(state.entry.value, this.#hidden);
    this.#reads.set(keyText(key), {
      key,
      versionstamp: state.entry.versionstamp,
      value: record,
      held,
    });
    return record;
  }

  async findBy<T extends { id: IndexValue }>(
    collection: Collection<T>,
    field: string,
    value: IndexValue | IndexValue[],
  ): Promise<T | null> {
    const indexKey = collection.indexKey(field, value);
    const pointer = await this.#read(indexKey) as Deno.KvKey | null;
    const record = pointer ? await this.#read(pointer) as T | null : null;
    return record && collection.holds(record, indexKey) ? record : null;
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

  /**
   * Adds writes outside the collections to the commit, e.g. the events a change publishes
   * (`EventExport.stage`): durable with the records, or not at all.
   */
  also(add: (op: Deno.AtomicOperation) => void): void {
    this.#extras.push(add);
  }

  async #read(key: Deno.KvKey): Promise<unknown> {
    const known = this.#reads.get(keyText(key));
    if (known) return known.value;
    let entry: Deno.KvEntryMaybe<unknown>;
    if (this.#hidden === null) {
      const [first, hidden] = await this.store.getMany<unknown>([key, hiddenWritesKey]);
      this.#reads.set(keyText(hiddenWritesKey), { ...hidden!, held: false });
      this.#hidden = hiddenWrites(hidden!);
      entry = first!;
    } else entry = await this.store.get(key);
    const value = visibleValue(entry.value, this.#hidden);
    const held = heldBy(entry.value, this.#hidden);
    this.#reads.set(keyText(key), { key, versionstamp: entry.versionstamp, value, held });
    return value;
  }

  /**
   * Commits; answers false when something read changed, throws when a unique value is taken or
   * {@link HeldByBulkWrite} when a bulk write not yet committed holds a record written.
   */
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
      const read = this.#reads.get(keyText(write.key))!;
      if (read.held) throw new HeldByBulkWrite(write.key);
      const previous = read.value as { id: IndexValue } | null;
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
    const commit = this.options.shareCommit
      ? commitShared
      : (store: Store, build: Build) => store.commit(build);
    const result = await commit(this.store, (op) => {
      for (const read of this.#reads.values()) {
        if (!addedKeys.has(keyText(read.key))) {
          op.check({ key: read.key, versionstamp: read.versionstamp });
        }
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
      for (const add of this.#extras) add(op);
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
export async function transact<R>(
  store: Store,
  fn: (tx: Transaction) => Promise<R>,
  options: TransactionOptions = {},
): Promise<R> {
  const deadline = Date.now() + HELD_WAIT_MS;
  let waited = 0;
  for (let lost = 0, startedAt = performance.now(); keepRacing(lost, startedAt);) {
    const tx = new Transaction(store, options);
    const result = await fn(tx);
    try {
      if (await tx.commit()) return result;
      await raceBackoff(++lost);
    } catch (error) {
      // a bulk write replacing the record holds it until it commits or is undone
      if (!(error instanceof HeldByBulkWrite) || !await waitForHeld(store, deadline, waited++)) {
        throw error;
      }
    }
  }
  throw new StoreBusy("the records");
}

const LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789";

/** Random bytes not handed out yet, and where the next begin. */
let randomPool = new Uint8Array(0);
let randomAt = 0;

/**
 * `count` random bytes (at most 65,536), drawn from the system's generator 64 KiB at a time: one
 * `getRandomValues` per generated value was a third of the time an import spent building 5,000
 * users' records.
 */
export function randomBytes(count: number): Uint8Array {
  if (randomAt + count > randomPool.length) {
    randomPool = crypto.getRandomValues(new Uint8Array(65_536));
    randomAt = 0;
  }
  randomAt += count;
  return randomPool.subarray(randomAt - count, randomAt);
}

/** `length` random characters of `alphabet` (lowercase letters and digits by default). */
export function randomText(length: number, alphabet = LOWER_ALNUM): string {
  let text = "";
  for (const byte of randomBytes(length)) text += alphabet[byte % alphabet.length];
  return text;
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

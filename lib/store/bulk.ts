/**
 * Writes too large for one atomic operation (CSV imports of thousands of rows), all or nothing:
 * every unique value is checked first, then the records are written in chunks under a journal
 * that names what is being written. If the process dies in the middle, {@link recoverBulkWrites}
 * (run at start-up) puts back what the journal says was there before, so no half-written import
 * survives.
 */
import {
  type Collection,
  collectionNamed,
  noteLocalWrite,
  UniqueConflict,
  versionKey,
} from "./records.ts";
import type { Store } from "./store.ts";

type Id = string | number;
type AnyRecord = { id: Id };
// deno-lint-ignore no-explicit-any
type AnyCollection = Collection<any>;

/** One record to write; `previous` is the stored version it replaces (absent when creating). */
export interface BulkItem {
  collection: AnyCollection;
  record: AnyRecord;
  previous?: AnyRecord;
}

/** Deno KV's limits for one atomic operation, with room to spare. */
const MAX_CHECKS = 90;
const MAX_MUTATIONS = 900;
const MAX_BYTES = 600_000;

const journalKey = (id: string) => ["bulk_journal", id];
const createdKey = (id: string, n: number) => ["bulk_created", id, n];
const backupKey = (id: string, n: number) => ["bulk_backup", id, n];

/** Record keys per journal chunk, keeping each chunk well under Deno KV's 64 KiB values. */
const CREATED_PER_CHUNK = 1000;

/** A journal untouched for this long belongs to a process that died. */
export const STALE_JOURNAL_MS = 60_000;

interface Journal {
  createdChunks: number;
  backups: number;
  /** Refreshed after each chunk written, so that recovery leaves a live write alone. */
  touchedAt: number;
}
const keyText = (key: Deno.KvKey) => JSON.stringify(key);

/**
 * Reserves `count` consecutive ids of a collection's sequence, answering the first.
 *
 * @example
 * const first = await reserveIds(store, users, 5000);
 */
export async function reserveIds(store: Store, collection: AnyCollection, count: number) {
  const key = ["ids", collection.name];
  for (;;) {
    const current = await store.get<number>(key);
    const first = (current.value ?? 0) + 1;
    const result = await store.commit((op) =>
      op.check({ key, versionstamp: current.versionstamp }).set(key, first + count - 1)
    );
    if (result.ok) return first;
  }
}

interface IndexClaim {
  key: Deno.KvKey;
  owner: Deno.KvKey;
  field: string;
  value: Id | Id[];
  item: number;
}

/** The index keys each item adds and removes compared with its previous version. */
function indexChanges(items: BulkItem[]) {
  const added: IndexClaim[] = [];
  const removed: Deno.KvKey[] = [];
  items.forEach((item, i) => {
    const before = item.previous ? item.collection.indexes(item.previous) : [];
    const after = item.collection.indexes(item.record);
    const beforeKeys = new Set(before.map((index) => keyText(index.key)));
    const afterKeys = new Set(after.map((index) => keyText(index.key)));
    const owner = item.collection.key(item.record.id);
    for (const index of after) {
      if (!beforeKeys.has(keyText(index.key))) added.push({ ...index, owner, item: i });
    }
    for (const index of before) if (!afterKeys.has(keyText(index.key))) removed.push(index.key);
  });
  return { added, removed };
}

/** A unique value two items or an item and a stored record both claim. */
export interface BulkConflict {
  /** Index of the item in the list given to {@link bulkWrite}. */
  item: number;
  error: UniqueConflict;
}

/**
 * Checks that no item takes a unique value held by another item or by a stored record (other
 * than one that the same write gives up). Answers every conflict; nothing is written.
 */
export async function findBulkConflicts(store: Store, items: BulkItem[]): Promise<BulkConflict[]> {
  const { added, removed } = indexChanges(items);
  const released = new Set(removed.map(keyText));
  const conflicts: BulkConflict[] = [];
  const claimed = new Map<string, IndexClaim>();
  for (const claim of added) {
    const first = claimed.get(keyText(claim.key));
    if (first) {
      conflicts.push({ item: claim.item, error: new UniqueConflict(claim.field, claim.value) });
    } else claimed.set(keyText(claim.key), claim);
  }
  const toCheck = [...claimed.values()].filter((claim) => !released.has(keyText(claim.key)));
  for (let i = 0; i < toCheck.length; i += 10) {
    const chunk = toCheck.slice(i, i + 10);
    const entries = await store.getMany<Deno.KvKey>(chunk.map((claim) => claim.key));
    entries.forEach((entry, j) => {
      const claim = chunk[j]!;
      if (entry.value && keyText(entry.value) !== keyText(claim.owner)) {
        conflicts.push({ item: claim.item, error: new UniqueConflict(claim.field, claim.value) });
      }
    });
  }
  return conflicts.sort((a, b) => a.item - b.item);
}

/**
 * Writes every item, all or nothing. Throws {@link UniqueConflict} (and writes nothing) when a
 * unique value is taken; call {@link findBulkConflicts} first to report every conflict at once.
 */
export async function bulkWrite(store: Store, items: BulkItem[]): Promise<void> {
  const id = crypto.randomUUID();
  const replaced = items.filter((item) => item.previous);
  const created = items.filter((item) => !item.previous)
    .map((item) => [item.collection.name, item.record.id]);
  // the journal first: what to delete, and the versions to put back, should this write not end
  for (let n = 0; n < replaced.length; n++) {
    const item = replaced[n]!;
    await store.set(backupKey(id, n), { collection: item.collection.name, record: item.previous });
  }
  const createdChunks = Math.ceil(created.length / CREATED_PER_CHUNK);
  for (let n = 0; n < createdChunks; n++) {
    await store.set(
      createdKey(id, n),
      created.slice(n * CREATED_PER_CHUNK, (n + 1) * CREATED_PER_CHUNK),
    );
  }
  const journal: Journal = { createdChunks, backups: replaced.length, touchedAt: Date.now() };
  await store.set(journalKey(id), journal);
  try {
    await writeChunks(
      store,
      items,
      () => store.set(journalKey(id), { ...journal, touchedAt: Date.now() }),
    );
  } catch (error) {
    await undo(store, id);
    throw error;
  }
  await forget(store, id, journal);
}

async function writeChunks(
  store: Store,
  items: BulkItem[],
  touch: () => Promise<unknown>,
): Promise<void> {
  const { added, removed } = indexChanges(items);
  const released = new Set(removed.map(keyText));
  const claims = new Map<number, IndexClaim[]>();
  for (const claim of added) claims.set(claim.item, [...claims.get(claim.item) ?? [], claim]);
  // released keys are deleted first, so a value handed from one record to another is free
  for (let i = 0; i < removed.length; i += MAX_MUTATIONS) {
    const chunk = removed.slice(i, i + MAX_MUTATIONS);
    await store.commit((op) => chunk.reduce((next, key) => next.delete(key), op));
  }
  let op: { checks: IndexClaim[]; sets: [Deno.KvKey, unknown][]; bytes: number } = {
    checks: [],
    sets: [],
    bytes: 0,
  };
  const flush = async () => {
    if (!op.sets.length) return;
    const { checks, sets } = op;
    noteLocalWrite();
    const result = await store.commit((atomic) => {
      for (const claim of checks) {
        if (!released.has(keyText(claim.key))) atomic.check({ key: claim.key, versionstamp: null });
      }
      for (const [key, value] of sets) atomic.set(key, value);
      for (const name of new Set(sets.map(([key]) => String(key[0])))) {
        if (collectionNamed(name)) atomic.set(versionKey(name), true);
      }
      return atomic;
    });
    if (!result.ok) {
      const taken = await findTaken(store, checks);
      throw taken ?? new Error("bulk write interrupted by a concurrent change");
    }
    op = { checks: [], sets: [], bytes: 0 };
    await touch();
  };
  for (const [i, item] of items.entries()) {
    const itemClaims = claims.get(i) ?? [];
    const bytes = JSON.stringify(item.record).length + 200 * (itemClaims.length + 1);
    if (
      op.checks.length + itemClaims.length > MAX_CHECKS ||
      op.sets.length + itemClaims.length + 1 > MAX_MUTATIONS || op.bytes + bytes > MAX_BYTES
    ) await flush();
    op.checks.push(...itemClaims);
    op.sets.push([item.collection.key(item.record.id), item.record]);
    for (const claim of itemClaims) op.sets.push([claim.key, claim.owner]);
    op.bytes += bytes;
  }
  await flush();
}

async function findTaken(store: Store, claims: IndexClaim[]): Promise<UniqueConflict | null> {
  for (const claim of claims) {
    const owner = (await store.get<Deno.KvKey>(claim.key)).value;
    if (owner && keyText(owner) !== keyText(claim.owner)) {
      return new UniqueConflict(claim.field, claim.value);
    }
  }
  return null;
}

/** Deletes what the journal's write created and puts back the versions it replaced. */
async function undo(store: Store, id: string): Promise<void> {
  const journal = (await store.get<Journal>(journalKey(id))).value;
  if (!journal) return;
  for (let n = 0; n < journal.createdChunks; n++) {
    const created = (await store.get<[string, Id][]>(createdKey(id, n))).value ?? [];
    for (let i = 0; i < created.length; i += 10) {
      const keys = created.slice(i, i + 10).flatMap(([name, recordId]) =>
        collectionNamed(name) ? [collectionNamed(name)!.key(recordId)] : []
      );
      const stored = (await store.getMany<AnyRecord>(keys)).filter((entry) => entry.value);
      if (!stored.length) continue;
      noteLocalWrite();
      await store.commit((op) => {
        for (const entry of stored) {
          const collection = collectionNamed(String(entry.key[0]))!;
          for (const index of collection.indexes(entry.value!)) op.delete(index.key);
          op.delete(entry.key);
          op.set(versionKey(collection.name), true);
        }
        return op;
      });
    }
  }
  for (let n = 0; n < journal.backups; n++) {
    const backup = (await store.get<{ collection: string; record: AnyRecord }>(backupKey(id, n)))
      .value;
    const collection = backup && collectionNamed(backup.collection);
    if (!backup || !collection) continue;
    const current = await collection.get(store, backup.record.id);
    noteLocalWrite();
    await store.commit((op) => {
      for (const index of current ? collection.indexes(current) : []) op.delete(index.key);
      for (const index of collection.indexes(backup.record)) {
        op.set(index.key, collection.key(backup.record.id));
      }
      op.set(versionKey(collection.name), true);
      return op.set(collection.key(backup.record.id), backup.record);
    });
  }
  await forget(store, id, journal);
}

async function forget(store: Store, id: string, journal: Journal): Promise<void> {
  for (let n = 0; n < journal.backups; n++) await store.delete(backupKey(id, n));
  for (let n = 0; n < journal.createdChunks; n++) await store.delete(createdKey(id, n));
  await store.delete(journalKey(id));
}

/**
 * True while a bulk write is under way in any process sharing the store (a journal touched less
 * than {@link STALE_JOURNAL_MS} ago), so that work following the records' changes can wait for
 * its end instead of acting on every chunk.
 *
 * @example
 * if (!await bulkWriteInProgress(store)) await regenerate();
 */
export async function bulkWriteInProgress(store: Store, now = Date.now()): Promise<boolean> {
  const journals = await store.list<Journal>({ prefix: ["bulk_journal"] });
  return journals.some((entry) => now - entry.value.touchedAt < STALE_JOURNAL_MS);
}

/**
 * Undoes every bulk write that a dead process left unfinished (its journal untouched for
 * {@link STALE_JOURNAL_MS}); run at start-up and every minute.
 *
 * @example
 * await recoverBulkWrites(store, Date.now());
 */
export async function recoverBulkWrites(store: Store, now: number): Promise<number> {
  const journals = await store.list<Journal>({ prefix: ["bulk_journal"] });
  const stale = journals.filter((entry) => now - entry.value.touchedAt >= STALE_JOURNAL_MS);
  for (const entry of stale) await undo(store, String(entry.key[1]));
  return stale.length;
}

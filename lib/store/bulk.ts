/**
 * Writes too large for one atomic operation (CSV imports of thousands of rows): all or nothing,
 * and invisible until their last commit, to every reader of every process sharing the store.
 *
 * A {@link StagedWrite} has an id, a journal (`["bulk_journal", id]`, refreshed every
 * {@link HEARTBEAT_MS} while its process lives) and a phase (`["bulk_phase", id]`: `writing`,
 * `committed` or `aborting`). Every commit of the write checks that the phase has not moved, so once
 * recovery has taken the write for dead (its journal untouched for {@link STALE_JOURNAL_MS}, the
 * phase set to `aborting` against the journal's versionstamp) nothing more of it lands, and its last
 * commit cannot happen. What makes the write invisible until then depends on its kind:
 *
 * - Records of collections ({@link bulkWrite}; `users_csv.ts`): each record is stored as a
 *   `StagedValue` (records.ts) naming the write, holding the record and the version it replaces.
 *   The write's id is listed under `hiddenWritesKey` from its first commit; every read of
 *   `records.ts` shows the version replaced while the id is listed, the new one after. The last
 *   commit removes the id from the list and sets the version keys of the collections written: from
 *   that commit on, every reader sees the whole write.
 * - Contacts and callback requests register kinds of their own ({@link stagedKind}; `contacts.ts`,
 *   `callback_requests.ts`).
 *
 * {@link recoverBulkWrites} (at start-up, every minute, and while a write waits for a record held
 * by a write of a dead process) undoes the stale writes not committed, and finishes the committed
 * ones whose process died before their last steps.
 */
import { Unreachable } from "../errors.ts";
import {
  type Collection,
  collectionNamed,
  HELD_WAIT_MS,
  heldBy,
  hiddenWrites,
  hiddenWritesKey,
  isStaged,
  noteLocalWrite,
  onHeldRecords,
  type StagedValue,
  UniqueConflict,
  versionKey,
  visibleValue,
  waitForHeld,
} from "./records.ts";
import type { Store } from "./store.ts";

type Id = string | number;
type AnyRecord = { id: Id };
// deno-lint-ignore no-explicit-any
type AnyCollection = Collection<any>;

/** A journal untouched for this long belongs to a process that died. */
export const STALE_JOURNAL_MS = 10_000;

/** How often a live write refreshes its journal. */
export const HEARTBEAT_MS = 2_000;

/**
 * Deno KV's limits for one atomic operation, with room to spare: 1,000 mutations and 800 KiB
 * everywhere; 100 checks in Deno 2 (measured), 10 in older KV Connect servers, which remote
 * stores get.
 */
const MAX_MUTATIONS = 900;
const MAX_BYTES = 600_000;
const maxChecks = (store: Store) =>
  store.location === null || /^https?:\/\//i.test(store.location) ? 10 : 100;

type Phase = "writing" | "committed" | "aborting";

interface Journal {
  kind: string;
  /** What the kind needs to undo or finish the write. */
  info: unknown;
  /** The write's id is listed under `hiddenWritesKey` until its last commit. */
  hidden: boolean;
  touchedAt: number;
}

const journalKey = (id: string): Deno.KvKey => ["bulk_journal", id];
const phaseKey = (id: string): Deno.KvKey => ["bulk_phase", id];

/** What undoes or finishes a kind of staged write; both may run twice, or after a crash. */
export interface StagedKind<Info> {
  /** Removes every trace of a write that will not commit. */
  undo(store: Store, id: string, info: Info): Promise<void>;
  /** The steps after the last commit (nothing readers see changes). */
  finish(store: Store, id: string, info: Info): Promise<void>;
}

const kinds = new Map<string, StagedKind<unknown>>();

/**
 * Registers a kind of staged write, so that recovery, in any process, can undo or finish writes of
 * that kind.
 *
 * @example
 * stagedKind("contacts", { undo: undoContactImport, finish: () => Promise.resolve() });
 */
export function stagedKind<Info>(name: string, kind: StagedKind<Info>): void {
  kinds.set(name, kind as StagedKind<unknown>);
}

/**
 * The write was taken for dead and undone: its process could not refresh its journal for
 * {@link STALE_JOURNAL_MS} (a store too slow to answer); answered 503 like a store failure.
 */
export class BulkWriteAborted extends Unreachable {
  constructor() {
    super(
      "the import was undone: the store did not answer for too long",
      new Error("bulk write journal stale"),
    );
    this.name = "BulkWriteAborted";
  }
}

/**
 * A record the write replaces changed after it was read, or another import not yet committed
 * holds it: nothing was written; reading again and writing again may succeed.
 */
export class BulkWriteInterrupted extends Error {
  constructor(detail: string) {
    super(`bulk write interrupted: ${detail}`);
    this.name = "BulkWriteInterrupted";
  }
}

/** Removes `id` from the hidden writes, when listed. */
async function unhide(store: Store, id: string): Promise<void> {
  for (;;) {
    const list = await store.get<string[]>(hiddenWritesKey);
    if (!(list.value ?? []).includes(id)) return;
    const rest = list.value!.filter((other) => other !== id);
    const result = await store.commit((op) => {
      op.check(list);
      return rest.length ? op.set(hiddenWritesKey, rest) : op.delete(hiddenWritesKey);
    });
    if (result.ok) return;
  }
}

async function forget(store: Store, id: string): Promise<void> {
  await store.commit((op) => op.delete(journalKey(id)).delete(phaseKey(id)));
}

async function undoWrite(store: Store, id: string, journal: Journal): Promise<void> {
  await kinds.get(journal.kind)?.undo(store, id, journal.info);
  if (journal.hidden) await unhide(store, id);
  await forget(store, id);
}

/**
 * One write in several commits, invisible until the last (see the module's comment). The owner
 * calls {@link StagedWrite.begin}, adds {@link StagedWrite.gate} to every commit, then
 * {@link StagedWrite.commit} and {@link StagedWrite.finish}, or {@link StagedWrite.abort} on a
 * failure.
 */
export class StagedWrite<Info> {
  #gate: Deno.AtomicCheck;
  #timer: ReturnType<typeof setInterval> | null = null;
  #beating: Promise<unknown> | null = null;

  private constructor(
    readonly store: Store,
    readonly id: string,
    readonly journal: Journal,
    phaseVersionstamp: string,
  ) {
    this.#gate = { key: phaseKey(id), versionstamp: phaseVersionstamp };
    this.#timer = setInterval(() => this.#beat(), HEARTBEAT_MS);
  }

  /**
   * Begins a write of `kind`: its journal, its phase and, when `hidden`, its id among the hidden
   * writes, in one atomic operation with what `build` adds. Answers null, writing nothing, when a
   * check `build` added fails.
   */
  static async begin<Info>(
    store: Store,
    kind: string,
    info: Info,
    { hidden, build }: {
      hidden: boolean;
      build?: (op: Deno.AtomicOperation, id: string) => Deno.AtomicOperation;
    },
  ): Promise<StagedWrite<Info> | null> {
    const id = crypto.randomUUID();
    for (;;) {
      const list = hidden ? await store.get<string[]>(hiddenWritesKey) : null;
      const journal: Journal = { kind, info, hidden, touchedAt: Date.now() };
      const result = await store.commit((op) => {
        op.check({ key: phaseKey(id), versionstamp: null })
          .set(journalKey(id), journal)
          .set(phaseKey(id), "writing");
        if (list) op.check(list).set(hiddenWritesKey, [...list.value ?? [], id]);
        return build ? build(op, id) : op;
      });
      if (result.ok) return new StagedWrite<Info>(store, id, journal, result.versionstamp);
      const moved = list && (await store.get(hiddenWritesKey)).versionstamp !== list.versionstamp;
      if (!moved && build) return null;
    }
  }

  get info(): Info {
    return this.journal.info as Info;
  }

  /** Adds to `op` the check that the write is still under way (not taken for dead). */
  gate(op: Deno.AtomicOperation): Deno.AtomicOperation {
    return op.check(this.#gate);
  }

  /** After a failed commit: throws {@link BulkWriteAborted} when the gate is what failed. */
  async assertAlive(): Promise<void> {
    const phase = await this.store.get(phaseKey(this.id));
    if (phase.versionstamp !== this.#gate.versionstamp) throw new BulkWriteAborted();
  }

  /**
   * The last commit, with what `build` adds: from it on, readers see the whole write. Answers
   * false, committing nothing, when a check `build` added fails; throws
   * {@link BulkWriteAborted} when the write was taken for dead.
   */
  async commit(build?: (op: Deno.AtomicOperation) => Deno.AtomicOperation): Promise<boolean> {
    for (;;) {
      const list = this.journal.hidden ? await this.store.get<string[]>(hiddenWritesKey) : null;
      const rest = (list?.value ?? []).filter((other) => other !== this.id);
      const result = await this.store.commit((op) => {
        op.check(this.#gate).set(phaseKey(this.id), "committed");
        if (list) {
          op.check(list);
          if (rest.length) op.set(hiddenWritesKey, rest);
          else op.delete(hiddenWritesKey);
        }
        return build ? build(op) : op;
      });
      if (result.ok) {
        this.#gate = { key: phaseKey(this.id), versionstamp: result.versionstamp };
        return true;
      }
      await this.assertAlive();
      const moved = list &&
        (await this.store.get(hiddenWritesKey)).versionstamp !== list.versionstamp;
      if (!moved) return false;
    }
  }

  /**
   * After the last commit: the kind's last steps, then the journal goes. A failure there leaves
   * the journal, and recovery finishes the write once it is stale; the write itself is done.
   */
  async finish(): Promise<void> {
    try {
      await kinds.get(this.journal.kind)?.finish(this.store, this.id, this.info);
      await this.#stop();
      await forget(this.store, this.id);
    } catch {
      // committed: what is left is recovery's (the caller's answer stands)
      await this.#stop();
    }
  }

  /**
   * Undoes the write after a failure of its owner (the caller throws the failure again). Recovery
   * may be undoing it at the same time: undoing twice is harmless.
   */
  async abort(): Promise<void> {
    await this.#stop();
    await this.store.commit((op) => op.check(this.#gate).set(phaseKey(this.id), "aborting"));
    await undoWrite(this.store, this.id, this.journal);
  }

  #beat(): void {
    this.#beating ??= this.store.commit((op) =>
      op.check(this.#gate).set(journalKey(this.id), { ...this.journal, touchedAt: Date.now() })
    ).catch(() => {}).finally(() => (this.#beating = null));
  }

  async #stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#beating;
  }
}

/**
 * Undoes every staged write that a dead process left unfinished (its journal untouched for
 * {@link STALE_JOURNAL_MS}), and finishes the committed ones; answers how many. Run at start-up,
 * every minute, and by writes waiting for a record such a write holds.
 *
 * @example
 * await recoverBulkWrites(store, Date.now());
 */
export async function recoverBulkWrites(store: Store, now: number): Promise<number> {
  const journals = await store.list<Journal>({ prefix: ["bulk_journal"] });
  let recovered = 0;
  for (const entry of journals) {
    const journal = entry.value;
    const kind = kinds.get(journal.kind);
    if (now - journal.touchedAt < STALE_JOURNAL_MS || !kind) continue;
    const id = String(entry.key[1]);
    const phase = await store.get<Phase>(phaseKey(id));
    if (phase.value === "committed") {
      await kind.finish(store, id, journal.info);
      await forget(store, id);
    } else {
      if (phase.value === "writing") {
        // against the journal read: a write that refreshed it meanwhile lives
        const taken = await store.commit((op) =>
          op.check(entry, phase).set(phaseKey(id), "aborting")
        );
        if (!taken.ok) continue;
      }
      await undoWrite(store, id, journal);
    }
    recovered++;
  }
  return recovered;
}

onHeldRecords((store) => recoverBulkWrites(store, Date.now()));

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

/**
 * What a caller adds to the last commit of a bulk write, e.g. the job the write belongs to ending
 * (`lib/store/jobs.ts`): `prepare` runs just before it, `add` puts checks and writes in it. When a
 * check `add` made fails, nothing of the write shows and it throws {@link BulkWriteInterrupted}.
 */
export interface LastCommit {
  prepare(): Promise<void>;
  add(op: Deno.AtomicOperation): Deno.AtomicOperation;
}

/** One record to write; `previous` is the stored version it replaces (absent when creating). */
export interface BulkItem {
  collection: AnyCollection;
  record: AnyRecord;
  previous?: AnyRecord;
}

const keyText = (key: Deno.KvKey) => JSON.stringify(key);

interface IndexClaim {
  key: Deno.KvKey;
  owner: Deno.KvKey;
  field: string;
  value: Id | Id[];
  item: number;
}

/** {@link indexChanges} of lists of items seen: checking and writing a list read it once. */
const changesOf = new WeakMap<BulkItem[], { added: IndexClaim[]; removed: Deno.KvKey[] }>();

/** The index keys each item adds and removes compared with its previous version. */
function indexChanges(items: BulkItem[]) {
  const known = changesOf.get(items);
  if (known) return known;
  const added: IndexClaim[] = [];
  const removed: Deno.KvKey[] = [];
  items.forEach((item, i) => {
    const after = item.collection.indexes(item.record);
    const owner = item.collection.key(item.record.id);
    if (!item.previous) {
      // created: every key is new (the common case of an import, worth skipping the sets)
      for (const index of after) added.push({ ...index, owner, item: i });
      return;
    }
    const before = item.collection.indexes(item.previous);
    const beforeKeys = new Set(before.map((index) => keyText(index.key)));
    const afterKeys = new Set(after.map((index) => keyText(index.key)));
    for (const index of after) {
      if (!beforeKeys.has(keyText(index.key))) added.push({ ...index, owner, item: i });
    }
    for (const index of before) if (!afterKeys.has(keyText(index.key))) removed.push(index.key);
  });
  changesOf.set(items, { added, removed });
  return { added, removed };
}

/** A unique value two items or an item and a stored record both claim. */
export interface BulkConflict {
  /** Index of the item in the list given to {@link bulkWrite}. */
  item: number;
  error: UniqueConflict;
}

/** The conflicts now, and the values stored records hold among them. */
async function conflictsNow(store: Store, items: BulkItem[]) {
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
  const taken: { claim: IndexClaim; pointer: unknown }[] = [];
  for (let i = 0; i < toCheck.length; i += 10) {
    const chunk = toCheck.slice(i, i + 10);
    const entries = await store.getMany<unknown>(chunk.map((claim) => claim.key));
    entries.forEach((entry, j) => {
      const claim = chunk[j]!;
      if (entry.value && keyText(entry.value as Deno.KvKey) !== keyText(claim.owner)) {
        taken.push({ claim, pointer: entry.value });
      }
    });
  }
  for (const { claim } of taken) {
    conflicts.push({ item: claim.item, error: new UniqueConflict(claim.field, claim.value) });
  }
  return { conflicts: conflicts.sort((a, b) => a.item - b.item), taken };
}

/**
 * True when one of the `taken` values is held rather than taken: no record readers see holds it,
 * because an import not committed claimed it, or a committed one released it and has not deleted
 * its index key yet. Without any bulk write under way, nothing is held.
 */
async function anyHeld(store: Store, taken: { claim: IndexClaim; pointer: unknown }[]) {
  const list = await store.get(hiddenWritesKey);
  const journals = await store.list({ prefix: ["bulk_journal"] }, { limit: 1 });
  if (!list.value && !journals.length) return false;
  const hidden = hiddenWrites(list);
  for (let i = 0; i < taken.length; i += 10) {
    const chunk = taken.slice(i, i + 10);
    const owners = chunk.map(({ pointer }) => visibleValue(pointer, hidden) as Deno.KvKey | null);
    if (chunk.some(({ pointer }, j) => heldBy(pointer, hidden) || !owners[j])) return true;
    const records = await store.getMany<unknown>(owners as Deno.KvKey[]);
    for (const [j, { claim }] of chunk.entries()) {
      const raw = records[j]!.value;
      const record = visibleValue(raw, hidden) as AnyRecord | null;
      const collection = collectionNamed(String(owners[j]![0]));
      if (heldBy(raw, hidden) || !record || (collection && !collection.holds(record, claim.key))) {
        return true;
      }
    }
  }
  return false;
}

/**
 * Checks that no item takes a unique value held by another item or by a stored record (other
 * than one that the same write gives up). Answers every conflict; nothing is written. A value
 * claimed by an import not committed yet is waited for (up to `waitMs`): it is taken if that
 * import commits, free if it is undone.
 */
export async function findBulkConflicts(
  store: Store,
  items: BulkItem[],
  waitMs = HELD_WAIT_MS,
): Promise<BulkConflict[]> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const { conflicts, taken } = await conflictsNow(store, items);
    let waited = 0;
    while (taken.length && await anyHeld(store, taken)) {
      if (!await waitForHeld(store, deadline, waited++)) return conflicts;
    }
    if (!waited) return conflicts;
    // the imports waited for committed or were undone: read every value again
  }
}

/**
 * Writes every item, all or nothing, or answers every conflict and writes nothing: the unique
 * values are checked by the write itself (each claimed in the commit that writes it), and only
 * when one is taken are they all read to name every conflict ({@link findBulkConflicts}, which
 * waits for values claimed by imports not committed). Reading every value first would cost as much
 * as the write.
 *
 * @example
 * const conflicts = await bulkWriteOrConflicts(store, items); // [] once written
 */
export async function bulkWriteOrConflicts(
  store: Store,
  items: BulkItem[],
  options: { lastCommit?: LastCommit } = {},
): Promise<BulkConflict[]> {
  const { added } = indexChanges(items);
  if (new Set(added.map((claim) => keyText(claim.key))).size < added.length) {
    return await findBulkConflicts(store, items); // two items claim one value
  }
  for (let attempt = 1;; attempt++) {
    try {
      await bulkWrite(store, items, options);
      return [];
    } catch (error) {
      if (!(error instanceof UniqueConflict) || attempt === 3) throw error;
      const conflicts = await findBulkConflicts(store, items);
      if (conflicts.length) return conflicts;
      // the value was held by an import that was undone since: write again
    }
  }
}

/** What the journal of {@link bulkWrite} lists: chunks of `[collection, id]` keys. */
interface CollectionsInfo {
  createdChunks: number;
  replacedChunks: number;
}

const createdKey = (id: string, n: number): Deno.KvKey => ["bulk_created", id, n];
const replacedKey = (id: string, n: number): Deno.KvKey => ["bulk_replaced", id, n];

/** Record keys per journal chunk, keeping each chunk well under Deno KV's 64 KiB values. */
const KEYS_PER_CHUNK = 1000;

/** A stored record `[collection, id]`, as readers of journals name it. */
type RecordName = [string, Id];

/** Reads `keys` ten at a time (Deno KV's limit), in order. */
async function readAll(store: Store, keys: Deno.KvKey[]): Promise<Deno.KvEntryMaybe<unknown>[]> {
  const reads = [];
  for (let i = 0; i < keys.length; i += 10) {
    reads.push(store.getMany<unknown>(keys.slice(i, i + 10)));
  }
  return (await Promise.all(reads)).flat();
}

/** The record names of one kind the journal of `id` lists. */
async function journalRecords(
  store: Store,
  key: (id: string, n: number) => Deno.KvKey,
  id: string,
  chunks: number,
): Promise<RecordName[]> {
  const entries = await readAll(store, Array.from({ length: chunks }, (_, n) => key(id, n)));
  return entries.flatMap((entry) => (entry.value as RecordName[] | null) ?? []);
}

/** A record the write `id` staged, as stored. */
interface StagedEntry {
  name: RecordName;
  collection: AnyCollection;
  entry: Deno.KvEntry<StagedValue>;
}

/**
 * The records among `names` that the write `id` staged, read a block at a time: ranges of ids
 * when they are dense (ids reserved for an import follow each other), else ten keys at a time.
 */
async function* stagedEntries(
  store: Store,
  id: string,
  names: RecordName[],
): AsyncGenerator<StagedEntry[]> {
  const mine = (name: RecordName, entry: Deno.KvEntryMaybe<unknown>): StagedEntry[] => {
    const collection = collectionNamed(name[0]);
    return collection && isStaged(entry.value) && entry.value.__bulk === id
      ? [{ name, collection, entry: entry as Deno.KvEntry<StagedValue> }]
      : [];
  };
  // by collection, then by id: an import's records are a few dense ranges
  const sorted = names.toSorted(([a, x], [b, y]) =>
    a !== b
      ? (a < b ? -1 : 1)
      : typeof x === "number" && typeof y === "number"
      ? x - y
      : String(x) < String(y)
      ? -1
      : 1
  );
  for (let i = 0; i < sorted.length; i += 1000) {
    const block = sorted.slice(i, i + 1000);
    const [collection, first] = block[0]!;
    const ids = block.map(([, recordId]) => recordId);
    const numeric = block.every(([name, recordId]) =>
      name === collection && typeof recordId === "number"
    );
    const low = Math.min(...ids as number[]);
    const high = Math.max(...ids as number[]);
    if (numeric && typeof first === "number" && high - low < 2 * block.length) {
      const wanted = new Set(ids);
      const entries = await store.list<unknown>({
        start: [collection, low],
        end: [collection, high + 1],
      });
      yield entries.flatMap((entry) =>
        wanted.has(entry.key[1] as number) ? mine([collection, entry.key[1] as number], entry) : []
      );
    } else {
      const keys = block.flatMap(([name, recordId]) => {
        const known = collectionNamed(name);
        return known ? [known.key(recordId)] : [];
      });
      const entries = await readAll(store, keys);
      yield entries.flatMap((entry) => mine([String(entry.key[0]), entry.key[1] as Id], entry));
    }
  }
}

/** What one record's change checks and writes. */
interface Change {
  name: RecordName;
  checks: Deno.AtomicCheck[];
  sets: [Deno.KvKey, unknown][];
  deletes: Deno.KvKey[];
}

/**
 * Commits `changes` in as few atomic operations as Deno KV's limits allow; answers the records
 * whose operation failed a check (to read again).
 */
async function commitChanges(store: Store, changes: Change[]): Promise<RecordName[]> {
  const failed: RecordName[] = [];
  const checksPerOp = maxChecks(store);
  let op: Change[] = [];
  let checks = 0;
  let mutations = 0;
  const flush = async () => {
    if (!op.length) return;
    const batch = op;
    op = [];
    checks = mutations = 0;
    const result = await store.commit((atomic) => {
      for (const change of batch) {
        for (const check of change.checks) atomic.check(check);
        for (const [key, value] of change.sets) atomic.set(key, value);
        for (const key of change.deletes) atomic.delete(key);
      }
      return atomic;
    });
    if (!result.ok) failed.push(...batch.map((change) => change.name));
  };
  for (const change of changes) {
    const size = change.sets.length + change.deletes.length;
    if (checks + change.checks.length > checksPerOp || mutations + size > MAX_MUTATIONS) {
      await flush();
    }
    op.push(change);
    checks += change.checks.length;
    mutations += size;
  }
  await flush();
  return failed;
}

/**
 * Applies `change` to the records `names` that the write `id` staged: `change` answers what to
 * write from the record as stored and the entries of the index keys it names (every entry used is
 * checked, and a record whose operation failed is read again).
 */
async function eachStaged(
  store: Store,
  id: string,
  names: RecordName[],
  change: (
    staged: StagedEntry,
    index: (key: Deno.KvKey) => Deno.KvEntryMaybe<unknown>,
    out: Change,
  ) => void,
  { readIndexes = true }: { readIndexes?: boolean } = {},
): Promise<void> {
  let pending = names;
  for (let round = 0; pending.length; round++) {
    const failed: RecordName[] = [];
    for await (const block of stagedEntries(store, id, pending)) {
      const indexKeys = new Map<string, Deno.KvKey>();
      if (readIndexes) {
        for (const { collection, entry } of block) {
          for (const record of [entry.value.next, entry.value.previous]) {
            if (!record) continue;
            for (const index of collection.indexes(record as AnyRecord)) {
              indexKeys.set(keyText(index.key), index.key);
            }
          }
        }
      }
      const indexEntries = new Map(
        (await readAll(store, [...indexKeys.values()])).map((entry) => [keyText(entry.key), entry]),
      );
      const changes = block.map((staged) => {
        const out: Change = { name: staged.name, checks: [staged.entry], sets: [], deletes: [] };
        change(staged, (indexKey) => {
          const entry = indexEntries.get(keyText(indexKey))!;
          if (!out.checks.includes(entry)) out.checks.push(entry);
          return entry;
        }, out);
        return out;
      });
      failed.push(...await commitChanges(store, changes));
    }
    if (round === 50) throw new Error("bulk write recovery abandoned: the records kept changing");
    pending = failed;
  }
}

/**
 * Undoes a write of records: a created record goes with the index keys it claimed (nobody else
 * can hold them meanwhile: they exist); a replaced one is put back, and so are the index keys
 * handed over to it.
 */
async function undoRecords(store: Store, id: string, info: CollectionsInfo): Promise<void> {
  const created = await journalRecords(store, createdKey, id, info.createdChunks);
  await eachStaged(store, id, created, ({ collection, entry }, _index, out) => {
    out.deletes.push(entry.key);
    for (const index of collection.indexes(entry.value.next as AnyRecord)) {
      out.deletes.push(index.key);
    }
  }, { readIndexes: false });
  const replaced = await journalRecords(store, replacedKey, id, info.replacedChunks);
  await eachStaged(store, id, replaced, ({ collection, entry }, index, out) => {
    const previous = entry.value.previous as AnyRecord;
    const kept = new Set(collection.indexes(previous).map((i) => keyText(i.key)));
    for (const { key: indexKey } of collection.indexes(entry.value.next as AnyRecord)) {
      if (kept.has(keyText(indexKey))) continue;
      const stored = index(indexKey);
      if (isStaged(stored.value) && stored.value.__bulk === id) {
        // handed over by another record of the write: back to its owner
        if (stored.value.previous) out.sets.push([indexKey, stored.value.previous]);
        else out.deletes.push(indexKey);
      } else if (stored.value && keyText(stored.value as Deno.KvKey) === keyText(entry.key)) {
        out.deletes.push(indexKey);
      }
    }
    out.sets.push([entry.key, previous]);
  });
  await dropLists(store, id, info);
}

/**
 * The last steps of a committed write of records: each replaced record is stored plain again,
 * the index keys it released are deleted and those handed over to it point at it plainly. Created
 * records keep their staged form, which readers see as the record (rewriting them all would cost as
 * much as the write): their next ordinary write stores them plain.
 */
async function finishRecords(store: Store, id: string, info: CollectionsInfo): Promise<void> {
  const names = await journalRecords(store, replacedKey, id, info.replacedChunks);
  await eachStaged(store, id, names, ({ collection, entry }, index, out) => {
    const next = entry.value.next as AnyRecord;
    const kept = new Set(collection.indexes(next).map((i) => keyText(i.key)));
    for (const { key: indexKey } of collection.indexes(entry.value.previous as AnyRecord)) {
      if (kept.has(keyText(indexKey))) continue;
      const stored = index(indexKey);
      if (!isStaged(stored.value) && keyText(stored.value as Deno.KvKey) === keyText(entry.key)) {
        out.deletes.push(indexKey);
      }
    }
    for (const { key: indexKey } of collection.indexes(next)) {
      const stored = index(indexKey);
      if (isStaged(stored.value) && stored.value.__bulk === id) {
        out.sets.push([indexKey, stored.value.next]);
      }
    }
    out.sets.push([entry.key, next]);
  });
  await dropLists(store, id, info);
}

async function dropLists(store: Store, id: string, info: CollectionsInfo): Promise<void> {
  const keys = [
    ...Array.from({ length: info.createdChunks }, (_, n) => createdKey(id, n)),
    ...Array.from({ length: info.replacedChunks }, (_, n) => replacedKey(id, n)),
  ];
  for (let i = 0; i < keys.length; i += MAX_MUTATIONS) {
    await store.commit((op) => keys.slice(i, i + MAX_MUTATIONS).reduce((o, k) => o.delete(k), op));
  }
}

stagedKind<CollectionsInfo>("records", { undo: undoRecords, finish: finishRecords });

/** Sets `entries` in as few atomic operations as Deno KV's limits allow. */
async function setAll(store: Store, entries: [Deno.KvKey, unknown][], bytesOf: number) {
  const perOp = Math.max(1, Math.floor(MAX_BYTES / bytesOf));
  for (let i = 0; i < entries.length; i += perOp) {
    const chunk = entries.slice(i, i + perOp);
    await store.commit((op) => chunk.reduce((o, [key, value]) => o.set(key, value), op));
  }
}

/**
 * Writes every item, all or nothing, visible to readers only once every record is written (see
 * the module's comment). Throws {@link UniqueConflict} (and writes nothing) when a unique value is
 * taken, {@link BulkWriteInterrupted} when a record replaced changed since it was read (or a check
 * of `lastCommit` failed); call {@link findBulkConflicts} first to report every conflict at once.
 */
export async function bulkWrite(
  store: Store,
  items: BulkItem[],
  { lastCommit }: { lastCommit?: LastCommit } = {},
): Promise<void> {
  const nameOf = (item: BulkItem): RecordName => [item.collection.name, item.record.id];
  const created = items.filter((item) => !item.previous).map(nameOf);
  const replaced = items.filter((item) => item.previous);
  // what is replaced must still be what was read: its versionstamp is checked when it is written
  const current = await readAll(store, replaced.map((item) => item.collection.key(item.record.id)));
  const hidden = replaced.length ? hiddenWrites(await store.get(hiddenWritesKey)) : new Set([]);
  for (const [i, item] of replaced.entries()) {
    const stored = current[i]!.value;
    const name = `${item.collection.name} ${item.record.id}`;
    if (heldBy(stored, hidden)) throw new BulkWriteInterrupted(`another import holds ${name}`);
    if (JSON.stringify(visibleValue(stored, hidden)) !== JSON.stringify(item.previous)) {
      throw new BulkWriteInterrupted(`${name} changed meanwhile`);
    }
  }
  const info: CollectionsInfo = {
    createdChunks: Math.ceil(created.length / KEYS_PER_CHUNK),
    replacedChunks: Math.ceil(replaced.length / KEYS_PER_CHUNK),
  };
  const write = (await StagedWrite.begin(store, "records", info, { hidden: true }))!;
  try {
    // the journal's lists first: recovery must know every record the write may have staged
    const lists: [Deno.KvKey, unknown][] = [];
    for (let n = 0; n < info.createdChunks; n++) {
      lists.push([
        createdKey(write.id, n),
        created.slice(n * KEYS_PER_CHUNK, (n + 1) * KEYS_PER_CHUNK),
      ]);
    }
    for (let n = 0; n < info.replacedChunks; n++) {
      lists.push([
        replacedKey(write.id, n),
        replaced.slice(n * KEYS_PER_CHUNK, (n + 1) * KEYS_PER_CHUNK).map(nameOf),
      ]);
    }
    await setAll(store, lists, 40_000);
    const versionstamps = new Map(current.map((entry) => [keyText(entry.key), entry.versionstamp]));
    await writeChunks(store, write, items, versionstamps);
    // the last commit: the write leaves the hidden list and every reader sees all of it
    await lastCommit?.prepare();
    noteLocalWrite();
    const names = new Set(items.map((item) => item.collection.name));
    const committed = await write.commit((op) => {
      for (const name of names) op.set(versionKey(name), true);
      return lastCommit ? lastCommit.add(op) : op;
    });
    if (!committed) throw new BulkWriteInterrupted("a check of its last commit failed");
  } catch (error) {
    await write.abort();
    throw error;
  }
  await write.finish();
}

/** Writes the staged records and their index keys in chunks within Deno KV's limits. */
async function writeChunks(
  store: Store,
  write: StagedWrite<CollectionsInfo>,
  items: BulkItem[],
  versionstamps: Map<string, string | null>,
): Promise<void> {
  const { added, removed } = indexChanges(items);
  // a value one record releases and another takes is handed over: staged, from its owner
  const released = new Set(removed.map(keyText));
  const handedOver = released.size ? added.filter((claim) => released.has(keyText(claim.key))) : [];
  const handed = await readAll(store, handedOver.map((claim) => claim.key));
  const handedEntries = new Map(handed.map((entry) => [keyText(entry.key), entry]));
  const claims = new Map<number, IndexClaim[]>();
  for (const claim of added) {
    const list = claims.get(claim.item);
    if (list) list.push(claim);
    else claims.set(claim.item, [claim]);
  }
  const checksPerOp = maxChecks(store) - 1; // the gate
  let op: {
    checks: Deno.AtomicCheck[];
    claims: IndexClaim[];
    sets: [Deno.KvKey, unknown][];
    bytes: number;
  } = { checks: [], claims: [], sets: [], bytes: 0 };
  const flush = async () => {
    if (!op.sets.length) return;
    const { checks, sets } = op;
    const result = await store.commit((atomic) => {
      write.gate(atomic);
      for (const check of checks) atomic.check(check);
      for (const [key, value] of sets) atomic.set(key, value);
      return atomic;
    });
    if (!result.ok) {
      await write.assertAlive();
      const taken = await findTaken(store, op.claims);
      throw taken ?? new BulkWriteInterrupted("a record changed meanwhile");
    }
    op = { checks: [], claims: [], sets: [], bytes: 0 };
  };
  for (const [i, item] of items.entries()) {
    const key = item.collection.key(item.record.id);
    const staged: StagedValue = { __bulk: write.id, next: item.record };
    if (item.previous) staged.previous = item.previous;
    const checks: Deno.AtomicCheck[] = [];
    const sets: [Deno.KvKey, unknown][] = [[key, staged]];
    if (item.previous) checks.push({ key, versionstamp: versionstamps.get(keyText(key)) ?? null });
    const itemClaims = claims.get(i) ?? [];
    for (const claim of itemClaims) {
      const from = handedEntries.size ? handedEntries.get(keyText(claim.key)) : undefined;
      if (from) {
        checks.push(from);
        sets.push([claim.key, { __bulk: write.id, next: claim.owner, previous: from.value }]);
      } else {
        checks.push({ key: claim.key, versionstamp: null });
        sets.push([claim.key, claim.owner]);
      }
    }
    const bytes = JSON.stringify(staged).length + 200 * sets.length;
    if (
      op.checks.length + checks.length > checksPerOp ||
      op.sets.length + sets.length > MAX_MUTATIONS || op.bytes + bytes > MAX_BYTES
    ) await flush();
    op.checks.push(...checks);
    op.claims.push(...itemClaims);
    op.sets.push(...sets);
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

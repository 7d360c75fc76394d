import { StoreRejected, type StoreRejection, StoreUnavailable } from "../errors.ts";

/**
 * What Deno KV answers to an operation it never accepts, whatever the store's state, by the start
 * of its message (ext/kv: `KvErrorKind` and the checks of `01_db.ts`; they are `TypeError`s, as
 * are some failures of a store that is down, such as `database is locked`, hence the messages).
 */
const REJECTIONS: readonly [RegExp, StoreRejection][] = [
  [/^key too large for read\b/i, "key_too_large_for_read"],
  [/^key too large for write\b/i, "key_too_large_for_write"],
  [/^(value too large|enqueue payload too large)\b/i, "value_too_large"],
  [/^(too many (checks|mutations)|total (mutation|key) size too large)\b/i, "write_too_large"],
  [/^too many (ranges|entries|keys)\b/i, "read_too_large"],
  [
    /^(expected string, number, bigint, ArrayBufferView, boolean|key cannot be empty|invalid boundary key|start key is|end key is|invalid range|invalid cursor|cursor out of bounds)/i,
    "invalid_key",
  ],
  [/could not be cloned|^failed to perform '\w+' mutation on a non-U64 value/i, "invalid_value"],
  [
    /^(invalid check|invalid versionstamp|invalid mutation|invalid enqueue|expireIn must be|limit must be greater than 0)/i,
    "invalid_operation",
  ],
];

/**
 * Why Deno KV refused `error`'s operation as malformed, or null when `error` is no such refusal
 * (the store is down, locked, or its handle lost).
 *
 * @example
 * storeRejection(new TypeError("Key too large for write (max 2048 bytes)")); // "key_too_large_for_write"
 * storeRejection(new TypeError("database is locked")); // null
 */
export function storeRejection(error: unknown): StoreRejection | null {
  if (!(error instanceof Error)) return null;
  for (const [pattern, kind] of REJECTIONS) if (pattern.test(error.message)) return kind;
  return null;
}

/**
 * How long an operation answered "database is locked" is run again, from its first try: less than
 * SQLite's busy timeout in Deno KV (5 s), so that a try that waited it out is never run again, and
 * about as long as an operation may already wait for another connection's lock.
 */
const LOCK_WAIT_MS = 4_000;

/**
 * True when `error` is SQLite's "database is locked" and the operation began less than
 * {@link LOCK_WAIT_MS} ago: another connection to the store file (another process sharing it, or a
 * handle of this one) committed between this transaction's reads and its write, or was opening the
 * file. SQLite then fails at once without waiting out its busy timeout, and the operation did
 * nothing, so it can be run again. A lock that outlasted the timeout (5 s in one try) is the store
 * being held: that one is not retried. A time, not a count of tries or a limit per try: on a loaded
 * machine a try also waits behind the other operations of the store's thread (with ten tries of a
 * second at most, or fifty lost races in `transact`, CI answered one change of 1,500 in
 * `tests/e2e/shared_store_test.ts` 503).
 */
function lockedAtOnce(error: unknown, sinceFirstTryMs: number): boolean {
  return error instanceof Error && /database is locked/i.test(error.message) &&
    sinceFirstTryMs < LOCK_WAIT_MS;
}

/**
 * A random pause before trying again after losing `attempt` races in a row (1, 2, …): up to
 * 2^attempt ms, at most 64, so that writers racing for the same records (in this process or
 * another sharing the store) spread out instead of colliding again at once.
 */
export const raceBackoff = (attempt: number): Promise<void> =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2 ** attempt, 64)));

/** A write losing races to concurrent changes tries at least this many times… */
const RACE_TRIES = 50;
/** …and for at least this long (ms) from its first try, before giving up (`StoreBusy`). */
const RACE_WAIT_MS = 5_000;

/**
 * Whether a write that lost `lost` races in a row since `startedAt` (`performance.now()`) tries
 * again: {@link RACE_TRIES} tries and {@link RACE_WAIT_MS} both, so that a machine too loaded to
 * make fifty tries in a few seconds does not give up sooner, and bounded all the same (the pauses
 * of {@link raceBackoff} are at most 64 ms).
 *
 * @example
 * for (let lost = 0, startedAt = performance.now(); keepRacing(lost, startedAt);) { … }
 */
export const keepRacing = (lost: number, startedAt: number): boolean =>
  lost < RACE_TRIES || performance.now() - startedAt < RACE_WAIT_MS;

/** What failed in a store operation: the store itself, or a refusal of that kind. */
export type StoreFailure = "unavailable" | StoreRejection;

export type FailureListener = (failure: StoreFailure) => void;

/** An entry that is not there. */
const absent = <T>(key: Deno.KvKey): Deno.KvEntryMaybe<T> => ({
  key,
  value: null,
  versionstamp: null,
});

/**
 * The one door to Deno KV. An operation the store refuses as malformed (a key or value too large,
 * too many mutations…; {@link storeRejection}) turns into {@link StoreRejected}; any other failure
 * into {@link StoreUnavailable} (503 `Unreachable`), and a handle that was lost is reopened on the
 * next operation, so the service recovers by itself when the store is back.
 *
 * A key too large to read can never have been written (Deno KV reads keys one byte longer than it
 * writes): reading it answers "absent", as for any key nobody wrote, so that a value sent by a
 * client (a path, a field looked up) that no record can have is simply unknown.
 */
export class Store {
  #kv: Deno.Kv | null;
  #reopening: Promise<Deno.Kv> | null = null;
  #closed = false;
  readonly #failureListeners: FailureListener[] = [];
  /** Writes begun and writes ended through this object: a write in flight changes the mark twice. */
  #writes = 0;
  /** A store file's commit counter ({@link changeMark}), once loaded; null when it cannot be had. */
  #dataVersion: (() => number | null) | null | undefined;
  #closeDataVersion: (() => void) | null = null;

  /** `null` is the platform's default store (Deno Deploy's managed KV). */
  private constructor(readonly location: string | null, kv: Deno.Kv) {
    this.#kv = kv;
  }

  /**
   * Opens the store at `location`: a file path (its folder is created), `:memory:`, an
   * `http(s)://` KV Connect URL, or `null` for the platform's default (Deno Deploy's managed KV).
   *
   * @example
   * const store = await Store.open(":memory:");
   */
  static async open(location: string | null): Promise<Store> {
    return new Store(location, await openKv(location));
  }

  /**
   * Tells `listener` of every failed operation (the metrics count them): `unavailable`, or the
   * kind of a refusal. A key too large to read is not one: it reads as absent.
   */
  onFailure(listener: FailureListener): void {
    this.#failureListeners.push(listener);
  }

  /**
   * Runs `op` against the KV handle; a failure becomes {@link StoreUnavailable}. `op` is run again
   * when SQLite answered "database is locked" at once (see {@link lockedAtOnce}): it did nothing.
   */
  async run<T>(op: (kv: Deno.Kv) => Promise<T>): Promise<T> {
    const firstTry = performance.now();
    for (let attempt = 1;; attempt++) {
      let kv: Deno.Kv;
      try {
        kv = await this.#handle();
      } catch (error) {
        this.#failed("unavailable");
        throw error;
      }
      try {
        return await op(kv);
      } catch (error) {
        if (lockedAtOnce(error, performance.now() - firstTry)) {
          await raceBackoff(attempt);
          continue;
        }
        throw this.#failure(error);
      }
    }
  }

  /** What a failed operation's `error` becomes, counted. */
  #failure(error: unknown): Error {
    const rejection = storeRejection(error);
    if (rejection) {
      if (rejection !== "key_too_large_for_read") this.#failed(rejection);
      return new StoreRejected(rejection, error);
    }
    if (error instanceof Deno.errors.BadResource && this.location !== ":memory:") {
      this.#kv = null; // the handle is gone: the next operation opens a new one
    }
    this.#failed("unavailable");
    return new StoreUnavailable(error);
  }

  #failed(kind: StoreFailure): void {
    for (const listener of this.#failureListeners) listener(kind);
  }

  /** Reads `key`; one too large to have been written is absent. */
  async get<T>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>> {
    try {
      return await this.run((kv) => kv.get<T>(key));
    } catch (error) {
      if (!tooLargeToRead(error)) throw error;
      return absent<T>(key);
    }
  }

  /** Reads several keys at once (at most 10, a Deno KV limit); those too large are absent. */
  async getMany<T>(keys: readonly Deno.KvKey[]): Promise<Deno.KvEntryMaybe<T>[]> {
    try {
      return await this.run((kv) => kv.getMany<T[]>(keys as Deno.KvKey[]));
    } catch (error) {
      if (!tooLargeToRead(error)) throw error;
      return await Promise.all(keys.map((key) => this.get<T>(key)));
    }
  }

  /**
   * Reads a whole key range into memory; callers bound it with `limit`. A prefix too large to
   * read is the prefix of no key written: the range is empty.
   */
  async list<T>(
    selector: Deno.KvListSelector,
    options?: Deno.KvListOptions,
  ): Promise<Deno.KvEntry<T>[]> {
    try {
      return await this.run((kv) => Array.fromAsync(kv.list<T>(selector, options)));
    } catch (error) {
      const prefixOnly = "prefix" in selector && !("start" in selector) && !("end" in selector);
      if (!prefixOnly || !tooLargeToRead(error)) throw error;
      return [];
    }
  }

  /**
   * Counts the entries of a range, at most `limit`, without keeping them (Deno KV has no count:
   * each entry is read).
   */
  count(selector: Deno.KvListSelector, limit?: number): Promise<number> {
    return this.run(async (kv) => {
      let count = 0;
      const batchSize = Math.min(limit ?? 1000, 1000);
      for await (const _ of kv.list(selector, { limit, batchSize })) count++;
      return count;
    });
  }

  set(
    key: Deno.KvKey,
    value: unknown,
    options?: { expireIn?: number },
  ): Promise<Deno.KvCommitResult> {
    return this.#write((kv) => kv.set(key, value, options));
  }

  delete(key: Deno.KvKey): Promise<void> {
    return this.#write((kv) => kv.delete(key));
  }

  /** Builds and commits one atomic operation; `ok: false` means a `check` failed. */
  commit(build: (op: Deno.AtomicOperation) => Deno.AtomicOperation) {
    return this.#write((kv) => build(kv.atomic()).commit());
  }

  /** {@link run} for a write, counted before and after (see {@link changeMark}). */
  async #write<T>(op: (kv: Deno.Kv) => Promise<T>): Promise<T> {
    this.#writes++;
    try {
      return await this.run(op);
    } finally {
      this.#writes++;
    }
  }

  /**
   * A mark of everything committed to the store, had without waiting: while it stays the same,
   * nothing was committed, by this process or by any other sharing the store, so what was read
   * after taking it may be answered again without reading. Null when the store cannot tell (a
   * remote store, Deno Deploy's; a file before its first call has loaded SQLite; a store closed or
   * whose handle was lost): then read.
   *
   * In memory, only this object writes: the count of its writes begun and ended. A file: SQLite's
   * `PRAGMA data_version` on a connection of its own (`node:sqlite`, loaded at the first call),
   * which changes with every commit of any other connection, Deno KV's of this process included
   * (a few µs, where a Deno KV read costs tens).
   *
   * @example
   * const mark = store.changeMark(); // before reading
   * const version = await store.get(versionKey); // kept with `mark`; unread while the mark holds
   */
  changeMark(): number | null {
    // a store closed or whose handle was lost answers what a read would: unavailable
    if (this.#closed || this.#kv === null) return null;
    if (this.location === ":memory:") return this.#writes;
    if (this.#dataVersion === undefined) {
      this.#dataVersion = null;
      if (this.location !== null && !/^https?:\/\//i.test(this.location)) {
        this.#loadDataVersion(this.location);
      }
    }
    return this.#dataVersion?.() ?? null;
  }

  /** Opens the store file's own SQLite connection for {@link changeMark}; null if it cannot. */
  async #loadDataVersion(path: string): Promise<void> {
    try {
      const { DatabaseSync } = await import("node:sqlite");
      if (this.#closed) return;
      const db = new DatabaseSync(path, { readOnly: true });
      const statement = db.prepare("PRAGMA data_version");
      const read = () => (statement.get() as { data_version: number }).data_version;
      read();
      this.#closeDataVersion = () => db.close();
      this.#dataVersion = () => {
        try {
          return read();
        } catch {
          return null; // the file is gone or locked: read through Deno KV
        }
      };
    } catch {
      // no permission to open it, or no SQLite file there: every answer is read
    }
  }

  /** True when a read succeeds; used by `GET /ready`. */
  async ping(): Promise<boolean> {
    try {
      await this.get(["meta", "ping"]);
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    this.#closed = true;
    this.#kv?.close();
    this.#kv = null;
    this.#closeDataVersion?.();
    this.#closeDataVersion = null;
    this.#dataVersion = null;
  }

  async #handle(): Promise<Deno.Kv> {
    if (this.#kv) return this.#kv;
    if (this.#closed || this.location === ":memory:") {
      throw new StoreUnavailable(new Error("the store was closed"));
    }
    this.#reopening ??= openKv(this.location).finally(() => (this.#reopening = null));
    try {
      this.#kv = await this.#reopening;
    } catch (error) {
      throw new StoreUnavailable(error);
    }
    return this.#kv;
  }
}

const tooLargeToRead = (error: unknown) =>
  error instanceof StoreRejected && error.kind === "key_too_large_for_read";

async function openKv(location: string | null): Promise<Deno.Kv> {
  if (location === null) return await Deno.openKv();
  const remote = /^https?:\/\//i.test(location);
  if (!remote && location !== ":memory:") {
    const slash = location.lastIndexOf("/");
    if (slash > 0) await Deno.mkdir(location.slice(0, slash), { recursive: true });
  }
  return await Deno.openKv(location);
}

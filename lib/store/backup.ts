/**
 * Backup and restore of the whole store (`deno task backup`, `deno task restore`; deploy/README.md
 * "Backup and restore", docs/decisions.md "Backup and restore").
 *
 * A backup is one point in time of a local store file, taken while servers write to it: SQLite's
 * online backup (`backup()` of `node:sqlite`, what `sqlite3 .backup` does) copies every page in one
 * step, under one read transaction, and Deno KV commits each atomic operation as one SQLite
 * transaction, so the copy holds every commit made before that instant, whole, and nothing of the
 * later ones; writers are never blocked (the file is in WAL mode). Deno KV itself has no snapshot
 * read (`kv.list` over all keys reads page after page, each at its own point in time), a
 * store-wide freeze would need every writer of every process to honour it, and `VACUUM INTO` is
 * refused by Deno's `node:sqlite` without `--allow-all` (it attaches a database).
 *
 * The backup file is that SQLite copy, itself a Deno KV store file, plus a `svc_backup` table
 * (format, time, source, the snapshot's versionstamp, the entry count). A restore reads it through
 * Deno KV (keys and values decoded by Deno itself, from a temporary copy: the backup file is never
 * changed) and through SQLite (each entry's expiry, joined on the stored key bytes), and writes
 * every entry not yet expired into the target store in atomic batches, with its remaining
 * `expireIn`. The target is any store Deno KV opens (a file, or a KV Connect URL); it must be empty
 * unless `force`, which first deletes everything in it.
 */
import { backup, DatabaseSync } from "node:sqlite";
import { dirname, resolve } from "node:path";
import { encodeKvKey, hex } from "./kv_key_bytes.ts";
import { Store } from "./store.ts";

/** The `format` a backup file holds in its `svc_backup` table. */
export const BACKUP_FORMAT = "svc-backup 1";

/** A backup or restore refused or failed, with a message for the person running it. */
export class BackupError extends Error {
  override name = "BackupError";
}

/** What `backupStore` wrote. */
export interface BackupSummary {
  /** The backup file, absolute. */
  file: string;
  /** The store file it was taken from, absolute. */
  source: string;
  /** ISO time at which the snapshot was taken. */
  createdAt: string;
  /** Versionstamp of the last commit the snapshot holds. */
  versionstamp: string;
  /** Key-value entries in the snapshot (expired ones not yet purged included). */
  entries: number;
  bytes: number;
}

/** What `restoreStore` did. */
export interface RestoreSummary {
  file: string;
  target: string;
  /** When the backup was taken, and its versionstamp. */
  createdAt: string;
  versionstamp: string;
  /** Entries written into the target. */
  written: number;
  /** Entries of the backup that had expired by the restore (not written). */
  expired: number;
  /** Entries deleted from the target first (`force` on a store that was not empty). */
  cleared: number;
}

/** True for a store location that is a local file (not `:memory:`, not KV Connect, not Deploy). */
export function isLocalFile(location: string | null): location is string {
  return location !== null && location !== ":memory:" && !/^[a-z][a-z0-9+.-]*:\/\//i.test(location);
}

const exists = async (path: string) => {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
};

/** `SELECT` of one row, or undefined. */
function one(db: DatabaseSync, sql: string): Record<string, unknown> | undefined {
  return db.prepare(sql).get() as Record<string, unknown> | undefined;
}

/** Refuses a SQLite file that is not a Deno KV store. */
function checkKvFile(db: DatabaseSync, path: string): void {
  let found: unknown;
  try {
    found = one(db, "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'kv'");
  } catch (error) {
    throw new BackupError(`${path} is not a Deno KV store file: ${(error as Error).message}`);
  }
  if (!found) throw new BackupError(`${path} is not a Deno KV store file (no kv table)`);
}

function quickCheck(db: DatabaseSync, path: string): void {
  const result = one(db, "PRAGMA quick_check")?.quick_check;
  if (result !== "ok") throw new BackupError(`${path} is damaged: ${String(result)}`);
}

/** The versionstamp of the last commit of a Deno KV file: its `data_version` row. */
function lastVersionstamp(db: DatabaseSync): string {
  const row = one(db, "SELECT version, seq FROM data_version WHERE k = 0");
  const version = BigInt(Number(row?.version ?? 0));
  const seq = Number(row?.seq ?? 0);
  return version.toString(16).padStart(16, "0") + seq.toString(16).padStart(4, "0");
}

/** Opens a SQLite file, mapping "cannot open" to a {@link BackupError}. */
function openSqlite(path: string, readOnly: boolean): DatabaseSync {
  try {
    const db = new DatabaseSync(path, { readOnly });
    // a writer holding the lock for a moment (a WAL checkpoint) is waited for, not failed on
    db.exec("PRAGMA busy_timeout = 10000");
    return db;
  } catch (error) {
    throw new BackupError(`cannot open ${path}: ${(error as Error).message}`);
  }
}

/**
 * Writes a consistent snapshot of the store file `location` to `file` (a relative path is taken
 * from the working directory) while servers keep writing to it. The file appears complete or not
 * at all (written beside it, then renamed); an existing `file` is refused unless `force`.
 *
 * @example
 * const summary = await backupStore("./data/svc.kv", "/backups/svc-2026-11-22.kvbackup");
 */
export async function backupStore(
  location: string | null,
  file: string,
  { force = false, now = () => new Date() }: { force?: boolean; now?: () => Date } = {},
): Promise<BackupSummary> {
  if (!isLocalFile(location)) {
    const named = JSON.stringify(location ?? "the platform's KV");
    throw new BackupError(
      `SVC_KV is ${named}: a backup is taken of a local store file; for a KV Connect server, ` +
        "run it on that server's host with SVC_KV set to its SQLite file; for Deno Deploy, use " +
        "Deploy's own KV backups",
    );
  }
  let source: string;
  try {
    source = await Deno.realPath(location);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new BackupError(`there is no store at ${location} (SVC_KV)`);
    }
    throw error;
  }
  const target = resolve(file);
  if (!force && await exists(target)) {
    throw new BackupError(`${target} exists: give another name, or --force to replace it`);
  }
  await Deno.mkdir(dirname(target), { recursive: true });
  const partial = `${target}.partial-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const createdAt = now().toISOString();
    const db = openSqlite(source, true);
    try {
      checkKvFile(db, source);
      // every page in one step, so under one read transaction: every commit before it, whole,
      // and nothing after (SQLite would start a step-wise copy over if the source changed)
      await backup(db, partial, { rate: -1 });
    } finally {
      db.close();
    }
    const snapshot = openSqlite(partial, false);
    let summary: BackupSummary;
    try {
      quickCheck(snapshot, partial);
      const versionstamp = lastVersionstamp(snapshot);
      const entries = Number(one(snapshot, "SELECT count(*) AS n FROM kv")?.n ?? 0);
      snapshot.exec(
        "CREATE TABLE svc_backup (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
      );
      const insert = snapshot.prepare("INSERT INTO svc_backup (name, value) VALUES (?, ?)");
      const meta = {
        format: BACKUP_FORMAT,
        created_at: createdAt,
        source,
        versionstamp,
        entries: String(entries),
        deno: Deno.version.deno,
      };
      for (const [name, value] of Object.entries(meta)) insert.run(name, value);
      // one self-contained file: the copy is in WAL mode like its source
      snapshot.exec("PRAGMA journal_mode = DELETE");
      summary = { file: target, source, createdAt, versionstamp, entries, bytes: 0 };
    } finally {
      snapshot.close();
    }
    const handle = await Deno.open(partial, { read: true, write: true });
    try {
      await handle.sync();
    } finally {
      handle.close();
    }
    await Deno.rename(partial, target);
    summary.bytes = (await Deno.stat(target)).size;
    return summary;
  } catch (error) {
    for (const suffix of ["", "-wal", "-shm", "-journal"]) {
      await Deno.remove(partial + suffix).catch(() => {});
    }
    throw error;
  }
}

/** The `svc_backup` table of a backup file; refuses a file that is not a backup. */
function backupMeta(db: DatabaseSync, file: string): Record<string, string> {
  if (
    !one(db, "SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = 'svc_backup'")
  ) {
    throw new BackupError(`${file} is not an svc backup (no svc_backup table)`);
  }
  const rows = db.prepare("SELECT name, value FROM svc_backup").all() as {
    name: string;
    value: string;
  }[];
  const meta = Object.fromEntries(rows.map((row) => [row.name, row.value]));
  if (meta.format !== BACKUP_FORMAT) {
    throw new BackupError(
      `${file} is in format ${JSON.stringify(meta.format)}, not ${BACKUP_FORMAT}`,
    );
  }
  return meta;
}

/** Entries per atomic operation, and their keys' and values' bytes (Deno KV: 1,000, 800 KiB). */
const BATCH_ENTRIES = 500;
const BATCH_BYTES = 512 * 1024;
const BATCH_KEY_BYTES = 64 * 1024;

interface Row {
  k: Uint8Array;
  size: number;
  expiresAt: number;
}

/**
 * Loads the backup `file` into the store at `location` (created if need be), which must hold no
 * entry unless `force` (then everything in it is deleted first). No server may run on the target
 * meanwhile.
 *
 * @example
 * const summary = await restoreStore("/backups/svc-2026-11-22.kvbackup", "./data/svc.kv");
 */
export async function restoreStore(
  file: string,
  location: string | null,
  { force = false, now = () => Date.now() }: { force?: boolean; now?: () => number } = {},
): Promise<RestoreSummary> {
  if (location === ":memory:") {
    throw new BackupError("SVC_KV is :memory:: a restore there would vanish with this process");
  }
  const path = resolve(file);
  if (!await exists(path)) throw new BackupError(`there is no backup at ${path}`);
  const db = openSqlite(path, true);
  let copy: string | null = null;
  let kv: Deno.Kv | null = null;
  let store: Store | null = null;
  try {
    checkKvFile(db, path);
    const meta = backupMeta(db, path);
    quickCheck(db, path);
    // Deno KV opens a copy: opening the backup itself would turn it to WAL and purge expired keys
    copy = await Deno.makeTempFile({ prefix: "svc-restore-", suffix: ".kv" });
    await Deno.copyFile(path, copy);
    kv = await Deno.openKv(copy);
    try {
      store = await Store.open(location);
    } catch (error) {
      throw new BackupError(`cannot open the store ${location} (SVC_KV): ${error}`);
    }
    const cleared = await emptyTarget(store, location, force);
    const { written, expired, expiries } = await copyEntries(kv, db, store, now);
    const stored = await store.run((target) => count(target));
    // an entry whose expiry passed during the restore may be gone already
    const lapsed = expiries.filter((at) => at <= now()).length;
    if (stored > written || stored < written - lapsed) {
      throw new BackupError(
        `the store holds ${stored} entries after writing ${written}: another process wrote to it ` +
          "during the restore; stop every server on it and restore again with --force",
      );
    }
    return {
      file: path,
      target: location ?? "the platform's KV",
      createdAt: meta.created_at ?? "",
      versionstamp: meta.versionstamp ?? "",
      written,
      expired,
      cleared,
    };
  } finally {
    store?.close();
    kv?.close();
    db.close();
    if (copy !== null) {
      for (const suffix of ["", "-wal", "-shm"]) await Deno.remove(copy + suffix).catch(() => {});
    }
  }
}

async function count(kv: Deno.Kv): Promise<number> {
  let n = 0;
  for await (const _ of kv.list({ prefix: [] }, { batchSize: 1000 })) n++;
  return n;
}

/** Refuses a target holding entries, or with `force` deletes them all; answers how many. */
async function emptyTarget(store: Store, location: string | null, force: boolean) {
  const first = await store.list({ prefix: [] }, { limit: 1 });
  if (!first.length) return 0;
  if (!force) {
    throw new BackupError(
      `the store ${location} (SVC_KV) is not empty: restore into an empty store, or give --force ` +
        "to delete everything in it first (stop every server on it before)",
    );
  }
  let cleared = 0;
  for (;;) {
    const keys = (await store.list({ prefix: [] }, { limit: BATCH_ENTRIES })).map((e) => e.key);
    if (!keys.length) return cleared;
    const result = await store.commit((op) => {
      for (const key of keys) op.delete(key);
      return op;
    });
    if (!result.ok) throw new BackupError("the store changed while it was being emptied");
    cleared += keys.length;
  }
}

/**
 * Writes every entry of the backup (read through Deno KV, in key order) with its expiry (read
 * through SQLite, in the same order: SQLite orders the stored key bytes as Deno KV does).
 */
async function copyEntries(kv: Deno.Kv, db: DatabaseSync, store: Store, now: () => number) {
  const rows = db.prepare(
    "SELECT k, length(v) AS size, expiration_ms AS expiresAt FROM kv ORDER BY k",
  ).iterate() as IterableIterator<Row>;
  let row = rows.next();
  let batch: { key: Deno.KvKey; value: unknown; expireIn?: number }[] = [];
  let bytes = 0;
  let keyBytes = 0;
  let written = 0;
  let expired = 0;
  /** When the written entries that expire do so (ms). */
  const expiries: number[] = [];
  const flush = async () => {
    if (!batch.length) return;
    const entries = batch;
    const result = await store.commit((op) => {
      for (const { key, value, expireIn } of entries) {
        op.set(key, value, expireIn === undefined ? undefined : { expireIn });
      }
      return op;
    });
    if (!result.ok) throw new BackupError("a batch of the restore was refused by the store");
    written += entries.length;
    batch = [];
    bytes = keyBytes = 0;
  };
  for await (const entry of kv.list({ prefix: [] }, { batchSize: BATCH_ENTRIES })) {
    const keyHex = hex(encodeKvKey(entry.key));
    // rows Deno KV no longer lists (expired meanwhile) are passed over
    while (!row.done && hex(row.value.k) < keyHex) row = rows.next();
    if (row.done || hex(row.value.k) !== keyHex) {
      throw new BackupError(`the backup's key ${JSON.stringify(String(entry.key))} has no row`);
    }
    const { size, expiresAt } = row.value;
    row = rows.next();
    let expireIn: number | undefined;
    if (expiresAt >= 0) {
      expireIn = expiresAt - now();
      if (expireIn <= 0) {
        expired++;
        continue;
      }
    }
    const keySize = keyHex.length / 2;
    if (
      batch.length >= BATCH_ENTRIES || bytes + keySize + size > BATCH_BYTES ||
      keyBytes + keySize > BATCH_KEY_BYTES
    ) {
      await flush();
    }
    batch.push({ key: entry.key, value: entry.value, expireIn });
    if (expireIn !== undefined) expiries.push(expiresAt);
    bytes += keySize + size;
    keyBytes += keySize;
  }
  await flush();
  return { written, expired, expiries };
}

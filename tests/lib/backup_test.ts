/**
 * `lib/store/backup.ts` and `lib/store/kv_key_bytes.ts` on store files: every key part and value
 * type round-trips, expiries are kept (and entries expired by the restore skipped), large stores go
 * in several batches, and the key bytes are those Deno KV stores. The real tasks, the real server
 * and a backup under write load are in `tests/e2e/backup_test.ts`.
 */
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { BackupError, backupStore, isLocalFile, restoreStore } from "../../lib/store/backup.ts";
import { encodeKvKey, hex } from "../../lib/store/kv_key_bytes.ts";
import { withTempDir } from "../e2e/server.ts";

const KEY_PARTS: Deno.KvKeyPart[] = [
  "",
  "a\0b",
  "é日本",
  new Uint8Array([0, 1, 255, 0]),
  new Uint8Array(),
  0,
  -0,
  1,
  -1,
  1.5,
  -2.5,
  1e300,
  -1e-300,
  Infinity,
  -Infinity,
  NaN,
  Number.MAX_SAFE_INTEGER,
  0n,
  1n,
  -1n,
  255n,
  256n,
  -255n,
  -256n,
  2n ** 63n,
  -(2n ** 63n),
  2n ** 64n,
  -(2n ** 64n),
  2n ** 100n,
  -(2n ** 100n),
  true,
  false,
];

async function entriesOf(path: string) {
  const kv = await Deno.openKv(path);
  try {
    return (await Array.fromAsync(kv.list({ prefix: [] }))).map(({ key, value }) => ({
      key,
      value,
    }));
  } finally {
    kv.close();
  }
}

function expiries(path: string): Map<string, number> {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT k, expiration_ms AS at FROM kv WHERE at >= 0").all() as {
      k: Uint8Array;
      at: number;
    }[];
    return new Map(rows.map((row) => [hex(row.k), row.at]));
  } finally {
    db.close();
  }
}

Deno.test("encodeKvKey gives the bytes Deno KV stores, for every kind of key part", async () => {
  await withTempDir(async (dir) => {
    const keys: Deno.KvKey[] = [
      ...KEY_PARTS.map((part) => ["x", part]),
      ["outbox", "0190-abc"],
      [1, 2, "z", true, new Uint8Array([7])],
    ];
    const kv = await Deno.openKv(`${dir}/keys.kv`);
    for (const key of keys) await kv.set(key, 1);
    kv.close();
    const db = new DatabaseSync(`${dir}/keys.kv`, { readOnly: true });
    const stored = new Set(
      (db.prepare("SELECT k FROM kv").all() as { k: Uint8Array }[]).map((row) => hex(row.k)),
    );
    db.close();
    assert.equal(stored.size, keys.length);
    for (const key of keys) assert.ok(stored.has(hex(encodeKvKey(key))), String(key));
  });
});

Deno.test("backup then restore: every key and value, their expiries, in several batches", async (t) => {
  await withTempDir(async (dir) => {
    const source = `${dir}/source.kv`;
    const kv = await Deno.openKv(source);
    for (const [i, part] of KEY_PARTS.entries()) await kv.set(["parts", part], i);
    await kv.set(["values", "object"], { a: 1, nested: { list: [1, "x", null], at: new Date(0) } });
    await kv.set(["values", "bytes"], new Uint8Array([0, 1, 2]));
    await kv.set(["values", "u64"], new Deno.KvU64(42n));
    await kv.set(["values", "map"], new Map([["k", new Set([1, 2])]]));
    await kv.set(["expiring", 1], "a", { expireIn: 3_600_000 });
    await kv.set(["expiring", 2], "b", { expireIn: 7_200_000 });
    // 2,000 entries of 2 KB: 4 MB, more than one atomic operation can carry
    const big = "x".repeat(2048);
    for (let start = 0; start < 2000; start += 100) {
      const op = kv.atomic();
      for (let i = start; i < start + 100; i++) op.set(["big", i], big);
      assert.ok((await op.commit()).ok);
    }
    kv.close();

    const file = `${dir}/svc.kvbackup`;
    const summary = await backupStore(source, file);
    await t.step("the backup names its snapshot", () => {
      assert.equal(summary.entries, KEY_PARTS.length + 4 + 2 + 2000);
      assert.match(summary.versionstamp, /^[0-9a-f]{20}$/);
      assert.equal(summary.file, file);
      const db = new DatabaseSync(file, { readOnly: true });
      const meta = Object.fromEntries(
        (db.prepare("SELECT name, value FROM svc_backup").all() as {
          name: string;
          value: string;
        }[]).map((row) => [row.name, row.value]),
      );
      assert.equal(db.prepare("PRAGMA journal_mode").get()?.journal_mode, "delete");
      db.close();
      assert.equal(meta.format, "svc-backup 1");
      assert.equal(meta.versionstamp, summary.versionstamp);
      assert.equal(meta.entries, String(summary.entries));
    });

    await t.step("restored: the same entries, the same expiries", async () => {
      const target = `${dir}/target/svc.kv`;
      const restored = await restoreStore(file, target);
      assert.deepEqual(
        { written: restored.written, expired: restored.expired, cleared: restored.cleared },
        { written: summary.entries, expired: 0, cleared: 0 },
      );
      assert.deepEqual(await entriesOf(target), await entriesOf(source));
      const before = expiries(source);
      const after = expiries(target);
      assert.equal(before.size, 2);
      assert.deepEqual([...after.keys()].sort(), [...before.keys()].sort());
      for (const [key, at] of before) assert.ok(Math.abs(after.get(key)! - at) < 5_000);
    });

    await t.step("entries expired by the time of the restore are not written", async () => {
      const target = `${dir}/later.kv`;
      const later = () => Date.now() + 5_000_000; // past the first expiry, not the second
      const restored = await restoreStore(file, target, { now: later });
      assert.equal(restored.expired, 1);
      assert.equal(restored.written, summary.entries - 1);
      const keys = (await entriesOf(target)).map((entry) => entry.key);
      assert.ok(!keys.some((key) => key[0] === "expiring" && key[1] === 1));
      assert.ok(keys.some((key) => key[0] === "expiring" && key[1] === 2));
    });

    await t.step("the backup file is left as it was", async () => {
      const again = await backupStore(source, `${dir}/again.kvbackup`);
      assert.equal(again.versionstamp, summary.versionstamp);
      assert.deepEqual(
        await Deno.readFile(file).then((bytes) => bytes.length),
        summary.bytes,
      );
      const leftovers = [...Deno.readDirSync(dir)].map((entry) => entry.name)
        .filter((name) => name.startsWith("svc.kvbackup"));
      assert.deepEqual(leftovers, ["svc.kvbackup"]);
    });
  });
});

Deno.test("backup and restore refusals", async () => {
  assert.equal(isLocalFile("./data/svc.kv"), true);
  for (const location of [null, ":memory:", "https://kv.example.com", "http://127.0.0.1:4512"]) {
    assert.equal(isLocalFile(location), false);
    await assert.rejects(backupStore(location, "/tmp/never"), BackupError);
  }
  await assert.rejects(restoreStore("/tmp/never", ":memory:"), /:memory:/);
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/not-sqlite`, "hello");
    await assert.rejects(backupStore(`${dir}/not-sqlite`, `${dir}/b`), BackupError);
    await assert.rejects(restoreStore(`${dir}/not-sqlite`, `${dir}/t.kv`), BackupError);
    assert.deepEqual([...Deno.readDirSync(dir)].map((entry) => entry.name), ["not-sqlite"]);
  });
});

import assert from "node:assert/strict";
import { verifyPassword } from "../../lib/auth/passwords.ts";
import { loadJwtSecret } from "../../lib/auth/tokens.ts";
import { StoreUnavailable } from "../../lib/errors.ts";
import {
  deleteRecord,
  getByIndex,
  nextId,
  UniqueConflict,
  writeRecord,
} from "../../lib/store/records.ts";
import { Store } from "../../lib/store/store.ts";
import { createUser, findUserByUsername, findUserByUuid, getUser } from "../../lib/store/users.ts";
import {
  createWebServiceUser,
  ensureAdmin,
  findWebServiceUserByLogin,
  webServiceUserKey,
} from "../../lib/store/webservice_users.ts";

async function withStore(fn: (store: Store) => Promise<void>) {
  const store = await Store.open(":memory:");
  try {
    await fn(store);
  } finally {
    store.close();
  }
}

Deno.test("writeRecord keeps a record and its unique index keys together", async (t) => {
  await withStore(async (store) => {
    const key = ["things", 1];
    await t.step("create: the record and its index keys are written", async () => {
      const result = await writeRecord(store, {
        key,
        value: { name: "a" },
        indexes: [["things_by_name", "a"], ["things_by_code", "x"]],
      });
      assert.ok(result.ok);
      assert.deepEqual((await getByIndex(store, ["things_by_name", "a"]))?.value, { name: "a" });
    });
    await t.step("a taken index key is reported and nothing is written", async () => {
      const result = await writeRecord(store, {
        key: ["things", 2],
        value: { name: "b" },
        indexes: [["things_by_name", "b"], ["things_by_code", "x"]],
      });
      assert.deepEqual(result, { ok: false, conflicts: [["things_by_code", "x"]] });
      assert.equal((await store.get(["things", 2])).value, null);
      assert.equal((await store.get(["things_by_name", "b"])).value, null);
    });
    await t.step("update moves index keys and checks the version read", async () => {
      const current = await store.get(key);
      const previous = {
        versionstamp: current.versionstamp!,
        indexes: [["things_by_name", "a"], ["things_by_code", "x"]],
      };
      const result = await writeRecord(store, {
        key,
        value: { name: "c" },
        indexes: [["things_by_name", "c"], ["things_by_code", "x"]],
        previous,
      });
      assert.ok(result.ok);
      assert.equal((await store.get(["things_by_name", "a"])).value, null);
      assert.deepEqual((await store.get(["things_by_name", "c"])).value, key);
      const stale = await writeRecord(store, {
        key,
        value: { name: "d" },
        indexes: [["things_by_name", "d"]],
        previous,
      });
      assert.deepEqual(stale, { ok: false, conflicts: [key] });
      assert.deepEqual((await store.get(key)).value, { name: "c" });
    });
    await t.step("deleteRecord removes the record and its index keys", async () => {
      const current = await store.get(key);
      const indexes = [["things_by_name", "c"], ["things_by_code", "x"]];
      assert.equal(await deleteRecord(store, key, "00000000000000000000", indexes), false);
      assert.ok(await deleteRecord(store, key, current.versionstamp!, indexes));
      assert.equal((await store.list({ prefix: [] })).length, 0);
    });
  });
});

Deno.test("nextId gives distinct increasing ids, also under concurrency", async () => {
  await withStore(async (store) => {
    assert.equal(await nextId(store, "a"), 1);
    assert.equal(await nextId(store, "a"), 2);
    assert.equal(await nextId(store, "b"), 1);
    const ids = await Promise.all(Array.from({ length: 20 }, () => nextId(store, "a")));
    assert.deepEqual([...ids].sort((x, y) => x - y), Array.from({ length: 20 }, (_, i) => i + 3));
  });
});

Deno.test("users: salted slow hashes, unique usernames, lookups by username and uuid", async () => {
  await withStore(async (store) => {
    const alice = await createUser(store, {
      firstname: "Alice",
      username: "alice",
      password: "pw",
    });
    const again = await createUser(store, { firstname: "A", username: "ali", password: "pw" });
    assert.notEqual(alice.password_hash, again.password_hash);
    assert.match(alice.password_hash ?? "", /^pbkdf2-sha256\$600000\$/);
    assert.ok(!JSON.stringify(alice).includes('"pw"'));
    assert.ok(await verifyPassword("pw", alice.password_hash));
    assert.ok(!await verifyPassword("pW", alice.password_hash));
    assert.ok(!await verifyPassword("pw", null));
    assert.equal(alice.lastname, null);
    assert.deepEqual(await getUser(store, alice.id), alice);
    assert.deepEqual(await findUserByUsername(store, "alice"), alice);
    assert.deepEqual(await findUserByUuid(store, alice.uuid), alice);
    assert.equal(await findUserByUsername(store, "Alice"), null);
    await assert.rejects(
      createUser(store, { firstname: "Other", username: "alice" }),
      UniqueConflict,
    );
  });
});

Deno.test("web service users and the administrator of SVC_ADMIN_*", async () => {
  await withStore(async (store) => {
    await createWebServiceUser(store, { login: "crm", password: "pw", acls: ["a.b"] });
    await assert.rejects(
      createWebServiceUser(store, { login: "crm", password: "x", acls: [] }),
      UniqueConflict,
    );
    const admin = await ensureAdmin(store, "root", "first");
    assert.deepEqual(admin.acls, ["#"]);
    await store.set(webServiceUserKey(admin.id), { ...admin, acls: ["nothing"] });
    const reset = await ensureAdmin(store, "root", "second");
    assert.equal(reset.id, admin.id);
    const stored = await findWebServiceUserByLogin(store, "root");
    assert.deepEqual(stored?.acls, ["#"]);
    assert.ok(await verifyPassword("second", stored!.password_hash));
    assert.ok(!await verifyPassword("first", stored!.password_hash));
  });
});

Deno.test("the JWT secret is generated once and kept in the store", async () => {
  await withStore(async (store) => {
    const first = await loadJwtSecret(store, null);
    assert.ok(first.length >= 43);
    assert.equal(await loadJwtSecret(store, null), first);
    const [a, b] = await Promise.all([loadJwtSecret(store, null), loadJwtSecret(store, null)]);
    assert.equal(a, first);
    assert.equal(b, first);
    assert.equal(await loadJwtSecret(store, "configured-secret"), "configured-secret");
  });
});

Deno.test("a failing store operation becomes StoreUnavailable", async () => {
  const store = await Store.open(":memory:");
  store.close();
  await assert.rejects(store.get(["a"]), StoreUnavailable);
  assert.equal(await store.ping(), false);
});

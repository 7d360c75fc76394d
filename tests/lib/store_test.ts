import assert from "node:assert/strict";
import { verifyPassword } from "../../lib/auth/passwords.ts";
import { loadJwtSecret } from "../../lib/auth/tokens.ts";
import { StoreBusy, StoreUnavailable } from "../../lib/errors.ts";
import { Collection, nextId, transact, UniqueConflict } from "../../lib/store/records.ts";
import { Store } from "../../lib/store/store.ts";
import { createUser, findUserByUsername, findUserByUuid, getUser } from "../../lib/store/users.ts";
import {
  createWebServiceUser,
  ensureAdmin,
  findWebServiceUserByLogin,
  webServiceUsers,
} from "../../lib/store/webservice_users.ts";

async function withStore(fn: (store: Store) => Promise<void>) {
  const store = await Store.open(":memory:");
  try {
    await fn(store);
  } finally {
    store.close();
  }
}

interface Thing {
  id: number;
  name: string;
  code: string | null;
  owner?: number | null;
}
const things = new Collection<Thing>("things", {
  name: (thing) => thing.name,
  code: (thing) => thing.code === null ? null : ["x", thing.code],
});

Deno.test("collections keep records and their unique index keys together", async (t) => {
  await withStore(async (store) => {
    const put = (thing: Thing) => transact(store, (tx) => Promise.resolve(tx.put(things, thing)));
    await t.step("create: the record and its index keys are written", async () => {
      await put({ id: 1, name: "a", code: "x1" });
      assert.deepEqual(await things.findBy(store, "name", "a"), { id: 1, name: "a", code: "x1" });
      assert.deepEqual(await things.findBy(store, "code", ["x", "x1"]), await things.get(store, 1));
      assert.deepEqual(await store.get(things.indexKey("code", ["x", "x1"])).then((e) => e.value), [
        "things",
        1,
      ]);
    });
    await t.step("a taken unique value throws UniqueConflict and nothing is written", async () => {
      await assert.rejects(put({ id: 2, name: "b", code: "x1" }), (error: unknown) => {
        assert.ok(error instanceof UniqueConflict);
        assert.equal(error.field, "code");
        assert.deepEqual(error.value, ["x", "x1"]);
        return true;
      });
      assert.equal(await things.get(store, 2), null);
      assert.equal(await things.findBy(store, "name", "b"), null);
    });
    await t.step("update moves index keys; a null value has no index key", async () => {
      await transact(store, async (tx) => {
        const thing = await tx.get(things, 1);
        tx.put(things, { ...thing!, name: "c", code: null });
      });
      assert.equal(await things.findBy(store, "name", "a"), null);
      assert.equal((await things.findBy(store, "name", "c"))?.id, 1);
      assert.equal((await store.list({ prefix: ["things_by_code"] })).length, 0);
    });
    await t.step("a value handed from one record to another in one transaction", async () => {
      await put({ id: 2, name: "d", code: "x2" });
      await transact(store, async (tx) => {
        const [one, two] = [await tx.get(things, 1), await tx.get(things, 2)];
        tx.put(things, { ...one!, code: "x2" });
        tx.put(things, { ...two!, code: "x3" });
      });
      assert.equal((await things.findBy(store, "code", ["x", "x2"]))?.id, 1);
      assert.equal((await things.findBy(store, "code", ["x", "x3"]))?.id, 2);
    });
    await t.step("what a transaction read is checked: a concurrent change reruns it", async () => {
      let runs = 0;
      await transact(store, async (tx) => {
        runs++;
        const thing = await tx.get(things, 1);
        if (runs === 1) await put({ ...thing!, owner: 7 }); // someone else writes meanwhile
        tx.put(things, { ...thing!, name: "e" });
      });
      assert.equal(runs, 2);
      assert.deepEqual(await things.get(store, 1), { id: 1, name: "e", code: "x2", owner: 7 });
    });
    await t.step("remove deletes the record and its index keys", async () => {
      await transact(store, (tx) => Promise.resolve(tx.remove(things, 1)));
      await transact(store, (tx) => Promise.resolve(tx.remove(things, 2)));
      for (const prefix of ["things", "things_by_name", "things_by_code"]) {
        assert.deepEqual(await store.list({ prefix: [prefix] }), [], prefix);
      }
      assert.deepEqual(await things.all(store), []);
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
    await store.set(webServiceUsers.key(admin.id), { ...admin, acls: ["nothing"] });
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

Deno.test("a transaction that keeps losing to concurrent changes gives up as StoreBusy", async () => {
  await withStore(async (store) => {
    await transact(
      store,
      (tx) => Promise.resolve(tx.put(things, { id: 1, name: "a", code: null })),
    );
    let tries = 0;
    const started = performance.now();
    await assert.rejects(
      transact(store, async (tx) => {
        tries++;
        const thing = await tx.get(things, 1);
        // another writer changes the record after each read: every commit's check fails
        await store.set(things.key(1), { ...thing!, name: `changed ${tries}` });
        tx.put(things, { ...thing!, code: "mine" });
      }),
      (error: unknown) => {
        assert.ok(error instanceof StoreBusy, String(error));
        assert.equal(error.message, "the store is busy: the records kept changing, try again");
        return true;
      },
    );
    // fifty tries and five seconds at least (a loaded machine makes fewer tries in that time);
    // the random pauses between tries (up to 64 ms each) spread racers out; bounded all the same
    assert.ok(tries >= 50, `${tries} tries`);
    assert.ok(performance.now() - started < 10_000);
    assert.equal((await things.get(store, 1))?.code, null, "nothing of the abandoned change");
  });
});

Deno.test("a lookup by a unique value after the value moved, or the record went", async () => {
  await withStore(async (store) => {
    await things.put(store, { id: 1, name: "alpha", code: "A" });
    assert.equal((await things.findBy(store, "name", "alpha"))?.id, 1); // its key is remembered
    await things.put(store, { id: 1, name: "beta", code: "A" });
    assert.equal(await things.findBy(store, "name", "alpha"), null, "renamed: no longer alpha");
    await things.put(store, { id: 2, name: "alpha", code: "B" });
    assert.equal((await things.findBy(store, "name", "alpha"))?.id, 2, "alpha is another's now");
    await transact(store, async (tx) => {
      if (await tx.get(things, 2)) tx.remove(things, 2);
    });
    assert.equal(await things.findBy(store, "name", "alpha"), null, "deleted");
    assert.equal((await things.findBy(store, "name", "beta"))?.id, 1);
  });
});

Deno.test("a transaction may start from a record read before; it is checked at commit", async () => {
  await withStore(async (store) => {
    await things.put(store, { id: 1, name: "alpha", code: "A" });
    const read = (await things.findBy(store, "name", "alpha"))!;
    let attempts = 0;
    let reuse = true;
    await things.put(store, { id: 1, name: "alpha", code: "changed" }); // after the read
    const seen = await transact(store, async (tx) => {
      attempts++;
      const thing = reuse ? await tx.reuse(things, read) : await tx.get(things, 1);
      reuse = false;
      tx.put(things, { ...thing!, owner: 7 });
      return thing!.code;
    });
    assert.equal(attempts, 2, "the stale read failed the first commit");
    assert.equal(seen, "changed");
    assert.deepEqual(await things.get(store, 1), {
      id: 1,
      name: "alpha",
      code: "changed",
      owner: 7,
    });
    // a record read from another store is read again
    await withStore(async (other) => {
      await things.put(other, { id: 1, name: "alpha", code: "other" });
      const fromOther = await transact(other, (tx) => tx.reuse(things, read));
      assert.equal(fromOther?.code, "other");
    });
  });
});

/**
 * Two handles on one store file, as two processes: `fn` writes through `writer` while eight
 * readers keep calling `ask(reader, n)` on `reader`, so that reads asked at once go together.
 */
async function withBusyReaders(
  ask: (reader: Store, n: number) => Promise<unknown>,
  fn: (reader: Store, writer: Store) => Promise<void>,
) {
  const dir = await Deno.makeTempDir();
  const [reader, writer] = [await Store.open(`${dir}/kv`), await Store.open(`${dir}/kv`)];
  let writing = true;
  const busy = Array.from({ length: 8 }, async (_, n) => {
    while (writing) {
      await ask(reader, n);
      // a list kept and unchanged answers without I/O: let the writer's I/O come through
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  });
  try {
    await fn(reader, writer);
  } finally {
    writing = false;
    await Promise.all(busy);
    reader.close();
    writer.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("lists asked at once share their version reads, yet each sees every write made before it was asked", async () => {
  // the other handle's writes are seen through the version key only (no local-write note)
  await withBusyReaders((reader) => things.all(reader), async (reader, writer) => {
    for (let id = 1; id <= 150; id++) {
      await things.put(writer, { id, name: `thing ${id}`, code: null });
      const seen = await things.all(reader);
      assert.equal(seen.at(-1)?.id, id, `the write of ${id} is seen by a list asked after it`);
    }
  });
});

Deno.test("records asked at once are read together, each as written before it was asked", async () => {
  const askOther = async (reader: Store, n: number) =>
    assert.equal(await things.get(reader, 1000 + n), null);
  await withBusyReaders(askOther, async (reader, writer) => {
    for (let id = 1; id <= 60; id++) {
      await things.put(writer, { id, name: `thing ${id}`, code: null });
      const [created, missing] = await Promise.all([
        things.get(reader, id),
        things.get(reader, id + 500),
      ]);
      assert.equal(
        created?.name,
        `thing ${id}`,
        `the write of ${id} is seen by a read asked after it`,
      );
      assert.equal(missing, null);
      await transact(writer, (tx) => Promise.resolve(tx.remove(things, id)));
      assert.equal(await things.get(reader, id), null, `the removal of ${id} is seen`);
    }
    // more records asked at once than one read takes (Deno KV: 10 keys), every other one there
    for (let id = 101; id <= 125; id += 2) {
      await things.put(writer, { id, name: `thing ${id}`, code: null });
    }
    const ids = Array.from({ length: 25 }, (_, n) => 101 + n);
    const many = await Promise.all(ids.map((id) => things.get(reader, id)));
    assert.deepEqual(
      many.map((thing) => thing?.name ?? null),
      ids.map((id) => id % 2 ? `thing ${id}` : null),
    );
  });
});

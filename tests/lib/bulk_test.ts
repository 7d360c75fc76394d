import assert from "node:assert/strict";
import {
  bulkWrite,
  findBulkConflicts,
  recoverBulkWrites,
  reserveIds,
  STALE_JOURNAL_MS,
} from "../../lib/store/bulk.ts";
import { Collection, UniqueConflict } from "../../lib/store/records.ts";
import { Store } from "../../lib/store/store.ts";

interface Thing {
  id: number;
  name: string;
}
const things = new Collection<Thing>("bulk_things", { name: (thing) => thing.name });

const items = (first: number, count: number, prefix = "t") =>
  Array.from({ length: count }, (_, i) => ({
    collection: things,
    record: { id: first + i, name: `${prefix}${first + i}` },
  }));

Deno.test("bulk writes: thousands of records and their index keys, all or nothing", async (t) => {
  const store = await Store.open(":memory:");
  try {
    await t.step("reserveIds hands out consecutive blocks", async () => {
      assert.equal(await reserveIds(store, things, 3000), 1);
      assert.equal(await things.nextId(store), 3001);
    });
    await t.step(
      "3000 records are written with their index keys; the journal is gone",
      async () => {
        await bulkWrite(store, items(1, 3000));
        assert.equal((await things.all(store)).length, 3000);
        assert.equal((await things.findBy(store, "name", "t2999"))?.id, 2999);
        assert.deepEqual(await store.list({ prefix: ["bulk_journal"] }), []);
        assert.deepEqual(await store.list({ prefix: ["bulk_created"] }), []);
      },
    );
    await t.step(
      "conflicts within the batch and with stored records are all reported",
      async () => {
        const batch = [
          { collection: things, record: { id: 5000, name: "t1" } },
          { collection: things, record: { id: 5001, name: "new" } },
          { collection: things, record: { id: 5002, name: "new" } },
        ];
        const conflicts = await findBulkConflicts(store, batch);
        assert.deepEqual(conflicts.map((c) => [c.item, c.error.field, c.error.value]), [
          [0, "name", "t1"],
          [2, "name", "new"],
        ]);
      },
    );
    await t.step("a value released by one record and taken by another is no conflict", async () => {
      const one = (await things.get(store, 1))!;
      const two = (await things.get(store, 2))!;
      const swap = [
        { collection: things, record: { ...one, name: "t2" }, previous: one },
        { collection: things, record: { ...two, name: "t1" }, previous: two },
      ];
      assert.deepEqual(await findBulkConflicts(store, swap), []);
      await bulkWrite(store, swap);
      assert.equal((await things.findBy(store, "name", "t2"))?.id, 1);
      assert.equal((await things.findBy(store, "name", "t1"))?.id, 2);
    });
    await t.step("a value taken meanwhile fails the write and undoes all of it", async () => {
      const before = (await things.get(store, 10))!;
      const batch = [
        { collection: things, record: { ...before, name: "renamed" }, previous: before },
        ...items(6000, 500, "late"),
      ];
      await store.set(things.indexKey("name", "late6400"), ["bulk_things", 42]); // someone else
      await assert.rejects(bulkWrite(store, batch), UniqueConflict);
      assert.deepEqual(await things.get(store, 10), before);
      assert.equal((await things.findBy(store, "name", "t10"))?.id, 10);
      assert.equal(await things.findBy(store, "name", "renamed"), null);
      assert.equal(await things.get(store, 6000), null);
      assert.equal((await things.all(store)).length, 3000);
      assert.deepEqual(await store.list({ prefix: ["bulk_journal"] }), []);
    });
  } finally {
    store.close();
  }
});

Deno.test("a bulk write cut off by the death of its process is undone by recovery", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/svc.kv`;
  const script = `
    import { bulkWrite } from "${new URL(
    "../../lib/store/bulk.ts",
    import.meta.url,
  )}";
    import { Collection } from "${new URL("../../lib/store/records.ts", import.meta.url)}";
    import { Store } from "${new URL("../../lib/store/store.ts", import.meta.url)}";
    const things = new Collection("bulk_things", { name: (thing) => thing.name });
        const store = await Store.open(${JSON.stringify(path)});
    const items = Array.from({ length: 50000 }, (_, i) => ({
      collection: things, record: { id: i + 1, name: "n" + i, padding: "x".repeat(200) } }));
    await bulkWrite(store, items);
    console.log("finished");`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", "--unstable-kv", script],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const store = await Store.open(path);
  try {
    // wait until the write is under way, then kill the writer in the middle of it
    const written = async () =>
      (await store.list({ prefix: ["bulk_things"] }, { limit: 2000 })).length;
    for (let i = 0; i < 300 && await written() < 2000; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill("SIGKILL");
    const output = new TextDecoder().decode((await child.output()).stdout);
    assert.equal(output, "", "the writer finished before it could be killed");
    assert.ok((await things.all(store)).length > 0);
    assert.equal((await store.list({ prefix: ["bulk_journal"] })).length, 1);

    assert.equal(await recoverBulkWrites(store, Date.now()), 0, "a fresh journal is left alone");
    assert.equal(await recoverBulkWrites(store, Date.now() + STALE_JOURNAL_MS), 1);
    assert.deepEqual(await things.all(store), []);
    assert.deepEqual(await store.list({ prefix: ["bulk_things_by_name"] }), []);
    assert.deepEqual(await store.list({ prefix: ["bulk_journal"] }), []);
    assert.deepEqual(await store.list({ prefix: ["bulk_created"] }), []);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

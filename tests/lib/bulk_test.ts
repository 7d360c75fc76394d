import assert from "node:assert/strict";
import {
  type BulkItem,
  bulkWrite,
  findBulkConflicts,
  recoverBulkWrites,
  reserveIds,
  STALE_JOURNAL_MS,
} from "../../lib/store/bulk.ts";
import {
  Collection,
  hiddenWritesKey,
  isStaged,
  listVisible,
  transact,
  UniqueConflict,
} from "../../lib/store/records.ts";
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

Deno.test("a bulk write is invisible to every reader until its last commit", async (t) => {
  const store = await Store.open(":memory:");
  try {
    await bulkWrite(store, items(1, 100));
    const first = 1000;
    const count = 20_000;
    const batch: BulkItem[] = items(first, count, "new");
    // a record replaced and two index values swapped: readers see the old ones until the end
    const one = (await things.get(store, 1))!;
    const two = (await things.get(store, 2))!;
    const swapped: Thing[] = [{ ...one, name: "t2" }, { ...two, name: "t1" }];
    batch.push(
      { collection: things, record: swapped[0]!, previous: one },
      { collection: things, record: swapped[1]!, previous: two },
    );
    await t.step("readers polling during the write see none of it, then all of it", async () => {
      assert.equal((await things.all(store)).length, 100); // kept: read again only on a change
      let done = false;
      const writing = bulkWrite(store, batch).finally(() => (done = true));
      const before = [100, null, null, 1, null, "t1"];
      const after = [100 + count, `new${first + count - 1}`, first, 2, `new${first}`, "t2"];
      // each read sees the state before the write or after it, and never before once after
      const seen: number[][] = [];
      const poll = async () => {
        while (!done) {
          const [all, last, byName, swapped, inTx] = await Promise.all([
            things.all(store),
            things.get(store, first + count - 1),
            things.findBy(store, "name", `new${first}`),
            things.findBy(store, "name", "t1"),
            transact(store, async (tx) => [await tx.get(things, first), await tx.get(things, 1)]),
          ]);
          const state = [
            all.length,
            last?.name ?? null,
            byName?.id ?? null,
            swapped?.id,
            inTx[0]?.name ?? null,
            inTx[1]?.name,
          ];
          seen.push(state.map((value, i) => {
            if (value === before[i]) return 0;
            assert.equal(value, after[i], `read ${i} of poll ${seen.length}: ${state}`);
            return 1;
          }));
        }
      };
      let ranges = 0;
      const readRanges = async () => {
        // what a cache reads when the version key changed: the whole range, every time
        let last = 100;
        while (!done) {
          const listed = await listVisible(store, { prefix: [things.name] });
          assert.ok(listed.length === 100 + count || (listed.length === 100 && last === 100));
          last = listed.length;
          ranges++;
        }
      };
      await Promise.allSettled([poll(), readRanges()]).then(async (results) => {
        await writing;
        for (const result of results) if (result.status === "rejected") throw result.reason;
      });
      // a poll that saw the write whole comes after every poll that saw some of it missing
      const whole = seen.findIndex((state) => state.every((read) => read === 1));
      const lastBefore = seen.findLastIndex((state) => state.includes(0));
      assert.ok(whole === -1 || lastBefore < whole, `polls ${lastBefore} and ${whole}`);
      const beforeCount = seen.filter((state) => state.every((read) => read === 0)).length;
      assert.ok(beforeCount > 5 && ranges > 0, `only ${beforeCount} polls, ${ranges} range reads`);
      assert.equal((await things.all(store)).length, 100 + count);
      assert.equal((await things.get(store, first + count - 1))?.name, `new${first + count - 1}`);
      assert.equal((await things.findBy(store, "name", `new${first}`))?.id, first);
      assert.equal((await things.findBy(store, "name", "t1"))?.id, 2);
      assert.equal((await things.findBy(store, "name", "t2"))?.id, 1);
    });
    await t.step("what is left is plain but for the created records' marker", async () => {
      assert.deepEqual(await store.list({ prefix: ["bulk_journal"] }), []);
      assert.deepEqual(await store.list({ prefix: ["bulk_phase"] }), []);
      assert.deepEqual(await store.list({ prefix: ["bulk_created"] }), []);
      assert.deepEqual(await store.list({ prefix: ["bulk_replaced"] }), []);
      assert.equal((await store.get(hiddenWritesKey)).value, null);
      assert.deepEqual((await store.get(things.key(1))).value, { id: 1, name: "t2" });
      assert.deepEqual(await store.get(things.indexKey("name", "t1")).then((e) => e.value), [
        "bulk_things",
        2,
      ]);
      assert.ok(isStaged((await store.get(things.key(first))).value));
    });
    await t.step(
      "a value claimed by a write not committed is taken for other writers",
      async () => {
        let done = false;
        const writing = bulkWrite(store, items(60_000, 10_000, "claimed"))
          .finally(() => (done = true));
        while (!done && (await store.get(things.key(60_000))).value === null) {
          await new Promise((resolve) => setTimeout(resolve, 1));
        }
        assert.equal(done, false, "the bulk write ended before it was seen under way");
        assert.equal(await things.findBy(store, "name", "claimed60000"), null, "not seen yet…");
        await assert.rejects(
          things.put(store, { id: 99_999, name: "claimed60000" }),
          UniqueConflict,
          "…but taken",
        );
        await writing;
        assert.equal((await things.findBy(store, "name", "claimed60000"))?.id, 60_000);
        assert.equal(await things.get(store, 99_999), null);
      },
    );
    await t.step("a write to a record a bulk write replaces waits for its commit", async () => {
      const three = (await things.get(store, 3))!;
      const renamedThree: Thing = { ...three, name: "bulk-three" };
      let done = false;
      const writing = bulkWrite(store, [
        { collection: things, record: renamedThree, previous: three },
        ...items(40_000, 10_000, "wait"),
      ]).finally(() => (done = true));
      // once the record replaced is staged (with its previous version), the write holds it
      const staged = async () => {
        const raw = (await store.get(things.key(3))).value;
        return isStaged(raw) && "previous" in raw;
      };
      while (!done && !await staged()) await new Promise((resolve) => setTimeout(resolve, 1));
      assert.equal(done, false, "the bulk write ended before its record was seen staged");
      const renamed = transact(store, async (tx) => {
        const current = (await tx.get(things, 3))!;
        tx.put(things, { ...current, name: `${current.name}-then-tx` });
      });
      await Promise.all([writing, renamed]);
      assert.equal((await things.get(store, 3))?.name, "bulk-three-then-tx");
      assert.equal((await things.findBy(store, "name", "bulk-three-then-tx"))?.id, 3);
      assert.equal(await things.findBy(store, "name", "bulk-three"), null);
      assert.equal(await things.findBy(store, "name", "t3"), null);
    });
  } finally {
    store.close();
  }
});

/** Runs `script` (TypeScript importing our modules by URL) in a child process. */
function child(script: string) {
  return new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", "--unstable-kv", script],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}

const moduleUrl = (path: string) => JSON.stringify(new URL(path, import.meta.url).href);

Deno.test("a bulk write cut off by the death of its process is never seen, then undone", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/svc.kv`;
  const writer = child(`
    import { bulkWrite } from ${moduleUrl("../../lib/store/bulk.ts")};
    import { Collection } from ${moduleUrl("../../lib/store/records.ts")};
    import { Store } from ${moduleUrl("../../lib/store/store.ts")};
    const things = new Collection("bulk_things", { name: (thing) => thing.name });
    const store = await Store.open(${JSON.stringify(path)});
    const items = Array.from({ length: 50000 }, (_, i) => ({
      collection: things, record: { id: i + 1, name: "n" + i, padding: "x".repeat(200) } }));
    await bulkWrite(store, items);
    console.log("finished");`);
  const store = await Store.open(path);
  try {
    // wait until the write is under way, then kill the writer in the middle of it
    const written = async () =>
      (await store.list({ prefix: ["bulk_things"] }, { limit: 2000 })).length;
    for (let i = 0; i < 300 && await written() < 2000; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    writer.kill("SIGKILL");
    const output = new TextDecoder().decode((await writer.output()).stdout);
    assert.equal(output, "", "the writer finished before it could be killed");
    assert.equal(await written(), 2000, "records are stored…");
    assert.deepEqual(await things.all(store), [], "…but no reader sees them");
    assert.equal(await things.get(store, 1), null);
    assert.equal(await things.findBy(store, "name", "n0"), null);
    assert.equal((await store.list({ prefix: ["bulk_journal"] })).length, 1);

    assert.equal(await recoverBulkWrites(store, Date.now()), 0, "a fresh journal is left alone");
    assert.equal(await recoverBulkWrites(store, Date.now() + STALE_JOURNAL_MS), 1);
    assert.deepEqual(await store.list({ prefix: ["bulk_things"] }), []);
    assert.deepEqual(await store.list({ prefix: ["bulk_things_by_name"] }), []);
    for (const prefix of ["bulk_journal", "bulk_phase", "bulk_created", "bulk_hidden"]) {
      assert.deepEqual(await store.list({ prefix: [prefix] }), [], prefix);
    }
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a committed bulk write whose process died before its last steps is finished", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/svc.kv`;
  const store = await Store.open(path);
  try {
    await bulkWrite(store, items(1, 20_000));
    // renaming 20,000 records: the last steps (storing them plain, deleting the names they gave
    // up) take long enough to kill the writer between its last commit and its end
    for (let attempt = 1;; attempt++) {
      const writer = child(`
        import { bulkWrite } from ${moduleUrl("../../lib/store/bulk.ts")};
        import { Collection } from ${moduleUrl("../../lib/store/records.ts")};
        import { Store } from ${moduleUrl("../../lib/store/store.ts")};
        const things = new Collection("bulk_things", { name: (thing) => thing.name });
        const store = await Store.open(${JSON.stringify(path)});
        const all = await things.all(store);
        await bulkWrite(store, all.map((thing) => ({
          collection: things, record: { ...thing, name: "r" + ${attempt} + "-" + thing.id },
          previous: thing })));
        console.log("finished");`);
      const committed = async () =>
        (await store.list<string>({ prefix: ["bulk_phase"] })).some((e) => e.value === "committed");
      for (let i = 0; i < 2000 && !await committed(); i++) {
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
      writer.kill("SIGKILL");
      const output = new TextDecoder().decode((await writer.output()).stdout);
      if (output !== "" && attempt < 3) continue; // it finished first: once more
      assert.equal(output, "", "the writer finished before it could be killed, three times");
      // readers see the whole write at once
      const renamed = `r${attempt}-`;
      assert.ok((await things.all(store)).every((thing) => thing.name.startsWith(renamed)));
      assert.equal((await things.findBy(store, "name", `${renamed}20000`))?.id, 20_000);
      assert.equal(await things.findBy(store, "name", "t20000"), null);
      assert.equal(await recoverBulkWrites(store, Date.now() + STALE_JOURNAL_MS), 1);
      // finished: records plain, released names gone
      const raw = await store.list({ prefix: ["bulk_things"] });
      assert.ok(raw.every((entry) => !isStaged(entry.value)));
      const names = await store.list<Deno.KvKey>({ prefix: ["bulk_things_by_name"] });
      assert.equal(names.length, 20_000);
      assert.ok(names.every((entry) => String(entry.key[1]).startsWith(renamed)));
      for (const prefix of ["bulk_journal", "bulk_phase", "bulk_replaced", "bulk_hidden"]) {
        assert.deepEqual(await store.list({ prefix: [prefix] }), [], prefix);
      }
      break;
    }
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * `Store.changeMark()`: the same mark means nothing was committed since, by this process or any
 * other sharing the store. (A remote store answers null, so everything is read: no KV Connect server
 * runs here to show it.)
 */
import assert from "node:assert/strict";
import { Collection, transact } from "../../lib/store/records.ts";
import { Store } from "../../lib/store/store.ts";
import { until } from "../e2e/svc_http.ts";

Deno.test("in memory: every write changes the mark, a read does not", async () => {
  const store = await Store.open(":memory:");
  try {
    const marks = [store.changeMark()];
    await store.get(["a"]);
    assert.equal(store.changeMark(), marks[0], "a read");
    await store.set(["a"], 1);
    marks.push(store.changeMark());
    await store.commit((op) => op.set(["b"], 2));
    marks.push(store.changeMark());
    await store.delete(["a"]);
    marks.push(store.changeMark());
    assert.equal(new Set(marks).size, 4, `each write: ${marks}`);
    // a write in flight has changed the mark already, and changes it again when it ends
    const before = store.changeMark();
    const writing = store.set(["c"], 3);
    const during = store.changeMark();
    await writing;
    assert.notEqual(during, before);
    assert.notEqual(store.changeMark(), during);
    store.close();
    assert.equal(store.changeMark(), null, "closed: nothing kept may be answered unread");
  } finally {
    store.close();
  }
});

Deno.test("a file: a commit of this process, of another handle and of another process changes the mark", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-mark-" });
  const path = `${dir}/svc.kv`;
  const store = await Store.open(path);
  const other = await Store.open(path); // as a second svc process in this one
  try {
    await store.set(["a"], 1);
    assert.equal(store.changeMark(), null, "unknown until SQLite is loaded");
    await until(() => store.changeMark() !== null, 5_000, "the store file's mark");
    const mark = store.changeMark();
    await store.get(["a"]);
    assert.equal(store.changeMark(), mark, "a read changes nothing");
    await store.set(["a"], 2);
    const afterOwn = store.changeMark();
    assert.notEqual(afterOwn, mark, "this handle's commit");
    await other.commit((op) => op.set(["b"], 1));
    const afterOther = store.changeMark();
    assert.notEqual(afterOther, afterOwn, "another handle's commit");
    const script = `const kv = await Deno.openKv(${JSON.stringify(path)});` +
      ` await kv.set(["c"], 1); kv.close();`;
    const { success } = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--unstable-kv", script],
    }).output();
    assert.ok(success, "the other process wrote");
    assert.notEqual(store.changeMark(), afterOther, "another process's commit");
  } finally {
    store.close();
    other.close();
    await Deno.remove(dir, { recursive: true });
  }
});

interface Named {
  id: number;
  name: string;
}
const named = new Collection<Named>("mark_named", { name: (record) => record.name });

Deno.test("findIdBy: the id found last answered unread while the mark holds, read again after any commit", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-mark-" });
  const path = `${dir}/svc.kv`;
  const store = await Store.open(path);
  const other = await Store.open(path); // as a second svc process in this one
  const put = (on: Store, record: Named) =>
    transact(on, (tx) => Promise.resolve(tx.put(named, record)));
  let reads = 0;
  const getMany = store.getMany.bind(store);
  store.getMany = ((keys: Deno.KvKey[]) => (reads++, getMany(keys))) as typeof store.getMany;
  try {
    await put(store, { id: 1, name: "alice" });
    await until(() => store.changeMark() !== null, 5_000, "the store file's mark");
    assert.equal(await named.findIdBy(store, "name", "alice"), 1);
    const before = reads;
    assert.equal(await named.findIdBy(store, "name", "alice"), 1);
    assert.equal(reads, before, "nothing committed: answered unread");
    assert.equal(await named.findIdBy(store, "name", "bob"), null);
    // another handle gives the name to another record: the next lookup sees it
    await transact(other, async (tx) => {
      const alice = await tx.get(named, 1);
      tx.put(named, { ...alice!, name: "alicia" });
      tx.put(named, { id: 2, name: "alice" });
    });
    assert.equal(await named.findIdBy(store, "name", "alice"), 2, "another handle's commit");
    assert.ok(reads > before, "read again");
    await transact(store, async (tx) => {
      if (await tx.get(named, 2)) tx.remove(named, 2);
    });
    assert.equal(await named.findIdBy(store, "name", "alice"), null, "deleted");
  } finally {
    store.close();
    other.close();
    await Deno.remove(dir, { recursive: true });
  }
});

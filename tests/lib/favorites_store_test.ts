/**
 * `lib/store/favorites.ts` below the socket: the limit holds under concurrent writers of two
 * handles on one store file, a favourite is never written for a record gone meanwhile, the count
 * follows every write, and a user's favourites go with the user.
 */
import assert from "node:assert/strict";
import {
  addFavorite,
  deleteFavorites,
  deleteFavoritesOfUser,
  type FavoriteRef,
  listFavorites,
  removeFavorite,
} from "../../lib/store/favorites.ts";
import { Store } from "../../lib/store/store.ts";

const ref = (contactId: string, source = "internal"): FavoriteRef => ({ source, contactId });
const noGuard = () => Promise.resolve([]);
const count = async (store: Store, userId: number) =>
  (await store.get<number>(["favorites_count", userId])).value ?? 0;

Deno.test("added once, counted, listed; removed once", async () => {
  const store = await Store.open(":memory:");
  try {
    assert.equal(await addFavorite(store, 1, ref("2"), 10, noGuard), "added");
    assert.equal(await addFavorite(store, 1, ref("2"), 10, noGuard), "unchanged");
    assert.equal(await addFavorite(store, 1, ref("3", "queue"), 10, noGuard), "added");
    assert.equal(await addFavorite(store, 2, ref("2"), 10, noGuard), "added");
    assert.deepEqual(await listFavorites(store, 1), [ref("2"), ref("3", "queue")]);
    assert.equal(await count(store, 1), 2);
    assert.equal(await removeFavorite(store, 1, ref("2")), true);
    assert.equal(await removeFavorite(store, 1, ref("2")), false);
    assert.equal(await count(store, 1), 1);
    assert.equal(
      await deleteFavorites(store, 1, [ref("3", "queue"), ref("9"), ref("3", "queue")]),
      1,
      "only what was held",
    );
    assert.deepEqual(await listFavorites(store, 1), []);
    assert.equal(await count(store, 1), 0);
    assert.deepEqual(await listFavorites(store, 2), [ref("2")], "another user's untouched");
  } finally {
    store.close();
  }
});

Deno.test("a guard gone (deleted, or changed meanwhile and then deleted): nothing written", async () => {
  const store = await Store.open(":memory:");
  try {
    await store.set(["records", 5], { id: 5 });
    const guard = async () => [await store.get(["records", 5])];
    assert.equal(await addFavorite(store, 1, ref("5"), 10, guard), "added");
    await store.delete(["records", 5]);
    assert.equal(await addFavorite(store, 1, ref("6"), 10, guard), "gone");
    // the guard changes between its read and the write: read again, then found gone
    await store.set(["records", 5], { id: 5 });
    let reads = 0;
    const racing = async () => {
      const entry = await store.get(["records", 5]);
      if (++reads === 1) await store.delete(["records", 5]);
      return [entry];
    };
    assert.equal(await addFavorite(store, 1, ref("7"), 10, racing), "gone");
    assert.equal(reads, 2);
    assert.deepEqual(await listFavorites(store, 1), [ref("5")]);
    assert.equal(await count(store, 1), 1);
  } finally {
    store.close();
  }
});

Deno.test("the limit holds for writers of two handles on one store file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-favorites-" });
  const one = await Store.open(`${dir}/svc.kv`);
  const two = await Store.open(`${dir}/svc.kv`);
  try {
    const outcomes = await Promise.all(
      Array.from(
        { length: 30 },
        (_, i) => addFavorite(i % 2 ? one : two, 1, ref(String(i)), 10, noGuard),
      ),
    );
    assert.equal(outcomes.filter((outcome) => outcome === "added").length, 10);
    assert.equal(outcomes.filter((outcome) => outcome === "limit").length, 20);
    assert.equal((await listFavorites(two, 1)).length, 10);
    assert.equal(await count(one, 1), 10);
    // removing and adding at once: the count still agrees with the keys
    const held = await listFavorites(one, 1);
    await Promise.all([
      ...held.slice(0, 5).map((favorite, i) => removeFavorite(i % 2 ? one : two, 1, favorite)),
      ...Array.from({ length: 8 }, (_, i) => addFavorite(one, 1, ref(`new${i}`), 10, noGuard)),
    ]);
    assert.equal(await count(two, 1), (await listFavorites(two, 1)).length);
    assert.ok(await count(two, 1) <= 10);
  } finally {
    one.close();
    two.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("many deleted at once; a deleted user's favourites and count go", async () => {
  const store = await Store.open(":memory:");
  try {
    for (let i = 0; i < 1_200; i++) {
      assert.equal(await addFavorite(store, 1, ref(String(i)), 2_000, noGuard), "added");
    }
    await addFavorite(store, 2, ref("1"), 10, noGuard);
    const some = Array.from({ length: 600 }, (_, i) => ref(String(i)));
    assert.equal(await deleteFavorites(store, 1, some), 600);
    assert.equal(await count(store, 1), 600);
    assert.equal((await listFavorites(store, 1)).length, 600);
    await deleteFavoritesOfUser(store, 1);
    assert.deepEqual(await listFavorites(store, 1), []);
    assert.equal((await store.get(["favorites_count", 1])).value, null);
    assert.deepEqual(await listFavorites(store, 2), [ref("1")]);
  } finally {
    store.close();
  }
});

/**
 * The directory favourites of CTI users (docs/cti.md, "Directory and favourites"): the only module
 * that knows their keys. A personal contact's favourite is the contact's own `favorite` field
 * (lib/store/contacts.ts); this module keeps the others, those of shared sources (a colleague, a
 * queue), which the favourite names by source and id.
 *
 * - `["favorites", userId, source, contactId]` holds `true` while the user keeps that favourite;
 *   listing a user's favourites is one range read.
 * - `["favorites_count", userId]` holds how many there are. Every write of the user's favourites
 *   sets it in the same atomic operation, checked against the versionstamp it was read with, so
 *   the limit holds whatever runs at the same time, in any process sharing the store.
 *
 * A favourite whose contact is deleted stays until the user's next list of favourites drops it
 * ({@link deleteFavorites}); the user's own are deleted with the user ({@link deleteFavoritesOfUser}).
 */
import { StoreBusy } from "../errors.ts";
import { keepRacing, raceBackoff, type Store } from "./store.ts";

/** A favourite: the source of its contact and the contact's id in that source. */
export interface FavoriteRef {
  source: string;
  contactId: string;
}

const favoriteKey = (userId: number, { source, contactId }: FavoriteRef): Deno.KvKey => [
  "favorites",
  userId,
  source,
  contactId,
];
const countKey = (userId: number): Deno.KvKey => ["favorites_count", userId];

const abandoned = () => new StoreBusy("the favorites");

/** Every favourite of `userId` (one range read), in key order. */
export async function listFavorites(store: Store, userId: number): Promise<FavoriteRef[]> {
  const entries = await store.list<true>({ prefix: ["favorites", userId] }, { batchSize: 500 });
  return entries.map(({ key }) => ({ source: String(key[2]), contactId: String(key[3]) }));
}

export type AddOutcome = "added" | "unchanged" | "limit" | "gone";

/**
 * Keeps `ref` among `userId`'s favourites, unless it is one already (`unchanged`), the user holds
 * `max` already (`limit`), or a record `guards` reads is gone (`gone`): the user and the contact,
 * read again at each attempt and checked in the write, so that a favourite is never written for a
 * user or a contact deleted meanwhile.
 *
 * @example
 * await addFavorite(store, 1, { source: "internal", contactId: "2" }, 500, async () => [
 *   await users.entry(store, 1),
 *   await users.entry(store, 2),
 * ]);
 */
export async function addFavorite(
  store: Store,
  userId: number,
  ref: FavoriteRef,
  max: number,
  guards: () => Promise<{ key: Deno.KvKey; value: unknown; versionstamp: string | null }[]>,
): Promise<AddOutcome> {
  const key = favoriteKey(userId, ref);
  for (let lost = 0, startedAt = performance.now(); keepRacing(lost, startedAt);) {
    const [favorite, count] = await store.getMany<unknown>([key, countKey(userId)]);
    if (favorite!.value !== null) return "unchanged";
    const held = (count!.value as number | null) ?? 0;
    if (held >= max) return "limit";
    const records = await guards();
    if (records.some((record) => record.value === null)) return "gone";
    const result = await store.commit((op) =>
      op.check(favorite!, count!, ...records).set(key, true).set(countKey(userId), held + 1)
    );
    if (result.ok) return "added";
    await raceBackoff(++lost);
  }
  throw abandoned();
}

/** Drops `ref` from `userId`'s favourites; answers false when it was none. */
export async function removeFavorite(
  store: Store,
  userId: number,
  ref: FavoriteRef,
): Promise<boolean> {
  return await deleteFavorites(store, userId, [ref]) > 0;
}

/** Favourites deleted per atomic operation: one mutation each, well under Deno KV's 1000. */
const DELETES_PER_COMMIT = 500;

/** Drops `refs` from `userId`'s favourites; answers how many there were. */
export async function deleteFavorites(
  store: Store,
  userId: number,
  refs: readonly FavoriteRef[],
): Promise<number> {
  // each key once: one deleted twice in an operation would be counted off twice
  const keys = [
    ...new Map(refs.map((ref) => favoriteKey(userId, ref)).map((key) => [JSON.stringify(key), key]))
      .values(),
  ];
  let deleted = 0;
  for (let start = 0; start < keys.length; start += DELETES_PER_COMMIT) {
    deleted += await deleteKeys(store, userId, keys.slice(start, start + DELETES_PER_COMMIT));
  }
  return deleted;
}

/** Deletes those of `keys` that are held, and counts them off, in one atomic operation. */
async function deleteKeys(store: Store, userId: number, keys: Deno.KvKey[]): Promise<number> {
  for (let lost = 0, startedAt = performance.now(); keepRacing(lost, startedAt);) {
    const count = await store.get<number>(countKey(userId));
    const held = (await readMany(store, keys)).filter((entry) => entry.value !== null);
    if (!held.length) return 0;
    const result = await store.commit((op) => {
      op.check(count); // every write of the user's favourites sets it: it covers them all
      for (const entry of held) op.delete(entry.key);
      return op.set(countKey(userId), Math.max(0, (count.value ?? 0) - held.length));
    });
    if (result.ok) return held.length;
    await raceBackoff(++lost);
  }
  throw abandoned();
}

/** `keys`, ten at a time (Deno KV's limit). */
async function readMany(store: Store, keys: Deno.KvKey[]) {
  const chunks = [];
  for (let i = 0; i < keys.length; i += 10) chunks.push(store.getMany(keys.slice(i, i + 10)));
  return (await Promise.all(chunks)).flat();
}

/**
 * Removes every favourite of `userId`, count included: for when the user is deleted.
 *
 * @example
 * await deleteFavoritesOfUser(store, user.id);
 */
export async function deleteFavoritesOfUser(store: Store, userId: number): Promise<void> {
  for (;;) {
    const page = await store.list({ prefix: ["favorites", userId] }, { limit: DELETES_PER_COMMIT });
    if (!page.length) break;
    await store.commit((op) => {
      for (const { key } of page) op.delete(key);
      return op;
    });
  }
  await store.delete(countKey(userId));
}

/**
 * CTI users: platform users who log in on `/svc/api/2.0/auth/login`. This module owns their keys;
 * the configuration daemon's `/1.1/users` resource reads and writes the same records through it.
 */
import { hashPassword } from "../auth/passwords.ts";
import { deleteRecord, getByIndex, nextId, UniqueConflict, writeRecord } from "./records.ts";
import type { Store } from "./store.ts";

export interface UserRecord {
  id: number;
  uuid: string;
  firstname: string;
  lastname: string | null;
  /** Login name; a user with a username and a password can log in. */
  username: string | null;
  password_hash: string | null;
}

export interface NewUser {
  firstname: string;
  lastname?: string | null;
  username?: string | null;
  password?: string | null;
}

export const userKey = (id: number) => ["users", id] as const;
export const userByUsernameKey = (username: string) => ["users_by_username", username] as const;
export const userByUuidKey = (uuid: string) => ["users_by_uuid", uuid] as const;

function userIndexes(user: UserRecord): Deno.KvKey[] {
  const indexes: Deno.KvKey[] = [userByUuidKey(user.uuid)];
  if (user.username !== null) indexes.push(userByUsernameKey(user.username));
  return indexes;
}

/**
 * Creates a CTI user; throws {@link UniqueConflict} when the username is taken.
 *
 * @example
 * const alice = await createUser(store, { firstname: "Alice", username: "alice", password: "pw" });
 */
export async function createUser(store: Store, input: NewUser): Promise<UserRecord> {
  const user: UserRecord = {
    id: await nextId(store, "users"),
    uuid: crypto.randomUUID(),
    firstname: input.firstname,
    lastname: input.lastname ?? null,
    username: input.username ?? null,
    password_hash: input.password ? await hashPassword(input.password) : null,
  };
  const result = await writeRecord(store, {
    key: userKey(user.id),
    value: user,
    indexes: userIndexes(user),
  });
  if (!result.ok) throw new UniqueConflict("username", user.username ?? "");
  return user;
}

export async function getUser(store: Store, id: number): Promise<UserRecord | null> {
  return (await store.get<UserRecord>(userKey(id))).value;
}

export async function findUserByUsername(store: Store, username: string) {
  return (await getByIndex<UserRecord>(store, userByUsernameKey(username)))?.value ?? null;
}

export async function findUserByUuid(store: Store, uuid: string) {
  return (await getByIndex<UserRecord>(store, userByUuidKey(uuid)))?.value ?? null;
}

/** True when the store holds no CTI user at all. */
export async function hasNoUsers(store: Store): Promise<boolean> {
  return (await store.list({ prefix: ["users"] }, { limit: 1 })).length === 0;
}

/** Deletes a user and its index keys; answers false when there was none. */
export async function deleteUser(store: Store, id: number): Promise<boolean> {
  for (;;) {
    const entry = await store.get<UserRecord>(userKey(id));
    if (!entry.value) return false;
    if (await deleteRecord(store, entry.key, entry.versionstamp, userIndexes(entry.value))) {
      return true;
    }
  }
}

/**
 * The server's identity: one uuid, generated the first time it is asked for and kept in the store,
 * so that every process on one store, and every restart, answers the same. The agent daemon gives
 * it as `origin_uuid` (the daemon it follows names the server it runs on so).
 */
import type { Store } from "./store.ts";

interface ServerIdentity {
  uuid: string;
}

const IDENTITY_KEY: Deno.KvKey = ["server_identity"];

/** Uuids already read, per store: once written the identity never changes. */
const known = new WeakMap<Store, string>();

/**
 * The server's uuid; the first call on a store without one writes it. Two processes writing at
 * once agree: the write only happens where none is stored, and the loser reads the winner's.
 *
 * @example
 * const origin = await serverUuid(services.store);
 */
export async function serverUuid(store: Store): Promise<string> {
  const cached = known.get(store);
  if (cached) return cached;
  const uuid = await _readOrCreate(store);
  known.set(store, uuid);
  return uuid;
}

async function _readOrCreate(store: Store): Promise<string> {
  const stored = await store.get<ServerIdentity>(IDENTITY_KEY);
  if (stored.value) return stored.value.uuid;
  const identity: ServerIdentity = { uuid: crypto.randomUUID() };
  const written = await store.commit((op) =>
    op.check({ key: IDENTITY_KEY, versionstamp: null }).set(IDENTITY_KEY, identity)
  );
  if (written.ok) return identity.uuid;
  const winner = await store.get<ServerIdentity>(IDENTITY_KEY);
  if (!winner.value) throw new Error("the server identity was written, then removed");
  return winner.value.uuid;
}

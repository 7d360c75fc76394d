/**
 * Leases kept in the store: one process at a time does a piece of background work (delivering
 * the outbox, turning a PBX's events into store writes), and a process that dies loses its lease
 * by itself when the time runs out. Each lease is one key, holding {@link Lease}.
 */
import type { Store } from "./store.ts";

/** Who holds a lease, and until when. */
export interface Lease {
  owner: string;
  /** The lease is free once this time (ms) has passed: a process that died loses it by itself. */
  until: number;
  /**
   * How well placed its holder is to do the work (the platform lease: 1 connected to the PBX, 0
   * not); a process placed better takes the lease at once. Absent: 0.
   */
  strength?: number;
}

/** What taking the lease found. */
export interface LeaseTaken {
  /** The caller holds the lease now. */
  held: boolean;
  /**
   * Nobody took the lease since the caller gave it back as `releasedAs`: no other process ran a
   * pass meanwhile, so what the caller learnt last time still holds.
   */
  untouched: boolean;
}

/**
 * Takes or renews the lease for `owner` until `now + leaseMs` when it is free, expired or already
 * `owner`'s, or (with `strength`) held by a process of a lower strength (see {@link Lease}). The
 * check on the versionstamp makes two processes racing for it agree on one winner.
 */
export async function takeLeaseAt(
  store: Store,
  key: Deno.KvKey,
  owner: string,
  now: number,
  leaseMs: number,
  releasedAs: string | null = null,
  strength?: number,
): Promise<LeaseTaken> {
  const current = await store.get<Lease>(key);
  if (
    current.value && current.value.owner !== owner && current.value.until > now &&
    (strength ?? 0) <= (current.value.strength ?? 0)
  ) {
    return { held: false, untouched: false };
  }
  const lease: Lease = { owner, until: now + leaseMs, ...(strength !== undefined && { strength }) };
  const result = await store.commit((op) =>
    op.check({ key, versionstamp: current.versionstamp }).set(key, lease)
  );
  const untouched = releasedAs !== null && current.versionstamp === releasedAs;
  return { held: result.ok, untouched: result.ok && untouched };
}

/**
 * Gives the lease back if `owner` still holds it, so another process may take it at once: it is
 * left expired under `owner`'s name. Answers the versionstamp of that write (null if the lease
 * was not `owner`'s any more), for {@link takeLeaseAt}'s `releasedAs`.
 */
export async function releaseLeaseAt(
  store: Store,
  key: Deno.KvKey,
  owner: string,
): Promise<string | null> {
  const current = await store.get<Lease>(key);
  if (current.value?.owner !== owner) return null;
  const released: Lease = { owner, until: 0 };
  const result = await store.commit((op) =>
    op.check({ key, versionstamp: current.versionstamp }).set(key, released)
  );
  return result.ok ? result.versionstamp : null;
}

/**
 * Which CTI users are connected (decisions §2): a user holding an unexpired token issued by login
 * or single sign-on. Kept in the store, with an expiry, so every process sees the same answer.
 */
import type { Store } from "./store.ts";

const connectionKey = (userId: number) => ["connections", userId] as const;

/** Records that `userId` is connected until `untilMs`, unless already connected for longer. */
export async function markConnected(store: Store, userId: number, nowMs: number, untilMs: number) {
  const current = await store.get<number>(connectionKey(userId));
  if ((current.value ?? 0) >= untilMs) return;
  await store.set(connectionKey(userId), untilMs, { expireIn: untilMs - nowMs });
}

export async function isConnected(store: Store, userId: number, nowMs: number): Promise<boolean> {
  return ((await store.get<number>(connectionKey(userId))).value ?? 0) > nowMs;
}

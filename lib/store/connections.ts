/**
 * Which CTI users are connected (decisions §2): a user holding an unexpired token issued by login
 * or single sign-on. Kept in the store, with an expiry, so every process sees the same answer.
 */
import type { Store } from "./store.ts";

const connectionKey = (userId: number) => ["connections", userId] as const;

/** Per store, the end this process last recorded for each user (it only ever moves later). */
const recorded = new WeakMap<Store, Map<number, number>>();
/** How much earlier than asked a connection this process recorded may end: a tenth, 60 s at most. */
const slackMs = (ttlMs: number) => Math.min(60_000, ttlMs / 10);

/**
 * Records that `userId` is connected until `untilMs`, unless already connected for longer. A
 * connection this process recorded that ends at most a little earlier (a tenth of the time asked,
 * 60 s at most) is left as it is: a client calling the 1.0 API in a loop costs no write per call.
 */
export async function markConnected(store: Store, userId: number, nowMs: number, untilMs: number) {
  let users = recorded.get(store);
  if (!users) recorded.set(store, users = new Map());
  if ((users.get(userId) ?? 0) >= untilMs - slackMs(untilMs - nowMs)) return;
  const current = await store.get<number>(connectionKey(userId));
  if ((current.value ?? 0) < untilMs) {
    await store.set(connectionKey(userId), untilMs, { expireIn: untilMs - nowMs });
  }
  if (users.size >= 10_000) users.clear();
  users.set(userId, Math.max(current.value ?? 0, untilMs));
}

export async function isConnected(store: Store, userId: number, nowMs: number): Promise<boolean> {
  return ((await store.get<number>(connectionKey(userId))).value ?? 0) > nowMs;
}

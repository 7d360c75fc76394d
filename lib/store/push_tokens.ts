/**
 * Mobile push tokens: at most one per CTI user and platform, under `["push_tokens", userId,
 * platform]`; registering again replaces the previous one. A device token reaches one app install,
 * so it belongs to one user at a time: when another user registers the same token on the same
 * platform (a shared phone, a new login), it is taken from the previous holder, whose pushes would
 * otherwise land on someone else's phone. `["push_tokens_by_token", platform, sha256(token)]`
 * names the holder (a hash, since a token may exceed Deno KV's key size).
 */
import { sha256Hex } from "../digest.ts";
import type { Store } from "./store.ts";
import { users } from "./users.ts";

export const PUSH_PLATFORMS = ["android", "ios"] as const;
export type PushPlatform = typeof PUSH_PLATFORMS[number];

export interface PushTokenRecord {
  user_id: number;
  platform: PushPlatform;
  token: string;
  /** ISO 8601, UTC. */
  registered_at: string;
}

const pushTokenKey = (userId: number, platform: PushPlatform): Deno.KvKey => [
  "push_tokens",
  userId,
  platform,
];

async function holderKey(platform: PushPlatform, token: string): Promise<Deno.KvKey> {
  return ["push_tokens_by_token", platform, await sha256Hex(token)];
}

/**
 * Stores `token` as the push token of `userId` on `platform`, replacing the previous one and
 * taking it from any other user holding it there. Answers null, and stores nothing, when the user
 * does not exist (any more).
 *
 * @example
 * await registerPushToken(store, 1, "android", "fcm-token", Date.now());
 */
export async function registerPushToken(
  store: Store,
  userId: number,
  platform: PushPlatform,
  token: string,
  nowMs: number,
): Promise<PushTokenRecord | null> {
  const record: PushTokenRecord = {
    user_id: userId,
    platform,
    token,
    registered_at: new Date(nowMs).toISOString(),
  };
  const key = pushTokenKey(userId, platform);
  const holder = await holderKey(platform, token);
  for (;;) {
    const user = await users.entry(store, userId); // a user an import has not committed is none
    if (user.value === null) return null;
    const previous = await store.get<PushTokenRecord>(key);
    const held = await store.get<number>(holder);
    const other = held.value !== null && held.value !== userId
      ? await store.get<PushTokenRecord>(pushTokenKey(held.value, platform))
      : null;
    const previousHeld = previous.value && previous.value.token !== token
      ? await store.get<number>(await holderKey(platform, previous.value.token))
      : null;
    const result = await store.commit((op) => {
      op.check(user, previous, held);
      if (other) {
        op.check(other);
        if (other.value?.token === token) op.delete(other.key);
      }
      if (previousHeld) {
        op.check(previousHeld);
        if (previousHeld.value === userId) op.delete(previousHeld.key);
      }
      return op.set(key, record).set(holder, userId);
    });
    if (result.ok) return record;
  }
}

/**
 * The push tokens of `userId`, android first.
 *
 * @example
 * const tokens = await pushTokensOfUser(store, 1); // [{user_id, platform, token, registered_at}]
 */
export async function pushTokensOfUser(store: Store, userId: number): Promise<PushTokenRecord[]> {
  const entries = await store.list<PushTokenRecord>({ prefix: ["push_tokens", userId] });
  return entries.map((entry) => entry.value);
}

/**
 * Forgets every push token of `userId` (when the user is deleted).
 *
 * @example
 * await deletePushTokensOfUser(store, 1);
 */
export async function deletePushTokensOfUser(store: Store, userId: number): Promise<void> {
  for (const platform of PUSH_PLATFORMS) {
    const key = pushTokenKey(userId, platform);
    for (;;) {
      const entry = await store.get<PushTokenRecord>(key);
      if (entry.value === null) break;
      const holder = await holderKey(platform, entry.value.token);
      const held = await store.get<number>(holder);
      const result = await store.commit((op) => {
        op.check(entry, held).delete(key);
        return held.value === userId ? op.delete(holder) : op;
      });
      if (result.ok) break;
    }
  }
}

/**
 * Chat messages (flash text, docs/cti.md "Chat") waiting for their recipient: the only module that
 * knows their keys. A message is kept from the moment it is sent until one of the recipient's
 * sockets is given it (live, or at the socket's open); being given removes it, so a message is
 * undelivered exactly while its key exists.
 *
 * - `["chat_messages", userId, id]` holds a {@link ChatMessageRecord} for the recipient `userId`;
 *   `id` numbers the recipient's messages in the order they were stored, so one range read gives
 *   them oldest first.
 * - `["chat_inbox", userId]` holds the recipient's {@link Inbox}: how many messages wait and the
 *   last id given. Every write of the recipient's messages sets it in the same atomic operation,
 *   checked against the versionstamp it was read with: a send, a delivery and a claim racing on
 *   the same inbox each see the others' outcome, and none gives a message twice.
 *
 * Both expire {@link CHAT_RETENTION_MS} after their last write (Deno KV removes them lazily, so
 * reads also skip messages older than that): the inbox key outlives every message, since each
 * message's write rewrites it.
 */
import { StoreBusy } from "../errors.ts";
import { keepRacing, raceBackoff, type Store } from "./store.ts";

/** Messages kept for one recipient at most; one more is refused until some are given. */
export const CHAT_BACKLOG = 1_000;
/** How long a message waits for its recipient (30 days); then it is dropped unseen. */
export const CHAT_RETENTION_MS = 30 * 24 * 3600_000;
/** Messages taken in one atomic claim (one mutation each, well within Deno KV's limits). */
export const CHAT_CLAIM_BATCH = 100;

/** A user as a chat message names its sender and recipient (xuc's `from` and `to`). */
export interface ChatParty {
  username: string;
  /** The user's own number (main line's first extension), "" without one. */
  phoneNumber: string;
  displayName: string;
  /** The user's uuid. */
  guid: string;
}

export interface ChatMessageRecord {
  /** The recipient's message number, in the order stored. */
  id: number;
  from: ChatParty;
  to: ChatParty;
  /** The sender's own number for it (`cti.js`'s `seq`). */
  sequence: number;
  message: string;
  /** When it was stored (ms). */
  date: number;
}

interface Inbox {
  /** Messages waiting (may count some that expired: they are dropped when the count is full). */
  count: number;
  /** The last id given. */
  last: number;
}

const messageKey = (userId: number, id: number): Deno.KvKey => ["chat_messages", userId, id];
const inboxKey = (userId: number): Deno.KvKey => ["chat_inbox", userId];
const EMPTY: Inbox = { count: 0, last: 0 };

const expired = (record: ChatMessageRecord, now: number) => record.date <= now - CHAT_RETENTION_MS;

/**
 * Runs `attempt` again while its commit loses to a concurrent change of the inbox (it answers
 * {@link LOST}), as long as {@link keepRacing} says.
 */
async function racing<T>(attempt: () => Promise<T | typeof LOST>): Promise<T> {
  for (let lost = 0, startedAt = performance.now(); keepRacing(lost, startedAt);) {
    const outcome = await attempt();
    if (outcome !== LOST) return outcome;
    await raceBackoff(++lost);
  }
  throw new StoreBusy("the chat messages");
}

const LOST = Symbol("lost");

const readInbox = (store: Store, userId: number) => store.get<Inbox>(inboxKey(userId));

/**
 * Stores a message for `userId` (its id and `date` given here) and answers it; answers null, and
 * stores nothing, when {@link CHAT_BACKLOG} messages wait for the recipient already.
 */
export function addChatMessage(
  store: Store,
  userId: number,
  draft: Omit<ChatMessageRecord, "id" | "date">,
  now: number,
): Promise<ChatMessageRecord | null> {
  return racing(async () => {
    const inbox = await readInbox(store, userId);
    let { count, last } = inbox.value ?? EMPTY;
    if (count >= CHAT_BACKLOG) {
      // the count may hold expired messages: those at the head are dropped (then read again),
      // those Deno KV removed by itself are counted out
      if (await dropExpired(store, userId, now)) return LOST;
      count = await store.count({ prefix: ["chat_messages", userId] }, CHAT_BACKLOG);
      if (count >= CHAT_BACKLOG) return null;
    }
    const record: ChatMessageRecord = { ...draft, id: last + 1, date: now };
    const { ok } = await store.commit((op) =>
      op.check(inbox)
        .set(messageKey(userId, record.id), record, { expireIn: CHAT_RETENTION_MS })
        .set(inboxKey(userId), { count: count + 1, last: record.id }, {
          expireIn: CHAT_RETENTION_MS,
        })
    );
    return ok ? record : LOST;
  });
}

/** Removes the expired messages at the head of `userId`'s inbox; true when it removed some. */
async function dropExpired(store: Store, userId: number, now: number): Promise<boolean> {
  let dropped = false;
  for (;;) {
    const taken = await takeOldest(store, userId, (record) => expired(record, now));
    dropped ||= taken.length > 0;
    if (taken.length < CHAT_CLAIM_BATCH) return dropped;
  }
}

/**
 * Takes (removes, in one atomic operation) the oldest messages of `userId` that `wanted` accepts,
 * up to the first it does not, {@link CHAT_CLAIM_BATCH} at most.
 */
function takeOldest(
  store: Store,
  userId: number,
  wanted: (record: ChatMessageRecord) => boolean,
): Promise<ChatMessageRecord[]> {
  return racing(async () => {
    const inbox = await readInbox(store, userId);
    // the count is never below what waits (every removal goes through it, or expired): a socket
    // opening with nothing waiting costs one read
    if ((inbox.value?.count ?? 0) === 0) return [];
    const entries = await store.list<ChatMessageRecord>(
      { prefix: ["chat_messages", userId] },
      { limit: CHAT_CLAIM_BATCH },
    );
    const end = entries.findIndex((entry) => !wanted(entry.value));
    const taken = end === -1 ? entries : entries.slice(0, end);
    if (taken.length === 0) return [];
    const { count, last } = inbox.value ?? EMPTY;
    const { ok } = await store.commit((op) => {
      op.check(inbox);
      for (const entry of taken) op.delete(entry.key);
      return op.set(inboxKey(userId), { count: Math.max(0, count - taken.length), last }, {
        expireIn: CHAT_RETENTION_MS,
      });
    });
    return ok ? taken.map((entry) => entry.value) : LOST;
  });
}

/**
 * Claims the oldest messages waiting for `userId`, {@link CHAT_CLAIM_BATCH} at most: they are
 * removed in one atomic operation, so whoever claims a message is the only one to get it. Answers
 * those not expired, and whether more may wait (then call again).
 */
export async function claimChatMessages(store: Store, userId: number, now: number) {
  const taken = await takeOldest(store, userId, () => true);
  return {
    messages: taken.filter((record) => !expired(record, now)),
    more: taken.length === CHAT_CLAIM_BATCH,
  };
}

/**
 * Marks message `id` of `userId` delivered (removes it); false when it was gone already (given
 * by another socket's claim, or expired).
 */
export function deliverChatMessage(store: Store, userId: number, id: number): Promise<boolean> {
  return racing(async () => {
    const [inbox, message] = await store.getMany<unknown>([
      inboxKey(userId),
      messageKey(userId, id),
    ]);
    if (message!.value === null) return false;
    const { count, last } = (inbox!.value as Inbox | null) ?? EMPTY;
    const { ok } = await store.commit((op) =>
      op.check(inbox!, message!)
        .delete(messageKey(userId, id))
        .set(inboxKey(userId), { count: Math.max(0, count - 1), last }, {
          expireIn: CHAT_RETENTION_MS,
        })
    );
    return ok ? true : LOST;
  });
}

/** The messages waiting for `userId`, oldest first, expired ones left out (tests, inspection). */
export async function waitingChatMessages(
  store: Store,
  userId: number,
  now: number,
): Promise<ChatMessageRecord[]> {
  const entries = await store.list<ChatMessageRecord>({ prefix: ["chat_messages", userId] });
  return entries.map((entry) => entry.value).filter((record) => !expired(record, now));
}

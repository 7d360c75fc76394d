/**
 * Where presences live (the only module that knows their keys), so that a restart, or another svc
 * process on the same store, keeps them:
 *
 * - `["presence_statuses"]` holds the list of statuses the administrator set; absent: the
 *   defaults ({@link DEFAULT_STATUSES}).
 * - `["presences", userId]` holds the status the user last chose ({@link PresenceRecord}); absent:
 *   none chosen yet. Deleted with the user (`DELETE /1.1/users/{id}`).
 */
import { batchedRead } from "../store/shared_read.ts";
import type { Store } from "../store/store.ts";
import { DEFAULT_STATUSES, type UserStatus } from "./statuses.ts";

export interface PresenceRecord {
  /** A status's `name`. */
  status: string;
  /** When it was chosen, ISO 8601 UTC. */
  since: string;
}

const STATUSES_KEY: Deno.KvKey = ["presence_statuses"];
const presenceKey = (userId: number): Deno.KvKey => ["presences", userId];

/** The statuses users may choose: the administrator's list, else the defaults. */
export async function readStatuses(store: Store): Promise<readonly UserStatus[]> {
  return (await store.get<UserStatus[]>(STATUSES_KEY)).value ?? DEFAULT_STATUSES;
}

/** What a socket is greeted with: the statuses on offer, and the one the user last chose. */
export interface Greeting {
  statuses: readonly UserStatus[];
  presence: string | null;
}

/** Each store's greeting reads, shared by the sockets opening at once. */
const greetingReads = new WeakMap<
  Store,
  (userIds: Iterable<number>) => Promise<Map<number, Greeting>>
>();

/**
 * {@link readStatuses} and the status `userId` last chose (null: none) in one read, shared with
 * the other sockets opening at the same time (each `getMany` reads the list and 9 users'
 * presences): a crowd of sockets opening costs a read per 9 users, not two per socket.
 */
export async function readGreeting(store: Store, userId: number): Promise<Greeting> {
  let read = greetingReads.get(store);
  if (!read) greetingReads.set(store, read = batchedRead((ids) => readGreetings(store, ids)));
  return (await read([userId])).get(userId)!;
}

async function readGreetings(store: Store, userIds: number[]): Promise<Map<number, Greeting>> {
  const chunks: number[][] = [];
  for (let start = 0; start < userIds.length; start += 9) {
    chunks.push(userIds.slice(start, start + 9));
  }
  const read = await Promise.all(chunks.map(async (chunk) => {
    const [list, ...presences] = await store.getMany<unknown>([
      STATUSES_KEY,
      ...chunk.map(presenceKey),
    ]);
    const statuses = (list!.value as UserStatus[] | null) ?? DEFAULT_STATUSES;
    return chunk.map((id, i) => {
      const presence = (presences[i]!.value as PresenceRecord | null)?.status ?? null;
      return [id, { statuses, presence }] as const;
    });
  }));
  return new Map(read.flat());
}

/** Replaces the list of statuses (checked by the caller: one at least, names unique). */
export async function writeStatuses(store: Store, statuses: UserStatus[]): Promise<void> {
  await store.set(STATUSES_KEY, statuses);
}

/** Stores `status` as the one `userId` chose at `nowMs`. */
export async function writePresence(
  store: Store,
  userId: number,
  status: string,
  nowMs: number,
): Promise<void> {
  const record: PresenceRecord = { status, since: new Date(nowMs).toISOString() };
  await store.set(presenceKey(userId), record);
}

/** Forgets the user's presence (the user is deleted). */
export async function deletePresenceOfUser(store: Store, userId: number): Promise<void> {
  await store.delete(presenceKey(userId));
}

/**
 * Guests' requests to join a meeting (`/1.1/guests/{guest}/meetings/{meeting}/authorizations`),
 * accepted or rejected by one of its owners (`/1.1/users/me/meetings/{meeting}/authorizations`).
 * Keys `["meeting_authorizations", meeting id, authorization id]`; each expires a day after it was
 * asked (Wazo's validity), and a meeting takes 128 at most.
 */
import type { Store } from "./store.ts";

export type AuthorizationStatus = "pending" | "accepted" | "rejected";

export interface MeetingAuthorizationRecord {
  id: string;
  meeting_id: string;
  guest_id: string;
  guest_name: string;
  status: AuthorizationStatus;
  created_ms: number;
}

/** How long an authorization is kept (Wazo's: 24 h). */
export const AUTHORIZATION_TTL_MS = 24 * 3600 * 1000;
/** Authorizations a meeting holds at most (Wazo's quota). */
export const MAX_AUTHORIZATIONS = 128;

const PREFIX = "meeting_authorizations";
const key = (meetingId: string, id: string): Deno.KvKey => [PREFIX, meetingId, id];

/** The meeting's authorizations still valid at `now`, oldest first. */
export async function authorizationsOf(
  store: Store,
  meetingId: string,
  now: number,
): Promise<MeetingAuthorizationRecord[]> {
  const entries = await store.list<MeetingAuthorizationRecord>({ prefix: [PREFIX, meetingId] });
  return entries.map((entry) => entry.value)
    .filter((record) => record.created_ms + AUTHORIZATION_TTL_MS > now)
    .sort((a, b) => a.created_ms - b.created_ms || (a.id < b.id ? -1 : 1));
}

/** The authorization `id` of the meeting, still valid at `now`, or null. */
export async function getAuthorization(
  store: Store,
  meetingId: string,
  id: string,
  now: number,
): Promise<MeetingAuthorizationRecord | null> {
  const { value } = await store.get<MeetingAuthorizationRecord>(key(meetingId, id));
  return value && value.created_ms + AUTHORIZATION_TTL_MS > now ? value : null;
}

/**
 * Stores a new authorization unless the meeting holds {@link MAX_AUTHORIZATIONS} valid ones
 * already (answers null then). A counter key of the meeting, checked and bumped by every addition,
 * makes two additions at once count each other.
 */
export async function addAuthorization(
  store: Store,
  record: MeetingAuthorizationRecord,
): Promise<MeetingAuthorizationRecord | null> {
  const counterKey: Deno.KvKey = [`${PREFIX}_added`, record.meeting_id];
  for (;;) {
    const counter = await store.get<number>(counterKey);
    const valid = await authorizationsOf(store, record.meeting_id, record.created_ms);
    if (valid.length >= MAX_AUTHORIZATIONS) return null;
    const result = await store.commit((op) =>
      op.check(counter)
        .set(counterKey, (counter.value ?? 0) + 1)
        .set(key(record.meeting_id, record.id), record, { expireIn: AUTHORIZATION_TTL_MS })
    );
    if (result.ok) return record;
  }
}

/** Changes the status of an authorization, still valid at `now` (its expiry kept). */
export async function setAuthorizationStatus(
  store: Store,
  record: MeetingAuthorizationRecord,
  status: AuthorizationStatus,
  now: number,
): Promise<MeetingAuthorizationRecord> {
  const changed = { ...record, status };
  const left = Math.max(1, record.created_ms + AUTHORIZATION_TTL_MS - now);
  await store.set(key(record.meeting_id, record.id), changed, { expireIn: left });
  return changed;
}

/** Deletes an authorization. */
export async function deleteAuthorization(
  store: Store,
  record: MeetingAuthorizationRecord,
): Promise<void> {
  await store.delete(key(record.meeting_id, record.id));
}

/** Deletes every authorization of a meeting (the meeting is gone). */
export async function deleteAuthorizationsOf(store: Store, meetingId: string): Promise<void> {
  const entries = await store.list({ prefix: [PREFIX, meetingId] });
  for (const entry of entries) await store.delete(entry.key);
  await store.delete([`${PREFIX}_added`, meetingId]);
}

/**
 * Meetings: the personal meeting rooms of CTI users (the 2.0 API's `config/meetingrooms/personal`,
 * the configuration daemon's `/1.1/meetings` and `/1.1/users/me/meetings`) and the temporary rooms
 * the token route opens (docs/meetingrooms.md). Each has a number of its own, dialled in its
 * context: `(context, number)` is unique among meetings, and is checked against the extensions
 * when a number is given.
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export type MeetingKind = "personal" | "temporary";

export interface MeetingRecord {
  /** A UUID (`uuid` for Wazo's clients). */
  id: string;
  kind: MeetingKind;
  name: string;
  /** The users who own it (a personal room of the 2.0 API: its one user); none for a temporary one. */
  owner_ids: number[];
  number: string;
  /** The context its number is dialled in. */
  context: string;
  /** Digits asked by the bridge before joining; null: none. */
  pin: string | null;
  /** Wazo's flag, kept: svc deletes no meeting by itself but temporary rooms. */
  persistent: boolean;
  /** Guests must be accepted by an owner (`/1.1/guests/…/authorizations`). */
  require_authorization: boolean;
  created_ms: number;
  /** A temporary room: until when it is kept while nobody is in it; null for a personal room. */
  expires_ms: number | null;
}

/** Meetings by id; `number` is the unique `[context, number]`, `name` a temporary room's name. */
export const meetings = new Collection<MeetingRecord>("meetings", {
  number: (meeting) => [meeting.context, meeting.number],
  temporary: (meeting) => meeting.kind === "temporary" ? meeting.name : null,
});

/** The meeting `id`, or null. */
export const getMeeting = (store: Store, id: string) => meetings.get(store, id);

/** The temporary room named `name`, or null. */
export const findTemporaryRoom = (store: Store, name: string) =>
  meetings.findBy(store, "temporary", name);

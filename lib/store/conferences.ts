/**
 * Conferences: the configuration daemon's `/1.1/conferences`, the static meeting rooms an
 * administrator sets up (docs/meetingrooms.md). A conference is reached by the extension associated
 * with it (`extensions.conference_id`, one at most), in a conference room range of that extension's
 * context.
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export interface ConferenceRecord {
  id: number;
  name: string | null;
  preprocess_subroutine: string | null;
  /** Participants at most (0: no limit). */
  max_users: number;
  /** Recorded from its first participant on. */
  record: boolean;
  /** Digits asked by the bridge before joining; null: none. */
  pin: string | null;
  /** Kept for Wazo's clients; the phone is asked `pin` only (docs/meetingrooms.md). */
  admin_pin: string | null;
  quiet_join_leave: boolean;
  announce_join_leave: boolean;
  announce_user_count: boolean;
  announce_only_user: boolean;
  /** The music on hold class of a lone participant; null: the default one. */
  music_on_hold: string | null;
}

export const conferences = new Collection<ConferenceRecord>("conferences");

/** The conference `id`, or null. */
export const getConference = (store: Store, id: number) => conferences.get(store, id);

/** A complete conference record from the fields a body gave. */
export function buildConference(id: number, input: Partial<Omit<ConferenceRecord, "id">>) {
  const record: ConferenceRecord = {
    id,
    name: null,
    preprocess_subroutine: null,
    max_users: 50, // Wazo's default
    record: false,
    pin: null,
    admin_pin: null,
    quiet_join_leave: false,
    announce_join_leave: false,
    announce_user_count: false,
    announce_only_user: true,
    music_on_hold: null,
    ...input,
  };
  return record;
}

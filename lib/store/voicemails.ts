/**
 * Voicemails: mailboxes numbered `number` in a context, `(context, number)` unique. A user has at
 * most one voicemail (`users.voicemail_id`); a voicemail lists its users (`voicemails.user_ids`).
 * No line is needed to associate them (15.15).
 */
import { Collection, type Transaction } from "./records.ts";
import type { Store } from "./store.ts";
import { type UserRecord, users } from "./users.ts";

export interface VoicemailRecord {
  id: number;
  name: string;
  number: string;
  /** Name of the context. */
  context: string;
  /** Digits the owner types to listen to messages; returned by the API, as Wazo does. */
  password: string | null;
  email: string | null;
  pager: string | null;
  language: string | null;
  timezone: string | null;
  max_messages: number | null;
  attach_audio: boolean;
  delete_messages: boolean;
  ask_password: boolean;
  enabled: boolean;
  /** Extra Asterisk options as `[name, value]` pairs. */
  options: [string, string][];
  user_ids: number[];
}

/** Voicemails by id; `number` is the unique `[context, number]` pair. */
export const voicemails = new Collection<VoicemailRecord>("voicemails", {
  number: (voicemail) => [voicemail.context, voicemail.number],
});

/** The voicemail `id`, or null. */
export const getVoicemail = (store: Store, id: number) => voicemails.get(store, id);

/** The voicemail `number` of `context`, or null. */
export const findVoicemail = (store: Store, number: string, context: string) =>
  voicemails.findBy(store, "number", [context, number]);

/** Writes both sides of user → voicemail in `tx`; the caller checked the user has none. */
export function linkUserVoicemail(tx: Transaction, user: UserRecord, voicemail: VoicemailRecord) {
  tx.put(users, { ...user, voicemail_id: voicemail.id });
  tx.put(voicemails, { ...voicemail, user_ids: [...voicemail.user_ids, user.id] });
}

/** Removes both sides of user → voicemail in `tx`. */
export function unlinkUserVoicemail(
  tx: Transaction,
  user: UserRecord,
  voicemail: VoicemailRecord,
) {
  tx.put(users, { ...user, voicemail_id: null });
  tx.put(voicemails, { ...voicemail, user_ids: voicemail.user_ids.filter((id) => id !== user.id) });
}

/**
 * Users: the configuration daemon's `/1.1/users` records. A user with a `username` and a password
 * is a CTI user who logs in on `/svc/api/2.0/auth/login`; this module is the one source of truth
 * for both. Associations (lines, voicemail, call permissions, entity) are kept on the record; the
 * other side of each association keeps its own list, and both change in one transaction.
 */
import { hashPassword } from "../auth/passwords.ts";
import { Collection, transact } from "./records.ts";
import type { Store } from "./store.ts";

export interface Forward {
  enabled: boolean;
  destination: string | null;
}

export type ForwardKind = "busy" | "noanswer" | "unconditional";
export type ServiceName = "dnd" | "incallfilter";

export interface UserRecord {
  id: number;
  uuid: string;
  firstname: string;
  lastname: string | null;
  email: string | null;
  /** Login name; a user with a username and a password can log in. */
  username: string | null;
  password_hash: string | null;
  caller_id: string | null;
  outgoing_caller_id: string | null;
  mobile_phone_number: string | null;
  language: string | null;
  timezone: string | null;
  description: string | null;
  userfield: string | null;
  line_type: string | null;
  enabled: boolean;
  call_permission_password: string | null;
  /**
   * Whether others may watch the user's phone (busy lamps, lib/presence/hints.ts), as in Wazo;
   * true by default. It grants no right: supervisors have rights profiles (lib/rights/).
   */
  supervision_enabled: boolean;
  /** Spelled so by the specification. */
  call_tranfer_enabled: boolean;
  ring_seconds: number;
  simultaneous_calls: number;
  /** Lines in association order; the first is the main line. */
  line_ids: number[];
  voicemail_id: number | null;
  callpermission_ids: number[];
  entity_id: number | null;
  services: Record<ServiceName, { enabled: boolean }>;
  forwards: Record<ForwardKind, Forward>;
  /**
   * The id of the last event a change of this record published (`lib/user_services.ts`): the
   * next one is drawn above it, so that its events keep the order of its changes across
   * processes. Internal: no view shows it.
   */
  last_event_id?: string;
}

export const users = new Collection<UserRecord>("users", {
  username: (user) => user.username,
  uuid: (user) => user.uuid,
});

/** The fields a new user may be given; the others take their defaults. */
export type NewUser =
  & Pick<UserRecord, "firstname">
  & Partial<Omit<UserRecord, "id" | "uuid" | "password_hash">>
  & { password?: string | null };

/** A complete record with the defaults of decisions §10 (ring 30 s, 5 simultaneous calls, …). */
export async function buildUser(id: number, input: NewUser): Promise<UserRecord> {
  const { password, ...fields } = input;
  const noForward = () => ({ enabled: false, destination: null });
  return {
    id,
    uuid: crypto.randomUUID(),
    lastname: null,
    email: null,
    username: null,
    outgoing_caller_id: null,
    mobile_phone_number: null,
    language: null,
    timezone: null,
    description: null,
    userfield: null,
    line_type: null,
    enabled: true,
    call_permission_password: null,
    supervision_enabled: true,
    call_tranfer_enabled: true,
    ring_seconds: 30,
    simultaneous_calls: 5,
    line_ids: [],
    voicemail_id: null,
    callpermission_ids: [],
    entity_id: null,
    services: { dnd: { enabled: false }, incallfilter: { enabled: false } },
    forwards: { busy: noForward(), noanswer: noForward(), unconditional: noForward() },
    ...fields,
    // generated only when absent at creation, never updated by a name change (15.14)
    caller_id: fields.caller_id ??
      `"${[input.firstname, input.lastname].filter(Boolean).join(" ")}"`,
    password_hash: password ? await hashPassword(password) : null,
  };
}

/**
 * Creates a user; throws `UniqueConflict` when the username is taken.
 *
 * @example
 * const alice = await createUser(store, { firstname: "Alice", username: "alice", password: "pw" });
 */
export async function createUser(store: Store, input: NewUser): Promise<UserRecord> {
  return await users.put(store, await buildUser(await users.nextId(store), input));
}

export const getUser = (store: Store, id: number) => users.get(store, id);
export const findUserByUsername = (store: Store, username: string) =>
  users.findBy(store, "username", username);
/** The id of the user `username` (kept while nothing is committed: `Collection.findIdBy`). */
export const findUserIdByUsername = (store: Store, username: string) =>
  users.findIdBy(store, "username", username) as Promise<number | null>;
export const findUserByUuid = (store: Store, uuid: string) => users.findBy(store, "uuid", uuid);

/** True when the store holds no user at all (an import not committed yet holds none). */
export async function hasNoUsers(store: Store): Promise<boolean> {
  return (await users.all(store)).length === 0;
}

/** Deletes a user and its index keys; answers false when there was none. */
export function deleteUser(store: Store, id: number): Promise<boolean> {
  return transact(store, async (tx) => {
    if (!await tx.get(users, id)) return false;
    tx.remove(users, id);
    return true;
  });
}

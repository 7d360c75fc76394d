/**
 * Supervisors' rights profiles (docs/supervision.md, "Who is a supervisor"), as XiVO CC keeps
 * them: per CTI user, none, `admin` (every queue, agent and group, every right) or `supervisor`
 * (the queues, agent groups and incoming-call numbers listed, and the rights flagged). One record
 * per user, keyed by the user's id; this module is the only one knowing their keys.
 *
 * Every write changes the collection's version key in the same commit, so the list kept in each
 * process (`Collection.all`) is read again after any change, by any process sharing the store: a
 * profile is read at each request that needs it, at the cost of no read while nothing was
 * committed to the store and of one small read otherwise.
 */
import { Collection, transact, type Transaction } from "../store/records.ts";
import type { Store } from "../store/store.ts";

export type ProfileKind = "admin" | "supervisor";

export interface RightsProfileRecord {
  /** The user's id (`/1.1/users`). */
  id: number;
  profile: ProfileKind;
  /** What a supervisor covers (an admin covers everything: these are empty). */
  queue_ids: number[];
  group_ids: number[];
  /** Incoming-call numbers (XiVO's incalls): kept and shown; svc serves nothing by them yet. */
  incalls: string[];
  /** Access to recordings (none served by svc yet: told to the client in `RightProfile`). */
  recording: boolean;
  /** Listening to its agents' calls (`mayListen`). */
  listen: boolean;
  /** Changing its agents' queues: memberships and the agent group moves. */
  change_queues: boolean;
}

export const rightsProfiles = new Collection<RightsProfileRecord>("rights_profiles");

/** An administrator's profile: covers everything, every right. */
export const adminProfile = (userId: number): RightsProfileRecord => ({
  id: userId,
  profile: "admin",
  queue_ids: [],
  group_ids: [],
  incalls: [],
  recording: true,
  listen: true,
  change_queues: true,
});

/** Every profile, in user id order (read-only: the collection's kept list). */
export const listProfiles = (store: Store) => rightsProfiles.all(store);

/** Each kept list's profiles by user id, built once per list. */
const indexes = new WeakMap<readonly RightsProfileRecord[], Map<number, RightsProfileRecord>>();

/**
 * The profile of `userId`, or null: from the list kept in this process, read again only when a
 * profile changed since (see the module's comment).
 */
export async function profileOf(store: Store, userId: number): Promise<RightsProfileRecord | null> {
  const list = await listProfiles(store);
  let index = indexes.get(list);
  if (!index) indexes.set(list, index = new Map(list.map((profile) => [profile.id, profile])));
  return index.get(userId) ?? null;
}

/**
 * Gives a user `profile`, replacing its own; nothing is checked (the REST route checks the user,
 * the queues and the groups): for the demo data and tests.
 */
export const setProfile = (store: Store, profile: RightsProfileRecord) =>
  rightsProfiles.put(store, profile);

/** In `tx`: `queueId` is no longer in any profile (the queue is deleted). */
export async function forgetQueue(tx: Transaction, queueId: number): Promise<void> {
  for (const profile of await tx.all(rightsProfiles)) {
    if (!profile.queue_ids.includes(queueId)) continue;
    tx.put(rightsProfiles, {
      ...profile,
      queue_ids: profile.queue_ids.filter((id) => id !== queueId),
    });
  }
}

/** In `tx`: `groupId` is no longer in any profile (the agent group is deleted). */
export async function forgetGroup(tx: Transaction, groupId: number): Promise<void> {
  for (const profile of await tx.all(rightsProfiles)) {
    if (!profile.group_ids.includes(groupId)) continue;
    tx.put(rightsProfiles, {
      ...profile,
      group_ids: profile.group_ids.filter((id) => id !== groupId),
    });
  }
}

/** In `tx`: the user's profile goes (the user is deleted). */
export function forgetUser(tx: Transaction, userId: number): void {
  tx.remove(rightsProfiles, userId);
}

/** Deletes the profile of `userId`; answers false when it had none. */
export function deleteProfile(store: Store, userId: number): Promise<boolean> {
  return transact(store, async (tx) => {
    if (!await tx.get(rightsProfiles, userId)) return false;
    tx.remove(rightsProfiles, userId);
    return true;
  });
}

/**
 * The upgrade of a store written before rights profiles (docs/decisions.md, "Supervisors' rights
 * profiles"), run once per store by the first process that starts on it (`prepareStore`):
 *
 * - a CTI user (with a username) whose `supervision_enabled` was true was a supervisor of every
 *   queue and agent: it gets an `admin` profile, so that it keeps what it had, no more;
 * - every user's `supervision_enabled` becomes true: false was the earlier version's default and
 *   meant "no supervisor", never "do not watch my phone", which is its meaning from now on.
 *
 * Only the users that existed when it began are changed (a user created since by a process
 * already running this version is left as it was made). It runs in commits of at most
 * {@link BATCH} users, each recording how far it went (`progressKey`), so a process stopped in
 * the middle, or two processes starting at once, never do a user twice; the last commit marks the
 * store done, and later starts read that one key.
 */
import type { Logger } from "../log.ts";
import { transact } from "../store/records.ts";
import type { Store } from "../store/store.ts";
import { users } from "../store/users.ts";
import { adminProfile, rightsProfiles } from "./profiles.ts";

/** Where the migration keeps how far it went. */
export const progressKey: Deno.KvKey = ["meta", "migrations", "rights_profiles"];

/**
 * Users looked at per commit: a user may take two writes, each checked at commit, and Deno KV
 * checks at most 100 keys in one atomic operation.
 */
const BATCH = 40;

interface Progress {
  /** The highest user id when it began: users above it were made by this version. */
  upTo: number;
  /** The users up to this id are done. */
  doneTo: number;
  done: boolean;
}

/** What the migration changed (for the log). */
export interface MigrationOutcome {
  admins: number[];
  watchable: number;
}

/**
 * Runs the migration unless the store is done already (one read); answers what it changed, or
 * null when there was nothing to do.
 */
export async function migrateSupervisors(
  store: Store,
  logger: Logger,
): Promise<MigrationOutcome | null> {
  const first = await store.get<Progress>(progressKey);
  if (first.value?.done) return null;
  const outcome: MigrationOutcome = { admins: [], watchable: 0 };
  for (;;) {
    const step = await transact(store, async (tx) => {
      const entry = await tx.store.get<Progress>(progressKey);
      const all = await tx.all(users);
      const progress = entry.value ??
        { upTo: Math.max(0, ...all.map((user) => user.id)), doneTo: 0, done: false };
      const admins: number[] = [];
      let watchable = 0;
      if (progress.done) return { done: true, admins, watchable };
      const batch = all.filter((user) => user.id > progress.doneTo && user.id <= progress.upTo)
        .slice(0, BATCH);
      const profiles = new Set((await tx.all(rightsProfiles)).map((profile) => profile.id));
      for (const user of batch) {
        if (user.supervision_enabled && user.username && !profiles.has(user.id)) {
          tx.put(rightsProfiles, adminProfile(user.id));
          admins.push(user.id);
        }
        if (!user.supervision_enabled) {
          tx.put(users, { ...user, supervision_enabled: true });
          watchable++;
        }
      }
      const next: Progress = batch.length < BATCH
        ? { ...progress, doneTo: progress.upTo, done: true }
        : { ...progress, doneTo: batch.at(-1)!.id };
      tx.also((op) => op.check(entry).set(progressKey, next));
      return { done: next.done, admins, watchable };
    });
    outcome.admins.push(...step.admins);
    outcome.watchable += step.watchable;
    if (step.done) break;
  }
  if (outcome.admins.length || outcome.watchable) {
    logger.warn("supervisors given an admin rights profile: review them (GET /rights/profiles)", {
      admins: outcome.admins,
      usersMadeWatchable: outcome.watchable,
    });
  }
  return outcome;
}

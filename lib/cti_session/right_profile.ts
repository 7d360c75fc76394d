/**
 * `RightProfile` (docs/cti.md): the user's rights profile (lib/rights/profiles.ts) as xuc sends it
 * at sign-in; xuc's supervision clients read its `profile` to know whether the user is a
 * supervisor. svc sends it again to the user's sockets, in every process, whenever the profile
 * changes ({@link announceProfiles}).
 */
import type { CtiMessage } from "../cti/messages.ts";
import type { EventExport } from "../events/export.ts";
import { profileOf, type RightsProfileRecord } from "../rights/profiles.ts";
import type { Store } from "../store/store.ts";
import { getUser } from "../store/users.ts";

export interface RightProfile {
  profile: "Supervisor" | "Admin" | "NoRight";
  /** The rights the profile grants: `recording`, `listen`, `changeQueues`. */
  rights: string[];
}

/** The rights of a profile by their names in `RightProfile`. */
const RIGHTS = [
  ["recording", "recording"],
  ["listen", "listen"],
  ["changeQueues", "change_queues"],
] as const;

/** The `RightProfile` of `profile` (null: none). */
export function rightProfile(profile: RightsProfileRecord | null): RightProfile {
  if (!profile) return { profile: "NoRight", rights: [] };
  return {
    profile: profile.profile === "admin" ? "Admin" : "Supervisor",
    rights: RIGHTS.filter(([, field]) => profile[field]).map(([name]) => name),
  };
}

/** The user's `RightProfile` as the store says now. */
export async function rightProfileOf(store: Store, userId: number): Promise<RightProfile> {
  return rightProfile(await profileOf(store, userId));
}

export const rightProfileMessage = (profile: RightProfile): CtiMessage => ({
  msgType: "RightProfile",
  ctiMessage: profile,
});

/**
 * Tells the sockets of `userIds`, in every process sharing the store, their profile as it is now
 * (a CTI notice, lib/cti_session/mod.ts hands it on); users without a username have none.
 */
export async function announceProfiles(
  services: { store: Store; events: Pick<EventExport, "notify"> },
  userIds: number[],
): Promise<void> {
  const notices = [];
  for (const userId of new Set(userIds)) {
    const user = await getUser(services.store, userId);
    if (!user?.username) continue;
    const message = rightProfileMessage(await rightProfileOf(services.store, userId));
    notices.push({ username: user.username, notice: true as const, message });
  }
  await services.events.notify(notices);
}

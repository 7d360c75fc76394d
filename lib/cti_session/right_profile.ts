/**
 * `RightProfile` (docs/cti.md): which of xuc's rights profiles the user has, sent at sign-in; xuc's
 * supervision clients read its `profile` to know whether the user is a supervisor.
 */
import { SUPERVISOR_ALIAS } from "../auth/acl.ts";
import type { CoreServices } from "../core_services.ts";
import type { CtiMessage } from "../cti/messages.ts";
import type { UserRecord } from "../store/users.ts";

export interface RightProfile {
  profile: "Supervisor" | "Admin" | "NoRight";
  /** The rights the profile grants, by xuc's names. */
  rights: string[];
}

/**
 * The user's rights profile, for a socket whose token holds `acls`. The one place that decides
 * it: issue 45 bases it on stored rights profiles. For now a token holding `alias.supervisor` (a
 * user with `supervision_enabled`) gives `Supervisor`, any other `NoRight`; no right is listed
 * yet, and no CTI user is an `Admin` (svc's administrators are web service users).
 */
export function rightProfileOf(
  _services: CoreServices,
  _user: UserRecord,
  acls: readonly string[],
): Promise<RightProfile> {
  return Promise.resolve({
    profile: acls.includes(SUPERVISOR_ALIAS) ? "Supervisor" : "NoRight",
    rights: [],
  });
}

export const rightProfileMessage = (profile: RightProfile): CtiMessage => ({
  msgType: "RightProfile",
  ctiMessage: profile,
});

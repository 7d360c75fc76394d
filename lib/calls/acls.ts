/**
 * What a CTI user may do with its own calls (docs/calls.md, docs/cti.md): `alias.ctiuser` grants
 * it on the call daemon's `/1.0/users/me/…` routes and on the CTI channel's call commands alike.
 */

/** What `alias.ctiuser` grants on the user's own calls, transfers and conferences. */
export const CTI_CALLD_ACLS: readonly string[] = ["calld.users.me.#"];

/**
 * What a CTI user may do with its own meetings in Wazo's daemons (docs/meetingrooms.md):
 * `alias.ctiuser` grants it on the configuration daemon's `/1.1/users/me/meetings…` (the call
 * daemon's `/1.0/users/me/…` are granted already, lib/calls/acls.ts).
 */
export const CTI_CONFD_ACLS: readonly string[] = ["confd.users.me.meetings.#"];

/**
 * The conference rooms a user may join, as `ConferenceList` shows them (`getList("meetme")`,
 * `cti.js`'s `getConferenceRooms`). svc has no meeting rooms yet: the list is empty. The
 * meeting-rooms work fills this one function; the socket reads nothing else.
 */
import type { CoreServices } from "../core_services.ts";
import type { UserRecord } from "../store/users.ts";

/** A room as `ConferenceList` shows it. */
export interface ConferenceRoom {
  name: string;
  number: string;
}

/** The rooms `user` may join (none yet). */
export function conferenceRooms(
  _services: CoreServices,
  _user: UserRecord,
): Promise<ConferenceRoom[]> {
  return Promise.resolve([]);
}

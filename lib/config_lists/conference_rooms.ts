/**
 * The conference rooms a user may join, as `ConferenceList` shows them (`getList("meetme")`,
 * `cti.js`'s `getConferenceRooms`, docs/meetingrooms.md): every static room with a number and the
 * user's personal rooms, each with whether a PIN is asked, when its first participant now joined
 * (0: nobody in it) and how many are in it.
 */
import type { CoreServices } from "../core_services.ts";
import { allRooms } from "../meetingrooms/lookup.ts";
import type { UserRecord } from "../store/users.ts";

/** A room as `ConferenceList` shows it. */
export interface ConferenceRoom {
  name: string;
  number: string;
  pinRequired: boolean;
  /** When its first participant now in it joined (ms since the epoch), 0 when empty. */
  startTime: number;
  /** How many are in it now. */
  members: number;
}

/** The rooms `user` may join: the static ones, then its personal ones, in number order each. */
export async function conferenceRooms(
  services: CoreServices,
  user: UserRecord,
): Promise<ConferenceRoom[]> {
  const states = new Map((await services.platform.rooms()).map((room) => [room.roomId, room]));
  const rooms = (await allRooms(services.store)).filter((room) =>
    room.number !== null &&
    (room.type === "static" || (room.type === "personal" && room.ownerIds.includes(user.id)))
  );
  const order = (type: string) => type === "static" ? 0 : 1;
  rooms.sort((a, b) => order(a.type) - order(b.type) || a.number!.localeCompare(b.number!));
  return rooms.map((room) => {
    const state = states.get(room.id);
    return {
      name: room.name || room.number!,
      number: room.number!,
      pinRequired: room.pin !== null,
      startTime: state?.participants.length ? state.startedMs : 0,
      members: state?.participants.length ?? 0,
    };
  });
}

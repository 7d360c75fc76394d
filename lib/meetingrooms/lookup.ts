/**
 * The meeting rooms as the platform runs them (`RoomConfig`s), read from the store: by the
 * platform's id, and by the number a CTI client names a room with (`numConf`).
 */
import { type RoomConfig, roomConfigs } from "../platform/rooms.ts";
import { conferences } from "../store/conferences.ts";
import { extensions } from "../store/extensions.ts";
import { meetings } from "../store/meetings.ts";
import { allOf } from "../store/records.ts";
import type { Store } from "../store/store.ts";

/** Every room: the conferences, then the meetings (personal and temporary). */
export async function allRooms(store: Store): Promise<RoomConfig[]> {
  const [conferenceList, extensionList, meetingList] = await allOf(store, [
    conferences,
    extensions,
    meetings,
  ]);
  return roomConfigs(conferenceList, extensionList, meetingList);
}

/** The room the platform calls `roomId`, or null. */
export async function roomOfId(store: Store, roomId: string): Promise<RoomConfig | null> {
  return (await allRooms(store)).find((room) => room.id === roomId) ?? null;
}

/**
 * The room numbered `number` in the first of `contexts` that has one (a user's line context, then
 * the meeting rooms' context), or null.
 */
export async function roomOfNumber(
  store: Store,
  number: string,
  contexts: readonly string[],
): Promise<RoomConfig | null> {
  const rooms = (await allRooms(store)).filter((room) => room.number === number);
  for (const context of contexts) {
    const room = rooms.find((candidate) => candidate.context === context);
    if (room) return room;
  }
  return null;
}

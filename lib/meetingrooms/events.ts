/**
 * What the platform's room events cause (docs/meetingrooms.md, docs/cti.md "Meeting rooms"): a
 * platform listener, in the process handing the platform's events over, each written once
 * whatever the number of times and processes handing an event over.
 *
 * - `RoomParticipantEvent` to `eventUrl` and the event stream, for each participant joining or
 *   leaving.
 * - xuc's conference messages to the CTI sockets of the room's members: the member whose phone
 *   joined gets `ConferenceEvent` `Join` (every participant), the others `ConferenceParticipantEvent`
 *   `Join`; leaving, `ConferenceEvent` `Leave` and `ConferenceParticipantEvent` `Leave`; muted,
 *   unmuted, talking or not: `ConferenceParticipantEvent` `Update` to every member. A member's
 *   `ConferenceParticipantEvent` carries its own call's `uniqueId` and number (xuc's clients find
 *   the room by the call), the participant concerned in its other fields.
 * - A temporary room left empty after its tokens expired is deleted.
 */
import type { CoreServices } from "../core_services.ts";
import type { CtiNotice, RoomMessage } from "../events/messages.ts";
import type { ConferenceParticipant } from "../cti/messages.ts";
import type { PlatformEvent } from "../platform/port.ts";
import { apiRoomId, type RoomEvent, type RoomParticipant } from "../platform/rooms.ts";
import { allRooms } from "./lookup.ts";
import { purgeTemporaryRooms } from "./rooms.ts";

type Services = Pick<
  CoreServices,
  "store" | "config" | "clock" | "events" | "platform" | "logger"
>;

/** Handles the room events of a batch of platform events. */
export async function roomEvents(services: Services, batch: readonly PlatformEvent[]) {
  const events = batch.filter((event): event is RoomEvent => event.kind === "room");
  if (!events.length) return;
  const owners = new Map((await allRooms(services.store)).map((room) => [room.id, room.ownerIds]));
  const now = services.clock.now();
  await services.events.publishOnce(
    events.filter((event) =>
      event.participant && event.event !== "update" && event.event !== "recording"
    )
      .map((event) => ({ id: event.id, message: roomMessage(event) })),
  );
  await services.events.notifyOnce(
    events.flatMap((event) => conferenceNotices(event, owners.get(event.roomId) ?? [], now)),
  );
  if (events.some((event) => event.roomType === "temporary" && !event.participants.length)) {
    await purgeTemporaryRooms(services);
  }
}

/** The `RoomParticipantEvent` of a join or a leave. */
export function roomMessage(event: RoomEvent): RoomMessage {
  const participant = event.participant!;
  return {
    username: participant.username,
    message: {
      msgType: "RoomParticipantEvent",
      ctiMessage: {
        eventType: event.event === "joined" ? "Join" : "Leave",
        roomType: event.roomType,
        roomId: apiRoomId(event.roomId),
        roomNumber: event.roomNumber,
        roomName: event.roomName,
        uniqueId: participant.callId,
        linkedId: participant.linkedId,
        callerIdName: participant.name,
        callerIdNum: participant.number,
        username: participant.username,
        participants: event.participants.length,
      },
    },
  };
}

/** A participant as xuc's conference messages show it to `username`. */
function shown(
  participant: RoomParticipant,
  index: number,
  owners: readonly number[],
  username: string,
  now: number,
): ConferenceParticipant {
  return {
    index,
    callerIdName: participant.name,
    callerIdNum: participant.number,
    since: Math.max(0, Math.floor((now - participant.joinedMs) / 1000)),
    isTalking: participant.talking,
    role: participant.userId !== null && owners.includes(participant.userId) ? "Organizer" : "User",
    isMuted: participant.muted,
    isMe: participant.username !== "" && participant.username === username,
    username: participant.username,
  };
}

/** The CTI notices of one room event, each to one member's user. */
function conferenceNotices(
  event: RoomEvent,
  owners: readonly number[],
  now: number,
): { id: string | undefined; notice: CtiNotice }[] {
  const participant = event.participant;
  if (!participant) return [];
  const number = event.roomNumber ?? "";
  const started = Math.min(now, ...event.participants.map((p) => p.joinedMs));
  const since = Math.max(0, Math.floor((now - started) / 1000));
  // its place among the members: those that joined before it (the lists are in joining order)
  const index = event.participants.filter((p) =>
    p.joinedMs < participant.joinedMs ||
    (p.joinedMs === participant.joinedMs && p.callId < participant.callId)
  ).length;
  const own = event.event === "joined" || event.event === "left" ? participant.username : "";
  const notices: { id: string | undefined; notice: CtiNotice }[] = [];
  const to = (username: string, msgType: string, ctiMessage: unknown) =>
    notices.push({
      id: event.id === undefined ? undefined : `${event.id}:${username}`,
      notice: { username, notice: true, message: { msgType, ctiMessage } },
    });
  if (own) {
    to(own, "ConferenceEvent", {
      eventType: event.event === "joined" ? "Join" : "Leave",
      uniqueId: participant.callId,
      phoneNumber: participant.number,
      conferenceNumber: number,
      conferenceName: event.roomName || number,
      since,
      participants: event.event === "joined"
        ? event.participants.map((p, i) => shown(p, i, owners, own, now))
        : [],
    });
  }
  const eventType = event.event === "joined" ? "Join" : event.event === "left" ? "Leave" : "Update";
  // each member's client finds the room by its own call in it (its `uniqueId`, as xuc's do)
  const told = new Set<string>();
  for (const member of event.participants) {
    const username = member.username;
    if (!username || username === own || told.has(username)) continue;
    told.add(username);
    to(username, "ConferenceParticipantEvent", {
      eventType,
      uniqueId: member.callId,
      phoneNumber: member.number,
      conferenceNumber: number,
      ...shown(participant, index, owners, username, now),
    });
  }
  return notices;
}

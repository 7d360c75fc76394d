/**
 * Meeting rooms on the platform (docs/meetingrooms.md), the part of the port the meeting rooms'
 * routes (2.0, `/1.1`, `/1.0`) and the CTI channel share: a room is a bridge its participants join
 * by dialling its number in its context (its PIN asked first, a full room refusing them), or that
 * svc calls a user's phone into; the platform says who is in it and lets svc mute, kick and record.
 * Both adapters give the same events for the same scenario (the scenario table of
 * `tests/lib/platform/`). Nothing here knows which adapter runs.
 */
import type { ConferenceRecord } from "../store/conferences.ts";
import type { ExtensionRecord } from "../store/extensions.ts";
import type { MeetingRecord } from "../store/meetings.ts";
import type { UserRecord } from "../store/users.ts";

export type RoomType = "static" | "personal" | "temporary";

/** A room as the platform runs it, built from its record ({@link roomConfigs}). */
export interface RoomConfig {
  /** `conference-<id>` (a static room, `/1.1/conferences`) or `meeting-<uuid>`. */
  id: string;
  type: RoomType;
  name: string;
  /** Its number, dialled in `context`; null: a conference with no extension (no phone joins). */
  number: string | null;
  context: string;
  /** Digits asked before joining; null: none. */
  pin: string | null;
  /** Participants at most; 0: no limit. */
  maxUsers: number;
  /** The users who may mute, kick and record in it (none for a static or temporary room). */
  ownerIds: number[];
  /** The music on hold class a lone participant hears; null: the default one. */
  music: string | null;
  /** No sound when someone joins or leaves. */
  quiet: boolean;
  /** The participants hear how many they are as they join. */
  announceUserCount: boolean;
  /** A lone participant hears that it is alone. */
  announceOnlyUser: boolean;
  /** Recorded from its first participant on. */
  record: boolean;
}

/** The platform's id of the room of a conference or of a meeting. */
export const conferenceRoomId = (id: number) => `conference-${id}`;
export const meetingRoomId = (id: string) => `meeting-${id}`;

/** The id the APIs name the room `roomId` by: a conference's number id, else a meeting's uuid. */
export const apiRoomId = (roomId: string): number | string =>
  roomId.startsWith("conference-")
    ? Number(roomId.slice("conference-".length))
    : roomId.slice("meeting-".length);

/**
 * The rooms of the configuration: every conference (its number: its enabled extension's, if any)
 * and every meeting, in that order.
 *
 * @example
 * const rooms = roomConfigs(conferenceList, extensionList, meetingList);
 */
export function roomConfigs(
  conferenceList: readonly ConferenceRecord[],
  extensionList: readonly ExtensionRecord[],
  meetingList: readonly MeetingRecord[],
): RoomConfig[] {
  const extensionOf = new Map<number, ExtensionRecord>();
  for (const extension of extensionList) {
    if (extension.conference_id != null && extension.enabled) {
      extensionOf.set(extension.conference_id, extension);
    }
  }
  return [
    ...conferenceList.map((conference): RoomConfig => {
      const extension = extensionOf.get(conference.id);
      return {
        id: conferenceRoomId(conference.id),
        type: "static",
        name: conference.name ?? "",
        number: extension?.exten ?? null,
        context: extension?.context ?? "",
        pin: conference.pin,
        maxUsers: conference.max_users,
        ownerIds: [],
        music: conference.music_on_hold,
        quiet: conference.quiet_join_leave,
        announceUserCount: conference.announce_user_count,
        announceOnlyUser: conference.announce_only_user,
        record: conference.record,
      };
    }),
    ...meetingList.map((meeting): RoomConfig => ({
      id: meetingRoomId(meeting.id),
      type: meeting.kind,
      name: meeting.name,
      number: meeting.number,
      context: meeting.context,
      pin: meeting.pin,
      maxUsers: 0,
      ownerIds: meeting.owner_ids,
      music: null,
      quiet: true,
      announceUserCount: false,
      announceOnlyUser: false,
      record: false,
    })),
  ];
}

/** One participant of a room. */
export interface RoomParticipant {
  /** Its leg's `uniqueId`: the call daemon's participant `id` and `call_id`. */
  callId: string;
  linkedId: string;
  /** The user whose phone this is; null for another party (an outside caller). */
  userId: number | null;
  /** That user's username, "" for none. */
  username: string;
  /** Its caller id. */
  name: string;
  number: string;
  muted: boolean;
  /** Talking now (the bridge's talk detection: Asterisk only, the simulator has no sound). */
  talking: boolean;
  /** When it joined (ms since the epoch). */
  joinedMs: number;
}

/** A room with someone in it. */
export interface RoomState {
  roomId: string;
  /** Its participants in joining order. */
  participants: RoomParticipant[];
  /** Recorded now. */
  recording: boolean;
  /** When its first participant joined. */
  startedMs: number;
}

/**
 * Someone joined or left a room, was muted or unmuted, started or stopped talking
 * (`update`), or the room's recording started or stopped (`recording`). `participants` is the
 * room's list after the change.
 */
export interface RoomEvent {
  /** As every platform event's (`PlatformEventId` of port.ts). */
  id?: string;
  kind: "room";
  event: "joined" | "left" | "update" | "recording";
  roomId: string;
  /** The room's kind, number (null: none) and name when it filled (a deleted room's too). */
  roomType: RoomType;
  roomNumber: string | null;
  roomName: string;
  /** The participant concerned (null for `recording`). */
  participant: RoomParticipant | null;
  participants: RoomParticipant[];
  recording: boolean;
}

/** What can be done to a participant. */
export type RoomCommand = { kind: "mute"; on: boolean } | { kind: "kick" };

/**
 * What the platform does with rooms. A refusal is a `PlatformRefusal`: `no_room` (nobody in it, or
 * no such room), `no_participant`, `not_recorded` (stopping a recording that does not run),
 * `already_recorded`, `no_line` (an invitation of a user with no phone), `room_full`.
 */
export interface RoomControl {
  /** The rooms with someone in them now. */
  rooms(): Promise<RoomState[]>;
  /** Mutes, unmutes or kicks the participant `callId` of the room `roomId`. */
  roomCommand(roomId: string, callId: string, command: RoomCommand): Promise<void>;
  /** Starts or stops recording the room (one file for the whole room). */
  recordRoom(roomId: string, on: boolean): Promise<void>;
  /** Every participant is hung up (the room was deleted). */
  endRoom(roomId: string): Promise<void>;
  /**
   * Rings `user`'s phone; once it answers it joins the room `roomId` without being asked its PIN
   * (svc's invitation). The user gets the events of a dial of the room's number.
   */
  inviteToRoom(user: UserRecord, roomId: string): Promise<{ linkedId: string }>;
}

/**
 * Who is in a meeting room and what may be done to them (docs/meetingrooms.md), as the call
 * daemon's `/1.0/conferences|meetings/…/participants` and the CTI channel's conference commands
 * share it: the platform's list, its commands, and its refusals as the meeting rooms' own.
 */
import type { Platform } from "../platform/port.ts";
import { PlatformRefusal } from "../platform/port.ts";
import type { RoomCommand, RoomConfig, RoomState } from "../platform/rooms.ts";
import { RoomRefusal } from "./refusal.ts";

/** The room `roomId` as it is now (nobody in it: no participant, not recorded). */
export async function roomState(platform: Platform, roomId: string): Promise<RoomState> {
  return (await platform.rooms()).find((room) => room.roomId === roomId) ??
    { roomId, participants: [], recording: false, startedMs: 0 };
}

/** Whether `userId` owns `room` (mutes, kicks and records in it). */
export const ownsRoom = (room: RoomConfig, userId: number) => room.ownerIds.includes(userId);

/** Runs a platform command, its refusals as the meeting rooms'. */
async function refusals<T>(command: () => Promise<T>): Promise<T> {
  try {
    return await command();
  } catch (error) {
    if (!(error instanceof PlatformRefusal)) throw error;
    switch (error.reason) {
      case "no_room":
      case "no_participant":
        throw new RoomRefusal("no_participant", error.message);
      case "already_recorded":
      case "not_recorded":
      case "room_full":
      case "no_line":
        throw new RoomRefusal(error.reason, error.message);
      default:
        throw error;
    }
  }
}

/** Mutes, unmutes or kicks the participant `callId` (`no_participant` when it is none). */
export async function commandParticipant(
  platform: Platform,
  roomId: string,
  callId: string,
  command: RoomCommand,
): Promise<void> {
  const state = await roomState(platform, roomId);
  if (!state.participants.some((participant) => participant.callId === callId)) {
    throw new RoomRefusal("no_participant", `room ${roomId} has no participant ${callId}`);
  }
  await refusals(() => platform.roomCommand(roomId, callId, command));
}

/** Starts or stops the room's recording (`empty` when nobody is in it to start one). */
export async function recordRoom(platform: Platform, roomId: string, on: boolean): Promise<void> {
  const state = await roomState(platform, roomId);
  if (on && !state.participants.length) {
    throw new RoomRefusal("empty", `nobody is in room ${roomId}`);
  }
  if (on && state.recording) {
    throw new RoomRefusal("already_recorded", `room ${roomId} is recorded`);
  }
  if (!on && !state.recording) {
    throw new RoomRefusal("not_recorded", `room ${roomId} is not recorded`);
  }
  await refusals(() => platform.recordRoom(roomId, on));
}

/** Calls `user`'s phone into the room (`room_full`, `no_line` refusals). */
export function inviteIntoRoom(
  platform: Platform,
  user: Parameters<Platform["inviteToRoom"]>[0],
  roomId: string,
): Promise<{ linkedId: string }> {
  return refusals(() => platform.inviteToRoom(user, roomId));
}

/**
 * The CTI channel's conference commands (docs/cti.md "Meeting rooms"): `cti.js`'s
 * `conferenceMuteMe`, `…UnmuteMe`, `…Mute`, `…Unmute`, `…MuteAll`, `…UnmuteAll`, `…Kick` name a
 * conference by `numConf`: a meeting room's number (as xuc's meetme rooms), looked for in the
 * user's line context then in the meeting rooms' (`SVC_MEETINGROOM_CONTEXT`), else an ad-hoc
 * conference's id (lib/cti/call_commands.ts). In a room, any member mutes itself; its owner (the
 * `Organizer`: a personal room's, a static room has none) mutes, unmutes and kicks the member at
 * `index` (joining order, as its `ConferenceEvent` lists them). `inviteConferenceRoom(userId)`
 * calls that user's phone into the room the socket's user is in. A refusal of the room is xuc's
 * `ConferenceCommandError`.
 */
import * as z from "zod";
import { CALL_ACLS, runAdhocConferenceCommand } from "../cti/call_commands.ts";
import { ctiCommand, type CtiCommandContext, type CtiFamily } from "../cti/command_set.ts";
import { type ConferenceMemberCommand, conferenceMemberFields } from "../cti/commands.ts";
import { apiRoomId, type RoomConfig, type RoomParticipant } from "../platform/rooms.ts";
import { getLine } from "../store/lines.ts";
import { getUser } from "../store/users.ts";
import { roomOfId, roomOfNumber } from "./lookup.ts";
import { commandParticipant, inviteIntoRoom, ownsRoom, roomState } from "./participants.ts";
import { RoomRefusal } from "./refusal.ts";

/** xuc's errors of a conference command, by the meeting rooms' refusal. */
const ERRORS: Partial<Record<RoomRefusal["reason"], string>> = {
  not_participant: "NotAMember",
  not_owner: "NotOrganizer",
  no_participant: "ParticipantNotFound",
  room_full: "RoomFull",
  no_line: "NoLine",
  not_found: "UserNotFound",
};

/** Runs `fn`; a refusal of the room is answered `ConferenceCommandError` (the socket stays open). */
async function answered(c: CtiCommandContext, command: string, fn: () => Promise<void>) {
  try {
    await fn();
  } catch (error) {
    if (!(error instanceof RoomRefusal)) throw error;
    c.reply({
      msgType: "ConferenceCommandError",
      ctiMessage: {
        error: ERRORS[error.reason] ?? "CommandFailed",
        message: error.message,
        command,
      },
    });
  }
}

/** The room `numConf` names for the user, or null (an ad-hoc conference's id, or nothing). */
async function roomNamed(c: CtiCommandContext, numConf: string): Promise<RoomConfig | null> {
  const lineId = c.user.line_ids[0];
  const line = lineId === undefined ? null : await getLine(c.services.store, lineId);
  const contexts = [line?.context, c.services.config.meetingRoomContext]
    .filter((context): context is string => Boolean(context));
  return await roomOfNumber(c.services.store, numConf, contexts);
}

/** The user's own participant in the room (`NotAMember` when none). */
function ownParticipant(
  c: CtiCommandContext,
  room: RoomConfig,
  participants: RoomParticipant[],
): RoomParticipant {
  const own = participants.find((participant) => participant.userId === c.user.id);
  if (!own) throw new RoomRefusal("not_participant", `you are not in room ${room.number}`);
  return own;
}

/** A command on the members of a room. */
async function roomCommand(
  c: CtiCommandContext,
  name: ConferenceMemberCommand,
  room: RoomConfig,
  index: number,
): Promise<void> {
  const { platform } = c.services;
  const { participants } = await roomState(platform, room.id);
  const meeting = String(apiRoomId(room.id));
  if (name === "conferenceMuteMe" || name === "conferenceUnmuteMe") {
    const own = ownParticipant(c, room, participants);
    const on = name === "conferenceMuteMe";
    c.authorize(on ? CALL_ACLS.muteStart : CALL_ACLS.muteStop, { call_id: own.callId });
    return await commandParticipant(platform, room.id, own.callId, { kind: "mute", on });
  }
  if (!ownsRoom(room, c.user.id)) {
    throw new RoomRefusal("not_owner", `you do not own room ${room.number}`);
  }
  const participantAcl = (participant: RoomParticipant, action: string) =>
    c.authorize(
      action === "kick"
        ? "calld.users.me.meetings.participants.delete"
        : `calld.users.me.meetings.{meeting_uuid}.participants.{participant_id}.${action}.update`,
      { meeting_uuid: meeting, participant_id: participant.callId },
    );
  if (name === "conferenceMuteAll" || name === "conferenceUnmuteAll") {
    const on = name === "conferenceMuteAll";
    for (const participant of participants) {
      if (participant.userId === c.user.id || participant.muted === on) continue;
      participantAcl(participant, on ? "mute" : "unmute");
      await commandParticipant(platform, room.id, participant.callId, { kind: "mute", on });
    }
    return;
  }
  const participant = participants[index];
  if (!participant) {
    throw new RoomRefusal("no_participant", `room ${room.number} has no participant ${index}`);
  }
  const action = name === "conferenceKick" ? "kick" : name === "conferenceMute" ? "mute" : "unmute";
  participantAcl(participant, action);
  await commandParticipant(
    platform,
    room.id,
    participant.callId,
    action === "kick" ? { kind: "kick" } : { kind: "mute", on: action === "mute" },
  );
}

/** One conference member command: on the room `numConf` names, else on the ad-hoc one. */
const memberCommand = (name: ConferenceMemberCommand) =>
  ctiCommand({
    fields: conferenceMemberFields[name],
    acl: null, // the call daemon's, checked once the call or participant is known
    async run(c, fields: { numConf: string; index?: number }) {
      const room = await roomNamed(c, fields.numConf);
      if (!room) return await runAdhocConferenceCommand(c, name, fields);
      await answered(c, name, () => roomCommand(c, name, room, fields.index ?? 0));
    },
  });

export const meetingRoomFamily: CtiFamily = {
  commands: {
    ...Object.fromEntries(
      (Object.keys(conferenceMemberFields) as ConferenceMemberCommand[]).map((name) => [
        name,
        memberCommand(name),
      ]),
    ),
    inviteConferenceRoom: ctiCommand({
      fields: () => z.object({ userId: z.number().int() }),
      acl: null, // any member of the room may invite
      async run(c, { userId }) {
        await answered(c, "inviteConferenceRoom", async () => {
          const { platform, store } = c.services;
          const rooms = await platform.rooms();
          const mine = rooms.find((room) =>
            room.participants.some((participant) => participant.userId === c.user.id)
          );
          if (!mine) throw new RoomRefusal("not_participant", "you are in no meeting room");
          const room = await roomOfId(store, mine.roomId);
          const invited = await getUser(store, userId);
          if (!room || !invited) throw new RoomRefusal("not_found", `no user ${userId}`);
          await inviteIntoRoom(platform, invited, room.id);
        });
      },
    }),
  },
};

/**
 * The call daemon's meeting rooms (docs/meetingrooms.md, docs/calls.md): the participants of a
 * conference (`/1.1/conferences`, a static room) and of a meeting (a personal room): list, kick,
 * mute, unmute, record, as wazo-calld-client calls them; a user's `/users/me/…` forms (a
 * conference's participants for one of them; a meeting's for its owners, who also kick, mute and
 * record); a guest's view of a meeting (`full`). A participant's id is its call's id.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import {
  commandParticipant,
  ownsRoom,
  recordRoom,
  roomState,
} from "../../lib/meetingrooms/participants.ts";
import { RoomRefusal } from "../../lib/meetingrooms/refusal.ts";
import { operation } from "../../lib/openapi/operation.ts";
import { checkPathValues } from "../../lib/path_values.ts";
import {
  conferenceRoomId,
  meetingRoomId,
  type RoomCommand,
  type RoomConfig,
} from "../../lib/platform/rooms.ts";
import { roomOfId } from "../../lib/meetingrooms/lookup.ts";
import type { Services } from "../../lib/services.ts";
import { users } from "../../lib/store/users.ts";
import { type Answer, CalldError } from "./errors.ts";
import { calldAcl } from "./guard.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const participantList = z.lazy(() =>
  z.object({
    total: z.int(),
    items: z.array(z.object({
      id: z.string(),
      caller_id_name: z.string(),
      caller_id_num: z.string(),
      muted: z.boolean(),
      join_time: z.int().meta({ description: "Seconds since it joined" }),
      admin: z.boolean().meta({ description: "An owner of the room" }),
      language: z.string(),
      call_id: z.string(),
      user_uuid: z.string().nullable(),
    })),
  })
);

/** Which of Wazo's two resources a route is about. */
interface Kind {
  /** The path's value naming the room. */
  param: string;
  /** The platform's room of that value, or null when it names none. */
  roomId(raw: string): string | null;
  /** The daemon's error for no such room. */
  noSuch: Answer;
  /** Its participant refusals. */
  participantError: string;
}

const CONFERENCE: Kind = {
  param: "conference_id",
  roomId: (raw) => /^\d{1,9}$/.test(raw) ? conferenceRoomId(Number(raw)) : null,
  noSuch: [404, "no-such-conference", "No such conference"],
  participantError: "conference",
};

const MEETING: Kind = {
  param: "meeting_uuid",
  roomId: (raw) => UUID.test(raw) ? meetingRoomId(raw.toLowerCase()) : null,
  noSuch: [404, "no-such-meeting", "No such meeting"],
  participantError: "meeting",
};

/** The daemon's error for each refusal of the meeting rooms. */
function refusalError(error: RoomRefusal, details: Record<string, unknown>): CalldError {
  const answers: Partial<Record<RoomRefusal["reason"], Answer>> = {
    no_participant: [404, "no-such-participant", "No such participant"],
    empty: [400, "conference-has-no-participants", "Conference has no participants"],
    already_recorded: [400, "conference-already-recorded", "Conference is already recorded"],
    not_recorded: [400, "conference-not-recorded", "Conference is not being recorded"],
    not_participant: [
      403,
      "user-not-participant",
      "User is not a participant of the conference",
    ],
  };
  const [status, id, message] = answers[error.reason] ??
    [400, "invalid-data", "Sent data is invalid"];
  return new CalldError(status, id, message, { ...details, message: error.message });
}

export function roomRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens, platform, clock } = services;
  const me = (c: Context<AppEnv>) => Number(c.get("identity").userId);

  /** The room the path names, or the daemon's 404. */
  const roomOf = async (c: Context<AppEnv>, kind: Kind): Promise<RoomConfig> => {
    const raw = c.req.param(kind.param) ?? "";
    const id = kind.roomId(raw);
    const room = id ? await roomOfId(store, id) : null;
    if (!room || (kind === MEETING) !== (room.type !== "static")) {
      const [status, errorId, message] = kind.noSuch;
      throw new CalldError(status, errorId, message, { [kind.param]: raw });
    }
    return room;
  };
  /** Runs `fn`, answering the meeting rooms' refusals as the daemon's errors. */
  const answered = async <T>(c: Context<AppEnv>, kind: Kind, fn: () => Promise<T>) => {
    try {
      return await fn();
    } catch (error) {
      if (!(error instanceof RoomRefusal)) throw error;
      const details: Record<string, unknown> = { [kind.param]: c.req.param(kind.param) };
      const participant = c.req.param("participant_id");
      if (participant !== undefined) details.participant_id = participant;
      throw refusalError(error, details);
    }
  };
  const participants = async (room: RoomConfig) => {
    const state = await roomState(platform, room.id);
    const uuids = new Map((await users.all(store)).map((user) => [user.id, user.uuid]));
    const now = clock.now();
    const items = state.participants.map((participant) => ({
      id: participant.callId,
      caller_id_name: participant.name,
      caller_id_num: participant.number,
      muted: participant.muted,
      join_time: Math.max(0, Math.floor((now - participant.joinedMs) / 1000)),
      admin: participant.userId !== null && ownsRoom(room, participant.userId),
      language: "",
      call_id: participant.callId,
      user_uuid: participant.userId === null ? null : uuids.get(participant.userId) ?? null,
    }));
    return { total: items.length, items };
  };
  /** The user is in the room, or owns it when `owner` allows. */
  const allowedUser = async (c: Context<AppEnv>, room: RoomConfig, owner: boolean) => {
    if (owner && ownsRoom(room, me(c))) return;
    const state = await roomState(platform, room.id);
    if (state.participants.some((participant) => participant.userId === me(c))) return;
    throw new RoomRefusal("not_participant", `user ${me(c)} is not in ${room.id}`);
  };
  /** A meeting of the user's own, else the daemon's 404 (another's is no business of its). */
  const ownMeeting = async (c: Context<AppEnv>) => {
    const room = await roomOf(c, MEETING);
    if (!ownsRoom(room, me(c))) {
      const [status, errorId, message] = MEETING.noSuch;
      throw new CalldError(status, errorId, message, { meeting_uuid: c.req.param("meeting_uuid") });
    }
    return room;
  };

  const app = new Hono<AppEnv>();
  const errors = (kind: Kind, more: Record<number, string> = {}) => ({
    404: `\`${kind.noSuch[1]}\`, \`no-such-participant\``,
    ...more,
  });

  for (const kind of [CONFERENCE, MEETING]) {
    const resource = kind === CONFERENCE ? "conferences" : "meetings";
    const base = `/${resource}/:${kind.param}`;
    const acl = `calld.${resource}.{${kind.param}}`;
    app.get(
      `${base}/participants`,
      calldAcl(tokens, `${acl}.participants.read`),
      operation(() => ({
        summary: `The participants of a ${kind.participantError}`,
        responses: { 200: participantList },
        errors: errors(kind),
      }), async (c) => c.json(await participants(await roomOf(c, kind)))),
    );
    app.get(
      `/users/me${base}/participants`,
      calldAcl(tokens, `calld.users.me.${resource}.{${kind.param}}.participants.read`, {
        me: true,
      }),
      operation(() => ({
        summary: kind === CONFERENCE
          ? "The participants of a conference the user is in"
          : "The participants of a meeting the user owns or is in",
        responses: { 200: participantList },
        errors: errors(kind, { 403: "`user-not-participant`" }),
      }), async (c) => {
        const room = await roomOf(c, kind);
        await answered(c, kind, () => allowedUser(c, room, kind === MEETING));
        return c.json(await participants(room));
      }),
    );
    /** A command on a participant, by whoever the guard lets (`own`: the meeting's owner). */
    const participantRoute = (command: RoomCommand, own = false) => async (c: Context<AppEnv>) => {
      const room = own ? await ownMeeting(c) : await roomOf(c, kind);
      const callId = c.req.param("participant_id") ?? "";
      await answered(c, kind, () => commandParticipant(platform, room.id, callId, command));
      return c.body(null, 204);
    };
    const commands: [string, string, RoomCommand, "delete" | "put"][] = [
      ["", "delete", { kind: "kick" }, "delete"],
      ["/mute", "mute.update", { kind: "mute", on: true }, "put"],
      ["/unmute", "unmute.update", { kind: "mute", on: false }, "put"],
    ];
    for (const [suffix, action, command, method] of commands) {
      const what = command.kind === "kick" ? "Kicks (hangs up)" : command.on ? "Mutes" : "Unmutes";
      app.on(
        method.toUpperCase(),
        `${base}/participants/:participant_id${suffix}`,
        calldAcl(tokens, `${acl}.participants.{participant_id}.${action}`),
        operation(() => ({
          summary: `${what} a participant of a ${kind.participantError}`,
          responses: { 204: null },
          errors: errors(kind),
        }), participantRoute(command)),
      );
      if (kind !== MEETING) continue;
      // the owners' forms; Wazo's kick names no meeting in its ACL
      const userAcl = command.kind === "kick"
        ? "calld.users.me.meetings.participants.delete"
        : `calld.users.me.meetings.{meeting_uuid}.participants.{participant_id}.${action}`;
      app.on(
        method.toUpperCase(),
        `/users/me${base}/participants/:participant_id${suffix}`,
        calldAcl(tokens, userAcl, { me: true }),
        operation(() => ({
          summary: `${what} a participant of a meeting the user owns`,
          responses: { 204: null },
          errors: errors(kind, { 404: "`no-such-meeting` (another's too), `no-such-participant`" }),
        }), participantRoute(command, true)),
      );
    }
    const recordRoute = (on: boolean, own = false) => async (c: Context<AppEnv>) => {
      const room = own ? await ownMeeting(c) : await roomOf(c, kind);
      await answered(c, kind, () => recordRoom(platform, room.id, on));
      return c.body(null, 204);
    };
    const recordErrors = {
      400: "`conference-has-no-participants`, `conference-already-recorded`, " +
        "`conference-not-recorded`",
    };
    for (
      const [method, on, action] of [["POST", true, "create"], ["DELETE", false, "delete"]] as const
    ) {
      app.on(
        method,
        `${base}/record`,
        calldAcl(tokens, `${acl}.record.${action}`),
        operation(() => ({
          summary: `${on ? "Starts" : "Stops"} recording a ${kind.participantError}`,
          responses: { 204: null },
          errors: errors(kind, recordErrors),
        }), recordRoute(on)),
      );
      if (kind !== MEETING) continue;
      app.on(
        method,
        `/users/me${base}/record`,
        calldAcl(tokens, `calld.users.me.meetings.{meeting_uuid}.record.${action}`, { me: true }),
        operation(() => ({
          summary: `${on ? "Starts" : "Stops"} recording a meeting the user owns`,
          responses: { 204: null },
          errors: errors(kind, recordErrors),
        }), recordRoute(on, true)),
      );
    }
  }

  app.get(
    "/guests/me/meetings/:meeting_uuid/status",
    operation(() => ({
      summary: "Whether a meeting is full, as a guest sees it (no token)",
      responses: { 200: z.object({ full: z.boolean() }) },
      errors: { 404: "`no-such-meeting`" },
    }), async (c) => {
      checkPathValues(c);
      const room = await roomOf(c, MEETING);
      const state = await roomState(platform, room.id);
      return c.json({ full: room.maxUsers > 0 && state.participants.length >= room.maxUsers });
    }),
  );
  return app;
}

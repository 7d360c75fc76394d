/**
 * Meeting rooms (docs/meetingrooms.md), the routes of the specification's `meetingrooms` rights:
 * a CTI user's personal rooms (list, read, create, update with the room's `id` in the body, delete)
 * and the three token routes giving what a client needs to join a static, a personal or a
 * temporary room: its number and PIN for a phone, and a video (Jitsi) token. The static rooms are
 * listed too (to name one to the token route); they are the administrator's, through `/1.1`.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import { requireAcl } from "../lib/auth/guard.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readJson } from "../lib/http.ts";
import { operation } from "../lib/openapi/operation.ts";
import type { Services } from "../lib/services.ts";
import { apiRoomId, conferenceRoomId, type RoomConfig } from "../lib/platform/rooms.ts";
import { allRooms } from "../lib/meetingrooms/lookup.ts";
import { RoomRefusal } from "../lib/meetingrooms/refusal.ts";
import {
  createMeeting,
  deleteMeeting,
  ownedBy,
  ownRoom,
  personalRoomsOf,
  temporaryRoom,
  updateMeeting,
} from "../lib/meetingrooms/rooms.ts";
import { NO_VIDEO, videoConfigured, videoToken } from "../lib/meetingrooms/video.ts";
import type { MeetingRecord } from "../lib/store/meetings.ts";
import { getUser, type UserRecord } from "../lib/store/users.ts";

const BASE = "/config/meetingrooms";

/** A room's name: 1 to 128 characters, trimmed. */
const displayName = () => z.string().trim().min(1, "must not be empty").max(128);
/** A number: digits (its range is checked with the others' numbers). */
const roomNumber = () => z.string().regex(/^\d{1,16}$/, "must be digits");
/** A PIN: 1 to 16 digits; null or "" for none. */
const userPin = () =>
  z.union([z.string().regex(/^\d{0,16}$/, "must be digits (at most 16)"), z.null()]);

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const createBody = z.lazy(() =>
  z.strictObject({
    displayName: displayName(),
    number: roomNumber().optional(),
    userPin: userPin().optional(),
  })
);
const updateBody = z.lazy(() =>
  z.strictObject({
    id: z.string(),
    displayName: displayName().optional(),
    number: roomNumber().optional(),
    userPin: userPin().optional(),
    roomType: z.literal("personal").optional(),
  })
);

const personalSchema = z.lazy(() =>
  z.object({
    id: z.string().meta({ description: "The room's UUID" }),
    roomType: z.literal("personal"),
    displayName: z.string(),
    number: z.string(),
    userPin: z.string().nullable(),
  })
);
const staticSchema = z.lazy(() =>
  z.object({
    id: z.int(),
    roomType: z.literal("static"),
    displayName: z.string(),
    number: z.string().nullable(),
    pinRequired: z.boolean(),
  })
);
const tokenSchema = z.lazy(() =>
  z.object({
    roomType: z.enum(["static", "personal", "temporary"]),
    id: z.union([z.string(), z.int()]),
    displayName: z.string(),
    number: z.string().nullable().meta({ description: "Dialled to join by phone" }),
    userPin: z.string().nullable().meta({ description: "Asked before joining by phone" }),
    token: z.string().nullable().meta({
      description: "The video (Jitsi) JWT; null when no video is configured (see `video`)",
    }),
    jitsiDomain: z.string().nullable(),
    jitsiRoom: z.string().nullable(),
    url: z.string().nullable(),
    expiresAt: z.int().nullable().meta({
      description: "When the token expires (ms since the epoch)",
    }),
    video: z.string().nullable().meta({
      description: "Why there is no video token (no `SVC_JITSI_*` settings); null when there is",
    }),
  })
);

/** A personal room as the API answers it. */
const personalView = (room: MeetingRecord) => ({
  id: room.id,
  roomType: "personal" as const,
  displayName: room.name,
  number: room.number,
  userPin: room.pin,
});

/** The API's error for a refusal of the meeting rooms. */
function answer(error: unknown): unknown {
  if (!(error instanceof RoomRefusal)) return error;
  switch (error.reason) {
    case "not_found":
      return new ApiError(404, "MeetingRoomNotFound", error.message);
    case "outside_range":
      return new ApiError(400, "InvalidMeetingRoom", error.message);
    case "number_taken":
      return new ApiError(409, "MeetingRoomNumberTaken", error.message);
    case "range_full":
      return new ApiError(409, "NoMeetingRoomNumberLeft", error.message);
    case "room_full":
      return new ApiError(409, "MeetingRoomFull", error.message);
    case "no_video":
      return new ApiError(503, "VideoNotConfigured", error.message);
    default:
      return new ApiError(400, "InvalidMeetingRoom", error.message);
  }
}

/** Runs `fn`, answering the meeting rooms' refusals in the API's form. */
async function answered<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw answer(error);
  }
}

const notFound = (id: string) => new ApiError(404, "MeetingRoomNotFound", `no meeting room ${id}`);

/** "" means no PIN. */
const pinOf = (pin: string | null | undefined) => pin === undefined ? undefined : pin || null;

export function meetingRoomRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens, config, platform, clock } = services;
  /** Personal rooms are CTI users'; a web service user's token is refused. */
  const personal = (template: string) =>
    requireAcl(tokens, template, { ctiOnly: "personal meeting rooms belong to CTI users only" });
  const anyone = (template: string) => requireAcl(tokens, template);
  const userId = (c: Context<AppEnv>) => Number(c.get("identity").userId);
  /** Writes need the user to exist still: a token outlives a deleted user. */
  const existingUser = async (c: Context<AppEnv>): Promise<UserRecord> => {
    const user = await getUser(store, userId(c));
    if (!user) {
      throw new ApiError(401, "UserNotFound", `user ${c.get("identity").login} does not exist`);
    }
    return user;
  };
  /** Who the token names in a video token: the CTI user's name, else the login. */
  const tokenUser = async (c: Context<AppEnv>) => {
    const identity = c.get("identity");
    const user = identity.userType === "cti" ? await getUser(store, userId(c)) : null;
    const name = user ? [user.firstname, user.lastname].filter(Boolean).join(" ") : "";
    return { id: identity.userId, name: name || identity.login };
  };
  /** Refuses (409) a token for a room as full as it may be: nobody more could join. */
  const notFull = async (room: RoomConfig) => {
    if (room.maxUsers === 0) return;
    const state = (await platform.rooms()).find((candidate) => candidate.roomId === room.id);
    if ((state?.participants.length ?? 0) >= room.maxUsers) {
      throw new RoomRefusal("room_full", `room ${room.number ?? room.id} is full`);
    }
  };
  /** The token answer for `room`, its video room named `videoRoom`. */
  const token = async (
    c: Context<AppEnv>,
    room: {
      type: string;
      id: string | number;
      name: string;
      number: string | null;
      pin: string | null;
    },
    videoRoom: string,
  ) => {
    const video = videoConfigured(config)
      ? await videoToken(config, videoRoom, await tokenUser(c), clock.now())
      : null;
    return c.json({
      roomType: room.type,
      id: room.id,
      displayName: room.name,
      number: room.number,
      userPin: room.pin,
      token: video?.token ?? null,
      jitsiDomain: video?.domain ?? null,
      jitsiRoom: video?.room ?? null,
      url: video?.url ?? null,
      expiresAt: video?.expiresAt ?? null,
      video: video ? null : NO_VIDEO,
    });
  };
  const roomErrors = {
    404: "`MeetingRoomNotFound` (another user's room too)",
  };
  const bodyErrors = {
    400: "`InvalidMeetingRoom`: a field is wrong (the number outside its range, a PIN not digits)",
    409: "`MeetingRoomNumberTaken`, `NoMeetingRoomNumberLeft`",
  };
  const tokenErrors = { 409: "`MeetingRoomFull`" };

  return new Hono<AppEnv>()
    .get(
      `${BASE}/personal`,
      personal("svc.rest.config.meetingrooms.personal.read"),
      operation(() => ({
        summary: "The user's personal meeting rooms",
        responses: { 200: z.array(personalSchema) },
      }), async (c) => c.json((await personalRoomsOf(store, userId(c))).map(personalView))),
    )
    .post(
      `${BASE}/personal`,
      personal("svc.rest.config.meetingrooms.personal.create"),
      operation(() => ({
        summary: "Creates a personal meeting room (its number the next free one unless given)",
        body: createBody,
        responses: { 201: personalSchema },
        errors: bodyErrors,
      }), async (c) => {
        const body = await readJson(c, createBody, "InvalidMeetingRoom");
        const user = await existingUser(c);
        const room = await answered(() =>
          createMeeting(services, {
            kind: "personal",
            name: body.displayName,
            ownerIds: [user.id],
            number: body.number,
            pin: pinOf(body.userPin) ?? null,
            persistent: true,
            requireAuthorization: false,
            expiresMs: null,
          })
        );
        c.header("Location", `${c.req.path}/${room.id}`);
        return c.json(personalView(room), 201);
      }),
    )
    .put(
      `${BASE}/personal`,
      personal("svc.rest.config.meetingrooms.personal.update"),
      operation(() => ({
        summary: "Changes the fields sent of a personal meeting room, named by the body's `id`",
        body: updateBody,
        responses: { 200: personalSchema },
        errors: { ...roomErrors, ...bodyErrors },
      }), async (c) => {
        const body = await readJson(c, updateBody, "InvalidMeetingRoom");
        const user = await existingUser(c);
        const room = await answered(() =>
          updateMeeting(services, body.id, {
            name: body.displayName,
            number: body.number,
            pin: pinOf(body.userPin),
          }, ownedBy(user.id))
        );
        return c.json(personalView(room));
      }),
    )
    .get(
      `${BASE}/personal/:roomId`,
      personal("svc.rest.config.meetingrooms.personal.{roomId}.read"),
      operation(() => ({
        summary: "One of the user's personal meeting rooms",
        responses: { 200: personalSchema },
        errors: roomErrors,
      }), async (c) => {
        const id = c.req.param("roomId") ?? "";
        return c.json(personalView(await answered(() => ownRoom(store, userId(c), id))));
      }),
    )
    .delete(
      `${BASE}/personal/:roomId`,
      personal("svc.rest.config.meetingrooms.personal.{roomId}.delete"),
      operation(() => ({
        summary: "Deletes a personal meeting room: whoever is in it is hung up",
        responses: { 204: null },
        errors: roomErrors,
      }), async (c) => {
        const id = c.req.param("roomId") ?? "";
        await answered(() => deleteMeeting(services, id, ownedBy(userId(c))));
        return c.body(null, 204);
      }),
    )
    .get(
      `${BASE}/static`,
      anyone("svc.rest.config.meetingrooms.static.read"),
      operation(() => ({
        summary: "The static meeting rooms (the administrator's conferences)",
        responses: { 200: z.array(staticSchema) },
      }), async (c) => {
        const rooms = (await allRooms(store)).filter((room) => room.type === "static");
        return c.json(rooms.map((room) => ({
          id: apiRoomId(room.id),
          roomType: "static",
          displayName: room.name,
          number: room.number,
          pinRequired: room.pin !== null,
        })));
      }),
    )
    .get(
      `${BASE}/static/token/:roomId`,
      anyone("svc.rest.config.meetingrooms.static.token.{roomId}.read"),
      operation(() => ({
        summary: "What a client needs to join a static room: its number, PIN, a video token",
        responses: { 200: tokenSchema },
        errors: { ...roomErrors, ...tokenErrors },
      }), async (c) => {
        const raw = c.req.param("roomId") ?? "";
        const id = /^\d{1,9}$/.test(raw) ? Number(raw) : NaN;
        const room = (await allRooms(store)).find((room) => room.id === conferenceRoomId(id));
        if (!room) throw notFound(raw);
        return await answered(async () => {
          await notFull(room);
          return await token(c, { ...room, id }, room.id);
        });
      }),
    )
    .get(
      `${BASE}/personal/token/:roomId`,
      personal("svc.rest.config.meetingrooms.personal.token.{roomId}.read"),
      operation(() => ({
        summary: "What the user needs to join one of its personal rooms: number, PIN, video token",
        responses: { 200: tokenSchema },
        errors: { ...roomErrors, ...tokenErrors },
      }), async (c) => {
        const id = c.req.param("roomId") ?? "";
        return await answered(async () => {
          const room = await ownRoom(store, userId(c), id);
          return await token(c, { ...room, type: "personal" }, room.id);
        });
      }),
    )
    .get(
      `${BASE}/temporary/token/:roomName`,
      anyone("svc.rest.config.meetingrooms.temporary.token.{roomName}.read"),
      operation(() => ({
        summary: "Opens (or joins) the temporary room of that name: its number, a video token",
        description: "A temporary room is kept while someone is in it, or its tokens are valid.",
        responses: { 200: tokenSchema },
        errors: {
          ...tokenErrors,
          400: "`InvalidMeetingRoom`: a name is 1 to 64 letters, digits, `-` or `_`",
          409: "`NoMeetingRoomNumberLeft`",
        },
      }), async (c) => {
        const name = (c.req.param("roomName") ?? "").toLowerCase();
        if (!/^[a-z0-9_-]{1,64}$/.test(name)) {
          throw new ApiError(
            400,
            "InvalidMeetingRoom",
            "a temporary room's name is 1 to 64 letters, digits, - or _",
          );
        }
        return await answered(async () => {
          const expiresMs = clock.now() + config.jitsiTokenTtl * 1000;
          const room = await temporaryRoom(services, name, expiresMs);
          return await token(c, { ...room, type: "temporary" }, name);
        });
      }),
    );
}

/**
 * Wazo's meetings (docs/meetingrooms.md): `/1.1/meetings` (the administrator's: every meeting),
 * `/1.1/users/me/meetings` (a CTI user's own, the 2.0 API's personal rooms), the guests'
 * authorizations (a guest asks, without a token, `POST /guests/{guest}/meetings/{meeting}/
 * authorizations`; an owner accepts or rejects, `PUT /users/me/meetings/{meeting}/authorizations/
 * {authorization}/accept|reject`) and a guest's view of a meeting (`GET /guests/me/meetings/{id}`).
 * A meeting's `exten` is its number (svc has no `meetingjoin` prefix); svc adds its `pin`.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import { operation } from "../../lib/openapi/operation.ts";
import { checkPathValues } from "../../lib/path_values.ts";
import {
  deleteMeeting,
  hangUpRoom,
  type MeetingChange,
  meetingRecord,
  updateMeeting,
} from "../../lib/meetingrooms/rooms.ts";
import { meetingRoomId } from "../../lib/platform/rooms.ts";
import type { Services } from "../../lib/services.ts";
import {
  addAuthorization,
  authorizationsOf,
  deleteAuthorization,
  deleteAuthorizationsOf,
  getAuthorization,
  MAX_AUTHORIZATIONS,
  type MeetingAuthorizationRecord,
  setAuthorizationStatus,
} from "../../lib/store/meeting_authorizations.ts";
import { type MeetingRecord, meetings } from "../../lib/store/meetings.ts";
import { transact, type Transaction } from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import { users } from "../../lib/store/users.ts";
import { check, fields, readBody } from "./body.ts";
import { type Resource, resourceRoutes, withConflicts } from "./crud.ts";
import { inputError, notFound, resourceError } from "./errors.ts";
import { confdMeAcl } from "./guard.ts";
import { listBody, listItems, listQuery } from "./list.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uuidOf = (raw: string) => UUID.test(raw) ? raw.toLowerCase() : null;

/** A meeting's body (a function: built with the schemas, on use). */
const meetingObject = () =>
  z.object({
    name: fields.name(512),
    owner_uuids: z.array(z.string().regex(UUID, "Not a valid UUID.")).optional(),
    persistent: fields.boolean().optional(),
    require_authorization: fields.boolean().optional(),
    pin: z.string().regex(/^\d{0,16}$/, "Must be digits (16 at most).").nullable().optional(),
  });

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const createSchema = z.lazy(meetingObject);
const updateSchema = z.lazy(() => meetingObject().partial());
const authorizationRequest = z.lazy(() => z.object({ guest_name: fields.name(128) }));

const FIELDS = ["uuid", "name", "persistent", "require_authorization", "exten"] as const;

/** A meeting as Wazo shows it (its owners by uuid), with svc's `pin` unless for a guest. */
async function meetingViews(
  services: Services,
  records: readonly MeetingRecord[],
  { guest = false } = {},
) {
  const uuids = new Map((await users.all(services.store)).map((user) => [user.id, user.uuid]));
  const domain = services.config.jitsiDomain;
  return records.map((meeting) => ({
    uuid: meeting.id,
    name: meeting.name,
    owner_uuids: meeting.owner_ids.flatMap((id) => uuids.get(id) ?? []),
    ingress_http_uri: domain ? `https://${domain}` : null,
    guest_sip_authorization: null,
    persistent: meeting.persistent,
    require_authorization: meeting.require_authorization,
    creation_time: new Date(meeting.created_ms).toISOString(),
    exten: meeting.number,
    ...(!guest && { pin: meeting.pin }),
  }));
}

type MeetingView = Awaited<ReturnType<typeof meetingViews>>[number];

/** The user ids of `owner_uuids`, read in `tx`; an unknown one is 400. */
async function ownerIds(tx: Transaction, uuids: readonly string[]): Promise<number[]> {
  const ids: number[] = [];
  for (const uuid of new Set(uuids.map((uuid) => uuid.toLowerCase()))) {
    const user = await tx.findBy(users, "uuid", uuid);
    if (!user) throw inputError("owner_uuids", `User was not found ('uuid': '${uuid}')`);
    ids.push(user.id);
  }
  return ids;
}

/** A change of a meeting from a PUT body; "" is no PIN. */
const changeOf = (
  body: z.infer<typeof updateSchema>,
  owners: number[] | undefined,
): MeetingChange => ({
  name: body.name,
  pin: body.pin === undefined ? undefined : body.pin || null,
  ownerIds: owners,
  persistent: body.persistent,
  requireAuthorization: body.require_authorization,
});

const meetingNotFound = (uuid: string) => notFound("Meeting", { uuid });

/** `/1.1/meetings`: every meeting, the administrator's. */
function meetingResource(services: Services): Resource<MeetingRecord, MeetingView> {
  return {
    path: "/meetings",
    label: "Meeting",
    param: "uuid",
    parseId: uuidOf,
    newId: () => Promise.resolve(crypto.randomUUID()),
    collection: meetings,
    views: (_store, records) => meetingViews(services, records),
    fields: FIELDS,
    search: ["name", "exten"],
    schemas: { create: createSchema, update: updateSchema },
    async create(tx, body, id) {
      const input = check(createSchema, body);
      return await meetingRecord(tx, services, {
        kind: "personal",
        name: input.name,
        ownerIds: await ownerIds(tx, input.owner_uuids ?? []),
        pin: input.pin || null,
        persistent: input.persistent ?? false,
        requireAuthorization: input.require_authorization ?? false,
        expiresMs: null,
      }, id);
    },
    async update(tx, current, body) {
      const input = check(updateSchema, body);
      const owners = input.owner_uuids && await ownerIds(tx, input.owner_uuids);
      const change = changeOf(input, owners);
      return {
        ...current,
        name: change.name ?? current.name,
        pin: change.pin === undefined ? current.pin : change.pin,
        owner_ids: change.ownerIds ?? current.owner_ids,
        persistent: change.persistent ?? current.persistent,
        require_authorization: change.requireAuthorization ?? current.require_authorization,
      };
    },
    async afterDelete(store, deleted) {
      await hangUpRoom(services, meetingRoomId(deleted.id));
      await deleteAuthorizationsOf(store, deleted.id);
    },
    conflict: () => resourceError("Meeting already exists: its number was taken meanwhile"),
  };
}

/** The meeting `uuid` of the path if the token's user owns it, else 404. */
async function ownMeeting(c: Context<AppEnv>, store: Store, param = "uuid") {
  const raw = c.req.param(param) ?? "";
  const id = uuidOf(raw);
  const meeting = id ? await meetings.get(store, id) : null;
  if (!meeting || !meeting.owner_ids.includes(Number(c.get("identity").userId))) {
    throw meetingNotFound(raw);
  }
  return meeting;
}

/** `/1.1/users/me/meetings`: a CTI user's own meetings. */
function userMeetingRoutes(services: Services) {
  const { store, tokens } = services;
  const me = (c: Context<AppEnv>) => Number(c.get("identity").userId);
  const base = "/users/me/meetings";
  const view = z.lazy(() => z.looseObject({ uuid: z.string(), exten: z.string() }));
  const notFoundError = { 404: "`Resource Not Found - Meeting was not found …` (or another's)" };
  return new Hono<AppEnv>()
    .get(
      base,
      confdMeAcl(tokens, "confd.users.me.meetings.read"),
      operation(() => ({
        summary: "The meetings the user owns",
        query: listQuery(),
        responses: { 200: listBody(view) },
      }), async (c) => {
        const own = (await meetings.all(store)).filter((meeting) =>
          meeting.owner_ids.includes(me(c))
        );
        const items = await meetingViews(services, own);
        return c.json(listItems(c, items, { fields: FIELDS, search: ["name", "exten"] }));
      }),
    )
    .post(
      base,
      confdMeAcl(tokens, "confd.users.me.meetings.create"),
      operation(() => ({
        summary: "Creates a meeting the user owns (with the owners it names)",
        body: createSchema,
        responses: { 201: view },
        errors: { 400: "`Input Error - …`, `Resource Error - …`" },
      }), async (c) => {
        const input = await readBody(c, createSchema);
        const id = crypto.randomUUID();
        const record = await withConflicts(
          meetingResource(services),
          () =>
            transact(store, async (tx) => {
              const owners = [me(c), ...await ownerIds(tx, input.owner_uuids ?? [])];
              const created = await meetingRecord(tx, services, {
                kind: "personal",
                name: input.name,
                ownerIds: [...new Set(owners)],
                pin: input.pin || null,
                persistent: input.persistent ?? false,
                requireAuthorization: input.require_authorization ?? false,
                expiresMs: null,
              }, id);
              tx.put(meetings, created);
              return created;
            }),
        );
        c.header("Location", `/1.1/meetings/${record.id}`);
        return c.json((await meetingViews(services, [record]))[0], 201);
      }),
    )
    .get(
      `${base}/:uuid`,
      confdMeAcl(tokens, "confd.users.me.meetings.{uuid}.read"),
      operation(() => ({
        summary: "One of the user's meetings",
        responses: { 200: view },
        errors: notFoundError,
      }), async (c) => c.json((await meetingViews(services, [await ownMeeting(c, store)]))[0])),
    )
    .put(
      `${base}/:uuid`,
      confdMeAcl(tokens, "confd.users.me.meetings.{uuid}.update"),
      operation(() => ({
        summary: "Changes one of the user's meetings (the user stays an owner)",
        body: updateSchema,
        responses: { 204: null },
        errors: { ...notFoundError, 400: "`Input Error - …`" },
      }), async (c) => {
        const meeting = await ownMeeting(c, store);
        const input = await readBody(c, updateSchema);
        const owners = input.owner_uuids === undefined ? undefined : [
          me(c),
          ...await transact(store, (tx) => ownerIds(tx, input.owner_uuids!)),
        ];
        await updateMeeting(
          services,
          meeting.id,
          changeOf(input, owners && [...new Set(owners)]),
          (current) => current.owner_ids.includes(me(c)),
        );
        return c.body(null, 204);
      }),
    )
    .delete(
      `${base}/:uuid`,
      confdMeAcl(tokens, "confd.users.me.meetings.{uuid}.delete"),
      operation(() => ({
        summary: "Deletes one of the user's meetings: whoever is in it is hung up",
        responses: { 204: null },
        errors: notFoundError,
      }), async (c) => {
        const meeting = await ownMeeting(c, store);
        await deleteMeeting(services, meeting.id, (current) => current.owner_ids.includes(me(c)));
        return c.body(null, 204);
      }),
    );
}

/** A guest's authorization as Wazo shows it; svc adds the meeting's number and PIN once accepted. */
function authorizationView(record: MeetingAuthorizationRecord, meeting: MeetingRecord | null) {
  const accepted = record.status === "accepted" && meeting !== null;
  return {
    uuid: record.id,
    meeting_uuid: record.meeting_id,
    guest_uuid: record.guest_id,
    guest_name: record.guest_name,
    status: record.status,
    creation_time: new Date(record.created_ms).toISOString(),
    sip_authorization: null,
    exten: accepted ? meeting.number : null,
    pin: accepted ? meeting.pin : null,
  };
}

const authorizationSchema = z.lazy(() =>
  z.object({
    uuid: z.string(),
    meeting_uuid: z.string(),
    guest_uuid: z.string(),
    guest_name: z.string(),
    status: z.enum(["pending", "accepted", "rejected"]),
    creation_time: z.string(),
    sip_authorization: z.null(),
    exten: z.string().nullable(),
    pin: z.string().nullable(),
  })
);

const authorizationNotFound = (uuid: string) => notFound("MeetingAuthorization", { uuid });

/** The owners' side of the guests' authorizations. */
function ownerAuthorizationRoutes(services: Services) {
  const { store, tokens, clock } = services;
  const base = "/users/me/meetings/:meeting_uuid/authorizations";
  const acl = "confd.users.me.meetings.{meeting_uuid}.authorizations";
  /** The owned meeting of the path and its authorization `authorization_uuid`, or 404. */
  const load = async (c: Context<AppEnv>) => {
    const meeting = await ownMeeting(c, store, "meeting_uuid");
    const raw = c.req.param("authorization_uuid") ?? "";
    const id = uuidOf(raw);
    const record = id ? await getAuthorization(store, meeting.id, id, clock.now()) : null;
    if (!record) throw authorizationNotFound(raw);
    return { meeting, record };
  };
  const notFoundError = {
    404: "`Resource Not Found - …`: no such meeting of the user's, or no such authorization",
  };
  const decide = (status: "accepted" | "rejected") => async (c: Context<AppEnv>) => {
    const { meeting, record } = await load(c);
    const changed = await setAuthorizationStatus(store, record, status, clock.now());
    return c.json(authorizationView(changed, meeting));
  };
  return new Hono<AppEnv>()
    .get(
      base,
      confdMeAcl(tokens, `${acl}.read`),
      operation(() => ({
        summary: "The guests' authorizations of one of the user's meetings (valid a day)",
        responses: { 200: listBody(authorizationSchema) },
        errors: notFoundError,
      }), async (c) => {
        const meeting = await ownMeeting(c, store, "meeting_uuid");
        const records = await authorizationsOf(store, meeting.id, clock.now());
        const items = records.map((record) => authorizationView(record, meeting));
        return c.json({ total: items.length, items });
      }),
    )
    .get(
      `${base}/:authorization_uuid`,
      confdMeAcl(tokens, `${acl}.{authorization_uuid}.read`),
      operation(() => ({
        summary: "One guest's authorization",
        responses: { 200: authorizationSchema },
        errors: notFoundError,
      }), async (c) => {
        const { meeting, record } = await load(c);
        return c.json(authorizationView(record, meeting));
      }),
    )
    .delete(
      `${base}/:authorization_uuid`,
      confdMeAcl(tokens, `${acl}.{authorization_uuid}.delete`),
      operation(() => ({
        summary: "Deletes a guest's authorization",
        responses: { 204: null },
        errors: notFoundError,
      }), async (c) => {
        const { record } = await load(c);
        await deleteAuthorization(store, record);
        return c.body(null, 204);
      }),
    )
    .put(
      `${base}/:authorization_uuid/accept`,
      confdMeAcl(tokens, `${acl}.{authorization_uuid}.accept.update`),
      operation(() => ({
        summary: "Accepts a guest: its authorization shows the meeting's number and PIN",
        responses: { 200: authorizationSchema },
        errors: notFoundError,
      }), decide("accepted")),
    )
    .put(
      `${base}/:authorization_uuid/reject`,
      confdMeAcl(tokens, `${acl}.{authorization_uuid}.reject.update`),
      operation(() => ({
        summary: "Rejects a guest",
        responses: { 200: authorizationSchema },
        errors: notFoundError,
      }), decide("rejected")),
    );
}

/**
 * The guests' side, without a token (as Wazo's): ask to join, read one's answer, read a meeting
 * (its PIN left out).
 */
function guestRoutes(services: Services) {
  const { store, clock } = services;
  /** The meeting of the path, or 404; a path value that can name nothing names no meeting. */
  const meetingOf = async (c: Context<AppEnv>) => {
    checkPathValues(c);
    const raw = c.req.param("meeting_uuid") ?? "";
    const id = uuidOf(raw);
    const meeting = id ? await meetings.get(store, id) : null;
    if (!meeting) throw meetingNotFound(raw);
    return meeting;
  };
  const guestOf = (c: Context<AppEnv>) => {
    const raw = c.req.param("guest_uuid") ?? "";
    const id = uuidOf(raw);
    if (!id) throw inputError("guest_uuid", "Not a valid UUID.");
    return id;
  };
  const base = "/guests/:guest_uuid/meetings/:meeting_uuid/authorizations";
  return new Hono<AppEnv>()
    .post(
      base,
      operation(() => ({
        summary: "A guest asks to join a meeting (no token); valid a day, 128 a meeting at most",
        description: "Accepted at once when the meeting requires no authorization.",
        body: authorizationRequest,
        responses: { 201: authorizationSchema },
        errors: {
          400: "`Input Error - …`, `Resource Error - … quota …`",
          404: "`Resource Not Found - Meeting …`",
        },
      }), async (c) => {
        const meeting = await meetingOf(c);
        const guest = guestOf(c);
        const { guest_name } = await readBody(c, authorizationRequest);
        const record = await addAuthorization(store, {
          id: crypto.randomUUID(),
          meeting_id: meeting.id,
          guest_id: guest,
          guest_name,
          status: meeting.require_authorization ? "pending" : "accepted",
          created_ms: clock.now(),
        });
        if (!record) {
          throw resourceError(
            `Meeting Authorization quota exceeded: ${MAX_AUTHORIZATIONS} at most per meeting`,
          );
        }
        c.header(
          "Location",
          `/1.1/guests/${guest}/meetings/${meeting.id}/authorizations/${record.id}`,
        );
        return c.json(authorizationView(record, meeting), 201);
      }),
    )
    .get(
      `${base}/:authorization_uuid`,
      operation(() => ({
        summary: "A guest reads its authorization (no token)",
        responses: { 200: authorizationSchema },
        errors: { 400: "`Input Error - …`", 404: "`Resource Not Found - …`" },
      }), async (c) => {
        const meeting = await meetingOf(c);
        const guest = guestOf(c);
        const raw = c.req.param("authorization_uuid") ?? "";
        const id = uuidOf(raw);
        const record = id ? await getAuthorization(store, meeting.id, id, clock.now()) : null;
        if (!record || record.guest_id !== guest) throw authorizationNotFound(raw);
        return c.json(authorizationView(record, meeting));
      }),
    )
    .get(
      "/guests/me/meetings/:meeting_uuid",
      operation(
        () => ({
          summary: "A meeting as a guest sees it (no token; no PIN)",
          responses: { 200: z.looseObject({ uuid: z.string() }) },
          errors: { 404: "`Resource Not Found - Meeting …`" },
        }),
        async (c) =>
          c.json((await meetingViews(services, [await meetingOf(c)], { guest: true }))[0]),
      ),
    );
}

export function meetingRoutes(services: Services) {
  const app = new Hono<AppEnv>();
  app.route("/", guestRoutes(services));
  app.route("/", ownerAuthorizationRoutes(services));
  app.route("/", userMeetingRoutes(services));
  app.route("/", resourceRoutes(services, meetingResource(services)));
  return app;
}

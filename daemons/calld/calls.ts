/**
 * The call daemon's calls (docs/calls.md): the parties of the calls in progress, a dial, a hang-up,
 * and the commands on one party (hold, answer, mute, DTMF, recording), each with its ACL beside
 * its path, under `/calls` for every call and `/users/me/calls` for a user's own.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import { CALL, callView, callViews, userUuids } from "../../lib/calls/view.ts";
import { callsOf, liveCall, ownCall } from "../../lib/calls/user_calls.ts";
import { callVariables, dialledNumber } from "../../lib/dial.ts";
import { ApiError } from "../../lib/errors.ts";
import type { AppEnv } from "../../lib/http.ts";
import { operation } from "../../lib/openapi/operation.ts";
import { sanitizeNumber } from "../../lib/phone_numbers.ts";
import type { CallCommand, LiveCall } from "../../lib/platform/call_control.ts";
import type { CallStarted } from "../../lib/platform/port.ts";
import type { Services } from "../../lib/services.ts";
import { mainLine } from "../../lib/store/lines.ts";
import { findUserByUuid, getUser, type UserRecord } from "../../lib/store/users.ts";
import { CALL_REQUEST, dtmfQuery, parsed, readBody, USER_CALL_REQUEST } from "./body.ts";
import { CalldError, invalidData, refused } from "./errors.ts";
import { calldAcl } from "./guard.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const CALL_LIST = z.lazy(() => z.object({ items: z.array(CALL) }));
/** The list's query values, for the OpenAPI document (built with it). */
const listQuery = () =>
  z.object({
    application: z.string().optional().meta({
      description: "A Stasis application: svc runs none, so any answers an empty list",
    }),
    application_instance: z.string().optional(),
    recurse: z.string().optional().meta({ description: "Accepted: svc has one tenant" }),
  });

/** A command on one party: its path below the call, its ACL word, and what it does. */
interface Action {
  path: string;
  acl: string;
  summary: string;
  command(c: Context<AppEnv>): CallCommand;
  /** Its query values' schema, built when first asked for. */
  query?: () => z.ZodObject;
  errors?: Record<number, string>;
}

const ACTIONS: Action[] = [
  {
    path: "hold/start",
    acl: "hold.start",
    summary: "Puts the call on hold: the other party hears music",
    command: () => ({ kind: "hold" }),
    errors: { 400: "`call-not-talking`: not up with one other party" },
  },
  {
    path: "hold/stop",
    acl: "hold.stop",
    summary: "Takes back a call svc put on hold",
    command: () => ({ kind: "resume" }),
    errors: { 400: "`call-not-held`, or `call-held-by-phone` (the phone takes it back)" },
  },
  {
    path: "answer",
    acl: "answer",
    summary: "Answers a ringing call (on Asterisk, asks the phone)",
    command: () => ({ kind: "answer" }),
    errors: { 400: "`call-not-ringing`, or `call-command-not-supported` by the phone" },
  },
  {
    path: "mute/start",
    acl: "mute.start",
    summary: "The others stop hearing this party",
    command: () => ({ kind: "mute", on: true }),
  },
  {
    path: "mute/stop",
    acl: "mute.stop",
    summary: "The others hear this party again",
    command: () => ({ kind: "mute", on: false }),
  },
  {
    path: "dtmf",
    acl: "dtmf",
    summary: "Sends DTMF digits into the call, as this party's keypad would",
    command: (c) => ({ kind: "dtmf", digits: parsed(dtmfQuery(), c.req.query()).digits }),
    query: dtmfQuery,
  },
  ...(["start", "stop", "pause", "resume"] as const).map((action): Action => ({
    path: `record/${action}`,
    acl: `record.${action}`,
    summary: `${action[0]!.toUpperCase()}${action.slice(1)}s recording the call`,
    command: () => ({ kind: "record", action }),
    ...(action === "pause" || action === "resume"
      ? { errors: { 400: "`recording-not-started`" } }
      : {}),
  })),
];

/** The token's user id (a `me` route's guard made sure it is a user's). */
const tokenUser = (c: Context<AppEnv>) => Number(c.get("identity").userId);

export function callRoutes(services: Services): Hono<AppEnv> {
  const { tokens, platform, store } = services;
  const app = new Hono<AppEnv>();
  const noSuchCall = (callId: string) =>
    refused(() => liveCall(platform, callId), { call_id: callId });

  app.get(
    "/calls",
    calldAcl(tokens, "calld.calls.read"),
    operation(() => ({
      summary: "The parties of every call in progress",
      query: listQuery(),
      responses: { 200: CALL_LIST },
    }), async (c) => {
      const calls = c.req.query("application") ? [] : await platform.liveCalls();
      return c.json({ items: await callViews(store, calls) });
    }),
  );
  app.post(
    "/calls",
    calldAcl(tokens, "calld.calls.create"),
    operation(() => ({
      summary: "Rings a user's phone (or mobile), then dials an extension from it",
      body: CALL_REQUEST,
      responses: { 201: CALL },
      errors: {
        400: "`invalid-data`, `invalid-user`, `invalid-user-line`, `invalid-extension`, " +
          "`user-missing-main-line` or `call-creation` (no mobile number)",
      },
    }), async (c) => {
      const { source, destination, variables } = await readBody(c, CALL_REQUEST);
      const user = await findUserByUuid(store, source.user);
      if (!user) {
        throw new CalldError(400, "invalid-user", "Invalid user: not found", {
          user_uuid: source.user,
        });
      }
      const started = await dial(services, user, {
        extension: destination.extension,
        context: destination.context,
        lineId: source.line_id,
        fromMobile: source.from_mobile ?? false,
        variables,
      });
      return c.json(await startedView(services, user, started, destination.extension), 201);
    }),
  );
  app.get(
    "/calls/:call_id",
    calldAcl(tokens, "calld.calls.{call_id}.read"),
    operation(
      () => ({
        summary: "One party of a call",
        responses: { 200: CALL },
        errors: { 404: "`no-such-call`" },
      }),
      async (c) => {
        const call = await noSuchCall(c.req.param("call_id")!);
        const all = await platform.liveCalls();
        return c.json(callView(call, all, await userUuids(store, all)));
      },
    ),
  );
  app.delete(
    "/calls/:call_id",
    calldAcl(tokens, "calld.calls.{call_id}.delete"),
    operation(
      () => ({ summary: "Hangs up (a ringing call: declines it)", responses: { 204: null } }),
      (c) => command(c, c.req.param("call_id")!, { kind: "hangup" }),
    ),
  );
  for (const action of ACTIONS) {
    app.put(
      `/calls/:call_id/${action.path}`,
      calldAcl(tokens, `calld.calls.{call_id}.${action.acl}.update`),
      operation(() => meta(action), (c) => command(c, c.req.param("call_id")!, action.command(c))),
    );
  }

  const me = { me: true };
  app.get(
    "/users/me/calls",
    calldAcl(tokens, "calld.users.me.calls.read", me),
    operation(() => ({
      summary: "The parties of the user's own calls",
      query: listQuery().omit({ recurse: true }),
      responses: { 200: CALL_LIST },
    }), async (c) => {
      const calls = c.req.query("application") ? [] : await callsOf(platform, tokenUser(c));
      const all = await platform.liveCalls();
      const views = await callViews(store, all);
      const ids = new Set(calls.map((call) => call.callId));
      return c.json({ items: views.filter((view) => ids.has(view.call_id)) });
    }),
  );
  app.post(
    "/users/me/calls",
    calldAcl(tokens, "calld.users.me.calls.create", me),
    operation(() => ({
      summary: "Rings the user's phone (or mobile), then dials an extension from it",
      body: USER_CALL_REQUEST,
      responses: { 201: CALL },
      errors: { 400: "`invalid-data`, `invalid-user-line`, `user-missing-main-line`" },
    }), async (c) => {
      const body = await readBody(c, USER_CALL_REQUEST);
      const user = await getUser(store, tokenUser(c));
      if (!user) throw new CalldError(400, "invalid-user", "Invalid user: not found");
      const started = await dial(services, user, {
        extension: body.extension,
        lineId: body.line_id,
        fromMobile: body.from_mobile ?? false,
        variables: body.variables,
      });
      return c.json(await startedView(services, user, started, body.extension), 201);
    }),
  );
  app.delete(
    "/users/me/calls/:call_id",
    calldAcl(tokens, "calld.users.me.calls.{call_id}.delete", me),
    operation(
      () => ({ summary: "Hangs up one of the user's calls", responses: { 204: null } }),
      (c) => ownCommand(c, { kind: "hangup" }),
    ),
  );
  for (const action of ACTIONS) {
    app.put(
      `/users/me/calls/:call_id/${action.path}`,
      calldAcl(tokens, `calld.users.me.calls.{call_id}.${action.acl}.update`, me),
      operation(
        () => meta(action, " (one of the user's calls)"),
        (c) => ownCommand(c, action.command(c)),
      ),
    );
  }

  /** Runs `command` on the party `callId`: 204. */
  async function command(c: Context<AppEnv>, callId: string, run: CallCommand) {
    await refused(() => platform.callCommand(callId, run), { call_id: callId });
    return c.body(null, 204);
  }

  /** As {@link command}, on one of the token user's own parties (403 for another's). */
  async function ownCommand(c: Context<AppEnv>, run: CallCommand) {
    const callId = c.req.param("call_id")!;
    await refused(() => ownCall(platform, tokenUser(c), callId), { call_id: callId });
    return await command(c, callId, run);
  }

  return app;
}

function meta(action: Action, who = "") {
  return {
    summary: action.summary + who,
    ...(action.query ? { query: action.query() } : {}),
    responses: { 204: null },
    errors: { 404: "`no-such-call`", ...action.errors },
  };
}

/** What a dial of the call daemon asks. */
interface DialRequest {
  extension: string;
  /** The context asked (`POST /calls`): it must be the main line's. */
  context?: string;
  lineId?: number;
  fromMobile: boolean;
  variables?: Record<string, string>;
}

/** A body value that `check` refuses is `invalid-data` naming `field`. */
function checked<T>(field: string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof ApiError) throw invalidData({ [field]: [error.message] });
    throw error;
  }
}

/**
 * Rings the user's main line (or mobile) and then dials the extension in its context, as svc's
 * dial does: the main line must be the one asked, and the context its own.
 */
async function dial(services: Services, user: UserRecord, request: DialRequest) {
  const { store, platform } = services;
  const line = await mainLine(store, user);
  if (!line) {
    throw new CalldError(400, "user-missing-main-line", "User has no main line", {
      user_uuid: user.uuid,
    });
  }
  if (request.lineId !== undefined && request.lineId !== line.id) {
    throw new CalldError(400, "invalid-user-line", "User has no such line", {
      user_id: user.id,
      line_id: request.lineId,
    });
  }
  const number = checked("extension", () => dialledNumber(request.extension, "extension"));
  if (request.context !== undefined && request.context !== line.context) {
    throw new CalldError(400, "invalid-extension", "Invalid extension", {
      context: request.context,
      exten: request.extension,
    });
  }
  const variables = checked("variables", () => callVariables(request.variables));
  const details = { user_uuid: user.uuid };
  if (!request.fromMobile) {
    return await refused(() => platform.dialNumber(user, number, variables), details);
  }
  const mobile = sanitizeNumber(user.mobile_phone_number ?? "");
  if (!mobile) {
    throw new CalldError(400, "call-creation", "User has no mobile phone number", details);
  }
  return await refused(() => platform.dialFromMobile(user, mobile, number, variables), details);
}

/**
 * The caller's party of a call just started (its `call_id` is the call's linkedId): as the calls
 * show it, or, when it already ended (its phone refused at once), as it was started.
 */
async function startedView(
  services: Services,
  user: UserRecord,
  started: CallStarted,
  extension: string,
) {
  const all = await services.platform.liveCalls();
  const call: LiveCall = all.find((party) => party.callId === started.linkedId) ?? {
    callId: started.linkedId,
    linkedId: started.linkedId,
    userId: user.id,
    lineId: user.line_ids[0] ?? null,
    state: "ringing",
    onHold: false,
    muted: false,
    record: "inactive",
    userData: {},
    talkingTo: [],
    peerCallId: null,
    conferenceId: null,
    name: [user.firstname, user.lastname].filter(Boolean).join(" "),
    number: "",
    peerName: "",
    peerNumber: extension,
    isCaller: true,
    dialled: extension,
    direction: "internal",
    createdMs: services.clock.now(),
    answeredMs: null,
  };
  const views = await callViews(services.store, [call, ...all]);
  return { ...views[0]!, dialed_extension: extension };
}

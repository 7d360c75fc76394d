/**
 * Dial commands (decisions §5), web service users only; each answers 200 `{"res":"success"}` once
 * the platform has taken the command (the call then goes on by itself: events and history follow).
 *
 * - `POST /dial/number/{username}` (ACL `svc.rest.dial.number.{username}.create`): body
 *   `destination`; optional `variables`.
 * - `POST /dial/user/{username}` (ACL `svc.rest.dial.user.{username}.create`): body `username`
 *   (the user to call, who must have a line); optional `variables`.
 * - `POST /dial/fromqueue/{username}` (ACL `svc.rest.dial.fromqueue.create`): body `destination`,
 *   `queueId` (integer); optional `callerIdName`, `callerIdNumber`, `variables`.
 * - `POST /dial/toqueue` (ACL `svc.rest.dial.toqueue.create`): body `destination`, `queueName`;
 *   optional `callerIdNumber` (shown to the queue's agents, default `""`), `variables`.
 *
 * Every refusal is 400 `BadRequest` with a message naming the problem (the spec's errors 6), except
 * an unknown path user: 400 `UserNotFound`. Checked in this order: the body (no body, not JSON, a
 * missing or wrong-typed field, a destination with nothing dialable left after `sanitizeNumber`,
 * bad `variables`), then the path user (exists, has a line, is connected: decisions §2), then what
 * the body names (callee, queue), then the platform (a `PlatformRefusal` keeps its message).
 *
 * Limits (beyond the spec, so that what reaches a PBX stays sane): a destination is at most 256
 * characters as sent and 64 once sanitized; `variables` is a flat object of at most 32 entries,
 * each key 1 to 64 letters, digits or `_` (it becomes `USR_<key>`, a key already starting with
 * `USR_` is kept, so `a` and `USR_a` together are refused), each value a string of at most 1024
 * characters without control characters (line breaks would break a PBX manager protocol); caller
 * id name and number at most 80 characters, no control characters, blank meaning none.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import { requireAcl } from "../lib/auth/guard.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, bodyObject, readBody, required } from "../lib/http.ts";
import { sanitizeNumber } from "../lib/phone_numbers.ts";
import { type CallStarted, type CallVariables, PlatformRefusal } from "../lib/platform/port.ts";
import type { Services } from "../lib/services.ts";
import { isConnected } from "../lib/store/connections.ts";
import { findQueueByName, getQueue, type QueueRecord } from "../lib/store/queues.ts";
import { findUserByUsername, type UserRecord } from "../lib/store/users.ts";
import { pathUser, SUCCESS } from "./control.ts";

/** Every body problem of a dial command is a `BadRequest` (the spec's errors 6). */
const DIAL_BODY = { missing: "BadRequest", invalid: "BadRequest" };

export const MAX_DESTINATION_LENGTH = 256;
export const MAX_NUMBER_LENGTH = 64;
export const MAX_VARIABLES = 32;
export const MAX_VARIABLE_LENGTH = 1024;
export const MAX_CALLER_ID_LENGTH = 80;
const VARIABLE_KEY = /^[A-Za-z0-9_]{1,64}$/;
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

const badRequest = (message: string) => new ApiError(400, "BadRequest", message);

const destination = z.string(required("a string")).max(
  MAX_DESTINATION_LENGTH,
  `longer than ${MAX_DESTINATION_LENGTH} characters`,
);
const variables = z.unknown().optional();
const callerId = z.string(required("a string")).max(
  MAX_CALLER_ID_LENGTH,
  `longer than ${MAX_CALLER_ID_LENGTH} characters`,
).refine((value) => !CONTROL.test(value), "control characters are not allowed").optional();

const numberSchema = bodyObject({ destination, variables });
const userSchema = bodyObject({ username: z.string(required("a string")).max(256), variables });
const fromQueueSchema = bodyObject({
  destination,
  queueId: z.int(required("an integer")),
  callerIdName: callerId,
  callerIdNumber: callerId,
  variables,
});
const toQueueSchema = bodyObject({
  destination,
  queueName: z.string(required("a string")).max(256),
  callerIdNumber: callerId,
  variables,
});

/** The number to dial; 400 when nothing dialable is left. */
export function dialledNumber(raw: string): string {
  const number = sanitizeNumber(raw);
  if (!number) throw badRequest(`destination ${JSON.stringify(raw)} holds no number to dial`);
  if (number.length > MAX_NUMBER_LENGTH) {
    throw badRequest(`destination is longer than ${MAX_NUMBER_LENGTH} digits`);
  }
  return number;
}

/** The `variables` of a body (see the module's limits); absent is none. */
export function callVariables(raw: unknown): CallVariables {
  if (raw === undefined) return {};
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw badRequest("field variables: expected an object of strings");
  }
  const entries = Object.entries(raw);
  if (entries.length > MAX_VARIABLES) {
    throw badRequest(`field variables: more than ${MAX_VARIABLES} variables`);
  }
  const named = new Map<string, string>();
  for (const [key, value] of entries) {
    if (!VARIABLE_KEY.test(key)) {
      throw badRequest(
        `field variables: key ${JSON.stringify(key)} is not 1 to 64 letters, digits or _`,
      );
    }
    if (typeof value !== "string") {
      throw badRequest(`field variables.${key}: expected a string`);
    }
    if (value.length > MAX_VARIABLE_LENGTH || CONTROL.test(value)) {
      throw badRequest(
        `field variables.${key}: longer than ${MAX_VARIABLE_LENGTH} characters ` +
          "or holds control characters",
      );
    }
    const reported = key.startsWith("USR_") ? key : `USR_${key}`;
    const other = named.get(reported);
    if (other !== undefined) {
      throw badRequest(`field variables: ${other} and ${key} both name ${reported}`);
    }
    named.set(reported, key);
  }
  return Object.fromEntries(entries) as CallVariables;
}

/** A caller id text: trimmed, blank meaning none. */
const optionalText = (value: string | undefined) => value?.trim() || null;

/** Runs a platform command; its refusal is a `BadRequest` with its message. */
async function platformCommand(command: () => Promise<CallStarted>): Promise<CallStarted> {
  try {
    return await command();
  } catch (error) {
    if (error instanceof PlatformRefusal) throw badRequest(error.message);
    throw error;
  }
}

export function dialRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens, platform, clock, logger } = services;

  /** The path user, who must have a line and be connected (decisions §2, §5). */
  async function caller(c: Context): Promise<UserRecord> {
    const username = c.req.param("username")!;
    const user = await pathUser(store, username);
    if (!user.line_ids.length) throw badRequest(`user ${username} has no line`);
    if (!await isConnected(store, user.id, clock.now())) {
      throw badRequest(`user ${username} is not connected`);
    }
    return user;
  }

  /** Answers success, logging the call the command started. */
  function started(c: Context<AppEnv>, route: string, call: CallStarted) {
    logger.info("dial", { requestId: c.get("requestId"), route, linkedId: call.linkedId });
    return c.json(SUCCESS);
  }

  return new Hono<AppEnv>()
    .post(
      "/dial/number/:username",
      requireAcl(tokens, "svc.rest.dial.number.{username}.create"),
      async (c) => {
        const body = await readBody(c, numberSchema, DIAL_BODY);
        const number = dialledNumber(body.destination);
        const vars = callVariables(body.variables);
        const user = await caller(c);
        const call = await platformCommand(() => platform.dialNumber(user, number, vars));
        return started(c, "number", call);
      },
    )
    .post(
      "/dial/user/:username",
      requireAcl(tokens, "svc.rest.dial.user.{username}.create"),
      async (c) => {
        const body = await readBody(c, userSchema, DIAL_BODY);
        const vars = callVariables(body.variables);
        const user = await caller(c);
        const callee = await calleeNamed(services, body.username);
        const call = await platformCommand(() => platform.dialUser(user, callee, vars));
        return started(c, "user", call);
      },
    )
    .post(
      "/dial/fromqueue/:username",
      requireAcl(tokens, "svc.rest.dial.fromqueue.create"),
      async (c) => {
        const body = await readBody(c, fromQueueSchema, DIAL_BODY);
        const number = dialledNumber(body.destination);
        const vars = callVariables(body.variables);
        const user = await caller(c);
        const queue = knownQueue(await getQueue(store, body.queueId), `id ${body.queueId}`);
        const callerIdentity = {
          name: optionalText(body.callerIdName),
          number: optionalText(body.callerIdNumber),
        };
        const call = await platformCommand(() =>
          platform.dialFromQueue(user, queue, number, vars, callerIdentity)
        );
        return started(c, "fromqueue", call);
      },
    )
    .post(
      "/dial/toqueue",
      requireAcl(tokens, "svc.rest.dial.toqueue.create"),
      async (c) => {
        const body = await readBody(c, toQueueSchema, DIAL_BODY);
        const number = dialledNumber(body.destination);
        const vars = callVariables(body.variables);
        const queue = knownQueue(
          await findQueueByName(store, body.queueName),
          JSON.stringify(body.queueName),
        );
        const callerIdNumber = body.callerIdNumber?.trim() ?? "";
        const call = await platformCommand(() =>
          platform.dialToQueue(queue, number, callerIdNumber, vars)
        );
        return started(c, "toqueue", call);
      },
    );
}

/** The user `/dial/user` calls: it must exist and have a line. */
async function calleeNamed({ store }: Services, username: string): Promise<UserRecord> {
  const callee = await findUserByUsername(store, username);
  if (!callee) throw badRequest(`user to call ${JSON.stringify(username)} not found`);
  if (!callee.line_ids.length) throw badRequest(`user to call ${username} has no line`);
  return callee;
}

function knownQueue(queue: QueueRecord | null, named: string): QueueRecord {
  if (!queue) throw badRequest(`no queue ${named}`);
  return queue;
}

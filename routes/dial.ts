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
 * the body names (callee, queue), then the platform (a `PlatformRefusal` keeps its message). The
 * commands and their limits are in `lib/dial.ts`, shared with the 1.0 API.
 */
import type * as z from "zod";
import { operation, type OperationMeta } from "../lib/openapi/operation.ts";
import { SUCCESS_BODY } from "../lib/control.ts";
import { type Context, Hono } from "hono";
import { requireAcl } from "../lib/auth/guard.ts";
import { pathUser } from "../lib/control.ts";
import {
  callVariables,
  DIAL_BODY,
  DIAL_SCHEMAS,
  type DialCommand,
  dialFor,
  dialledNumber,
  dialStarted,
  knownQueue,
  platformCommand,
  readDial,
  toQueueSchema,
} from "../lib/dial.ts";
import { type AppEnv, readBody } from "../lib/http.ts";
import { idempotent } from "../lib/idempotency.ts";
import type { Services } from "../lib/services.ts";
import { findQueueByName } from "../lib/store/queues.ts";

/** What every dial route declares: its body, `{"res":"success"}`, the 400 `BadRequest`. */
const dialDoc = (summary: string, body: z.ZodType): OperationMeta => ({
  summary,
  body,
  responses: { 200: SUCCESS_BODY },
  errors: {
    400: "`BadRequest` naming the problem, or `UserNotFound` (the path's user)",
    503: "`Unreachable`: the PBX is",
  },
});

export function dialRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens, platform } = services;
  const once = idempotent(services);

  /** Runs `command` for the path user. */
  const run = async (c: Context<AppEnv>, route: string, command: DialCommand) =>
    dialFor(c, services, route, await pathUser(store, c.req.param("username")!), command);

  return new Hono<AppEnv>()
    .post(
      "/dial/number/:username",
      requireAcl(tokens, "svc.rest.dial.number.{username}.create"),
      once,
      operation(
        () => dialDoc("Calls a number from the user's phone", DIAL_SCHEMAS.number),
        async (c) => run(c, "number", await readDial.number(c)),
      ),
    )
    .post(
      "/dial/user/:username",
      requireAcl(tokens, "svc.rest.dial.user.{username}.create"),
      once,
      operation(
        () => dialDoc("Calls another user (by username) from the user's phone", DIAL_SCHEMAS.user),
        async (c) => run(c, "user", await readDial.user(c)),
      ),
    )
    .post(
      "/dial/fromqueue/:username",
      requireAcl(tokens, "svc.rest.dial.fromqueue.create"),
      once,
      operation(
        () =>
          dialDoc(
            "Calls a number from the user's phone, on behalf of a queue",
            DIAL_SCHEMAS.fromQueue,
          ),
        async (c) => run(c, "fromqueue", await readDial.fromQueue(c)),
      ),
    )
    .post(
      "/dial/toqueue",
      requireAcl(tokens, "svc.rest.dial.toqueue.create"),
      once,
      operation(
        () => dialDoc("Calls a number and puts the call in a queue", toQueueSchema),
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
          return dialStarted(c, services, "toqueue", call);
        },
      ),
    );
}

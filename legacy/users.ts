/**
 * The 1.0 routes about one user (spec "Deprecated version 1.0 endpoints"), each at
 * `/<method>/<domain>/<username>/` (`domain` is any value and is not used), each connecting the
 * user (`common.ts`) once its body is valid and the user is found:
 *
 * - `POST connect` `{password}`: checks the user's password (401 `InvalidCredentials`, the same
 *   for an unknown user, and the login throttle of `/auth/login`, which counts the same failures);
 *   a bad body is 400 `InvalidJson`, as on `/auth/login`.
 * - `POST dnd` `{state}`: the 2.0 `/dnd` change.
 * - `POST uncForward`, `naForward`, `busyForward` `{state, destination?}`: the 2.0 `/forward`
 *   change with `enabled: state`; a destination left out keeps the current one.
 * - `GET historyByUsername?size=n` or `?days=n`: the user's call history as a bare list of the 2.0
 *   entries (`lib/history.ts`), newest first; `size` 1..1000 (10 when neither is given), `days`
 *   1..365; both at once: 400 `BadRequest`.
 *
 * DND and forwards answer 200 `{"res":"success"}` and their errors are those of 2.0: 400
 * `JsonBodyNotFound`, `JsonErrorDecoding`, `UserNotFound`, `BadRequest` (an enabled forward
 * without a destination).
 */
import { Hono } from "hono";
import * as z from "zod";
import { authenticate } from "../lib/auth/authenticate.ts";
import { changeDnd, changeForward, SERVICE_BODY, SUCCESS } from "../lib/control.ts";
import { ApiError } from "../lib/errors.ts";
import { DAYS, entriesOfDays, lastEntriesJson, queryInteger, SIZE } from "../lib/history.ts";
import { type AppEnv, readBody, readJson } from "../lib/http.ts";
import { bodyObject, required } from "../lib/body_schema.ts";
import type { Services } from "../lib/services.ts";
import { findUserByUsername, type ForwardKind } from "../lib/store/users.ts";
import { both, connect, connectedUser, connectedUserId, pathUsername } from "./common.ts";
import { legacyIdempotent } from "./idempotency.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const connectSchema = z.lazy(() => bodyObject({ password: z.string(required("a string")) }));
const dndSchema = z.lazy(() => bodyObject({ state: z.boolean(required("a boolean")) }));
const forwardSchema = z.lazy(() =>
  bodyObject({
    state: z.boolean(required("a boolean")),
    destination: z.string(required("a string")).optional(),
  })
);

/** The 1.0 method of each forward. */
export const FORWARD_METHODS: Record<string, ForwardKind> = {
  uncForward: "unconditional",
  naForward: "noanswer",
  busyForward: "busy",
};

export function userRoutes(services: Services): Hono<AppEnv> {
  const app = new Hono<AppEnv>()
    .on("POST", both("/connect/:domain/:username"), async (c) => {
      const { password } = await readJson(c, connectSchema, "InvalidJson");
      const login = pathUsername(c);
      const user = await authenticate(
        services,
        "cti",
        { login, password },
        (username) => findUserByUsername(services.store, username),
      );
      await connect(services, user.id);
      return c.json(SUCCESS);
    })
    .on("POST", both("/dnd/:domain/:username"), legacyIdempotent(services), async (c) => {
      const { state } = await readBody(c, dndSchema, SERVICE_BODY);
      const user = await connectedUser(services, pathUsername(c));
      await changeDnd(services, user, state);
      return c.json(SUCCESS);
    })
    .on("GET", both("/historyByUsername/:domain/:username"), async (c) => {
      if (c.req.query("size") !== undefined && c.req.query("days") !== undefined) {
        throw new ApiError(400, "BadRequest", "give size or days, not both");
      }
      const days = c.req.query("days") === undefined ? null : queryInteger(c, DAYS);
      const size = queryInteger(c, SIZE);
      const userId = await connectedUserId(services, pathUsername(c));
      if (days !== null) return c.json(await entriesOfDays(services, userId, days));
      const entries = await lastEntriesJson(services, userId, size);
      return c.body(entries, 200, { "Content-Type": "application/json" });
    });
  for (const [method, kind] of Object.entries(FORWARD_METHODS)) {
    app.on("POST", both(`/${method}/:domain/:username`), async (c) => {
      const { state, destination } = await readBody(c, forwardSchema, SERVICE_BODY);
      const user = await connectedUser(services, pathUsername(c));
      await changeForward(services, user, kind, { enabled: state, destination });
      return c.json(SUCCESS);
    });
  }
  return app;
}

/**
 * `POST /forward/{unconditional|noanswer|busy}/{username}` (web service users, ACL
 * `svc.rest.forward.<kind>.{username}.create`): sets one of a user's forwards through
 * `lib/user_services.ts`, the same change as the configuration daemon's
 * `PUT /1.1/users/{id}/forwards/<kind>`.
 *
 * The destination is kept as given, only trimmed (it is dialled like any number when the forward
 * applies); an empty one is stored as none (`null` in `/1.1`, `""` in the event). A disabled
 * forward keeps the destination sent, so it can be enabled again later.
 */
import { operation } from "../lib/openapi/operation.ts";
import { Hono } from "hono";
import * as z from "zod";
import { requireAcl } from "../lib/auth/guard.ts";
import { changeForward, pathUser, SERVICE_BODY, SUCCESS, SUCCESS_BODY } from "../lib/control.ts";
import { type AppEnv, readBody } from "../lib/http.ts";
import { bodyObject, required } from "../lib/body_schema.ts";
import { idempotent } from "../lib/idempotency.ts";
import type { Services } from "../lib/services.ts";
import type { ForwardKind } from "../lib/store/users.ts";
import { FORWARD_KINDS } from "../lib/user_services.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const forwardSchema = z.lazy(() =>
  bodyObject({
    destination: z.string(required("a string")),
    enabled: z.boolean(required("a boolean")),
  })
);

export function forwardRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens } = services;
  const once = idempotent(services);

  /**
   * Body `{destination: string, enabled: boolean}`; errors 400 `JsonBodyNotFound`,
   * `JsonErrorDecoding`, `UserNotFound`, and `BadRequest` for an enabled forward without a
   * destination or a destination longer than 128 characters.
   */
  const route = (kind: ForwardKind) =>
    new Hono<AppEnv>().post(
      `/forward/${kind}/:username`,
      requireAcl(tokens, `svc.rest.forward.${kind}.{username}.create`),
      once,
      operation(() => ({
        summary: `Sets a user's ${kind} forward`,
        body: forwardSchema,
        responses: { 200: SUCCESS_BODY },
        errors: {
          400: "`JsonBodyNotFound`, `JsonErrorDecoding`, `UserNotFound`, `BadRequest` (enabled " +
            "without a destination, or one longer than 128 characters)",
          503: "`Unreachable`: the PBX is",
        },
      }), async (c) => {
        const change = await readBody(c, forwardSchema, SERVICE_BODY);
        const user = await pathUser(store, c.req.param("username") ?? "");
        await changeForward(services, user, kind, change);
        return c.json(SUCCESS);
      }),
    );

  const app = new Hono<AppEnv>();
  for (const kind of FORWARD_KINDS) app.route("/", route(kind));
  return app;
}

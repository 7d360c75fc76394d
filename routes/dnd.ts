/**
 * `POST /dnd/{username}` (web service users, ACL `svc.rest.dnd.{username}.create`): sets a user's
 * do-not-disturb through `lib/user_services.ts`, the same change as the configuration daemon's
 * `PUT /1.1/users/{id}/services/dnd`.
 */
import { Hono } from "hono";
import * as z from "zod";
import { type AppEnv, readBody } from "../lib/http.ts";
import { bodyObject, required } from "../lib/body_schema.ts";
import { requireAcl } from "../lib/auth/guard.ts";
import { idempotent } from "../lib/idempotency.ts";
import type { Services } from "../lib/services.ts";
import { changeDnd, pathUser, SERVICE_BODY, SUCCESS, SUCCESS_BODY } from "../lib/control.ts";
import { operation } from "../lib/openapi/operation.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const dndSchema = z.lazy(() => bodyObject({ state: z.boolean(required("a boolean")) }));

export function dndRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens } = services;
  const acl = requireAcl(tokens, "svc.rest.dnd.{username}.create");
  return new Hono<AppEnv>()
    .post(
      "/dnd/:username",
      acl,
      idempotent(services),
      operation(() => ({
        summary: "Sets a user's do-not-disturb",
        body: dndSchema,
        responses: { 200: SUCCESS_BODY },
        errors: {
          400: "`JsonBodyNotFound`, `JsonErrorDecoding`, `UserNotFound`",
          503: "`Unreachable`: the PBX is",
        },
      }), async (c) => {
        const { state } = await readBody(c, dndSchema, SERVICE_BODY);
        const user = await pathUser(store, c.req.param("username") ?? "");
        await changeDnd(services, user, state);
        return c.json(SUCCESS);
      }),
    );
}

/**
 * `POST /dnd/{username}` (web service users, ACL `svc.rest.dnd.{username}.create`): sets a user's
 * do-not-disturb through `lib/user_services.ts`, the same change as the configuration daemon's
 * `PUT /1.1/users/{id}/services/dnd`. Also the helpers the other control routes share (body and
 * path user of the spec's errors 7).
 */
import { Hono } from "hono";
import { z } from "zod";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, type BodyCodes, bodyObject, readBody, required } from "../lib/http.ts";
import { requireAcl } from "../lib/auth/guard.ts";
import type { Services } from "../lib/services.ts";
import type { Store } from "../lib/store/store.ts";
import { findUserByUsername, type UserRecord } from "../lib/store/users.ts";
import { setDnd, type UserServicesResult } from "../lib/user_services.ts";

/** The answer of every dial, DND and forward route. */
export const SUCCESS = { res: "success" } as const;

/** The codes of the spec's errors 7 (DND, forwards). */
export const SERVICE_BODY: BodyCodes = {
  missing: "JsonBodyNotFound",
  invalid: "JsonErrorDecoding",
};

/** The user a path names by username; 400 `UserNotFound` when there is none. */
export async function pathUser(store: Store, username: string): Promise<UserRecord> {
  const user = await findUserByUsername(store, username);
  if (!user) throw userNotFound(username);
  return user;
}

export const userNotFound = (username: string) =>
  new ApiError(400, "UserNotFound", `user ${username} not found`);

/** A change through `lib/user_services.ts`: the user may have been deleted since it was read. */
export async function changed(
  username: string,
  change: Promise<UserServicesResult | null>,
): Promise<void> {
  if (!await change) throw userNotFound(username);
}

const dndSchema = bodyObject({ state: z.boolean(required("a boolean")) });

export function dndRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens } = services;
  return new Hono<AppEnv>()
    /** Body `{state: boolean}`; 400 `JsonBodyNotFound`, `JsonErrorDecoding`, `UserNotFound`. */
    .post("/dnd/:username", requireAcl(tokens, "svc.rest.dnd.{username}.create"), async (c) => {
      const { state } = await readBody(c, dndSchema, SERVICE_BODY);
      const username = c.req.param("username");
      const user = await pathUser(store, username);
      await changed(username, setDnd(services, user.id, state));
      return c.json(SUCCESS);
    });
}

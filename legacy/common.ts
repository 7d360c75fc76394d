/**
 * What the 1.0 routes share: their paths (each accepted with and without the spec's trailing
 * slash) and the path user, who is connected by every call naming it (spec: "every method
 * auto-connects the user").
 */
import type { Context } from "hono";
import { pathUser, pathUserId, userNotFound } from "../lib/control.ts";
import { pathValueProblem } from "../lib/path_values.ts";
import type { Services } from "../lib/services.ts";
import { markConnected } from "../lib/store/connections.ts";
import type { UserRecord } from "../lib/store/users.ts";

/**
 * `path` and `path/`: the spec writes 1.0 paths with a trailing slash, clients often drop it.
 *
 * @example
 * app.on("POST", both("/dnd/:domain/:username"), handler);
 */
export const both = (path: string): string[] => [path, `${path}/`];

/** The `username` of a route's path (the routes on several paths do not type their params). */
export const pathUsername = (c: Context): string => c.req.param("username") ?? "";

/**
 * The user named `username` (400 `UserNotFound` when none), without connecting it. A value no
 * username can be (`lib/path_values.ts`: too long, a control character) is not looked up.
 */
export async function legacyUser({ store }: Services, username: string): Promise<UserRecord> {
  return await pathUser(store, lookedUp(username));
}

/** `username`, when it may name a user; else 400 `UserNotFound` (see {@link legacyUser}). */
function lookedUp(username: string): string {
  if (pathValueProblem(username)) {
    throw userNotFound(username.length > 64 ? `${username.slice(0, 64)}…` : username);
  }
  return username;
}

/**
 * Connects the user `userId` for the token time to live from now (decisions §2: a user connected
 * through the 1.0 API counts as connected within the token TTL), as a login would.
 */
export async function connect({ store, clock, config }: Services, userId: number) {
  const now = clock.now();
  await markConnected(store, userId, now, now + config.tokenTtl * 1000);
}

/** The user named `username`, connected: what every 1.0 route with a username starts with. */
export async function connectedUser(services: Services, username: string): Promise<UserRecord> {
  const user = await legacyUser(services, username);
  await connect(services, user.id);
  return user;
}

/** {@link connectedUser}'s id, for the routes that need no more (`pathUserId`). */
export async function connectedUserId(services: Services, username: string): Promise<number> {
  const userId = await pathUserId(services.store, lookedUp(username));
  await connect(services, userId);
  return userId;
}

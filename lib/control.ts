/**
 * What the control routes of the 2.0 API (dial, DND, forwards, history) and of the deprecated 1.0
 * API share: their success answer, the body codes of the spec's errors 7, the user their path
 * names, and how a DND or forward change is answered.
 */
import * as z from "zod";
import { ApiError, PlatformUnavailable } from "./errors.ts";
import type { BodyCodes } from "./http.ts";
import type { Platform } from "./platform/port.ts";
import type { Store } from "./store/store.ts";
import {
  findUserByUsername,
  findUserIdByUsername,
  type ForwardKind,
  type UserRecord,
} from "./store/users.ts";
import {
  type ForwardChange,
  InvalidUserServices,
  setDnd,
  setForward,
  type UserServicesDeps,
  type UserServicesResult,
} from "./user_services.ts";

/** The answer of every dial, DND and forward route. */
export const SUCCESS = { res: "success" } as const;

/** {@link SUCCESS}'s schema, for the OpenAPI document; built on first use (docs/performance.md). */
export const SUCCESS_BODY = z.lazy(() => z.object({ res: z.literal("success") }));

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

/** {@link pathUser}'s id, for the routes that need no more (read only when something changed). */
export async function pathUserId(store: Store, username: string): Promise<number> {
  const id = await findUserIdByUsername(store, username);
  if (id === null) throw userNotFound(username);
  return id;
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

/**
 * A control route's DND or forward change needs the PBX now (decisions §12): while it is
 * unreachable the route answers 503 `Unreachable` and nothing changes. (The configuration
 * daemon's `/1.1` changes are stored and reach the PBX when it is back.)
 */
function needPlatform(platform: Pick<Platform, "reachable">, user: UserRecord): void {
  // with several PBX servers: the one the user's line is on
  if (!platform.reachable(user)) throw new PlatformUnavailable("the PBX is unreachable");
}

type ControlDeps = UserServicesDeps & { platform: Pick<Platform, "reachable"> };

/** Sets `user`'s DND; a user deleted meanwhile answers 400 `UserNotFound`. */
export async function changeDnd(deps: ControlDeps, user: UserRecord, state: boolean) {
  needPlatform(deps.platform, user);
  await changed(user.username ?? String(user.id), setDnd(deps, user, state));
}

/**
 * Sets one of `user`'s forwards; a change the rules refuse (enabled without a destination, a
 * destination too long) answers 400 `BadRequest`, a user deleted meanwhile 400 `UserNotFound`.
 */
export async function changeForward(
  deps: ControlDeps,
  user: UserRecord,
  kind: ForwardKind,
  change: ForwardChange,
): Promise<void> {
  needPlatform(deps.platform, user);
  try {
    await changed(user.username ?? String(user.id), setForward(deps, user, kind, change));
  } catch (error) {
    if (error instanceof InvalidUserServices) throw new ApiError(400, "BadRequest", error.message);
    throw error;
  }
}

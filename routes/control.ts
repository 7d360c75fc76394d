/**
 * What the control routes of web service users (dial, DND, forwards, history) share: their success
 * answer, the body codes of the spec's errors 7, and the user their path names.
 */
import { ApiError } from "../lib/errors.ts";
import type { BodyCodes } from "../lib/http.ts";
import type { Store } from "../lib/store/store.ts";
import { findUserByUsername, type UserRecord } from "../lib/store/users.ts";
import type { UserServicesResult } from "../lib/user_services.ts";

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

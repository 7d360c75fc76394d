/**
 * Call permissions: rules that allow or deny calling some extensions (`mode` allow|deny), optionally
 * unlocked by a password. Many to many with users (`users.callpermission_ids` ↔
 * `callpermissions.user_ids`). `name` is unique.
 */
import { Collection, type Transaction } from "./records.ts";
import type { Store } from "./store.ts";
import { type UserRecord, users } from "./users.ts";

export type CallPermissionMode = "allow" | "deny";

export interface CallPermissionRecord {
  id: number;
  name: string;
  password: string | null;
  mode: CallPermissionMode;
  /** Extensions or Asterisk patterns the rule applies to. */
  extensions: string[];
  enabled: boolean;
  description: string | null;
  user_ids: number[];
}

/** Call permissions by id; `name` is unique. */
export const callPermissions = new Collection<CallPermissionRecord>("callpermissions", {
  name: (permission) => permission.name,
});

/** The call permission `id`, or null. */
export const getCallPermission = (store: Store, id: number) => callPermissions.get(store, id);

/** The call permissions of a user, in the user's association order (for call routing). */
export async function callPermissionsOfUser(
  store: Store,
  user: Pick<UserRecord, "callpermission_ids">,
): Promise<CallPermissionRecord[]> {
  const found = await Promise.all(
    user.callpermission_ids.map((id) => getCallPermission(store, id)),
  );
  return found.filter((permission) => permission !== null);
}

/** Writes both sides of user ↔ call permission in `tx`; the caller checked they are not linked. */
export function linkUserCallPermission(
  tx: Transaction,
  user: UserRecord,
  permission: CallPermissionRecord,
) {
  tx.put(users, { ...user, callpermission_ids: [...user.callpermission_ids, permission.id] });
  tx.put(callPermissions, { ...permission, user_ids: [...permission.user_ids, user.id] });
}

/** Removes both sides of user ↔ call permission in `tx`. */
export function unlinkUserCallPermission(
  tx: Transaction,
  user: UserRecord,
  permission: CallPermissionRecord,
) {
  tx.put(users, {
    ...user,
    callpermission_ids: user.callpermission_ids.filter((id) => id !== permission.id),
  });
  tx.put(callPermissions, {
    ...permission,
    user_ids: permission.user_ids.filter((id) => id !== user.id),
  });
}

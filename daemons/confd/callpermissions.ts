/**
 * `/1.1/callpermissions`, `/1.1/users/{id}/callpermissions` and
 * `/1.1/callpermissions/{id}/users`: rules allowing or denying extensions (each kept once), many
 * to many with users.
 */
import type { Context } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import {
  type CallPermissionRecord,
  callPermissions,
  linkUserCallPermission,
  unlinkUserCallPermission,
} from "../../lib/store/callpermissions.ts";
import type { Transaction } from "../../lib/store/records.ts";
import type { UserRecord } from "../../lib/store/users.ts";
import { fields, pathId } from "./body.ts";
import { bodyRecords, getOr404, loadOr404, type Resource, resourceRoutes } from "./crud.ts";
import { associationHandler, listOf, userListHandler, withUsers } from "./entities.ts";
import { describe, resourceError } from "./errors.ts";
import { exten } from "./extensions.ts";
import { confdAcl } from "./guard.ts";

const LABEL = "CallPermission";

/** The body (a function: `bodyRecords` builds the schemas on first use, not at every start). */
const schema = () =>
  z.object({
    name: fields.name(128).regex(/^[a-zA-Z0-9_-]+$/, "Must be letters, digits, - or _."),
    password: z.string().regex(/^\d{1,16}$/, "Must be 1 to 16 digits.").nullable().optional(),
    mode: z.enum(["allow", "deny"]).optional(),
    // an extension given twice is kept once, in the place it first appears
    extensions: z.array(exten()).transform((list) => [...new Set(list)]).optional(),
    enabled: fields.boolean().optional(),
    description: fields.text(1024).optional(),
  });

export const callPermissionResource: Resource<
  CallPermissionRecord,
  ReturnType<typeof withUsers>
> = {
  path: "/callpermissions",
  label: LABEL,
  collection: callPermissions,
  view: withUsers,
  fields: ["id", "name", "password", "mode", "enabled", "description"],
  search: ["name", "description"],
  ...bodyRecords(callPermissions, schema, {
    password: null,
    mode: "deny",
    extensions: [],
    enabled: true,
    description: null,
    user_ids: [],
  }),
  beforeDelete(_tx, permission) {
    if (permission.user_ids.length) throw resourceError(`${LABEL} is associated with a User`);
    return Promise.resolve();
  },
};

/** An association item of the user ↔ call permission lists. */
const item = (user_id: number, call_permission_id: number) => ({ user_id, call_permission_id });

/** The call permission CRUD routes and the user ↔ call permission routes. */
export function callPermissionRoutes(services: Services) {
  const { store, tokens } = services;
  const one = "/users/:id/callpermissions/:callpermission_id";
  const acl = "confd.users.{id}.callpermissions.{callpermission_id}";

  /** The path's call permission, or 404. */
  const load = (tx: Transaction, c: Context<AppEnv>) =>
    loadOr404(tx, callPermissions, LABEL, pathId(c, LABEL, "callpermission_id"));
  const linked = (user: UserRecord, permission: CallPermissionRecord) =>
    user.callpermission_ids.includes(permission.id);
  const quoted = (user: UserRecord, permission: CallPermissionRecord) =>
    describe(item(user.id, permission.id));

  return resourceRoutes(services, callPermissionResource)
    .get(
      "/users/:id/callpermissions",
      confdAcl(tokens, "confd.users.{id}.callpermissions.read"),
      userListHandler(store, (user) => user.callpermission_ids.map((id) => item(user.id, id))),
    )
    .put(
      one,
      confdAcl(tokens, `${acl}.update`),
      associationHandler(
        store,
        load,
        (user, permission) =>
          linked(user, permission)
            ? `User is already associated with this ${LABEL} ${quoted(user, permission)}`
            : null,
        linkUserCallPermission,
      ),
    )
    .delete(
      one,
      confdAcl(tokens, `${acl}.delete`),
      associationHandler(
        store,
        load,
        (user, permission) =>
          linked(user, permission)
            ? null
            : `User is not associated with this ${LABEL} ${quoted(user, permission)}`,
        unlinkUserCallPermission,
      ),
    )
    .get(
      "/callpermissions/:id/users",
      confdAcl(tokens, "confd.callpermissions.{id}.users.read"),
      async (c) => {
        const id = pathId(c, LABEL);
        const permission = await getOr404(store, callPermissions, LABEL, id);
        return c.json(listOf(permission.user_ids.map((userId) => item(userId, id))));
      },
    );
}

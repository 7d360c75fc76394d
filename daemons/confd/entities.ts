/**
 * `/1.1/entities` and `/1.1/users/{id}/entities`: the organisation a user belongs to. Also the
 * helpers every `/users/{id}/…` association route of voicemails and call permissions shares.
 */
import type { Context } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { entities, type EntityRecord } from "../../lib/store/entities.ts";
import { transact, Transaction } from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import { type UserRecord, users } from "../../lib/store/users.ts";
import { fields, pathId } from "./body.ts";
import { bodyRecords, loadOr404, type Resource, resourceRoutes } from "./crud.ts";
import { resourceError } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { loadUser } from "./users.ts";

/** The user a path names by integer id or uuid (`loadUser` of the users routes), or 404. */
export const readUser = (store: Store, idOrUuid = "") => loadUser(new Transaction(store), idOrUuid);

/**
 * A PUT or DELETE `/users/{id}/<things>/{thing_id}` handler: reads the path's user and thing in one
 * transaction, answers 400 `Resource Error - <refusal>` when `refusal` gives one, otherwise applies
 * `change` and answers 204.
 */
export function associationHandler<T>(
  store: Store,
  load: (tx: Transaction, c: Context<AppEnv>) => Promise<T>,
  refusal: (user: UserRecord, thing: T) => string | null,
  change: (tx: Transaction, user: UserRecord, thing: T) => void,
) {
  return async (c: Context<AppEnv>) => {
    await transact(store, async (tx) => {
      const user = await loadUser(tx, c.req.param("id") ?? "");
      const thing = await load(tx, c);
      const refused = refusal(user, thing);
      if (refused) throw resourceError(refused);
      change(tx, user, thing);
    });
    return c.body(null, 204);
  };
}

/** A list answer `{total, items}` holding every item. */
export const listOf = <T>(items: T[]) => ({ total: items.length, items });

/** A GET `/users/{id}/<things>` handler: `{total, items}` of the `items` of the path's user. */
export function userListHandler<T>(store: Store, items: (user: UserRecord) => T[]) {
  return async (c: Context<AppEnv>): Promise<Response> =>
    c.json(listOf(items(await readUser(store, c.req.param("id")))));
}

/** The view of a record's `user_ids`: `users: [{id}]`. */
export function withUsers<T extends { user_ids: number[] }>(record: T) {
  const { user_ids, ...rest } = record;
  return { ...rest, users: user_ids.map((id) => ({ id })) };
}

/** The body (a function: `bodyRecords` builds the schemas on first use, not at every start). */
const schema = () =>
  z.object({
    name: fields.name(64).regex(/^[a-zA-Z0-9_.-]+$/, "Must be letters, digits, ., - or _."),
    display_name: fields.text(128).optional(),
    description: fields.text(1024).optional(),
  });

export const entityResource: Resource<EntityRecord, EntityRecord> = {
  path: "/entities",
  label: "Entity",
  collection: entities,
  view: (entity) => entity,
  fields: ["id", "name", "display_name", "description"],
  search: ["name", "display_name", "description"],
  ...bodyRecords(entities, schema, { display_name: null, description: null }),
  async beforeDelete(tx, entity) {
    // read through the transaction: a user joining the entity meanwhile makes the delete rerun
    if ((await tx.all(users)).some((user) => user.entity_id === entity.id)) {
      throw resourceError("Entity is associated with a User");
    }
  },
};

/** The entity CRUD routes and the user ↔ entity routes (one entity per user, PUT replaces it). */
export function entityRoutes(services: Services) {
  const { store, tokens } = services;
  return resourceRoutes(services, entityResource)
    .get(
      "/users/:id/entities",
      confdAcl(tokens, "confd.users.{id}.entities.read"),
      userListHandler(
        store,
        ({ id, entity_id }) => entity_id === null ? [] : [{ user_id: id, entity_id }],
      ),
    )
    .put(
      "/users/:id/entities/:entity_id",
      confdAcl(tokens, "confd.users.{id}.entities.{entity_id}.update"),
      async (c) => {
        const entityId = pathId(c, "Entity", "entity_id");
        await transact(store, async (tx) => {
          const user = await loadUser(tx, c.req.param("id") ?? "");
          await loadOr404(tx, entities, "Entity", entityId);
          tx.put(users, { ...user, entity_id: entityId });
        });
        return c.body(null, 204);
      },
    );
}

/**
 * Entities: the organisations users belong to. A user belongs to at most one entity
 * (`users.entity_id`); the entity keeps no list, so its users are found by reading users.
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";
import { type UserRecord, users } from "./users.ts";

export interface EntityRecord {
  id: number;
  name: string;
  display_name: string | null;
  description: string | null;
}

/** Entities by id; `name` is unique. */
export const entities = new Collection<EntityRecord>("entities", {
  name: (entity) => entity.name,
});

/** The entity `id`, or null. */
export const getEntity = (store: Store, id: number) => entities.get(store, id);
/** The entity called `name`, or null. */
export const findEntity = (store: Store, name: string) => entities.findBy(store, "name", name);

/** The users that belong to entity `id`. */
export async function usersOfEntity(store: Store, id: number): Promise<UserRecord[]> {
  return (await users.all(store)).filter((user) => user.entity_id === id);
}

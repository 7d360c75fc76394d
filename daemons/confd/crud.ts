/**
 * The five routes most resources share — list, create, get, update, delete — built from one
 * description of the resource, with the conventions of decisions §10: POST 201 with `Location`,
 * GET 200, PUT 204 (partial update), DELETE 204, ACLs `confd.<acl>.read|create` and
 * `confd.<acl>.{id}.read|update|delete`.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import {
  type Collection,
  transact,
  type Transaction,
  UniqueConflict,
} from "../../lib/store/records.ts";
import { pathId, readBody } from "./body.ts";
import { alreadyExists, type ConfdError, notFound } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { listItems } from "./list.ts";

type Item = Record<string, unknown>;

export interface Resource<T extends { id: number }, V extends object> {
  /** Path below `/1.1`, e.g. `/lines`. */
  path: string;
  /** ACL word, e.g. `lines` for `confd.lines.read`. */
  acl: string;
  /** Name in messages, e.g. `Line`. */
  label: string;
  collection: Collection<T>;
  /** The API shape of a record (write-only fields left out). */
  view(record: T): V;
  /** Fields of the view: what `order` and filters may name. */
  fields: readonly string[];
  /** Text fields that `search` looks in. */
  search: readonly string[];
  /** Validates a POST body and builds the record; may read other records in `tx`. */
  create(tx: Transaction, body: Item, id: number): Promise<T>;
  /** Validates a PUT body and answers the changed record. */
  update(tx: Transaction, current: T, body: Item): Promise<T>;
  /** Refuses (throws) when the record is still associated; may update other records. */
  beforeDelete?(tx: Transaction, current: T): Promise<void>;
  /** The error for a taken unique value; default `<label> already exists ('field': value)`. */
  conflict?(error: UniqueConflict): ConfdError;
}

const anyObject = z.looseObject({});

/** Runs a write, answering the resource's error when a unique value is taken. */
export async function withConflicts<R>(
  resource: { label: string; conflict?(error: UniqueConflict): ConfdError },
  write: () => Promise<R>,
): Promise<R> {
  try {
    return await write();
  } catch (error) {
    if (!(error instanceof UniqueConflict)) throw error;
    throw resource.conflict?.(error) ??
      alreadyExists(resource.label, { [error.field]: [error.value].flat().join(", ") });
  }
}

/**
 * The routes of `resource`.
 *
 * @example
 * app.route("/", resourceRoutes(services, contexts));
 */
export function resourceRoutes<T extends { id: number }, V extends object>(
  services: Services,
  resource: Resource<T, V>,
) {
  const { store, tokens } = services;
  const { path, acl, label, collection } = resource;
  const one = `${path}/:id`;

  /** The record of the path's id, read in `tx`, or 404. */
  async function load(tx: Transaction, id: number): Promise<T> {
    const record = await tx.get(collection, id);
    if (!record) throw notFound(label, { id });
    return record;
  }

  return new Hono<AppEnv>()
    .get(path, confdAcl(tokens, `confd.${acl}.read`), async (c) => {
      const records = await collection.all(store);
      return c.json(
        listItems(c, records.map(resource.view), {
          fields: resource.fields,
          search: resource.search,
        }),
      );
    })
    .post(path, confdAcl(tokens, `confd.${acl}.create`), async (c) => {
      const body = await readBody(c, anyObject);
      const id = await collection.nextId(store);
      const record = await withConflicts(resource, () =>
        transact(store, async (tx) => {
          const created = await resource.create(tx, body, id);
          tx.put(collection, created);
          return created;
        }));
      c.header("Location", `/1.1${path}/${record.id}`);
      return c.json(resource.view(record), 201);
    })
    .get(one, confdAcl(tokens, `confd.${acl}.{id}.read`), async (c) => {
      const id = pathId(c, label);
      const record = await collection.get(store, id);
      if (!record) throw notFound(label, { id });
      return c.json(resource.view(record));
    })
    .put(one, confdAcl(tokens, `confd.${acl}.{id}.update`), async (c) => {
      const id = pathId(c, label);
      const body = await readBody(c, anyObject);
      await withConflicts(resource, () =>
        transact(store, async (tx) => {
          const updated = await resource.update(tx, await load(tx, id), body);
          tx.put(collection, { ...updated, id });
        }));
      return c.body(null, 204);
    })
    .delete(one, confdAcl(tokens, `confd.${acl}.{id}.delete`), async (c) => {
      const id = pathId(c, label);
      await transact(store, async (tx) => {
        const current = await load(tx, id);
        await resource.beforeDelete?.(tx, current);
        tx.remove(collection, id);
      });
      return c.body(null, 204);
    });
}

/**
 * The five routes most resources share — list, create, get, update, delete — built from one
 * description of the resource, with the conventions of decisions §10: POST 201 with `Location`,
 * GET 200, PUT 204 (partial update), DELETE 204, ACLs `confd.<acl>.read|create` and
 * `confd.<acl>.{id}.read|update|delete`, where `<acl>` is the path with dots (`/endpoints/sip`:
 * `endpoints.sip`). Ids are integers unless the resource says how to read and make them; views may
 * read other records.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { type Collection, transact, Transaction, UniqueConflict } from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import { check, integerId, readBody } from "./body.ts";
import { alreadyExists, type ConfdError, notFound } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { listBody, listItems, listQuery } from "./list.ts";
import { operation } from "../../lib/openapi/operation.ts";

type Item = Record<string, unknown>;
type Id = number | string;

/** How a resource names its records in paths and gives new ones an id. */
interface Ids<I extends Id> {
  /** The path parameter naming one record, e.g. `uuid`; default `id`. */
  param?: string;
  /** The id a path value names, or null when it cannot name one (404). */
  parseId(raw: string): I | null;
  /** The id of a record about to be created. */
  newId(store: Store): Promise<I>;
}

/** How records are shown: one by one, or all at once when their views read other records. */
type Views<T, V> =
  | {
    /** The API shape of a record (write-only and hidden fields left out). */
    view(record: T): V;
  }
  | {
    /** The API shapes of `records`, in order; may read other records. */
    views(store: Store, records: T[]): Promise<V[]>;
  };

interface Description<T extends { id: Id }, C, U> {
  /** Path below `/1.1`, e.g. `/lines`; the ACLs follow it. */
  path: string;
  /** Name in messages, e.g. `Line`. */
  label: string;
  collection: Collection<T>;
  /** Fields of the view: what `order` and filters may name. */
  fields: readonly string[];
  /** Text fields that `search` looks in. */
  search: readonly string[];
  /**
   * Checks POST and PUT bodies before an id is made or a record read, answering what `create` and
   * `update` get; without it they get any JSON object and check it themselves.
   */
  bodies?: { create(body: Item): C; update(body: Item): U };
  /** Builds the record from a POST body (checking it unless `bodies` did); may read in `tx`. */
  create(tx: Transaction, body: C, id: T["id"]): Promise<T>;
  /** Answers the record a PUT body changes (checking it unless `bodies` did). */
  update(tx: Transaction, current: T, body: U): Promise<T>;
  /** Refuses (throws) when the record is still associated; may update other records. */
  beforeDelete?(tx: Transaction, current: T): Promise<void>;
  /** Deletes what belongs to the record alone, once it is deleted (`store` outside `tx`). */
  afterDelete?(store: Store, deleted: T): Promise<void>;
  /** The error for a taken unique value; default `<label> already exists ('field': value)`. */
  conflict?(error: UniqueConflict): ConfdError;
  /** The bodies POST and PUT read and the view, for the OpenAPI document (any object if unset). */
  schemas?: { create?: z.ZodType; update?: z.ZodType; view?: z.ZodType };
}

/**
 * A resource for {@link resourceRoutes}: `T` its record, `V` its view, `C` and `U` what `create`
 * and `update` get (any JSON object unless `bodies` checks it first). Ids are integers 1, 2, 3…
 * unless `parseId` and `newId` say otherwise, as ids that are not integers need.
 */
export type Resource<T extends { id: Id }, V extends object, C = Item, U = C> =
  & Description<T, C, U>
  & Views<T, V>
  & Partial<Ids<T["id"]>>;

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const anyObject = z.lazy(() => z.looseObject({}));

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

/** The record `id` of `collection`, read in `tx`, or 404 naming `label` (and `param`). */
export async function loadOr404<T extends { id: Id }>(
  tx: Transaction,
  collection: Collection<T>,
  label: string,
  id: T["id"],
  param = "id",
): Promise<T> {
  const record = await tx.get(collection, id);
  if (!record) throw notFound(label, { [param]: id });
  return record;
}

/** The record `id` of `collection`, read from `store`, or 404 naming `label` (and `param`). */
export function getOr404<T extends { id: Id }>(
  store: Store,
  collection: Collection<T>,
  label: string,
  id: T["id"],
  param = "id",
): Promise<T> {
  return loadOr404(new Transaction(store), collection, label, id, param);
}

/** The keys of `O` that cannot be undefined: the fields a body must give. */
type RequiredKeys<O> = { [K in keyof O]-?: undefined extends O[K] ? never : K }[keyof O];

/**
 * `create` and `update` for records of `collection` that are their body: POST makes
 * `{id, ...defaults, ...body}` from a body the schema `object` builds accepts, PUT changes the
 * fields sent. `collection` only gives the record type; `defaults` must hold every field the body
 * may omit. The schemas are built on first use (`z.lazy`), not at every start
 * (docs/performance.md).
 *
 * @example
 * const schema = () => z.object({ name: fields.name(128) });
 * const writes = bodyRecords(labels, schema, { description: null });
 */
export function bodyRecords<T extends { id: number }, S extends z.ZodObject>(
  _collection: Collection<T>,
  object: () => S,
  defaults: Omit<T, "id" | RequiredKeys<z.output<S>>>,
) {
  const schema = z.lazy(object);
  const partial = z.lazy(() => object().partial());
  return {
    schemas: { create: schema, update: partial },
    create: (_tx: Transaction, body: Item, id: number) =>
      Promise.resolve({ id, ...structuredClone(defaults), ...check(schema, body) } as T),
    update: (_tx: Transaction, current: T, body: Item) =>
      Promise.resolve({ ...current, ...check(partial, body) } as T),
  };
}

/** The resource's ids, integers of its collection's sequence unless it says otherwise. */
function idsOf<T extends { id: Id }>(
  resource: Partial<Ids<T["id"]>> & { collection: Collection<T> },
): Required<Ids<T["id"]>> {
  return {
    param: resource.param ?? "id",
    parseId: resource.parseId ?? integerId,
    newId: resource.newId ?? ((store) => resource.collection.nextId(store)),
  } as Required<Ids<T["id"]>>;
}

/** The resource's `views`, or its `view` of each record. */
function viewsOf<T, V>(resource: Views<T, V>): (store: Store, records: T[]) => Promise<V[]> {
  if ("views" in resource) return (store, records) => resource.views(store, records);
  return (_store, records) => Promise.resolve(records.map((record) => resource.view(record)));
}

/**
 * The routes of `resource`.
 *
 * @example
 * app.route("/", resourceRoutes(services, contextResource));
 */
export function resourceRoutes<T extends { id: Id }, V extends object, C, U>(
  services: Services,
  resource: Resource<T, V, C, U>,
): Hono<AppEnv> {
  const { store, tokens } = services;
  const { path, label, collection } = resource;
  const { param, parseId, newId } = idsOf<T>(resource);
  const views = viewsOf(resource);
  const viewOf = async (record: T) => (await views(store, [record]))[0]!;
  const acl = `confd.${path.slice(1).replaceAll("/", ".")}`;
  const one = `${path}/:${param}`;

  /** The id of the path, or 404 when it cannot name a record. */
  const idOf = (c: Context): T["id"] => {
    const raw = c.req.param(param) ?? "";
    const id = parseId(raw);
    if (id === null) throw notFound(label, { [param]: raw });
    return id;
  };

  const view = resource.schemas?.view ?? anyObject;
  const notFoundError = { 404: `\`Resource Not Found - ${label} was not found …\`` };
  return new Hono<AppEnv>()
    .get(
      path,
      confdAcl(tokens, `${acl}.read`),
      operation(() => ({
        summary: `Lists the ${label.toLowerCase()} records`,
        description: `Filters: \`?<field>=<value>\` for ${resource.fields.join(", ")}.`,
        query: listQuery(),
        responses: { 200: listBody(view) },
      }), async (c) => {
        const items = await views(store, await collection.all(store));
        return c.json(listItems(c, items, { fields: resource.fields, search: resource.search }));
      }),
    )
    .post(
      path,
      confdAcl(tokens, `${acl}.create`),
      operation(() => ({
        summary: `Creates a ${label.toLowerCase()} record`,
        body: resource.schemas?.create ?? anyObject,
        responses: { 201: view },
        errors: { 400: "`Input Error - …`, `Resource Error - … already exists …`" },
      }), async (c) => {
        const body = await readBody(c, anyObject);
        const input = resource.bodies ? resource.bodies.create(body) : body as C;
        const id = await newId(store);
        const record = await withConflicts(resource, () =>
          transact(store, async (tx) => {
            const created = await resource.create(tx, input, id);
            tx.put(collection, created);
            return created;
          }));
        c.header("Location", `/1.1${path}/${record.id}`);
        return c.json(await viewOf(record), 201);
      }),
    )
    .get(
      one,
      confdAcl(tokens, `${acl}.{${param}}.read`),
      operation(() => ({
        summary: `One ${label.toLowerCase()} record`,
        responses: { 200: view },
        errors: notFoundError,
      }), async (c) => {
        const record = await getOr404(store, collection, label, idOf(c), param);
        return c.json(await viewOf(record));
      }),
    )
    .put(
      one,
      confdAcl(tokens, `${acl}.{${param}}.update`),
      operation(() => ({
        summary: `Changes the fields sent of a ${label.toLowerCase()} record`,
        body: resource.schemas?.update ?? anyObject,
        responses: { 204: null },
        errors: { ...notFoundError, 400: "`Input Error - …`, `Resource Error - …`" },
      }), async (c) => {
        const id = idOf(c);
        const body = await readBody(c, anyObject);
        const input = resource.bodies ? resource.bodies.update(body) : body as U;
        await withConflicts(resource, () =>
          transact(store, async (tx) => {
            const current = await loadOr404(tx, collection, label, id, param);
            tx.put(collection, { ...await resource.update(tx, current, input), id });
          }));
        return c.body(null, 204);
      }),
    )
    .delete(
      one,
      confdAcl(tokens, `${acl}.{${param}}.delete`),
      operation(() => ({
        summary: `Deletes a ${label.toLowerCase()} record`,
        responses: { 204: null },
        errors: { ...notFoundError, 400: "`Resource Error - … is associated with …`" },
      }), async (c) => {
        const id = idOf(c);
        const deleted = await transact(store, async (tx) => {
          const current = await loadOr404(tx, collection, label, id, param);
          await resource.beforeDelete?.(tx, current);
          tx.remove(collection, id);
          return current;
        });
        await resource.afterDelete?.(store, deleted);
        return c.body(null, 204);
      }),
    );
}

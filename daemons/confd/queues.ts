/**
 * `/1.1/queues`: queues with their agent members (`PUT|DELETE /queues/{id}/members/agents/{id}`,
 * body `{penalty}`) and the call qualifications they offer
 * (`GET /queues/{id}/call_qualifications`, `PUT|DELETE /queues/{id}/call_qualifications/{id}`).
 * A queue's `number`, when set, lies in a queue range of its context and is unique there; its
 * name never changes. Also holds what this area's resources share: {@link flexibleResourceRoutes}
 * (routes for resources whose view reads other records or whose ids are UUIDs) and
 * {@link loadOr404}.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { agents } from "../../lib/store/agents.ts";
import { callbackListsOfQueue } from "../../lib/store/callback_lists.ts";
import {
  callQualifications,
  qualificationRecordsOfQueue,
} from "../../lib/store/call_qualifications.ts";
import { contexts, inRanges } from "../../lib/store/contexts.ts";
import {
  buildQueue,
  type QueueRecord,
  queues,
  withMember,
  withoutMember,
} from "../../lib/store/queues.ts";
import {
  type Collection,
  transact,
  type Transaction,
  type UniqueConflict,
} from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import { check, fields, pathId, readBody } from "./body.ts";
import {
  CALL_QUALIFICATION_FIELDS,
  CALL_QUALIFICATION_SEARCH,
  callQualificationView,
} from "./call_qualifications.ts";
import { type Resource, resourceRoutes, withConflicts } from "./crud.ts";
import { alreadyExists, type ConfdError, inputError, notFound, resourceError } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { listItems } from "./list.ts";

type Item = Record<string, unknown>;
type Id = string | number;

// --- shared by this area's resources (candidates for crud.ts) ---

/** The record `id` of `collection`, read in `tx`, or 404 naming `label`. */
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

/**
 * A resource the routes of crud.ts cannot serve because its view reads other records (an agent's
 * queues) or its ids are not integers (callback lists' UUIDs); otherwise the same conventions.
 */
export interface FlexibleResource<T extends { id: Id }, V extends object> {
  path: string;
  acl: string;
  label: string;
  collection: Collection<T>;
  fields: readonly string[];
  search: readonly string[];
  /** The path parameter naming one record, e.g. `uuid`. */
  param: string;
  /** The id a path value names, or null when it cannot name one (404). */
  parseId(raw: string): T["id"] | null;
  newId(store: Store): Promise<T["id"]>;
  /** The API shapes of `records`, in order; may read other records. */
  views(store: Store, records: T[]): Promise<V[]>;
  create(tx: Transaction, body: Item, id: T["id"]): Promise<T>;
  update(tx: Transaction, current: T, body: Item): Promise<T>;
  beforeDelete?(tx: Transaction, current: T): Promise<void>;
  conflict?(error: UniqueConflict): ConfdError;
}

/** Integer ids, 1, 2, 3…, for a {@link FlexibleResource}. */
export const integerIds = <T extends { id: number }>(collection: Collection<T>) => ({
  param: "id",
  parseId: (raw: string) => /^\d{1,15}$/.test(raw) ? Number(raw) : null,
  newId: (store: Store) => collection.nextId(store),
});

const anyObject = z.looseObject({});

/**
 * List, create, get, update and delete routes of `resource`, as `resourceRoutes` of crud.ts
 * builds them.
 *
 * @example
 * app.route("/", flexibleResourceRoutes(services, callbackListResource));
 */
export function flexibleResourceRoutes<T extends { id: Id }, V extends object>(
  services: Services,
  resource: FlexibleResource<T, V>,
) {
  const { store, tokens } = services;
  const { path, acl, label, collection, param } = resource;
  const one = `${path}/:${param}`;
  const idOf = (c: Context): T["id"] => {
    const raw = c.req.param(param) ?? "";
    const id = resource.parseId(raw);
    if (id === null) throw notFound(label, { [param]: raw });
    return id;
  };
  const viewOf = async (record: T) => (await resource.views(store, [record]))[0]!;

  return new Hono<AppEnv>()
    .get(path, confdAcl(tokens, `confd.${acl}.read`), async (c) => {
      const views = await resource.views(store, await collection.all(store));
      return c.json(listItems(c, views, { fields: resource.fields, search: resource.search }));
    })
    .post(path, confdAcl(tokens, `confd.${acl}.create`), async (c) => {
      const body = await readBody(c, anyObject);
      const id = await resource.newId(store);
      const record = await withConflicts(resource, () =>
        transact(store, async (tx) => {
          const created = await resource.create(tx, body, id);
          tx.put(collection, created);
          return created;
        }));
      c.header("Location", `/1.1${path}/${record.id}`);
      return c.json(await viewOf(record), 201);
    })
    .get(one, confdAcl(tokens, `confd.${acl}.{${param}}.read`), async (c) => {
      const id = idOf(c);
      const record = await collection.get(store, id);
      if (!record) throw notFound(label, { [param]: id });
      return c.json(await viewOf(record));
    })
    .put(one, confdAcl(tokens, `confd.${acl}.{${param}}.update`), async (c) => {
      const id = idOf(c);
      const body = await readBody(c, anyObject);
      await withConflicts(resource, () =>
        transact(store, async (tx) => {
          const current = await loadOr404(tx, collection, label, id, param);
          tx.put(collection, { ...await resource.update(tx, current, body), id });
        }));
      return c.body(null, 204);
    })
    .delete(one, confdAcl(tokens, `confd.${acl}.{${param}}.delete`), async (c) => {
      const id = idOf(c);
      await transact(store, async (tx) => {
        const current = await loadOr404(tx, collection, label, id, param);
        await resource.beforeDelete?.(tx, current);
        tx.remove(collection, id);
      });
      return c.body(null, 204);
    });
}

// --- queues ---

export type QueueView = Omit<QueueRecord, "members"> & {
  agents: { id: number; penalty: number }[];
};

const editable = {
  display_name: fields.text(128).optional(),
  number: z.string().regex(/^\d{1,40}$/, "Must be 1 to 40 digits.").nullable().optional(),
  context: fields.name(39).optional(),
  wrapup_seconds: fields.integer(0, 86400).optional(),
};

const createSchema = z.object({
  name: fields.name(128).regex(/^[a-zA-Z0-9_-]+$/, "Must be letters, digits, - or _."),
  ...editable,
});

const updateSchema = z.object({ name: z.unknown().optional(), ...editable });

const penaltySchema = z.object({ penalty: fields.integer(0, 2147483647).optional() });

const queueView = ({ members, ...queue }: QueueRecord): QueueView => ({
  ...queue,
  agents: members.map((member) => ({ id: member.agent_id, penalty: member.penalty })),
});

/** Refuses a context that does not exist, or a number outside its queue ranges. */
async function checkPlacement(tx: Transaction, queue: QueueRecord): Promise<void> {
  const context = await tx.findBy(contexts, "name", queue.context);
  if (!context) {
    throw inputError("context", `Context was not found ('name': '${queue.context}')`);
  }
  if (queue.number !== null && !inRanges(queue.number, context.queue_ranges)) {
    throw inputError(
      "number",
      `Number '${queue.number}' is not in a queue range of context '${queue.context}'.`,
    );
  }
}

/**
 * Checks that the queue `id` a body refers to (in `field`) exists, and writes it back unchanged in
 * `tx`: a concurrent delete of the queue then retries and sees the reference `tx` adds.
 */
export async function touchQueue(tx: Transaction, id: number, field: string): Promise<void> {
  const queue = await tx.get(queues, id);
  if (!queue) throw inputError(field, `Queue was not found ('id': ${id})`);
  tx.put(queues, queue);
}

export const queueResource: Resource<QueueRecord, QueueView> = {
  path: "/queues",
  acl: "queues",
  label: "Queue",
  collection: queues,
  view: queueView,
  fields: ["id", "name", "display_name", "number", "context", "wrapup_seconds"],
  search: ["name", "display_name", "number"],
  async create(tx, body, id) {
    const queue = buildQueue(id, check(createSchema, body));
    await checkPlacement(tx, queue);
    return queue;
  },
  async update(tx, current, body) {
    const { name, ...input } = check(updateSchema, body);
    if (name !== undefined && name !== current.name) {
      throw inputError("name", "A queue's name cannot be changed.");
    }
    const queue = { ...current, ...input };
    if (input.number !== undefined || input.context !== undefined) await checkPlacement(tx, queue);
    return queue;
  },
  /** What refers to the queue is read outside `tx`; writers adding a reference touch the queue. */
  async beforeDelete(tx, queue) {
    if (queue.members.length) throw resourceError("Queue is associated with an Agent");
    if ((await qualificationRecordsOfQueue(tx.store, queue.id)).length) {
      throw resourceError("Queue is associated with a CallQualification");
    }
    if ((await callbackListsOfQueue(tx.store, queue.id)).length) {
      throw resourceError("Queue is associated with a CallbackList");
    }
  },
  conflict(error) {
    if (error.field !== "number") return alreadyExists("Queue", { [error.field]: error.value });
    const [number, context] = [error.value].flat();
    return alreadyExists("Queue", { number, context });
  },
};

/** Agent members: associate (or change the penalty) and dissociate. */
function memberRoutes({ store, tokens }: Services) {
  const path = "/queues/:id/members/agents/:agent_id";
  const acl = "confd.queues.{id}.members.agents.{agent_id}";
  /** Applies `change` to the queue, the agent written back so a concurrent delete sees it. */
  const write = (c: Context, change: (queue: QueueRecord, agentId: number) => QueueRecord) =>
    transact(store, async (tx) => {
      const queue = await loadOr404(tx, queues, "Queue", pathId(c, "Queue"));
      const agent = await loadOr404(tx, agents, "Agent", pathId(c, "Agent", "agent_id"));
      tx.put(queues, change(queue, agent.id));
      tx.put(agents, agent);
    });

  return new Hono<AppEnv>()
    .put(path, confdAcl(tokens, `${acl}.update`), async (c) => {
      const body = (await c.req.text()).trim() ? await readBody(c, penaltySchema) : {};
      await write(c, (queue, agentId) => withMember(queue, agentId, body.penalty ?? 0));
      return c.body(null, 204);
    })
    .delete(path, confdAcl(tokens, `${acl}.delete`), async (c) => {
      await write(c, withoutMember);
      return c.body(null, 204);
    });
}

/** The call qualifications a queue offers: list, associate, dissociate. */
function qualificationRoutes({ store, tokens }: Services) {
  const path = "/queues/:id/call_qualifications/:qualification_id";
  const acl = "confd.queues.{id}.call_qualifications.{qualification_id}";
  /** Changes the qualification's `queue_ids`, the queue written back so a delete sees it. */
  const write = (c: Context, change: (ids: number[], queueId: number) => number[]) =>
    transact(store, async (tx) => {
      const queue = await loadOr404(tx, queues, "Queue", pathId(c, "Queue"));
      const id = pathId(c, "CallQualification", "qualification_id");
      const qualification = await loadOr404(tx, callQualifications, "CallQualification", id);
      tx.put(callQualifications, {
        ...qualification,
        queue_ids: change(qualification.queue_ids, queue.id),
      });
      tx.put(queues, queue);
    });

  return new Hono<AppEnv>()
    .get(
      "/queues/:id/call_qualifications",
      confdAcl(tokens, "confd.queues.{id}.call_qualifications.read"),
      async (c) => {
        const id = pathId(c, "Queue");
        if (!await queues.get(store, id)) throw notFound("Queue", { id });
        const offered = await qualificationRecordsOfQueue(store, id);
        return c.json(
          listItems(c, offered.map(callQualificationView), {
            fields: CALL_QUALIFICATION_FIELDS,
            search: CALL_QUALIFICATION_SEARCH,
          }),
        );
      },
    )
    .put(path, confdAcl(tokens, `${acl}.update`), async (c) => {
      await write(c, (ids, queueId) => ids.includes(queueId) ? ids : [...ids, queueId]);
      return c.body(null, 204);
    })
    .delete(path, confdAcl(tokens, `${acl}.delete`), async (c) => {
      await write(c, (ids, queueId) => ids.filter((id) => id !== queueId));
      return c.body(null, 204);
    });
}

export function queueRoutes(services: Services) {
  const app = new Hono<AppEnv>();
  app.route("/", memberRoutes(services));
  app.route("/", qualificationRoutes(services));
  app.route("/", resourceRoutes(services, queueResource));
  return app;
}

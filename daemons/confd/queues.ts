/**
 * `/1.1/queues`: queues with their agent members (`PUT|DELETE /queues/{id}/members/agents/{id}`,
 * body `{penalty}`) and the call qualifications they offer
 * (`GET /queues/{id}/call_qualifications`, `PUT|DELETE /queues/{id}/call_qualifications/{id}`).
 * A queue's `number`, when set, lies in a queue range of its context and is unique there; its
 * name never changes.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import { changeMembership } from "../../lib/agent_control.ts";
import type { AppEnv } from "../../lib/http.ts";
import { forgetQueue } from "../../lib/rights/profiles.ts";
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
import { transact, type Transaction } from "../../lib/store/records.ts";
import { check, fields, pathId, readBody } from "./body.ts";
import {
  CALL_QUALIFICATION_FIELDS,
  CALL_QUALIFICATION_SEARCH,
  callQualificationView,
} from "./call_qualifications.ts";
import { getOr404, loadOr404, type Resource, resourceRoutes } from "./crud.ts";
import { alreadyExists, inputError, resourceError } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { listItems } from "./list.ts";

export type QueueView = Omit<QueueRecord, "members"> & {
  agents: { id: number; penalty: number }[];
};

/** The fields a queue's creation and change share (a function: built with the schemas, on use). */
const editable = () => ({
  display_name: fields.text(128).optional(),
  number: z.string().regex(/^\d{1,40}$/, "Must be 1 to 40 digits.").nullable().optional(),
  context: fields.name(39).optional(),
  wrapup_seconds: fields.integer(0, 86400).optional(),
});

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const createSchema = z.lazy(() =>
  z.object({
    name: fields.name(128).regex(/^[a-zA-Z0-9_-]+$/, "Must be letters, digits, - or _."),
    ...editable(),
  })
);

const updateSchema = z.lazy(() => z.object({ name: z.unknown().optional(), ...editable() }));

const penaltySchema = z.lazy(() => z.object({ penalty: fields.integer(0, 2147483647).optional() }));

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
    await forgetQueue(tx, queue.id); // no supervisor's rights profile names it any more
  },
  conflict(error) {
    if (error.field !== "number") return alreadyExists("Queue", { [error.field]: error.value });
    const [number, context] = [error.value].flat();
    return alreadyExists("Queue", { number, context });
  },
};

/** Agent members: associate (or change the penalty) and dissociate. */
function memberRoutes(services: Services) {
  const { tokens } = services;
  const path = "/queues/:id/members/agents/:agent_id";
  const acl = "confd.queues.{id}.members.agents.{agent_id}";
  /** Applies `change` to the queue; a logged-in agent follows it live (lib/agent_control.ts). */
  const write = (c: Context, change: (queue: QueueRecord, agentId: number) => QueueRecord) =>
    changeMembership(services, async (tx) => ({
      queue: await loadOr404(tx, queues, "Queue", pathId(c, "Queue")),
      agent: await loadOr404(tx, agents, "Agent", pathId(c, "Agent", "agent_id")),
    }), (queue, agent) => change(queue, agent.id));

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
        await getOr404(store, queues, "Queue", id);
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

/**
 * `/1.1/callback_lists` (decisions §6): callback lists addressed by UUID, each for an existing
 * queue, with named periods (`HH:MM` to `HH:MM`, exactly one the default). A list created without
 * periods gets the default period `All day` 00:00-23:59. Deleting a list deletes its callback
 * requests and their tickets.
 */
import * as z from "zod";
import type { Services } from "../../lib/services.ts";
import {
  buildCallbackList,
  type CallbackListRecord,
  callbackLists,
  type CallbackPeriod,
} from "../../lib/store/callback_lists.ts";
import { deleteCallbackRequestsOfList } from "../../lib/store/callback_requests.ts";
import { check, fields } from "./body.ts";
import { type Resource, resourceRoutes } from "./crud.ts";
import { touchQueue } from "./queues.ts";

export type CallbackListView = Omit<CallbackListRecord, "id">;

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const periods = z.lazy(() => {
  const time = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, "Must be a time HH:MM.");
  const period = z.object({
    name: fields.name(128),
    periodStart: time,
    periodEnd: time,
    default: fields.boolean().optional(),
  }).refine((p) => p.periodStart < p.periodEnd, "periodEnd must be after periodStart.");
  return z.array(period).superRefine((list, ctx) => {
    if (list.filter((p) => p.default).length !== 1) {
      ctx.addIssue({ code: "custom", message: "Exactly one period must be the default." });
    }
    const names = list.map((p) => p.name);
    const repeated = names.findIndex((name, i) => names.indexOf(name) !== i);
    if (repeated >= 0) {
      ctx.addIssue({ code: "custom", path: [repeated, "name"], message: "Repeated period name." });
    }
  });
});

/** A list's body (a function: the schemas below build it on first use). */
const listObject = () =>
  z.object({
    name: fields.name(128),
    queue_id: z.number().int("Not a valid integer.").positive("Must be greater than 0."),
    periods: periods.optional(),
  });

const createSchema = z.lazy(listObject);
const updateSchema = z.lazy(() => listObject().partial());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Periods as stored: every one says whether it is the default. */
const complete = (list: z.infer<typeof periods> | undefined): CallbackPeriod[] | undefined =>
  list?.map((p) => ({ ...p, default: p.default ?? false }));

export const callbackListResource: Resource<CallbackListRecord, CallbackListView> = {
  path: "/callback_lists",
  label: "CallbackList",
  collection: callbackLists,
  param: "uuid",
  parseId: (raw) => UUID.test(raw.toLowerCase()) ? raw.toLowerCase() : null,
  newId: () => Promise.resolve(crypto.randomUUID()),
  fields: ["uuid", "name", "queue_id"],
  search: ["name"],
  view: ({ id: _, ...list }) => list,
  async create(tx, body, uuid) {
    const input = check(createSchema, body);
    await touchQueue(tx, input.queue_id, "queue_id");
    return buildCallbackList({ ...input, periods: complete(input.periods), uuid });
  },
  async update(tx, current, body) {
    const { periods, ...input } = check(updateSchema, body);
    if (input.queue_id !== undefined) await touchQueue(tx, input.queue_id, "queue_id");
    return { ...current, ...input, periods: complete(periods) ?? current.periods };
  },
  // the list's callback requests and their tickets go with it: they belong to no other list
  afterDelete: (store, list) => deleteCallbackRequestsOfList(store, list.uuid),
};

export function callbackListRoutes(services: Services) {
  return resourceRoutes(services, callbackListResource);
}

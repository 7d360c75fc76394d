/**
 * `/1.1/call_qualifications` (decisions §4): qualifications with their sub-qualifications. Queues
 * offer them through `/1.1/queues/{id}/call_qualifications/{qualification_id}` (see `queues.ts`);
 * the view shows those queues as `queues` (`[{id}]`, read-only).
 */
import * as z from "zod";
import type { Services } from "../../lib/services.ts";
import {
  buildCallQualification,
  type CallQualificationRecord,
  callQualifications,
  numberSubQualifications,
  type SubQualification,
  type SubQualificationInput,
} from "../../lib/store/call_qualifications.ts";
import { check, fields } from "./body.ts";
import { type Resource, resourceRoutes } from "./crud.ts";
import { inputError, resourceError } from "./errors.ts";

export interface CallQualificationView {
  id: number;
  name: string;
  sub_qualifications: SubQualification[];
  queues: { id: number }[];
}

/** A qualification's body (a function: the schemas below build it on first use). */
const qualificationObject = () =>
  z.object({
    name: fields.name(128),
    sub_qualifications: z.array(z.object({
      id: z.number().int("Not a valid integer.").positive("Must be greater than 0.").optional(),
      name: fields.name(128),
    })).optional(),
  });

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const createSchema = z.lazy(qualificationObject);
const updateSchema = z.lazy(() => qualificationObject().partial());

/** The API shape of a qualification. */
export const callQualificationView = (record: CallQualificationRecord): CallQualificationView => ({
  id: record.id,
  name: record.name,
  sub_qualifications: record.sub_qualifications,
  queues: record.queue_ids.map((id) => ({ id })),
});

export const CALL_QUALIFICATION_FIELDS = ["id", "name"] as const;
export const CALL_QUALIFICATION_SEARCH = ["name"] as const;

/**
 * The sub-qualifications a PUT sends, checked against the current ones: an `id` must be one of
 * them (it keeps it, with the new name) and appear once.
 */
function keptIds(current: SubQualification[], sent: SubQualificationInput[]) {
  const known = new Set(current.map((sub) => sub.id));
  const seen = new Set<number>();
  for (const [i, sub] of sent.entries()) {
    if (sub.id === undefined) continue;
    if (!known.has(sub.id)) {
      throw inputError(
        `sub_qualifications.${i}.id`,
        `SubQualification was not found ('id': ${sub.id})`,
      );
    }
    if (seen.has(sub.id)) throw inputError(`sub_qualifications.${i}.id`, "Repeated id.");
    seen.add(sub.id);
  }
  return sent;
}

export const callQualificationResource: Resource<CallQualificationRecord, CallQualificationView> = {
  path: "/call_qualifications",
  label: "CallQualification",
  collection: callQualifications,
  view: callQualificationView,
  fields: CALL_QUALIFICATION_FIELDS,
  search: CALL_QUALIFICATION_SEARCH,
  create(tx, body, id) {
    const input = check(createSchema, body);
    const subs = (input.sub_qualifications ?? []).map(({ name }) => ({ name })); // ids are ours
    return buildCallQualification(tx.store, id, { name: input.name, sub_qualifications: subs });
  },
  async update(tx, current, body) {
    const input = check(updateSchema, body);
    const sent = input.sub_qualifications;
    const subs = sent === undefined
      ? current.sub_qualifications
      : await numberSubQualifications(tx.store, keptIds(current.sub_qualifications, sent));
    return { ...current, name: input.name ?? current.name, sub_qualifications: subs };
  },
  beforeDelete(_tx, current) {
    if (current.queue_ids.length) {
      throw resourceError("CallQualification is associated with a Queue");
    }
    return Promise.resolve();
  },
};

export function callQualificationRoutes(services: Services) {
  return resourceRoutes(services, callQualificationResource);
}

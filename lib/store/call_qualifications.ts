/**
 * Call qualifications (decisions §4): the configuration daemon's `/1.1/call_qualifications`
 * records, each with its sub-qualifications and the queues it is offered on (`queue_ids`). The
 * 2.0 API reads them with {@link qualificationsOfQueue} and {@link findSubQualification}.
 * Sub-qualification ids come from one global sequence, so an id names one sub-qualification
 * whatever its qualification.
 */
import { Collection, nextId } from "./records.ts";
import type { Store } from "./store.ts";

export interface SubQualification {
  id: number;
  name: string;
}

export interface CallQualificationRecord {
  id: number;
  name: string;
  sub_qualifications: SubQualification[];
  /** The queues offering this qualification, in association order. */
  queue_ids: number[];
}

export const callQualifications = new Collection<CallQualificationRecord>("call_qualifications");

/** A sub-qualification to store: one with an `id` keeps it, one without gets a new one. */
export interface SubQualificationInput {
  id?: number;
  name: string;
}

export interface NewCallQualification {
  name: string;
  sub_qualifications?: SubQualificationInput[];
  queue_ids?: number[];
}

/** Gives every sub-qualification without an id the next id of the global sequence. */
export async function numberSubQualifications(
  store: Store,
  subs: SubQualificationInput[],
): Promise<SubQualification[]> {
  const numbered: SubQualification[] = [];
  for (const sub of subs) {
    numbered.push({ id: sub.id ?? await nextId(store, "sub_qualifications"), name: sub.name });
  }
  return numbered;
}

/** A complete record: new sub-qualifications numbered, no queue unless given. */
export async function buildCallQualification(
  store: Store,
  id: number,
  input: NewCallQualification,
): Promise<CallQualificationRecord> {
  return {
    id,
    name: input.name,
    sub_qualifications: await numberSubQualifications(store, input.sub_qualifications ?? []),
    queue_ids: input.queue_ids ?? [],
  };
}

/**
 * Creates a call qualification; nothing is checked (the caller makes sure the queues exist).
 *
 * @example
 * await createCallQualification(store, { name: "Sale", sub_qualifications: [{ name: "Won" }] });
 */
export async function createCallQualification(
  store: Store,
  input: NewCallQualification,
): Promise<CallQualificationRecord> {
  const id = await callQualifications.nextId(store);
  return await callQualifications.put(store, await buildCallQualification(store, id, input));
}

export const getCallQualification = (store: Store, id: number) => callQualifications.get(store, id);
/** Every call qualification, in id order. */
export const listCallQualifications = (store: Store) => callQualifications.all(store);

/** The qualification records offered on `queueId`, in id order. */
export async function qualificationRecordsOfQueue(
  store: Store,
  queueId: number,
): Promise<CallQualificationRecord[]> {
  return (await listCallQualifications(store)).filter((q) => q.queue_ids.includes(queueId));
}

/**
 * The qualifications of a queue in the 2.0 API's shape (decisions §4); `[]` for an unknown queue.
 *
 * @example
 * const offered = await qualificationsOfQueue(store, 1); // [{id, name, subQualifications}]
 */
export async function qualificationsOfQueue(
  store: Store,
  queueId: number,
): Promise<{ id: number; name: string; subQualifications: SubQualification[] }[]> {
  return (await qualificationRecordsOfQueue(store, queueId)).map((q) => ({
    id: q.id,
    name: q.name,
    subQualifications: q.sub_qualifications.map(({ id, name }) => ({ id, name })),
  }));
}

/** The sub-qualification of id `id` with its qualification, or null when there is none. */
export async function findSubQualification(
  store: Store,
  id: number,
): Promise<{ subQualification: SubQualification; qualification: CallQualificationRecord } | null> {
  for (const qualification of await listCallQualifications(store)) {
    const subQualification = qualification.sub_qualifications.find((sub) => sub.id === id);
    if (subQualification) return { subQualification, qualification };
  }
  return null;
}

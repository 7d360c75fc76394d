/**
 * Queues: the configuration daemon's `/1.1/queues` records. A queue keeps its agent members
 * (`members`, with their penalty); `number`, when set, is unique within the queue's context, so
 * the telephony simulator can find the queue a dialled number reaches.
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export interface QueueMember {
  agent_id: number;
  /** 0 is the highest priority. */
  penalty: number;
}

export interface QueueRecord {
  id: number;
  /** Letters, digits, `-` and `_`; unique; it never changes once created. */
  name: string;
  display_name: string | null;
  /** Digits in a queue range of `context`, or null. */
  number: string | null;
  /** A context's name. */
  context: string;
  wrapup_seconds: number;
  /** Agent members in association order. */
  members: QueueMember[];
}

export const queues = new Collection<QueueRecord>("queues", {
  name: (queue) => queue.name,
  number: (queue) => queue.number === null ? null : [queue.number, queue.context],
});

/** The fields a new queue may be given; the others take their defaults. */
export type NewQueue = Pick<QueueRecord, "name"> & Partial<Omit<QueueRecord, "id" | "name">>;

/** A complete queue record: context `default`, no number, no wrap-up time, no member. */
export function buildQueue(id: number, input: NewQueue): QueueRecord {
  return {
    id,
    display_name: null,
    number: null,
    context: "default",
    wrapup_seconds: 0,
    members: [],
    ...input,
  };
}

/**
 * Creates a queue; throws `UniqueConflict` when its name, or its number in its context, is taken.
 * Nothing else is checked (the caller makes sure the context and the agents exist).
 *
 * @example
 * await createQueue(store, { name: "sales", number: "3000", members: [{ agent_id: 1, penalty: 0 }] });
 */
export async function createQueue(store: Store, input: NewQueue): Promise<QueueRecord> {
  return await queues.put(store, buildQueue(await queues.nextId(store), input));
}

/** `queue` with `agentId` as a member of `penalty` (its penalty changed when it already is one). */
export function withMember(queue: QueueRecord, agentId: number, penalty: number): QueueRecord {
  const known = queue.members.some((member) => member.agent_id === agentId);
  const members = known
    ? queue.members.map((member) => member.agent_id === agentId ? { ...member, penalty } : member)
    : [...queue.members, { agent_id: agentId, penalty }];
  return { ...queue, members };
}

/** `queue` without `agentId` among its members. */
export function withoutMember(queue: QueueRecord, agentId: number): QueueRecord {
  return { ...queue, members: queue.members.filter((member) => member.agent_id !== agentId) };
}

export const getQueue = (store: Store, id: number) => queues.get(store, id);
export const findQueueByName = (store: Store, name: string) => queues.findBy(store, "name", name);
/** The queue that `number` reaches in `context`, if any. */
export const findQueueByNumber = (store: Store, number: string, context: string) =>
  queues.findBy(store, "number", [number, context]);
/** Every queue, in id order. */
export const listQueues = (store: Store) => queues.all(store);

/** An agent's membership of a queue: the queue's id and name, the agent's penalty in it. */
export interface Membership {
  id: number;
  name: string;
  penalty: number;
}

/** Each agent's memberships, per list of queues (a collection's cached list is one array). */
const membershipIndexes = new WeakMap<readonly QueueRecord[], Map<number, Membership[]>>();

/**
 * The memberships of every agent among `queueList`, by agent id, each agent's in list order:
 * built once per list, so that a list of every agent costs one pass over the queues, not one per
 * agent. Read-only; an agent in no queue is absent.
 *
 * @example
 * const queuesOf = membershipsByAgent(await listQueues(store));
 * const first = queuesOf.get(agent.id)?.[0];
 */
export function membershipsByAgent(
  queueList: readonly QueueRecord[],
): ReadonlyMap<number, readonly Readonly<Membership>[]> {
  let index = membershipIndexes.get(queueList);
  if (!index) {
    index = new Map();
    for (const queue of queueList) {
      for (const member of queue.members) {
        const membership = { id: queue.id, name: queue.name, penalty: member.penalty };
        const known = index.get(member.agent_id);
        if (known) known.push(membership);
        else index.set(member.agent_id, [membership]);
      }
    }
    membershipIndexes.set(queueList, index);
  }
  return index;
}

/** The memberships of `agentId` among `queueList`: queue id, name and penalty, in list order. */
export function membershipsOf(queueList: readonly QueueRecord[], agentId: number): Membership[] {
  return (membershipsByAgent(queueList).get(agentId) ?? []).map((membership) => ({
    ...membership,
  }));
}

/** The queues `agentId` is a member of, with its penalty in each, in queue id order. */
export async function queuesOfAgent(store: Store, agentId: number) {
  return membershipsOf(await listQueues(store), agentId);
}

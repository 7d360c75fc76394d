/**
 * Callback lists (decisions §6): the configuration daemon's `/1.1/callback_lists` records, each
 * for one queue, with the periods its callback requests are due in. Lists are addressed by UUID;
 * the 2.0 API's import finds a request's period with {@link periodOf}.
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export interface CallbackPeriod {
  name: string;
  /** `HH:MM`. */
  periodStart: string;
  /** `HH:MM`, after `periodStart`. */
  periodEnd: string;
  /** Exactly one period of a list is the default. */
  default: boolean;
}

export interface CallbackListRecord {
  /** The same as `uuid`: the record's key. */
  id: string;
  uuid: string;
  name: string;
  queue_id: number;
  periods: CallbackPeriod[];
}

export const callbackLists = new Collection<CallbackListRecord>("callback_lists");

/** The period of a list created without periods. */
export const DEFAULT_PERIOD: CallbackPeriod = {
  name: "All day",
  periodStart: "00:00",
  periodEnd: "23:59",
  default: true,
};

export interface NewCallbackList {
  name: string;
  queue_id: number;
  /** Absent or empty: one default period, {@link DEFAULT_PERIOD}. */
  periods?: CallbackPeriod[];
  uuid?: string;
}

/** A complete record with a new UUID unless given. */
export function buildCallbackList(input: NewCallbackList): CallbackListRecord {
  const uuid = input.uuid ?? crypto.randomUUID();
  const periods = input.periods?.length ? input.periods : [{ ...DEFAULT_PERIOD }];
  return { id: uuid, uuid, name: input.name, queue_id: input.queue_id, periods };
}

/**
 * Creates a callback list; nothing is checked (the caller makes sure the queue exists).
 *
 * @example
 * const list = await createCallbackList(store, { name: "Sales callbacks", queue_id: 1 });
 */
export async function createCallbackList(
  store: Store,
  input: NewCallbackList,
): Promise<CallbackListRecord> {
  return await callbackLists.put(store, buildCallbackList(input));
}

export const getCallbackList = (store: Store, uuid: string) => callbackLists.get(store, uuid);
/** Every callback list, in UUID order. */
export const listCallbackLists = (store: Store) => callbackLists.all(store);

/** The lists of `queueId`. */
export async function callbackListsOfQueue(
  store: Store,
  queueId: number,
): Promise<CallbackListRecord[]> {
  return (await listCallbackLists(store)).filter((list) => list.queue_id === queueId);
}

/**
 * The period named `name` in `list`, the default period when `name` is empty, or null when the
 * list has no such period.
 */
export function periodOf(list: CallbackListRecord, name: string): CallbackPeriod | null {
  return list.periods.find((period) => name === "" ? period.default : period.name === name) ??
    null;
}

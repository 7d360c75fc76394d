/**
 * Contexts: numbering plans (`default` internal, `from-extern` incall, `to-extern` outcall). Their
 * ranges decide which extensions users, queues and conferences may take. Addressed by id; other
 * records refer to a context by its `name`.
 */
import { Collection, transact } from "./records.ts";
import type { Store } from "./store.ts";

export type ContextType = "internal" | "incall" | "outcall" | "services" | "others";

export interface NumberRange {
  start: string;
  end: string;
}

export interface ContextRecord {
  id: number;
  name: string;
  display_name: string | null;
  type: ContextType;
  description: string | null;
  enabled: boolean;
  user_ranges: NumberRange[];
  queue_ranges: NumberRange[];
  /**
   * The numbers conferences (static meeting rooms) take their extension from (Wazo's field);
   * absent from a context stored before it existed: none.
   */
  conference_room_ranges?: NumberRange[];
}

export const contexts = new Collection<ContextRecord>("contexts", {
  name: (context) => context.name,
});

export const findContext = (store: Store, name: string) => contexts.findBy(store, "name", name);

/** True when `exten` falls in one of `ranges` (same length, numerically between the bounds). */
export function inRanges(exten: string, ranges: NumberRange[]): boolean {
  return ranges.some((range) =>
    /^\d+$/.test(exten) && exten.length === range.start.length &&
    Number(exten) >= Number(range.start) && Number(exten) <= Number(range.end)
  );
}

/** The contexts decisions §1 creates in an empty store. */
export const DEFAULT_CONTEXTS: Omit<ContextRecord, "id">[] = [
  {
    name: "default",
    display_name: "Default",
    type: "internal",
    description: null,
    enabled: true,
    user_ranges: [{ start: "1000", end: "1999" }],
    queue_ranges: [{ start: "3000", end: "3099" }],
    conference_room_ranges: [{ start: "4000", end: "4099" }],
  },
  {
    name: "from-extern",
    display_name: "Incalls",
    type: "incall",
    description: null,
    enabled: true,
    user_ranges: [],
    queue_ranges: [],
    conference_room_ranges: [],
  },
  {
    name: "to-extern",
    display_name: "Outcalls",
    type: "outcall",
    description: null,
    enabled: true,
    user_ranges: [],
    queue_ranges: [],
    conference_room_ranges: [],
  },
];

/** Creates the default contexts when the store has no context at all; answers whether it did. */
export async function ensureDefaultContexts(store: Store): Promise<boolean> {
  if ((await store.list({ prefix: [contexts.name] }, { limit: 1 })).length > 0) return false;
  const ids: number[] = [];
  for (const _ of DEFAULT_CONTEXTS) ids.push(await contexts.nextId(store));
  return await transact(store, async (tx) => {
    for (const [i, context] of DEFAULT_CONTEXTS.entries()) {
      if (await tx.findBy(contexts, "name", context.name)) return false; // another process did
      tx.put(contexts, { id: ids[i]!, ...context });
    }
    return true;
  });
}

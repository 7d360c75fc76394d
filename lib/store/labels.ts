/** Labels: named tags for users (`/1.1/labels`); `name` is unique. */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export interface LabelRecord {
  id: number;
  name: string;
  description: string | null;
}

/** Labels by id; `name` is unique. */
export const labels = new Collection<LabelRecord>("labels", { name: (label) => label.name });

/** The label `id`, or null. */
export const getLabel = (store: Store, id: number) => labels.get(store, id);
/** The label called `name`, or null. */
export const findLabel = (store: Store, name: string) => labels.findBy(store, "name", name);

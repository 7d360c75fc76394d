/** `/1.1/labels`: named tags for users, `name` unique. */
import * as z from "zod";
import type { Services } from "../../lib/services.ts";
import { type LabelRecord, labels } from "../../lib/store/labels.ts";
import { fields } from "./body.ts";
import { bodyRecords, type Resource, resourceRoutes } from "./crud.ts";

/** The body (a function: `bodyRecords` builds the schemas on first use, not at every start). */
const schema = () =>
  z.object({
    name: fields.name(128),
    description: fields.text(1024).optional(),
  });

export const labelResource: Resource<LabelRecord, LabelRecord> = {
  path: "/labels",
  label: "Label",
  collection: labels,
  view: (label) => label,
  fields: ["id", "name", "description"],
  search: ["name", "description"],
  ...bodyRecords(labels, schema, { description: null }),
};

/** The label CRUD routes. */
export function labelRoutes(services: Services) {
  return resourceRoutes(services, labelResource);
}

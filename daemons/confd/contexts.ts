/**
 * `/1.1/contexts`: numbering plans with the ranges users, queues and conferences take their numbers
 * from.
 */
import * as z from "zod";
import { type ContextRecord, contexts } from "../../lib/store/contexts.ts";
import { extensions } from "../../lib/store/extensions.ts";
import { lines } from "../../lib/store/lines.ts";
import { queues } from "../../lib/store/queues.ts";
import { voicemails } from "../../lib/store/voicemails.ts";
import { check, fields } from "./body.ts";
import type { Resource } from "./crud.ts";
import { inputError, resourceError } from "./errors.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const range = z.lazy(() =>
  z.object({
    start: z.string().regex(/^\d{1,16}$/, "Must be digits."),
    end: z.string().regex(/^\d{1,16}$/, "Must be digits."),
  }).refine(
    (r) => r.start.length === r.end.length && Number(r.start) <= Number(r.end),
    "end must have the length of start and not be below it.",
  )
);

/** The fields a context's creation and change share (a function: built with the schemas, on use). */
const editable = () => ({
  display_name: fields.text(128).optional(),
  type: z.enum(["internal", "incall", "outcall", "services", "others"]).optional(),
  description: fields.text(1024).optional(),
  enabled: fields.boolean().optional(),
  user_ranges: z.array(range).optional(),
  queue_ranges: z.array(range).optional(),
  conference_room_ranges: z.array(range).optional(),
});

const createSchema = z.lazy(() =>
  z.object({
    name: fields.name(39).regex(/^[a-zA-Z0-9_-]+$/, "Must be letters, digits, - or _."),
    ...editable(),
  })
);

const updateSchema = z.lazy(() => z.object({ name: z.unknown().optional(), ...editable() }));

const FIELDS = [
  "id",
  "name",
  "display_name",
  "type",
  "description",
  "enabled",
  "user_ranges",
  "queue_ranges",
  "conference_room_ranges",
] as const;

export const contextResource: Resource<ContextRecord, ContextRecord> = {
  path: "/contexts",
  label: "Context",
  collection: contexts,
  // a context stored before conference room ranges existed has none
  view: (context) => ({ ...context, conference_room_ranges: context.conference_room_ranges ?? [] }),
  fields: FIELDS,
  search: ["name", "display_name", "description"],
  schemas: { create: createSchema, update: updateSchema },
  create(_tx, body, id) {
    const input = check(createSchema, body);
    return Promise.resolve({
      id,
      display_name: null,
      type: "internal",
      description: null,
      enabled: true,
      user_ranges: [],
      queue_ranges: [],
      conference_room_ranges: [],
      ...input,
    });
  },
  async beforeDelete(tx, context) {
    const inContext = (records: { context: string }[]) =>
      records.some((record) => record.context === context.name);
    const users: [string, Promise<{ context: string }[]>][] = [
      ["Extension", tx.all(extensions)],
      ["Line", tx.all(lines)],
      ["Voicemail", tx.all(voicemails)],
      ["Queue", tx.all(queues)],
    ];
    for (const [label, records] of users) {
      if (inContext(await records)) throw resourceError(`Context is associated with a ${label}`);
    }
  },
  update(_tx, current, body) {
    const { name, ...input } = check(updateSchema, body);
    if (name !== undefined && name !== current.name) {
      throw inputError("name", "A context's name cannot be changed.");
    }
    return Promise.resolve({ ...current, ...input });
  },
};

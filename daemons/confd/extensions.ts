/**
 * `/1.1/extensions`: numbers in a context, `(exten, context)` unique. An extension a line holds
 * keeps to the context's user ranges when it changes (and the line's caller id number follows it),
 * one a conference holds to its conference room ranges; neither can be deleted.
 */
import * as z from "zod";
import type { Services } from "../../lib/services.ts";
import { type ContextRecord, contexts, inRanges } from "../../lib/store/contexts.ts";
import { followMainUserIn, lines, sameCallerId } from "../../lib/store/lines.ts";
import { EXTEN_PATTERN, type ExtensionRecord, extensions } from "../../lib/store/extensions.ts";
import { meetings } from "../../lib/store/meetings.ts";
import type { Transaction } from "../../lib/store/records.ts";
import { check, fields } from "./body.ts";
import { type Resource, resourceRoutes } from "./crud.ts";
import { alreadyExists, describe, inputError, resourceError } from "./errors.ts";

/** The context named by a body's `context` field, read in `tx`, or 400 naming the field. */
export async function requireContext(tx: Transaction, name: string): Promise<ContextRecord> {
  const context = await tx.findBy(contexts, "name", name);
  if (!context) throw inputError("context", `Context was not found ${describe({ name })}`);
  return context;
}

/** An extension or an Asterisk pattern, 40 characters at most. */
export const exten = () =>
  fields.name(40).regex(
    EXTEN_PATTERN,
    "Must be digits, * or #, or a pattern starting with _.",
  );

/** An extension's body (a function: the schemas below build it on first use). */
const extensionObject = () =>
  z.object({
    exten: exten(),
    context: fields.name(39),
    enabled: fields.boolean().optional(),
  });

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const schema = z.lazy(extensionObject);
const updateSchema = z.lazy(() => extensionObject().partial());

/** The API shape: `line` and `conference` instead of their ids. */
function view({ line_id, conference_id, ...extension }: ExtensionRecord) {
  return {
    ...extension,
    line: line_id === null ? null : { id: line_id },
    conference: conference_id == null ? null : { id: conference_id },
  };
}

export const extensionResource: Resource<ExtensionRecord, ReturnType<typeof view>> = {
  path: "/extensions",
  label: "Extension",
  collection: extensions,
  view,
  fields: ["id", "exten", "context", "enabled"],
  search: ["exten", "context"],
  async create(tx, body, id) {
    const input = check(schema, body);
    await requireContext(tx, input.context);
    await requireNoMeeting(tx, input);
    return { id, enabled: true, line_id: null, ...input };
  },
  async update(tx, current, body) {
    const next = { ...current, ...check(updateSchema, body) };
    if (next.exten === current.exten && next.context === current.context) return next;
    await requireContext(tx, next.context);
    await requireNoMeeting(tx, next);
    if (current.conference_id != null) await requireConferenceRange(tx, next);
    const line = current.line_id === null ? null : await tx.get(lines, current.line_id);
    if (line?.user_ids.length) await requireUserRange(tx, next);
    // the line's caller id number may come from its first extension
    const followed = line && await followMainUserIn(tx, line, { extensions: [next] });
    if (line && followed && !sameCallerId(line, followed)) tx.put(lines, followed);
    return next;
  },
  beforeDelete(_tx, extension) {
    if (extension.line_id !== null) throw resourceError("Extension is associated with a Line");
    if (extension.conference_id != null) {
      throw resourceError("Extension is associated with a Conference");
    }
    return Promise.resolve();
  },
  conflict(error) {
    const [context, exten] = [error.value].flat();
    return alreadyExists("Extension", { exten, context });
  },
};

/** A meeting room's number is no extension's (docs/meetingrooms.md): the room holds it. */
async function requireNoMeeting(tx: Transaction, extension: { exten: string; context: string }) {
  if (await tx.findBy(meetings, "number", [extension.context, extension.exten])) {
    throw alreadyExists("Extension", { exten: extension.exten, context: extension.context });
  }
}

/** A line with users takes only extensions inside the user ranges of their context. */
export async function requireUserRange(tx: Transaction, extension: ExtensionRecord): Promise<void> {
  const context = await tx.findBy(contexts, "name", extension.context);
  if (!context || !inRanges(extension.exten, context.user_ranges)) {
    throw resourceError(
      `Extension is outside the user ranges of its context ${
        describe({ exten: extension.exten, context: extension.context })
      }`,
    );
  }
}

/**
 * A conference's extension: in an internal context, inside its conference room ranges (Wazo's
 * rule); a pattern is not checked against the ranges.
 */
export async function requireConferenceRange(
  tx: Transaction,
  extension: ExtensionRecord,
): Promise<void> {
  const context = await tx.findBy(contexts, "name", extension.context);
  if (!context) {
    throw inputError("context", `Context was not found ${describe({ name: extension.context })}`);
  }
  if (context.type !== "internal") {
    throw resourceError(
      `Extension is in a context of type '${context.type}', not internal ${
        describe({ exten: extension.exten, context: extension.context })
      }`,
    );
  }
  if (
    !extension.exten.startsWith("_") &&
    !inRanges(extension.exten, context.conference_room_ranges ?? [])
  ) {
    throw resourceError(
      `Extension is outside the conference room ranges of its context ${
        describe({ exten: extension.exten, context: extension.context })
      }`,
    );
  }
}

/** The extension CRUD routes. */
export function extensionRoutes(services: Services) {
  return resourceRoutes(services, extensionResource);
}

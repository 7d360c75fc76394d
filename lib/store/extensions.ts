/**
 * Extensions: the numbers (`exten`) dialled in a context. An extension reaches a line when the line
 * holds it (`lines.extension_ids` ↔ `extensions.line_id`, one line per extension since 14.14), or a
 * conference (`conference_id`, docs/meetingrooms.md). `(context, exten)` is unique.
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export interface ExtensionRecord {
  id: number;
  exten: string;
  /** Name of the context. */
  context: string;
  enabled: boolean;
  /** The line that holds this extension, if any. */
  line_id: number | null;
  /** The conference this extension reaches, if any (absent from extensions stored before). */
  conference_id?: number | null;
}

/**
 * What an extension may be: digits with `*`, `#` (and a leading `+`), or an Asterisk pattern
 * starting with `_` (`N`, `X`, `Z`, `[1-5]`, ending with `.` or `!`).
 */
export const EXTEN_PATTERN = /^(?:\+?[0-9*#]+|_\+?[0-9NXZ*#[\]-]+[.!]?)$/;

/** Extensions by id; `exten` is the unique `[context, exten]` pair. */
export const extensions = new Collection<ExtensionRecord>("extensions", {
  exten: (extension) => [extension.context, extension.exten],
});

/** The extension `id`, or null. */
export const getExtension = (store: Store, id: number) => extensions.get(store, id);

/**
 * The extension `exten` of `context`, or null.
 *
 * @example
 * const extension = await findExtension(store, "1001", "default");
 */
export const findExtension = (store: Store, exten: string, context: string) =>
  extensions.findBy(store, "exten", [context, exten]);

/** The extensions of each list by context and exten (a collection's cached list is one array). */
const placeIndexes = new WeakMap<readonly ExtensionRecord[], Map<string, ExtensionRecord>>();

/**
 * The extension `exten` of `context` among `list` (what {@link findExtension} answers when `list`
 * is every extension), or null: indexed once per list, so that many look-ups cost no read.
 *
 * @example
 * const at = extensionsAt(await extensions.all(store));
 * const lineId = at("1001", "default")?.line_id ?? null;
 */
export function extensionsAt(
  list: readonly ExtensionRecord[],
): (exten: string, context: string) => ExtensionRecord | null {
  let index = placeIndexes.get(list);
  if (!index) {
    index = new Map(
      list.map((extension) => [place(extension.exten, extension.context), extension]),
    );
    placeIndexes.set(list, index);
  }
  const places = index;
  return (exten, context) => places.get(place(exten, context)) ?? null;
}

const place = (exten: string, context: string) => `${context}\u0000${exten}`;

/**
 * List answers of the configuration daemon (decisions §10): `{"total": N, "items": [...]}` with
 * `search`, `order`, `direction`, `limit`, `offset` (`skip` as a deprecated alias) and exact-match
 * filters on fields (`?context=default`). `total` counts the matches before paging.
 */
import * as z from "zod";
import type { Context } from "hono";
import { inputError } from "./errors.ts";

type Item = Record<string, unknown>;

/** Query parameters that are not field filters. */
const CONTROLS = new Set([
  "search",
  "order",
  "direction",
  "limit",
  "offset",
  "skip",
  "view",
  "recurse",
]);

/** A query paging with `skip` alone: answered with `Deprecation: true`. */
const deprecatedSkip = (query: Record<string, string>) =>
  query.offset === undefined && query.skip !== undefined;

/** Lower case without accents, for case- and accent-insensitive search. */
export function fold(text: string): string {
  return text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();
}

/**
 * The query values every list takes besides its field filters, for the OpenAPI document (a
 * function: built with the document, not at every start).
 */
export const listQuery = () =>
  z.object({
    search: z.string().optional().meta({ description: "Text searched in the text fields" }),
    order: z.string().optional().meta({ description: "The field to sort by" }),
    direction: z.enum(["asc", "desc"]).optional(),
    limit: z.int().min(1).optional(),
    offset: z.int().min(0).optional(),
    skip: z.int().min(0).optional().meta({ description: "Deprecated: `offset`" }),
  });

/** A list answer of `item`s. */
export const listBody = (item: z.ZodType) =>
  z.object({ total: z.int().meta({ description: "Matches before paging" }), items: z.array(item) });

function nonNegative(name: string, raw: string, min: number): number {
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < min) {
    throw inputError(name, min > 0 ? "Must be greater than 0." : "Must be a positive integer.");
  }
  return Number(raw);
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1; // nulls last
  if (b === null || b === undefined) return -1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  return fold(String(a)).localeCompare(fold(String(b)));
}

/**
 * Filters, orders and pages `items` (already in their API shape) as the query asks.
 *
 * @example
 * return c.json(listItems(c, lines.map(lineView), { fields: LINE_FIELDS, search: ["name"] }));
 */
export function listItems<T extends object, V = T>(
  c: Context,
  items: T[],
  options: {
    fields: readonly string[];
    search: readonly string[];
    /** Maps the page only, when `items` already hold every field filters and search read. */
    view?: (item: T) => V;
  },
): { total: number; items: V[] } {
  const query = c.req.query();
  let matches = items;
  for (const [name, value] of Object.entries(query)) {
    if (CONTROLS.has(name) || !options.fields.includes(name)) continue;
    matches = matches.filter((item) => String((item as Item)[name]) === value);
  }
  if (query.search) {
    const wanted = fold(query.search);
    matches = matches.filter((item) =>
      options.search.some((field) => {
        const value = (item as Item)[field];
        return value !== null && value !== undefined && fold(String(value)).includes(wanted);
      })
    );
  }
  if (query.order !== undefined && !options.fields.includes(query.order)) {
    throw inputError("order", `unknown field '${query.order}'`);
  }
  const direction = query.direction ?? "asc";
  if (direction !== "asc" && direction !== "desc") {
    throw inputError("direction", "Must be one of: asc, desc.");
  }
  if (query.order) {
    const order = query.order;
    const sign = direction === "asc" ? 1 : -1;
    matches = [...matches].sort((a, b) => sign * compare((a as Item)[order], (b as Item)[order]));
  } else if (direction === "desc") {
    matches = [...matches].reverse();
  }
  const offsetRaw = query.offset ?? query.skip;
  if (deprecatedSkip(query)) c.header("Deprecation", "true");
  const offset = offsetRaw === undefined ? 0 : nonNegative("offset", offsetRaw, 0);
  const limit = query.limit === undefined ? undefined : nonNegative("limit", query.limit, 1);
  const page = matches.slice(offset, limit === undefined ? undefined : offset + limit);
  return {
    total: matches.length,
    items: options.view ? page.map(options.view) : page as unknown as V[],
  };
}

/** Pages kept per list, by query string, while the list is the same array (see `listJson`). */
const KEPT_PAGES = 32;
/**
 * Kept as text, not bytes: Deno copies a byte body in `new Response` (18 µs for a page of 100 users,
 * 73 KB) and writes a text straight from the string (bench/README.md: twice the answers per second).
 */
const pages = new WeakMap<readonly object[], Map<string, string>>();

/**
 * {@link listItems} answered as JSON, for a list read from a collection's cache (the same array
 * while the collection is unchanged): the text of each query is kept with that array, so a client
 * asking the same page again (a dashboard polling) costs no paging or serialising. A write
 * to the collection gives a new array, and the kept pages go with the old one.
 *
 * @example
 * return listJson(c, await users.all(store), { fields: USER_FIELDS, search: SEARCHED, view });
 */
export function listJson<T extends object, V = T>(
  c: Context,
  items: T[],
  options: Parameters<typeof listItems<T, V>>[2],
): Response {
  let kept = pages.get(items);
  if (!kept) pages.set(items, kept = new Map());
  const query = new URL(c.req.url).search;
  let text = kept.get(query);
  if (text === undefined) {
    text = JSON.stringify(listItems(c, items, options)); // sets Deprecation
    if (kept.size >= KEPT_PAGES) kept.clear();
    kept.set(query, text);
  } else if (deprecatedSkip(c.req.query())) c.header("Deprecation", "true");
  return c.body(text, 200, { "Content-Type": "application/json" });
}

/**
 * What a route declares about itself for the OpenAPI document (`lib/openapi/generate.ts`): its
 * summary, body, query and answers next to its path, and the tags its guards carry (the ACL
 * template, an `Idempotency-Key`). Nothing here runs per request: `operation()` answers the
 * handler it is given, and the tags are kept in weak maps keyed by the functions themselves.
 */
import type { Handler, MiddlewareHandler } from "hono";
import type * as z from "zod";

/** One answer: a zod schema (JSON), `null` (no body), another media type, or several. */
export type ResponseSpec =
  | z.ZodType
  | null
  | {
    /** E.g. `text/csv`; the body's schema, when JSON, else none. */
    mediaType: string;
    schema?: z.ZodType;
    description?: string;
  }
  | {
    /** Media type → the body's schema (none for other than JSON), e.g. JSON or CSV by `Accept`. */
    content: Record<string, z.ZodType | null>;
    description?: string;
  };

/** What a body may be besides JSON: the media types it is read as. */
export interface BodySpec {
  /** Media type → schema (none for a file). */
  content: Record<string, z.ZodType | null>;
  /** False when the route reads no body as well as one. */
  required?: boolean;
}

export interface OperationMeta {
  /** One line, shown next to the path. */
  summary: string;
  /** More: the rules a client must know (Markdown). */
  description?: string;
  /** The JSON body (a zod schema), or the media types it may take. */
  body?: z.ZodType | BodySpec;
  /** The query values, as a zod object: one parameter per field. */
  query?: z.ZodObject;
  /** Path values that are not plain strings, e.g. `{ id: z.number().int() }`. */
  params?: Record<string, z.ZodType>;
  /** Headers the route reads, name → description. */
  headers?: Record<string, string>;
  /** The answers of success, by status: `{ 200: schema }`, `{ 204: null }`. */
  responses: Record<number, ResponseSpec>;
  /** The error statuses worth naming, with what each means (the area gives the body's shape). */
  errors?: Record<number, string>;
}

/**
 * Zod's builders, given to a route's metadata function: a module the start loads declares its
 * schemas with them instead of importing zod (docs/performance.md). Named one by one: handing
 * over zod's whole namespace would keep all of zod in the bundle.
 */
export type ZodBuilders = Pick<typeof z, "object" | "string" | "number" | "literal" | "array">;

/** What a route declares: its metadata, or a function answering it (built on first use). */
export type OperationDoc = OperationMeta | ((zod: ZodBuilders) => OperationMeta);

const operations = new WeakMap<Handler, OperationDoc>();

/**
 * Declares what a route does for the OpenAPI document and answers `handler` itself (so the
 * declaration costs nothing per request). Given as a function, the metadata (its zod schemas) is
 * built when the document is first generated, not at every start (docs/performance.md).
 *
 * @example
 * app.post("/dnd/:username", acl, operation(() => ({ summary: "Set DND", body, responses: { 200: ok } }), handler));
 */
export function operation<H extends Handler>(doc: OperationDoc, handler: H): H {
  operations.set(handler, doc);
  return handler;
}

/**
 * What `operation()` declared of `handler`, if anything (built then kept, when a function, given
 * `zod`).
 */
export function operationOf(handler: unknown, zod: ZodBuilders): OperationMeta | undefined {
  const doc = operations.get(handler as Handler);
  if (typeof doc !== "function") return doc;
  const meta = doc(zod);
  operations.set(handler as Handler, meta);
  return meta;
}

/** What a guard requires: a token, and the ACL template filled from the path (when any). */
export interface GuardInfo {
  acl?: string;
  /** Who may hold it, when not everyone (e.g. "CTI users only"). */
  who?: string;
}

const guards = new WeakMap<MiddlewareHandler, GuardInfo>();
const idempotents = new WeakSet<MiddlewareHandler>();

/** Marks `middleware` as a token guard requiring `info`; answers it. */
export function guardTag<M extends MiddlewareHandler>(middleware: M, info: GuardInfo): M {
  guards.set(middleware, info);
  return middleware;
}

/** What the guard `handler` requires, when it is one. */
export const guardOf = (handler: unknown): GuardInfo | undefined =>
  guards.get(handler as MiddlewareHandler);

/** Marks `middleware` as honouring an `Idempotency-Key` header; answers it. */
export function idempotentTag<M extends MiddlewareHandler>(middleware: M): M {
  idempotents.add(middleware);
  return middleware;
}

/** Whether `handler` honours an `Idempotency-Key` header. */
export const isIdempotent = (handler: unknown): boolean =>
  idempotents.has(handler as MiddlewareHandler);

/**
 * The OpenAPI 3.1 document of an app, built from its route table (`app.routes`): every method and
 * path the app serves is an operation, by construction. What each route declared with
 * `operation()` (summary, body, query, answers) and what its guard carries (the ACL template)
 * fill it in; the area a path belongs to gives its tag and its error body. Schemas are zod's own
 * JSON Schema (`z.toJSONSchema`, draft 2020-12, the dialect of OpenAPI 3.1).
 */
import { isMiddlewareEntry } from "../no_route.ts";
import { COMPOSED_HANDLER } from "hono/utils/constants";
import * as z from "zod";
import {
  type BodySpec,
  guardOf,
  isIdempotent,
  type OperationMeta,
  operationOf,
  type ResponseSpec,
  type ZodBuilders,
} from "./operation.ts";

// deno-lint-ignore no-explicit-any
export type JsonSchema = Record<string, any>;

/** One area of the API: its paths, tag, error body and what its guard refuses with. */
export interface Area {
  tag: string;
  /** Markdown shown under the tag. */
  description: string;
  /** Whether `path` (Hono's form, e.g. `/1.1/users/:id`) belongs to the area. */
  owns(path: string): boolean;
  /** Name of the error body in `components.schemas`, and its schema. */
  error: { name: string; schema: z.ZodType };
  /** The answers of a route's token guard in this area, status → meaning. */
  guardErrors: Record<number, string>;
  /** The answers of a route that reads a body, status → meaning. */
  bodyErrors: Record<number, string>;
}

/** A route of Hono's table. */
export interface RouteEntry {
  method: string;
  path: string;
  handler: unknown;
}

export interface DocumentOptions {
  info: { title: string; version: string; description: string };
  areas: readonly Area[];
}

/** The security of a guarded route: a token as `Authorization: Bearer` or `X-Auth-Token`. */
const TOKEN_SECURITY = [{ bearerToken: [] }, { xAuthToken: [] }];

const STATUS_TEXT: Record<number, string> = {
  101: "Switching Protocols",
  200: "OK",
  201: "Created",
  204: "No Content",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  413: "Payload Too Large",
  422: "Unprocessable Content",
  426: "Upgrade Required",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/**
 * The handler a route was declared with: mounting a sub-app that has its own error handler wraps
 * each of its handlers, and Hono keeps the one wrapped on the wrapper.
 */
export function declaredHandler(handler: unknown): unknown {
  let found = handler;
  while (typeof found === "function" && COMPOSED_HANDLER in found) {
    found = (found as unknown as Record<string, unknown>)[COMPOSED_HANDLER];
  }
  return found;
}

/** A zod schema as JSON Schema; `io` says whether it reads a request or shapes an answer. */
export function jsonSchema(schema: z.ZodType, io: "input" | "output"): JsonSchema {
  const converted: JsonSchema = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
  });
  delete converted.$schema;
  return converted;
}

/** Hono's path (`/users/:id`, `:action{a|b}`) in OpenAPI's form, with its path values. */
export function openApiPath(path: string): {
  path: string;
  params: { name: string; pattern?: string }[];
} {
  const params: { name: string; pattern?: string }[] = [];
  const converted = path.replace(/:(\w+)(\{([^}]*)\})?/g, (_, name: string, _p, pattern) => {
    params.push(pattern === undefined ? { name } : { name, pattern });
    return `{${name}}`;
  });
  return { path: converted, params };
}

/** A `:name{a|b|c}` pattern of plain words, as an enum; any other as a pattern. */
function patternSchema(pattern: string): JsonSchema {
  if (/^\w+(\|\w+)*$/.test(pattern)) return { type: "string", enum: pattern.split("|") };
  return { type: "string", pattern: `^(?:${pattern})$` };
}

function mediaContent(schema: z.ZodType | null | undefined, io: "input" | "output") {
  return schema ? { schema: jsonSchema(schema, io) } : {};
}

function requestBody(body: z.ZodType | BodySpec): JsonSchema {
  if (body instanceof z.ZodType) {
    return { required: true, content: { "application/json": mediaContent(body, "input") } };
  }
  const content = Object.fromEntries(
    Object.entries(body.content).map(([type, schema]) => [type, mediaContent(schema, "input")]),
  );
  return { required: body.required ?? true, content };
}

function successResponse(status: number, spec: ResponseSpec): JsonSchema {
  const description = STATUS_TEXT[status] ?? `status ${status}`;
  if (spec === null) return { description };
  if (spec instanceof z.ZodType) {
    return { description, content: { "application/json": mediaContent(spec, "output") } };
  }
  if ("content" in spec) {
    const content = Object.fromEntries(
      Object.entries(spec.content).map(([type, schema]) => [type, mediaContent(schema, "output")]),
    );
    return { description: spec.description ?? description, content };
  }
  return {
    description: spec.description ?? description,
    content: { [spec.mediaType]: mediaContent(spec.schema, "output") },
  };
}

/** The query values of `query`, one parameter each. */
function queryParameters(query: z.ZodObject): JsonSchema[] {
  const { properties = {}, required = [] } = jsonSchema(query, "input");
  return Object.entries(properties).map(([name, schema]) => {
    const { description, ...rest } = schema as JsonSchema;
    return {
      name,
      in: "query",
      required: (required as string[]).includes(name),
      ...(description ? { description } : {}),
      schema: rest,
    };
  });
}

/** What a route's metadata function is given (lib/openapi/operation.ts). */
const ZOD_BUILDERS: ZodBuilders = {
  object: z.object,
  string: z.string,
  number: z.number,
  literal: z.literal,
  array: z.array,
};

/** The route's handlers (middleware and the handler itself), as Hono lists them. */
function describeRoute(method: string, honoPath: string, handlers: unknown[], area: Area) {
  const declared = (handler: unknown) => operationOf(handler, ZOD_BUILDERS);
  const meta: OperationMeta | undefined = handlers.map(declared).find(Boolean);
  const guard = handlers.map(guardOf).find(Boolean);
  const { path, params } = openApiPath(honoPath);
  const errorRef = { $ref: `#/components/schemas/${area.error.name}` };
  const errorResponse = (description: string) => ({
    description,
    content: { "application/json": { schema: errorRef } },
  });

  const parameters: JsonSchema[] = params.map(({ name, pattern }) => ({
    name,
    in: "path",
    required: true,
    schema: meta?.params?.[name]
      ? jsonSchema(meta.params[name], "input")
      : pattern
      ? patternSchema(pattern)
      : { type: "string" },
  }));
  if (meta?.query) parameters.push(...queryParameters(meta.query));
  for (const [name, description] of Object.entries(meta?.headers ?? {})) {
    parameters.push({
      name,
      in: "header",
      required: false,
      description,
      schema: { type: "string" },
    });
  }
  if (handlers.some(isIdempotent)) {
    parameters.push({
      name: "Idempotency-Key",
      in: "header",
      required: false,
      description: "Sent again with the same request, answers what the first one answered " +
        "(kept 24 hours) instead of running it twice.",
      schema: { type: "string", minLength: 1, maxLength: 255 },
    });
  }

  const responses: JsonSchema = {};
  if (meta) {
    for (const [status, spec] of Object.entries(meta.responses)) {
      responses[status] = successResponse(Number(status), spec);
    }
  } else {
    responses["2XX"] = { description: "Success (this route declares no answer yet)" };
  }
  const errors: Record<string, string> = {
    ...(guard ? area.guardErrors : {}),
    ...(meta?.body ? area.bodyErrors : {}),
    ...meta?.errors,
  };
  for (const [status, meaning] of Object.entries(errors)) {
    responses[status] = errorResponse(meaning);
  }
  responses.default = errorResponse(`Any other error, in the area's form`);
  const ordered = Object.fromEntries(
    Object.entries(responses).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0),
  );

  const lines = [meta?.description];
  if (guard?.acl) lines.push(`ACL: \`${guard.acl}\`${guard.who ? ` (${guard.who})` : ""}.`);
  else if (guard) lines.push(`Any valid token${guard.who ? ` (${guard.who})` : ""}.`);
  const description = lines.filter(Boolean).join("\n\n");

  return {
    path,
    operation: {
      tags: [area.tag],
      summary: meta?.summary ?? `${method} ${path}`,
      ...(description ? { description } : {}),
      // `/x/{a}` and `/x/{a}/` (the 1.0 API serves both) stay apart: post_x_a, post_x_a_
      operationId: `${method.toLowerCase()}${path.replace(/[{}]/g, "")}`.replace(
        /[^A-Za-z0-9]+/g,
        "_",
      ),
      ...(guard?.acl ? { "x-acl": guard.acl } : {}),
      ...(guard ? { security: TOKEN_SECURITY } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(meta?.body ? { requestBody: requestBody(meta.body) } : {}),
      responses: ordered,
    },
  };
}

/**
 * The OpenAPI document of `routes` (an app's `app.routes`). Middleware entries
 * ({@link isMiddlewareEntry}) are no operations; a path no area owns is an error, so a new area
 * cannot be forgotten.
 */
export function openApiDocument(routes: readonly RouteEntry[], options: DocumentOptions) {
  const grouped = new Map<string, { method: string; path: string; handlers: unknown[] }>();
  for (const { method, path, handler } of routes) {
    if (isMiddlewareEntry({ method, path })) continue;
    const key = `${method} ${path}`;
    const group = grouped.get(key) ?? { method, path, handlers: [] };
    group.handlers.push(declaredHandler(handler));
    grouped.set(key, group);
  }
  const paths: Record<string, Record<string, JsonSchema>> = {};
  for (const { method, path: honoPath, handlers } of grouped.values()) {
    const area = options.areas.find((candidate) => candidate.owns(honoPath));
    if (!area) throw new Error(`no area owns ${method} ${honoPath}`);
    const { path, operation } = describeRoute(method, honoPath, handlers, area);
    (paths[path] ??= {})[method.toLowerCase()] = operation;
  }
  return {
    openapi: "3.1.0",
    info: options.info,
    servers: [{ url: "/" }],
    tags: options.areas.map(({ tag, description }) => ({ name: tag, description })),
    paths,
    components: {
      schemas: Object.fromEntries(
        options.areas.map(({ error }) => [error.name, jsonSchema(error.schema, "output")]),
      ),
      securitySchemes: {
        bearerToken: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "JWT",
          description: "A token from `POST /svc/api/2.0/auth/login` or `/auth/webservice`.",
        },
        xAuthToken: {
          type: "apiKey",
          in: "header",
          name: "X-Auth-Token",
          description: "The same token, in the header older clients send.",
        },
      },
    },
  };
}

export type OpenApiDocument = ReturnType<typeof openApiDocument>;

/**
 * The part of `document` whose paths `keep` names, with paths relative to `base` (where they are
 * served), as a daemon of its own describes itself.
 */
export function subDocument(
  document: OpenApiDocument,
  base: string,
  keep: (path: string) => boolean,
): OpenApiDocument {
  const prefix = base === "/" ? "" : base;
  const kept = Object.entries(document.paths).filter(([path]) => keep(path));
  const used = new Set(
    kept.flatMap(([, operations]) => Object.values(operations).flatMap((o) => o.tags)),
  );
  return {
    ...document,
    servers: [{ url: base }],
    tags: document.tags.filter(({ name }) => used.has(name)),
    paths: Object.fromEntries(
      kept.map(([path, operations]) => [path.slice(prefix.length) || "/", operations]),
    ),
  };
}

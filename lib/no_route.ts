/**
 * What to answer when no route takes a request: 405 with `Allow` when the path is known under
 * other methods (RFC 9110 §15.5.6), else 404. Each area words the answer in its own error shape;
 * this module only tells which of the two it is.
 */
import type { Context } from "hono";
import { TrieRouter } from "hono/router/trie-router";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/**
 * Whether an entry of Hono's route table is a step before the routes, not a route: one for every
 * method (`ALL`: the `use` middleware and the areas' unknown-path answers) or for every path below
 * a prefix (`*`, e.g. the body limit on the methods that carry a body). No route has a wildcard.
 */
export const isMiddlewareEntry = (route: { method: string; path: string }) =>
  route.method === "ALL" || route.path.endsWith("*");

/** The methods each path of an app's route table answers. */
export class RouteMethods {
  readonly #router = new TrieRouter<string>();

  /** `routes`: the app's table (`app.routes`); middleware entries are not routes. */
  constructor(routes: readonly { method: string; path: string }[]) {
    for (const route of routes) {
      if (!isMiddlewareEntry(route)) this.#router.add(route.method, route.path, route.method);
    }
  }

  /** The methods `path` is answered under, `HEAD` with `GET` (Hono answers it); empty if none. */
  allowed(path: string): string[] {
    const methods: string[] = METHODS.filter((method) =>
      this.#router.match(method, path)[0].length
    );
    if (methods.includes("GET")) methods.splice(1, 0, "HEAD");
    return methods;
  }
}

/** Why no route took the request: the status and message to word in the area's shape. */
export interface NoRoute {
  status: 404 | 405;
  message: string;
  /** The `Allow` header of a 405. */
  headers: Record<string, string>;
}

/** Tells {@link NoRoute} for a request; built once per app by {@link noRouteOf}. */
export type NoRouteOf = (c: Context) => NoRoute;

/**
 * The {@link NoRouteOf} of `app`, reading its route table at the first request without a route
 * (the table is complete by then).
 */
export function noRouteOf(app: { routes: { method: string; path: string }[] }): NoRouteOf {
  let table: RouteMethods | undefined;
  return (c): NoRoute => {
    const { method, path } = c.req;
    const allowed = (table ??= new RouteMethods(app.routes)).allowed(path);
    if (allowed.length === 0 || allowed.includes(method)) {
      return { status: 404, message: `no route for ${method} ${path}`, headers: {} };
    }
    const allow = allowed.join(", ");
    const message = `${method} is not allowed on ${path} (allowed: ${allow})`;
    return { status: 405, message, headers: { Allow: allow } };
  };
}

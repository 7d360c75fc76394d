/**
 * CORS for every area of the one app (issue 14; docs/cors.md), from `SVC_CORS_ORIGINS`: a list of
 * origins, `*` for any, or empty (the default) for none at all.
 *
 * - Mounted first on the whole app, ahead of every guard: a preflight (`OPTIONS` from an allowed
 *   origin) carries no token and is answered 204 here, whatever the path, known or not, with the
 *   methods, the request headers this API reads, and a max age.
 * - Every other answer to an allowed origin carries `Access-Control-Allow-Origin` (the origin
 *   echoed, or `*`), `Access-Control-Expose-Headers` and `Vary: Origin`, errors included. The
 *   headers are set on the final response after the areas have answered, so an area's error
 *   handler building a new response cannot drop them.
 * - A request from an origin not listed, or without an `Origin`, gets no `Access-Control-*`
 *   header, only `Vary: Origin` (its answer differs from an allowed origin's, so a cache must not
 *   mix them) and goes on as if there were no CORS: an unlisted origin's preflight reaches the
 *   routes, which do not answer `OPTIONS`.
 * - No `Access-Control-Allow-Credentials`: tokens travel in headers, never in cookies.
 * - CORS only tells browsers what a page may read; it never lets a request past a check. The 1.0
 *   API's client-address check still refuses the real request (403, readable by the page).
 */
import type { MiddlewareHandler } from "hono";
import { cors as honoCors } from "hono/cors";
import type { AppEnv } from "./http.ts";

/** The methods a preflight allows: every one the areas answer. */
export const CORS_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/**
 * The request headers a preflight allows: the token's two headers, the body's type, the id, and
 * the commands' `Idempotency-Key`.
 */
export const CORS_REQUEST_HEADERS = [
  "Authorization",
  "X-Auth-Token",
  "Content-Type",
  "Accept",
  "X-Request-Id",
  "Idempotency-Key",
];

/**
 * The response headers a page may read beyond the safelisted ones: the request id, a created
 * resource's `Location`, the login throttle's `Retry-After`, the CSV export's file name, the
 * deprecated mobile push routes' `Deprecation` and `Link`, and `Idempotent-Replayed` of a replayed
 * command.
 */
export const CORS_EXPOSED_HEADERS = [
  "X-Request-Id",
  "Location",
  "Retry-After",
  "Content-Disposition",
  "Deprecation",
  "Link",
  "Idempotent-Replayed",
];

/** How long (seconds) a browser may keep a preflight's answer: 2 hours, Chromium's own cap. */
export const CORS_MAX_AGE = 7200;

/**
 * The CORS middleware for `origins` (`config.corsOrigins`); with an empty list it does nothing.
 *
 * @example
 * app.use(cors(services.config.corsOrigins)); // before any other middleware but the request log
 */
export function cors(origins: readonly string[]): MiddlewareHandler<AppEnv> {
  if (origins.length === 0) return (_c, next) => next();
  const anyOrigin = origins.includes("*");
  const listed = new Set(origins);
  const allowed = (origin: string | undefined): origin is string =>
    origin !== undefined && (anyOrigin || listed.has(origin));
  const allowOrigin = (origin: string) => anyOrigin ? "*" : origin;
  const preflight = honoCors({
    origin: (origin) => allowed(origin) ? allowOrigin(origin) : null,
    allowMethods: CORS_METHODS,
    allowHeaders: CORS_REQUEST_HEADERS,
    exposeHeaders: CORS_EXPOSED_HEADERS,
    maxAge: CORS_MAX_AGE,
  });
  const exposed = CORS_EXPOSED_HEADERS.join(",");
  return async (c, next) => {
    const origin = c.req.header("origin");
    if (allowed(origin) && c.req.method === "OPTIONS") return preflight(c, next);
    await next();
    // on the final response, as the request log's id: whatever an area's error handler built
    const headers = c.res.headers;
    headers.append("Vary", "Origin");
    if (!allowed(origin)) return;
    headers.set("Access-Control-Allow-Origin", allowOrigin(origin));
    headers.set("Access-Control-Expose-Headers", exposed);
  };
}

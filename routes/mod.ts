/** The one Hono app serving every area (decisions §1). */
import { Hono } from "hono";
import { apiErrorHandler } from "../lib/errors.ts";
import { type AppEnv, limitBody, MiB, requestLog } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { authRoutes } from "./auth.ts";
import { healthRoutes } from "./health.ts";

/** Base path of the current API. */
export const API_V2 = "/svc/api/2.0";

/**
 * Builds the app for `services`; tests call it directly through `app.request()`.
 *
 * @example
 * const app = createApp(await createServices(loadConfig({ SVC_KV: ":memory:" })));
 */
export function createApp(services: Services) {
  const v2 = new Hono<AppEnv>()
    .route("/", authRoutes(services));

  const app = new Hono<AppEnv>();
  app.use(requestLog(services.logger));
  app.use(limitBody(() => MiB));
  app.route("/", healthRoutes(services));
  app.route(API_V2, v2);
  app.notFound((c) =>
    c.json({ error: "NotFound", message: `no route for ${c.req.method} ${c.req.path}` }, 404)
  );
  app.onError(apiErrorHandler(services.logger));
  return app;
}

/** The configuration daemon, API 1.1, mounted at `/1.1` (decisions §10). */
import { Hono } from "hono";
import { type AppEnv, limitBody, MiB } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { contextResource } from "./contexts.ts";
import { resourceRoutes } from "./crud.ts";
import { confdErrorHandler } from "./errors.ts";

/** Imports of CSV files may be up to 10 MiB (decisions §11); any other body 1 MiB. */
const bodyLimit = (path: string) => path.endsWith("/import") ? 10 * MiB : MiB;

export function confdRoutes(services: Services) {
  const app = new Hono<AppEnv>();
  app.use(limitBody((c) => bodyLimit(c.req.path)));
  app.route("/", resourceRoutes(services, contextResource));
  app.onError(confdErrorHandler(services.logger));
  return app;
}

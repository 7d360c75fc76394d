/**
 * The agent daemon, mounted at `/agents` (decisions §9; docs/agentd.md): agent statuses, login,
 * logoff, pause and unpause, every route behind a token holding its ACL, every error
 * `{"error": "..."}`.
 */
import { Hono } from "hono";
import { type AppEnv, limitBody, MiB } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { agentdErrorHandler } from "./errors.ts";
import { agentRoutes } from "./routes.ts";

export function agentdRoutes(services: Services) {
  const app = new Hono<AppEnv>();
  app.use(limitBody(() => MiB));
  app.route("/", agentRoutes(services));
  // an unknown path below /agents answers in the daemon's form too (matched after every route)
  app.all("*", (c) => c.json({ error: `no route for ${c.req.method} ${c.req.path}` }, 404));
  app.onError(agentdErrorHandler(services.logger));
  return app;
}

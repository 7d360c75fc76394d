/**
 * The agent daemon (decisions §9; docs/agentd.md): agent statuses, login, logoff, pause and
 * unpause, queue membership, every route behind a token holding its ACL, every error
 * `{"error": "..."}`. It is served at two places: `/agents` ({@link agentdRoutes}), and at the
 * root ({@link agentdRootRoutes}) the paths its clients build beside it: the calling user's own
 * agent (`/users/me/agents`) and the service status (`/status`).
 */
import { type Context, Hono } from "hono";
import { type AppEnv, BODY_METHODS, limitBody, MiB } from "../../lib/http.ts";
import type { NoRouteOf } from "../../lib/no_route.ts";
import type { Services } from "../../lib/services.ts";
import { agentdErrorHandler } from "./errors.ts";
import { userAgentRoutes } from "./me.ts";
import { agentRoutes, serviceStatus } from "./routes.ts";
import { agentdAcl } from "./guard.ts";

/** What is mounted at `/agents`. */
export function agentdRoutes(services: Services, noRoute: NoRouteOf) {
  const app = new Hono<AppEnv>();
  app.on(BODY_METHODS, "*", limitBody(() => MiB));
  app.route("/", agentRoutes(services));
  // an unknown path below /agents answers in the daemon's form too (matched after every route)
  app.all("*", unknownRoute(noRoute));
  app.onError(agentdErrorHandler(services.logger));
  return app;
}

/**
 * What is mounted at the root: `/users/me/agents…` and `GET /status`, nothing else (every other
 * path goes on to the rest of the app).
 */
export function agentdRootRoutes(services: Services, noRoute: NoRouteOf) {
  const me = "/users/me/agents";
  const app = new Hono<AppEnv>();
  app.on(BODY_METHODS, `${me}/*`, limitBody(() => MiB));
  app.get("/status", agentdAcl(services.tokens, "agentd.status.read"), serviceStatus(services));
  app.route(me, userAgentRoutes(services));
  app.all(`${me}/*`, unknownRoute(noRoute));
  app.onError(agentdErrorHandler(services.logger));
  return app;
}

/** A path or method the daemon does not answer: 404, or 405 with `Allow`, in its form. */
const unknownRoute = (noRoute: NoRouteOf) => (c: Context) => {
  const { status, message, headers } = noRoute(c);
  return c.json({ error: message }, status, headers);
};

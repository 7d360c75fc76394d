/**
 * The agent daemon (decisions §9; docs/agentd.md): agent statuses, login, logoff, pause and
 * unpause, queue membership, every route behind a token holding its ACL, every error
 * `{"error": "..."}`. It is served at `/agents` ({@link agentdRoutes}) and at the paths its
 * clients build beside it: the calling user's own agent (`/users/me/agents`,
 * {@link agentdMeRoutes}) and the service status (`/status`, {@link agentdStatusRoutes}).
 */
import { type Context, Hono } from "hono";
import { type AppEnv, BODY_METHODS, limitBody, MiB } from "../../lib/http.ts";
import type { NoRouteOf } from "../../lib/no_route.ts";
import type { Services } from "../../lib/services.ts";
import { agentdErrorHandler } from "./errors.ts";
import { userAgentRoutes } from "./me.ts";
import { agentRoutes, serviceStatus } from "./routes.ts";
import { agentdAcl } from "./guard.ts";

/**
 * The daemon's `routes` in its form: its body limit, its answer to an unknown path below them
 * (matched after every route) and its error bodies.
 */
function inDaemonForm(services: Services, noRoute: NoRouteOf, routes: Hono<AppEnv>) {
  const app = new Hono<AppEnv>();
  app.on(BODY_METHODS, "*", limitBody(() => MiB));
  app.route("/", routes);
  app.all("*", unknownRoute(noRoute));
  app.onError(agentdErrorHandler(services.logger));
  return app;
}

/** What is mounted at `/agents`. */
export const agentdRoutes = (services: Services, noRoute: NoRouteOf) =>
  inDaemonForm(services, noRoute, agentRoutes(services));

/** What is mounted at `/users/me/agents`: the calling user's own agent. */
export const agentdMeRoutes = (services: Services, noRoute: NoRouteOf) =>
  inDaemonForm(services, noRoute, userAgentRoutes(services));

/** What is mounted at `/status`: the service status (`GET` only). */
export function agentdStatusRoutes(services: Services) {
  const app = new Hono<AppEnv>();
  app.get("/", agentdAcl(services.tokens, "agentd.status.read"), serviceStatus(services));
  app.onError(agentdErrorHandler(services.logger));
  return app;
}

/** A path or method the daemon does not answer: 404, or 405 with `Allow`, in its form. */
const unknownRoute = (noRoute: NoRouteOf) => (c: Context) => {
  const { status, message, headers } = noRoute(c);
  return c.json({ error: message }, status, headers);
};

/** The one Hono app serving every area (decisions §1). */
import { Hono } from "hono";
import { CachedRouter } from "../lib/cached_router.ts";
import { chainMatched } from "../lib/chain.ts";
import { cors } from "../lib/cors.ts";
import {
  apiErrorHandler,
  type AppEnv,
  BODY_METHODS,
  limitBody,
  MiB,
  requestLog,
} from "../lib/http.ts";
import { countRequest } from "../lib/metrics.ts";
import type { Services } from "../lib/services.ts";
import { agentdRootRoutes, agentdRoutes } from "../daemons/agentd/mod.ts";
import { calldRoutes } from "../daemons/calld/mod.ts";
import { confdRoutes } from "../daemons/confd/mod.ts";
import { legacyRoutes } from "../legacy/mod.ts";
import { noRouteOf } from "../lib/no_route.ts";
import { authRoutes } from "./auth.ts";
import { callbackRoutes } from "./callbacks.ts";
import { callQualificationRoutes } from "./call_qualifications.ts";
import { contactRoutes } from "./contacts.ts";
import { ctiRoutes } from "./cti.ts";
import { dialRoutes } from "./dial.ts";
import { dndRoutes } from "./dnd.ts";
import { docsPageRoutes } from "./docs_page.ts";
import { eventRoutes } from "./events.ts";
import { forwardRoutes } from "./forwards.ts";
import { healthRoutes } from "./health.ts";
import { historyRoutes } from "./history.ts";
import { metricsRoutes } from "./metrics.ts";
import { mobilePushRoutes } from "./mobile_push.ts";
import { openApiRoutes } from "./openapi.ts";
import { simRoutes } from "./sim.ts";
import { supervisionRoutes } from "./supervision.ts";
import { supervisionPageRoutes } from "./supervision_page.ts";
import { xivoAuthRoutes } from "./xivo_auth.ts";

/** Base path of the current API. */
export const API_V2 = "/svc/api/2.0";
/** The 2.0 routes that take a CSV file. */
const CSV_IMPORTS = ["/contact/import/personal", "/callback_lists/callback_requests/csv"];

/** Base path of the deprecated API. */
export const API_V1 = "/svc/api/1.0";

/**
 * Builds the app for `services`; tests call it directly through `app.request()`.
 *
 * @example
 * const app = createApp(await createServices(loadConfig({ SVC_KV: ":memory:" })));
 */
export function createApp(services: Services) {
  const v2 = new Hono<AppEnv>();
  // a CSV import may be up to 10 MiB (decisions §3, §11); every other body 1 MiB
  v2.on(
    BODY_METHODS,
    "*",
    limitBody((c) => CSV_IMPORTS.some((path) => c.req.path.endsWith(path)) ? 10 * MiB : MiB),
  );
  v2.route("/", authRoutes(services));
  v2.route("/", contactRoutes(services));
  v2.route("/", callQualificationRoutes(services));
  v2.route("/", mobilePushRoutes(services));
  v2.route("/", dialRoutes(services));
  v2.route("/", dndRoutes(services));
  v2.route("/", forwardRoutes(services));
  v2.route("/", historyRoutes(services));
  v2.route("/", callbackRoutes(services));
  v2.route("/", eventRoutes(services));
  v2.route("/", ctiRoutes(services));
  v2.route("/", supervisionRoutes(services));
  // the control API of the simulator; on a real PBX people pick up their phones
  if (services.sim) v2.route("/", simRoutes(services.sim, services));

  const onError = apiErrorHandler(services.logger);
  // the handlers a request matches run as one: at once when none needs a promise (lib/chain.ts)
  const app = new Hono<AppEnv>({ router: new CachedRouter(chainMatched(onError)) });
  app.use(requestLog(services.logger, countRequest(services.metrics)));
  // before any guard: a preflight carries no token; on every answer of every area, errors included
  // (none at all without allowed origins: not even a step that does nothing)
  if (services.config.corsOrigins.length) app.use(cors(services.config.corsOrigins));
  app.route("/", healthRoutes(services));
  // the OpenAPI documents of this app's routes, generated on first request (docs/openapi.md):
  // before the areas, whose unknown-path answers would take their paths
  app.route("/", openApiRoutes(() => app.routes));
  app.route("/", docsPageRoutes());
  app.route("/", supervisionPageRoutes(services.config));
  app.route("/", metricsRoutes(services));
  app.route(API_V2, v2);
  app.route(API_V1, legacyRoutes(services));
  app.route("/1.1", confdRoutes(services));
  const noRoute = noRouteOf(app);
  app.route("/agents", agentdRoutes(services, noRoute));
  // the agent daemon's paths its clients build beside /agents: /users/me/agents…, /status
  app.route("/", agentdRootRoutes(services, noRoute));
  // the call daemon's call control, for clients written for wazo-calld (docs/calls.md)
  app.route("/1.0", calldRoutes(services, noRoute));
  // xivo-auth compatible tokens, for clients written for its port 9497 (docs/xivo_auth.md)
  app.route("/0.1", xivoAuthRoutes(services, noRoute));
  app.notFound((c) => {
    const { status, message, headers } = noRoute(c);
    if (/^\/1\.1(\/|$)/.test(c.req.path)) { // the daemon's mount point, in its form
      return c.json(
        [`${status === 404 ? "Resource Not Found" : "Method Not Allowed"} - ${message}`],
        status,
        headers,
      );
    }
    return c.json(
      { error: status === 404 ? "NotFound" : "MethodNotAllowed", message },
      status,
      headers,
    );
  });
  app.onError(onError);
  return app;
}

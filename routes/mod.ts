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

/** The 2.0 API's routes (below {@link API_V2}). */
function apiV2Routes(services: Services) {
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
  return v2;
}

export interface AppOptions {
  /**
   * Declare each API area (2.0, 1.0, 1.1, the agent, call and token daemons) at the first request
   * below its path, or when the whole route table is read, instead of at once: what the server
   * does (a start answers `/health` 5–6 ms sooner; docs/performance.md). The app answers the same
   * either way.
   */
  areasOnFirstUse?: boolean;
}

/**
 * Builds the app for `services`; tests call it directly through `app.request()`.
 *
 * @example
 * const app = createApp(await createServices(loadConfig({ SVC_KV: ":memory:" })));
 */
export function createApp(services: Services, { areasOnFirstUse = false }: AppOptions = {}) {
  const onError = apiErrorHandler(services.logger);
  // the handlers a request matches run as one: at once when none needs a promise (lib/chain.ts)
  const router = new CachedRouter(chainMatched(onError));
  const app = new Hono<AppEnv>({ router });
  /** The whole route table, the areas not declared yet included. */
  const table = {
    get routes() {
      router.complete();
      return app.routes;
    },
  };
  /** Mounts the area `routes` builds at `path`, now or at its first use. */
  const mount = (path: string, routes: () => Hono<AppEnv>) => {
    const declare = () => void app.route(path, routes());
    if (areasOnFirstUse) router.defer(path.split("/")[1]!, app.routes, declare);
    else declare();
  };
  app.use(requestLog(services.logger, countRequest(services.metrics)));
  // before any guard: a preflight carries no token; on every answer of every area, errors included
  // (none at all without allowed origins: not even a step that does nothing)
  if (services.config.corsOrigins.length) app.use(cors(services.config.corsOrigins));
  app.route("/", healthRoutes(services));
  // the OpenAPI documents of this app's routes, generated on first request (docs/openapi.md):
  // before the areas, whose unknown-path answers would take their paths
  app.route("/", openApiRoutes(() => table.routes));
  app.route("/", docsPageRoutes());
  app.route("/", supervisionPageRoutes(services.config));
  app.route("/", metricsRoutes(services));
  mount(API_V2, () => apiV2Routes(services));
  mount(API_V1, () => legacyRoutes(services));
  mount("/1.1", () => confdRoutes(services));
  const noRoute = noRouteOf(table);
  mount("/agents", () => agentdRoutes(services, noRoute));
  // the agent daemon's paths its clients build beside /agents: /users/me/agents…, /status
  app.route("/", agentdRootRoutes(services, noRoute));
  // the call daemon's call control, for clients written for wazo-calld (docs/calls.md)
  mount("/1.0", () => calldRoutes(services, noRoute));
  // xivo-auth compatible tokens, for clients written for its port 9497 (docs/xivo_auth.md)
  mount("/0.1", () => xivoAuthRoutes(services, noRoute));
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

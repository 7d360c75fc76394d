/**
 * The one Hono app serving every area (decisions §1): {@link buildApp}, and the server's app
 * ({@link serverApp}), whose API areas load and are declared at their first use.
 */
import { Hono } from "hono";
import { getPath } from "hono/utils/url";
import { CachedRouter } from "../lib/cached_router.ts";
import { chainMatched } from "../lib/chain.ts";
import { cors } from "../lib/cors.ts";
import { apiErrorHandler, type AppEnv, requestLog } from "../lib/http.ts";
import { countRequest } from "../lib/metrics.ts";
import type { Services } from "../lib/services.ts";
import { noRouteOf } from "../lib/no_route.ts";
import { docsPageRoutes } from "./docs_page.ts";
import { healthRoutes } from "./health.ts";
import { metricsRoutes } from "./metrics.ts";
import { openApiRoutes } from "./openapi.ts";
import { supervisionPageRoutes } from "./supervision_page.ts";
import type { AreaRoutes } from "./areas.ts";

/** Base path of the current API. */
export const API_V2 = "/svc/api/2.0";
/** Base path of the deprecated API. */
export const API_V1 = "/svc/api/1.0";
/**
 * xuc's base path of the 2.0 API (its clients build `/xuc/api/2.0/auth/login`, `…/cti`): with
 * `SVC_XUC_PATHS=true` a request below it is routed as the same path below {@link API_V2}.
 */
export const XUC_API_V2 = "/xuc/api/2.0";

/**
 * The path a request is routed by when xuc's paths are on: one below {@link XUC_API_V2} is read
 * as below {@link API_V2} (the request itself is kept, so a WebSocket upgrade still works).
 */
function xucPathAsSvc(request: Request): string {
  const path = getPath(request);
  if (!path.startsWith(XUC_API_V2)) return path;
  const rest = path.slice(XUC_API_V2.length);
  return rest === "" || rest.startsWith("/") ? API_V2 + rest : path;
}

/** The areas' routes at hand (`now`), or loaded by `load` when first needed. */
export type AreaSource = { now: AreaRoutes } | { load: () => Promise<AreaRoutes> };

/**
 * What a request may ask before the areas' code has loaded: the liveness probe, answered by a
 * route of the start. Any other request may need an area, or the whole route table (a 404 or 405
 * names every area's methods, the OpenAPI document every route): it waits for the load.
 */
const answeredBeforeAreas = (request: Request) =>
  (request.method === "GET" || request.method === "HEAD") && getPath(request) === "/health";

/**
 * The server's app (main.ts, deploy/deno_deploy.ts): the areas' code (routes/areas.ts) is loaded
 * by `import()` at the first request that is not {@link answeredBeforeAreas}, and each area is
 * declared at the first request below its path (docs/performance.md). It answers, counts and
 * documents as the app with every area at once.
 */
export function serverApp(services: Services) {
  return buildApp(services, {
    load: () => import("./areas.ts").then(({ areaRoutes }) => areaRoutes),
  });
}

/**
 * Builds the app for `services` with the areas of `areas`; tests build it with every area at once
 * (`createApp`, routes/mod.ts) and call it through `app.request()`.
 */
export function buildApp(services: Services, areas: AreaSource) {
  const onError = apiErrorHandler(services.logger);
  // the handlers a request matches run as one: at once when none needs a promise (lib/chain.ts)
  const router = new CachedRouter(chainMatched(onError));
  // one alias rather than a second mount: the same routes, ACLs, CORS and OpenAPI document
  const app = new Hono<AppEnv>(
    services.config.xucPaths ? { router, getPath: xucPathAsSvc } : { router },
  );
  /** The whole route table, the areas not declared yet included. */
  const table = {
    get routes() {
      router.complete();
      return app.routes;
    },
  };
  let loaded = "now" in areas ? areas.now : null;
  /** Mounts the area `routes` builds at `path`: now, or at the first request below it. */
  const mount = (path: string, routes: (loaded: AreaRoutes) => Hono<AppEnv>) => {
    if (loaded) return void app.route(path, routes(loaded));
    router.defer(path.split("/")[1]!, app.routes, () => {
      // the app's fetch below waits for the load before any request that may get here
      if (!loaded) throw new Error(`the API area ${path} is needed before its code has loaded`);
      app.route(path, routes(loaded));
    });
  };
  if ("load" in areas) {
    const answer = app.fetch;
    let loading: Promise<unknown> | null = null;
    app.fetch = (request, env, context) => {
      if (loaded || answeredBeforeAreas(request)) return answer(request, env, context);
      // a load that failed stays failed: Deno keeps a failed import() of a file as it is
      loading ??= areas.load().then((routes) => loaded = routes);
      return loading.then(() => answer(request, env, context), (error: Error) => {
        services.logger.error("the API areas' code did not load", {
          error: String(error),
          stack: error.stack,
        });
        return Response.json({
          error: "NotHandledError",
          message: "unexpected error: the API areas' code did not load",
        }, { status: 500 });
      });
    };
  }
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
  mount(API_V2, (areas) => areas.apiV2(services));
  mount(API_V1, (areas) => areas.apiV1(services));
  mount("/1.1", (areas) => areas.confd(services));
  const noRoute = noRouteOf(table);
  mount("/agents", (areas) => areas.agentd(services, noRoute));
  // the agent daemon's paths its clients build beside /agents: /users/me/agents…, /status
  mount("/status", (areas) => areas.agentdStatus(services));
  mount("/users/me/agents", (areas) => areas.agentdMe(services, noRoute));
  // the call daemon's call control, for clients written for wazo-calld (docs/calls.md)
  mount("/1.0", (areas) => areas.calld(services, noRoute));
  // xivo-auth compatible tokens, for clients written for its port 9497 (docs/xivo_auth.md)
  mount("/0.1", (areas) => areas.xivoAuth(services, noRoute));
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

/**
 * The call daemon (docs/calls.md): the call-control part of wazo-calld's API, mounted at `/1.0` as
 * its clients (wazo-calld-client) call it: calls and the commands on them, transfers, ad-hoc
 * conferences and the meeting rooms' participants, each route behind its ACL, every error in the
 * daemon's form.
 */
import { type Context, Hono } from "hono";
import { type AppEnv, BODY_METHODS, limitBody, MiB } from "../../lib/http.ts";
import type { NoRouteOf } from "../../lib/no_route.ts";
import type { Services } from "../../lib/services.ts";
import { callRoutes } from "./calls.ts";
import { conferenceRoutes } from "./conferences.ts";
import { roomRoutes } from "./rooms.ts";
import { calldErrorHandler } from "./errors.ts";
import { transferRoutes } from "./transfers.ts";

/** What is mounted at `/1.0`. */
export function calldRoutes(services: Services, noRoute: NoRouteOf) {
  const app = new Hono<AppEnv>();
  app.on(BODY_METHODS, "*", limitBody(() => MiB));
  app.route("/", callRoutes(services));
  app.route("/", transferRoutes(services));
  app.route("/", conferenceRoutes(services));
  app.route("/", roomRoutes(services));
  // an unknown path below /1.0 answers in the daemon's form too (matched after every route)
  app.all("*", (c: Context) => {
    const { status, message, headers } = noRoute(c);
    const id = status === 404 ? "not-found" : "method-not-allowed";
    const body = { message, error_id: id, details: {}, timestamp: Date.now() / 1000 };
    return c.json(body, status, headers);
  });
  app.onError(calldErrorHandler(services.logger));
  return app;
}

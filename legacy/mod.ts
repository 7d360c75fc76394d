/**
 * The deprecated 1.0 API, mounted at `/svc/api/1.0` (spec "Deprecated version 1.0 endpoints",
 * decisions §7, §9; docs/legacy.md). The whole tree, known paths or not, is refused with 403 for a
 * client address not listed in `SVC_DEPRECATED_API_HOST` (`client_address.ts`); then bodies are
 * limited to 1 MiB. There are no tokens: the address is the credential.
 */
import { Hono } from "hono";
import { type AppEnv, BODY_METHODS, limitBody, MiB } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { agentRoutes } from "./agents.ts";
import { allowedClients } from "./client_address.ts";
import { dialRoutes } from "./dial.ts";
import { handshakeRoutes } from "./handshake.ts";
import { userRoutes } from "./users.ts";

export function legacyRoutes(services: Services) {
  return new Hono<AppEnv>()
    .use(allowedClients(services.config))
    .on(BODY_METHODS, "*", limitBody(() => MiB))
    .route("/", userRoutes(services))
    .route("/", dialRoutes(services))
    .route("/", agentRoutes(services))
    .route("/", handshakeRoutes(services));
}

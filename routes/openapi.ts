/**
 * The OpenAPI 3.1 document of the whole app (docs/openapi.md), generated from the app's route
 * table on first request and kept: `GET /svc/api/2.0/openapi.json` (every area), and, as the
 * daemons svc stands in for serve theirs, `GET /1.1/api/api.yml` (the configuration daemon),
 * `GET /api/api.yml` (the agent daemon, whose clients' base is svc's root) and
 * `GET /0.1/api/api.yml` (xivo-auth), each a YAML document of its area's paths relative to its
 * base. No token: the document says what exists, not what anyone holds.
 */
import { Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../lib/http.ts";
import {
  type Area,
  type OpenApiDocument,
  openApiDocument,
  type RouteEntry,
  subDocument,
} from "../lib/openapi/generate.ts";
import { operation } from "../lib/openapi/operation.ts";
import { AGENTD_ERROR_BODY } from "../daemons/agentd/errors.ts";
import { CALLD_ERROR_BODY } from "../daemons/calld/errors.ts";
import { CONFD_ERROR_BODY } from "../daemons/confd/errors.ts";
import { XIVO_AUTH_ERROR_BODY } from "./xivo_auth.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/**
 * The body of every 2.0 and 1.0 error (`lib/errors.ts`'s `ApiError`), e.g.
 * `{"error": "UserNotFound", "message": "…"}`.
 */
export const API_ERROR_BODY = z.lazy(() =>
  z.object({
    error: z.string().meta({ description: "The error code, e.g. `UserNotFound`" }),
    message: z.string().meta({ description: "What went wrong, for people" }),
  })
);

/** Where the whole document is served. */
export const OPENAPI_PATH = "/svc/api/2.0/openapi.json";

/** The documents of one area, served by the app at the daemon's usual place. */
const AREA_DOCUMENTS = [
  { path: "/1.1/api/api.yml", base: "/1.1", tag: "Configuration daemon (1.1)" },
  { path: "/api/api.yml", base: "/", tag: "Agent daemon" },
  { path: "/0.1/api/api.yml", base: "/0.1", tag: "xivo-auth tokens (0.1)" },
  { path: "/1.0/api/api.yml", base: "/1.0", tag: "Call daemon (1.0)" },
] as const;

/** The paths of the service itself: health, readiness, the documentation and the wallboard page. */
const SERVICE_PATHS = new Set([
  "/health",
  "/ready",
  "/version",
  "/metrics",
  "/docs",
  "/docs/:asset",
  "/supervision",
  "/supervision/:file",
  OPENAPI_PATH,
  ...AREA_DOCUMENTS.map(({ path }) => path),
]);

const under = (prefix: string) => (path: string) =>
  path === prefix || path.startsWith(`${prefix}/`);
const isAgentd = (path: string) =>
  under("/agents")(path) || under("/users/me/agents")(path) || path === "/status";

/** The API's areas, in the order a path is matched against them. */
export const AREAS: readonly Area[] = [
  {
    tag: "Service",
    description: "Health, readiness, this documentation and the supervisor's wallboard page " +
      "(no token).",
    owns: (path) => SERVICE_PATHS.has(path),
    error: { name: "ApiError", schema: API_ERROR_BODY },
    guardErrors: {},
    bodyErrors: {},
  },
  {
    tag: "REST API 2.0",
    description: "The current API, below `/svc/api/2.0`: tokens, personal contacts, call " +
      "qualifications, mobile push, dial, DND, forwards, history, callback lists, events, the " +
      "CTI channel and the simulator's controls. Errors are `{error, message}`.",
    owns: under("/svc/api/2.0"),
    error: { name: "ApiError", schema: API_ERROR_BODY },
    guardErrors: {
      400: "`AuthorizationHeaderNotFound` or `BearerNotFound`: no token sent",
      401: "`InvalidToken` or `TokenExpired`",
      403: "`Forbidden`: the token lacks the route's ACL",
    },
    bodyErrors: {
      400: "The body is missing, not JSON or off the model (the route's codes)",
      413: "`PayloadTooLarge`",
    },
  },
  {
    tag: "REST API 1.0 (deprecated)",
    description: "The deprecated API, below `/svc/api/1.0`: no token, the client's address " +
      "must be listed in `SVC_DEPRECATED_API_HOST` (else 403). Errors are `{error, message}`.",
    owns: under("/svc/api/1.0"),
    error: { name: "ApiError", schema: API_ERROR_BODY },
    guardErrors: {},
    bodyErrors: {
      400: "The body is missing, not JSON or off the model",
      403: "`Forbidden`: the client's address is not allowed",
      413: "`PayloadTooLarge`",
    },
  },
  {
    tag: "Configuration daemon (1.1)",
    description: "The configuration daemon, below `/1.1`, for web service users: users, " +
      "lines, endpoints, devices, extensions, contexts, voicemails, agents, queues and more. " +
      'Errors are an array of texts, e.g. `["Resource Not Found - …"]`.',
    owns: under("/1.1"),
    error: { name: "ConfdErrors", schema: CONFD_ERROR_BODY },
    guardErrors: {
      401: "`Unauthorized - …`: no token, or a bad or expired one",
      403: "`Forbidden - …`: the token lacks the ACL or is not a web service user's",
    },
    bodyErrors: {
      400: "`Input Error - …`: the body is not a JSON object, or a field is wrong",
      413: "`PayloadTooLarge - …`",
    },
  },
  {
    tag: "Agent daemon",
    description: "The agent daemon: agents' statuses, login, logoff, pause, queues " +
      "(`/agents`), the user's own agent (`/users/me/agents`), the service status (`/status`). " +
      'Errors are `{"error": text}`.',
    owns: isAgentd,
    error: { name: "AgentdError", schema: AGENTD_ERROR_BODY },
    guardErrors: { 401: "`invalid token or unauthorized`: any token problem or a missing ACL" },
    bodyErrors: { 400: "`invalid fields: …`", 413: "The body is too large" },
  },
  {
    tag: "Call daemon (1.0)",
    description: "Control of calls in progress, below `/1.0`, as wazo-calld answers its " +
      "clients: calls (hold, answer, mute, DTMF, recording, hang-up), transfers and ad-hoc " +
      "conferences, for every call (`/calls`, `/transfers`) or a user's own (`/users/me/…`). " +
      "Errors are `{message, error_id, details, timestamp}`.",
    owns: under("/1.0"),
    error: { name: "CalldError", schema: CALLD_ERROR_BODY },
    guardErrors: {
      400: "`token-with-user-uuid-required`: a `/users/me` route with a web service user's token",
      401: "`unauthorized`: no token, a bad or expired one, or the ACL missing",
    },
    bodyErrors: {
      400: "`invalid-data`: what is wrong, field by field",
      413: "The body is too large",
    },
  },
  {
    tag: "xivo-auth tokens (0.1)",
    description: "Tokens for clients written for xivo-auth, below `/0.1`. Errors are " +
      "xivo-auth's `{reason: [text], timestamp: [seconds], status_code}`.",
    owns: under("/0.1"),
    error: { name: "XivoAuthError", schema: XIVO_AUTH_ERROR_BODY },
    guardErrors: {},
    bodyErrors: { 400: "`Invalid JSON body: …`", 413: "The body is too large" },
  },
];

const INFO = {
  title: "svc",
  version: "2.0",
  description: "Controls a telephony platform over HTTP. This document is generated from the " +
    "server's own route table and the schemas its routes read with; every route is in it. " +
    "A route's ACL is in its description and in `x-acl` (`{name}` is the path value, with `.` " +
    "replaced by `_`). Send the token as `Authorization: Bearer <token>` or `X-Auth-Token`.",
};

/** The whole document of a route table. */
export function appDocument(routes: readonly RouteEntry[]): OpenApiDocument {
  return openApiDocument(routes, { info: INFO, areas: AREAS });
}

/** An answer generated once, on first request, then kept. */
function kept(make: () => string): () => string {
  let made: string | undefined;
  return () => made ??= make();
}

/**
 * The document routes of the app whose route table `routes()` answers (read on first request,
 * once every route is mounted).
 */
export function openApiRoutes(routes: () => readonly RouteEntry[]) {
  const document = (() => {
    let made: OpenApiDocument | undefined;
    return () => made ??= appDocument(routes());
  })();
  const json = kept(() => JSON.stringify(document()));
  const app = new Hono<AppEnv>().get(
    OPENAPI_PATH,
    operation(() => ({
      summary: "The OpenAPI 3.1 document of every area",
      responses: { 200: { mediaType: "application/json", description: "The document" } },
    }), (c) => c.body(json(), 200, { "Content-Type": "application/json; charset=utf-8" })),
  );
  for (const { path, base, tag } of AREA_DOCUMENTS) {
    const keep = (openApiPath: string) =>
      AREAS.find((area) => area.tag === tag)!.owns(openApiPath.replace(/\{(\w+)\}/g, ":$1")) ||
      openApiPath === path;
    // no anchors and aliases: each part written out, as other readers expect; the YAML library
    // is loaded by the first request of such a document, not at start
    let yaml: Promise<string> | undefined;
    const yamlText = () =>
      yaml ??= import("js-yaml").then(({ dump }) =>
        dump(subDocument(document(), base, keep), { noRefs: true, lineWidth: -1 })
      );
    app.get(
      path,
      operation(
        () => ({
          summary: `The OpenAPI 3.1 document of the ${tag.replace(/ \(.*\)$/, "")}, in YAML`,
          description: `Its paths are relative to \`${base}\`, as the daemon's own document's are.`,
          responses: { 200: { mediaType: "application/yaml", description: "The document" } },
        }),
        async (c) =>
          c.body(await yamlText(), 200, { "Content-Type": "application/yaml; charset=utf-8" }),
      ),
    );
  }
  return app;
}

/**
 * The OpenAPI 3.1 document of the whole app (docs/openapi.md), made from its route table: the
 * areas, their error bodies, the service's own paths. Loaded by the first request of a document
 * (routes/openapi.ts) with the generator and zod, not at start (docs/performance.md).
 */
import * as z from "zod";
import {
  type Area,
  type OpenApiDocument,
  openApiDocument,
  type RouteEntry,
  subDocument,
} from "../lib/openapi/generate.ts";
import { AGENTD_ERROR_BODY } from "../daemons/agentd/errors.ts";
import { CALLD_ERROR_BODY } from "../daemons/calld/errors.ts";
import { CONFD_ERROR_BODY } from "../daemons/confd/errors.ts";
import { AREA_DOCUMENTS, OPENAPI_PATH } from "./openapi_paths.ts";
import { XIVO_AUTH_ERROR_BODY } from "./xivo_auth.ts";

/**
 * The body of every 2.0 and 1.0 error (`lib/errors.ts`'s `ApiError`), e.g.
 * `{"error": "UserNotFound", "message": "…"}`.
 */
const API_ERROR_BODY = z.object({
  error: z.string().meta({ description: "The error code, e.g. `UserNotFound`" }),
  message: z.string().meta({ description: "What went wrong, for people" }),
});

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

/** The part of `document` an area's own document holds: its paths, relative to its base. */
export function areaDocument(
  document: OpenApiDocument,
  { path, base, tag }: typeof AREA_DOCUMENTS[number],
): OpenApiDocument {
  const keep = (openApiPath: string) =>
    AREAS.find((area) => area.tag === tag)!.owns(openApiPath.replace(/\{(\w+)\}/g, ":$1")) ||
    openApiPath === path;
  return subDocument(document, base, keep);
}

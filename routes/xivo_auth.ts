/**
 * xivo-auth compatible tokens (issue 14; docs/xivo_auth.md), mounted at `/0.1`, for clients
 * written for xivo-auth's API 0.1 (port 9497):
 *
 * - `POST /0.1/token`: HTTP basic auth (login:password) and `{"backend", "expiration"}`; the
 *   backends are `xivo_service` (a web service user) and `xivo_user` (a CTI user). Answers 200
 *   `{"data": {token, auth_id, xivo_user_uuid, xivo_uuid, issued_at, expires_at, utc_issued_at,
 *   utc_expires_at, acls}}`; the token is svc's own JWT, so every area accepts it, from
 *   `X-Auth-Token` as from `Authorization: Bearer`.
 * - `HEAD /0.1/token/{token}` (204) and `GET /0.1/token/{token}` (200, the token's data), with an
 *   optional `scope` (an ACL the token must grant, else 403); 404 for a token that is forged,
 *   expired, or whose user no longer exists.
 * - `GET /0.1/backends`: the backend names.
 *
 * No ACL on any of them, as in xivo-auth: the POST is authenticated by its password, the checks
 * need the token itself. Every error is xivo-auth's `{"reason": [text], "timestamp": [seconds],
 * "status_code": n}`.
 */
import { serverUuid } from "../lib/store/server_identity.ts";
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { decodeJwt } from "jose/jwt/decode";
import * as z from "zod";
import { ctiUserAcls, expandAcls, isAllowed } from "../lib/auth/acl.ts";
import { authenticate } from "../lib/auth/authenticate.ts";
import type { Identity } from "../lib/auth/tokens.ts";
import type { Clock } from "../lib/clock.ts";
import { ApiError, IncompleteBody, Unreachable } from "../lib/errors.ts";
import {
  type AppEnv,
  BODY_METHODS,
  limitBody,
  logUnreachable,
  MiB,
  storeLimitError,
} from "../lib/http.ts";
import type { Logger } from "../lib/log.ts";
import type { NoRouteOf } from "../lib/no_route.ts";
import type { Services } from "../lib/services.ts";
import { markConnected } from "../lib/store/connections.ts";
import { findUserByUsername, getUser } from "../lib/store/users.ts";
import { findWebServiceUserByLogin, getWebServiceUser } from "../lib/store/webservice_users.ts";

/** The backends served, as xivo-auth named them. */
export const XIVO_AUTH_BACKENDS = ["xivo_service", "xivo_user"] as const;

type Backend = typeof XIVO_AUTH_BACKENDS[number];

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** The body of every error here, xivo-auth's: `reason` holds one text. */
export const XIVO_AUTH_ERROR_BODY = z.lazy(() =>
  z.object({
    reason: z.array(z.string()),
    timestamp: z.array(z.number()),
    status_code: z.number().int(),
  })
);

/** An answer in xivo-auth's error form; `reason` is its one text. */
export class XivoAuthError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    reason: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(reason);
    this.name = "XivoAuthError";
  }
}

/** Any failed login (no or bad credentials, an unknown backend): one answer, as xivo-auth. */
const authenticationFailed = () => new XivoAuthError(401, "Authentication Failed");
const noSuchToken = () => new XivoAuthError(404, "No such token");
const invalidBody = (why: string) => new XivoAuthError(400, `Invalid JSON body: ${why}`);

/** What a token request asks for. */
interface TokenRequest {
  backend: string;
  /** Seconds; null for the configured time to live. */
  expiration: number | null;
}

/**
 * Reads `{"backend", "expiration"}`: a JSON object (400 otherwise) with a string `backend` and, if
 * present and not null, an integer `expiration` from 1 to `maxTtl` (`SVC_TOKEN_TTL`). Other fields
 * are ignored.
 */
function tokenRequest(text: string, maxTtl: number): TokenRequest {
  if (!text.trim()) throw invalidBody("the request has no body");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidBody("the body is not valid JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalidBody("the body must be a JSON object");
  }
  const { backend, expiration } = body as Record<string, unknown>;
  if (typeof backend !== "string") {
    throw new XivoAuthError(400, "Invalid value supplied for field: backend");
  }
  if (expiration === undefined || expiration === null) return { backend, expiration: null };
  if (
    typeof expiration !== "number" || !Number.isInteger(expiration) || expiration < 1 ||
    expiration > maxTtl
  ) {
    throw new XivoAuthError(
      400,
      `Invalid expiration: must be an integer from 1 to ${maxTtl} seconds (SVC_TOKEN_TTL)`,
    );
  }
  return { backend, expiration };
}

const isBackend = (name: string): name is Backend =>
  (XIVO_AUTH_BACKENDS as readonly string[]).includes(name);

/**
 * The login and password of `Authorization: Basic <base64 of login:password>`; null when the
 * header is absent or malformed (another scheme, bad base64, no colon, an empty login). The bytes
 * are read as UTF-8, else as Latin-1 (what older clients send).
 */
export function basicCredentials(
  authorization: string | undefined,
): { login: string; password: string } | null {
  const encoded = authorization?.match(/^Basic +([A-Za-z0-9+/]+=*) *$/i)?.[1];
  if (!encoded) return null;
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.from(atob(encoded), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    text = new TextDecoder("latin1").decode(bytes);
  }
  const colon = text.indexOf(":");
  if (colon < 1) return null;
  return { login: text.slice(0, colon), password: text.slice(colon + 1) };
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0");

/**
 * `ms` as xivo-auth wrote times (Python's `isoformat()`, no zone): `2026-01-01T10:16:58.557000`,
 * in the server's local time, or in UTC with `utc`. The microseconds are always written (Python
 * left them out when they were 0, which broke clients parsing `%f`).
 */
export function xivoTime(ms: number, utc = false): string {
  const d = new Date(ms);
  const [year, month, day, hours, minutes, seconds, millis] = utc
    ? [
      d.getUTCFullYear(),
      d.getUTCMonth() + 1,
      d.getUTCDate(),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
      d.getUTCMilliseconds(),
    ]
    : [
      d.getFullYear(),
      d.getMonth() + 1,
      d.getDate(),
      d.getHours(),
      d.getMinutes(),
      d.getSeconds(),
      d.getMilliseconds(),
    ];
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(hours)}:${pad(minutes)}:${pad(seconds)}.${
    pad(millis, 3)
  }000`;
}

/**
 * A token's data as xivo-auth answered it. `userUuid` is the CTI user's uuid (its `auth_id` and
 * `xivo_user_uuid`); a web service user has none, so its `auth_id` is its id. `xivo_uuid` is this
 * server's uuid (the agent daemon's `origin_uuid`).
 */
function tokenData(
  token: string,
  identity: Identity,
  userUuid: string | null,
  xivoUuid: string,
) {
  // the token was verified or just signed: its claims are ours
  const { issuedAt, expiresAt } = decodeJwt(token) as { issuedAt: number; expiresAt: number };
  return {
    token,
    auth_id: userUuid ?? identity.userId,
    xivo_user_uuid: userUuid,
    xivo_uuid: xivoUuid,
    issued_at: xivoTime(issuedAt),
    expires_at: xivoTime(expiresAt),
    utc_issued_at: xivoTime(issuedAt, true),
    utc_expires_at: xivoTime(expiresAt, true),
    acls: expandAcls(identity.acls),
  };
}

/** The sub-app's error handler: every failure in xivo-auth's form; unexpected ones logged. */
function xivoAuthErrorHandler(logger: Logger, clock: Clock) {
  return (error: Error, c: Context<AppEnv>): Response => {
    const answer = (status: ContentfulStatusCode, reason: string, headers = {}) =>
      c.json(
        { reason: [reason], timestamp: [clock.now() / 1000], status_code: status },
        status,
        headers,
      );
    error = storeLimitError(logger, c.get("requestId"), error);
    if (error instanceof XivoAuthError) return answer(error.status, error.message, error.headers);
    // the connection ended or broke before the body did (lib/http.ts reads every body)
    if (error instanceof IncompleteBody) {
      return answer(400, "Invalid JSON body: the body was cut short");
    }
    if (error instanceof ApiError) {
      // what the shared layers throw: a wrong password, the login throttle (429 with
      // Retry-After), a body over the limit (413)
      if (error.code === "InvalidCredentials") return answer(401, "Authentication Failed");
      return answer(error.status, error.message, error.headers);
    }
    const requestId = c.get("requestId");
    if (error instanceof Unreachable) {
      logUnreachable(logger, requestId, error);
      return answer(503, error.message);
    }
    logger.error("unhandled error", { requestId, error: String(error), stack: error.stack });
    return answer(500, `internal error, request id ${requestId}`);
  };
}

export function xivoAuthRoutes(services: Services, noRoute: NoRouteOf) {
  const { store, tokens, clock, config, logger } = services;

  /**
   * Checks the credentials against the backend's users, with the login throttle of the matching
   * 2.0 route (`/auth/webservice` or `/auth/login`): one count per login across both routes.
   */
  async function logIn(backend: Backend, credentials: { login: string; password: string }) {
    if (backend === "xivo_service") {
      const user = await authenticate(
        services,
        "webservice",
        credentials,
        (login) => findWebServiceUserByLogin(store, login),
      );
      const identity: Identity = {
        userId: String(user.id),
        login: user.login,
        userType: "webservice",
        acls: user.acls,
      };
      return { identity, userUuid: null };
    }
    const user = await authenticate(
      services,
      "cti",
      credentials,
      (login) => findUserByUsername(store, login),
    );
    const identity: Identity = {
      userId: String(user.id),
      login: user.username!,
      userType: "cti",
      acls: ctiUserAcls(),
    };
    return { identity, userUuid: user.uuid };
  }

  /**
   * The identity of a token that verifies, has not expired and whose user still exists, with the
   * CTI user's uuid; else 404 `No such token`, whatever was wrong (as xivo-auth). With `scope`, the
   * token must grant that ACL, else 403 `Unauthorized for <scope>`.
   */
  async function checkToken(token: string, scope: string | undefined) {
    let identity: Identity;
    try {
      identity = await tokens.verify(token);
    } catch (error) {
      if (error instanceof ApiError) throw noSuchToken(); // forged, damaged or expired
      throw error;
    }
    const id = Number(identity.userId);
    let userUuid: string | null = null;
    if (identity.userType === "cti") {
      const user = await getUser(store, id);
      if (!user) throw noSuchToken();
      userUuid = user.uuid;
    } else if (!await getWebServiceUser(store, id)) {
      throw noSuchToken();
    }
    if (scope && !isAllowed(identity.acls, scope, identity.userId)) {
      throw new XivoAuthError(403, `Unauthorized for ${scope}`);
    }
    return { identity, userUuid };
  }

  const app = new Hono<AppEnv>();
  app.on(BODY_METHODS, "*", limitBody(() => MiB));
  app
    .post("/token", async (c) => {
      const request = tokenRequest(await c.req.text(), config.tokenTtl);
      if (!isBackend(request.backend)) throw authenticationFailed();
      const credentials = basicCredentials(c.req.header("authorization"));
      if (!credentials) throw authenticationFailed();
      const { identity, userUuid } = await logIn(request.backend, credentials);
      const { token } = await tokens.issue(identity, request.expiration ?? config.tokenTtl);
      const data = tokenData(token, identity, userUuid, await serverUuid(store));
      if (identity.userType === "cti") {
        // a CTI user holding a token is connected (decisions §2), as after /auth/login
        const { expiresAt } = decodeJwt(token) as { expiresAt: number };
        await markConnected(store, Number(identity.userId), clock.now(), expiresAt);
      }
      return c.json({ data });
    })
    // HEAD is answered by this GET route (Hono), without the body
    .get("/token/:token", async (c) => {
      const token = c.req.param("token");
      const { identity, userUuid } = await checkToken(token, c.req.query("scope"));
      if (c.req.method === "HEAD") return c.body(null, 204);
      return c.json({ data: tokenData(token, identity, userUuid, await serverUuid(store)) });
    })
    .get("/backends", (c) => c.json({ data: XIVO_AUTH_BACKENDS }));
  // svc's tokens are signed, not stored: none can be revoked (DELETE answers this 404 too)
  app.all("*", (c) => {
    const { status, message, headers } = noRoute(c);
    throw new XivoAuthError(status, message, headers);
  });
  app.onError(xivoAuthErrorHandler(logger, clock));
  return app;
}

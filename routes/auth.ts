/**
 * Authentication endpoints: `POST /auth/login` (CTI users), `POST /auth/webservice` (web service
 * users), `GET /auth/check` (renews a token), and the single sign-on routes, which answer with their
 * "not configured" errors until single sign-on is built.
 */
import { Hono } from "hono";
import { z } from "zod";
import { CTI_USER_ALIAS } from "../lib/auth/acl.ts";
import { readToken } from "../lib/auth/guard.ts";
import { verifyPassword } from "../lib/auth/passwords.ts";
import type { Identity } from "../lib/auth/tokens.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readJson } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { markConnected } from "../lib/store/connections.ts";
import { findUserByUsername, getUser } from "../lib/store/users.ts";
import { findWebServiceUserByLogin, getWebServiceUser } from "../lib/store/webservice_users.ts";

const credentialsSchema = z.object({ login: z.string(), password: z.string() });

/** No login is longer; a longer one cannot match and must not reach the store's key limit. */
const MAX_LOGIN_LENGTH = 256;

const invalidCredentials = () =>
  new ApiError(401, "InvalidCredentials", "invalid login and/or password");

export function authRoutes(services: Services) {
  const { store, tokens, throttle, clock } = services;

  /** Issues a token; a CTI user becomes connected for the token's lifetime. */
  async function tokenResult(identity: Identity) {
    const { token, ttl } = await tokens.issue(identity);
    if (identity.userType === "cti") {
      const now = clock.now();
      await markConnected(store, Number(identity.userId), now, now + ttl * 1000);
    }
    return { login: identity.login, token, TTL: ttl };
  }

  /**
   * Checks a login and password against `find`, counting failures for the throttle; answers the
   * identity of the user on success.
   */
  async function authenticate<T extends { password_hash: string | null }>(
    kind: "cti" | "webservice",
    body: { login: string; password: string },
    find: (login: string) => Promise<T | null>,
  ): Promise<T> {
    if (body.login.length > MAX_LOGIN_LENGTH) throw invalidCredentials();
    await throttle.check(kind, body.login);
    const user = await find(body.login);
    if (!await verifyPassword(body.password, user?.password_hash ?? null) || !user) {
      await throttle.recordFailure(kind, body.login);
      throw invalidCredentials();
    }
    await throttle.reset(kind, body.login);
    return user;
  }

  return new Hono<AppEnv>()
    .post("/auth/login", async (c) => {
      const body = await readJson(c, credentialsSchema, "InvalidJson");
      const user = await authenticate("cti", body, (login) => findUserByUsername(store, login));
      return c.json(
        await tokenResult({
          userId: String(user.id),
          login: body.login,
          userType: "cti",
          acls: [CTI_USER_ALIAS],
        }),
      );
    })
    .post("/auth/webservice", async (c) => {
      const body = await readJson(c, credentialsSchema, "InvalidJson");
      const user = await authenticate(
        "webservice",
        body,
        (login) => findWebServiceUserByLogin(store, login),
      );
      return c.json(
        await tokenResult({
          userId: String(user.id),
          login: user.login,
          userType: "webservice",
          acls: user.acls,
        }),
      );
    })
    .get("/auth/check", async (c) => {
      const identity = await tokens.verify(readToken(c));
      const id = Number(identity.userId);
      const user = identity.userType === "cti"
        ? await getUser(store, id)
        : await getWebServiceUser(store, id);
      if (!user) throw new ApiError(401, "UserNotFound", "the token's user no longer exists");
      return c.json(await tokenResult(identity));
    })
    .get("/auth/sso", () => {
      throw new ApiError(
        401,
        "SsoAuthenticationFailed",
        "Kerberos single sign-on is not configured",
      );
    })
    .get("/auth/cas", () => {
      throw new ApiError(403, "CasServerUrlNotSet", "CAS authentication is not configured");
    })
    .get("/auth/oidc", () => {
      throw new ApiError(403, "OidcNotEnabled", "OpenID Connect authentication is not enabled");
    });
}

/**
 * Authentication endpoints: `POST /auth/login` (CTI users), `POST /auth/webservice` (web service
 * users), `GET /auth/check` (renews a token), and single sign-on for CTI users: `GET /auth/sso`
 * (Kerberos SPNEGO), `GET /auth/cas` (a CAS service ticket) and `GET /auth/oidc` (an OpenID Connect
 * access token), each answering its "not configured" error while its setting is unset.
 */
import { Hono } from "hono";
import { z } from "zod";
import { CTI_USER_ALIAS } from "../lib/auth/acl.ts";
import { authenticate, MAX_LOGIN_LENGTH } from "../lib/auth/authenticate.ts";
import { readToken } from "../lib/auth/guard.ts";
import { validateCasTicket } from "../lib/auth/sso/cas.ts";
import { KerberosAcceptor } from "../lib/auth/sso/kerberos.ts";
import { OidcVerifier } from "../lib/auth/sso/oidc.ts";
import type { Identity } from "../lib/auth/tokens.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readJson } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { markConnected } from "../lib/store/connections.ts";
import { findUserByUsername, getUser } from "../lib/store/users.ts";
import { findWebServiceUserByLogin, getWebServiceUser } from "../lib/store/webservice_users.ts";

const credentialsSchema = z.object({ login: z.string(), password: z.string() });

export function authRoutes(services: Services) {
  const { store, tokens, throttle, clock, config } = services;
  const oidc = config.oidcIssuer
    ? new OidcVerifier({
      issuer: config.oidcIssuer,
      audience: config.oidcAudience,
      loginClaim: config.oidcLoginClaim,
      clock,
    })
    : null;
  const kerberos = config.krb5Keytab ? new KerberosAcceptor(config.krb5Keytab) : null;

  /**
   * Single sign-on is for CTI users only (spec): the login must be a user's `username`, else 401
   * `UserNotFound` (a web service user's login is not one).
   */
  async function ssoTokenResult(login: string) {
    const user = login && login.length <= MAX_LOGIN_LENGTH
      ? await findUserByUsername(store, login)
      : null;
    if (!user) throw new ApiError(401, "UserNotFound", `no CTI user ${JSON.stringify(login)}`);
    return await tokenResult({
      userId: String(user.id),
      login: user.username!,
      userType: "cti",
      acls: [CTI_USER_ALIAS],
    });
  }

  /**
   * Issues a token (or, for `/auth/check`, the renewal of `presented`); a CTI user becomes
   * connected for the token's lifetime.
   */
  async function tokenResult(identity: Identity, presented?: string) {
    const { token, ttl } = presented === undefined
      ? await tokens.issue(identity)
      : await tokens.renew(presented, identity);
    if (identity.userType === "cti") {
      const now = clock.now();
      await markConnected(store, Number(identity.userId), now, now + ttl * 1000);
    }
    return { login: identity.login, token, TTL: ttl };
  }

  return new Hono<AppEnv>()
    .post("/auth/login", async (c) => {
      const body = await readJson(c, credentialsSchema, "InvalidJson");
      const user = await authenticate(
        throttle,
        "cti",
        body,
        (login) => findUserByUsername(store, login),
      );
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
        throttle,
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
      const presented = readToken(c);
      const identity = await tokens.verify(presented);
      const id = Number(identity.userId);
      const user = identity.userType === "cti"
        ? await getUser(store, id)
        : await getWebServiceUser(store, id);
      if (!user) throw new ApiError(401, "UserNotFound", "the token's user no longer exists");
      return c.json(await tokenResult(identity, presented));
    })
    .get("/auth/sso", async (c) => {
      if (!kerberos) {
        throw new ApiError(
          401,
          "SsoAuthenticationFailed",
          "Kerberos single sign-on is not configured",
        );
      }
      const offered = c.req.header("authorization")?.match(/^Negotiate +(\S+)\s*$/i)?.[1];
      if (!offered) {
        throw new ApiError(401, "SsoAuthenticationFailed", "no Kerberos token was offered", {
          "WWW-Authenticate": "Negotiate",
        });
      }
      const { principal, responseToken } = await kerberos.accept(offered);
      const result = await ssoTokenResult(principal.split("@")[0] ?? "");
      if (responseToken) c.header("WWW-Authenticate", `Negotiate ${responseToken}`);
      return c.json(result);
    })
    .get("/auth/cas", async (c) => {
      if (!config.casUrl) {
        throw new ApiError(403, "CasServerUrlNotSet", "CAS authentication is not configured");
      }
      const service = c.req.query("service");
      const ticket = c.req.query("ticket");
      if (!service || !ticket) {
        throw new ApiError(403, "CasServerInvalidParameter", "service and ticket are required");
      }
      return c.json(await ssoTokenResult(await validateCasTicket(config.casUrl, service, ticket)));
    })
    .get("/auth/oidc", async (c) => {
      if (!oidc) {
        throw new ApiError(403, "OidcNotEnabled", "OpenID Connect authentication is not enabled");
      }
      const accessToken = c.req.query("token") ||
        c.req.header("authorization")?.match(/^Bearer +(\S+)\s*$/i)?.[1];
      if (!accessToken) throw new ApiError(403, "OidcInvalidParameter", "access_token missing");
      return c.json(await ssoTokenResult(await oidc.login(accessToken)));
    });
}

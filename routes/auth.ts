/**
 * Authentication endpoints: `POST /auth/login` (CTI users), `POST /auth/webservice` (web service
 * users), `GET /auth/check` (renews a token), and single sign-on for CTI users: `GET /auth/sso`
 * (Kerberos SPNEGO), `GET /auth/cas` (a CAS service ticket) and `GET /auth/oidc` (an OpenID Connect
 * access token), each answering its "not configured" error while its setting is unset. The single
 * sign-on implementations (`lib/auth/sso/`) load at their route's first request: most servers never
 * use them, and a start need not read or compile them (in the bundle they are files of their own,
 * `tools/finish_bundle.ts`).
 */
import { operation, type OperationMeta } from "../lib/openapi/operation.ts";
import { Hono, type MiddlewareHandler } from "hono";
import * as z from "zod";
import { ctiUserAcls } from "../lib/auth/acl.ts";
import { authenticate, MAX_LOGIN_LENGTH } from "../lib/auth/authenticate.ts";
import { readToken } from "../lib/auth/guard.ts";
import { tokenAnswer } from "../lib/auth/token_answer.ts";
import type { KerberosAcceptor } from "../lib/auth/sso/kerberos.ts";
import type { OidcVerifier } from "../lib/auth/sso/oidc.ts";
import type { Identity } from "../lib/auth/tokens.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readJson } from "../lib/http.ts";
import type { LoginMethod } from "../lib/metrics.ts";
import type { Services } from "../lib/services.ts";
import { findUserByUsername, getUser } from "../lib/store/users.ts";
import { findWebServiceUserByLogin, getWebServiceUser } from "../lib/store/webservice_users.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const credentialsSchema = z.lazy(() => z.object({ login: z.string(), password: z.string() }));

/** Every route's answer: the login, a new token and its time to live in seconds. */
const tokenBody = z.lazy(() => z.object({ login: z.string(), token: z.string(), TTL: z.int() }));

const credentialsDoc = (summary: string): OperationMeta => ({
  summary,
  body: credentialsSchema,
  responses: { 200: tokenBody },
  errors: {
    400: "`InvalidJson`: no body, not JSON, or off the model",
    401: "`InvalidCredentials`",
    429: "`TooManyAttempts`: wait `Retry-After` seconds",
  },
});

const ssoDoc = (summary: string, errors: Record<number, string>, query?: z.ZodObject) => ({
  summary,
  ...(query ? { query } : {}),
  responses: { 200: tokenBody },
  errors: { 401: "`UserNotFound`: the login is no CTI user's", ...errors },
});

export function authRoutes(services: Services) {
  const { store, tokens, clock, config, metrics } = services;
  // each built at the first request of its route, when its setting is set
  let oidc: Promise<OidcVerifier> | undefined;
  const oidcVerifier = (issuer: string) =>
    oidc ??= import("../lib/auth/sso/oidc.ts").then(({ OidcVerifier }) =>
      new OidcVerifier({
        issuer,
        audience: config.oidcAudience,
        loginClaim: config.oidcLoginClaim,
        clock,
      })
    );
  let kerberos: Promise<KerberosAcceptor> | undefined;
  const kerberosAcceptor = (keytab: string) =>
    kerberos ??= import("../lib/auth/sso/kerberos.ts").then(({ KerberosAcceptor }) =>
      new KerberosAcceptor(keytab)
    );

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
      acls: ctiUserAcls(),
    });
  }

  /**
   * Counts a single sign-on login in `svc_logins_total` by its answer: 200 a success, a 4xx a
   * refusal (no proof, one not accepted, an unknown user, the method not configured).
   */
  const countedSso = (method: LoginMethod): MiddlewareHandler<AppEnv> => async (c, next) => {
    await next();
    const { status } = c.res;
    if (status === 200) metrics.login("cti", method, "success");
    else if (status >= 400 && status < 500) metrics.login("cti", method, "refused");
  };

  /** A new token's answer (or, for `/auth/check`, the renewal of `presented`'s). */
  const tokenResult = (identity: Identity, presented?: string) =>
    tokenAnswer(services, identity, presented);

  return new Hono<AppEnv>()
    .post(
      "/auth/login",
      operation(() => credentialsDoc("A CTI user's token"), async (c) => {
        const body = await readJson(c, credentialsSchema, "InvalidJson");
        const user = await authenticate(
          services,
          "cti",
          body,
          (login) => findUserByUsername(store, login),
        );
        return c.json(
          await tokenResult({
            userId: String(user.id),
            login: body.login,
            userType: "cti",
            acls: ctiUserAcls(),
          }),
        );
      }),
    )
    .post(
      "/auth/webservice",
      operation(() => credentialsDoc("A web service user's token"), async (c) => {
        const body = await readJson(c, credentialsSchema, "InvalidJson");
        const user = await authenticate(
          services,
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
      }),
    )
    .get(
      "/auth/check",
      operation(() => ({
        summary: "Checks a token and answers a renewed one",
        headers: { Authorization: "`Bearer <token>` (or send `X-Auth-Token`)" },
        responses: { 200: tokenBody },
        errors: {
          400: "`AuthorizationHeaderNotFound`, `BearerNotFound`",
          401: "`InvalidToken`, `TokenExpired`, `UserNotFound`",
        },
      }), async (c) => {
        const presented = readToken(c);
        const identity = await tokens.verify(presented);
        const id = Number(identity.userId);
        const gone = () => new ApiError(401, "UserNotFound", "the token's user no longer exists");
        if (identity.userType !== "cti") {
          if (!await getWebServiceUser(store, id)) throw gone();
          return c.json(await tokenResult(identity, presented));
        }
        if (!await getUser(store, id)) throw gone();
        // a CTI user's ACLs (a token of an earlier version may hold more: they go)
        return c.json(await tokenResult({ ...identity, acls: ctiUserAcls() }, presented));
      }),
    )
    .get(
      "/auth/sso",
      countedSso("kerberos"),
      operation(() => ({
        ...ssoDoc("A CTI user's token from Kerberos (SPNEGO)", {
          401: "`SsoAuthenticationFailed` (with `WWW-Authenticate: Negotiate`), `UserNotFound`",
        }),
        headers: { Authorization: "`Negotiate <SPNEGO token>`" },
      }), async (c) => {
        if (!config.krb5Keytab) {
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
        const acceptor = await kerberosAcceptor(config.krb5Keytab);
        const { principal, responseToken } = await acceptor.accept(offered);
        const result = await ssoTokenResult(principal.split("@")[0] ?? "");
        if (responseToken) c.header("WWW-Authenticate", `Negotiate ${responseToken}`);
        return c.json(result);
      }),
    )
    .get(
      "/auth/cas",
      countedSso("cas"),
      operation(
        () =>
          ssoDoc("A CTI user's token from a CAS service ticket", {
            403:
              "`CasServerUrlNotSet`, `CasServerInvalidParameter`, `CasServer…` (the CAS failure)",
          }, z.object({ service: z.string(), ticket: z.string() })),
        async (c) => {
          if (!config.casUrl) {
            throw new ApiError(403, "CasServerUrlNotSet", "CAS authentication is not configured");
          }
          const service = c.req.query("service");
          const ticket = c.req.query("ticket");
          if (!service || !ticket) {
            throw new ApiError(403, "CasServerInvalidParameter", "service and ticket are required");
          }
          const { validateCasTicket } = await import("../lib/auth/sso/cas.ts");
          return c.json(
            await ssoTokenResult(await validateCasTicket(config.casUrl, service, ticket)),
          );
        },
      ),
    )
    .get(
      "/auth/oidc",
      countedSso("oidc"),
      operation(() => ({
        ...ssoDoc("A CTI user's token from an OpenID Connect access token", {
          403: "`OidcNotEnabled`, `OidcInvalidParameter`, `OidcAuthenticationFailed`",
        }, z.object({ token: z.string().optional() })),
        headers: { Authorization: "`Bearer <access token>`, when not in `token`" },
      }), async (c) => {
        if (!config.oidcIssuer) {
          throw new ApiError(403, "OidcNotEnabled", "OpenID Connect authentication is not enabled");
        }
        const accessToken = c.req.query("token") ||
          c.req.header("authorization")?.match(/^Bearer +(\S+)\s*$/i)?.[1];
        if (!accessToken) throw new ApiError(403, "OidcInvalidParameter", "access_token missing");
        const verifier = await oidcVerifier(config.oidcIssuer);
        return c.json(await ssoTokenResult(await verifier.login(accessToken)));
      }),
    );
}

/** Route guards: read the token, verify it, and check the route's ACL template. */
import type { Context, MiddlewareHandler } from "hono";
import { ApiError } from "../errors.ts";
import type { AppEnv } from "../http.ts";
import { guardTag } from "../openapi/operation.ts";
import { checkPathValues } from "../path_values.ts";
import { isAllowed } from "./acl.ts";
import type { Identity, Tokens } from "./tokens.ts";

/**
 * The token of a request: `Authorization: Bearer <t>`, else `X-Auth-Token: <t>`. Neither:
 * 400 `AuthorizationHeaderNotFound`; `Authorization` without `Bearer `: 400 `BearerNotFound`.
 */
export function readToken(c: Context): string {
  const authorization = c.req.header("authorization");
  const bearer = authorization === undefined ? undefined : afterBearer(authorization);
  if (bearer && !/\s/.test(bearer)) return bearer;
  const legacy = legacyToken(c);
  if (legacy) return legacy;
  if (authorization !== undefined) {
    throw new ApiError(400, "BearerNotFound", "token not found in the Authorization header");
  }
  throw new ApiError(400, "AuthorizationHeaderNotFound", "Authorization header absent");
}

/**
 * The identity of the request's token when `tokens` remembers it (see `Tokens.remembered`), else
 * undefined: the hot path of the guards, before {@link readToken}'s checks of the headers' form,
 * which a remembered token passed when it was verified (it holds no space). The token is the one
 * `readToken` would answer when the headers are well formed: `Authorization: Bearer <token>`, or
 * without `Authorization` the `X-Auth-Token` of Wazo's clients; anything else takes the long way.
 */
function rememberedToken(c: Context, tokens: Tokens): Identity | undefined {
  const authorization = c.req.header("authorization");
  const token = authorization === undefined ? legacyToken(c) : afterBearer(authorization);
  return token ? tokens.remembered(token) : undefined;
}

/** What follows `Bearer ` (any case), trimmed and not checked, else undefined; no regexp. */
const afterBearer = (authorization: string): string | undefined =>
  authorization.slice(0, 7).toLowerCase() === "bearer " ? authorization.slice(7).trim() : undefined;

/** The `X-Auth-Token` header of Wazo's clients, trimmed. */
const legacyToken = (c: Context): string | undefined => c.req.header("x-auth-token")?.trim();

/**
 * Fills `{name}` slots of an ACL template from path values, with `.` replaced by `_` so that a
 * value can never add ACL words.
 *
 * @example
 * fillAcl("svc.rest.dnd.{username}.create", { username: "a.b" }); // "svc.rest.dnd.a_b.create"
 */
export const fillAcl = (template: string, params: Record<string, string>): string =>
  aclFiller(template)(params);

/** {@link fillAcl} for one template, split once (a guard fills its template on every request). */
export function aclFiller(template: string): (params: Record<string, string>) => string {
  const parts = template.split(/\{(\w+)\}/); // text, name, text, name, …, text
  return (params) => {
    let filled = parts[0]!;
    for (let i = 1; i < parts.length; i += 2) {
      const value = params[parts[i]!];
      if (value === undefined) {
        throw new Error(`ACL template ${template} names no path value ${parts[i]}`);
      }
      filled += value.replaceAll(".", "_") + parts[i + 1]!;
    }
    return filled;
  };
}

/**
 * The identity of the request's token: at once for a token verified before (the hot path),
 * else once verified ({@link readToken}'s errors, then `Tokens.verify`'s).
 */
export const tokenIdentity = (c: Context, tokens: Tokens): Identity | Promise<Identity> =>
  rememberedToken(c, tokens) ?? tokens.verify(readToken(c));

/**
 * Accepts any valid token and puts its identity in `c.var.identity`; then the path values must
 * meet `lib/path_values.ts` (else `UnknownPathValue`, before any store access).
 */
export function requireToken(tokens: Tokens): MiddlewareHandler<AppEnv> {
  return guardTag(async (c, next) => {
    c.set("identity", rememberedToken(c, tokens) ?? await tokens.verify(readToken(c)));
    checkPathValues(c);
    await next();
  }, {});
}

/**
 * Accepts a valid token holding the ACL `template` filled from the path; otherwise 403
 * `Forbidden` naming the missing ACL. Between the token and the ACL, the path values must meet
 * `lib/path_values.ts` (else `UnknownPathValue`, before any store access): no ACL is built from a
 * value that names nothing. With `ctiOnly`, the route belongs to CTI users: a web service user's
 * token holding the ACL is refused with 403 `Forbidden` and that message.
 *
 * @example
 * app.post("/dnd/:username", requireAcl(tokens, "svc.rest.dnd.{username}.create"), handler);
 */
export function requireAcl(
  tokens: Tokens,
  template: string,
  { ctiOnly }: { ctiOnly?: string } = {},
): MiddlewareHandler<AppEnv> {
  const fill = aclFiller(template);
  const check = (c: Context<AppEnv>, identity: Identity) => {
    const params = c.req.param() as Record<string, string>;
    checkPathValues(c, params);
    const required = fill(params);
    if (!isAllowed(identity.acls, required, identity.userId)) {
      throw new ApiError(403, "Forbidden", `missing ACL ${required}`);
    }
    if (ctiOnly && identity.userType !== "cti") throw new ApiError(403, "Forbidden", ctiOnly);
    c.set("identity", identity);
  };
  // not async: a token verified before is checked without a promise of its own (the hot path)
  const guard: MiddlewareHandler<AppEnv> = (c, next) => {
    const known = rememberedToken(c, tokens);
    if (known) {
      check(c, known);
      return next();
    }
    return tokens.verify(readToken(c)).then((identity) => {
      check(c, identity);
      return next();
    });
  };
  return guardTag(guard, { acl: template, who: ctiOnly && "CTI users only" });
}

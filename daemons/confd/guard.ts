/** The configuration daemon's guard: a web service user's token holding the route's ACL. */
import type { MiddlewareHandler } from "hono";
import { CTI_USER_ALIAS, isAllowed } from "../../lib/auth/acl.ts";
import { aclFiller, readToken, requireAcl, requireToken } from "../../lib/auth/guard.ts";
import { ApiError } from "../../lib/errors.ts";
import { CTI_CONFD_ACLS } from "../../lib/meetingrooms/acls.ts";
import { checkPathValues } from "../../lib/path_values.ts";
import type { Tokens } from "../../lib/auth/tokens.ts";
import type { AppEnv } from "../../lib/http.ts";
import { guardTag } from "../../lib/openapi/operation.ts";
import { ConfdError } from "./errors.ts";

/**
 * Accepts a web service user's token holding `template` filled from the path.
 *
 * @example
 * app.get("/lines/:id", confdAcl(tokens, "confd.lines.{id}.read"), handler);
 */
export function confdAcl(tokens: Tokens, template: string): MiddlewareHandler<AppEnv> {
  return guardTag(webServiceOnly(requireAcl(tokens, template)), {
    acl: template,
    who: "web service users only",
  });
}

/**
 * Accepts any web service user's token, for a route that decides itself who may do what once it
 * has read the record (`GET /jobs/{id}`: the job's owner, or a holder of an ACL).
 */
export function confdUser(tokens: Tokens): MiddlewareHandler<AppEnv> {
  return guardTag(webServiceOnly(requireToken(tokens)), { who: "web service users only" });
}

function webServiceOnly(guard: MiddlewareHandler<AppEnv>): MiddlewareHandler<AppEnv> {
  return (c, next) =>
    guard(c, () => {
      if (c.get("identity").userType !== "webservice") {
        throw new ConfdError(403, ["Forbidden - the configuration API is for web service users"]);
      }
      return next();
    });
}

/**
 * Accepts a CTI user's token holding `template` filled from the path, for a user's own records
 * (`/users/me/…`): `alias.ctiuser` grants `confd.users.me.meetings.#` here (a Wazo user's default
 * policy holds it). Another token is 400 (Wazo's "no user_uuid"), a missing ACL 403.
 */
export function confdMeAcl(tokens: Tokens, template: string): MiddlewareHandler<AppEnv> {
  const fill = aclFiller(template);
  return guardTag(async (c, next) => {
    const identity = await tokens.verify(readToken(c));
    const params = c.req.param() as Record<string, string>;
    checkPathValues(c, params);
    const required = fill(params);
    const granted = identity.acls.includes(CTI_USER_ALIAS)
      ? [...identity.acls, ...CTI_CONFD_ACLS]
      : identity.acls;
    if (!isAllowed(granted, required, identity.userId)) {
      throw new ApiError(403, "Forbidden", `missing ACL ${required}`);
    }
    if (identity.userType !== "cti") {
      throw new ConfdError(400, ["Input Error - field 'user_uuid': the token is no user's"]);
    }
    c.set("identity", identity);
    await next();
  }, { acl: template, who: "CTI users (their own)" });
}

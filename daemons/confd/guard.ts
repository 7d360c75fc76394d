/** The configuration daemon's guard: a web service user's token holding the route's ACL. */
import type { MiddlewareHandler } from "hono";
import { requireAcl, requireToken } from "../../lib/auth/guard.ts";
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

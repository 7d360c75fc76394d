/** The configuration daemon's guard: a web service user's token holding the route's ACL. */
import type { MiddlewareHandler } from "hono";
import { requireAcl } from "../../lib/auth/guard.ts";
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
  const acl = requireAcl(tokens, template);
  return guardTag((c, next) =>
    acl(c, () => {
      if (c.get("identity").userType !== "webservice") {
        throw new ConfdError(403, ["Forbidden - the configuration API is for web service users"]);
      }
      return next();
    }), { acl: template, who: "web service users only" });
}

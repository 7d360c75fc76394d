/**
 * The call daemon's guard (docs/calls.md): a valid token holding the route's ACL, filled from the
 * path with `.` as `_` (a call id `1700000000.42` gives `calld.calls.1700000000_42.read`), as
 * wazo-calld fills its own. Every refusal is the daemon's 401 `unauthorized`. A CTI user's
 * `alias.ctiuser` also grants, here, every route on the user's own calls (`/users/me/…`).
 */
import type { MiddlewareHandler } from "hono";
import { CTI_USER_ALIAS, isAllowed } from "../../lib/auth/acl.ts";
import { fillAcl, readToken } from "../../lib/auth/guard.ts";
import type { Identity, Tokens } from "../../lib/auth/tokens.ts";
import { CTI_CALLD_ACLS } from "../../lib/calls/acls.ts";
import { ApiError } from "../../lib/errors.ts";
import type { AppEnv } from "../../lib/http.ts";
import { guardTag } from "../../lib/openapi/operation.ts";
import { checkPathValues } from "../../lib/path_values.ts";
import { CalldError, unauthorized } from "./errors.ts";

const withCtiAcls = new WeakMap<readonly string[], readonly string[]>();

/** `acls`, plus {@link CTI_CALLD_ACLS} when they hold `alias.ctiuser`. */
function granted(acls: readonly string[]): readonly string[] {
  if (!acls.includes(CTI_USER_ALIAS)) return acls;
  let expanded = withCtiAcls.get(acls);
  if (!expanded) withCtiAcls.set(acls, expanded = [...acls, ...CTI_CALLD_ACLS]);
  return expanded;
}

/**
 * Accepts a token holding `template` filled from the path; `me` routes (`{ me: true }`) need a
 * user's token, else 400 `token-with-user-uuid-required`.
 *
 * @example
 * app.get("/calls/:call_id", calldAcl(tokens, "calld.calls.{call_id}.read"), handler);
 */
export function calldAcl(
  tokens: Tokens,
  template: string,
  { me = false }: { me?: boolean } = {},
): MiddlewareHandler<AppEnv> {
  return guardTag(async (c, next) => {
    let identity: Identity;
    try {
      identity = await tokens.verify(readToken(c));
    } catch (error) {
      throw error instanceof ApiError ? unauthorized(null) : error;
    }
    checkPathValues(c);
    const required = fillAcl(template, c.req.param() as Record<string, string>);
    if (!isAllowed(granted(identity.acls), required, identity.userId)) {
      throw unauthorized(required);
    }
    if (me && identity.userType !== "cti") {
      throw new CalldError(
        400,
        "token-with-user-uuid-required",
        "A valid token with a user UUID is required",
      );
    }
    c.set("identity", identity);
    await next();
  }, { acl: template, who: me ? "CTI users (their own calls)" : undefined });
}

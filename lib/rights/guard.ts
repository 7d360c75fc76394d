/**
 * The guards of the routes a supervisor may call (docs/supervision.md, "Who is a supervisor"): the
 * route's ACL, as every route of the 2.0 API checks it (a web service user's token); else, for a
 * CTI user, its rights profile read from the store at this request. The rights go in
 * `c.var.rights`; the path's queue and agent are checked against them here, so that a route never
 * starts on something its caller may not see.
 */
import type { Context, MiddlewareHandler } from "hono";
import { isAllowed } from "../auth/acl.ts";
import { aclFiller, tokenIdentity } from "../auth/guard.ts";
import type { Identity } from "../auth/tokens.ts";
import { ApiError } from "../errors.ts";
import type { AppEnv } from "../http.ts";
import { guardTag } from "../openapi/operation.ts";
import { checkPathValues } from "../path_values.ts";
import type { Store } from "../store/store.ts";
import { ALL_RIGHTS, NO_PROFILE, type Rights, rightsOf } from "./rights.ts";

/** Ids as the API writes them: a value that is not one names nothing (the route answers 404). */
const CANONICAL_ID = /^(0|[1-9]\d{0,14})$/;

export interface RightsNeeds {
  /** The rights of an admin profile (managing profiles); a supervisor's are not enough. */
  admin?: boolean;
  /** The right to change agents' queues (`changeQueues`). */
  changeQueues?: boolean;
}

/**
 * The rights of a request whose token holds `required` (everything), else of its CTI user's
 * profile; 403 `Forbidden` for anyone else.
 */
export async function requestRights(
  store: Store,
  identity: Pick<Identity, "userId" | "userType"> & { acls: readonly string[] },
  required: string,
  needs: RightsNeeds = {},
): Promise<Rights> {
  if (isAllowed(identity.acls, required, identity.userId)) return ALL_RIGHTS;
  const rights = identity.userType === "cti"
    ? await rightsOf(store, Number(identity.userId))
    : null;
  if (!rights) {
    const why = identity.userType === "cti" ? `; ${NO_PROFILE}` : "";
    throw new ApiError(403, "Forbidden", `missing ACL ${required}${why}`);
  }
  if (needs.admin && !rights.everything) {
    throw new ApiError(403, "Forbidden", `missing ACL ${required}; the user is no administrator`);
  }
  return rights;
}

/** The path's `queueId` and `agentId` (those that are ids) must be covered. */
function checkPath(c: Context, rights: Rights, needs: RightsNeeds): void {
  const queueId = c.req.param("queueId");
  const agentId = c.req.param("agentId");
  if (needs.changeQueues) rights.requireChangeQueues();
  if (queueId !== undefined && CANONICAL_ID.test(queueId)) rights.requireQueue(Number(queueId));
  if (agentId !== undefined && CANONICAL_ID.test(agentId)) rights.requireAgent(Number(agentId));
}

/**
 * Accepts a token holding the ACL `template` filled from the path, or a CTI user whose rights
 * profile covers what the path names (`queueId`, `agentId`); the rights go in `c.var.rights`.
 * Refusals are the 2.0 API's 403 `Forbidden`.
 *
 * @example
 * app.get("/supervision/queues/:queueId/calls", requireRights(services, "svc.rest.supervision.queues.{queueId}.calls.read"), handler);
 */
export function requireRights(
  { tokens, store }: { tokens: Parameters<typeof tokenIdentity>[1]; store: Store },
  template: string,
  needs: RightsNeeds = {},
): MiddlewareHandler<AppEnv> {
  const fill = aclFiller(template);
  return guardTag(async (c, next) => {
    const identity = await tokenIdentity(c, tokens);
    const params = c.req.param() as Record<string, string>;
    checkPathValues(c, params);
    const rights = await requestRights(store, identity, fill(params), needs);
    if (rights !== ALL_RIGHTS) checkPath(c, rights, needs);
    c.set("identity", identity);
    c.set("rights", rights);
    await next();
  }, {
    acl: template,
    who: needs.admin
      ? "or a CTI user with an admin rights profile"
      : "or a CTI user whose rights profile covers it",
  });
}

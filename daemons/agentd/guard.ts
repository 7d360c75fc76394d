/**
 * The agent daemon's guard (decisions §9): a valid token holding the route's ACL. Unlike the 2.0
 * API, every refusal is the same 401, so a client learns nothing of which part was wrong. A CTI
 * user's `alias.ctiuser` also grants, here, the ACLs of the routes on the user's own agent
 * (`/users/me/agents`), as the daemon svc follows grants them to its users.
 */
import type { MiddlewareHandler } from "hono";
import { fillAcl, readToken } from "../../lib/auth/guard.ts";
import { CTI_USER_ALIAS, isAllowed } from "../../lib/auth/acl.ts";
import type { Identity, Tokens } from "../../lib/auth/tokens.ts";
import { ApiError } from "../../lib/errors.ts";
import { requestRights } from "../../lib/rights/guard.ts";
import type { Store } from "../../lib/store/store.ts";
import type { AppEnv } from "../../lib/http.ts";
import { guardTag } from "../../lib/openapi/operation.ts";
import { checkPathValues } from "../../lib/path_values.ts";
import { unauthorized } from "./errors.ts";

/**
 * Accepts a token holding `template` filled from the path (any user type); a missing or unreadable
 * header, a bad or expired token and a missing ACL all answer 401
 * `invalid token or unauthorized`. A path value no agent can have (`lib/path_values.ts`) answers
 * 404 `no such agent`, between the token and the ACL.
 *
 * @example
 * app.get("/by-id/:id", agentdAcl(tokens, "agentd.agents.by-id.{id}.read"), handler);
 */
export function agentdAcl(tokens: Tokens, template: string): MiddlewareHandler<AppEnv> {
  return guardTag(async (c, next) => {
    const identity = await verified(tokens, () => readToken(c));
    checkPathValues(c); // before the ACL: none is built from a value that names nothing
    const required = fillAcl(template, c.req.param() as Record<string, string>);
    if (!isAllowed(granted(identity.acls), required, identity.userId)) throw unauthorized();
    c.set("identity", identity);
    await next();
  }, { acl: template });
}

/**
 * {@link agentdAcl} for a route a supervisor reads too (`GET /agents`): a token holding
 * `template` (every agent), or a CTI user whose rights profile covers agents (lib/rights/; what
 * it covers in `c.var.rights`); anyone else the same 401.
 */
export function agentdRights(
  { tokens, store }: { tokens: Tokens; store: Store },
  template: string,
): MiddlewareHandler<AppEnv> {
  return guardTag(async (c, next) => {
    const identity = await verified(tokens, () => readToken(c));
    checkPathValues(c);
    const required = fillAcl(template, c.req.param() as Record<string, string>);
    const grants = { ...identity, acls: granted(identity.acls) };
    try {
      c.set("rights", await requestRights(store, grants, required));
    } catch (error) {
      throw error instanceof ApiError ? unauthorized() : error;
    }
    c.set("identity", identity);
    await next();
  }, { acl: template, who: "or a CTI user with a rights profile: the agents it covers" });
}

/**
 * What `alias.ctiuser` grants in the agent daemon: the routes on the user's own agent. A token
 * may still deny them (`!agentd.users.me.#`).
 */
export const CTI_AGENT_ACLS: readonly string[] = [
  "agentd.users.me.agents.read",
  "agentd.users.me.agents.login.create",
  "agentd.users.me.agents.logoff.create",
  "agentd.users.me.agents.pause.create",
  "agentd.users.me.agents.unpause.create",
];

/** Each token's ACL list with {@link CTI_AGENT_ACLS}, one array per list (`isAllowed` caches per array). */
const withCtiAgentAcls = new WeakMap<readonly string[], readonly string[]>();

/** `acls`, plus {@link CTI_AGENT_ACLS} when they hold `alias.ctiuser`. */
function granted(acls: readonly string[]): readonly string[] {
  if (!acls.includes(CTI_USER_ALIAS)) return acls;
  let expanded = withCtiAgentAcls.get(acls);
  if (!expanded) withCtiAgentAcls.set(acls, expanded = [...acls, ...CTI_AGENT_ACLS]);
  return expanded;
}

/** The identity of the token `read` answers; the shared layers' token errors become the 401. */
async function verified(tokens: Tokens, read: () => string): Promise<Identity> {
  try {
    return await tokens.verify(read());
  } catch (error) {
    throw error instanceof ApiError ? unauthorized() : error;
  }
}

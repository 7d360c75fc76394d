/**
 * The agent daemon's errors (decisions §9): `{"error": "<message>"}`, e.g. 404
 * `{"error": "no such agent"}`, whatever went wrong, token problems included.
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as z from "zod";
import { ApiError, UnknownPathValue, Unreachable } from "../../lib/errors.ts";
import { type AppEnv, logUnreachable, storeLimitError } from "../../lib/http.ts";
import type { Logger } from "../../lib/log.ts";
import { PlatformRefusal } from "../../lib/platform/port.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** The body of every error here, e.g. `{"error": "no such agent"}`. */
export const AGENTD_ERROR_BODY = z.lazy(() => z.object({ error: z.string() }));

export class AgentdError extends Error {
  constructor(readonly status: ContentfulStatusCode, message: string) {
    super(message);
    this.name = "AgentdError";
  }
}

/** 404 `no such agent`: an unknown id or number, or one that cannot be an agent's. */
export const noSuchAgent = () => new AgentdError(404, "no such agent");

/** 409 `already logged`: a login of the user's agent while it is logged in. */
export const alreadyLogged = () => new AgentdError(409, "already logged");

/** 404 `no such queue`: `add`/`remove` naming a queue that does not exist. */
export const noSuchQueue = () => new AgentdError(404, "no such queue");

/** 409 `agent already in queue`: `add` of a member. */
export const alreadyInQueue = () => new AgentdError(409, "agent already in queue");

/** 409 `agent not in queue`: `remove` of an agent that is no member. */
export const notInQueue = () => new AgentdError(409, "agent not in queue");

/** 400 `no such line`: a user's login on a line that is not one of the user's. */
export const noSuchLine = () => new AgentdError(400, "no such line");

/** 404 `no such extension and context`: a login on a line holding no extension. */
export const noSuchExtension = () => new AgentdError(404, "no such extension and context");

/** 401 for any token problem and for a missing ACL alike, as the agent daemon answers. */
export const unauthorized = () => new AgentdError(401, "invalid token or unauthorized");

/** 400 naming the body fields that are missing or wrong, e.g. `invalid fields: extension`. */
export const invalidFields = (names: string[]) =>
  new AgentdError(400, `invalid fields: ${names.join(", ")}`);

/** The platform's refusals of an agent command, in the daemon's words. */
const refusals: Record<string, [ContentfulStatusCode, string]> = {
  no_extension: [404, "no such extension and context"],
  already_logged: [409, "already logged"],
  extension_in_use: [409, "extension and context already in use"],
  not_logged: [409, "not logged in"],
};

/**
 * Runs a platform command, answering its known refusals as the daemon's errors (an unknown one
 * stays what it is: an unexpected failure).
 *
 * @example
 * await refusalsAnswered(() => services.platform.agentLogout(agent.id));
 */
export async function refusalsAnswered(command: () => Promise<void>): Promise<void> {
  try {
    await command();
  } catch (error) {
    if (!(error instanceof PlatformRefusal)) throw error;
    const known = refusals[error.reason];
    if (known) throw new AgentdError(...known);
    // a PBX out of step with the configuration (a queue not reloaded yet): worth a retry
    if (error.reason === "pbx_refused") throw new AgentdError(503, error.message);
    throw error;
  }
}

/** The sub-app's error handler: every failure as `{"error": "..."}`; unexpected ones logged. */
export function agentdErrorHandler(logger: Logger) {
  return (error: Error, c: Context<AppEnv>): Response => {
    error = storeLimitError(logger, c.get("requestId"), error);
    if (error instanceof AgentdError) return c.json({ error: error.message }, error.status);
    // the daemon's path values all name an agent (by id or number): one that can name nothing
    if (error instanceof UnknownPathValue) return c.json({ error: noSuchAgent().message }, 404);
    // what the shared layers throw: a body over the limit (413), a body cut short (400)
    if (error instanceof ApiError) {
      return c.json({ error: error.message }, error.status, error.headers);
    }
    const requestId = c.get("requestId");
    if (error instanceof Unreachable) {
      logUnreachable(logger, requestId, error);
      return c.json({ error: "Unreachable" }, 503);
    }
    logger.error("unhandled error", { requestId, error: String(error), stack: error.stack });
    return c.json({ error: `internal error, request id ${requestId}` }, 500);
  };
}

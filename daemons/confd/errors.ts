/**
 * The configuration daemon's errors (decisions §10): a JSON array of strings, e.g.
 * 404 `["Resource Not Found - User was not found ('id': 9)"]`.
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as z from "zod";
import { ApiError, IncompleteBody, UnknownPathValue, Unreachable } from "../../lib/errors.ts";
import { type AppEnv, logUnreachable, storeLimitError } from "../../lib/http.ts";
import type { Logger } from "../../lib/log.ts";
import { UniqueConflict } from "../../lib/store/records.ts";
import { RoomRefusal } from "../../lib/meetingrooms/refusal.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** The body of every error here: `<kind> - <what>` texts, e.g. `Input Error - field …`. */
export const CONFD_ERROR_BODY = z.lazy(() => z.array(z.string()).min(1));

export class ConfdError extends Error {
  constructor(readonly status: ContentfulStatusCode, readonly messages: string[]) {
    super(messages.join("; "));
    this.name = "ConfdError";
  }
}

/** `('id': 9, 'name': 'abc')`, the way the configuration daemon quotes values. */
export function describe(values: Record<string, unknown>): string {
  const quoted = Object.entries(values).map(([name, value]) =>
    `'${name}': ${typeof value === "number" || typeof value === "boolean" ? value : `'${value}'`}`
  );
  return `(${quoted.join(", ")})`;
}

/** 404 `Resource Not Found - Line was not found ('id': 9)`. */
export const notFound = (resource: string, values: Record<string, unknown>) =>
  new ConfdError(404, [`Resource Not Found - ${resource} was not found ${describe(values)}`]);

/** 400 `Input Error - field 'firstname': <reason>`. */
export const inputError = (field: string, reason: string) =>
  new ConfdError(400, [`Input Error - field '${field}': ${reason}`]);

/** 400 `Input Error - <reason>` for what is not one field, e.g. a body that is not JSON. */
export const badInput = (reason: string) => new ConfdError(400, [`Input Error - ${reason}`]);

/** 400 `Resource Error - <reason>`, e.g. `Line is associated with a User`. */
export const resourceError = (reason: string) =>
  new ConfdError(400, [`Resource Error - ${reason}`]);

/** 400 `Resource Error - Extension already exists ('exten': '1001', 'context': 'default')`. */
export const alreadyExists = (resource: string, values: Record<string, unknown>) =>
  resourceError(`${resource} already exists ${describe(values)}`);

/** Token problems are 401 here, as in the daemons this API follows; a missing ACL stays 403. */
const tokenCodes = new Set([
  "AuthorizationHeaderNotFound",
  "BearerNotFound",
  "InvalidToken",
  "TokenExpired",
  "InvalidJson",
]);

/** What the daemon answers for `error`: status, body (an array of strings) and extra headers. */
export interface ConfdAnswer {
  status: ContentfulStatusCode;
  body: string[];
  headers?: Record<string, string>;
}

/**
 * The answer to any failure, as the error handler sends it and an import job keeps it; unexpected
 * failures are logged with `requestId`, never leaked.
 */
export function confdAnswer(logger: Logger, requestId: string, error: Error): ConfdAnswer {
  error = storeLimitError(logger, requestId, error);
  if (error instanceof ConfdError) return { status: error.status, body: error.messages };
  // a path value no resource can have (lib/path_values.ts): unknown, as an unknown id is
  if (error instanceof UnknownPathValue) {
    const message = `Resource Not Found - no resource has ${
      describe({ [error.param]: error.shown })
    }`;
    return { status: 404, body: [`${message}: the value ${error.reason}`] };
  }
  if (error instanceof IncompleteBody) {
    return { status: 400, body: [`Input Error - ${error.message}`] };
  }
  if (error instanceof RoomRefusal) {
    if (error.reason === "not_found") {
      return {
        status: 404,
        body: [`Resource Not Found - Meeting was not found: ${error.message}`],
      };
    }
    return { status: 400, body: [`Resource Error - ${error.message}`] };
  }
  if (error instanceof UniqueConflict) {
    return { status: 400, body: [`Resource Error - ${error.field} already exists`] };
  }
  if (error instanceof ApiError) {
    if (tokenCodes.has(error.code)) {
      return { status: 401, body: [`Unauthorized - ${error.message}`] };
    }
    return {
      status: error.status,
      body: [`${error.code} - ${error.message}`],
      headers: error.headers,
    };
  }
  if (error instanceof Unreachable) {
    logUnreachable(logger, requestId, error);
    return { status: 503, body: [`Unreachable - ${error.message}`] };
  }
  logger.error("unhandled error", { requestId, error: String(error), stack: error.stack });
  return { status: 500, body: [`Internal Error - unexpected error, request id ${requestId}`] };
}

/** The sub-app's error handler: every failure as an array of strings. */
export function confdErrorHandler(logger: Logger) {
  return (error: Error, c: Context<AppEnv>): Response => {
    const { status, body, headers } = confdAnswer(logger, c.get("requestId"), error);
    return c.json(body, status, headers);
  };
}

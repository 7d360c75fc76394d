import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import type { Identity } from "./auth/tokens.ts";
import { ApiError, Unreachable } from "./errors.ts";
import type { Logger } from "./log.ts";

/** What every handler may read from the context. */
export type AppEnv = {
  Variables: {
    requestId: string;
    /** Set by the ACL guard once the token is verified. */
    identity: Identity;
  };
};

export const MiB = 1024 * 1024;

const incomingRequestId = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * A new request id: this process's random prefix (48 bits) and a counter. Never repeated within a
 * process, and as unlikely to be across processes as the prefix is; a random UUID per request cost
 * a few per cent of the throughput.
 */
const newRequestId = (() => {
  const prefix = crypto.randomUUID().slice(0, 13); // 48 random bits, e.g. "3f2a9c1e-7b4d"
  let serial = 0;
  return () => `${prefix}-${(++serial).toString(36)}`;
})();

/** xivo-auth's token checks carry the token in the path (`/0.1/token/{token}`). */
const TOKEN_IN_PATH = /^(\/0\.1\/token\/)[^/]+/;

/**
 * Gives every request an id (kept from a sane incoming `X-Request-Id`), echoes it on the response
 * and logs one JSON line per request. Only the path is logged: query strings may carry tokens, and
 * a token in the path is logged as `<token>`.
 */
export function requestLog(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    // the line's fields are built only when it is written: they cost more than a skipped line
    const logged = logger.enabled("info");
    const started = logged ? performance.now() : 0;
    const incoming = c.req.header("x-request-id");
    const requestId = incoming && incomingRequestId.test(incoming) ? incoming : newRequestId();
    c.set("requestId", requestId);
    await next();
    c.res.headers.set("X-Request-Id", requestId);
    if (!logged) return;
    logger.info("request", {
      requestId,
      method: c.req.method,
      path: c.req.path.replace(TOKEN_IN_PATH, "$1<token>"),
      status: c.res.status,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
    });
  };
}

/** Refuses a body larger than `maxBytes(c)` with 413 before reading it whole. */
export function limitBody(maxBytes: (c: Context) => number): MiddlewareHandler {
  const limits = new Map<number, MiddlewareHandler>();
  return (c, next) => {
    if (!c.req.raw.body) return next(); // nothing to read (GET, HEAD, an empty POST)
    const maxSize = maxBytes(c);
    let limit = limits.get(maxSize);
    if (!limit) {
      limit = bodyLimit({
        maxSize,
        onError: () => {
          throw new ApiError(
            413,
            "PayloadTooLarge",
            `request body is larger than ${maxSize} bytes`,
          );
        },
      });
      limits.set(maxSize, limit);
    }
    return limit(c, next);
  };
}

/** The error codes of a route's body: missing, and not JSON or not matching the model. */
export interface BodyCodes {
  missing: string;
  invalid: string;
}

/**
 * Reads a JSON body against `schema`. An empty (or blank) body answers 400 `codes.missing`; a body
 * that is not JSON, or does not match (the message names the field), 400 `codes.invalid`. The
 * `Content-Type` is not checked: a JSON body sent as text is read all the same.
 *
 * @example
 * const { state } = await readBody(c, schema, { missing: "JsonBodyNotFound", invalid: "JsonErrorDecoding" });
 */
export async function readBody<T extends z.ZodType>(
  c: Context,
  schema: T,
  codes: BodyCodes,
): Promise<z.infer<T>> {
  const text = await c.req.text();
  if (!text.trim()) throw new ApiError(400, codes.missing, "the request has no JSON body");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(400, codes.invalid, "the body is not valid JSON");
  }
  const result = schema.safeParse(body);
  if (!result.success) throw new ApiError(400, codes.invalid, describeIssue(result.error));
  return result.data;
}

/** {@link readBody} where a missing body and a bad one answer the same `code`. */
export function readJson<T extends z.ZodType>(
  c: Context,
  schema: T,
  code: string,
): Promise<z.infer<T>> {
  return readBody(c, schema, { missing: code, invalid: code });
}

/** Zod error messages that read well after `field <name>: `. */
export const required = (type: string) => ({
  error: (issue: { input: unknown }) => issue.input === undefined ? "required" : `expected ${type}`,
});

/** An object body; anything else (an array, `null`, a number) does not match the model. */
export const bodyObject = <S extends z.ZodRawShape>(shape: S) =>
  z.object(shape, { error: "the body must be a JSON object" });

/** One line naming the first field that is wrong, e.g. `field password: expected string`. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid body";
  const path = issue.path.join(".");
  return path ? `field ${path}: ${issue.message}` : issue.message;
}

/** Turns any error into the `{error, message}` answer; unexpected ones are logged, never leaked. */
export function apiErrorHandler(logger: Logger) {
  return (error: Error, c: Context<AppEnv>): Response => {
    if (error instanceof ApiError) {
      return c.json({ error: error.code, message: error.message }, error.status, error.headers);
    }
    const requestId = c.get("requestId");
    if (error instanceof Unreachable) {
      logUnreachable(logger, requestId, error);
      return c.json({ error: "Unreachable", message: error.message }, 503);
    }
    logger.error("unhandled error", { requestId, error: String(error), stack: error.stack });
    return c.json(
      { error: "NotHandledError", message: `unexpected error, request id ${requestId}` },
      500,
    );
  };
}

/** One log line for a 503 `Unreachable`: what was unreachable and why. */
export function logUnreachable(logger: Logger, requestId: string, error: Unreachable): void {
  logger.error(error.message.replace(/^the /, ""), { requestId, cause: String(error.cause) });
}

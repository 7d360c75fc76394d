import type { Context, MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { z } from "zod";
import type { Identity } from "./auth/tokens.ts";
import { ApiError } from "./errors.ts";
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
 * Gives every request an id (kept from a sane incoming `X-Request-Id`), echoes it on the response
 * and logs one JSON line per request. Only the path is logged: query strings may carry tokens.
 */
export function requestLog(logger: Logger): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const started = performance.now();
    const incoming = c.req.header("x-request-id");
    const requestId = incoming && incomingRequestId.test(incoming) ? incoming : crypto.randomUUID();
    c.set("requestId", requestId);
    await next();
    c.res.headers.set("X-Request-Id", requestId);
    logger.info("request", {
      requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
    });
  };
}

/** Refuses a body larger than `maxBytes(c)` with 413 before reading it whole. */
export function limitBody(maxBytes: (c: Context) => number): MiddlewareHandler {
  return (c, next) => {
    const maxSize = maxBytes(c);
    return bodyLimit({
      maxSize,
      onError: () => {
        throw new ApiError(413, "PayloadTooLarge", `request body is larger than ${maxSize} bytes`);
      },
    })(c, next);
  };
}

/**
 * Reads a JSON body and checks it against `schema`; a body that is not JSON or does not match
 * answers 400 with `code` and a message naming the offending field.
 */
export async function readJson<T extends z.ZodType>(
  c: Context,
  schema: T,
  code: string,
): Promise<z.infer<T>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw new ApiError(400, code, "the body is not valid JSON");
  }
  const result = schema.safeParse(body);
  if (!result.success) throw new ApiError(400, code, describeIssue(result.error));
  return result.data;
}

/** One line naming the first field that is wrong, e.g. `field password: expected string`. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid body";
  const path = issue.path.join(".");
  return path ? `field ${path}: ${issue.message}` : issue.message;
}

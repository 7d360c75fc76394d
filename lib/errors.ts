import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "./http.ts";
import type { Logger } from "./log.ts";

/** An error of the 2.0 and 1.0 APIs: answered as `{error: code, message}` with `status`. */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = "ApiError";
  }
}

/** The store (Deno KV) failed; answered 503 `Unreachable`. */
export class StoreUnavailable extends Error {
  constructor(cause: unknown) {
    super("the store is unreachable", { cause });
    this.name = "StoreUnavailable";
  }
}

/** Turns any error into the `{error, message}` answer; unexpected ones are logged, never leaked. */
export function apiErrorHandler(logger: Logger) {
  return (error: Error, c: Context<AppEnv>): Response => {
    if (error instanceof ApiError) {
      return c.json({ error: error.code, message: error.message }, error.status, error.headers);
    }
    const requestId = c.get("requestId");
    if (error instanceof StoreUnavailable) {
      logger.error("store unreachable", { requestId, cause: String(error.cause) });
      return c.json({ error: "Unreachable", message: "the store is unreachable" }, 503);
    }
    logger.error("unhandled error", { requestId, error: String(error), stack: error.stack });
    return c.json(
      { error: "NotHandledError", message: `unexpected error, request id ${requestId}` },
      500,
    );
  };
}

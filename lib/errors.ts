/**
 * The errors every area shares. This module imports nothing of ours, so any module may throw them
 * (the store, tokens, the platform) without an import circle; each area's error handler turns them
 * into its own answer form.
 */
import type { ContentfulStatusCode } from "hono/utils/http-status";

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

/** Something svc depends on does not answer; every area answers 503 `Unreachable`. */
export class Unreachable extends Error {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = "Unreachable";
  }
}

/** The store (Deno KV) failed. */
export class StoreUnavailable extends Unreachable {
  constructor(cause: unknown) {
    super("the store is unreachable", cause);
    this.name = "StoreUnavailable";
  }
}

/** The telephony platform (the PBX behind the port) cannot take a command now. */
export class PlatformUnavailable extends Unreachable {
  constructor(cause: unknown) {
    super("the telephony platform is unreachable", cause);
    this.name = "PlatformUnavailable";
  }
}

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
    super(withoutStack(message));
    Error.stackTraceLimit = stackTraceLimit;
    this.name = "ApiError";
  }
}

const stackTraceLimit = Error.stackTraceLimit;

/**
 * `message`, with the stack trace of the error being built turned off: an {@link ApiError} is an
 * answer, never logged with its stack, and capturing one for every refused request cost time and
 * memory (frames kept until the error is collected).
 */
function withoutStack(message: string): string {
  Error.stackTraceLimit = 0;
  return message;
}

/**
 * A request body that cannot be read in full: the connection ended or broke before the body did,
 * or fewer bytes came than `Content-Length` announced. The client is at fault (or gone): 400 in
 * every area's form, never a 500.
 */
export class IncompleteBody extends ApiError {
  constructor(detail: string, cause?: unknown) {
    super(400, "IncompleteBody", `the request body could not be read in full: ${detail}`);
    this.name = "IncompleteBody";
    if (cause !== undefined) this.cause = cause;
  }
}

/**
 * A path value no route can accept (empty, too long, a control character: `lib/path_values.ts`),
 * refused before any store access; each area answers it as it answers an unknown id.
 */
export class UnknownPathValue extends Error {
  constructor(readonly param: string, readonly value: string, readonly reason: string) {
    super(`path value ${param} ${reason}`);
    this.name = "UnknownPathValue";
  }

  /** The value as messages show it: 64 characters at most. */
  get shown(): string {
    return this.value.length > 64 ? `${this.value.slice(0, 64)}…` : this.value;
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

/**
 * A write lost the race for the same records to concurrent changes until it gave up (50 tries):
 * the store is up but too busy with those records; the client may try again.
 */
export class StoreBusy extends Unreachable {
  constructor(what: string) {
    super(`the store is busy: ${what} kept changing, try again`, null);
    this.name = "StoreBusy";
  }
}

/** The telephony platform (the PBX behind the port) cannot take a command now. */
export class PlatformUnavailable extends Unreachable {
  constructor(cause: unknown) {
    super("the telephony platform is unreachable", cause);
    this.name = "PlatformUnavailable";
  }
}

/**
 * Deno KV refused an operation as malformed (a key or value too large, too many mutations, a key
 * part of the wrong type…): svc asked for something the store never accepts, whatever its state.
 * Not `Unreachable`: the store is up, and asking again changes nothing. A write too large for the
 * store ({@link STORE_SIZE_LIMITS}) comes from what a request sent: each area answers it 413 (see
 * `storeLimitError` in `lib/http.ts`); any other kind is svc's own fault, answered as an
 * unexpected failure (500, logged).
 */
export class StoreRejected extends Error {
  constructor(readonly kind: StoreRejection, cause: unknown) {
    super(`the store refused the operation (${kind}): ${(cause as Error)?.message ?? cause}`, {
      cause,
    });
    this.name = "StoreRejected";
  }
}

/** Why Deno KV refused an operation (see {@link StoreRejected}). */
export type StoreRejection =
  | "key_too_large_for_read"
  | "key_too_large_for_write"
  | "value_too_large"
  /** Too many mutations or checks in one atomic operation, or too many bytes in all. */
  | "write_too_large"
  /** Too many keys or entries asked at once. */
  | "read_too_large"
  | "invalid_key"
  | "invalid_value"
  | "invalid_operation";

/** The refusals that say a write is too large for the store, and what each means to a client. */
export const STORE_SIZE_LIMITS: Partial<Record<StoreRejection, string>> = {
  key_too_large_for_write: "a value sent is too long to be kept (the store keys at most 2 KiB)",
  value_too_large: "what was sent would make a record larger than the store keeps (64 KiB)",
  write_too_large: "the request would change more at once than the store takes in one write",
};

/**
 * The call daemon's errors (docs/calls.md), in wazo-calld's form, the only one its client's
 * `CalldError` reads: `{"message", "error_id", "details", "timestamp"}` (timestamp in seconds).
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as z from "zod";
import { ApiError, PlatformUnavailable, UnknownPathValue, Unreachable } from "../../lib/errors.ts";
import { type AppEnv, logUnreachable, storeLimitError } from "../../lib/http.ts";
import type { Logger } from "../../lib/log.ts";
import { PlatformRefusal } from "../../lib/platform/port.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
export const CALLD_ERROR_BODY = z.lazy(() =>
  z.object({
    message: z.string(),
    error_id: z.string(),
    details: z.record(z.string(), z.unknown()),
    timestamp: z.number(),
  })
);

export class CalldError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly errorId: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = "CalldError";
  }
}

/** 401 for a missing, bad or expired token and for a missing ACL alike, as the daemon answers. */
export const unauthorized = (requiredAccess: string | null) =>
  new CalldError(401, "unauthorized", "Unauthorized", {
    ...(requiredAccess !== null && { required_access: requiredAccess }),
  });

/** 400 `invalid-data` with what is wrong, field by field. */
export const invalidData = (details: Record<string, unknown>) =>
  new CalldError(400, "invalid-data", "Sent data is invalid", details);

/** A refusal as the daemon answers it: status, `error_id`, message. */
export type Answer = readonly [ContentfulStatusCode, string, string];

/** What each refusal of the platform or of `lib/calls/` is, unless the route says otherwise. */
const REFUSALS: Record<string, Answer> = {
  no_call: [404, "no-such-call", "No such call"],
  not_yours: [
    403,
    "user-permission-denied",
    "User does not have permission to handle objects of other users",
  ],
  no_line: [400, "user-missing-main-line", "User has no main line"],
  not_ringing: [400, "call-not-ringing", "Call is not ringing"],
  not_talking: [400, "call-not-talking", "Call is not talking with anybody"],
  not_held: [400, "call-not-held", "Call is not on hold"],
  held_by_phone: [400, "call-held-by-phone", "Call is held by its phone, which takes it back"],
  recording_not_started: [400, "recording-not-started", "Recording not started"],
  not_supported: [400, "call-command-not-supported", "The phone cannot do that"],
  no_transfer: [404, "no-such-transfer", "No such transfer"],
  transfer_exists: [
    409,
    "transfer-already-started",
    "Transfer already started with same initiator",
  ],
  in_transfer: [409, "transfer-already-started", "A party of that call is already in a transfer"],
  not_peer: [400, "transfer-creation-error", "Transfer creation error"],
  no_user: [400, "transfer-creation-error", "Transfer creation error"],
  no_conference: [404, "adhoc-conference-not-found", "Adhoc conference not found"],
  in_conference: [
    409,
    "participant-already-in-conference",
    "Adhoc conference error: participant already in conference",
  ],
  pbx_refused: [503, "platform-error", "The telephony platform refused the command"],
  bad_variables: [400, "invalid-data", "Sent data is invalid"],
};

/**
 * Runs `command`, answering a refusal as the daemon's error: `overrides` gives a route's own
 * (status, error_id, message) for some reasons; `details` go with every one.
 *
 * @example
 * await refused(() => platform.callCommand(id, { kind: "hold" }), { call_id: id });
 */
export async function refused<T>(
  command: () => Promise<T>,
  details: Record<string, unknown>,
  overrides: Record<string, Answer> = {},
): Promise<T> {
  try {
    return await command();
  } catch (error) {
    if (!(error instanceof PlatformRefusal)) throw error;
    const known = overrides[error.reason] ?? REFUSALS[error.reason];
    if (!known) throw error;
    const [status, errorId, message] = known;
    throw new CalldError(status, errorId, message, { ...details, message: error.message });
  }
}

/** The sub-app's error handler: every failure in the daemon's form; unexpected ones logged. */
export function calldErrorHandler(logger: Logger) {
  return (error: Error, c: Context<AppEnv>): Response => {
    const requestId = c.get("requestId");
    error = storeLimitError(logger, requestId, error);
    const answer = (e: CalldError, headers?: Record<string, string>) =>
      c.json(
        {
          message: e.message,
          error_id: e.errorId,
          details: e.details,
          timestamp: Date.now() / 1000,
        },
        e.status,
        headers,
      );
    if (error instanceof CalldError) return answer(error);
    // a path value that can name nothing names no call, transfer nor conference
    if (error instanceof UnknownPathValue) {
      return answer(new CalldError(404, "not-found", "Not found", { [error.param]: error.shown }));
    }
    if (error instanceof ApiError) {
      // what the shared layers throw: a body over the limit (413), a body cut short (400)
      const id = error.status === 400 ? "invalid-data" : "request-entity-too-large";
      return answer(new CalldError(error.status, id, error.message), error.headers);
    }
    if (error instanceof Unreachable) {
      logUnreachable(logger, requestId, error);
      const what = error instanceof PlatformUnavailable ? "telephony platform" : "store";
      return answer(new CalldError(503, "unreachable", `Unreachable: the ${what} does not answer`));
    }
    logger.error("unhandled error", { requestId, error: String(error), stack: error.stack });
    return answer(new CalldError(500, "internal-error", `Internal error, request id ${requestId}`));
  };
}

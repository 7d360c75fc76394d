import type { Context, MiddlewareHandler } from "hono";
import type * as z from "zod";
import type { Identity } from "./auth/tokens.ts";
import type { Rights } from "./rights/rights.ts";
import {
  ApiError,
  IncompleteBody,
  STORE_SIZE_LIMITS,
  StoreRejected,
  UnknownPathValue,
  Unreachable,
} from "./errors.ts";
import type { Logger } from "./log.ts";
import { afterNext } from "./chain.ts";

/** What every handler may read from the context. */
export type AppEnv = {
  Variables: {
    requestId: string;
    /** Set by the ACL guard once the token is verified. */
    identity: Identity;
    /** Set by the rights guards (lib/rights/guard.ts): what the caller covers in supervision. */
    rights: Rights;
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
 * a token in the path is logged as `<token>`. `answered` is told each request's time to its
 * response (the metrics): one step of the middleware chain for both, as every step costs on the
 * hot path.
 */
export function requestLog(
  logger: Logger,
  answered: (c: Context<AppEnv>, seconds: number) => void = () => {},
): MiddlewareHandler<AppEnv> {
  return (c, next) => {
    const started = performance.now();
    const incoming = c.req.header("x-request-id");
    const requestId = incoming && incomingRequestId.test(incoming) ? incoming : newRequestId();
    c.set("requestId", requestId);
    // given before the answer is built, and never set on it afterwards: every answer is built
    // through the context (`c.json`, `c.body`, `c.newResponse`…), which adds it. An answer whose
    // headers are read or changed once built leaves Deno's native path for one that keeps a
    // buffer as large as the largest text answer so sent, for good (docs/decisions.md, "Memory
    // after abuse": 30 MB after one 400 echoing a 10 MiB CSV file)
    c.header("X-Request-Id", requestId);
    // not async: a request the steps answered at once is logged at once (lib/chain.ts)
    return afterNext(next(), () => {
      const ms = performance.now() - started;
      answered(c, ms / 1000);
      // the line's fields are built only when it is written: they cost more than a skipped line
      if (!logger.enabled("info")) return;
      logger.info("request", {
        requestId,
        method: c.req.method,
        path: c.req.path.replace(TOKEN_IN_PATH, "$1<token>"),
        status: c.res.status,
        durationMs: Math.round(ms * 100) / 100,
      });
    });
  };
}

/** 413 `PayloadTooLarge`, the same in every area. */
const tooLarge = (maxSize: number) =>
  new ApiError(413, "PayloadTooLarge", `request body is larger than ${maxSize} bytes`);

/**
 * The methods whose requests {@link limitBody} reads: mounted for these only, a `GET` skips it
 * (a body it might carry is never read).
 */
export const BODY_METHODS = ["POST", "PUT", "PATCH", "DELETE"];

/**
 * Reads the request body once, whole, before any route: the one place a body is read from the
 * connection, so that no route meets a connection that broke.
 *
 * - Over `maxBytes(c)`: 413 `PayloadTooLarge`, from `Content-Length` at once, else as soon as the
 *   streamed bytes pass it; an oversized body is never read whole.
 * - A body that cannot be read in full (the connection ended or broke first, or fewer bytes than
 *   `Content-Length` said): 400 `IncompleteBody` ({@link IncompleteBody}), in the area's form.
 *   When the client is gone, nobody reads that answer and the connection just closes.
 * - Otherwise the request goes on with the bytes in memory, so every reader (`c.req.text()`,
 *   `json()`, `arrayBuffer()`, `raw.formData()`, a clone) reads them without I/O and cannot fail.
 *
 * @example
 * app.on(BODY_METHODS, "*", limitBody(() => MiB));
 */
export function limitBody(maxBytes: (c: Context) => number): MiddlewareHandler {
  return async (c, next) => {
    const stream = c.req.raw.body;
    if (!stream) return next(); // nothing to read (GET, HEAD, an empty POST)
    const maxSize = maxBytes(c);
    // with Transfer-Encoding, Content-Length means nothing (RFC 9112 §6.3)
    const header = c.req.header("transfer-encoding") ? undefined : c.req.header("content-length");
    const declared = header !== undefined && /^\d{1,15}$/.test(header.trim())
      ? Number(header.trim())
      : null;
    if (declared !== null && declared > maxSize) {
      await stream.cancel().catch(() => {});
      throw tooLarge(maxSize);
    }
    const bytes = await readAll(stream, maxSize);
    if (declared !== null && bytes.length !== declared) {
      throw new IncompleteBody(`${bytes.length} bytes came, Content-Length said ${declared}`);
    }
    // a new request rather than `new Request(raw, …)`: that reads `raw.signal`, which makes
    // Deno.serve warn on stderr about its legacy abort behaviour (nothing here uses the signal)
    const { url, method, headers } = c.req.raw;
    c.req.raw = new Request(url, { method, headers, body: bytes });
    return next();
  };
}

/** The bytes of `stream`, at most `maxSize` (413 beyond); a failed read is {@link IncompleteBody}. */
async function readAll(
  stream: ReadableStream<Uint8Array>,
  maxSize: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch (error) {
      // Deno.serve: BadResource (the connection ended or broke before the body did)
      throw new IncompleteBody(`the connection ended after ${size} bytes`, error);
    }
    if (chunk.done) break;
    size += chunk.value.length;
    if (size > maxSize) {
      await reader.cancel().catch(() => {});
      throw tooLarge(maxSize);
    }
    chunks.push(chunk.value);
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array<ArrayBuffer>;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
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
  return checkBody(schema, body, codes.invalid);
}

/** `body` (already parsed) against `schema`; one that does not match is 400 `code`. */
export function checkBody<T extends z.ZodType>(schema: T, body: unknown, code: string): z.infer<T> {
  const result = schema.safeParse(body);
  if (!result.success) throw new ApiError(400, code, describeIssue(result.error));
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

/** One line naming the first field that is wrong, e.g. `field password: expected string`. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid body";
  const path = issue.path.join(".");
  return path ? `field ${path}: ${issue.message}` : issue.message;
}

/**
 * How the 2.0 and 1.0 APIs answer a path value that can name nothing (`lib/path_values.ts`): as
 * each answers an unknown value of that name. The call qualification routes' values are refused
 * as their bad dates are.
 */
const UNKNOWN_PATH_VALUES: Record<string, (shown: string, reason: string) => ApiError> = {
  username: (shown) => new ApiError(400, "UserNotFound", `user ${shown} not found`),
  id: (shown) => new ApiError(404, "ContactNotFound", `contact ${shown} does not exist`),
  uuid: (shown) => new ApiError(404, "CallbackRequestNotFound", `no callback request ${shown}`),
  extension: (shown) => new ApiError(404, "PhoneNotFound", `no simulated phone ${shown}`),
  queue_id: (shown, reason) => new ApiError(400, "JsonErrorDecoding", `queue ${shown} ${reason}`),
  from: (shown, reason) => new ApiError(400, "JsonErrorDecoding", `from ${shown} ${reason}`),
  to: (shown, reason) => new ApiError(400, "JsonErrorDecoding", `to ${shown} ${reason}`),
  queueId: (shown) => new ApiError(404, "QueueNotFound", `queue ${shown} does not exist`),
  agentId: (shown) => new ApiError(404, "AgentNotFound", `agent ${shown} does not exist`),
  userId: (shown) => new ApiError(404, "UserNotFound", `user ${shown} does not exist`),
  roomId: (shown) => new ApiError(404, "MeetingRoomNotFound", `no meeting room ${shown}`),
  roomName: (shown, reason) =>
    new ApiError(400, "InvalidMeetingRoom", `a temporary room's name ${shown} ${reason}`),
};

/** The 2.0/1.0 answer to an {@link UnknownPathValue}; a name not listed is 404 `NotFound`. */
function unknownPathValue(error: UnknownPathValue): ApiError {
  const answer = UNKNOWN_PATH_VALUES[error.param];
  return answer
    ? answer(error.shown, error.reason)
    : new ApiError(404, "NotFound", `no ${error.param} ${error.shown}: it ${error.reason}`);
}

/**
 * A write too large for the store (a `StoreRejected` of a size kind: what the request sent would
 * make a key or a record larger than Deno KV keeps, or one write too big) as the 413
 * `PayloadTooLarge` every area answers, logged as a warning; any other error as it is. Every
 * area's error handler starts with it.
 */
export function storeLimitError(logger: Logger, requestId: string, error: Error): Error {
  if (!(error instanceof StoreRejected)) return error;
  const meaning = STORE_SIZE_LIMITS[error.kind];
  if (!meaning) return error; // a key of the wrong type, a bad check…: svc's own fault, a 500
  logger.warn("the store refused a write too large", {
    requestId,
    kind: error.kind,
    cause: String(error.cause),
  });
  return new ApiError(413, "PayloadTooLarge", meaning);
}

/** Turns any error into the `{error, message}` answer; unexpected ones are logged, never leaked. */
export function apiErrorHandler(logger: Logger) {
  return (error: Error, c: Context<AppEnv>): Response => {
    error = storeLimitError(logger, c.get("requestId"), error);
    if (error instanceof UnknownPathValue) error = unknownPathValue(error);
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

/**
 * Idempotent commands: the `Idempotency-Key` request header of draft-ietf-httpapi-idempotency-key-
 * header, as a middleware mounted per route after the route's guard (docs/decisions.md
 * "Idempotent commands").
 *
 * - The header is optional. When present it must be one RFC 8941 sf-string (quoted) of 1 to
 *   {@link MAX_KEY_LENGTH} characters, without parameters, sent once — or, as many clients send
 *   it, the same characters unquoted (no spaces, quotes, commas or semicolons), the same key as
 *   its quoted form; else 400 (the area's form, code `InvalidIdempotencyKey`) and nothing runs.
 * - A key belongs to its caller (the token's user, or the 1.0 API's client address): two callers'
 *   keys never meet. It lives {@link KEY_TTL_MS} (24 h) from its first use, in the store, so every
 *   process honours it.
 * - The request is named by a fingerprint: SHA-256 of method, path (one trailing `/` ignored),
 *   query, media type (without parameters) and body (a multipart body by its parts, so that a new
 *   boundary is the same payload).
 * - First use: the key is claimed atomically, the route runs, and its answer (status, body and the
 *   headers of {@link REPLAYED_HEADERS}) is kept, unless it is a 5xx: then the key is given back
 *   and a retry runs the command again.
 * - The same key and fingerprint again: the kept answer, byte for byte, with
 *   `Idempotent-Replayed: true`; nothing runs. While the first request still runs: 409
 *   `IdempotencyKeyInUse` with `Retry-After: 1` (the draft's concurrent request; nothing waits).
 * - The same key with another fingerprint: 422 `IdempotencyKeyReused`.
 * - A claim is a lease of {@link LEASE_MS}, renewed while the route runs. A process that dies
 *   running a request holds the key until the lease ends; then the key is free and a retry runs
 *   the command again (see the decision for why not 409 for 24 h).
 */
import { idempotentTag } from "./openapi/operation.ts";
import type { Context, MiddlewareHandler } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { sha256Hex } from "./digest.ts";
import { ApiError } from "./errors.ts";
import type { AppEnv } from "./http.ts";
import type { Services } from "./services.ts";
import {
  claimKey,
  releaseClaim,
  renewClaim,
  saveAnswer,
  type StoredAnswer,
} from "./store/idempotency_keys.ts";

/** How long a key is remembered after its first use. */
export const KEY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a claim holds a key without renewal (a process that died loses it so). */
export const LEASE_MS = 30_000;
/** Longest key, in characters once unquoted. */
export const MAX_KEY_LENGTH = 255;
/** The response headers a replay repeats (with the status and the body). */
export const REPLAYED_HEADERS = [
  "content-type",
  "content-disposition",
  "content-language",
  "location",
] as const;
/** Set on a replayed answer. */
export const REPLAYED_HEADER = "Idempotent-Replayed";

/** A refusal of the idempotency layer, answered in the area's error form. */
export interface Refusal {
  status: 400 | 409 | 422;
  code: "InvalidIdempotencyKey" | "IdempotencyKeyInUse" | "IdempotencyKeyReused" | "BadRequest";
  message: string;
}

export interface IdempotencyOptions {
  /** Who calls: a key is looked up under it. Default: the token's user type and id. */
  caller?: (c: Context<AppEnv>) => string;
  /** The area's error answer. Default: the 2.0 and 1.0 form `{error, message}`. */
  refuse?: (c: Context<AppEnv>, refusal: Refusal) => Response;
}

/** The 2.0 and 1.0 API's error form. */
const apiRefusal = (c: Context<AppEnv>, { status, code, message }: Refusal) =>
  c.json({ error: code, message }, status);

/** The token's holder: a route's guard put it there. */
const tokenCaller = (c: Context<AppEnv>) => {
  const identity = c.get("identity");
  if (!identity) throw new Error("idempotent() is mounted after the route's guard");
  return `${identity.userType}:${identity.userId}`;
};

const INVALID_KEY = `Idempotency-Key must be one quoted string (RFC 8941 sf-string) of 1 to ` +
  `${MAX_KEY_LENGTH} characters, e.g. Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`;

/** An unquoted key as clients written for other APIs send it (`Idempotency-Key: 8e03978e-…`). */
const BARE_KEY = new RegExp(`^[!#-+\\--:<-~]{1,${MAX_KEY_LENGTH}}$`);

/**
 * The key of an `Idempotency-Key` value: an sf-string (RFC 8941 §3.3.3: printable ASCII between
 * double quotes, `\"` and `\\` escaped), spaces around ignored, or the same key unquoted
 * (printable ASCII without space, `"`, `,` or `;`); null when it is anything else (parameters, two
 * values, empty, too long).
 *
 * @example
 * parseIdempotencyKey('"abc"'); // "abc"
 * parseIdempotencyKey("abc"); // "abc"
 */
export function parseIdempotencyKey(value: string): string | null {
  const text = value.replace(/^ +| +$/g, "");
  if (text[0] !== '"') return BARE_KEY.test(text) ? text : null;
  let key = "";
  for (let i = 1; i < text.length; i++) {
    const char = text[i]!;
    if (char === "\\") {
      const next = text[++i];
      if (next !== '"' && next !== "\\") return null;
      key += next;
    } else if (char === '"') {
      return i === text.length - 1 && key.length >= 1 && key.length <= MAX_KEY_LENGTH ? key : null;
    } else if (char < " " || char > "~") {
      return null;
    } else {
      key += char;
    }
  }
  return null; // no closing quote
}

const encoder = new TextEncoder();

/** The bytes standing for a multipart body: its parts in order, each by name and content. */
async function multipartPayload(type: string, bytes: Uint8Array): Promise<Uint8Array | null> {
  let form: FormData;
  try {
    form = await new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: { "content-type": type },
    }).formData();
  } catch {
    return null; // not readable as multipart: the raw bytes stand for it
  }
  const parts = [];
  for (const [name, value] of form) {
    parts.push(
      typeof value === "string" ? ["field", name, value] : [
        "file",
        name,
        value.name,
        value.type,
        await sha256Hex(new Uint8Array(await value.arrayBuffer())),
      ],
    );
  }
  return encoder.encode(JSON.stringify(parts));
}

/**
 * The request's fingerprint. The body is read from a clone, so the route reads it as usual; null
 * when the body cannot be read.
 */
async function fingerprint(c: Context<AppEnv>): Promise<string | null> {
  const raw = c.req.raw;
  const fullType = raw.headers.get("content-type") ?? "";
  const type = fullType.split(";")[0]!.trim().toLowerCase();
  let body = new Uint8Array();
  if (raw.body) {
    try {
      body = new Uint8Array(await raw.clone().arrayBuffer());
    } catch (error) {
      if (error instanceof ApiError) throw error; // the body limit
      return null;
    }
  }
  const payload = type === "multipart/form-data"
    ? await multipartPayload(fullType, body) ?? body
    : body;
  const path = c.req.path.length > 1 ? c.req.path.replace(/\/$/, "") : c.req.path;
  const head = encoder.encode(
    JSON.stringify([c.req.method, path, new URL(c.req.url).search, type]) + "\n",
  );
  const all = new Uint8Array(head.length + payload.length);
  all.set(head);
  all.set(payload, head.length);
  return await sha256Hex(all);
}

/** The answer to keep: status, the replayed headers, the body bytes. */
async function answerOf(response: Response): Promise<StoredAnswer> {
  const headers: [string, string][] = [];
  for (const name of REPLAYED_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers.push([name, value]);
  }
  const body = new Uint8Array(await response.clone().arrayBuffer());
  return { status: response.status, headers, body };
}

/** A kept answer, replayed (through the context, which adds the request's `X-Request-Id`). */
function replay(c: Context<AppEnv>, { status, headers, body }: StoredAnswer): Response {
  const replayed = new Headers(headers);
  replayed.set(REPLAYED_HEADER, "true");
  const empty = status === 204 || status === 205 || status === 304;
  return c.newResponse(empty ? null : body as Uint8Array<ArrayBuffer>, {
    status: status as ContentfulStatusCode,
    headers: replayed,
  });
}

/**
 * The `Idempotency-Key` middleware of one route, mounted after its guard.
 *
 * @example
 * app.post("/dnd/:username", requireAcl(tokens, acl), idempotent(services), handler);
 */
export function idempotent(
  { store, clock, logger }: Pick<Services, "store" | "clock" | "logger">,
  { caller: callerOf = tokenCaller, refuse = apiRefusal }: IdempotencyOptions = {},
): MiddlewareHandler<AppEnv> {
  return idempotentTag(async (c, next) => {
    const header = c.req.header("idempotency-key");
    if (header === undefined) return await next();
    const key = parseIdempotencyKey(header);
    if (key === null) {
      return refuse(c, { status: 400, code: "InvalidIdempotencyKey", message: INVALID_KEY });
    }
    const caller = callerOf(c);
    const print = await fingerprint(c);
    if (print === null) {
      return refuse(c, { status: 400, code: "BadRequest", message: "the body cannot be read" });
    }
    const requestId = c.get("requestId");
    const outcome = await claimKey(store, caller, key, print, {
      now: clock.now(),
      ttlMs: KEY_TTL_MS,
      leaseMs: LEASE_MS,
    });
    switch (outcome.kind) {
      case "answered":
        logger.info("idempotent replay", { requestId, status: outcome.answer.status });
        return replay(c, outcome.answer);
      case "running": {
        const response = refuse(c, {
          status: 409,
          code: "IdempotencyKeyInUse",
          message: "a request with this Idempotency-Key is still being processed; retry later",
        });
        response.headers.set("Retry-After", "1");
        return response;
      }
      case "mismatch":
        return refuse(c, {
          status: 422,
          code: "IdempotencyKeyReused",
          message: "this Idempotency-Key was used for another request (method, path or body " +
            "differ); use a new key for a new request",
        });
    }
    const { claim } = outcome;
    const stopRenewing = renewWhileRunning(caller, key, claim);
    try {
      await next();
    } catch (error) {
      stopRenewing();
      await releaseClaim(store, caller, key, claim);
      throw error;
    }
    stopRenewing();
    if (c.res.status >= 500) {
      // not kept: a retry runs the command again
      await releaseClaim(store, caller, key, claim);
      return;
    }
    try {
      const saved = await saveAnswer(store, caller, key, claim, await answerOf(c.res), clock.now());
      if (!saved) logger.warn("idempotency key lost while its request ran", { requestId });
    } catch (error) {
      // the command ran: its answer goes out; a retry after the lease runs it again
      logger.error("idempotent answer not kept", { requestId, error: String(error) });
    }
  });

  /** Renews the claim every third of its lease until the answer; answers the stop function. */
  function renewWhileRunning(caller: string, key: string, claim: string): () => void {
    let cancel = () => {};
    let stopped = false;
    const arm = () => {
      cancel = clock.after(LEASE_MS / 3, async () => {
        if (stopped) return;
        try {
          if (!await renewClaim(store, caller, key, claim, clock.now(), LEASE_MS)) return;
        } catch (error) {
          logger.warn("idempotency lease not renewed", { error: String(error) });
        }
        if (!stopped) arm();
      });
    };
    arm();
    return () => {
      stopped = true;
      cancel();
    };
  }
}

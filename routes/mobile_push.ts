/**
 * Mobile push registration, CTI users only (ACL `svc.rest.mobile.push.register.create` on all
 * three routes; a web service user's token holding it is still refused with 403 `Forbidden`, since
 * a push token belongs to the token's user):
 *
 * - `POST /mobile/push/register/android` and `POST /mobile/push/register/ios`, body `{token}`:
 *   stores the token as the user's one token for that platform, replacing the previous one.
 * - `POST /mobile/push/register` (deprecated, answered with `Deprecation: true` and a `Link` to its
 *   successor, errors included): stores the token for `android`. The route predates the split, when
 *   the app's tokens were Firebase Cloud Messaging registrations, which is what the android route
 *   carries; an iOS app that needs its own (APNs) token has to move to the ios route anyway.
 *
 * The query parameter `apiVersion` is accepted on every route, absent or `2.0` (the value of the
 * spec's examples); any other value is 400 `BadRequest`, so that a client expecting another
 * version's behaviour learns it is not served.
 *
 * Body: none or blank, a `token` absent, `null`, empty or blank → 400 `JsonBodyNotFound` (the
 * spec's "token not found"); not JSON, not an object, a `token` that is not a string, longer than
 * 4096 characters, or holding anything but visible ASCII → 400 `JsonErrorDecoding`. Surrounding
 * whitespace is trimmed. 201 `{platform, token}`. The token's user deleted meanwhile: 401
 * `UserNotFound`, as `/auth/check` answers.
 */
import { operation, type OperationMeta } from "../lib/openapi/operation.ts";
import { type Context, Hono, type MiddlewareHandler } from "hono";
import * as z from "zod";
import { requireAcl } from "../lib/auth/guard.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readBody } from "../lib/http.ts";
import { bodyObject } from "../lib/body_schema.ts";
import type { Services } from "../lib/services.ts";
import { type PushPlatform, registerPushToken } from "../lib/store/push_tokens.ts";

const REGISTER_ACL = "svc.rest.mobile.push.register.create";

/** Android (FCM) tokens are about 160 characters and APNs ones 64; this leaves ample room. */
export const MAX_PUSH_TOKEN_LENGTH = 4096;

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

const SUCCESSOR = "/svc/api/2.0/mobile/push/register/android";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const bodySchema = z.lazy(() =>
  bodyObject({
    token: z.unknown().optional().meta({
      description: "The push token: visible ASCII, at most 4096 characters",
    }),
  })
);

/** The answer of a registration. */
const registeredBody = z.lazy(() =>
  z.object({ platform: z.enum(["android", "ios"]), token: z.string() })
);

const notFound = () => new ApiError(400, "JsonBodyNotFound", "token not found");
const invalid = (message: string) => new ApiError(400, "JsonErrorDecoding", message);

/** Marks every answer of the deprecated route, errors included. */
const deprecated: MiddlewareHandler<AppEnv> = async (c, next) => {
  c.header("Deprecation", "true");
  c.header("Link", `<${SUCCESSOR}>; rel="successor-version"`);
  await next();
};

/** The `token` of the body, trimmed, or the spec's errors 5. */
async function readToken(c: Context<AppEnv>): Promise<string> {
  const { token } = await readBody(c, bodySchema, {
    missing: "JsonBodyNotFound",
    invalid: "JsonErrorDecoding",
  });
  if (token === undefined || token === null) throw notFound();
  if (typeof token !== "string") throw invalid("field token: expected a string");
  const trimmed = token.trim();
  if (!trimmed) throw notFound();
  if (trimmed.length > MAX_PUSH_TOKEN_LENGTH) {
    throw invalid(`field token: longer than ${MAX_PUSH_TOKEN_LENGTH} characters`);
  }
  if (!VISIBLE_ASCII.test(trimmed)) {
    throw invalid("field token: only visible ASCII characters are allowed");
  }
  return trimmed;
}

function checkApiVersion(c: Context<AppEnv>): void {
  const version = c.req.query("apiVersion");
  if (version !== undefined && version !== "2.0") {
    throw new ApiError(400, "BadRequest", `apiVersion ${version} is not served; use 2.0`);
  }
}

export function mobilePushRoutes(services: Services): Hono<AppEnv> {
  const { store, clock } = services;
  const register = (platform: PushPlatform) => async (c: Context<AppEnv>) => {
    checkApiVersion(c);
    const token = await readToken(c);
    const userId = Number(c.get("identity").userId);
    const record = await registerPushToken(store, userId, platform, token, clock.now());
    if (!record) throw new ApiError(401, "UserNotFound", "user does not exist");
    return c.json({ platform, token }, 201);
  };
  const guard = requireAcl(services.tokens, REGISTER_ACL, {
    ctiOnly: "push registration is for CTI users only",
  });
  const doc = (summary: string): OperationMeta => ({
    summary,
    body: bodySchema,
    query: z.object({ apiVersion: z.literal("2.0").optional() }),
    responses: { 201: registeredBody },
    errors: {
      400: "`JsonBodyNotFound` (no token), `JsonErrorDecoding`, `BadRequest` (`apiVersion`)",
      401: "`UserNotFound`: the token's user no longer exists",
    },
  });
  return new Hono<AppEnv>()
    .post(
      "/mobile/push/register",
      deprecated,
      guard,
      operation(
        () => doc("Registers an Android push token (deprecated: use `/register/android`)"),
        register("android"),
      ),
    )
    .post(
      "/mobile/push/register/android",
      guard,
      operation(() => doc("Registers the user's Android push token"), register("android")),
    )
    .post(
      "/mobile/push/register/ios",
      guard,
      operation(() => doc("Registers the user's iOS push token"), register("ios")),
    );
}

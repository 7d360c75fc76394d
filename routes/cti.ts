/**
 * `GET /cti?token=<jwt>` (token also read from `Authorization`/`X-Auth-Token`): the live CTI
 * channel of the xuc JavaScript API (docs/cti.md), for CTI users only. Everything is checked
 * before the upgrade, so a refusal is a plain HTTP answer in the 2.0 error form: no or a bad token
 * 401 (with the token error's code: `InvalidToken`, `TokenExpired`, …), a web service user's token
 * 403 `Forbidden`, more sockets than `SVC_CTI_MAX_PER_USER` 429 `TooManyConnections`, a request
 * that is no WebSocket upgrade 426 `UpgradeRequired`, a broken handshake 400 `BadRequest`.
 */
import * as z from "zod";
import { operation } from "../lib/openapi/operation.ts";
import { type Context, Hono } from "hono";
import { readToken } from "../lib/auth/guard.ts";
import { CtiSession, CtiUser, type SessionHandlers } from "../lib/cti/hub.ts";
import { ApiError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { getUser } from "../lib/store/users.ts";
import { greet, handleMessage, handleNotices } from "./cti_commands.ts";

/** How long a socket may stay silent before Deno's ping frames find it dead (seconds). */
const IDLE_TIMEOUT_S = 30;

/** The token of the query, else of the headers; every token error is a 401 here. */
async function identityOf(services: Services, c: Context<AppEnv>) {
  try {
    const token = c.req.query("token") || readToken(c);
    return { identity: await services.tokens.verify(token), token };
  } catch (error) {
    if (error instanceof ApiError) throw new ApiError(401, error.code, error.message);
    throw error;
  }
}

export function ctiRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens, cti, config } = services;
  handleNotices(services);
  // made once for every socket (the hub does not know `Services`): no closure per socket
  const handlers: SessionHandlers = {
    message: (session, data) => handleMessage(services, session, data),
    opened: (session) => greet(services, session),
  };
  return new Hono<AppEnv>().get(
    "/cti",
    operation(() => ({
      summary: "The live CTI channel: a WebSocket of the xuc JavaScript API (docs/cti.md)",
      description: "Open it as a WebSocket with `?token=<CTI user's token>` (browsers cannot " +
        "send headers) or the token in `Authorization`; a plain GET answers 426.",
      query: z.object({ token: z.string().optional() }),
      responses: { 101: { mediaType: "*/*", description: "Switching to the WebSocket protocol" } },
      errors: {
        400: "`BadRequest`: not a WebSocket handshake",
        401: "`InvalidToken`, `TokenExpired`, `UserNotFound`",
        403: "`Forbidden`: not a CTI user's token",
        426: "`UpgradeRequired`: not opened as a WebSocket",
        429: "`TooManyConnections`",
      },
    }), async (c) => {
      const { identity, token } = await identityOf(services, c);
      if (identity.userType !== "cti") {
        throw new ApiError(403, "Forbidden", "the CTI socket is for CTI users");
      }
      const user = await getUser(store, Number(identity.userId));
      if (!user) throw new ApiError(401, "UserNotFound", "the token's user no longer exists");
      if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
        throw new ApiError(426, "UpgradeRequired", "open this route as a WebSocket");
      }
      if (cti.count(user.username ?? "") >= config.ctiMaxPerUser) {
        throw new ApiError(
          429,
          "TooManyConnections",
          `user ${user.username} holds ${config.ctiMaxPerUser} CTI sockets already`,
        );
      }
      const expiresAt = await tokens.expiry(token);
      let upgraded: { socket: WebSocket; response: Response };
      try {
        upgraded = Deno.upgradeWebSocket(c.req.raw, { idleTimeout: IDLE_TIMEOUT_S });
      } catch (error) {
        // an Upgrade header without the rest of the handshake (no key, another version…)
        throw new ApiError(
          400,
          "BadRequest",
          `not a WebSocket handshake: ${(error as Error).message}`,
        );
      }
      // the session listens to its socket: it greets on open, runs messages, detaches on close
      new CtiSession(cti, upgraded.socket, identity, new CtiUser(user), expiresAt, handlers);
      return upgraded.response;
    }),
  );
}

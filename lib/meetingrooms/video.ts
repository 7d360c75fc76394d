/**
 * Video meetings' tokens (docs/meetingrooms.md): the JWT a Jitsi Meet server with token
 * authentication takes (its `prosody` `token_verification`): HS256, `iss` the app id, `aud`
 * `jitsi`, `sub` the domain, `room` the room's name there, `context.user` who joins, `exp`. Signed
 * with `SVC_JITSI_SECRET`; without the three `SVC_JITSI_*` settings there is no video token.
 */
import { SignJWT } from "jose";
import type { Config } from "../config.ts";
import { RoomRefusal } from "./refusal.ts";

/** What a video client needs: the token, where to use it, until when. */
export interface VideoToken {
  token: string;
  /** The Jitsi server (`SVC_JITSI_DOMAIN`). */
  domain: string;
  /** The room's name on it. */
  room: string;
  /** `https://<domain>/<room>?jwt=<token>`: opens the meeting in a browser. */
  url: string;
  /** When the token expires (ms since the epoch). */
  expiresAt: number;
}

type VideoSettings = Pick<
  Config,
  "jitsiDomain" | "jitsiAppId" | "jitsiSecret" | "jitsiTokenTtl"
>;

/** Whether video tokens can be made. */
export const videoConfigured = (config: VideoSettings) =>
  config.jitsiDomain !== null && config.jitsiAppId !== null && config.jitsiSecret !== null;

/** What the token routes say in place of a video token when none can be made. */
export const NO_VIDEO =
  "no video token is configured: set SVC_JITSI_DOMAIN, SVC_JITSI_APP_ID and SVC_JITSI_SECRET";

/**
 * A token for `user` to join the video room `room` (lowercase: Jitsi's room names are).
 *
 * @example
 * const video = await videoToken(config, "weekly-sales", { id: "7", name: "Alice Martin" }, now);
 */
export async function videoToken(
  config: VideoSettings,
  room: string,
  user: { id: string; name: string },
  now: number,
): Promise<VideoToken> {
  if (!videoConfigured(config)) throw new RoomRefusal("no_video", NO_VIDEO);
  const name = room.toLowerCase();
  const expiresAt = now + config.jitsiTokenTtl * 1000;
  const token = await new SignJWT({
    room: name,
    context: { user: { id: user.id, name: user.name } },
  })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer(config.jitsiAppId!)
    .setAudience("jitsi")
    .setSubject(config.jitsiDomain!)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(expiresAt / 1000))
    .sign(new TextEncoder().encode(config.jitsiSecret!));
  const domain = config.jitsiDomain!;
  return {
    token,
    domain,
    room: name,
    url: `https://${domain}/${encodeURIComponent(name)}?jwt=${token}`,
    expiresAt,
  };
}

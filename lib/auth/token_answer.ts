/**
 * What every route issuing a token answers (`/auth/login`, `/auth/check`, single sign-on), and what
 * the CTI socket sends as `AuthenticationToken` when it renews its token (docs/cti.md).
 */
import type { CoreServices } from "../core_services.ts";
import { markConnected } from "../store/connections.ts";
import type { Identity } from "./tokens.ts";

/** A new token: the login it speaks for, the token and its time to live in seconds. */
export interface TokenAnswer {
  login: string;
  token: string;
  TTL: number;
}

/**
 * Issues a token for `identity` (or, with `presented`, its renewal: `GET /auth/check`); a CTI user
 * becomes connected for the token's lifetime.
 */
export async function tokenAnswer(
  { tokens, store, clock }: Pick<CoreServices, "tokens" | "store" | "clock">,
  identity: Identity,
  presented?: string,
): Promise<TokenAnswer> {
  const { token, ttl } = presented === undefined
    ? await tokens.issue(identity)
    : await tokens.renew(presented, identity);
  if (identity.userType === "cti") {
    const now = clock.now();
    await markConnected(store, Number(identity.userId), now, now + ttl * 1000);
  }
  return { login: identity.login, token, TTL: ttl };
}

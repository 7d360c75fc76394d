/**
 * Keeping a CTI socket signed in (docs/cti.md, "Keeping the session alive"): some time before its
 * token expires the hub (lib/cti/hub.ts) sends the socket a renewed token, `AuthenticationToken`,
 * issued as `GET /auth/check` renews one; the socket stays open, signed in with the renewed token
 * from then on, and a client that keeps it reconnects with it later.
 */
import { ctiUserAcls } from "../auth/acl.ts";
import { tokenAnswer } from "../auth/token_answer.ts";
import type { Identity } from "../auth/tokens.ts";
import type { CoreServices } from "../core_services.ts";
import type { CtiMessage } from "../cti/messages.ts";
import { getUser } from "../store/users.ts";

/** How long before its token expires a socket is sent the renewal: 5 minutes. */
export const RENEWAL_LEAD_MS = 300_000;

/**
 * When a socket whose token expires at `expiresAt` is sent its renewal: {@link RENEWAL_LEAD_MS}
 * before, or halfway from `now` for a token with less than twice that left.
 */
export const renewalAt = (now: number, expiresAt: number): number =>
  expiresAt - Math.min(RENEWAL_LEAD_MS, Math.max(0, expiresAt - now) / 2);

/** A socket's renewed token: whom it speaks for, when it expires, what the socket is sent. */
export interface Renewal {
  identity: Identity;
  expiresAt: number;
  /** `AuthenticationToken` (a change of rights profile comes as its own `RightProfile`). */
  messages: CtiMessage[];
}

/**
 * Renews the token a socket holds (speaking for `identity`) as `GET /auth/check` does (a CTI
 * user's ACLs, the user connected for the new token's lifetime). Null when the user is gone: the
 * socket keeps its token until it expires.
 */
export async function renewSocketToken(
  services: CoreServices,
  identity: Identity,
): Promise<Renewal | null> {
  const user = await getUser(services.store, Number(identity.userId));
  if (!user) return null;
  const answer = await tokenAnswer(services, { ...identity, acls: ctiUserAcls() });
  const messages: CtiMessage[] = [{ msgType: "AuthenticationToken", ctiMessage: answer }];
  return {
    identity: await services.tokens.verify(answer.token), // one object per token, as on open
    expiresAt: await services.tokens.expiry(answer.token),
    messages,
  };
}

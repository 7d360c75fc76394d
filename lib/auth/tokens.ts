/**
 * Access tokens (decisions §2): JWT HS256 signed with Web Crypto through `jose`; the key is imported
 * once. Claims: the spec's `login`, `expiresAt`, `issuedAt` (ms), `userType`, `acls`, plus `sub`,
 * `exp`/`iat` (s), `jti` and the token format version `v`.
 */
// jose's modules one by one: its index would run all of them (encryption, key import and export,
// remote key sets) at every start, where tokens need these three (docs/performance.md)
import * as base64url from "jose/base64url";
import { compactVerify } from "jose/jws/compact/verify";
import { SignJWT } from "jose/jwt/sign";
import type { Clock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import type { Store } from "../store/store.ts";
import type { TokenClaims } from "./token_claims.ts";

/** Token format version; a token with another `v` was issued before the content changed. */
export const TOKEN_VERSION = 1;

export type UserType = "cti" | "webservice";

/** Who a verified token speaks for. */
export interface Identity {
  /** The user's id, as a string (`sub`). */
  userId: string;
  login: string;
  userType: UserType;
  acls: string[];
}

export interface IssuedToken {
  token: string;
  /** Time to live in seconds. */
  ttl: number;
}

/**
 * The claims' schema: zod and it are loaded by the first token checked (every request but the
 * liveness probe's waits for zod's load anyway), not at start (docs/performance.md).
 */
let claims: Promise<TokenClaims> | undefined;
const claimsSchema = () =>
  claims ??= import("./token_claims.ts").then(({ tokenClaims }) => tokenClaims(TOKEN_VERSION));

const invalidToken = (message: string) => new ApiError(403, "InvalidToken", message);

/** The identity of `verified`, unless it has expired at `now` (403 `TokenExpired`). */
function unexpired(verified: Verified, now: number): Readonly<Identity> {
  if (now >= verified.expiresAt) throw new ApiError(403, "TokenExpired", "token expired");
  return verified.identity;
}

/** A checked token: whom it speaks for (one object per token) and when it expires (ms). */
interface Verified {
  identity: Readonly<Identity>;
  expiresAt: number;
}

/** How many verified tokens are remembered; the oldest is forgotten first. */
const VERIFIED_CACHE_SIZE = 10_000;

/** How long the renewal of a token is answered again to the same token (see `renew`). */
export const RENEWAL_REUSE_MS = 1_000;
/** Renewals remembered at most (they last a second: then all are forgotten). */
const RENEWALS_KEPT = 1_000;

/** Issues and verifies tokens with one HMAC key. */
export class Tokens {
  /**
   * Tokens whose signature and claims were checked. A token is immutable and the key never changes
   * in a process, so a remembered answer cannot go stale; only the expiry is checked again.
   */
  readonly #verified = new Map<string, Verified>();
  /** The latest renewal of each token presented to `renew`, and when it was made. */
  readonly #renewals = new Map<string, { at: number; issued: IssuedToken }>();

  private constructor(
    private readonly key: CryptoKey,
    readonly ttl: number,
    private readonly clock: Clock,
  ) {}

  /** Imports `secret` as the HS256 key, once. */
  static async create(secret: string, ttl: number, clock: Clock): Promise<Tokens> {
    const key = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign", "verify"],
    );
    return new Tokens(key, ttl, clock);
  }

  /**
   * Signs a token for `identity`, valid for `ttl` seconds: the configured time to live unless the
   * caller asks for another (the xivo-auth route's `expiration`, at most the configured one).
   *
   * @example
   * const { token } = await tokens.issue({ userId: "1", login: "alice", userType: "cti", acls: ["alias.ctiuser"] });
   */
  async issue(identity: Identity, ttl: number = this.ttl): Promise<IssuedToken> {
    const issuedAt = this.clock.now();
    const expiresAt = issuedAt + ttl * 1000;
    const token = await new SignJWT({
      login: identity.login,
      expiresAt,
      issuedAt,
      userType: identity.userType,
      acls: identity.acls,
      v: TOKEN_VERSION,
    })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(identity.userId)
      .setIssuedAt(Math.floor(issuedAt / 1000))
      .setExpirationTime(Math.floor(expiresAt / 1000))
      .setJti(crypto.randomUUID())
      .sign(this.key);
    return { token, ttl };
  }

  /**
   * A renewal of `presented` (`GET /auth/check`), a token for `identity`: the same one answered to
   * the same presented token for {@link RENEWAL_REUSE_MS}, so that a client checking its token in
   * a loop costs one signature a second, not one per check. Its expiry is then up to that much
   * earlier than a token issued at the check.
   */
  async renew(presented: string, identity: Identity): Promise<IssuedToken> {
    const now = this.clock.now();
    const kept = this.#renewals.get(presented);
    if (kept && now - kept.at < RENEWAL_REUSE_MS && now >= kept.at) return kept.issued;
    const issued = await this.issue(identity);
    if (this.#renewals.size >= RENEWALS_KEPT) this.#renewals.clear();
    this.#renewals.set(presented, { at: now, issued });
    return issued;
  }

  /**
   * Checks the signature, then the claims, then the expiry. Throws 403 `InvalidToken` (bad
   * signature, another algorithm, a missing claim or another `v`), 400 `InvalidJson` (a correctly
   * signed payload that is not JSON) or 403 `TokenExpired`.
   */
  async verify(token: string): Promise<Identity> {
    return this.remembered(token) ?? unexpired(await this.#check(token), this.clock.now());
  }

  /**
   * The identity of a token {@link verify} accepted before, without waiting (the hot path: no
   * promise), or undefined for a token not seen yet (then call `verify`). An expired token
   * throws 403 `TokenExpired`, as `verify` does.
   */
  remembered(token: string): Identity | undefined {
    const verified = this.#verified.get(token);
    return verified && unexpired(verified, this.clock.now());
  }

  /** When a token that {@link verify} accepted expires (ms). */
  async expiry(token: string): Promise<number> {
    return (this.#verified.get(token) ?? await this.#check(token)).expiresAt;
  }

  async #check(token: string): Promise<Verified> {
    let payload: Uint8Array;
    try {
      ({ payload } = await compactVerify(token, this.key, { algorithms: ["HS256"] }));
    } catch {
      throw invalidToken("token does not match the service signature");
    }
    let json: unknown;
    try {
      json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(payload));
    } catch {
      throw new ApiError(400, "InvalidJson", "token content is not valid JSON");
    }
    const claims = (await claimsSchema()).safeParse(json);
    if (!claims.success) {
      throw invalidToken("token issued before the token content changed, log in again");
    }
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) {
      this.#verified.delete(this.#verified.keys().next().value!);
    }
    const { sub, login, userType, acls, expiresAt } = claims.data;
    const verified = { identity: Object.freeze({ userId: sub, login, userType, acls }), expiresAt };
    this.#verified.set(token, verified);
    return verified;
  }
}

const secretKey = ["meta", "jwt_secret"];

/**
 * The signing secret: `SVC_JWT_SECRET` when set, else one generated once and kept in the store so
 * that restarts and other processes sharing the store accept the same tokens.
 */
export async function loadJwtSecret(store: Store, configured: string | null): Promise<string> {
  if (configured) return configured;
  const generated = base64url.encode(crypto.getRandomValues(new Uint8Array(32)));
  await store.commit((op) =>
    op.check({ key: secretKey, versionstamp: null }).set(secretKey, generated)
  );
  const kept = await store.get<string>(secretKey); // whichever process wrote first wins
  return kept.value ?? generated;
}

/**
 * OpenID Connect single sign-on: an access token (a JWT) is verified against the provider's keys,
 * found through its discovery document (`<issuer>/.well-known/openid-configuration` →
 * `jwks_uri`), and names the login in a configurable claim.
 *
 * Keys are fetched on first use and kept for {@link KEYS_MAX_AGE_MS}; a token signed by a key the
 * set does not hold makes the verifier fetch the set again (the provider may have rotated its keys),
 * at most once per {@link KEYS_COOLDOWN_MS}, so tokens with made-up key ids cannot flood the
 * provider. That is the policy of jose's `createRemoteJWKSet`, whose timing runs on `Date.now()`;
 * here it runs on the injected clock, around jose's `createLocalJWKSet`.
 *
 * Public-key checks are slow, so a verified token's login is remembered (by the token's SHA-256)
 * until the token expires, for at most {@link MAX_CACHED_TOKENS} tokens. Whether the login is a
 * CTI user is the route's business, asked on every login.
 */
import type { FlattenedJWSInput, JWSHeaderParameters, JWTPayload } from "jose";
import { decodeProtectedHeader } from "jose/decode/protected_header";
import * as errors from "jose/errors";
import { createLocalJWKSet } from "jose/jwks/local";
import { jwtVerify } from "jose/jwt/verify";
import type { Clock } from "../../clock.ts";
import { sha256Hex } from "../../digest.ts";
import { ApiError } from "../../errors.ts";

export interface OidcOptions {
  /** `SVC_OIDC_ISSUER`: the provider; its `/.well-known/openid-configuration` names the JWKS. */
  issuer: string;
  /** `SVC_OIDC_AUDIENCE`: the `aud` an access token must hold; null checks none. */
  audience: string | null;
  /** `SVC_OIDC_LOGIN_CLAIM`: the claim holding the login. */
  loginClaim: string;
  clock: Clock;
}

/** How long fetched keys are used before they are fetched again (jose's `cacheMaxAge`). */
export const KEYS_MAX_AGE_MS = 10 * 60_000;
/** How soon after a fetch an unknown key id may fetch the keys again (jose's `cooldownDuration`). */
export const KEYS_COOLDOWN_MS = 30_000;
/** How long the provider has to answer a request for its discovery document or its keys. */
export const FETCH_TIMEOUT_MS = 5_000;
/** How many verified tokens are remembered; the oldest make room. */
export const MAX_CACHED_TOKENS = 10_000;
/** No login is longer (as for `POST /auth/login`): a longer claim names no user. */
const MAX_LOGIN_LENGTH = 256;

type KeySet = ReturnType<typeof createLocalJWKSet>;

interface ProviderKeys {
  /** The discovery document's `issuer`: what a token's `iss` must be. */
  issuer: string;
  keys: KeySet;
  /** When they were fetched, on the injected clock. */
  fetchedAt: number;
}

const failed = (why: string) => new ApiError(403, "OidcAuthenticationFailed", why);

/** Verifies OpenID Connect access tokens (JWTs) against the provider's keys. */
export class OidcVerifier {
  #keys: ProviderKeys | null = null;
  #fetching: Promise<ProviderKeys> | null = null;
  /** SHA-256 of a verified token → its login and when it expires (ms); oldest first. */
  #verified = new Map<string, { login: string; expiresAt: number }>();

  constructor(readonly options: OidcOptions) {}

  /**
   * The login an access token names; throws `ApiError(403, "OidcAuthenticationFailed")` for a token
   * that is not valid (signature, issuer, audience, expiry, login claim), and when the provider
   * cannot be reached to fetch its keys.
   */
  async login(accessToken: string): Promise<string> {
    const digest = await sha256Hex(accessToken);
    const remembered = this.#verified.get(digest);
    if (remembered && this.options.clock.now() < remembered.expiresAt) return remembered.login;
    if (remembered) this.#verified.delete(digest);

    const { login, expiresAt } = await this.#verify(accessToken);
    this.#remember(digest, login, expiresAt);
    return login;
  }

  async #verify(accessToken: string): Promise<{ login: string; expiresAt: number }> {
    try {
      decodeProtectedHeader(accessToken);
    } catch {
      throw failed("the access token is not a JWT");
    }
    const { issuer } = await this.#currentKeys();
    const options = {
      issuer,
      audience: this.options.audience ?? undefined,
      currentDate: new Date(this.options.clock.now()),
      requiredClaims: ["exp"],
    };
    let payload: JWTPayload;
    try {
      const key = (header: JWSHeaderParameters, token: FlattenedJWSInput) =>
        this.#key(header, token);
      payload = (await jwtVerify(accessToken, key, options)).payload;
    } catch (error) {
      throw error instanceof ApiError ? error : failed(reason(error));
    }
    const { loginClaim } = this.options;
    const login = payload[loginClaim];
    if (typeof login !== "string" || login === "") {
      throw failed(`the access token holds no login in its "${loginClaim}" claim`);
    }
    if (login.length > MAX_LOGIN_LENGTH) {
      throw failed(`the access token's "${loginClaim}" claim is longer than any login`);
    }
    return { login, expiresAt: payload.exp! * 1000 };
  }

  #remember(digest: string, login: string, expiresAt: number) {
    if (this.#verified.size >= MAX_CACHED_TOKENS) {
      const now = this.options.clock.now();
      for (const [key, entry] of this.#verified) {
        if (entry.expiresAt <= now) this.#verified.delete(key);
      }
      const oldest = this.#verified.keys().next();
      if (this.#verified.size >= MAX_CACHED_TOKENS && !oldest.done) {
        this.#verified.delete(oldest.value);
      }
    }
    this.#verified.set(digest, { login, expiresAt });
  }

  /** The provider's keys, fetched when there are none yet or they are older than their max age. */
  #currentKeys(): Promise<ProviderKeys> {
    const keys = this.#keys;
    if (keys && this.options.clock.now() - keys.fetchedAt < KEYS_MAX_AGE_MS) {
      return Promise.resolve(keys);
    }
    return this.#fetchKeys();
  }

  /** The key for a token's header; an unknown key id fetches the keys again, after a cooldown. */
  async #key(header: JWSHeaderParameters, token: FlattenedJWSInput): ReturnType<KeySet> {
    const current = await this.#currentKeys();
    try {
      return await current.keys(header, token);
    } catch (error) {
      const coolingDown = this.options.clock.now() - current.fetchedAt < KEYS_COOLDOWN_MS;
      if (!(error instanceof errors.JWKSNoMatchingKey) || coolingDown) throw error;
      return await (await this.#fetchKeys()).keys(header, token);
    }
  }

  /** Fetches the discovery document and the keys it names; concurrent callers share one fetch. */
  #fetchKeys(): Promise<ProviderKeys> {
    this.#fetching ??= this.#discoverKeys().then((keys) => this.#keys = keys).finally(() => {
      this.#fetching = null;
    });
    return this.#fetching;
  }

  async #discoverKeys(): Promise<ProviderKeys> {
    const configured = this.options.issuer;
    const url = `${withoutTrailingSlash(configured)}/.well-known/openid-configuration`;
    const discovery = await fetchJson(url, "discovery document");
    const { issuer, jwks_uri: jwksUri } = (discovery ?? {}) as Record<string, unknown>;
    if (typeof issuer !== "string" || typeof jwksUri !== "string" || !isHttpUrl(jwksUri)) {
      throw failed(`the provider's discovery document ${url} names no issuer or no jwks_uri`);
    }
    if (withoutTrailingSlash(issuer) !== withoutTrailingSlash(configured)) {
      throw failed(
        `the provider's discovery document names the issuer ${issuer}, not ${configured}`,
      );
    }
    const jwks = await fetchJson(jwksUri, "key set");
    try {
      return {
        issuer,
        keys: createLocalJWKSet(jwks as never),
        fetchedAt: this.options.clock.now(),
      };
    } catch {
      throw failed(`the provider's key set ${jwksUri} is not a JSON Web Key Set`);
    }
  }
}

/** Why jose refused a token, in words. */
function reason(error: unknown): string {
  if (error instanceof errors.JWTExpired) return "the access token has expired";
  if (error instanceof errors.JWKSNoMatchingKey) {
    return "the access token is signed by a key the provider does not publish";
  }
  if (error instanceof errors.JWKSMultipleMatchingKeys) {
    return "the access token names no key id and several of the provider's keys fit";
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return "the access token's signature does not match its content";
  }
  const message = error instanceof Error ? error.message : String(error);
  return `the access token is not valid: ${message}`;
}

/** GETs a JSON document from the provider, within {@link FETCH_TIMEOUT_MS}. */
async function fetchJson(url: string, what: string): Promise<unknown> {
  const unreachable = (why: string) =>
    failed(`the OpenID Connect provider's ${what} ${url} could not be fetched: ${why}`);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), FETCH_TIMEOUT_MS);
  try {
    const response = await fetch(url, {
      headers: { Accept: "application/json" },
      signal: controller.signal,
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw unreachable(`status ${response.status}`);
    }
    try {
      return await response.json();
    } catch {
      throw unreachable(controller.signal.aborted ? "timed out" : "not JSON");
    }
  } catch (error) {
    if (error instanceof ApiError) throw error;
    if (controller.signal.aborted) throw unreachable(`no answer within ${FETCH_TIMEOUT_MS} ms`);
    throw unreachable(error instanceof Error ? error.message : String(error));
  } finally {
    clearTimeout(timer);
  }
}

const withoutTrailingSlash = (url: string) => url.replace(/\/+$/, "");

function isHttpUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === "http:" || protocol === "https:";
  } catch {
    return false;
  }
}

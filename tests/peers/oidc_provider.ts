/**
 * A real OpenID Connect provider (`npm:oidc-provider`, v9) on 127.0.0.1, inside the test process.
 * It issues JWT access tokens (RS256, RFC 9068) through the `client_credentials` grant with a
 * resource indicator: each token comes from a client registered for it (dynamic registration),
 * whose metadata names the login, the claim holding it and the token's lifetime.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair } from "jose";

/** The resource indicator (the `aud` of access tokens) tests configure as `SVC_OIDC_AUDIENCE`. */
export const OIDC_AUDIENCE = "urn:svc:api";

export interface AccessTokenRequest {
  /** The login the token names; none leaves the claim out. */
  login?: string;
  /** The claim holding the login (`preferred_username` by default). */
  claim?: string;
  /** The token's `aud` (a resource indicator); {@link OIDC_AUDIENCE} by default. */
  audience?: string;
  /** The token's lifetime in seconds (600 by default). */
  ttl?: number;
}

export interface OidcPeer {
  /** The provider's issuer, e.g. `http://127.0.0.1:41234`. */
  issuer: string;
  /** The provider's key set URL. */
  jwksUri: string;
  /** Registers a client for `request` and answers the access token it gets. */
  accessToken(request?: AccessTokenRequest): Promise<string>;
  /** How many requests reached `path` (e.g. `new URL(peer.jwksUri).pathname`) so far. */
  requests(path: string): number;
  /** Closes the server and every connection to it. */
  stop(): Promise<void>;
}

/** Client metadata of our own: what the token says and how long it lives. */
const TOKEN_METADATA = ["svc_login", "svc_login_claim", "svc_ttl"] as const;

/**
 * oidc-provider warns when imported that it supports Node.js only; it serves these tests well under
 * Deno, so that one line is left out of the test output.
 */
async function importProvider() {
  const warn = console.warn;
  console.warn = (...args: unknown[]) => {
    if (!String(args[0]).includes("Unsupported runtime")) warn(...args);
  };
  try {
    return (await import("oidc-provider")).Provider;
  } finally {
    console.warn = warn;
  }
}

/**
 * The provider's storage (registered clients, registration tokens), in a Map of this peer's own
 * (oidc-provider warns about its built-in one, shared by the whole process).
 */
function mapAdapter() {
  const entries = new Map<string, Record<string, unknown>>();
  return class MapAdapter {
    constructor(readonly model: string) {}
    upsert(id: string, payload: Record<string, unknown>) {
      entries.set(`${this.model}:${id}`, payload);
      return Promise.resolve();
    }
    find(id: string) {
      return Promise.resolve(entries.get(`${this.model}:${id}`));
    }
    findByUid() {
      return Promise.resolve(undefined);
    }
    findByUserCode() {
      return Promise.resolve(undefined);
    }
    consume(id: string) {
      const payload = entries.get(`${this.model}:${id}`);
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
      return Promise.resolve();
    }
    destroy(id: string) {
      entries.delete(`${this.model}:${id}`);
      return Promise.resolve();
    }
    revokeByGrantId() {
      return Promise.resolve();
    }
  };
}

/** Starts the provider on a free loopback port. */
export async function startOidcProvider(): Promise<OidcPeer> {
  const counts = new Map<string, number>();
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://peer").pathname;
    counts.set(path, (counts.get(path) ?? 0) + 1);
    if (handle) handle(req, res);
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const stop = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });

  try {
    const { port } = server.address() as AddressInfo;
    const issuer = `http://127.0.0.1:${port}`;
    const { privateKey } = await generateKeyPair("RS256", { extractable: true });
    const signingKey = {
      ...await exportJWK(privateKey),
      kid: "peer-key-1",
      alg: "RS256",
      use: "sig",
    };

    const metadataOf = (client: unknown) =>
      (client as { metadata(): Record<string, unknown> }).metadata();
    const Provider = await importProvider();
    const provider = new Provider(issuer, {
      adapter: mapAdapter(),
      jwks: { keys: [signingKey] },
      cookies: { keys: [crypto.randomUUID()] },
      clients: [],
      extraClientMetadata: { properties: [...TOKEN_METADATA] },
      features: {
        devInteractions: { enabled: false },
        clientCredentials: { enabled: true },
        registration: { enabled: true },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => OIDC_AUDIENCE,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx: unknown, resource: string) => ({
            scope: "api",
            audience: resource,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "RS256" } },
          }),
        },
      },
      extraTokenClaims(ctx: { oidc: { client?: unknown } }) {
        const metadata = ctx.oidc.client ? metadataOf(ctx.oidc.client) : {};
        const login = metadata.svc_login;
        if (typeof login !== "string") return undefined;
        return { [String(metadata.svc_login_claim ?? "preferred_username")]: login };
      },
      ttl: {
        ClientCredentials: (_ctx: unknown, _token: unknown, client: unknown) =>
          Number(metadataOf(client).svc_ttl ?? 600),
      },
    });
    handle = provider.callback();

    return {
      issuer,
      jwksUri: `${issuer}/jwks`,
      async accessToken(request = {}) {
        const registered = await fetch(`${issuer}/reg`, {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({
            grant_types: ["client_credentials"],
            response_types: [],
            redirect_uris: [],
            token_endpoint_auth_method: "client_secret_basic",
            svc_login: request.login,
            svc_login_claim: request.claim,
            svc_ttl: request.ttl,
          }),
        });
        const client = await registered.json();
        if (registered.status !== 201) throw new Error(`registration: ${JSON.stringify(client)}`);
        const response = await fetch(`${issuer}/token`, {
          method: "POST",
          headers: {
            Authorization: `Basic ${btoa(`${client.client_id}:${client.client_secret}`)}`,
            "Content-Type": "application/x-www-form-urlencoded",
          },
          body: new URLSearchParams({
            grant_type: "client_credentials",
            scope: "api",
            resource: request.audience ?? OIDC_AUDIENCE,
          }),
        });
        const body = await response.json();
        if (response.status !== 200) throw new Error(`token: ${JSON.stringify(body)}`);
        return body.access_token;
      },
      requests: (path) => counts.get(path) ?? 0,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

import assert from "node:assert/strict";
import { adminProfile, setProfile } from "../../lib/rights/profiles.ts";
import { base64url, decodeJwt, exportJWK, generateKeyPair, SignJWT } from "jose";
import { KEYS_COOLDOWN_MS, KEYS_MAX_AGE_MS } from "../../lib/auth/sso/oidc.ts";
import { createUser } from "../../lib/store/users.ts";
import {
  bearer,
  closedPort,
  ctiUser,
  expectError,
  login,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";
import { OIDC_AUDIENCE, type OidcPeer, startOidcProvider } from "../peers/oidc_provider.ts";
import { parseExposition, valueOf } from "../prometheus.ts";

const OIDC = "/svc/api/2.0/auth/oidc";
const CHECK = "/svc/api/2.0/auth/check";

/** The real app configured for `peer`, its clock at the real time (the provider's tokens use it). */
async function appFor(peer: OidcPeer, env: Record<string, string> = {}): Promise<TestContext> {
  const ctx = await setup({
    SVC_OIDC_ISSUER: peer.issuer,
    SVC_OIDC_AUDIENCE: OIDC_AUDIENCE,
    ...env,
  });
  await ctx.clock.advance(Date.now() - ctx.clock.now());
  await ctiUser(ctx, "alice");
  return ctx;
}

const withToken = (ctx: TestContext, token: string) =>
  Promise.resolve(ctx.app.request(`${OIDC}?token=${encodeURIComponent(token)}`));

/** Asserts 200 with the token result for `login`; answers the issued token. */
async function expectLoggedIn(response: Response, login: string): Promise<string> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body).sort(), ["TTL", "login", "token"]);
  assert.equal(body.login, login);
  assert.equal(body.TTL, 7200);
  assert.equal(decodeJwt(body.token).login, login);
  return body.token;
}

const refused = (response: Response, message: RegExp) =>
  expectError(response, 403, "OidcAuthenticationFailed", message);

/** A JWT with the peer's issuer, audience and alice's login, signed by a key of our own. */
async function forged(peer: OidcPeer, now: number, header: Record<string, string> = {}) {
  const { privateKey, publicKey } = await generateKeyPair("RS256");
  const token = await new SignJWT({ preferred_username: "alice" })
    .setProtectedHeader({ alg: "RS256", typ: "at+jwt", kid: "intruder-key", ...header })
    .setIssuer(peer.issuer)
    .setAudience(OIDC_AUDIENCE)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(now / 1000) + 600)
    .sign(privateKey);
  return { token, publicJwk: await exportJWK(publicKey) };
}

/** `token` with its payload changed by `change`, its header and signature kept. */
function tampered(token: string, change: (claims: Record<string, unknown>) => void) {
  const [header, payload, signature] = token.split(".");
  const claims = JSON.parse(new TextDecoder().decode(base64url.decode(payload!)));
  change(claims);
  return [header, base64url.encode(JSON.stringify(claims)), signature].join(".");
}

Deno.test("GET /auth/oidc against a real OpenID Connect provider", async (t) => {
  const peer = await startOidcProvider();
  const jwksPath = new URL(peer.jwksUri).pathname;
  const discoveryPath = "/.well-known/openid-configuration";
  try {
    await t.step("a valid access token logs alice in, as ?token= and as Bearer", async () => {
      const ctx = await appFor(peer);
      const accessToken = await peer.accessToken({ login: "alice" });
      const issued = await expectLoggedIn(await withToken(ctx, accessToken), "alice");
      const again = await ctx.app.request(OIDC, { headers: bearer(accessToken) });
      await expectLoggedIn(again, "alice");

      const checked = await ctx.app.request(CHECK, { headers: bearer(issued) });
      await expectLoggedIn(checked, "alice");
    });

    await t.step(
      "a supervisor's token holds alias.ctiuser only, as after a password login: its profile decides",
      async () => {
        const ctx = await appFor(peer);
        const sam = await createUser(ctx.services.store, {
          firstname: "Sam",
          username: "sam",
          password: "sam-pw",
        });
        await setProfile(ctx.services.store, adminProfile(sam.id));
        const issued = await expectLoggedIn(
          await withToken(ctx, await peer.accessToken({ login: "sam" })),
          "sam",
        );
        assert.deepEqual(decodeJwt(issued).acls, ["alias.ctiuser"]);
        const queues = await ctx.app.request("/svc/api/2.0/supervision/queues", {
          headers: bearer(issued),
        });
        assert.equal(queues.status, 200, "the admin profile reads the figures");
      },
    );

    await t.step("the login claim is configurable", async () => {
      const ctx = await appFor(peer, { SVC_OIDC_LOGIN_CLAIM: "uid" });
      await expectLoggedIn(
        await withToken(ctx, await peer.accessToken({ login: "alice", claim: "uid" })),
        "alice",
      );
      const usual = await peer.accessToken({ login: "alice" });
      await refused(await withToken(ctx, usual), /no login in its "uid" claim/);
    });

    await t.step("without SVC_OIDC_AUDIENCE any audience is accepted", async () => {
      const ctx = await appFor(peer, { SVC_OIDC_AUDIENCE: "" });
      const accessToken = await peer.accessToken({ login: "alice", audience: "urn:other:api" });
      await expectLoggedIn(await withToken(ctx, accessToken), "alice");
    });

    await t.step("a token for another audience is refused", async () => {
      const ctx = await appFor(peer);
      const accessToken = await peer.accessToken({ login: "alice", audience: "urn:other:api" });
      await refused(await withToken(ctx, accessToken), /"aud"/);
    });

    await t.step("each login and refusal is counted in svc_logins_total", async () => {
      const ctx = await appFor(peer);
      await expectLoggedIn(
        await withToken(ctx, await peer.accessToken({ login: "alice" })),
        "alice",
      );
      const other = await peer.accessToken({ login: "alice", audience: "urn:other:api" });
      await refused(await withToken(ctx, other), /"aud"/);
      const reader = await webServiceUser(ctx, ["svc.rest.metrics.read"]);
      const scraped = await ctx.app.request("/metrics", {
        headers: bearer(await login(ctx, "webservice", reader.login)),
      });
      const families = parseExposition(await scraped.text());
      const oidc = { user_type: "cti", method: "oidc" };
      assert.equal(valueOf(families, "svc_logins_total", { ...oidc, outcome: "success" }), 1);
      assert.equal(valueOf(families, "svc_logins_total", { ...oidc, outcome: "refused" }), 1);
    });

    await t.step("an expired token is refused, also one verified before", async () => {
      const ctx = await appFor(peer);
      const seen = await peer.accessToken({ login: "alice", ttl: 60 });
      const unseen = await peer.accessToken({ login: "alice", ttl: 60 });
      await expectLoggedIn(await withToken(ctx, seen), "alice");
      await ctx.clock.advance(65_000);
      await refused(await withToken(ctx, seen), /expired/);
      await refused(await withToken(ctx, unseen), /expired/);
    });

    await t.step("a token signed by a key the provider does not publish is refused", async () => {
      const ctx = await appFor(peer);
      const { token } = await forged(peer, ctx.clock.now());
      const before = peer.requests(jwksPath);
      await refused(await withToken(ctx, token), /key the provider does not publish/);
      assert.equal(peer.requests(jwksPath), before + 1, "the keys are fetched once");

      // Within the cooldown an unknown key id does not fetch the keys again; after it, it does.
      await refused(await withToken(ctx, token), /key the provider does not publish/);
      assert.equal(peer.requests(jwksPath), before + 1);
      await ctx.clock.advance(KEYS_COOLDOWN_MS);
      await refused(await withToken(ctx, token), /key the provider does not publish/);
      assert.equal(peer.requests(jwksPath), before + 2);

      // Our key under the provider's key id: the signature does not match.
      const { token: posing } = await forged(peer, ctx.clock.now(), { kid: "peer-key-1" });
      await refused(await withToken(ctx, posing), /signature/);
    });

    await t.step("a tampered, unsigned or symmetric-signed token is refused", async () => {
      const ctx = await appFor(peer);
      await ctiUser(ctx, "bob");
      const bobs = await peer.accessToken({ login: "bob" });
      await expectLoggedIn(await withToken(ctx, bobs), "bob");
      const asAlice = tampered(bobs, (claims) => claims.preferred_username = "alice");
      await refused(await withToken(ctx, asAlice), /signature does not match/);
      const longer = tampered(bobs, (claims) => claims.exp = Number(claims.exp) + 3600);
      await refused(await withToken(ctx, longer), /signature does not match/);

      const [, payload] = bobs.split(".");
      const none = base64url.encode(JSON.stringify({ alg: "none", typ: "at+jwt" }));
      await refused(await withToken(ctx, `${none}.${payload}.`), /not valid/);
      const claims = decodeJwt(bobs);
      const symmetric = await new SignJWT(claims)
        .setProtectedHeader({ alg: "HS256", kid: "peer-key-1" })
        .sign(new TextEncoder().encode("a secret anyone could pick, 32+ bytes"));
      await refused(await withToken(ctx, symmetric), /not valid/);
      await refused(await withToken(ctx, "not-a-jwt"), /not a JWT/);
    });

    await t.step("a token without a login claim is refused", async () => {
      const ctx = await appFor(peer);
      const accessToken = await peer.accessToken({});
      await refused(await withToken(ctx, accessToken), /no login in its "preferred_username"/);
    });

    await t.step("a login naming no CTI user answers UserNotFound", async () => {
      const ctx = await appFor(peer);
      await webServiceUser(ctx, ["#"], "robot");
      for (const login of ["nobody", "robot"]) {
        const accessToken = await peer.accessToken({ login });
        await expectError(await withToken(ctx, accessToken), 401, "UserNotFound");
      }
    });

    await t.step("no token answers OidcInvalidParameter", async () => {
      const ctx = await appFor(peer);
      await expectError(await ctx.app.request(OIDC), 403, "OidcInvalidParameter");
      await expectError(await ctx.app.request(`${OIDC}?token=`), 403, "OidcInvalidParameter");
      const basic = { Authorization: "Basic YWxpY2U6cHc=" };
      await expectError(
        await ctx.app.request(OIDC, { headers: basic }),
        403,
        "OidcInvalidParameter",
      );
    });

    await t.step("without SVC_OIDC_ISSUER answers OidcNotEnabled", async () => {
      const ctx = await setup();
      const accessToken = await peer.accessToken({ login: "alice" });
      await expectError(await withToken(ctx, accessToken), 403, "OidcNotEnabled");
    });

    await t.step("a provider that cannot be reached answers OidcAuthenticationFailed", async () => {
      const down = `http://127.0.0.1:${await closedPort()}`;
      const ctx = await appFor(peer, { SVC_OIDC_ISSUER: down });
      const accessToken = await peer.accessToken({ login: "alice" });
      await refused(
        await withToken(ctx, accessToken),
        /discovery document .* could not be fetched/,
      );

      const elsewhere = await appFor(peer, { SVC_OIDC_ISSUER: `${peer.issuer}/elsewhere` });
      await refused(await withToken(elsewhere, accessToken), /could not be fetched: status 404/);
    });

    await t.step("a verified token is remembered: its second login fetches nothing", async () => {
      const ctx = await appFor(peer);
      const accessToken = await peer.accessToken({ login: "alice", ttl: 3600 });
      const [jwks, discovery] = [peer.requests(jwksPath), peer.requests(discoveryPath)];
      await expectLoggedIn(await withToken(ctx, accessToken), "alice");
      assert.equal(peer.requests(jwksPath), jwks + 1);
      assert.equal(peer.requests(discoveryPath), discovery + 1);
      await expectLoggedIn(await withToken(ctx, accessToken), "alice");
      await expectLoggedIn(
        await withToken(ctx, await peer.accessToken({ login: "alice" })),
        "alice",
      );
      assert.equal(peer.requests(jwksPath), jwks + 1, "the keys were fetched once");

      // Keys older than their max age are fetched again; a remembered token needs none.
      await ctx.clock.advance(KEYS_MAX_AGE_MS);
      await expectLoggedIn(await withToken(ctx, accessToken), "alice");
      assert.equal(peer.requests(jwksPath), jwks + 1);
      const fresh = await peer.accessToken({ login: "alice", ttl: 3600 });
      await expectLoggedIn(await withToken(ctx, fresh), "alice");
      assert.equal(peer.requests(jwksPath), jwks + 2);
    });
  } finally {
    await peer.stop();
  }
});

import assert from "node:assert/strict";
import { base64url, decodeJwt, SignJWT } from "jose";
import { RENEWAL_REUSE_MS } from "../../lib/auth/tokens.ts";
import { createUser, deleteUser } from "../../lib/store/users.ts";
import {
  bearer,
  ctiUser,
  expectError,
  login,
  postJson,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

const SECRET = "test-secret-that-is-long-enough-for-hs256";
const LOGIN = "/svc/api/2.0/auth/login";
const WEBSERVICE = "/svc/api/2.0/auth/webservice";
const CHECK = "/svc/api/2.0/auth/check";

const check = (ctx: TestContext, headers: Record<string, string>) =>
  Promise.resolve(ctx.app.request(CHECK, { headers }));

/** Signs arbitrary claims with the test secret, as a forger who knew it could. */
function sign(claims: Record<string, unknown>, secret = SECRET, alg = "HS256") {
  return new SignJWT(claims).setProtectedHeader({ alg }).sign(new TextEncoder().encode(secret));
}

/** The claims a valid token for `userId` would have at `now`. */
function validClaims(now: number, userId: number, login: string) {
  return {
    login,
    expiresAt: now + 60_000,
    issuedAt: now,
    userType: "cti",
    acls: ["alias.ctiuser"],
    sub: String(userId),
    exp: Math.floor(now / 1000) + 60,
    iat: Math.floor(now / 1000),
    jti: crypto.randomUUID(),
    v: 1,
  };
}

Deno.test("POST /auth/login", async (t) => {
  const ctx = await setup({ SVC_JWT_SECRET: SECRET });
  const alice = await ctiUser(ctx, "alice");
  await webServiceUser(ctx, ["#"], "robot");

  await t.step("a CTI user gets a token with the spec's claims", async () => {
    const response = await postJson(ctx, LOGIN, { login: "alice", password: "alice-pw" });
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    const body = await response.json();
    assert.deepEqual(Object.keys(body).sort(), ["TTL", "login", "token"]);
    assert.equal(body.login, "alice");
    assert.equal(body.TTL, 7200);
    const claims = decodeJwt(body.token);
    assert.equal(claims.login, "alice");
    assert.equal(claims.userType, "cti");
    assert.deepEqual(claims.acls, ["alias.ctiuser"]);
    assert.equal(claims.sub, String(alice.id));
    assert.equal(claims.issuedAt, ctx.clock.now());
    assert.equal(claims.expiresAt, ctx.clock.now() + 7200_000);
    assert.equal(claims.iat, Math.floor(ctx.clock.now() / 1000));
    assert.equal(claims.exp, Math.floor(ctx.clock.now() / 1000) + 7200);
    assert.equal(typeof claims.jti, "string");
    assert.equal(claims.v, 1);
  });

  await t.step(
    "wrong password, unknown login, web service login: 401 InvalidCredentials",
    async () => {
      for (
        const body of [
          { login: "alice", password: "wrong" },
          { login: "alice", password: "" },
          { login: "nobody", password: "alice-pw" },
          { login: "robot", password: "robot-pw" },
          { login: "x".repeat(300), password: "pw" },
        ]
      ) {
        await expectError(await postJson(ctx, LOGIN, body), 401, "InvalidCredentials");
      }
    },
  );

  await t.step("a user without a password cannot log in", async () => {
    await createUser(ctx.services.store, { firstname: "No", username: "nopw" });
    await expectError(
      await postJson(ctx, LOGIN, { login: "nopw", password: "" }),
      401,
      "InvalidCredentials",
    );
  });

  await t.step("a body off the model: 400 InvalidJson", async () => {
    for (
      const body of [
        "{not json",
        "",
        "[]",
        "null",
        '"alice"',
        { login: "alice" },
        { password: "alice-pw" },
        { login: 1, password: "alice-pw" },
        { login: "alice", password: null },
      ]
    ) {
      await expectError(await postJson(ctx, LOGIN, body), 400, "InvalidJson");
    }
  });
});

Deno.test("POST /auth/webservice", async (t) => {
  const ctx = await setup({ SVC_JWT_SECRET: SECRET });
  const robot = await webServiceUser(ctx, ["svc.rest.dial.#", "!svc.rest.dial.user.#"], "robot");
  await ctiUser(ctx, "alice");

  await t.step("a web service user gets a token carrying its ACLs", async () => {
    const response = await postJson(ctx, WEBSERVICE, { login: "robot", password: "robot-pw" });
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.login, "robot");
    assert.equal(body.TTL, 7200);
    const claims = decodeJwt(body.token);
    assert.equal(claims.userType, "webservice");
    assert.deepEqual(claims.acls, ["svc.rest.dial.#", "!svc.rest.dial.user.#"]);
    assert.equal(claims.sub, String(robot.id));
  });

  await t.step("errors", async () => {
    await expectError(
      await postJson(ctx, WEBSERVICE, { login: "robot", password: "nope" }),
      401,
      "InvalidCredentials",
    );
    await expectError(
      await postJson(ctx, WEBSERVICE, { login: "alice", password: "alice-pw" }),
      401,
      "InvalidCredentials",
    );
    await expectError(await postJson(ctx, WEBSERVICE, "{"), 400, "InvalidJson");
    await expectError(await postJson(ctx, WEBSERVICE, { login: "robot" }), 400, "InvalidJson");
  });
});

Deno.test("login throttle: 10 failures in 5 minutes answer 429 with Retry-After", async (t) => {
  const ctx = await setup();
  await ctiUser(ctx, "alice");
  await ctiUser(ctx, "bob");
  await webServiceUser(ctx, [], "alice");
  const wrong = { login: "alice", password: "wrong" };
  const right = { login: "alice", password: "alice-pw" };

  await t.step("ten failures are answered 401", async () => {
    for (let i = 0; i < 10; i++) {
      await expectError(await postJson(ctx, LOGIN, wrong), 401, "InvalidCredentials");
      ctx.clock.advance(10_000);
    }
  });

  await t.step("then even the right password is refused with 429", async () => {
    const response = await postJson(ctx, LOGIN, right);
    const body = await expectError(response, 429, "TooManyAttempts");
    // the first failure was 100 s ago: it leaves the window in 200 s
    assert.equal(response.headers.get("retry-after"), "200");
    assert.match(body.message, /200/);
  });

  await t.step("other logins and the other login route are not throttled", async () => {
    assert.equal((await postJson(ctx, LOGIN, { login: "bob", password: "bob-pw" })).status, 200);
    assert.equal(
      (await postJson(ctx, WEBSERVICE, { login: "alice", password: "alice-pw" })).status,
      200,
    );
  });

  await t.step(
    "once the oldest failure leaves the window, one more attempt is allowed",
    async () => {
      ctx.clock.advance(200_000);
      assert.equal((await postJson(ctx, LOGIN, right)).status, 200);
    },
  );

  await t.step("a success clears the count", async () => {
    for (let i = 0; i < 9; i++) await postJson(ctx, LOGIN, wrong);
    assert.equal((await postJson(ctx, LOGIN, right)).status, 200);
    for (let i = 0; i < 9; i++) await postJson(ctx, LOGIN, wrong);
    assert.equal((await postJson(ctx, LOGIN, right)).status, 200);
  });

  await t.step("the web service route is throttled the same way", async () => {
    for (let i = 0; i < 10; i++) {
      await postJson(ctx, WEBSERVICE, { login: "ghost", password: "x" });
    }
    const response = await postJson(ctx, WEBSERVICE, { login: "ghost", password: "x" });
    await expectError(response, 429, "TooManyAttempts");
    assert.equal(response.headers.get("retry-after"), "300");
  });
});

Deno.test("GET /auth/check", async (t) => {
  const ctx = await setup({ SVC_JWT_SECRET: SECRET, SVC_TOKEN_TTL: "600" });
  const alice = await ctiUser(ctx, "alice");
  await webServiceUser(ctx, ["svc.rest.dnd.#"], "robot");
  const token = await login(ctx, "login", "alice");

  await t.step("renews a token for the same identity and ACLs", async () => {
    ctx.clock.advance(5_000);
    const response = await check(ctx, bearer(token));
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.login, "alice");
    assert.equal(body.TTL, 600);
    assert.notEqual(body.token, token);
    const before = decodeJwt(token);
    const after = decodeJwt(body.token);
    assert.equal(after.sub, before.sub);
    assert.deepEqual(after.acls, before.acls);
    assert.equal(after.userType, "cti");
    assert.notEqual(after.jti, before.jti);
    assert.equal(after.expiresAt, ctx.clock.now() + 600_000);
    // the old token stays valid until it expires
    assert.equal((await check(ctx, bearer(token))).status, 200);
  });

  await t.step("a web service user may call it too, and X-Auth-Token is accepted", async () => {
    const wsToken = await login(ctx, "webservice", "robot");
    const response = await check(ctx, { "X-Auth-Token": wsToken });
    assert.equal(response.status, 200);
    const claims = decodeJwt((await response.json()).token);
    assert.deepEqual(claims.acls, ["svc.rest.dnd.#"]);
    assert.equal(claims.userType, "webservice");
  });

  await t.step("header errors", async () => {
    await expectError(await check(ctx, {}), 400, "AuthorizationHeaderNotFound");
    await expectError(
      await check(ctx, { Authorization: `Basic ${btoa("a:b")}` }),
      400,
      "BearerNotFound",
    );
    await expectError(await check(ctx, { Authorization: "Bearer" }), 400, "BearerNotFound");
    await expectError(await check(ctx, { Authorization: token }), 400, "BearerNotFound");
  });

  await t.step("the same token checked again within a second: the same renewal", async () => {
    const first = await (await check(ctx, bearer(token))).json();
    ctx.clock.advance(RENEWAL_REUSE_MS - 1);
    const again = await (await check(ctx, bearer(token))).json();
    assert.deepEqual(again, first, "one signature a second per presented token");
    ctx.clock.advance(1);
    const later = await (await check(ctx, bearer(token))).json();
    assert.notEqual(later.token, first.token);
    assert.equal(decodeJwt(later.token).expiresAt, ctx.clock.now() + 600_000);
    // another token of the same user is renewed on its own
    const other = await login(ctx, "login", "alice");
    const renewed = await (await check(ctx, bearer(other))).json();
    assert.notEqual(renewed.token, later.token);
  });

  await t.step("expired: 403 TokenExpired", async () => {
    const shortLived = await login(ctx, "login", "alice");
    ctx.clock.advance(600_000);
    await expectError(await check(ctx, bearer(shortLived)), 403, "TokenExpired");
  });

  await t.step("a token verified before still expires, on a guarded route too", async () => {
    const remembered = await login(ctx, "login", "alice");
    const contacts = () =>
      ctx.app.request("/svc/api/2.0/contact/personal", { headers: bearer(remembered) });
    assert.equal((await check(ctx, bearer(remembered))).status, 200);
    assert.equal((await contacts()).status, 200);
    ctx.clock.advance(599_999);
    assert.equal((await contacts()).status, 200);
    ctx.clock.advance(1);
    await expectError(await contacts(), 403, "TokenExpired");
    await expectError(await check(ctx, bearer(remembered)), 403, "TokenExpired");
  });

  await t.step("forged or outdated tokens: 403 InvalidToken", async () => {
    const now = ctx.clock.now();
    const claims = validClaims(now, alice.id, "alice");
    // sanity: the same claims signed with the right key pass
    assert.equal((await check(ctx, bearer(await sign(claims)))).status, 200);

    const [header, payload, signature] = (await sign(claims)).split(".");
    const altered = base64url.encode(JSON.stringify({ ...claims, acls: ["#"] }));
    const unsigned = base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }));
    const { jti: _jti, ...withoutJti } = claims;
    const { v: _v, ...withoutV } = claims;
    const forged = {
      "another key": await sign(claims, "another-secret-that-is-long-enough-too"),
      "altered payload": `${header}.${altered}.${signature}`,
      "alg none": `${unsigned}.${payload}.`,
      "HS512 with the right secret": await sign(claims, SECRET, "HS512"),
      "missing jti": await sign(withoutJti),
      "missing v": await sign(withoutV),
      "another v": await sign({ ...claims, v: 2 }),
      "missing login": await sign({ ...claims, login: undefined }),
      "acls not a list": await sign({ ...claims, acls: "alias.ctiuser" }),
      "unknown userType": await sign({ ...claims, userType: "admin" }),
      "not a JWT": "abc",
      "empty segments": "..",
    };
    for (const [name, forgedToken] of Object.entries(forged)) {
      const body = await expectError(await check(ctx, bearer(forgedToken)), 403, "InvalidToken");
      assert.ok(body.message.length > 0, name);
    }
  });

  await t.step("a correctly signed payload that is not JSON: 400 InvalidJson", async () => {
    const key = await crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(SECRET),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const input = `${base64url.encode('{"alg":"HS256"}')}.${base64url.encode("not json")}`;
    const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(input));
    const token = `${input}.${base64url.encode(new Uint8Array(mac))}`;
    await expectError(await check(ctx, bearer(token)), 400, "InvalidJson");
  });

  await t.step("the token's user was deleted: 401 UserNotFound", async () => {
    const carol = await ctiUser(ctx, "carol");
    const carolToken = await login(ctx, "login", "carol");
    assert.ok(await deleteUser(ctx.services.store, carol.id));
    await expectError(await check(ctx, bearer(carolToken)), 401, "UserNotFound");
  });
});

Deno.test("single sign-on routes answer with their not-configured errors", async () => {
  const ctx = await setup();
  const get = (path: string) => Promise.resolve(ctx.app.request(`/svc/api/2.0/auth/${path}`));
  await expectError(await get("sso"), 401, "SsoAuthenticationFailed");
  await expectError(
    await get("cas?service=http://127.0.0.1/&ticket=ST-1"),
    403,
    "CasServerUrlNotSet",
  );
  await expectError(await get("oidc?token=abc"), 403, "OidcNotEnabled");
});

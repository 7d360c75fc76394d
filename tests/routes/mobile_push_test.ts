import assert from "node:assert/strict";
import { deletePushTokensOfUser, pushTokensOfUser } from "../../lib/store/push_tokens.ts";
import type { UserRecord } from "../../lib/store/users.ts";
import {
  bearer,
  ctiUser,
  expectError,
  expectForbidden,
  login,
  postJson,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

const V2 = "/svc/api/2.0";
const ACL = "svc.rest.mobile.push.register.create";
const ROUTES = [
  "/mobile/push/register",
  "/mobile/push/register/android",
  "/mobile/push/register/ios",
];
const FCM = "dGhpcyBpcyBhbiBmY20gdG9rZW4:APA91bH-example_token-0123456789";
const APNS = "a".repeat(64);

interface Fixture {
  ctx: TestContext;
  alice: UserRecord;
  token: string;
  post(path: string, body: unknown, token?: string): Promise<Response>;
  /** alice's stored tokens as `platform → token`. */
  stored(user?: UserRecord): Promise<Record<string, string>>;
}

async function fixture(): Promise<Fixture> {
  const ctx = await setup();
  const alice = await ctiUser(ctx, "alice");
  const token = await login(ctx, "login", "alice");
  const post = (path: string, body: unknown, withToken = token) =>
    postJson(ctx, `${V2}${path}`, body, bearer(withToken));
  const stored = async (user = alice) =>
    Object.fromEntries(
      (await pushTokensOfUser(ctx.services.store, user.id)).map((t) => [t.platform, t.token]),
    );
  return { ctx, alice, token, post, stored };
}

async function expectCreated(response: Response, platform: string, token: string) {
  const text = await response.text();
  assert.equal(response.status, 201, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  assert.deepEqual(JSON.parse(text), { platform, token });
}

Deno.test("POST /mobile/push/register/android and /ios", async (t) => {
  const f = await fixture();

  await t.step("each stores the CTI user's token for its platform", async () => {
    await expectCreated(
      await f.post("/mobile/push/register/android", { token: FCM }),
      "android",
      FCM,
    );
    assert.deepEqual(await f.stored(), { android: FCM });
    await expectCreated(await f.post("/mobile/push/register/ios", { token: APNS }), "ios", APNS);
    assert.deepEqual(await f.stored(), { android: FCM, ios: APNS });
  });

  await t.step("registering again replaces the platform's previous token only", async () => {
    await expectCreated(
      await f.post("/mobile/push/register/android", { token: "second-fcm" }),
      "android",
      "second-fcm",
    );
    assert.deepEqual(await f.stored(), { android: "second-fcm", ios: APNS });
    await expectCreated(
      await f.post("/mobile/push/register/ios", { token: "b".repeat(64) }),
      "ios",
      "b".repeat(64),
    );
    assert.deepEqual(await f.stored(), { android: "second-fcm", ios: "b".repeat(64) });
  });

  await t.step("apiVersion=2.0 is accepted, no other value", async () => {
    await expectCreated(
      await f.post("/mobile/push/register/android?apiVersion=2.0", { token: FCM }),
      "android",
      FCM,
    );
    await expectCreated(
      await f.post("/mobile/push/register/ios?apiVersion=2.0", { token: APNS }),
      "ios",
      APNS,
    );
    for (const version of ["1.0", "3.0", "", "2"]) {
      await expectError(
        await f.post(`/mobile/push/register/ios?apiVersion=${version}`, { token: "x" }),
        400,
        "BadRequest",
        /apiVersion .*is not served; use 2\.0/,
      );
    }
    assert.deepEqual(await f.stored(), { android: FCM, ios: APNS });
  });

  await t.step("surrounding whitespace is trimmed; the body may be sent as text", async () => {
    const response = await f.ctx.app.request(`${V2}/mobile/push/register/ios`, {
      method: "POST",
      headers: { ...bearer(f.token), "Content-Type": "text/plain" },
      body: JSON.stringify({ token: `  ${APNS}\n` }),
    });
    await expectCreated(response, "ios", APNS);
  });

  await t.step("a token moves from the user who held it to the one registering it", async () => {
    const bob = await ctiUser(f.ctx, "bob");
    const bobToken = await login(f.ctx, "login", "bob");
    await expectCreated(
      await f.post("/mobile/push/register/android", { token: FCM }, bobToken),
      "android",
      FCM,
    );
    assert.deepEqual(await f.stored(bob), { android: FCM });
    assert.deepEqual(await f.stored(), { ios: APNS });
    // alice registers it back: bob loses it, and alice's later token change frees it
    await expectCreated(
      await f.post("/mobile/push/register/android", { token: FCM }),
      "android",
      FCM,
    );
    assert.deepEqual(await f.stored(bob), {});
    await expectCreated(
      await f.post("/mobile/push/register/android", { token: "other" }),
      "android",
      "other",
    );
    await expectCreated(
      await f.post("/mobile/push/register/android", { token: FCM }, bobToken),
      "android",
      FCM,
    );
    assert.deepEqual(await f.stored(), { android: "other", ios: APNS });
    assert.deepEqual(await f.stored(bob), { android: FCM });
    // the same token on another platform is another registration
    await expectCreated(await f.post("/mobile/push/register/ios", { token: FCM }), "ios", FCM);
    assert.deepEqual(await f.stored(bob), { android: FCM });
  });

  await t.step("deletePushTokensOfUser forgets them; the token is free again", async () => {
    const store = f.ctx.services.store;
    await deletePushTokensOfUser(store, f.alice.id);
    assert.deepEqual(await f.stored(), {});
    await deletePushTokensOfUser(store, f.alice.id); // nothing left: no-op
    await expectCreated(await f.post("/mobile/push/register/ios", { token: FCM }), "ios", FCM);
    assert.deepEqual(await f.stored(), { ios: FCM });
  });
});

Deno.test("POST /mobile/push/register (deprecated)", async (t) => {
  const f = await fixture();

  await t.step("stores an android token, answering Deprecation and the successor", async () => {
    const response = await f.post("/mobile/push/register", { token: FCM });
    assert.equal(response.headers.get("deprecation"), "true");
    assert.equal(
      response.headers.get("link"),
      '</svc/api/2.0/mobile/push/register/android>; rel="successor-version"',
    );
    await expectCreated(response, "android", FCM);
    assert.deepEqual(await f.stored(), { android: FCM });
  });

  await t.step("it replaces what the android route stored, and the reverse", async () => {
    await expectCreated(
      await f.post("/mobile/push/register/android", { token: "new" }),
      "android",
      "new",
    );
    await expectCreated(
      await f.post("/mobile/push/register", { token: "newer" }),
      "android",
      "newer",
    );
    assert.deepEqual(await f.stored(), { android: "newer" });
  });

  await t.step("its errors carry the Deprecation header too", async () => {
    const response = await f.post("/mobile/push/register", {});
    assert.equal(response.headers.get("deprecation"), "true");
    await expectError(response, 400, "JsonBodyNotFound");
    const ws = await webServiceUser(f.ctx, [ACL]);
    const refused = await f.post(
      "/mobile/push/register",
      { token: FCM },
      await login(f.ctx, "webservice", ws.login),
    );
    assert.equal(refused.headers.get("deprecation"), "true");
    await expectError(refused, 403, "Forbidden");
  });

  await t.step("the current routes carry no Deprecation header", async () => {
    for (const path of ROUTES.slice(1)) {
      const response = await f.post(path, { token: FCM });
      assert.equal(response.headers.get("deprecation"), null);
      await response.body?.cancel();
    }
  });
});

Deno.test("mobile push: body errors on every route", async (t) => {
  const f = await fixture();
  for (const path of ROUTES) {
    await t.step(path, async () => {
      const before = await f.stored();
      const notFound: unknown[] = [
        "",
        "  \n",
        {},
        { token: null },
        { token: "" },
        { token: "  " },
        { other: "x" },
      ];
      for (const body of notFound) {
        await expectError(
          await f.post(path, body),
          400,
          "JsonBodyNotFound",
          /^token not found$|no JSON body/,
        );
      }
      await expectError(await f.post(path, "{oops"), 400, "JsonErrorDecoding", /not valid JSON/);
      for (const body of ["null", "[]", '["tok"]', "42", '"tok"']) {
        await expectError(await f.post(path, body), 400, "JsonErrorDecoding", /JSON object/);
      }
      for (const token of [42, true, ["a"], { a: 1 }]) {
        await expectError(
          await f.post(path, { token }),
          400,
          "JsonErrorDecoding",
          /^field token: expected a string$/,
        );
      }
      await expectError(
        await f.post(path, { token: "x".repeat(4097) }),
        400,
        "JsonErrorDecoding",
        /^field token: longer than 4096 characters$/,
      );
      for (const token of ["with space", "tab\there", "new\nline", "é-accent", "nul\u0000"]) {
        await expectError(
          await f.post(path, { token }),
          400,
          "JsonErrorDecoding",
          /^field token: only visible ASCII characters are allowed$/,
        );
      }
      assert.deepEqual(await f.stored(), before);
      await expectCreated(
        await f.post(path, { token: "x".repeat(4096) }),
        path.endsWith("ios") ? "ios" : "android",
        "x".repeat(4096),
      );
    });
  }
});

Deno.test("mobile push: who may register", async (t) => {
  const f = await fixture();

  await t.step("a web service user's token holding the ACL: 403 Forbidden", async () => {
    const ws = await webServiceUser(f.ctx, [ACL]);
    const wsToken = await login(f.ctx, "webservice", ws.login);
    for (const path of ROUTES) {
      await expectError(
        await f.post(path, { token: FCM }, wsToken),
        403,
        "Forbidden",
        /^push registration is for CTI users only$/,
      );
    }
  });

  await t.step("a token without the ACL: 403 naming it", async () => {
    const ws = await webServiceUser(f.ctx, ["svc.rest.dnd.#", "svc.rest.mobile.push.register"]);
    const wsToken = await login(f.ctx, "webservice", ws.login);
    const { token: cti } = await f.ctx.services.tokens.issue({
      userId: String(f.alice.id),
      login: "alice",
      userType: "cti",
      acls: ["alias.ctiuser", "!svc.rest.mobile.#"],
    });
    for (const path of ROUTES) {
      await expectForbidden(await f.post(path, { token: FCM }, wsToken), ACL);
      await expectForbidden(await f.post(path, { token: FCM }, cti), ACL);
    }
    assert.deepEqual(await f.stored(), {});
  });

  await t.step("no token: 400 AuthorizationHeaderNotFound", async () => {
    for (const path of ROUTES) {
      await expectError(
        await postJson(f.ctx, `${V2}${path}`, { token: FCM }),
        400,
        "AuthorizationHeaderNotFound",
      );
    }
  });

  await t.step("the token's user deleted meanwhile: 401 UserNotFound, nothing stored", async () => {
    const { token: ghost } = await f.ctx.services.tokens.issue({
      userId: "9999",
      login: "ghost",
      userType: "cti",
      acls: ["alias.ctiuser"],
    });
    await expectError(
      await f.post("/mobile/push/register/ios", { token: APNS }, ghost),
      401,
      "UserNotFound",
    );
    assert.deepEqual(await pushTokensOfUser(f.ctx.services.store, 9999), []);
  });

  await t.step("the store failing: 503 Unreachable", async () => {
    f.ctx.services.store.close();
    await expectError(
      await f.post("/mobile/push/register/ios", { token: APNS }),
      503,
      "Unreachable",
    );
  });
});

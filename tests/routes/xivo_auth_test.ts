/**
 * xivo-auth compatible tokens (`routes/xivo_auth.ts`, docs/xivo_auth.md) through the real app:
 * `POST /0.1/token` exactly as xivo-auth's clients call it (basic auth, `{"backend",
 * "expiration"}`, reading `data.token`), every error in xivo-auth's form, the login throttle
 * shared with the 2.0 routes, and `HEAD`/`GET /0.1/token/{token}` for valid, expired, forged and
 * orphaned tokens.
 */
import { serverUuid } from "../../lib/store/server_identity.ts";
import assert from "node:assert/strict";
import { Tokens } from "../../lib/auth/tokens.ts";
import { isConnected } from "../../lib/store/connections.ts";
import { deleteUser } from "../../lib/store/users.ts";
import { createWebServiceUser } from "../../lib/store/webservice_users.ts";
import { basicCredentials, XIVO_AUTH_BACKENDS, xivoTime } from "../../routes/xivo_auth.ts";
import {
  bearer,
  ctiUser,
  login,
  postJson,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

const TOKEN = "/0.1/token";
const DATA_KEYS = [
  "token",
  "auth_id",
  "xivo_user_uuid",
  "xivo_uuid",
  "issued_at",
  "expires_at",
  "utc_issued_at",
  "utc_expires_at",
  "acls",
];

/** `Authorization: Basic …` of `login:password`, encoded as Python's requests does (Latin-1). */
function basicAuth(login: string, password: string, encoding: "latin1" | "utf8" = "latin1") {
  const text = `${login}:${password}`;
  const bytes = encoding === "utf8"
    ? new TextEncoder().encode(text)
    : Uint8Array.from(text, (char) => char.charCodeAt(0));
  return { Authorization: `Basic ${btoa(String.fromCharCode(...bytes))}` };
}

/** POSTs `/0.1/token` as xivo-auth-client does: JSON headers, basic auth, `json.dumps` body. */
function postToken(
  ctx: TestContext,
  body: string | BodyInit | undefined,
  headers: Record<string, string> = {},
) {
  return Promise.resolve(ctx.app.request(TOKEN, {
    method: "POST",
    headers: { Accept: "application/json", "Content-Type": "application/json", ...headers },
    body,
  }));
}

/** The body Python's `json.dumps` gives for these fields (its separators). */
const pythonJson = (fields: Record<string, unknown>) =>
  "{" + Object.entries(fields).map(([k, v]) => `${JSON.stringify(k)}: ${JSON.stringify(v)}`)
    .join(", ") +
  "}";

/** Asserts xivo-auth's error form: `{reason: [text], timestamp: [seconds], status_code}`. */
async function expectXivoError(
  ctx: TestContext,
  response: Response,
  status: number,
  reason: string | RegExp,
) {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body), ["reason", "timestamp", "status_code"]);
  assert.equal(body.reason.length, 1);
  if (typeof reason === "string") assert.equal(body.reason[0], reason);
  else assert.match(body.reason[0], reason);
  assert.deepEqual(body.timestamp, [ctx.clock.now() / 1000]);
  assert.equal(body.status_code, status);
  return body;
}

/** A web service user's token data through `/0.1/token`, asserting 200. */
async function newToken(
  ctx: TestContext,
  credentials: [string, string],
  fields: Record<string, unknown> = { backend: "xivo_service" },
) {
  const response = await postToken(ctx, pythonJson(fields), basicAuth(...credentials));
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body), ["data"]);
  return body.data;
}

/** The offset of local time from UTC at `ms` in the format's terms: local minus UTC, in ms. */
const localOffset = (ms: number) => 0 - new Date(ms).getTimezoneOffset() * 60_000;

Deno.test("POST /0.1/token with xivo_service: a token every area accepts", async (t) => {
  const ctx = await setup({ SVC_TOKEN_TTL: "7200" });
  const crm = await webServiceUser(ctx, ["confd.users.read", "svc.rest.history.#"], "crm");
  const issued = ctx.clock.now();
  const data = await newToken(ctx, ["crm", "crm-pw"], {
    backend: "xivo_service",
    expiration: 3600,
  });

  await t.step("the data xivo-auth answered, in its order and formats", async () => {
    assert.deepEqual(Object.keys(data), DATA_KEYS);
    assert.equal(data.auth_id, String(crm.id));
    assert.equal(data.xivo_user_uuid, null);
    assert.equal(data.xivo_uuid, await serverUuid(ctx.services.store), "this server's uuid");
    assert.deepEqual(data.acls, ["confd.users.read", "svc.rest.history.#"]);
    assert.equal(data.utc_issued_at, "2026-01-01T00:00:00.000000");
    assert.equal(data.utc_expires_at, "2026-01-01T01:00:00.000000");
    const format = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}$/;
    assert.match(data.issued_at, format);
    assert.match(data.expires_at, format);
    // the server's local time, without a zone, like Python's datetime.fromtimestamp()
    assert.equal(Date.parse(`${data.issued_at}Z`) - issued, localOffset(issued));
    assert.equal(Date.parse(`${data.expires_at}Z`) - issued - 3_600_000, localOffset(issued));
  });

  await t.step("X-Auth-Token carries it to /1.1 and the 2.0 API", async () => {
    const users = await ctx.app.request("/1.1/users", { headers: { "X-Auth-Token": data.token } });
    assert.equal(users.status, 200, await users.text());
    const lines = await ctx.app.request("/1.1/lines", { headers: { "X-Auth-Token": data.token } });
    assert.equal(lines.status, 403);
    await lines.body?.cancel();
    const check = await ctx.app.request("/svc/api/2.0/auth/check", { headers: bearer(data.token) });
    assert.equal(check.status, 200);
    assert.equal((await check.json()).login, "crm");
  });

  await t.step("HEAD and GET /0.1/token/{token} answer it until it expires", async () => {
    const head = await ctx.app.request(`${TOKEN}/${data.token}`, { method: "HEAD" });
    assert.equal(head.status, 204);
    assert.equal(await head.text(), "");
    const get = await ctx.app.request(`${TOKEN}/${data.token}`);
    assert.equal(get.status, 200);
    assert.deepEqual(await get.json(), { data });
    await ctx.clock.advance(3_600_000 - 1);
    assert.equal((await ctx.app.request(`${TOKEN}/${data.token}`, { method: "HEAD" })).status, 204);
    await ctx.clock.advance(1);
    const expired = await ctx.app.request(`${TOKEN}/${data.token}`, { method: "HEAD" });
    assert.equal(expired.status, 404);
    await expectXivoError(
      ctx,
      await ctx.app.request(`${TOKEN}/${data.token}`),
      404,
      "No such token",
    );
  });

  await t.step("no expiration (or null) is SVC_TOKEN_TTL", async () => {
    for (
      const fields of [{ backend: "xivo_service" }, { backend: "xivo_service", expiration: null }]
    ) {
      const now = ctx.clock.now();
      const { utc_issued_at, utc_expires_at } = await newToken(ctx, ["crm", "crm-pw"], fields);
      assert.equal(utc_issued_at, xivoTime(now, true));
      assert.equal(utc_expires_at, xivoTime(now + 7_200_000, true));
    }
  });

  await t.step(
    "unknown fields are ignored; the bounds 1 and SVC_TOKEN_TTL are accepted",
    async () => {
      for (const expiration of [1, 7200]) {
        const fields = { backend: "xivo_service", expiration, client_id: "x", tenant_id: "y" };
        const { utc_expires_at } = await newToken(ctx, ["crm", "crm-pw"], fields);
        assert.equal(utc_expires_at, xivoTime(ctx.clock.now() + expiration * 1000, true));
      }
    },
  );

  await t.step("GET /0.1/backends names the two backends", async () => {
    const response = await ctx.app.request("/0.1/backends");
    assert.deepEqual(await response.json(), { data: [...XIVO_AUTH_BACKENDS] });
  });
});

Deno.test("POST /0.1/token with xivo_user: a CTI user's token, connected as after a login", async () => {
  const ctx = await setup();
  const alice = await ctiUser(ctx, "alice");
  const data = await newToken(ctx, ["alice", "alice-pw"], { backend: "xivo_user" });
  assert.deepEqual(Object.keys(data), DATA_KEYS);
  assert.equal(data.auth_id, alice.uuid);
  assert.equal(data.xivo_user_uuid, alice.uuid);
  assert.ok(data.acls.includes("svc.rest.contact.personal.read"), "alias.ctiuser is expanded");
  assert.ok(await isConnected(ctx.services.store, alice.id, ctx.clock.now()));
  const contacts = await ctx.app.request("/svc/api/2.0/contact/personal", {
    headers: { "X-Auth-Token": data.token },
  });
  assert.equal(contacts.status, 200, await contacts.text());
  const get = await ctx.app.request(`${TOKEN}/${data.token}`);
  assert.deepEqual(await get.json(), { data });

  // each backend knows only its own users
  await webServiceUser(ctx, [], "crm");
  const crossed = [
    [{ backend: "xivo_user" }, ["crm", "crm-pw"]],
    [{ backend: "xivo_service" }, ["alice", "alice-pw"]],
  ] as const;
  for (const [fields, [user, password]] of crossed) {
    const response = await postToken(ctx, JSON.stringify(fields), basicAuth(user, password));
    await expectXivoError(ctx, response, 401, "Authentication Failed");
  }
});

Deno.test("POST /0.1/token: credentials, the body and the expiration refused as xivo-auth did", async (t) => {
  const ctx = await setup({ SVC_TOKEN_TTL: "7200" });
  await webServiceUser(ctx, ["#"], "crm");
  const good = JSON.stringify({ backend: "xivo_service", expiration: 60 });
  const right = basicAuth("crm", "crm-pw");

  await t.step("no or malformed basic auth: 401 Authentication Failed", async () => {
    const malformed: Record<string, string>[] = [
      {},
      { Authorization: "Basic" },
      { Authorization: "Basic !!!" },
      { Authorization: `Basic ${btoa("no colon")}` },
      { Authorization: `Basic ${btoa(":crm-pw")}` },
      { Authorization: `Bearer ${btoa("crm:crm-pw")}` },
      { Authorization: `Digest ${btoa("crm:crm-pw")}` },
      { "X-Auth-Token": "crm:crm-pw" },
    ];
    for (const headers of malformed) {
      await expectXivoError(ctx, await postToken(ctx, good, headers), 401, "Authentication Failed");
    }
  });

  await t.step("a wrong password or an unknown login: 401, counted by the throttle", async () => {
    for (const [user, password] of [["crm", "wrong"], ["nobody", "crm-pw"], ["crm", ""]]) {
      const response = await postToken(ctx, good, basicAuth(user!, password!));
      await expectXivoError(ctx, response, 401, "Authentication Failed");
    }
    // malformed headers above counted nothing; two failures of crm so far: a right one passes
    await newToken(ctx, ["crm", "crm-pw"]);
  });

  await t.step("an unknown backend: 401, like xivo-auth", async () => {
    for (const backend of ["ldap_user", "wazo_user", "xivo_admin", "", "XIVO_SERVICE"]) {
      const response = await postToken(ctx, JSON.stringify({ backend }), right);
      await expectXivoError(ctx, response, 401, "Authentication Failed");
    }
  });

  await t.step("a body that is no JSON object, or without a string backend: 400", async () => {
    const cases: [string | undefined, RegExp][] = [
      [undefined, /^Invalid JSON body: the request has no body$/],
      ["", /^Invalid JSON body: the request has no body$/],
      ["{", /^Invalid JSON body: the body is not valid JSON$/],
      ["[]", /^Invalid JSON body: the body must be a JSON object$/],
      ["null", /^Invalid JSON body: the body must be a JSON object$/],
      ['"xivo_service"', /^Invalid JSON body: the body must be a JSON object$/],
      ["{}", /^Invalid value supplied for field: backend$/],
      ['{"backend": 42}', /^Invalid value supplied for field: backend$/],
      ['{"backend": null, "expiration": 60}', /^Invalid value supplied for field: backend$/],
    ];
    for (const [body, reason] of cases) {
      await expectXivoError(ctx, await postToken(ctx, body, right), 400, reason);
    }
    // the body is checked first: without credentials it is still 400
    await expectXivoError(ctx, await postToken(ctx, "{"), 400, /^Invalid JSON body/);
  });

  await t.step("an expiration that is no integer from 1 to SVC_TOKEN_TTL: 400", async () => {
    for (const expiration of [0, -1, 7201, 1.5, "3600", true, [60], { s: 60 }, 1e300]) {
      const body = JSON.stringify({ backend: "xivo_service", expiration });
      await expectXivoError(
        ctx,
        await postToken(ctx, body, right),
        400,
        "Invalid expiration: must be an integer from 1 to 7200 seconds (SVC_TOKEN_TTL)",
      );
    }
  });

  await t.step("a body cut short: 400", async () => {
    const cut = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('{"backend": "xivo_se'));
        // what Deno.serve's request body gives when the connection ends early
        controller.error(new Deno.errors.BadResource("Cannot read body as underlying resource"));
      },
    });
    const response = await ctx.app.request(TOKEN, {
      method: "POST",
      headers: { ...right, "Content-Type": "application/json" },
      body: cut,
      duplex: "half",
    } as RequestInit);
    await expectXivoError(ctx, response, 400, "Invalid JSON body: the body was cut short");
  });

  await t.step("a body over 1 MiB: 413", async () => {
    const big = JSON.stringify({ backend: "xivo_service", pad: "x".repeat(1024 * 1024) });
    await expectXivoError(ctx, await postToken(ctx, big, right), 413, /larger than 1048576/);
  });

  await t.step("credentials as UTF-8 or Latin-1, a password holding colons", async () => {
    await createWebServiceUser(ctx.services.store, {
      login: "josé",
      password: "pä:ss:wörd",
      acls: [],
    });
    for (const encoding of ["latin1", "utf8"] as const) {
      const response = await postToken(ctx, good, basicAuth("josé", "pä:ss:wörd", encoding));
      assert.equal(response.status, 200, await response.text());
    }
    assert.deepEqual(basicCredentials(basicAuth("a", "b:c").Authorization), {
      login: "a",
      password: "b:c",
    });
  });
});

Deno.test("POST /0.1/token: the login throttle, shared with the 2.0 login routes", async (t) => {
  const ctx = await setup();
  await webServiceUser(ctx, ["#"], "crm");
  await ctiUser(ctx, "alice");
  const body = (backend: string) => JSON.stringify({ backend });

  await t.step("xivo_service counts with /auth/webservice: the 11th attempt is 429", async () => {
    for (let i = 0; i < 5; i++) {
      const wrong = await postJson(ctx, "/svc/api/2.0/auth/webservice", {
        login: "crm",
        password: "wrong",
      });
      assert.equal(wrong.status, 401);
      await wrong.body?.cancel();
      const response = await postToken(ctx, body("xivo_service"), basicAuth("crm", "wrong"));
      await expectXivoError(ctx, response, 401, "Authentication Failed");
    }
    await ctx.clock.advance(60_000);
    // even the right password is refused now, on both routes
    const refused = await postToken(ctx, body("xivo_service"), basicAuth("crm", "crm-pw"));
    assert.equal(refused.headers.get("retry-after"), "240");
    await expectXivoError(ctx, refused, 429, /^too many failed attempts for this login/);
    const v2 = await postJson(ctx, "/svc/api/2.0/auth/webservice", {
      login: "crm",
      password: "crm-pw",
    });
    assert.equal(v2.status, 429);
    await v2.body?.cancel();
    // the CTI users' count is another one
    await newToken(ctx, ["alice", "alice-pw"], { backend: "xivo_user" });
  });

  await t.step("once the window has passed, the right password works again", async () => {
    await ctx.clock.advance(240_000);
    await newToken(ctx, ["crm", "crm-pw"]);
  });

  await t.step("xivo_user counts with /auth/login", async () => {
    for (let i = 0; i < 10; i++) {
      const response = await postToken(ctx, body("xivo_user"), basicAuth("alice", "wrong"));
      assert.equal(response.status, 401);
      await response.body?.cancel();
    }
    const login = await postJson(ctx, "/svc/api/2.0/auth/login", {
      login: "alice",
      password: "alice-pw",
    });
    assert.equal(login.status, 429);
    await login.body?.cancel();
    const refused = await postToken(ctx, body("xivo_user"), basicAuth("alice", "alice-pw"));
    await expectXivoError(ctx, refused, 429, /^too many failed attempts/);
  });
});

Deno.test("HEAD and GET /0.1/token/{token}: scope, forged, expired and orphaned tokens", async (t) => {
  const ctx = await setup();
  const crm = await webServiceUser(ctx, ["confd.users.*", "!confd.users.delete"], "crm");
  const { token } = await newToken(ctx, ["crm", "crm-pw"]);
  const head = async (path: string) =>
    (await ctx.app.request(`${TOKEN}/${path}`, { method: "HEAD" })).status;

  await t.step("scope: an ACL the token grants (204/200) or not (403)", async () => {
    assert.equal(await head(`${token}?scope=confd.users.read`), 204);
    assert.equal((await ctx.app.request(`${TOKEN}/${token}?scope=confd.users.read`)).status, 200);
    assert.equal(await head(`${token}?scope=`), 204);
    for (const scope of ["confd.users.delete", "confd.lines.read", "confd.users", "éric"]) {
      assert.equal(await head(`${token}?scope=${encodeURIComponent(scope)}`), 403, scope);
      const response = await ctx.app.request(
        `${TOKEN}/${token}?scope=${encodeURIComponent(scope)}`,
      );
      await expectXivoError(ctx, response, 403, `Unauthorized for ${scope}`);
    }
  });

  await t.step("forged tokens: 404 No such token", async () => {
    const [header, payload, signature] = token.split(".");
    const base64url = (text: string) =>
      btoa(text).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_");
    const flipped = signature!.slice(0, -2) + (signature!.endsWith("AA") ? "BB" : "AA");
    const claims = JSON.parse(atob(payload!.replace(/-/g, "+").replace(/_/g, "/")));
    const widened = base64url(JSON.stringify({ ...claims, acls: ["#"] }));
    const otherKey = await Tokens.create("another secret of at least 32 bytes!!", 60, ctx.clock);
    const identity = { userId: String(crm.id), login: "crm", userType: "webservice" as const };
    const forged = [
      "abcdef",
      `${header}.${payload}.${flipped}`,
      `${header}.${widened}.${signature}`,
      (await otherKey.issue({ ...identity, acls: ["#"] })).token,
      `${base64url('{"alg":"none","typ":"JWT"}')}.${payload}.`,
      `${header}.${payload}`,
    ];
    for (const candidate of forged) {
      assert.equal(await head(candidate), 404, candidate);
      await expectXivoError(
        ctx,
        await ctx.app.request(`${TOKEN}/${candidate}`),
        404,
        "No such token",
      );
    }
  });

  await t.step("a token whose user was deleted: 404", async () => {
    const alice = await ctiUser(ctx, "alice");
    const { token: hers } = await newToken(ctx, ["alice", "alice-pw"], { backend: "xivo_user" });
    assert.equal(await head(hers), 204);
    await deleteUser(ctx.services.store, alice.id);
    assert.equal(await head(hers), 404);
  });

  await t.step("a token signed for the 2.0 API is answered too", async () => {
    const v2 = await login(ctx, "webservice", "crm");
    const response = await ctx.app.request(`${TOKEN}/${v2}`);
    const { data } = await response.json();
    assert.equal(data.token, v2);
    assert.equal(data.auth_id, String(crm.id));
  });

  await t.step("DELETE (a revoke): 405, unknown paths: 404, in xivo-auth's form", async () => {
    const revoke = await ctx.app.request(`${TOKEN}/${token}`, { method: "DELETE" });
    assert.equal(revoke.headers.get("allow"), "GET, HEAD");
    await expectXivoError(
      ctx,
      revoke,
      405,
      `DELETE is not allowed on ${TOKEN}/${token} (allowed: GET, HEAD)`,
    );
    await expectXivoError(
      ctx,
      await ctx.app.request("/0.1/users"),
      404,
      "no route for GET /0.1/users",
    );
    // the token still works: a revoke is not possible
    assert.equal(await head(token), 204);
  });
});

/**
 * CORS on every area (issue 14; docs/cors.md): preflights answered ahead of every guard, for any
 * path; `Access-Control-Allow-Origin` and `Vary: Origin` on every answer to an allowed origin,
 * errors of each area's own form included; nothing for an origin not listed, nor without the
 * setting; and the 1.0 API's client-address check still refusing what CORS lets a page send.
 */
import assert from "node:assert/strict";
import { CORS_MAX_AGE } from "../../lib/cors.ts";
import { MiB } from "../../lib/http.ts";
import { bearer, ctiUser, login, setup, type TestContext } from "../helpers.ts";
import { ALLOWED_V4, peer } from "../legacy/fixtures.ts";

const ORIGIN = "https://crm.example.com";
const OTHER_ORIGIN = "https://evil.example.net";
const V1 = "/svc/api/1.0";

/** A token of a web service user holding `acls`, signed directly (no password hash). */
async function tokenHolding(ctx: TestContext, acls: string[]): Promise<string> {
  const identity = { userId: "0", login: "cors", userType: "webservice" as const, acls };
  return (await ctx.services.tokens.issue(identity)).token;
}

interface Call {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** The TCP peer (the 1.0 API's client address); none unless given. */
  from?: string;
  origin?: string | null;
}

/** Sends a request from `origin` (the allowed one unless given; none with `null`). */
function send(ctx: TestContext, path: string, call: Call = {}): Promise<Response> {
  const origin = call.origin === undefined ? ORIGIN : call.origin;
  const headers = new Headers(call.headers);
  if (origin !== null) headers.set("Origin", origin);
  if (call.body !== undefined) headers.set("Content-Type", "application/json");
  return Promise.resolve(ctx.app.request(
    path,
    { method: call.method ?? "GET", headers, body: call.body },
    call.from === undefined ? undefined : peer(call.from),
  ));
}

/** A preflight from `origin` for a `method` request with a token and a JSON body. */
function preflight(ctx: TestContext, path: string, origin = ORIGIN, method = "POST") {
  return send(ctx, path, {
    method: "OPTIONS",
    origin,
    headers: {
      "Access-Control-Request-Method": method,
      "Access-Control-Request-Headers": "authorization,content-type",
    },
  });
}

const varies = (response: Response) =>
  (response.headers.get("vary") ?? "").split(",").map((name) => name.trim().toLowerCase());

/** Asserts the headers of an answer to `origin`, whatever its status. */
function expectCors(response: Response, allowOrigin = ORIGIN) {
  assert.equal(response.headers.get("access-control-allow-origin"), allowOrigin);
  assert.ok(varies(response).includes("origin"), `Vary: ${response.headers.get("vary")}`);
  const exposed = (response.headers.get("access-control-expose-headers") ?? "").split(",");
  assert.ok(exposed.includes("X-Request-Id"), `exposed: ${exposed}`);
  assert.equal(response.headers.get("access-control-allow-credentials"), null);
}

/** Asserts a 204 preflight answer allowing the methods and headers of the API. */
async function expectPreflight(response: Response, allowOrigin = ORIGIN) {
  assert.equal(response.status, 204, await response.clone().text());
  assert.equal(await response.text(), "");
  assert.equal(response.headers.get("access-control-allow-origin"), allowOrigin);
  const methods = (response.headers.get("access-control-allow-methods") ?? "").split(",");
  for (const method of ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]) {
    assert.ok(methods.includes(method), `methods: ${methods}`);
  }
  const headers = (response.headers.get("access-control-allow-headers") ?? "")
    .split(",").map((name) => name.toLowerCase());
  for (const name of ["authorization", "x-auth-token", "content-type", "accept", "x-request-id"]) {
    assert.ok(headers.includes(name), `headers: ${headers}`);
  }
  assert.equal(response.headers.get("access-control-max-age"), String(CORS_MAX_AGE));
  assert.ok(varies(response).includes("origin"));
  assert.equal(response.headers.get("access-control-allow-credentials"), null);
  assert.match(response.headers.get("x-request-id") ?? "", /./);
}

/** Asserts no `Access-Control-*` header at all. */
function expectNoCors(response: Response) {
  const found = [...response.headers.keys()].filter((name) => name.startsWith("access-control-"));
  assert.deepEqual(found, []);
}

/** Asserts `status` and answers the JSON body, after the CORS headers. */
async function expectAnswer(response: Response, status: number): Promise<unknown> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  expectCors(response);
  return JSON.parse(text);
}

const big = JSON.stringify({ padding: "x".repeat(MiB) });

Deno.test("preflights: 204 with the methods, headers and max age, ahead of every guard", async (t) => {
  const ctx = await setup({ SVC_CORS_ORIGINS: `${ORIGIN}, http://127.0.0.1:8080` });
  const paths = {
    "the 2.0 API": "/svc/api/2.0/contact/personal",
    "the 2.0 API's login": "/svc/api/2.0/auth/login",
    // no client address listed at all: the preflight is answered, the real request is not
    "the 1.0 API": `${V1}/dial/example.com/alice/`,
    "the configuration daemon": "/1.1/users/3",
    "the agent daemon": "/agents/by-number/8001/login",
    "the xivo-auth compatible API": "/0.1/token",
    "/health": "/health",
    "an unknown path": "/no/such/path",
  };
  for (const [area, path] of Object.entries(paths)) {
    await t.step(area, async () => {
      await expectPreflight(await preflight(ctx, path));
      await expectPreflight(await preflight(ctx, path, ORIGIN, "DELETE"));
    });
  }
  await t.step("each listed origin is echoed", async () => {
    await expectPreflight(
      await preflight(ctx, "/1.1/users", "http://127.0.0.1:8080"),
      "http://127.0.0.1:8080",
    );
  });
  await t.step("an unlisted origin's preflight goes to the routes: no CORS header", async () => {
    for (const path of Object.values(paths)) {
      const response = await preflight(ctx, path, OTHER_ORIGIN);
      await response.body?.cancel();
      assert.notEqual(response.status, 204, path);
      expectNoCors(response);
      assert.ok(varies(response).includes("origin"));
    }
  });
});

Deno.test("the 2.0 API: every answer to an allowed origin carries the headers", async (t) => {
  const ctx = await setup({ SVC_CORS_ORIGINS: ORIGIN });
  await ctiUser(ctx, "alice");
  const token = await login(ctx, "login", "alice");
  const api = "/svc/api/2.0";
  await t.step("200, with the request id readable", async () => {
    const response = await send(ctx, `${api}/auth/check`, { headers: bearer(token) });
    const body = await expectAnswer(response, 200) as { token: string };
    assert.equal(typeof body.token, "string");
    assert.match(response.headers.get("x-request-id") ?? "", /./);
  });
  await t.step("201 with a Location the page may read", async () => {
    const response = await send(ctx, `${api}/contact/personal`, {
      method: "POST",
      headers: bearer(token),
      body: JSON.stringify({ firstname: "Bob", number: "1002" }),
    });
    await expectAnswer(response, 201);
    assert.match(response.headers.get("location") ?? "", /^\/svc\/api\/2\.0\/contact\/personal\//);
    assert.ok(response.headers.get("access-control-expose-headers")?.includes("Location"));
  });
  await t.step("400 and 401 of the token guard and the login", async () => {
    const noToken = await send(ctx, `${api}/contact/personal`);
    assert.equal(
      (await expectAnswer(noToken, 400) as { error: string }).error,
      "AuthorizationHeaderNotFound",
    );
    const badLogin = await send(ctx, `${api}/auth/login`, {
      method: "POST",
      body: JSON.stringify({ login: "alice", password: "wrong" }),
    });
    await expectAnswer(badLogin, 401);
  });
  await t.step("403 of a missing ACL", async () => {
    const narrow = await tokenHolding(ctx, ["svc.rest.nothing"]);
    const response = await send(ctx, `${api}/contact/personal`, { headers: bearer(narrow) });
    assert.deepEqual(await expectAnswer(response, 403), {
      error: "Forbidden",
      message: "missing ACL svc.rest.contact.personal.read",
    });
  });
  await t.step("404: an unknown route and an unknown contact", async () => {
    const route = await send(ctx, `${api}/nothing/here`, { method: "DELETE" });
    assert.equal((await expectAnswer(route, 404) as { error: string }).error, "NotFound");
    const contact = await send(ctx, `${api}/contact/personal/nope`, { headers: bearer(token) });
    await expectAnswer(contact, 404);
  });
  await t.step("413 of the body limit", async () => {
    const response = await send(ctx, `${api}/auth/login`, { method: "POST", body: big });
    assert.equal((await expectAnswer(response, 413) as { error: string }).error, "PayloadTooLarge");
  });
  await t.step("500 of an unexpected failure", async () => {
    ctx.app.get(`${api}/explode`, () => {
      throw new Error("boom");
    });
    const response = await send(ctx, `${api}/explode`);
    assert.equal((await expectAnswer(response, 500) as { error: string }).error, "NotHandledError");
  });
  await t.step("503 once the store is closed, /ready too, /health still 200", async () => {
    ctx.services.store.close();
    const response = await send(ctx, `${api}/auth/check`, { headers: bearer(token) });
    assert.equal((await expectAnswer(response, 503) as { error: string }).error, "Unreachable");
    assert.deepEqual(await expectAnswer(await send(ctx, "/ready"), 503), {
      status: "unavailable",
    });
    assert.deepEqual(await expectAnswer(await send(ctx, "/health"), 200), { status: "ok" });
  });
});

Deno.test("the 1.0 API: CORS never bypasses the client-address check", async (t) => {
  const ctx = await setup({ SVC_CORS_ORIGINS: ORIGIN, SVC_DEPRECATED_API_HOST: ALLOWED_V4 });
  const handshake = `${V1}/handshake/example.com/`;
  await t.step("the preflight is answered, whatever the address", async () => {
    await expectPreflight(await preflight(ctx, handshake));
  });
  await t.step("the real request from an unlisted address: 403, readable by the page", async () => {
    for (const from of [undefined, "192.0.2.99"]) {
      const response = await send(ctx, handshake, { method: "POST", from });
      const body = await expectAnswer(response, 403) as { error: string; message: string };
      assert.equal(body.error, "Forbidden");
      assert.match(body.message, /client address .* is not allowed on the 1\.0 API/);
    }
  });
  await t.step("from a listed address: 200, 404, 413", async () => {
    const ok = await send(ctx, handshake, { method: "POST", from: ALLOWED_V4 });
    assert.deepEqual(await expectAnswer(ok, 200), { reposted: 0 });
    const unknown = await send(ctx, `${V1}/nothing`, { from: ALLOWED_V4 });
    assert.equal((await expectAnswer(unknown, 404) as { error: string }).error, "NotFound");
    const tooBig = await send(ctx, `${V1}/dial/example.com/alice/`, {
      method: "POST",
      body: big,
      from: ALLOWED_V4,
    });
    await expectAnswer(tooBig, 413);
  });
  await t.step("503 once the store is closed", async () => {
    ctx.services.store.close();
    const response = await send(ctx, `${V1}/connect/example.com/alice/`, {
      method: "POST",
      body: JSON.stringify({ password: "alice-pw" }),
      from: ALLOWED_V4,
    });
    assert.equal((await expectAnswer(response, 503) as { error: string }).error, "Unreachable");
  });
});

Deno.test("the configuration daemon: its array errors carry the headers", async (t) => {
  const ctx = await setup({ SVC_CORS_ORIGINS: ORIGIN });
  const token = await tokenHolding(ctx, ["confd.#"]);
  await t.step("200", async () => {
    const body = await expectAnswer(await send(ctx, "/1.1/users", { headers: bearer(token) }), 200);
    assert.equal((body as { total: number }).total, 0);
  });
  await t.step("401 without a token, 403 without the ACL", async () => {
    const missing = await expectAnswer(await send(ctx, "/1.1/users"), 401) as string[];
    assert.match(missing[0]!, /^Unauthorized - /);
    const narrow = await tokenHolding(ctx, ["confd.contexts.read"]);
    const refused = await send(ctx, "/1.1/users", { headers: bearer(narrow) });
    assert.deepEqual(await expectAnswer(refused, 403), [
      "Forbidden - missing ACL confd.users.read",
    ]);
  });
  await t.step("404: an unknown user and an unknown path", async () => {
    const user = await send(ctx, "/1.1/users/999", { headers: bearer(token) });
    assert.match((await expectAnswer(user, 404) as string[])[0]!, /^Resource Not Found - User/);
    const path = await send(ctx, "/1.1/nothing", { headers: bearer(token) });
    assert.match((await expectAnswer(path, 404) as string[])[0]!, /^Resource Not Found - no route/);
  });
  await t.step("413", async () => {
    const response = await send(ctx, "/1.1/users", {
      method: "POST",
      headers: bearer(token),
      body: big,
    });
    assert.match((await expectAnswer(response, 413) as string[])[0]!, /^PayloadTooLarge - /);
  });
  await t.step("503 once the store is closed", async () => {
    ctx.services.store.close();
    const response = await send(ctx, "/1.1/users", { headers: bearer(token) });
    assert.match((await expectAnswer(response, 503) as string[])[0]!, /^Unreachable - /);
  });
});

Deno.test("the agent daemon: its {error} answers carry the headers", async (t) => {
  const ctx = await setup({ SVC_CORS_ORIGINS: ORIGIN });
  const token = await tokenHolding(ctx, ["agentd.#"]);
  await t.step("200", async () => {
    assert.deepEqual(
      await expectAnswer(await send(ctx, "/agents", { headers: bearer(token) }), 200),
      [],
    );
  });
  await t.step("401 without a token and without the ACL", async () => {
    const expected = { error: "invalid token or unauthorized" };
    assert.deepEqual(await expectAnswer(await send(ctx, "/agents"), 401), expected);
    const narrow = await tokenHolding(ctx, ["confd.#"]);
    const refused = await send(ctx, "/agents", { headers: bearer(narrow) });
    assert.deepEqual(await expectAnswer(refused, 401), expected);
  });
  await t.step("404: an unknown agent and an unknown path", async () => {
    const agent = await send(ctx, "/agents/by-id/999", { headers: bearer(token) });
    assert.deepEqual(await expectAnswer(agent, 404), { error: "no such agent" });
    const path = await send(ctx, "/agents/nothing/here", { headers: bearer(token) });
    assert.match((await expectAnswer(path, 404) as { error: string }).error, /^no route/);
  });
  await t.step("413", async () => {
    const response = await send(ctx, "/agents/by-id/1/login", {
      method: "POST",
      headers: bearer(token),
      body: big,
    });
    assert.match((await expectAnswer(response, 413) as { error: string }).error, /larger than/);
  });
  await t.step("503 once the store is closed", async () => {
    ctx.services.store.close();
    const response = await send(ctx, "/agents", { headers: bearer(token) });
    assert.deepEqual(await expectAnswer(response, 503), { error: "Unreachable" });
  });
});

Deno.test("an origin not listed, or no Origin at all, gets no CORS header", async (t) => {
  const ctx = await setup({ SVC_CORS_ORIGINS: ORIGIN });
  for (
    const [why, origin] of [["an unlisted origin", OTHER_ORIGIN], ["no Origin", null]] as const
  ) {
    await t.step(why, async () => {
      for (const [path, status] of [["/health", 200], ["/svc/api/2.0/nothing", 404]] as const) {
        const response = await send(ctx, path, { origin });
        await response.body?.cancel();
        assert.equal(response.status, status);
        expectNoCors(response);
        // the answer differs from an allowed origin's: a cache must not hand one for the other
        assert.ok(varies(response).includes("origin"));
      }
    });
  }
  await t.step("an origin that only looks like a listed one", async () => {
    for (const origin of [`${ORIGIN}:443`, `${ORIGIN}/`, "http://crm.example.com", "null"]) {
      const response = await send(ctx, "/health", { origin });
      await response.body?.cancel();
      expectNoCors(response);
      const refused = await preflight(ctx, "/health", origin);
      await refused.body?.cancel();
      assert.equal(refused.status, 405, origin); // not a preflight of ours: OPTIONS is no route
      expectNoCors(refused);
    }
  });
});

Deno.test("without the setting: no CORS header at all, OPTIONS is not answered", async () => {
  const ctx = await setup();
  for (const response of [await send(ctx, "/health"), await preflight(ctx, "/health")]) {
    await response.body?.cancel();
    expectNoCors(response);
    assert.equal(response.headers.get("vary"), null);
  }
  const options = await preflight(ctx, "/svc/api/2.0/auth/login");
  await options.body?.cancel();
  assert.equal(options.status, 405);
  assert.equal(options.headers.get("allow"), "POST");
});

Deno.test("SVC_CORS_ORIGINS=*: any origin, answered *", async (t) => {
  const ctx = await setup({ SVC_CORS_ORIGINS: "*" });
  for (const origin of [ORIGIN, OTHER_ORIGIN, "http://localhost:3000"]) {
    await t.step(origin, async () => {
      await expectPreflight(await preflight(ctx, "/svc/api/2.0/auth/login", origin), "*");
      const response = await send(ctx, "/svc/api/2.0/auth/login", {
        origin,
        method: "POST",
        body: JSON.stringify({ login: "nobody", password: "x" }),
      });
      await response.body?.cancel();
      assert.equal(response.status, 401);
      expectCors(response, "*");
    });
  }
  await t.step("a request without an Origin gets none", async () => {
    const response = await send(ctx, "/health", { origin: null });
    await response.body?.cancel();
    expectNoCors(response);
  });
});

import assert from "node:assert/strict";
import { requireAcl } from "../../lib/auth/guard.ts";
import { MiB } from "../../lib/http.ts";
import { peer } from "../legacy/fixtures.ts";
import { bearer, ctiUser, login, postJson, setup, webServiceUser } from "../helpers.ts";

Deno.test("GET /health and GET /ready", async (t) => {
  const ctx = await setup();
  await t.step("both answer 200 while the store is open", async () => {
    const health = await ctx.app.request("/health");
    assert.equal(health.status, 200);
    assert.match(health.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(await health.json(), { status: "ok" });
    const ready = await ctx.app.request("/ready");
    assert.equal(ready.status, 200);
  });
  await t.step("/ready answers 503 once the store is gone; /health still 200", async () => {
    ctx.services.store.close();
    const ready = await ctx.app.request("/ready");
    assert.equal(ready.status, 503);
    assert.deepEqual(await ready.json(), { status: "unavailable" });
    assert.equal((await ctx.app.request("/health")).status, 200);
  });
});

/** A generated request id: the process's random prefix, then a counter. */
const GENERATED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-z]+$/;

Deno.test("every response carries a request id", async (t) => {
  const ctx = await setup();
  await t.step("generated when absent, on success and on errors, each new", async () => {
    const ids = new Set<string>();
    for (const path of ["/health", "/nowhere", "/svc/api/2.0/auth/check", "/health"]) {
      const response = await ctx.app.request(path);
      await response.body?.cancel();
      const id = response.headers.get("x-request-id") ?? "";
      assert.match(id, GENERATED_ID, path);
      ids.add(id);
    }
    assert.equal(ids.size, 4);
  });
  await t.step("a sane incoming id is kept, anything else replaced", async () => {
    const kept = await ctx.app.request("/health", { headers: { "X-Request-Id": "abc-123" } });
    assert.equal(kept.headers.get("x-request-id"), "abc-123");
    const replaced = await ctx.app.request("/health", {
      headers: { "X-Request-Id": "bad id\twith spaces" },
    });
    assert.match(replaced.headers.get("x-request-id") ?? "", GENERATED_ID);
  });
});

Deno.test("unknown routes answer 404 NotFound in the error model", async () => {
  const ctx = await setup();
  const response = await ctx.app.request("/svc/api/2.0/nothing/here", { method: "DELETE" });
  assert.equal(response.status, 404);
  assert.deepEqual(await response.json(), {
    error: "NotFound",
    message: "no route for DELETE /svc/api/2.0/nothing/here",
  });
});

Deno.test("a known path with another method: 405 with Allow, in each area's error shape", async () => {
  const ctx = await setup({ SVC_DEPRECATED_API_HOST: "127.0.0.1" });
  const cases: [string, string, string, unknown][] = [
    ["DELETE", "/health", "GET, HEAD", {
      error: "MethodNotAllowed",
      message: "DELETE is not allowed on /health (allowed: GET, HEAD)",
    }],
    ["GET", "/svc/api/2.0/dnd/alice", "POST", {
      error: "MethodNotAllowed",
      message: "GET is not allowed on /svc/api/2.0/dnd/alice (allowed: POST)",
    }],
    ["PATCH", "/svc/api/2.0/contact/personal", "GET, HEAD, POST, DELETE", {
      error: "MethodNotAllowed",
      message:
        "PATCH is not allowed on /svc/api/2.0/contact/personal (allowed: GET, HEAD, POST, DELETE)",
    }],
    ["PATCH", "/1.1/users", "GET, HEAD, POST", [
      "Method Not Allowed - PATCH is not allowed on /1.1/users (allowed: GET, HEAD, POST)",
    ]],
    ["GET", "/svc/api/1.0/dnd/demo/alice/", "POST", {
      error: "MethodNotAllowed",
      message: "GET is not allowed on /svc/api/1.0/dnd/demo/alice/ (allowed: POST)",
    }],
  ];
  for (const [method, path, allow, body] of cases) {
    // no token: the method is wrong whoever asks, and telling it leaks nothing
    const response = await ctx.app.request(path, { method }, peer("127.0.0.1"));
    assert.equal(response.status, 405, `${method} ${path}`);
    assert.equal(response.headers.get("allow"), allow);
    assert.deepEqual(await response.json(), body);
  }
  // a path no method answers stays 404, and the right method is not affected
  assert.equal((await ctx.app.request("/svc/api/2.0/dnd", { method: "GET" })).status, 404);
  assert.equal((await ctx.app.request("/health", { method: "HEAD" })).status, 200);
});

Deno.test("bodies over 1 MiB are refused with 413 before being read whole", async (t) => {
  const ctx = await setup();
  const big = JSON.stringify({ login: "x", password: "y".repeat(MiB) });
  await t.step("with a Content-Length", async () => {
    const response = await postJson(ctx, "/svc/api/2.0/auth/login", big);
    assert.equal(response.status, 413);
    const body = await response.json();
    assert.equal(body.error, "PayloadTooLarge");
    assert.match(body.message, /1048576 bytes/);
  });
  await t.step("streamed without a length", async () => {
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024).fill(65);
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        // stops by itself well after the limit, in case the server kept reading
        if (sent > 4 * MiB) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const response = await ctx.app.request("/svc/api/2.0/auth/login", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Transfer-Encoding": "chunked" },
      body: stream,
    });
    assert.equal(response.status, 413);
    assert.equal((await response.json()).error, "PayloadTooLarge");
    assert.ok(sent <= MiB + 2 * chunk.length, `read ${sent} bytes`);
  });
  await t.step("exactly 1 MiB is accepted", async () => {
    const padding = "y".repeat(MiB - JSON.stringify({ login: "x", password: "" }).length);
    const response = await postJson(ctx, "/svc/api/2.0/auth/login", {
      login: "x",
      password: padding,
    });
    assert.equal(response.status, 401);
    await response.body?.cancel();
  });
});

Deno.test("a body that never ends: 413 once past the route's limit, whatever its length says", async (t) => {
  const ctx = await setup();
  const routes: [path: string, limit: number][] = [
    ["/svc/api/2.0/auth/login", MiB],
    ["/1.1/labels", MiB],
    ["/1.1/users/import", 10 * MiB],
    ["/svc/api/2.0/contact/import/personal", 10 * MiB],
  ];
  const chunk = new Uint8Array(64 * 1024).fill(65);
  for (const [path, limit] of routes) {
    for (const length of [null, "100", `${limit}`]) {
      await t.step(`${path}, Content-Length ${length ?? "none"}`, async () => {
        let pulled = 0;
        const stream = new ReadableStream<Uint8Array>({
          pull(controller) {
            // ends by itself far beyond the limit, should the server read on
            if (pulled > limit + 16 * MiB) return controller.close();
            pulled += chunk.length;
            controller.enqueue(chunk);
          },
        });
        const headers: Record<string, string> = { "Content-Type": "text/csv" };
        if (length) headers["Content-Length"] = length;
        const response = await ctx.app.request(path, { method: "POST", headers, body: stream });
        assert.equal(response.status, 413);
        assert.match(await response.text(), /PayloadTooLarge/);
        // read past the limit, by a chunk at most, then the stream is cancelled
        assert.ok(pulled > limit && pulled <= limit + 2 * chunk.length, `${pulled} bytes pulled`);
      });
    }
  }
});

Deno.test("an unexpected failure answers 500 NotHandledError without leaking", async () => {
  const ctx = await setup();
  ctx.app.get("/svc/api/2.0/explode", () => {
    throw new Error("internal detail: password=hunter2");
  });
  const response = await ctx.app.request("/svc/api/2.0/explode");
  assert.equal(response.status, 500);
  const requestId = response.headers.get("x-request-id");
  const body = await response.json();
  assert.equal(body.error, "NotHandledError");
  assert.equal(body.message, `unexpected error, request id ${requestId}`);
  assert.ok(!JSON.stringify(body).includes("hunter2"));
  assert.ok(!JSON.stringify(body).includes(" at "));
  const lines = ctx.logs.map((line) => JSON.parse(line));
  const logged = lines.find((line) => line.msg === "unhandled error");
  assert.equal(logged.requestId, requestId);
  assert.match(logged.stack, /explode|Error/);
  const request = lines.find((line) => line.msg === "request");
  assert.deepEqual([request.status, request.requestId], [500, requestId]);
});

Deno.test("the store failing answers 503 Unreachable, and the service recovers", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    const ctx = await setup({ SVC_KV: `${dir}/nested/svc.kv` });
    await ctiUser(ctx, "alice");
    const attempt = () =>
      postJson(ctx, "/svc/api/2.0/auth/login", { login: "alice", password: "alice-pw" });
    assert.equal((await attempt()).status, 200);

    await t.step("the store's handle is lost: 503 Unreachable", async () => {
      await ctx.services.store.run((kv) => Promise.resolve(kv.close()));
      const response = await attempt();
      assert.equal(response.status, 503);
      assert.deepEqual(await response.json(), {
        error: "Unreachable",
        message: "the store is unreachable",
      });
    });
    await t.step("the next request reopens the store and succeeds", async () => {
      assert.equal((await attempt()).status, 200);
      assert.equal((await ctx.app.request("/ready")).status, 200);
    });
    ctx.services.store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an in-memory store that is closed stays unavailable (it cannot come back)", async () => {
  const ctx = await setup();
  ctx.services.store.close();
  const response = await postJson(ctx, "/svc/api/2.0/auth/login", { login: "a", password: "b" });
  assert.equal(response.status, 503);
  assert.equal((await response.json()).error, "Unreachable");
});

Deno.test("one JSON log line per request, never a password or a token", async () => {
  const ctx = await setup();
  await ctiUser(ctx, "alice");
  const token = await login(ctx, "login", "alice");
  await ctx.app.request("/svc/api/2.0/auth/check?token=" + token, { headers: bearer(token) });
  const lines = ctx.logs.map((line) => JSON.parse(line));
  const requests = lines.filter((line) => line.msg === "request");
  assert.equal(requests.length, 2);
  assert.deepEqual(requests.map((r) => [r.method, r.path, r.status]), [
    ["POST", "/svc/api/2.0/auth/login", 200],
    ["GET", "/svc/api/2.0/auth/check", 200],
  ]);
  for (const request of requests) {
    assert.equal(typeof request.durationMs, "number");
    assert.match(request.requestId, GENERATED_ID);
  }
  const all = ctx.logs.join("\n");
  assert.ok(!all.includes("alice-pw"));
  assert.ok(!all.includes(token));
});

Deno.test("route guard: the ACL template is filled from the path", async (t) => {
  const ctx = await setup();
  ctx.app.get(
    "/svc/api/2.0/probe/:name",
    requireAcl(ctx.services.tokens, "svc.rest.probe.{name}.read"),
    (c) => c.json({ login: c.get("identity").login }),
  );
  await webServiceUser(ctx, ["svc.rest.probe.*.read"], "reader");
  const narrow = await webServiceUser(
    ctx,
    ["svc.rest.probe.a.b.read", "svc.rest.probe.me.read"],
    "narrow",
  );
  await webServiceUser(ctx, ["svc.rest.#", "!svc.rest.probe.secret.read"], "denied");
  await ctiUser(ctx, "alice");
  const probe = async (user: string, route: "login" | "webservice", name: string) => {
    const token = await login(ctx, route, user);
    return ctx.app.request(`/svc/api/2.0/probe/${name}`, { headers: bearer(token) });
  };

  await t.step("a token holding the ACL passes", async () => {
    const response = await probe("reader", "webservice", "anything");
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { login: "reader" });
  });
  await t.step("a token without it: 403 Forbidden naming the ACL", async () => {
    const response = await probe("narrow", "webservice", "other");
    assert.equal(response.status, 403);
    assert.deepEqual(await response.json(), {
      error: "Forbidden",
      message: "missing ACL svc.rest.probe.other.read",
    });
  });
  await t.step("dots in a path value become _: they cannot add ACL words", async () => {
    const narrow = await probe("narrow", "webservice", "a.b");
    assert.equal(narrow.status, 403);
    assert.equal((await narrow.json()).message, "missing ACL svc.rest.probe.a_b.read");
    assert.equal((await probe("reader", "webservice", "a.b")).status, 200);
  });
  await t.step("me matches the holder's own id", async () => {
    assert.equal((await probe("narrow", "webservice", String(narrow.id))).status, 200);
  });
  await t.step("a denying ACL wins", async () => {
    assert.equal((await probe("denied", "webservice", "public")).status, 200);
    assert.equal((await probe("denied", "webservice", "secret")).status, 403);
  });
  await t.step("a CTI user's alias does not grant it", async () => {
    assert.equal((await probe("alice", "login", "x")).status, 403);
  });
  await t.step("no token: 400; X-Auth-Token accepted", async () => {
    const none = await ctx.app.request("/svc/api/2.0/probe/x");
    assert.equal(none.status, 400);
    assert.equal((await none.json()).error, "AuthorizationHeaderNotFound");
    const token = await login(ctx, "webservice", "reader");
    const legacy = await ctx.app.request("/svc/api/2.0/probe/x", {
      headers: { "X-Auth-Token": token },
    });
    assert.equal(legacy.status, 200);
  });
});

/**
 * `serverApp(services)`, as the server runs it: the areas' code loaded by `import()` at the first
 * request other than `GET /health`, each API area declared at the first request below its path. The app answers, counts and documents exactly as the app
 * with every area declared at once (the one the other tests use), whichever area is asked first.
 */
import assert from "node:assert/strict";
import type { CachedRouter } from "../../lib/cached_router.ts";
import { buildApp, serverApp } from "../../routes/app.ts";
import { type AreaRoutes, areaRoutes } from "../../routes/areas.ts";
import { bearer, ctiUser, login, setup, type TestContext, webServiceUser } from "../helpers.ts";

const METRICS_TOKEN = "metrics-scrape-token-0123456789abcdef";

/** Both apps on one set of services (one store): what one writes, the other reads. */
async function apps() {
  const ctx = await setup({ SVC_METRICS_TOKEN: METRICS_TOKEN });
  const lazy = serverApp(ctx.services);
  return { ctx, eager: ctx.app, lazy };
}

type App = TestContext["app"];

const routeTable = (app: App) => app.routes.map(({ method, path }) => `${method} ${path}`);

/** What `app` answers: status, `Allow` and body (the call daemon's error time aside). */
async function answer(app: App, method: string, path: string, headers: Record<string, string>) {
  const body = method === "POST" ? '{"state": true}' : undefined;
  const response = await app.request(path, {
    method,
    headers: { ...headers, "Content-Type": "application/json" },
    body,
  });
  return {
    status: response.status,
    allow: response.headers.get("allow"),
    body: (await response.text()).replace(/"timestamp":[\d.]+/, '"timestamp":0'),
  };
}

Deno.test("an area is declared at its first request; the answers are those of every area at once", async () => {
  const { ctx, eager, lazy } = await apps();
  const alice = await ctiUser(ctx, "alice");
  const admin = await webServiceUser(ctx, ["#"]);
  const token = bearer(await login(ctx, "webservice", admin.login));
  const all = routeTable(eager);

  const areaRoutes = [
    "GET /1.1/users",
    "GET /svc/api/1.0/history",
    "GET /agents",
    "GET /status",
    "GET /users/me/agents",
    "GET /1.0/calls",
  ];
  assert.deepEqual(
    areaRoutes.filter((route) => routeTable(lazy).includes(route)),
    [],
    "before any request: none of the areas",
  );
  assert.ok(all.length - routeTable(lazy).length > 500, "the areas hold most routes");

  // each area asked first in another order than declared, with known and unknown paths
  const asked: [string, string][] = [
    ["GET", "/health"],
    ["GET", "/1.1/users"],
    ["DELETE", "/1.1/users"],
    ["GET", "/1.1/nothing"],
    ["GET", "/agents"],
    ["POST", `/svc/api/2.0/dnd/${alice.username}`],
    ["PUT", `/svc/api/2.0/dnd/${alice.username}`],
    ["GET", "/svc/api/1.0/nothing"],
    ["GET", "/1.0/calls"],
    ["GET", "/users/me/agents"],
    ["POST", "/status"],
    ["GET", "/status"],
    ["DELETE", "/users/me/agents/nothing"],
    ["GET", "/0.1/token"],
    ["GET", "/nothing"],
  ];
  for (const [method, path] of asked) {
    assert.deepEqual(
      await answer(lazy, method, path, token),
      await answer(eager, method, path, token),
      `${method} ${path}`,
    );
  }
  assert.deepEqual(routeTable(lazy), all, "every route in the place it has when declared at once");

  // each request counted under its route template, as by the app with every area at once
  const metrics = await lazy.request("/metrics", { headers: bearer(METRICS_TOKEN) });
  const text = await metrics.text();
  for (
    const route of ["/1.1/users", "/agents", "/svc/api/2.0/dnd/:username", "/1.0/calls"]
  ) {
    assert.ok(text.includes(`route="${route}"`), `${route} counted: ${text.slice(0, 200)}`);
  }
});

Deno.test("a first request no route takes: 404 or 405 with every area's methods", async () => {
  const { eager, lazy } = await apps();
  // the first request of the app: the answer needs the whole route table
  assert.deepEqual(
    await answer(lazy, "DELETE", "/1.0/calls", {}),
    await answer(eager, "DELETE", "/1.0/calls", {}),
  );
  assert.deepEqual(routeTable(lazy), routeTable(eager));
});

Deno.test("the OpenAPI document of the app first asked for it is the whole document", async () => {
  const { eager, lazy } = await apps();
  for (const path of ["/svc/api/2.0/openapi.json", "/1.1/api/api.yml", "/api/api.yml"]) {
    assert.deepEqual(
      await answer(lazy, "GET", path, {}),
      await answer(eager, "GET", path, {}),
      path,
    );
  }
  assert.deepEqual(routeTable(lazy), routeTable(eager));
});

/** The server's app on `ctx`'s services, its areas' code given by `load`, the loads counted. */
function countedLoads(ctx: TestContext, load: () => Promise<AreaRoutes>) {
  const counted = {
    loads: 0,
    app: buildApp(ctx.services, {
      load: () => {
        counted.loads++;
        return load();
      },
    }),
  };
  return counted;
}

Deno.test("before the areas' code loads: GET /health answers, any other request waits for it", async () => {
  const ctx = await setup();
  const counted = countedLoads(ctx, () => Promise.resolve(areaRoutes));
  const lazy = counted.app;
  for (const method of ["GET", "HEAD"]) {
    assert.equal((await lazy.request("/health", { method })).status, 200, method);
  }
  assert.equal(counted.loads, 0, "the liveness probe needs no area");
  // the route table read whole before the load: a clear error, not a table without the areas
  assert.throws(
    () => (lazy.router as CachedRouter<unknown>).complete(),
    /the API area \/svc\/api\/2\.0 is needed before its code has loaded/,
  );
  // below /health but not it, or another method: each may need the whole table (404, 405)
  const [health, slash, asked] = await Promise.all([
    lazy.request("/health", { method: "POST" }),
    lazy.request("/health/"),
    lazy.request("/health?verbose"),
  ]);
  assert.equal(counted.loads, 1, "the requests meanwhile share one load");
  assert.deepEqual([health.status, health.headers.get("allow")], [405, "GET, HEAD"]);
  assert.equal(slash.status, 404);
  assert.equal(asked.status, 200);
  (lazy.router as CachedRouter<unknown>).complete();
  assert.deepEqual(routeTable(lazy), routeTable(ctx.app));
  await lazy.request("/1.1/users");
  assert.equal(counted.loads, 1, "loaded once");
});

Deno.test("a load that fails: every request needing an area answers 500, /health still 200", async () => {
  const ctx = await setup();
  const counted = countedLoads(ctx, () => Promise.reject(new Error("the areas' file is missing")));
  const lazy = counted.app;
  for (const path of ["/1.1/users", "/svc/api/2.0/openapi.json"]) {
    const failed = await lazy.request(path);
    assert.equal(failed.status, 500, path);
    assert.deepEqual(await failed.json(), {
      error: "NotHandledError",
      message: "unexpected error: the API areas' code did not load",
    });
  }
  assert.equal(counted.loads, 1, "tried once: Deno keeps a failed import() as it is");
  assert.equal((await lazy.request("/health")).status, 200);
});

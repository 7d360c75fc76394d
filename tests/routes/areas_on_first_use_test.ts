/**
 * `createApp(services, { areasOnFirstUse: true })`, as the server runs it: each API area declared
 * at the first request below its path. The app answers, counts and documents exactly as the app
 * with every area declared at once (the one the other tests use), whichever area is asked first.
 */
import assert from "node:assert/strict";
import type { CachedRouter } from "../../lib/cached_router.ts";
import { createApp } from "../../routes/mod.ts";
import { bearer, ctiUser, login, setup, type TestContext, webServiceUser } from "../helpers.ts";

const METRICS_TOKEN = "metrics-scrape-token-0123456789abcdef";

/** Both apps on one set of services (one store): what one writes, the other reads. */
async function apps() {
  const ctx = await setup({ SVC_METRICS_TOKEN: METRICS_TOKEN });
  const lazy = createApp(ctx.services, { areasOnFirstUse: true });
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

Deno.test("the route table can be completed by whoever reads it whole", async () => {
  const { eager, lazy } = await apps();
  (lazy.router as CachedRouter<unknown>).complete();
  assert.deepEqual(routeTable(lazy), routeTable(eager));
});

/**
 * `lib/chain.ts`: the handlers a request matches, run as one. The same app definitions answer the
 * same through Hono's own router and `compose` and through `CachedRouter(chainMatched(…))`; the
 * chained app answers at once (no promise) when every step did.
 */
import assert from "node:assert/strict";
import { type Context, type ErrorHandler, Hono, type MiddlewareHandler } from "hono";
import { routePath } from "hono/route";
import { CachedRouter } from "../../lib/cached_router.ts";
import { afterNext, chainMatched } from "../../lib/chain.ts";

const onError: ErrorHandler = (error, c) => c.json({ error: error.message }, 500);

/** A log step that works after `next()`: at once when the steps after it answered at once. */
const log: MiddlewareHandler = (c, next) =>
  afterNext(next(), () => c.res.headers.append("X-Log", `${c.res.status} ${routePath(c, -1)}`));

/** A log step as most middleware are written: `async`, awaiting `next()`. */
const awaitingLog: MiddlewareHandler = async (c, next) => {
  c.header("X-Before", "1");
  await next();
  c.res.headers.append("X-Log", `${c.res.status}`);
};

const guard: MiddlewareHandler = (c, next) => {
  if (c.req.header("authorization") !== "yes") throw new Error(`refused ${c.req.param("id")}`);
  return next();
};

/** Builds the same routes on `app`. */
function define(app: Hono) {
  app.use(log);
  app.use("/slow/*", awaitingLog);
  app.get("/items/:id", guard, (c) => c.json({ id: c.req.param("id"), route: routePath(c) }));
  app.get("/slow/:id", guard, async (c) => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return c.text(`slow ${c.req.param("id")}`);
  });
  app.get("/rejects", guard, () => Promise.reject(new Error("later")));
  app.get("/twice", async (_c, next) => {
    await next();
    await next();
  });
  app.get("/nothing", (_c, next) => next());
  app.get("/unfinished", (() => undefined) as unknown as MiddlewareHandler);
  app.get("/thrown-value", () => {
    throw "not an error";
  });
  app.notFound((c) => c.text("none here", 404));
  app.onError(onError);
  return app;
}

const plain = define(new Hono());
const chained = define(new Hono({ router: new CachedRouter(chainMatched(onError)) }));

const REQUESTS: [string, Record<string, string>][] = [
  ["/items/7", { authorization: "yes" }],
  ["/items/7", {}],
  ["/slow/8", { authorization: "yes" }],
  ["/slow/8", {}],
  ["/rejects", { authorization: "yes" }],
  ["/twice", {}],
  ["/nothing", {}],
  ["/unfinished", {}],
  ["/nowhere", {}],
];

/** Status, body and the headers the steps set, of an answer. */
async function seen(response: Response) {
  const { status, headers } = response;
  return {
    status,
    body: await response.text(),
    log: headers.get("x-log"),
    before: headers.get("x-before"),
    type: headers.get("content-type"),
  };
}

Deno.test("the same answers as Hono's compose: steps, path values, errors, 404, checks", async () => {
  for (const method of ["GET", "HEAD"]) {
    for (const [path, headers] of REQUESTS) {
      const request = () => new Request(`http://svc${path}`, { method, headers });
      const expected = await seen(await plain.fetch(request()));
      const actual = await seen(await chained.fetch(request()));
      assert.deepEqual(actual, expected, `${method} ${path}`);
    }
  }
  // what those answers are, so that both cannot be wrong together
  const answer = await seen(
    await chained.fetch(
      new Request("http://svc/items/7", {
        headers: { authorization: "yes" },
      }),
    ),
  );
  assert.deepEqual(answer, {
    status: 200,
    body: JSON.stringify({ id: "7", route: "/items/:id" }),
    log: "200 /items/:id",
    before: null,
    type: "application/json",
  });
  const refused = await seen(await chained.fetch(new Request("http://svc/slow/8")));
  assert.deepEqual([refused.status, refused.body, refused.log, refused.before], [
    500,
    JSON.stringify({ error: "refused 8" }),
    "500, 500 /slow/:id",
    "1",
  ]);
  const twice = await chained.fetch(new Request("http://svc/twice"));
  assert.equal(await twice.text(), JSON.stringify({ error: "next() called multiple times" }));
  const unfinished = await chained.fetch(new Request("http://svc/unfinished"));
  assert.match(await unfinished.text(), /Context is not finalized/);
});

Deno.test("a thrown value that is not an Error is not answered: it goes up, as in Hono", async () => {
  for (const app of [plain, chained]) {
    await assert.rejects(async () => await app.fetch(new Request("http://svc/thrown-value")));
  }
});

Deno.test("answered at once when every step was; a promise when one needed it", async () => {
  const now = chained.fetch(
    new Request("http://svc/items/1", { headers: { authorization: "yes" } }),
  );
  assert.ok(now instanceof Response, "no promise for steps that answered at once");
  assert.equal(now.headers.get("x-log"), "200 /items/:id");
  const refusedNow = chained.fetch(new Request("http://svc/items/1"));
  assert.ok(refusedNow instanceof Response, "an error answered at once too");
  assert.equal(refusedNow.status, 500);
  const later = chained.fetch(
    new Request("http://svc/slow/1", { headers: { authorization: "yes" } }),
  );
  assert.ok(later instanceof Promise);
  assert.equal(await (await later).text(), "slow 1");
  // Hono's compose: always a promise
  const composed = plain.fetch(
    new Request("http://svc/items/1", { headers: { authorization: "yes" } }),
  );
  assert.ok(composed instanceof Promise);
  await composed;
});

Deno.test("one handler or none matched: the router's answer as it is", () => {
  const finish = chainMatched(onError);
  const route = { basePath: "/", path: "/a", method: "GET", handler: (c: Context) => c.text("") };
  const one = [[[[route.handler, route], {}]]] as Parameters<typeof finish>[0];
  assert.equal(finish(one), one);
  const none = [[]] as Parameters<typeof finish>[0];
  assert.equal(finish(none), none);
});

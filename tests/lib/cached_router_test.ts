/** `lib/cached_router.ts`: the trie router's answers, kept per method and path. */
import assert from "node:assert/strict";
import fc from "fast-check";
import { TrieRouter } from "hono/router/trie-router";
import { CachedRouter } from "../../lib/cached_router.ts";

const ROUTES: [string, string, string][] = [
  ["ALL", "*", "log"],
  ["GET", "/history/days/:username", "days"],
  ["GET", "/history/:username", "size"],
  ["GET", "/users/export", "export"],
  ["GET", "/users/:id", "user"],
  ["PUT", "/users/:id", "change"],
];

/** Both routers given `routes` (the table above by default), in the same order. */
function routers(routes: readonly [string, string, string][] = ROUTES) {
  const cached = new CachedRouter<string>();
  const trie = new TrieRouter<string>();
  for (const [method, path, name] of routes) {
    cached.add(method, path, name);
    trie.add(method, path, name);
  }
  return { cached, trie };
}

Deno.test("answers what the trie router answers, again and again", () => {
  const { cached, trie } = routers();
  const asked: [string, string][] = [
    ["GET", "/history/days/alice"],
    ["GET", "/history/bob"],
    ["GET", "/users/export"],
    ["GET", "/users/7"],
    ["GET", "/users/8"],
    ["PUT", "/users/7"],
    ["DELETE", "/users/7"],
    ["GET", "/nowhere"],
  ];
  for (let round = 0; round < 2; round++) {
    for (const [method, path] of asked) {
      assert.deepEqual(cached.match(method, path), trie.match(method, path), `${method} ${path}`);
    }
  }
});

Deno.test("thousands of paths: every answer still right", () => {
  const { cached, trie } = routers();
  for (let id = 0; id < 2500; id++) {
    const path = `/users/${id % 1200}`;
    assert.deepEqual(cached.match("GET", path), trie.match("GET", path), path);
  }
});

Deno.test("a route added after a match is found", () => {
  const { cached } = routers();
  assert.equal(cached.match("GET", "/later")[0].length, 1, "only the * middleware");
  cached.add("GET", "/later", "later");
  assert.deepEqual(cached.match("GET", "/later")[0].map(([name]) => name), ["log", "later"]);
});

Deno.test("routes under several first segments: each trie answers as one trie of them all", () => {
  const { cached, trie } = routers([
    ...ROUTES,
    ["GET", "/", "root"],
    ["ALL", "/svc/*", "svc-limit"],
    ["GET", "/svc/api/:version/users", "svc-users"],
    ["GET", "/:area/status", "status"],
    ["GET", "/health", "health"],
  ]);
  const asked = ["/", "//health", "/health", "/health/", "/svc/api/2.0/users", "/users/status"];
  for (const path of [...asked, "/users/7", "/nowhere/status", "/svc", "/x/y/z"]) {
    assert.deepEqual(cached.match("GET", path), trie.match("GET", path), path);
  }
});

/** Segments of route paths: fixed words (a few shared with the requests), params, wildcards. */
const routeSegment = fc.oneof(
  fc.constantFrom("a", "b", "users", "1.1", "", "x"),
  fc.constantFrom(":id", ":id?", ":n{[0-9]+}", "*", "us*"),
);
const requestSegment = fc.constantFrom("a", "b", "users", "1.1", "", "x", "7", "usx", "zz");
/** Requests to try: a method and a path of one to four segments. */
const requests = fc.array(
  fc.tuple(
    fc.constantFrom("GET", "POST"),
    fc.array(requestSegment, { minLength: 1, maxLength: 4 }).map((parts) => "/" + parts.join("/")),
  ),
  { minLength: 1, maxLength: 8 },
);

Deno.test("property: any table, any path, the same answers as Hono's trie router", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.tuple(
          fc.constantFrom("GET", "POST", "ALL"),
          fc.oneof(
            fc.constant("*"),
            fc.array(routeSegment, { minLength: 1, maxLength: 3 }).map((parts) =>
              "/" + parts.join("/")
            ),
          ),
        ),
        { maxLength: 12 },
      ),
      requests,
      (table, asked) => {
        const { cached, trie } = routers(
          table.map(([method, path], index) => [method, path, `${index}`]),
        );
        for (const [method, path] of asked) {
          assert.deepEqual(cached.match(method, path), trie.match(method, path), path);
        }
      },
    ),
    { numRuns: 500 },
  );
});

/** A router whose routes are also kept in a table, as Hono's app keeps `app.routes`. */
function tabled() {
  const router = new CachedRouter<string>();
  const table: string[] = [];
  const add = (method: string, path: string, name: string) => {
    router.add(method, path, name);
    table.push(name);
  };
  return { router, table, add };
}

Deno.test("deferred routes: added at the first request below their segment, in their place", () => {
  const { router, table, add } = tabled();
  add("ALL", "*", "log");
  router.defer("1.1", table, () => add("GET", "/1.1/users", "confd"));
  router.defer("svc", table, () => add("GET", "/svc/users", "svc"));
  add("GET", "/health", "health");
  assert.deepEqual(table, ["log", "health"]);
  assert.deepEqual(router.match("GET", "/health")[0].map(([name]) => name), ["log", "health"]);
  assert.deepEqual(table, ["log", "health"], "a request elsewhere adds none");
  assert.deepEqual(router.match("GET", "/svc/users")[0].map(([name]) => name), ["log", "svc"]);
  assert.deepEqual(table, ["log", "svc", "health"], "where it was deferred");
  router.complete();
  assert.deepEqual(table, ["log", "confd", "svc", "health"], "before what was deferred after it");
  assert.deepEqual(router.match("GET", "/1.1/users")[0].map(([name]) => name), ["log", "confd"]);
});

Deno.test("deferring with a table that does not hold the router's routes is refused", () => {
  const { router } = tabled();
  router.add("GET", "/a", "a"); // not in the table
  assert.throws(() => router.defer("b", [], () => {}), /does not hold this router's routes/);
});

const fixedWord = fc.constantFrom("a", "b", "users", "1.1", "x");

Deno.test("property: routes deferred or not, any first requests, the same answers and table", () => {
  fc.assert(
    fc.property(
      fc.array(
        fc.oneof(
          fc.tuple(
            fc.constantFrom("GET", "POST", "ALL"),
            fc.array(routeSegment, { minLength: 1, maxLength: 3 }).map((parts) =>
              "/" + parts.join("/")
            ),
          ).map(([method, path]) => ({ deferred: null, routes: [[method, path]] })),
          fc.tuple(
            fixedWord,
            fc.array(
              fc.tuple(
                fc.constantFrom("GET", "POST", "ALL"),
                fc.array(routeSegment, { maxLength: 2 }),
              ),
              { maxLength: 4 },
            ),
          ).map(([segment, routes]) => ({
            deferred: segment,
            routes: routes.map(([method, parts]) => [method, ["", segment, ...parts].join("/")]),
          })),
        ),
        { maxLength: 10 },
      ),
      requests,
      (entries, asked) => {
        const trie = new TrieRouter<string>();
        const all: string[] = [];
        const { router, table, add } = tabled();
        let serial = 0;
        for (const { deferred, routes } of entries) {
          const named = routes.map(([method, path]) => [method!, path!, `${serial++}`] as const);
          for (const [method, path, name] of named) {
            trie.add(method, path, name);
            all.push(name);
          }
          const addAll = () => named.forEach(([method, path, name]) => add(method, path, name));
          if (deferred === null) addAll();
          else router.defer(deferred, table, addAll);
        }
        for (const [method, path] of asked) {
          assert.deepEqual(router.match(method, path), trie.match(method, path), path);
        }
        router.complete();
        assert.deepEqual(table, all, "the table in the order of the routes added at once");
        for (const [method, path] of asked) {
          assert.deepEqual(router.match(method, path), trie.match(method, path), path);
        }
      },
    ),
    { numRuns: 500 },
  );
});

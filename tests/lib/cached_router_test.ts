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
      fc.array(
        fc.tuple(
          fc.constantFrom("GET", "POST"),
          fc.array(requestSegment, { minLength: 1, maxLength: 4 }).map((parts) =>
            "/" + parts.join("/")
          ),
        ),
        { minLength: 1, maxLength: 8 },
      ),
      (table, requests) => {
        const { cached, trie } = routers(
          table.map(([method, path], index) => [method, path, `${index}`]),
        );
        for (const [method, path] of requests) {
          assert.deepEqual(cached.match(method, path), trie.match(method, path), path);
        }
      },
    ),
    { numRuns: 500 },
  );
});

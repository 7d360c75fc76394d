/** `lib/cached_router.ts`: the trie router's answers, kept per method and path. */
import assert from "node:assert/strict";
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

function routers() {
  const cached = new CachedRouter<string>();
  const trie = new TrieRouter<string>();
  for (const [method, path, name] of ROUTES) {
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

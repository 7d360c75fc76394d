/**
 * Hono's router, remembering its answers, its tables built as the first requests come. The spec's
 * paths put a fixed word where another route has a value (`/history/days/{u}` beside
 * `/history/{u}`, `/1.1/users/import` beside `/1.1/users/{id}`), which Hono's fastest router
 * refuses; its trie router walks every segment on each request instead. A match depends on the
 * method and path only, so the last answers are kept, as `finish` makes them (the app's: its
 * handlers run as one, `lib/chain.ts`).
 *
 * The routes are sorted by the first segment of their path (`1.1`, `svc`, `health`…) into one
 * trie each, built at the first request below that segment: a start declares over 600 routes and
 * answers `/health` first, and the tries of all of them cost a start 2–3 ms and a megabyte of
 * short-lived objects (docs/performance.md). A route whose first segment is not a fixed word (a
 * middleware's `*`, a `:param`) is in every trie, in the order it was added: within a trie the
 * routes keep their order, which is all a match's order depends on.
 */
import type { Result, Router } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";

/** Matches kept at most; when full, all are forgotten (a path per id makes them many). */
const KEPT_MATCHES = 1000;

/** A route's path as added, and what it runs. */
interface Added<T> {
  method: string;
  path: string;
  handler: T;
  /** The fixed first segment of its path; null when it is a pattern (it may match any). */
  segment: string | null;
}

/** The first segment of a path as Hono's trie splits it (`""` for `/` or `//x`). */
function firstSegment(path: string): string {
  const start = path.startsWith("/") ? 1 : 0;
  const end = path.indexOf("/", start);
  return path.slice(start, end < 0 ? path.length : end);
}

/**
 * A route path's first segment when it is a fixed word: no `:param`, `*` or `{regex}`, and no
 * optional `:param?` anywhere (Hono adds the path without it, whose first segment may differ).
 */
function fixedSegment(path: string): string | null {
  const segment = firstSegment(path);
  return /[:*{}]/.test(segment) || path.includes("?") ? null : segment;
}

export class CachedRouter<T> implements Router<T> {
  readonly name = "CachedRouter";
  readonly #added: Added<T>[] = [];
  /** The fixed first segments of the routes: a request below any other shares one trie. */
  readonly #segments = new Set<string>();
  /** First segment (or null: none of the routes') → the trie of the routes that may match. */
  readonly #tries = new Map<string | null, TrieRouter<T>>();
  readonly #matches = new Map<string, Result<T>>();

  constructor(private readonly finish: (result: Result<T>) => Result<T> = (result) => result) {}

  add(method: string, path: string, handler: T): void {
    // a Map's clear allocates a new table even when empty: over 600 adds at each start
    if (this.#matches.size) this.#matches.clear();
    if (this.#tries.size) this.#tries.clear();
    const segment = fixedSegment(path);
    if (segment !== null) this.#segments.add(segment);
    this.#added.push({ method, path, handler, segment });
  }

  match(method: string, path: string): Result<T> {
    const key = `${method} ${path}`;
    let result = this.#matches.get(key);
    if (!result) {
      if (this.#matches.size >= KEPT_MATCHES) this.#matches.clear();
      result = this.finish(this.#trieBelow(path).match(method, path));
      this.#matches.set(key, result);
    }
    return result;
  }

  /** The trie holding every route that may match `path`, built on its first use. */
  #trieBelow(path: string): TrieRouter<T> {
    const first = firstSegment(path);
    const segment = this.#segments.has(first) ? first : null;
    let trie = this.#tries.get(segment);
    if (!trie) {
      trie = new TrieRouter<T>();
      for (const route of this.#added) {
        if (route.segment === null || route.segment === segment) {
          trie.add(route.method, route.path, route.handler);
        }
      }
      this.#tries.set(segment, trie);
    }
    return trie;
  }
}

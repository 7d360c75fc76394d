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
 *
 * Routes can also be added when first needed ({@link CachedRouter.defer}): the app's areas below
 * `/1.1`, `/svc`… cost a start 5–6 ms to declare, and its first request is `/health`.
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

/** Routes to add when first needed, and where they go. */
interface Deferred {
  segment: string;
  addRoutes: () => void;
  /** Where its routes go in the router's order and in `table` (moved as others go before it). */
  at: number;
  table: unknown[];
}

/** Moves the last `count` items of `items` to `at`. */
function moveTail(items: unknown[], count: number, at: number): void {
  items.splice(at, 0, ...items.splice(items.length - count, count));
}

export class CachedRouter<T> implements Router<T> {
  readonly name = "CachedRouter";
  readonly #added: Added<T>[] = [];
  /** Routes not added yet, in the order they were deferred. */
  readonly #deferred: Deferred[] = [];
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

  /**
   * Runs `addRoutes`, which adds routes below `/${segment}` only, at the first request below that
   * segment or at {@link complete}. Its routes take the place they would have had if added now, in
   * this router and in `table`: the app's route table (Hono's `app.routes`), which holds what this
   * router was given, in the same order, one entry per route. So a match, the table and all that
   * is made of it (the OpenAPI document, the 405 answers) are the same as with the routes added at
   * once.
   *
   * @example
   * router.defer("1.1", app.routes, () => app.route("/1.1", confdRoutes(services)));
   */
  defer(segment: string, table: unknown[], addRoutes: () => void): void {
    if (table.length !== this.#added.length) {
      throw new Error("the route table does not hold this router's routes, one each");
    }
    this.#segments.add(segment);
    this.#deferred.push({ segment, addRoutes, at: this.#added.length, table });
  }

  /** Adds every deferred route now (for whoever reads the whole route table). */
  complete(): void {
    this.#addDeferred(() => true);
  }

  /** Adds the deferred routes `which` takes, in the order they were deferred. */
  #addDeferred(which: (deferred: Deferred) => boolean): void {
    for (let n = 0; n < this.#deferred.length;) {
      const deferred = this.#deferred[n]!;
      if (!which(deferred)) {
        n++;
        continue;
      }
      const before = this.#added.length;
      deferred.addRoutes(); // one that throws before adding a route stays deferred
      this.#deferred.splice(n, 1);
      const count = this.#added.length - before;
      moveTail(this.#added, count, deferred.at);
      moveTail(deferred.table, count, deferred.at);
      // those deferred after it go after its routes
      for (const later of this.#deferred.slice(n)) later.at += count;
    }
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
    if (this.#deferred.length) this.#addDeferred((deferred) => deferred.segment === first);
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

/**
 * Hono's router, remembering its answers. The spec's paths put a fixed word where another route
 * has a value (`/history/days/{u}` beside `/history/{u}`, `/1.1/users/import` beside
 * `/1.1/users/{id}`), which Hono's fastest router refuses; its trie router walks every segment on
 * each request instead. A match depends on the method and path only, so the last answers are kept,
 * as `finish` makes them (the app's: its handlers run as one, `lib/chain.ts`).
 */
import type { Result, Router } from "hono/router";
import { TrieRouter } from "hono/router/trie-router";

/** Matches kept at most; when full, all are forgotten (a path per id makes them many). */
const KEPT_MATCHES = 1000;

export class CachedRouter<T> implements Router<T> {
  readonly name = "CachedRouter";
  readonly #router = new TrieRouter<T>();
  readonly #matches = new Map<string, Result<T>>();

  constructor(private readonly finish: (result: Result<T>) => Result<T> = (result) => result) {}

  add(method: string, path: string, handler: T): void {
    this.#matches.clear();
    this.#router.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    const key = `${method} ${path}`;
    let result = this.#matches.get(key);
    if (!result) {
      if (this.#matches.size >= KEPT_MATCHES) this.#matches.clear();
      result = this.finish(this.#router.match(method, path));
      this.#matches.set(key, result);
    }
    return result;
  }
}

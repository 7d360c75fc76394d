/**
 * The steps a request matched, run as one handler. Hono runs two or more matched handlers (the
 * request log, a guard, the route) through its `compose`, in which every step is an `async`
 * function: each request then pays a chain of promises, and `Deno.serve` a promise to wait for,
 * even when every step answered at once (a list kept in memory behind a token verified before).
 * Hono calls a single matched handler directly and hands its answer to `Deno.serve` as it comes, so
 * `CachedRouter` answers each match as one handler made by {@link chainMatched}: it runs the steps
 * in order, with the same `next`, errors and checks as `compose`, and continues at once after a step
 * that answered at once (measured: bench/README.md, docs/performance.md).
 *
 * A step's `next()` is then a promise only when a later step needed one; a middleware that works
 * after `next()` tests it ({@link afterNext}); one that awaits it works as before.
 */
import type { Context, ErrorHandler, Next } from "hono";
import type { Result } from "hono/router";
import type { H, RouterRoute } from "hono/types";

/** What Hono's router holds for each handler: the handler and the route it was added with. */
export type RouterEntry = [H, RouterRoute];

/**
 * Turns a router's answer of two or more handlers into an answer of one, {@link chain}ed; its
 * route is the first matched one that is not a middleware (its path does not end with `*`: the
 * metrics' route template), and so are its path values. An answer of one handler, of none, or with
 * a parameter stash (routers other than the trie router) is kept as it is.
 */
export function chainMatched(onError: ErrorHandler) {
  return (result: Result<RouterEntry>): Result<RouterEntry> => {
    if (result.length === 2) return result;
    const [matched] = result;
    if (matched.length < 2) return result;
    const routeAt = Math.max(0, matched.findIndex(([[, route]]) => !route.path.endsWith("*")));
    const [[, route], params] = matched[routeAt]!;
    const handler = chain(matched.map(([[step]]) => step), onError);
    return [[[[handler, route], params]]];
  };
}

/**
 * One handler running `steps` as Hono's `compose` does: in order, each given a `next` that runs
 * the following one (after the last, the `next` Hono gives, which answers 404); an `Error` thrown
 * or rejected by a step becomes `onError`'s answer at that step, and the steps before it go on; a
 * step's answer sets the response unless one is set; `next` called twice is an error; a chain that
 * ends without a response is an error. The answer is the response, at once when no step needed a
 * promise.
 */
export function chain(steps: readonly H[], onError: ErrorHandler): H {
  return (c: Context, next: Next) => {
    let index = -1;
    const answered = (res: unknown): Context => {
      if (res && c.finalized === false) c.res = res as Response;
      return c;
    };
    const failed = (error: unknown): Context | Promise<Context> => {
      if (!(error instanceof Error)) throw error;
      c.error = error;
      const res = onError(error, c);
      if (res instanceof Promise) return res.then((response) => (c.res = response, c));
      c.res = res;
      return c;
    };
    const dispatch = (i: number): Context | Promise<Context> => {
      if (i <= index) throw new Error("next() called multiple times");
      index = i;
      const step = i < steps.length ? steps[i]! : next;
      let res: unknown;
      try {
        res = step(c, (() => dispatch(i + 1)) as unknown as Next);
      } catch (error) {
        return failed(error);
      }
      return res instanceof Promise ? res.then(answered, failed) : answered(res);
    };
    const finished = (context: Context): Response => {
      if (!context.finalized) {
        throw new Error(
          "Context is not finalized. Did you forget to return a Response object or `await next()`?",
        );
      }
      return context.res;
    };
    const ended = dispatch(0);
    return ended instanceof Promise ? ended.then(finished) : finished(ended);
  };
}

/**
 * Runs `then` after the steps `next()` runs: at once when they answered at once, else when their
 * promise settles (a rejection skips it, as after `await next()`).
 *
 * @example
 * const timed: MiddlewareHandler = (c, next) => afterNext(next(), () => c.header("X-Time", "1"));
 */
export function afterNext(rest: unknown, then: () => void): Promise<void> {
  // typed as Hono's middleware answer (a promise); undefined when `rest` came at once
  return (rest instanceof Promise ? rest.then(then) : then()) as Promise<void>;
}

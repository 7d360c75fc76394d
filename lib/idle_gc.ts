/**
 * Memory back down after a burst: V8 grows its heap to serve a burst of requests (10,000 refused
 * ones leave some 70 MB of garbage) and collects it only when new allocations ask for room, so an
 * idle process kept that memory for good. When the process runs with `--v8-flags=--expose-gc` (the
 * tasks and the deployment files do), a full collection runs once the server has served requests
 * (or just started) and then none for {@link IDLE_MS}: the heap goes back to what is live. Without
 * the flag this does nothing.
 */

/** V8's `gc` of `--expose-gc`, with its options. */
type V8Gc = (options?: { type?: string; execution?: string; flavor?: string }) => void;

/** How long without a request counts as idle. */
export const IDLE_MS = 1_000;

/**
 * Wraps a `Deno.serve` handler so that the process collects its garbage once idle after serving
 * (see the module comment); `gc` is V8's, present with `--expose-gc`. `stop` ends the idle checks.
 *
 * @example
 * const { handler, stop } = collectWhenIdle(app.fetch);
 * Deno.serve(handler);
 */
export function collectWhenIdle(
  handler: Deno.ServeHandler,
  gc: V8Gc | undefined = (globalThis as { gc?: V8Gc }).gc,
  idleMs = IDLE_MS,
): { handler: Deno.ServeHandler; stop(): void } {
  if (!gc) return { handler, stop() {} };
  // the start counts as a burst: loading the modules and preparing the store left garbage too
  let served = true;
  let lastRequest = performance.now();
  // checked four times per idle period: collected between 1 and 1.25 idle periods after the last
  // request, so the memory a start or a burst took is given back within a second or so
  const timer = setInterval(() => {
    if (!served || performance.now() - lastRequest < idleMs) return;
    served = false;
    // "last-resort": every collectable object, and the heap's unused pages given back (a plain
    // `gc()` frees the objects but keeps the room the burst made)
    gc({ type: "major", execution: "sync", flavor: "last-resort" });
  }, idleMs / 4);
  Deno.unrefTimer(timer); // never what keeps the process alive
  return {
    // both parameters named: Deno.serve gives no request to a handler declaring none
    handler: (request, info) => {
      served = true;
      lastRequest = performance.now();
      return handler(request, info);
    },
    stop: () => clearInterval(timer),
  };
}

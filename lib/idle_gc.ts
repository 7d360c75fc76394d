/**
 * Memory back down after a burst, in two steps once the server is idle.
 *
 * 1. V8 grows its heap to serve a burst of requests (10,000 refused ones leave some 70 MB of
 *    garbage) and collects it only when new allocations ask for room, so an idle process kept that
 *    memory for good. When the process runs with `--v8-flags=--expose-gc` (the tasks and the
 *    deployment files do), a full collection runs once the server has served requests (or just
 *    started) and then none for {@link IDLE_MS}: the heap goes back to what is live. Without the
 *    flag this step does nothing.
 * 2. What that collection frees outside V8's heap (the bytes of request bodies, which Deno reads
 *    into 64 KiB buffers, and the other native buffers of a request) goes back to glibc's malloc,
 *    which keeps it: freed chunks lie between chunks still in use, and glibc gives back to the
 *    system only the free end of its heap. After 10,000 malformed requests with bodies (issue 27
 *    §6) it held some 100–150 MB that way, none of it in use. One tick after the collection, when
 *    its freeing is done, glibc's `malloc_trim(0)` gives every free page back (a few ms). It is
 *    called through FFI, so only when the process may (`--allow-ffi`: the tasks and the deployment
 *    files pass it) on Linux with glibc; elsewhere this step does nothing.
 */

/** V8's `gc` of `--expose-gc`, with its options. */
type V8Gc = (options?: { type?: string; execution?: string; flavor?: string }) => void;

/** Gives the allocator's free memory back to the system. */
export type Trim = () => void;

/** How long without a request counts as idle. */
export const IDLE_MS = 1_000;

/**
 * glibc's `malloc_trim(0)` (every free page of every arena back to the system), or undefined where
 * it cannot be called: not Linux with glibc, or no `--allow-ffi`. The library is opened at the
 * first trim, not at start: `Deno.dlopen` cost a start 1.4–2 ms (bench/README.md), and the first
 * trim comes a second after the start at the earliest. Where it cannot be opened after all, a trim
 * does nothing.
 *
 * @example
 * mallocTrim()?.(); // after a collection freed native buffers
 */
export function mallocTrim(): Trim | undefined {
  if (trimmer !== null) return trimmer;
  trimmer = undefined;
  if (Deno.build.os !== "linux" || Deno.build.env !== "gnu") return trimmer;
  // queried, never asked: a process started without the permission must not prompt
  if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return trimmer;
  let trim: Trim | null = null;
  trimmer = () => (trim ??= openMallocTrim())();
  return trimmer;
}

/** `malloc_trim(0)` of the C library, or a function doing nothing when it cannot be opened. */
function openMallocTrim(): Trim {
  try {
    const libc = Deno.dlopen("libc.so.6", {
      malloc_trim: { parameters: ["usize"], result: "i32" },
    });
    return () => void libc.symbols.malloc_trim(0n);
  } catch {
    return () => {};
  }
}

/** {@link mallocTrim}'s answer once known (null before). */
let trimmer: Trim | undefined | null = null;

/**
 * Runs `check` every `ms` until `stopped()`, on Deno's own timers (`AbortSignal.timeout`), which
 * never keep the process alive. Not `setInterval`: in Deno 2.9 the first `setTimeout` or
 * `setInterval` of a process loads `node:timers` and a part of Deno's Node layer with it, some 3 MB
 * and 5 ms at start that a server which sets no other timer need not pay (bench/README.md).
 */
function every(ms: number, stopped: () => boolean, check: () => void): void {
  const arm = () => AbortSignal.timeout(ms).addEventListener("abort", tick, { once: true });
  const tick = () => {
    if (stopped()) return;
    check();
    arm();
  };
  arm();
}

/**
 * Wraps a `Deno.serve` handler so that the process collects its garbage once idle after serving,
 * then gives the native memory it freed back (see the module comment); `gc` is V8's, present with
 * `--expose-gc`, `trim` {@link mallocTrim}'s (null: none). `stop` ends the idle checks.
 *
 * @example
 * const { handler, stop } = collectWhenIdle(app.fetch);
 * Deno.serve(handler);
 */
export function collectWhenIdle(
  handler: Deno.ServeHandler,
  gc: V8Gc | undefined = (globalThis as { gc?: V8Gc }).gc,
  idleMs = IDLE_MS,
  trim: Trim | null = mallocTrim() ?? null,
): { handler: Deno.ServeHandler; stop(): void } {
  if (!gc && !trim) return { handler, stop() {} };
  /** Requests served so far: a check that finds the count it saw last saw none come. */
  let requests = 0;
  let seen = -1; // the start counts as a burst: loading the modules left garbage too
  /** Requests came (or the start) since the last collection. */
  let served = false;
  /** Checks in a row that saw no request. */
  let quiet = 0;
  /** A collection ran: trim at the next check unless a request came. */
  let collected = false;
  let stopped = false;
  // checked four times per idle period: collected at the fourth check in a row without a
  // request, between 1 and 1.25 idle periods after the last one, so the memory a start or a burst
  // took is given back within a second or so; a request only counts (no clock read on the hot path)
  every(idleMs / 4, () => stopped, () => {
    const came = requests !== seen;
    seen = requests;
    quiet = came ? 0 : quiet + 1;
    if (came) served = true;
    if (collected) {
      collected = false;
      // a tick after the collection: V8 frees the buffers it found dead (ArrayBuffers' bytes)
      // on its own threads after the collection returns
      if (!came) trim?.();
      return;
    }
    if (!served || quiet < 4) return;
    served = false;
    // "last-resort": every collectable object, and the heap's unused pages given back (a plain
    // `gc()` frees the objects but keeps the room the burst made)
    gc?.({ type: "major", execution: "sync", flavor: "last-resort" });
    collected = true;
  });
  return {
    // both parameters named: Deno.serve gives no request to a handler declaring none
    handler: (request, info) => {
      requests++;
      return handler(request, info);
    },
    stop: () => void (stopped = true),
  };
}

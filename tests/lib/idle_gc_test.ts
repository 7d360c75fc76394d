/**
 * `lib/idle_gc.ts`: one full collection once the server has served and then gone idle, then glibc's
 * free memory given back.
 */
import assert from "node:assert/strict";
import { collectWhenIdle, IDLE_MS, mallocTrim } from "../../lib/idle_gc.ts";

const info = {} as Deno.ServeHandlerInfo<Deno.NetAddr>;

Deno.test("without V8's gc nor malloc_trim the handler is served as it is", () => {
  const handler = () => new Response("ok");
  assert.equal(collectWhenIdle(handler, undefined, IDLE_MS, null).handler, handler);
});

Deno.test("malloc_trim is there on Linux with glibc and --allow-ffi, and can be called", () => {
  const trim = mallocTrim();
  assert.equal(mallocTrim(), trim, "opened once");
  const glibc = Deno.build.os === "linux" && Deno.build.env === "gnu" &&
    Deno.permissions.querySync({ name: "ffi" }).state === "granted";
  assert.equal(typeof trim, glibc ? "function" : "undefined");
  trim?.();
});

Deno.test("the free memory is given back one check after the collection, once", async () => {
  const steps: string[] = [];
  const idleMs = 40;
  const trimmed = Promise.withResolvers<void>();
  const { stop } = collectWhenIdle(() => new Response("ok"), () => steps.push("gc"), idleMs, () => {
    steps.push("trim");
    trimmed.resolve();
  });
  const alive = setInterval(() => {}, 1000);
  try {
    await trimmed.promise;
    await new Promise((resolve) => setTimeout(resolve, idleMs * 3));
    assert.deepEqual(steps, ["gc", "trim"]);
  } finally {
    clearInterval(alive);
    stop();
  }
});

Deno.test("a request between the collection and the trim: both again once idle", async () => {
  const steps: string[] = [];
  const collected = Promise.withResolvers<void>();
  const trimmed = Promise.withResolvers<void>();
  const { handler, stop } = collectWhenIdle(
    () => new Response("ok"),
    () => {
      steps.push("gc");
      collected.resolve();
    },
    200,
    () => {
      steps.push("trim");
      trimmed.resolve();
    },
  );
  const alive = setInterval(() => {}, 1000);
  try {
    await collected.promise;
    // in the collection's timer turn: before the next check, where the trim would have come
    await handler(new Request("http://svc.test/health"), info);
    await trimmed.promise;
    assert.deepEqual(steps, ["gc", "gc", "trim"]);
  } finally {
    clearInterval(alive);
    stop();
  }
});

Deno.test("with malloc_trim but without V8's gc: the trim alone once idle", async () => {
  const trimmed = Promise.withResolvers<void>();
  let trims = 0;
  const { stop } = collectWhenIdle(() => new Response("ok"), undefined, 20, () => {
    trims++;
    trimmed.resolve();
  });
  const alive = setInterval(() => {}, 1000);
  try {
    await trimmed.promise;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(trims, 1);
  } finally {
    clearInterval(alive);
    stop();
  }
});

Deno.test("one collection once idle after the start and requests, none while idle since", async () => {
  const collections: unknown[] = [];
  const collected = Promise.withResolvers<void>();
  const seen: Request[] = [];
  const { handler, stop } = collectWhenIdle((request) => {
    seen.push(request);
    return new Response("ok");
  }, (options) => {
    collections.push(options);
    collected.resolve();
  }, 20);
  try {
    const request = new Request("http://svc.test/health");
    const response = await handler(request, info);
    assert.equal(await response.text(), "ok");
    assert.equal(seen[0], request, "the request reaches the handler");
    // the idle check's timer never keeps a process alive: this one does, meanwhile
    const alive = setInterval(() => {}, 1000);
    await collected.promise.finally(() => clearInterval(alive)); // however long the machine takes
    assert.deepEqual(collections, [{ type: "major", execution: "sync", flavor: "last-resort" }]);
    // idle since: no second collection without new requests
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(collections.length, 1);
  } finally {
    stop();
  }
});

Deno.test("no collection while requests keep coming, one once they stop", async () => {
  let collections = 0;
  const idleMs = 200;
  const { handler, stop } = collectWhenIdle(() => new Response("ok"), () => collections++, idleMs);
  const alive = setInterval(() => {}, 1000);
  try {
    // a request every 50 ms for 600 ms: never idle for 200 ms (timers may run late, not early)
    const until = performance.now() + 600;
    let lastRequest = 0;
    while (performance.now() < until) {
      lastRequest = performance.now();
      await handler(new Request("http://svc.test/health"), info);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(collections, 0, "collected while requests kept coming");
    }
    while (collections === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    assert.ok(performance.now() - lastRequest >= idleMs, "only once idle for idleMs");
    assert.equal(collections, 1);
  } finally {
    clearInterval(alive);
    stop();
  }
});

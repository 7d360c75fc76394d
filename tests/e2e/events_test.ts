/**
 * End-to-end event delivery (decisions §7) with the real server process on a store file, posting
 * to a real receiver started here. Events are published into the file from this test process (a
 * second `Store.open` on it and an `EventExport` that is never started): the servers see them
 * through their poll of the outbox signal.
 */
import assert from "node:assert/strict";
import { systemClock } from "../../lib/clock.ts";
import { EventExport } from "../../lib/events/export.ts";
import { type EventMessage, platformMessage } from "../../lib/events/messages.ts";
import { createLogger } from "../../lib/log.ts";
import { Store } from "../../lib/store/store.ts";
import { startServer } from "./server.ts";

/** A receiver counting what it gets; `delayMs` slows each answer down. */
function receiver(options: { delayMs?: number; onPost?: (distinct: number) => void } = {}) {
  /** X-Svc-Event-Id → how many times it came. */
  const counts = new Map<string, number>();
  /** uniqueId of the message → X-Svc-Event-Id it came with (must never change). */
  const idOf = new Map<string, string>();
  /** uniqueIds of the events that came again under another id (must stay empty). */
  const changedIds: string[] = [];
  /** Per user, the ids in the order they first came. */
  const order = new Map<string, string[]>();
  let delayMs = options.delayMs ?? 0;
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const id = request.headers.get("x-svc-event-id") ?? "";
    const event: EventMessage = await request.json();
    const uniqueId = (event.message as { ctiMessage: { uniqueId: string } }).ctiMessage.uniqueId;
    if ((idOf.get(uniqueId) ?? id) !== id) changedIds.push(uniqueId);
    idOf.set(uniqueId, id);
    const seen = counts.get(id) ?? 0;
    counts.set(id, seen + 1);
    if (seen === 0) {
      const ids = order.get(event.username) ?? [];
      ids.push(id);
      order.set(event.username, ids);
      options.onPost?.(counts.size);
    }
    if (delayMs > 0) await delay(delayMs);
    return new Response(null, { status: 200 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/e2e/dropbox/`,
    counts,
    idOf,
    changedIds,
    order,
    set delayMs(ms: number) {
      delayMs = ms;
    },
    close: () => server.shutdown(),
  };
}

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `done()` holds, checking every 20 ms; fails after `timeoutMs`. */
async function waitUntil(
  done: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!await done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(20);
  }
}

let serial = 0;

/** `perUser` phone events for each of `users` users, interleaved, each with its own uniqueId. */
function messages(users: number, perUser: number): EventMessage[] {
  const out: EventMessage[] = [];
  for (let n = 0; n < perUser; n++) {
    for (let u = 0; u < users; u++) {
      out.push(platformMessage({
        kind: "phone",
        userId: u + 1,
        username: `user${u}`,
        eventType: "EventRinging",
        DN: "1001",
        otherDN: "1002",
        otherDName: "",
        linkedId: "1767225600.1",
        uniqueId: `1767225600.${++serial}`,
        userData: { PLATFORM_USERID: String(u + 1) },
        recordState: "inactive",
      }));
    }
  }
  return out;
}

/** Opens the store file from this process, with an export that publishes but never delivers. */
async function publisher(file: string, url: string) {
  const store = await Store.open(file);
  const events = new EventExport({
    store,
    clock: systemClock,
    logger: createLogger("error"),
    url,
    secret: null,
    retentionMs: 3_600_000,
  });
  return {
    events,
    async close() {
      await events.close();
      store.close();
    },
  };
}

/** Asserts that each user's events came in publish (id) order. */
function assertOrderPerUser(order: Map<string, string[]>) {
  for (const [username, ids] of order) {
    assert.deepEqual(ids, [...ids].sort(), `${username}'s events in order`);
  }
}

Deno.test("two server processes on one store file: every event delivered once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-e2e-events-" });
  const target = receiver();
  const env = { SVC_KV: `${dir}/svc.kv`, SVC_EVENT_URL: target.url };
  const servers = [];
  let source: Awaited<ReturnType<typeof publisher>> | undefined;
  try {
    servers.push(await startServer(env));
    servers.push(await startServer(env));
    source = await publisher(env.SVC_KV, target.url);
    const published = messages(25, 40);
    // 20 publications 30 ms apart: the servers deliver while more arrive
    for (let start = 0; start < published.length; start += 50) {
      await source.events.publish(published.slice(start, start + 50));
      await delay(30);
    }
    await waitUntil(() => target.counts.size === published.length, 20_000, "every event");
    await delay(1_500); // room for a duplicate to show
    const twice = [...target.counts].filter(([, count]) => count > 1);
    assert.deepEqual(twice, [], "no event posted twice");
    assert.equal(target.idOf.size, published.length);
    assert.deepEqual(target.changedIds, []);
    assertOrderPerUser(target.order);
    assert.equal((await source.events.deliveries()).pending, 0);
  } finally {
    await source?.close();
    for (const server of servers) {
      const status = await server.stop();
      assert.equal(status.code, 0, server.stderrLines.join("\n"));
    }
    await target.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a server killed while 1,000 events are pending: after a restart all arrive", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-e2e-events-" });
  // slow at first, so that the kill lands mid-delivery, as soon as 200 events have come
  const reached200 = Promise.withResolvers<void>();
  const target = receiver({
    delayMs: 50,
    onPost: (distinct) => distinct === 200 && reached200.resolve(),
  });
  const env = { SVC_KV: `${dir}/svc.kv`, SVC_EVENT_URL: target.url };
  let source: Awaited<ReturnType<typeof publisher>> | undefined;
  let first: Awaited<ReturnType<typeof startServer>> | undefined;
  let restarted: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    source = await publisher(env.SVC_KV, target.url);
    const published = messages(50, 20);
    await source.events.publish(published);
    assert.equal((await source.events.deliveries()).pending, 1_000);

    first = await startServer(env);
    await reached200.promise;
    const status = await first.kill();
    assert.equal(status.signal, "SIGKILL");
    const beforeRestart = target.counts.size;
    assert.ok(beforeRestart >= 200 && beforeRestart < 1_000, `${beforeRestart} before the kill`);

    target.delayMs = 0;
    restarted = await startServer(env);
    // the dead process's lease lapses within LEASE_MS, then the restarted one delivers the rest
    await waitUntil(() => target.counts.size === published.length, 30_000, "all 1,000 events");
    const expected = new Set(
      published.map((event) =>
        (event.message as { ctiMessage: { uniqueId: string } }).ctiMessage.uniqueId
      ),
    );
    assert.deepEqual(new Set(target.idOf.keys()), expected, "none lost");
    assert.deepEqual(target.changedIds, [], "a redelivered event keeps its id");
    const outbox = source.events;
    await waitUntil(async () => (await outbox.deliveries()).pending === 0, 5_000, "no pending");
  } finally {
    await first?.kill();
    if (restarted) {
      const status = await restarted.stop();
      assert.equal(status.code, 0, restarted.stderrLines.join("\n"));
    }
    await source?.close();
    await target.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The event export (decisions §7) in process, in virtual time: the app's own `EventExport` posts to
 * a real `Deno.serve` receiver on 127.0.0.1; `clock.advance` runs the delivery passes.
 */
import assert from "node:assert/strict";
import { ManualClock } from "../../lib/clock.ts";
import {
  EventExport,
  GIVE_UP_AFTER_MS,
  LEASE_MS,
  POST_TIMEOUT_MS,
  RETRY_DELAYS_MS,
} from "../../lib/events/export.ts";
import {
  type EventMessage,
  type ExportedMessage,
  isUserEvent,
  platformMessage,
  userConfigMessage,
} from "../../lib/events/messages.ts";
import { EventIds, takeLease } from "../../lib/events/outbox.ts";
import { createLogger } from "../../lib/log.ts";
import type { AgentStateEvent, PhoneEvent } from "../../lib/platform/port.ts";
import { Store } from "../../lib/store/store.ts";
import { setDnd } from "../../lib/user_services.ts";
import { closedPort, confd, ctiUser, setup, type TestContext } from "../helpers.ts";

interface Received {
  id: string;
  body: string;
  headers: Headers;
  /** Virtual time of arrival. */
  at: number;
}

/** A real HTTP receiver; `answer` picks the status of each post (200 by default). */
function receiver(
  clock: { now(): number },
  answer: (post: Received, nth: number) => number = () => 200,
  port = 0,
) {
  const received: Received[] = [];
  const server = Deno.serve({ port, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const post: Received = {
      id: request.headers.get("x-svc-event-id") ?? "",
      body: await request.text(),
      headers: request.headers,
      at: clock.now(),
    };
    received.push(post);
    return new Response(null, { status: answer(post, received.length) });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/example/dropbox/`,
    received,
    /** The events received, parsed. */
    events: () => received.map((post) => JSON.parse(post.body) as EventMessage),
    close: () => server.shutdown(),
  };
}

let uniqueId = 0;

function phoneEvent(username: string, eventType: PhoneEvent["eventType"]): PhoneEvent {
  const id = `1767225600.${++uniqueId}`;
  return {
    kind: "phone",
    userId: 7,
    username,
    eventType,
    DN: "1001",
    otherDN: "0612345678",
    otherDName: "",
    linkedId: "1767225600.1",
    uniqueId: id,
    userData: { PLATFORM_USERID: "7", USR_campaign: "spring" },
    recordState: "inactive",
  };
}

function agentEvent(username: string): AgentStateEvent {
  return {
    kind: "agent",
    agentId: 3,
    agentNumber: "2000",
    name: "AgentReady",
    phoneNb: "1001",
    username,
    queues: [1],
    monitorState: "DISABLED",
  };
}

/** `n` phone events of `username`, distinguishable by their uniqueId. */
function phoneEvents(username: string, n: number): EventMessage[] {
  return Array.from({ length: n }, () => platformMessage(phoneEvent(username, "EventRinging")));
}

async function hmacHex(secret: string, body: string): Promise<string> {
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(body));
  return Array.from(new Uint8Array(mac), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** Runs `fn` with the app set up to post to a fresh receiver; stops both afterwards. */
async function withExport(
  fn: (ctx: TestContext, target: ReturnType<typeof receiver>) => Promise<void>,
  options: {
    answer?: (post: Received, nth: number) => number;
    env?: Record<string, string>;
  } = {},
) {
  let ctx: TestContext | undefined;
  const target = receiver({ now: () => ctx?.clock.now() ?? 0 }, options.answer);
  try {
    ctx = await setup({ SVC_EVENT_URL: target.url, ...options.env });
    await fn(ctx, target);
  } finally {
    await ctx?.services.events.close();
    await target.close();
  }
}

/** The messages of `events` for one user, in the order received. */
const of = (events: EventMessage[], username: string) =>
  events.filter((event) => event.username === username);

Deno.test("events are posted in order per user with the exact body and headers", async () => {
  const secret = "s3cret-for-hmac";
  await withExport(async (ctx, target) => {
    const alice = await ctiUser(ctx, "alice");
    const events = ctx.services.events;
    events.start();
    const published: EventMessage[] = [];
    const publish = async (messages: EventMessage[]) => {
      published.push(...messages);
      await events.publish(messages);
    };
    await publish([userConfigMessage(alice)]);
    await publish([platformMessage(phoneEvent("alice", "EventDialing")), ...phoneEvents("bob", 3)]);
    await publish([platformMessage(agentEvent("alice")), ...phoneEvents("alice", 5)]);
    await publish([
      ...phoneEvents("bob", 2),
      platformMessage(phoneEvent("alice", "EventReleased")),
    ]);
    await ctx.clock.advance(0);

    assert.equal(target.received.length, published.length);
    for (const username of ["alice", "bob"]) {
      assert.deepEqual(of(target.events(), username), of(published, username), username);
    }
    const ids = target.received.map((post) => post.id);
    assert.equal(new Set(ids).size, ids.length, "one id per event");
    for (const post of target.received) {
      assert.match(post.id, /^\d{13}-\d{6}-[a-z0-9]{4}$/);
      assert.equal(post.headers.get("content-type"), "application/json");
      assert.equal(
        post.headers.get("x-svc-signature"),
        `sha256=${await hmacHex(secret, post.body)}`,
      );
    }
    // ids sort in publish order: per user, the posts come in id order
    for (const username of ["alice", "bob"]) {
      const userIds = target.received.filter((post) => JSON.parse(post.body).username === username)
        .map((post) => post.id);
      assert.deepEqual(userIds, [...userIds].sort());
    }
    // the body is the message as published, with nothing added (users are posted in parallel:
    // alice's first post, not the first post)
    const alicesFirst = target.received.find((post) => JSON.parse(post.body).username === "alice");
    assert.deepEqual(JSON.parse(alicesFirst!.body), {
      username: "alice",
      message: {
        msgType: "UserConfigUpdate",
        userId: alice.id,
        dndEnabled: false,
        uncFwdEnabled: false,
        uncFwdDestination: "",
        naFwdEnabled: false,
        naFwdDestination: "",
        busyFwdEnabled: false,
        busyFwdDestination: "",
      },
    });
    const dialing = of(target.events(), "alice")[1]!;
    assert.deepEqual(Object.keys(dialing.message), ["msgType", "ctiMessage"]);
    assert.deepEqual(
      (dialing.message as { ctiMessage: object }).ctiMessage,
      {
        eventType: "EventDialing",
        DN: "1001",
        otherDN: "0612345678",
        otherDName: "",
        linkedId: "1767225600.1",
        uniqueId: (dialing.message as { ctiMessage: { uniqueId: string } }).ctiMessage.uniqueId,
        userData: { PLATFORM_USERID: "7", USR_campaign: "spring" },
        recordState: "inactive",
      },
    );
    assert.deepEqual(await events.deliveries(), {
      pending: 0,
      deadLetters: 0,
      lastError: null,
      deadLetterEvents: [],
    });
  }, { env: { SVC_EVENT_SECRET: secret } });
});

Deno.test("without a secret no signature header is sent", async () => {
  await withExport(async (ctx, target) => {
    ctx.services.events.start();
    await ctx.services.events.publish(phoneEvents("alice", 1));
    await ctx.clock.advance(0);
    assert.equal(target.received.length, 1);
    assert.equal(target.received[0]!.headers.get("x-svc-signature"), null);
  });
});

Deno.test("a failed post is retried with the same id at 1 s, 5 s, 30 s after each attempt", async () => {
  // 500 three times, then 200
  await withExport(async (ctx, target) => {
    const events = ctx.services.events;
    events.start();
    const t0 = ctx.clock.now();
    await events.publish(phoneEvents("alice", 1));
    await ctx.clock.advance(0);
    assert.equal(target.received.length, 1);
    await ctx.clock.advance(999);
    assert.equal(target.received.length, 1, "not before 1 s");
    await ctx.clock.advance(1);
    assert.equal(target.received.length, 2);
    await ctx.clock.advance(5_000 + 30_000);
    assert.equal(target.received.length, 4);
    assert.deepEqual(
      target.received.map((post) => post.at - t0),
      [0, 1_000, 6_000, 36_000],
    );
    assert.equal(new Set(target.received.map((post) => post.id)).size, 1, "the same id each time");
    assert.equal(new Set(target.received.map((post) => post.body)).size, 1, "the same body");
    await ctx.clock.advance(600_000);
    assert.equal(target.received.length, 4, "delivered: never posted again");

    const deliveries = await events.deliveries();
    assert.equal(deliveries.pending, 0);
    assert.equal(deliveries.lastError?.message, `${target.received[0]!.id}: HTTP 500`);
    assert.equal(deliveries.lastError?.at, new Date(t0 + 6_000).toISOString());
    const warnings = ctx.logs.map((line) => JSON.parse(line))
      .filter((entry) => entry.msg === "event delivery failed");
    assert.deepEqual(warnings.map((entry) => [entry.level, entry.attempts, entry.retryInMs]), [
      ["warn", 1, 1_000],
      ["warn", 2, 5_000],
      ["warn", 3, 30_000],
    ]);
  }, { answer: (_post, nth) => nth <= 3 ? 500 : 200 });
});

Deno.test("the backoff goes 1 s, 5 s, 30 s, 2 min, 10 min, then every 10 min", async () => {
  assert.deepEqual(RETRY_DELAYS_MS, [1_000, 5_000, 30_000, 120_000, 600_000]);
  await withExport(async (ctx, target) => {
    ctx.services.events.start();
    const t0 = ctx.clock.now();
    await ctx.services.events.publish(phoneEvents("alice", 1));
    await ctx.clock.advance(3_600_000);
    const gaps = target.received.map((post, i) =>
      post.at - (i === 0 ? t0 : target.received[i - 1]!.at)
    );
    assert.deepEqual(gaps.slice(0, 8), [
      0,
      1_000,
      5_000,
      30_000,
      120_000,
      600_000,
      600_000,
      600_000,
    ]);
  }, { answer: () => 503 });
});

Deno.test("a user's failing event holds up that user's later events only", async () => {
  let aliceDown = true;
  await withExport(async (ctx, target) => {
    const events = ctx.services.events;
    events.start();
    const alice = phoneEvents("alice", 3);
    const bob = phoneEvents("bob", 3);
    await events.publish([alice[0]!, bob[0]!, alice[1]!]);
    await events.publish([bob[1]!, alice[2]!, bob[2]!]);
    await ctx.clock.advance(0);
    assert.deepEqual(of(target.events(), "bob"), bob, "bob's events all went out");
    assert.deepEqual(of(target.events(), "alice"), [alice[0]], "alice's first was tried, no more");
    assert.equal((await events.deliveries()).pending, 3);

    aliceDown = false;
    await ctx.clock.advance(1_000);
    assert.deepEqual(of(target.events(), "alice"), [alice[0], ...alice], "retried, then in order");
    assert.equal((await events.deliveries()).pending, 0);
  }, { answer: (post) => aliceDown && JSON.parse(post.body).username === "alice" ? 500 : 200 });
});

Deno.test("events published while a user waits for a retry queue up behind it", async () => {
  await withExport(async (ctx, target) => {
    const events = ctx.services.events;
    events.start();
    const [first, second, third] = phoneEvents("alice", 3);
    await events.publish([first!]);
    await ctx.clock.advance(0); // fails once, retried in 1 s
    await events.publish([second!]);
    await ctx.clock.advance(0);
    await events.publish([third!]);
    await ctx.clock.advance(500);
    assert.equal(target.received.length, 1, "nothing overtakes the event waiting for its retry");
    await ctx.clock.advance(500);
    assert.deepEqual(target.events(), [first, first, second, third]);
  }, { answer: (_post, nth) => nth === 1 ? 500 : 200 });
});

Deno.test("a receiver down for more than 24 h: the events end in the dead letters", async () => {
  const port = await closedPort();
  const ctx = await setup({ SVC_EVENT_URL: `http://127.0.0.1:${port}/dropbox/` });
  try {
    const events = ctx.services.events;
    events.start();
    const t0 = ctx.clock.now();
    await events.publish([...phoneEvents("alice", 2), ...phoneEvents("bob", 1)]);
    await ctx.clock.advance(GIVE_UP_AFTER_MS - 1);
    let deliveries = await events.deliveries();
    assert.equal(deliveries.pending, 3, "still retried just before 24 h");
    assert.equal(deliveries.deadLetters, 0);
    await ctx.clock.advance(600_000);
    deliveries = await events.deliveries();
    assert.equal(deliveries.pending, 0);
    assert.equal(deliveries.deadLetters, 3);
    const [first, second, third] = deliveries.deadLetterEvents;
    assert.deepEqual(
      [first, second, third].map((dead) => [dead!.username, dead!.createdAt]),
      [
        ["alice", new Date(t0).toISOString()],
        ["alice", new Date(t0).toISOString()],
        ["bob", new Date(t0).toISOString()],
      ],
    );
    // alice's first event was tried all along (at 0, 1, 6, 36, 156, 756 s, then every 10 min
    // until 24 h had passed); her second, never tried, went with it
    assert.equal(first!.attempts, 149);
    assert.equal(second!.attempts, 0);
    assert.match(first!.lastError ?? "", /Connection refused/);
    assert.equal(second!.lastError, first!.lastError);
    assert.equal(first!.message.msgType, "PhoneEvent");
    assert.match(deliveries.lastError?.message ?? "", /Connection refused/);
    assert.ok(ctx.logs.some((line) => JSON.parse(line).msg === "event delivery failed, given up"));
  } finally {
    await ctx.services.events.close();
  }
});

Deno.test("without SVC_EVENT_URL nothing is posted; the event log still keeps the events", async () => {
  const ctx = await setup();
  const events = ctx.services.events;
  events.start();
  const messages = [...phoneEvents("alice", 2), platformMessage(agentEvent("bob"))];
  await events.publish(messages);
  await ctx.clock.advance(60_000);
  assert.equal(ctx.clock.pending, 0, "no timer: nothing runs in the background");
  assert.deepEqual(await events.deliverDue(), { delivered: 0, failed: 0, deadLettered: 0 });
  assert.deepEqual(await events.deliveries(), {
    pending: 0,
    deadLetters: 0,
    lastError: null,
    deadLetterEvents: [],
  });
  assert.deepEqual(await events.retained(), messages);
  await events.close();
});

Deno.test("the event log keeps events for the retention, oldest first", async () => {
  await withExport(async (ctx) => {
    const events = ctx.services.events;
    const early = phoneEvents("alice", 2);
    await events.publish(early);
    await ctx.clock.advance(60_000);
    const late = phoneEvents("bob", 1);
    await events.publish(late);
    assert.deepEqual(await events.retained(), [...early, ...late]);
    await ctx.clock.advance(60_001);
    assert.deepEqual(await events.retained(), late, "older than 120 s: gone");
  }, { env: { SVC_EVENT_RETENTION: "120" } });
});

Deno.test("a large publication is written in chunks, all durable before publish resolves", async () => {
  await withExport(async (ctx, target) => {
    const messages = phoneEvents("alice", 1_200);
    await ctx.services.events.publish(messages);
    assert.equal((await ctx.services.events.deliveries()).pending, 1_200);
    assert.equal((await ctx.services.events.retained()).length, 1_200);
    const report = await ctx.services.events.deliverDue();
    assert.deepEqual(report, { delivered: 1_200, failed: 0, deadLettered: 0 });
    assert.deepEqual(target.events(), messages);
  });
});

Deno.test("a pass waits for the lease another process holds", async () => {
  await withExport(async (ctx, target) => {
    const events = ctx.services.events;
    await events.publish(phoneEvents("alice", 1));
    const taken = await takeLease(ctx.services.store, "another process", ctx.clock.now(), LEASE_MS);
    assert.ok(taken.held);
    assert.deepEqual(await events.deliverDue(), { delivered: 0, failed: 0, deadLettered: 0 });
    assert.equal(target.received.length, 0);
    await ctx.clock.advance(LEASE_MS); // it was never renewed: it lapses
    assert.deepEqual(await events.deliverDue(), { delivered: 1, failed: 0, deadLettered: 0 });
    assert.equal(target.received.length, 1);
  });
});

Deno.test("a store failure in the background is logged, never thrown", async () => {
  await withExport(async (ctx) => {
    const events = ctx.services.events;
    events.start();
    await events.publish(phoneEvents("alice", 1));
    ctx.services.store.close();
    await ctx.clock.advance(0);
    assert.deepEqual(await events.deliverDue(), { delivered: 0, failed: 0, deadLettered: 0 });
    const failures = ctx.logs.map((line) => JSON.parse(line))
      .filter((entry) => entry.msg === "event delivery pass failed");
    assert.ok(failures.length >= 1);
    assert.equal(failures[0].level, "warn");
    await ctx.clock.advance(10_000); // retried later, still failing quietly
  });
});

Deno.test("event ids sort in publish order, even when the clock steps back", () => {
  let now = 1_767_225_600_000;
  const ids = new EventIds(() => now);
  const made = [ids.next().id, ids.next().id];
  now -= 5_000;
  made.push(ids.next().id);
  now += 10_000;
  made.push(ids.next().id);
  assert.deepEqual([...made].sort(), made);
  assert.equal(new Set(made).size, made.length);
  assert.match(made[0]!, /^1767225600000-000000-[a-z0-9]{4}$/);
  assert.match(made[2]!, /^1767225600000-000002-/);
});

Deno.test("an id drawn above another sorts after it, and later ids after both", () => {
  const now = 1_767_225_600_000;
  const ids = new EventIds(() => now);
  const ahead = `${now + 7}-000004-zzzz`;
  const sameMs = `${now + 7}-000009-0000`;
  const behind = `${now - 5_000}-000003-zzzz`;
  const made = [ids.next().id, ids.next(ahead).id, ids.next(sameMs).id, ids.next(behind).id];
  made.push(ids.next().id);
  assert.match(made[1]!, new RegExp(`^${now + 7}-000005-`), "just above an id ahead in time");
  assert.match(made[2]!, new RegExp(`^${now + 7}-000010-`), "above a larger counter of that ms");
  assert.match(made[3]!, new RegExp(`^${now + 7}-000011-`), "an older id changes nothing");
  assert.deepEqual([...made].sort(), made);
  assert.ok(made[1]! > ahead && made[2]! > sameMs);
});

Deno.test("a user changed through two processes: the events keep the order of the changes", async () => {
  // B's clock is 10 s behind A's: without the user's last event id, B's event would sort before
  // the one A published for the change B's change came after
  await withExport(async (ctx, target) => {
    const alice = await ctiUser(ctx, "alice");
    const { store, platform } = ctx.services;
    const b = new EventExport({
      store,
      clock: new ManualClock(ctx.clock.now() - 10_000),
      logger: createLogger("error"),
      url: target.url,
      secret: null,
      retentionMs: 3_600_000,
    });
    try {
      const viaA = { store, events: ctx.services.events, platform };
      const viaB = { store, events: b, platform };
      for (const [deps, enabled] of [[viaA, true], [viaB, false], [viaA, true], [viaB, false]]) {
        await setDnd(deps as typeof viaA, alice.id, enabled as boolean);
      }
      const dnd = (events: ExportedMessage[]) =>
        of(events.filter(isUserEvent), "alice").map((event) =>
          (event.message as { dndEnabled: boolean }).dndEnabled
        );
      assert.deepEqual(dnd(await ctx.services.events.retained()), [true, false, true, false]);
      await ctx.services.events.deliverDue();
      assert.deepEqual(dnd(target.events()), [true, false, true, false]);
      const api = await confd(ctx);
      const view = await (await api.get(`/users/${alice.id}`)).json();
      assert.equal(view.username, "alice");
      assert.equal("last_event_id" in view, false, "internal: never shown");
    } finally {
      await b.close();
    }
  });
});

Deno.test("an export that was never started delivers only when asked", async () => {
  const store = await Store.open(":memory:");
  const clock = new ManualClock();
  const target = receiver(clock);
  const events = new EventExport({
    store,
    clock,
    logger: createLogger("error"),
    url: target.url,
    secret: null,
    retentionMs: 3_600_000,
  });
  try {
    await events.publish(phoneEvents("carol", 3));
    await clock.advance(60_000);
    assert.equal(target.received.length, 0);
    assert.equal(clock.pending, 0);
    assert.deepEqual(await events.deliverDue(), { delivered: 3, failed: 0, deadLettered: 0 });
    assert.equal(target.received.length, 3);
  } finally {
    await events.close();
    await target.close();
    store.close();
  }
});

Deno.test("two exports on one store (two processes) keep each user's order", async () => {
  // B's clock is 10 s behind A's, so B's event sorts before what A has read already. B's pass fails
  // alice's first event; A, whose last pass saw nothing of alice, must not post her second one
  // before it: B's use of the lease makes A read the whole outbox again, not only the newest ids
  const store = await Store.open(":memory:");
  const clockA = new ManualClock();
  const clockB = new ManualClock(clockA.now() - 10_000);
  let aliceDown = true;
  const target = receiver(clockA, (post) => {
    return aliceDown && JSON.parse(post.body).username === "alice" ? 500 : 200;
  });
  const exportWith = (clock: ManualClock) =>
    new EventExport({
      store,
      clock,
      logger: createLogger("error"),
      url: target.url,
      secret: null,
      retentionMs: 0,
    });
  const a = exportWith(clockA);
  const b = exportWith(clockB);
  try {
    a.start();
    const [bob] = phoneEvents("bob", 1);
    await a.publish([bob!]);
    await clockA.advance(0);
    const [first, second] = phoneEvents("alice", 2);
    await b.publish([first!]);
    assert.deepEqual(await b.deliverDue(), { delivered: 0, failed: 1, deadLettered: 0 });
    await a.publish([second!]);
    await clockA.advance(0);
    assert.deepEqual(
      target.events(),
      [bob, first, first],
      "A tried the first again, not the second",
    );
    aliceDown = false;
    await clockA.advance(5_000); // its second failure: retried 5 s later
    assert.deepEqual(target.events(), [bob, first, first, first, second]);
  } finally {
    await a.close();
    await b.close();
    await target.close();
    store.close();
  }
});

Deno.test("publications made while a write runs share the next commit, in their order", async () => {
  await withExport(async (ctx, target) => {
    const batches = Array.from({ length: 40 }, (_, n) => phoneEvents(`user${n % 4}`, 3));
    // all at once: the first write runs alone, the 39 others wait and go together
    await Promise.all(batches.map((messages) => ctx.services.events.publish(messages)));
    const logged = await ctx.services.events.retained();
    assert.deepEqual(logged, batches.flat(), "ids in the order publish was called");
    const report = await ctx.services.events.deliverDue();
    assert.deepEqual(report, { delivered: 120, failed: 0, deadLettered: 0 });
    for (let n = 0; n < 4; n++) {
      assert.deepEqual(of(target.events(), `user${n}`), of(batches.flat(), `user${n}`));
    }
  });
});

Deno.test("staged events are durable with the operation that carries them, or not at all", async () => {
  await withExport(async (ctx) => {
    const { store, events } = ctx.services;
    const [first, second] = [phoneEvents("alice", 1), phoneEvents("alice", 1)];
    const lost = events.stage(first);
    // a check that fails: the operation, and the events in it, are not written
    const failed = await store.commit((op) => {
      lost.add(op);
      return op.check({ key: ["elsewhere"], versionstamp: "00000000000000010000" });
    });
    assert.equal(failed.ok, false);
    const kept = events.stage(second);
    const written = await store.commit((op) => {
      kept.add(op);
      return op.set(["elsewhere"], true);
    });
    assert.equal(written.ok, true);
    events.committed(kept);
    assert.deepEqual(await events.retained(), second);
    assert.equal((await events.deliveries()).pending, 1);
    assert.ok(kept.entries[0]!.id > lost.entries[0]!.id, "a new id for each attempt");
  });
});

Deno.test("a receiver that never answers: the post ends after the timeout, no timer left", async () => {
  // (real time: the post is real I/O; the test's sanitizers check that no timer is left behind)
  const release = Promise.withResolvers<void>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async () => {
    await release.promise;
    return new Response(null, { status: 200 });
  });
  const ctx = await setup({
    SVC_EVENT_URL: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/example/dropbox/`,
  });
  try {
    const { events } = ctx.services;
    await events.publish(phoneEvents("alice", 1));
    const report = await events.deliverDue();
    assert.deepEqual(report, { delivered: 0, failed: 1, deadLettered: 0 });
    const deliveries = await events.deliveries();
    assert.equal(deliveries.pending, 1);
    assert.match(
      deliveries.lastError?.message ?? "",
      new RegExp(`no answer within ${POST_TIMEOUT_MS / 1000} s$`),
    );
  } finally {
    release.resolve();
    await ctx.services.events.close();
    await server.shutdown();
  }
});

Deno.test("an event published while a pass posts goes out with that pass's loop", async () => {
  let ctx: TestContext | undefined;
  const published: Promise<void>[] = [];
  const target = receiver({ now: () => ctx?.clock.now() ?? 0 }, (_post, nth) => {
    // the first post publishes one more event while the pass runs
    if (nth === 1) published.push(ctx!.services.events.publish(phoneEvents("bob", 1)));
    return 200;
  });
  try {
    ctx = await setup({ SVC_EVENT_URL: target.url });
    const { events } = ctx.services;
    events.start();
    await ctx.clock.advance(0);
    await events.publish(phoneEvents("alice", 1));
    await ctx.clock.advance(0);
    await Promise.all(published);
    await ctx.clock.advance(0);
    assert.deepEqual(target.events().map((event) => event.username), ["alice", "bob"]);
    assert.equal((await events.deliveries()).pending, 0);
  } finally {
    await ctx?.services.events.close();
    await target.close();
  }
});

/**
 * `GET /svc/api/2.0/events/deliveries` and `POST /svc/api/2.0/events/deadletters/retry`
 * (decisions §7), against a real receiver that is down for more than 24 h of virtual time.
 */
import assert from "node:assert/strict";
import { GIVE_UP_AFTER_MS } from "../../lib/events/export.ts";
import { type EventMessage, platformMessage } from "../../lib/events/messages.ts";
import {
  bearer,
  closedPort,
  expectForbidden,
  login,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

const API = "/svc/api/2.0";
const READ = "svc.rest.events.deliveries.read";
const RETRY = "svc.rest.events.deadletters.retry.create";

/** A receiver on `port` answering 200 and keeping every event it gets. */
function receiverOn(port: number) {
  const received: { id: string; event: EventMessage }[] = [];
  const server = Deno.serve({ port, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    received.push({ id: request.headers.get("x-svc-event-id") ?? "", event: await request.json() });
    return new Response(null, { status: 204 });
  });
  return { received, close: () => server.shutdown() };
}

let serial = 0;

function phoneMessage(username: string): EventMessage {
  return platformMessage({
    kind: "phone",
    userId: 1,
    username,
    eventType: "EventRinging",
    DN: "1001",
    otherDN: "1002",
    otherDName: "",
    linkedId: "1767225600.1",
    uniqueId: `1767225600.${++serial}`,
    userData: { PLATFORM_USERID: "1" },
    recordState: "inactive",
  });
}

/** A web service user's token holding `acls`, signed directly (valid from the clock's now). */
async function tokenWith(ctx: TestContext, acls: string[]): Promise<Record<string, string>> {
  const identity = { userId: "0", login: "events-check", userType: "webservice" as const, acls };
  return bearer((await ctx.services.tokens.issue(identity)).token);
}

Deno.test("each route refuses a token without its ACL", async (t) => {
  const ctx = await setup();
  const narrow = await webServiceUser(ctx, ["svc.rest.events.deliveries.read.other", "confd.#"]);
  const other = bearer(await login(ctx, "webservice", narrow.login));
  const cases: [string, string, string][] = [
    ["GET", "/events/deliveries", READ],
    ["POST", "/events/deadletters/retry", RETRY],
  ];
  for (const [method, path, acl] of cases) {
    await t.step(`${method} ${path} needs ${acl}`, async () => {
      await expectForbidden(await ctx.app.request(API + path, { method, headers: other }), acl);
      const allowed = await ctx.app.request(API + path, {
        method,
        headers: await tokenWith(ctx, [acl]),
      });
      assert.equal(allowed.status, 200);
      await allowed.body?.cancel();
    });
  }
  await t.step("without a token: 400", async () => {
    const response = await ctx.app.request(`${API}/events/deliveries`);
    assert.equal(response.status, 400);
    await response.body?.cancel();
  });
});

Deno.test("a receiver down for more than 24 h: dead letters shown, requeued, then delivered", async () => {
  const port = await closedPort();
  const ctx = await setup({ SVC_EVENT_URL: `http://127.0.0.1:${port}/dropbox/` });
  // a fresh token each time: a day of virtual time outlives any token
  const get = async () => {
    const headers = await tokenWith(ctx, [READ]);
    const response = await ctx.app.request(`${API}/events/deliveries`, { headers });
    assert.equal(response.status, 200);
    return await response.json();
  };
  const retry = async () => {
    const response = await ctx.app.request(`${API}/events/deadletters/retry`, {
      method: "POST",
      headers: await tokenWith(ctx, [RETRY]),
    });
    assert.equal(response.status, 200);
    return await response.json();
  };
  let receiver: ReturnType<typeof receiverOn> | undefined;
  try {
    const events = ctx.services.events;
    events.start();
    const t0 = ctx.clock.now();
    const published = [phoneMessage("alice"), phoneMessage("bob"), phoneMessage("alice")];
    await events.publish(published);
    await ctx.clock.advance(60_000);
    const pending = await get();
    assert.equal(pending.pending, 3);
    assert.equal(pending.deadLetters, 0);
    assert.match(pending.lastError.message, /Connection refused/);

    await ctx.clock.advance(GIVE_UP_AFTER_MS + 600_000); // tried every 10 min: one try after 24 h
    const dead = await get();
    assert.deepEqual(Object.keys(dead), [
      "pending",
      "deadLetters",
      "lastError",
      "deadLetterEvents",
    ]);
    assert.equal(dead.pending, 0);
    assert.equal(dead.deadLetters, 3);
    assert.deepEqual(Object.keys(dead.lastError), ["at", "message"]);
    assert.ok(Date.parse(dead.lastError.at) >= t0 + GIVE_UP_AFTER_MS);
    assert.deepEqual(
      dead.deadLetterEvents.map((
        entry: { username: string; createdAt: string; message: EventMessage["message"] },
      ) => ({ username: entry.username, message: entry.message })),
      published,
      "oldest first, each with its message",
    );
    const [first, second] = dead.deadLetterEvents;
    assert.deepEqual(Object.keys(first), [
      "id",
      "username",
      "createdAt",
      "attempts",
      "lastError",
      "message",
    ]);
    assert.equal(first.createdAt, new Date(t0).toISOString());
    assert.ok(first.attempts > 100);
    assert.match(first.lastError, /Connection refused/);
    assert.match(second.id, /^\d{13}-\d{6}-[a-z0-9]{4}$/);

    receiver = receiverOn(port);
    assert.deepEqual(await retry(), { requeued: 3 });
    await ctx.clock.advance(0);
    // in order per user (alice's two, bob's one go out in parallel)
    for (const username of ["alice", "bob"]) {
      assert.deepEqual(
        receiver.received.filter((post) => post.event.username === username),
        dead.deadLetterEvents
          .filter((entry: { username: string }) => entry.username === username)
          .map((entry: { id: string; username: string; message: unknown }) => ({
            id: entry.id, // the same id as before
            event: { username, message: entry.message },
          })),
      );
    }
    const after = await get();
    assert.equal(after.pending, 0);
    assert.equal(after.deadLetters, 0);
    assert.deepEqual(after.deadLetterEvents, []);
    assert.deepEqual(await retry(), { requeued: 0 });
  } finally {
    await ctx.services.events.close();
    await receiver?.close();
  }
});

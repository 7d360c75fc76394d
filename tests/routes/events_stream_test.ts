/**
 * `GET /svc/api/2.0/events/stream` (docs/cti.md): the events that go to `eventUrl`, live, as
 * Server-Sent Events through the real app; the `username` filter; a resume with `Last-Event-ID`
 * gets what was published meanwhile, each event once; the ACL and a bad id.
 */
import assert from "node:assert/strict";
import {
  bearer,
  ctiUser,
  login,
  postJson,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

import { SseReader } from "../sse.ts";

const V2 = "/svc/api/2.0";

async function streamFixture(ctx: TestContext) {
  const ws = await webServiceUser(ctx, ["svc.rest.events.read", "svc.rest.dnd.#"]);
  const token = await login(ctx, "webservice", ws.login);
  const open = async (query = "", headers: Record<string, string> = {}) => {
    const response = await ctx.app.request(`${V2}/events/stream${query}`, {
      headers: { ...bearer(token), ...headers },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    return new SseReader(response);
  };
  const dnd = async (username: string, state: boolean) => {
    const response = await postJson(ctx, `${V2}/dnd/${username}`, { state }, bearer(token));
    assert.equal(response.status, 200);
  };
  return { token, open, dnd };
}

Deno.test("the stream sends each event with its id and type, live, filtered by username", async () => {
  const ctx = await setup();
  try {
    await ctiUser(ctx, "alice");
    await ctiUser(ctx, "bob");
    const { open, dnd } = await streamFixture(ctx);
    const all = await open();
    const onlyBob = await open("?username=bob");
    await dnd("alice", true);
    await dnd("bob", true);
    const [first, second] = await all.take(2);
    assert.equal(first!.event, "UserConfigUpdate");
    assert.equal(first!.data.username, "alice");
    assert.equal(first!.data.message.dndEnabled, true);
    assert.match(first!.id, /^\d{13}-\d{6}-[a-z0-9]{4}$/);
    assert.equal(second!.data.username, "bob");
    assert.ok(second!.id > first!.id);
    const [bobs] = await onlyBob.take(1);
    assert.equal(bobs!.data.username, "bob");
    assert.equal(bobs!.id, second!.id);
    await all.cancel();
    await onlyBob.cancel();
  } finally {
    ctx.services.store.close();
  }
});

Deno.test("Last-Event-ID: a reconnecting client gets what it missed, then live, each once", async () => {
  const ctx = await setup();
  try {
    await ctiUser(ctx, "alice");
    const { open, dnd } = await streamFixture(ctx);
    const first = await open();
    await dnd("alice", true);
    const [seen] = await first.take(1);
    await first.cancel();
    // missed while away
    await dnd("alice", false);
    await dnd("alice", true);
    const again = await open("", { "Last-Event-ID": seen!.id });
    const missed = await again.take(2);
    assert.deepEqual(missed.map((event) => event.data.message.dndEnabled), [false, true]);
    await dnd("alice", false);
    const [live] = (await again.take(3)).slice(2);
    assert.equal(live!.data.message.dndEnabled, false);
    const ids = again.events.map((event) => event.id);
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(ids.every((id) => id > seen!.id));
    await again.cancel();
    // the query form of the id, for clients that cannot set the header
    const byQuery = await open(`?lastEventId=${seen!.id}`);
    assert.equal((await byQuery.take(3)).length, 3);
    await byQuery.cancel();
  } finally {
    ctx.services.store.close();
  }
});

Deno.test("the stream needs svc.rest.events.read; a bad Last-Event-ID is a 400", async () => {
  const ctx = await setup();
  try {
    const other = await webServiceUser(ctx, ["svc.rest.dnd.#"]);
    const token = await login(ctx, "webservice", other.login);
    const refused = await ctx.app.request(`${V2}/events/stream`, { headers: bearer(token) });
    assert.equal(refused.status, 403);
    assert.equal((await refused.json()).error, "Forbidden");
    const { token: allowed } = await streamFixture(ctx);
    for (const bad of ["nope", "1".repeat(300), "0000000000001-000000-ABCD"]) {
      const response = await ctx.app.request(`${V2}/events/stream`, {
        headers: { ...bearer(allowed), "Last-Event-ID": bad },
      });
      assert.equal(response.status, 400);
      assert.equal((await response.json()).error, "BadRequest");
    }
    const cti = await ctiUser(ctx, "carol");
    const ctiToken = await login(ctx, "login", cti.username!);
    const forCti = await ctx.app.request(`${V2}/events/stream`, { headers: bearer(ctiToken) });
    assert.equal(forCti.status, 403);
    await forCti.body?.cancel();
  } finally {
    ctx.services.store.close();
  }
});

Deno.test("a client that reads nothing gets an overflow event and the end of its stream", async () => {
  const ctx = await setup({ SVC_CTI_SEND_BUFFER: "2048" });
  try {
    await ctiUser(ctx, "alice");
    const { open, dnd } = await streamFixture(ctx);
    const slow = await open();
    const reading = await open();
    const taken = reading.take(20); // a reader that keeps up gets them all
    for (let i = 0; i < 20; i++) await dnd("alice", i % 2 === 0);
    assert.equal((await taken).length, 20);
    await reading.cancel();
    const text = await new Response(slow.body).text(); // ends: the stream was closed
    assert.match(text, /event: overflow\n/);
    const sent = text.match(/^id: /gm)?.length ?? 0;
    assert.ok(sent > 0 && sent < 20, `${sent} events before the overflow`);
  } finally {
    ctx.services.store.close();
  }
});

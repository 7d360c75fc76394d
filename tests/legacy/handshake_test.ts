/**
 * The 1.0 handshake (decisions §7) reposts the retained events, oldest first, to a real receiver
 * (a `Deno.serve` on 127.0.0.1); delivery runs in virtual time (`clock.advance`).
 */
import assert from "node:assert/strict";
import type { EventMessage } from "../../lib/events/messages.ts";
import { expectOk, expectSuccess, legacySim } from "./fixtures.ts";

interface Post {
  id: string;
  event: EventMessage;
}

/** A real HTTP receiver of events, answering 200. */
function receiver() {
  const posts: Post[] = [];
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    async (request) => {
      posts.push({ id: request.headers.get("x-svc-event-id") ?? "", event: await request.json() });
      return new Response(null, { status: 200 });
    },
  );
  return {
    url: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/example/dropbox/`,
    posts,
    close: () => server.shutdown(),
  };
}

/** The events of `posts` for `username`, in the order received. */
const of = (posts: Post[], username: string) =>
  posts.filter((post) => post.event.username === username).map((post) => post.event);

Deno.test("handshake reposts the retained events, oldest first, to the event URL", async (t) => {
  const target = receiver();
  const f = await legacySim({ SVC_EVENT_URL: target.url, SVC_EVENT_RETENTION: "3600" });
  const { events } = f.ctx.services;
  try {
    events.start();
    const handshake = async (path = "/handshake/example.com/", body?: unknown) =>
      (await expectOk(await f.call("POST", path, body))) as { reposted: number };

    await t.step("events older than the retention are not reposted", async () => {
      await expectSuccess(await f.call("POST", "/dnd/d/bob/", { state: true }));
      await f.t.advance(0);
      assert.equal(target.posts.length, 1);
      await f.t.advance(3600_000 + 1);
    });

    const fresh: Post[] = [];
    await t.step("events of the last hour, delivered once", async () => {
      const before = target.posts.length;
      await expectSuccess(
        await f.call("POST", "/agentLogin/", { agentphonenumber: "1001", agentnumber: "8001" }),
      );
      await expectSuccess(await f.call("POST", "/togglePause/", { phoneNumber: "1001" }));
      await expectSuccess(await f.call("POST", "/dnd/d/bob/", { state: false }));
      await expectSuccess(
        await f.call("POST", "/uncForward/d/alice/", { state: true, destination: "1002" }),
      );
      await f.t.advance(0);
      fresh.push(...target.posts.slice(before));
      assert.deepEqual(
        fresh.map(({ event }) =>
          `${event.username} ${event.message.msgType} ${
            "name" in event.message ? event.message.name : ""
          }`.trim()
        ).sort(),
        [
          "alice AgentStateEvent AgentOnPause",
          "alice AgentStateEvent AgentReady",
          "alice UserConfigUpdate",
          "bob UserConfigUpdate",
        ],
      );
    });

    await t.step("the handshake reposts exactly those, in order per user, new ids", async () => {
      const before = target.posts.length;
      assert.deepEqual(await handshake(), { reposted: 4 });
      await f.t.advance(0);
      const reposted = target.posts.slice(before);
      assert.equal(reposted.length, 4);
      for (const username of ["alice", "bob"]) {
        assert.deepEqual(of(reposted, username), of(fresh, username), username);
      }
      // ids sort in publish order: the reposts were queued in the order first published
      const byId = (posts: Post[]) =>
        [...posts].sort((a, b) => a.id.localeCompare(b.id)).map((post) => post.event);
      assert.deepEqual(byId(reposted), byId(fresh));
      const oldIds = new Set(fresh.map((post) => post.id));
      assert.ok(reposted.every((post) => post.id !== "" && !oldIds.has(post.id)), "new ids");
      assert.equal((await events.retained()).length, 4, "a repost is not logged again");
    });

    await t.step("a second handshake (no slash, a body) reposts the same, not twice", async () => {
      const before = target.posts.length;
      assert.deepEqual(await handshake("/handshake/other", { any: "thing" }), { reposted: 4 });
      await f.t.advance(0);
      assert.equal(target.posts.length - before, 4);
      assert.equal((await events.retained()).length, 4);
    });
  } finally {
    await events.close();
    await target.close();
  }
});

Deno.test("handshake without SVC_EVENT_URL reposts nothing", async () => {
  const f = await legacySim();
  await expectSuccess(await f.call("POST", "/dnd/d/bob/", { state: true }));
  assert.equal((await f.ctx.services.events.retained()).length, 1, "the event log keeps it");
  assert.deepEqual(await expectOk(await f.call("POST", "/handshake/d/")), { reposted: 0 });
});

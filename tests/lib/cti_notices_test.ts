/**
 * CTI notices (lib/events/messages.ts `CtiNotice`): messages for CTI sockets only, through the
 * event log so that every process's sockets get them: to one user's sockets, or to every socket;
 * never in the outbox (not posted to `eventUrl`), nor among the retained events the 1.0 handshake
 * reposts.
 */
import assert from "node:assert/strict";
import { POLL_MS } from "../../lib/events/feed.ts";
import { login } from "../helpers.ts";
import { fixture, userWithLine } from "../routes/cti_fixtures.ts";

Deno.test("a notice reaches its user's sockets only; one to '' every socket; never exported", async () => {
  const f = await fixture({ SVC_EVENT_URL: "http://127.0.0.1:9/never-posted" });
  try {
    await userWithLine(f.api, "alice", "1001");
    await userWithLine(f.api, "bob", "1002");
    const alice = await f.open(await login(f.ctx, "login", "alice"));
    const bob = await f.open(await login(f.ctx, "login", "bob"));
    const { events } = f.ctx.services;

    await events.notify([{
      username: "alice",
      notice: true,
      message: { msgType: "Ping2", ctiMessage: { n: 1 } },
    }]);
    await events.notify([{
      username: "",
      notice: true,
      message: { msgType: "Ping2", ctiMessage: { n: 2 } },
    }]);
    assert.deepEqual((await alice.type("Ping2")).ctiMessage, { n: 1 });
    assert.deepEqual((await alice.type("Ping2")).ctiMessage, { n: 2 });
    assert.deepEqual((await bob.type("Ping2")).ctiMessage, { n: 2 });
    assert.equal(bob.messages.filter((m) => m.msgType === "Ping2").length, 1);

    assert.equal((await events.backlog(10)).pending, 0, "nothing in the outbox");
    assert.deepEqual(
      (await events.retained()).filter((event) => (event.message.msgType as string) === "Ping2"),
      [],
    );
  } finally {
    await f.close();
  }
});

Deno.test("a socket gets the notices written after it opened, not those another process wrote before", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-notices-" });
  const env = { SVC_KV: `${dir}/svc.kv` };
  const one = await fixture(env);
  const two = await fixture(env);
  const notice = (n: number) => ({
    username: "alice",
    notice: true as const,
    message: { msgType: "Ping2", ctiMessage: { n } },
  });
  try {
    await userWithLine(one.api, "alice", "1001");
    await one.ctx.services.events.notify([notice(1)]);
    // alice opens a socket on the other process a moment later: its feed starts by reading what
    // others wrote in the last seconds, the notice among it
    await two.ctx.clock.advance(100);
    const alice = await two.open(await login(two.ctx, "login", "alice"));
    await two.ctx.clock.advance(200);
    await one.ctx.clock.advance(300);
    await one.ctx.services.events.notify([notice(2)]);
    const polling = setInterval(() => two.ctx.clock.advance(POLL_MS), 20);
    try {
      assert.deepEqual((await alice.type("Ping2")).ctiMessage, { n: 2 });
    } finally {
      clearInterval(polling);
    }
    assert.deepEqual(
      alice.messages.filter((m) => m.msgType === "Ping2").map((m) => m.ctiMessage),
      [{ n: 2 }],
    );
  } finally {
    await one.close();
    await two.close();
    await Deno.remove(dir, { recursive: true });
  }
});

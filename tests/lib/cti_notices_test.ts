/**
 * CTI notices (lib/events/messages.ts `CtiNotice`): messages for CTI sockets only, through the
 * event log so that every process's sockets get them: to one user's sockets, or to every socket;
 * never in the outbox (not posted to `eventUrl`), nor among the retained events the 1.0 handshake
 * reposts.
 */
import assert from "node:assert/strict";
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

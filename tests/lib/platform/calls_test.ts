/**
 * Scenario tests of the simulated PBX in virtual time: calls between users, callee features,
 * the outside network, hold, and the originate leg (docs/platform.md).
 */
import assert from "node:assert/strict";
import { PlatformRefusal } from "../../../lib/platform/port.ts";
import { extensions } from "../../../lib/store/extensions.ts";
import { lines } from "../../../lib/store/lines.ts";
import { transact } from "../../../lib/store/records.ts";
import { createUser } from "../../../lib/store/users.ts";
import {
  assertPhoneEvents,
  callEnds,
  changeUser,
  history,
  phoneEvents,
  phoneUser,
  simSetup,
  withForward,
} from "./fixtures.ts";

/** alice 1001, bob 1002, carol 1003; every phone answers by hand unless a test says otherwise. */
async function threeUsers(env: Record<string, string> = {}) {
  const t = await simSetup(env);
  const alice = await phoneUser(t, "alice", "1001");
  const bob = await phoneUser(t, "bob", "1002");
  const carol = await phoneUser(t, "carol", "1003");
  for (const extension of ["1001", "1002", "1003"]) {
    await t.sim.setPolicy(extension, { policy: "manual" });
  }
  return { t, alice, bob, carol, users: [alice, bob, carol] };
}

Deno.test("internal call answered, then hung up by the callee", async () => {
  const { t, alice, bob, users } = await threeUsers();
  const start = t.ctx.clock.now();
  const { linkedId } = await t.sim.dialNumber(alice, "1002", { crm: "42", USR_ticket: "7" });
  const usr = { USR_crm: "42", USR_ticket: "7" };

  // the caller's own phone rings first, without any event
  assert.deepEqual(t.take(), []);
  assert.deepEqual(t.sim.calls(), [{
    linkedId,
    legs: [{ uniqueId: linkedId, extension: "1001", state: "ringing" }],
  }]);

  await t.advance(2000);
  await t.sim.act("1001", "answer");
  const dialing = t.take();
  await t.advance(3000);
  await t.sim.act("1002", "answer");
  const established = t.take();
  await t.advance(60_000);
  await t.sim.act("1002", "hangup");
  const released = t.take();

  assertPhoneEvents(
    [...dialing, ...established, ...released],
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["bob", "EventRinging", "1002", "1001", "B"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["bob", "EventEstablished", "1002", "1001", "B"],
      ["alice", "EventReleased", "1001", "1002", "A"],
      ["bob", "EventReleased", "1002", "1001", "B"],
    ],
    { users, linkedId, firstLeg: "A", usr },
  );
  assert.equal(phoneEvents(dialing).length, 2);
  assert.equal(phoneEvents(established).length, 2);
  assert.deepEqual(t.sim.calls(), []);

  const record = {
    id: linkedId,
    startMs: start,
    answeredMs: start + 5000,
    endMs: start + 65_000,
    srcUsername: "alice",
    dstUsername: "bob",
    srcNum: "1001",
    dstNum: "1002",
  };
  // every event has an id of its own (the listeners write each id once)
  const ids = released.map((event) => event.id);
  assert.ok(ids.every((id) => typeof id === "string") && new Set(ids).size === ids.length);
  assert.deepEqual(callEnds(released).map(({ id: _, ...event }) => event), [{
    kind: "call_ended",
    linkedId,
    records: [
      { ...record, userId: alice.id, status: "emitted" },
      { ...record, userId: bob.id, status: "answered" },
    ],
  }]);
  assert.deepEqual(await history(t, alice), [{ ...record, userId: alice.id, status: "emitted" }]);
  assert.deepEqual(await history(t, bob), [{ ...record, userId: bob.id, status: "answered" }]);
});

Deno.test("phones answering by themselves: ring, answer, talk, hang up (the demo)", async () => {
  const t = await simSetup({ SVC_SIM_ANSWER_MS: "1000", SVC_SIM_TALK_MS: "5000" });
  const alice = await phoneUser(t, "alice", "1001");
  const bob = await phoneUser(t, "bob", "1002");
  const start = t.ctx.clock.now();
  const { linkedId } = await t.sim.dialUser(alice, bob, {});
  await t.advance(1000);
  assert.deepEqual(phoneEvents(t.events).map((e) => e.eventType), [
    "EventDialing",
    "EventRinging",
  ]);
  await t.advance(1000);
  await t.advance(5000);
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["bob", "EventRinging", "1002", "1001", "B"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["bob", "EventEstablished", "1002", "1001", "B"],
      ["alice", "EventReleased", "1001", "1002", "A"],
      ["bob", "EventReleased", "1002", "1001", "B"],
    ],
    { users: [alice, bob], linkedId, firstLeg: "A" },
  );
  const [emitted] = await history(t, alice);
  assert.equal(emitted?.answeredMs, start + 2000);
  assert.equal(emitted?.endMs, start + 7000);
  assert.equal(t.ctx.clock.pending, 0, "no timer left behind");
});

Deno.test("callee with DND: the caller gets EventFailure; the callee's phone never rings", async () => {
  const { t, alice, bob, users } = await threeUsers();
  // through the configuration daemon, as an administrator would
  const dnd = await t.api.put(`/users/${bob.id}/services/dnd`, { enabled: true });
  assert.equal(dnd.status, 204);
  const { linkedId } = await t.sim.dialNumber(alice, "1002", { a: "1" });
  await t.sim.act("1001", "answer");
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["alice", "EventFailure", "1001", "1002", "A"],
    ],
    { users, linkedId, firstLeg: "A", usr: { USR_a: "1" } },
  );
  const [record] = await history(t, alice);
  assert.equal(record?.status, "emitted");
  assert.equal(record?.dstUsername, "bob");
  assert.equal(record?.answeredMs, null);
  assert.deepEqual(await history(t, bob), []);
});

Deno.test("unconditional forward: the call goes to the forward destination", async () => {
  const { t, alice, bob, carol, users } = await threeUsers();
  await changeUser(t, bob.id, withForward("unconditional", " 10.03 "));
  const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
  await t.sim.act("1001", "answer");
  await t.sim.act("1003", "answer");
  await t.sim.act("1001", "hangup");
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["carol", "EventRinging", "1003", "1001", "C"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["carol", "EventEstablished", "1003", "1001", "C"],
      ["alice", "EventReleased", "1001", "1002", "A"],
      ["carol", "EventReleased", "1003", "1001", "C"],
    ],
    { users, linkedId, firstLeg: "A" },
  );
  assert.deepEqual(
    (await history(t, alice)).map((r) => [r.status, r.dstUsername, r.dstNum]),
    [["emitted", "carol", "1002"]],
  );
  assert.deepEqual(
    (await history(t, carol)).map((r) => [r.status, r.srcUsername, r.dstUsername, r.dstNum]),
    [["answered", "alice", "carol", "1003"]],
  );
  assert.deepEqual(await history(t, bob), []);
});

Deno.test("forwards looping: five redirections at most, then EventFailure", async () => {
  const { t, alice, bob, carol, users } = await threeUsers();
  await changeUser(t, bob.id, withForward("unconditional", "1003"));
  await changeUser(t, carol.id, withForward("unconditional", "1002"));
  const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
  await t.sim.act("1001", "answer");
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["alice", "EventFailure", "1001", "1002", "A"],
    ],
    { users, linkedId },
  );
  assert.deepEqual(t.sim.calls(), []);
});

Deno.test("busy forward: a busy phone sends the call on; without one the caller fails", async (s) => {
  const { t, alice, bob, carol, users } = await threeUsers();
  await t.sim.setPolicy("1002", { policy: "busy" });

  await s.step("no busy forward: EventFailure", async () => {
    const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
    await t.sim.act("1001", "answer");
    assertPhoneEvents(
      t.take(),
      [
        ["alice", "EventDialing", "1001", "1002", "A"],
        ["alice", "EventFailure", "1001", "1002", "A"],
      ],
      { users, linkedId },
    );
  });

  await s.step("busy forward to carol", async () => {
    await changeUser(t, bob.id, withForward("busy", "1003"));
    const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
    await t.sim.act("1001", "answer");
    await t.sim.act("1003", "answer");
    await t.sim.act("1003", "hangup");
    assertPhoneEvents(
      t.take(),
      [
        ["alice", "EventDialing", "1001", "1002", "A"],
        ["carol", "EventRinging", "1003", "1001", "C"],
        ["alice", "EventEstablished", "1001", "1002", "A"],
        ["carol", "EventEstablished", "1003", "1001", "C"],
        ["alice", "EventReleased", "1001", "1002", "A"],
        ["carol", "EventReleased", "1003", "1001", "C"],
      ],
      { users, linkedId, firstLeg: "A" },
    );
    assert.equal((await history(t, carol))[0]?.status, "answered");
    assert.deepEqual(await history(t, bob), []);
  });
});

Deno.test("no-answer forward: after ring_seconds the callee is released and the call goes on", async () => {
  const { t, alice, bob, carol, users } = await threeUsers();
  await changeUser(
    t,
    bob.id,
    (user) => ({ ...withForward("noanswer", "1003")(user), ring_seconds: 5 }),
  );
  const start = t.ctx.clock.now();
  const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
  await t.sim.act("1001", "answer");
  await t.advance(4999);
  assert.equal(phoneEvents(t.events).length, 2, "bob still rings");
  await t.advance(1);
  await t.sim.act("1003", "answer");
  await t.advance(10_000);
  await t.sim.act("1001", "hangup");
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["bob", "EventRinging", "1002", "1001", "B"],
      ["bob", "EventReleased", "1002", "1001", "B"],
      ["carol", "EventRinging", "1003", "1001", "C"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["carol", "EventEstablished", "1003", "1001", "C"],
      ["alice", "EventReleased", "1001", "1002", "A"],
      ["carol", "EventReleased", "1003", "1001", "C"],
    ],
    { users, linkedId, firstLeg: "A" },
  );
  const common = { id: linkedId, startMs: start, endMs: start + 15_000, srcUsername: "alice" };
  assert.deepEqual(await history(t, alice), [{
    ...common,
    userId: alice.id,
    answeredMs: start + 5000,
    dstUsername: "carol",
    srcNum: "1001",
    dstNum: "1002",
    status: "emitted",
  }]);
  assert.deepEqual(await history(t, bob), [{
    ...common,
    userId: bob.id,
    answeredMs: null,
    dstUsername: "bob",
    srcNum: "1001",
    dstNum: "1002",
    status: "missed",
  }]);
  assert.deepEqual(await history(t, carol), [{
    ...common,
    userId: carol.id,
    answeredMs: start + 5000,
    dstUsername: "carol",
    srcNum: "1001",
    dstNum: "1003",
    status: "answered",
  }]);
});

Deno.test("no answer and no forward: the call is missed, callee then caller released", async () => {
  const { t, alice, bob, users } = await threeUsers();
  await changeUser(t, bob.id, (user) => ({ ...user, ring_seconds: 10 }));
  const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
  await t.sim.act("1001", "answer");
  await t.advance(10_000);
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["bob", "EventRinging", "1002", "1001", "B"],
      ["bob", "EventReleased", "1002", "1001", "B"],
      ["alice", "EventReleased", "1001", "1002", "A"],
    ],
    { users, linkedId },
  );
  assert.equal((await history(t, bob))[0]?.status, "missed");
  assert.equal((await history(t, alice))[0]?.answeredMs, null);
});

Deno.test("callee rejects: callee released, caller EventFailure; an unavailable phone never rings", async (s) => {
  const { t, alice, bob, users } = await threeUsers();
  await s.step("reject", async () => {
    const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
    await t.sim.act("1001", "answer");
    await t.sim.act("1002", "reject");
    assertPhoneEvents(
      t.take(),
      [
        ["alice", "EventDialing", "1001", "1002", "A"],
        ["bob", "EventRinging", "1002", "1001", "B"],
        ["bob", "EventReleased", "1002", "1001", "B"],
        ["alice", "EventFailure", "1001", "1002", "A"],
      ],
      { users, linkedId },
    );
    assert.equal((await history(t, bob))[0]?.status, "missed");
  });
  await s.step("reject with a busy forward: the call goes on to its destination", async () => {
    await changeUser(t, bob.id, withForward("busy", "1003"));
    const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
    await t.sim.act("1001", "answer");
    await t.sim.act("1002", "reject");
    await t.sim.act("1003", "answer");
    await t.sim.act("1001", "hangup");
    assertPhoneEvents(
      t.take(),
      [
        ["alice", "EventDialing", "1001", "1002", "A"],
        ["bob", "EventRinging", "1002", "1001", "B"],
        ["bob", "EventReleased", "1002", "1001", "B"],
        ["carol", "EventRinging", "1003", "1001", "C"],
        ["alice", "EventEstablished", "1001", "1002", "A"],
        ["carol", "EventEstablished", "1003", "1001", "C"],
        ["alice", "EventReleased", "1001", "1002", "A"],
        ["carol", "EventReleased", "1003", "1001", "C"],
      ],
      { users, linkedId },
    );
    await changeUser(t, bob.id, (user) => ({
      ...user,
      forwards: { ...user.forwards, busy: { enabled: false, destination: null } },
    }));
  });
  await s.step("unavailable: no answer at once, missed without ringing", async () => {
    await t.sim.setPolicy("1002", { policy: "unavailable" });
    const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
    await t.sim.act("1001", "answer");
    assertPhoneEvents(
      t.take(),
      [
        ["alice", "EventDialing", "1001", "1002", "A"],
        ["alice", "EventReleased", "1001", "1002", "A"],
      ],
      { users, linkedId },
    );
    assert.equal((await history(t, bob)).length, 2, "no record: bob's phone did not ring");
  });
});

Deno.test("simultaneous_calls reached: busy for the next caller", async () => {
  const { t, alice, bob, carol, users } = await threeUsers();
  await changeUser(t, bob.id, (user) => ({ ...user, simultaneous_calls: 1 }));
  const first = await t.sim.dialNumber(carol, "1002", {});
  await t.sim.act("1003", "answer");
  await t.sim.act("1002", "answer");
  t.take();

  const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
  await t.sim.act("1001", "answer");
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["alice", "EventFailure", "1001", "1002", "A"],
    ],
    { users, linkedId, firstLeg: "A" },
  );
  assert.notEqual(linkedId, first.linkedId);

  // with a second call allowed, bob's phone rings although it is busy
  await changeUser(t, bob.id, (user) => ({ ...user, simultaneous_calls: 2 }));
  await t.sim.dialNumber(alice, "1002", {});
  await t.sim.act("1001", "answer");
  assert.deepEqual(
    phoneEvents(t.take()).map((e) => [e.username, e.eventType]),
    [["alice", "EventDialing"], ["bob", "EventRinging"]],
  );
  assert.deepEqual(await history(t, bob), [], "no call of bob's has ended");
});

Deno.test("call to an outside number: the external pseudo-phone's policy", async (s) => {
  const t = await simSetup({ SVC_SIM_ANSWER_MS: "2000", SVC_SIM_TALK_MS: "0" });
  const alice = await phoneUser(t, "alice", "1001");
  const users = [alice];

  await s.step("auto: answers after answer_ms, hangs up after its talk_ms", async () => {
    await t.sim.setPolicy("external", { policy: "auto", answer_ms: 3000, talk_ms: 20_000 });
    const start = t.ctx.clock.now();
    const { linkedId } = await t.sim.dialNumber(alice, "0612345678", { x: "y" });
    await t.advance(2000);
    assert.deepEqual(t.sim.calls()[0]?.legs, [
      { uniqueId: linkedId, extension: "1001", state: "up" },
      { uniqueId: t.sim.calls()[0]!.legs[1]!.uniqueId, number: "0612345678", state: "ringing" },
    ]);
    await t.advance(3000);
    await t.advance(20_000);
    assertPhoneEvents(
      t.take(),
      [
        ["alice", "EventDialing", "1001", "0612345678", "A"],
        ["alice", "EventEstablished", "1001", "0612345678", "A"],
        ["alice", "EventReleased", "1001", "0612345678", "A"],
      ],
      { users, linkedId, firstLeg: "A", usr: { USR_x: "y" } },
    );
    assert.deepEqual(await history(t, alice), [{
      id: linkedId,
      userId: alice.id,
      startMs: start,
      answeredMs: start + 5000,
      endMs: start + 25_000,
      srcUsername: "alice",
      dstUsername: "",
      srcNum: "1001",
      dstNum: "0612345678",
      status: "emitted",
    }]);
  });

  await s.step("busy: EventFailure", async () => {
    await t.sim.setPolicy("external", { policy: "busy" });
    await t.sim.dialNumber(alice, "0033612345678", {});
    await t.advance(2000);
    assert.deepEqual(phoneEvents(t.take()).map((e) => e.eventType), [
      "EventDialing",
      "EventFailure",
    ]);
  });

  await s.step("manual: answered and hung up by hand; rings 30 s else released", async () => {
    await t.sim.setPolicy("external", { policy: "manual" });
    await t.sim.dialNumber(alice, "555", {});
    await t.advance(2000);
    await t.sim.act("external", "answer");
    await t.sim.act("external", "hangup");
    assert.deepEqual(phoneEvents(t.take()).map((e) => e.eventType), [
      "EventDialing",
      "EventEstablished",
      "EventReleased",
    ]);
    await t.sim.dialNumber(alice, "555", {});
    await t.advance(2000);
    await t.advance(29_999);
    assert.equal(phoneEvents(t.events).length, 1);
    await t.advance(1);
    assert.deepEqual(phoneEvents(t.take()).map((e) => e.eventType), [
      "EventDialing",
      "EventReleased",
    ]);
  });
});

Deno.test("hold and resume an established call", async () => {
  const { t, alice, bob, users } = await threeUsers();
  const { linkedId } = await t.sim.dialNumber(alice, "1002", {});
  await t.sim.act("1001", "answer");
  await t.sim.act("1002", "answer");
  await t.sim.act("1001", "hold");
  assert.deepEqual(
    await t.sim.phoneStatuses(["1001", "1002"]),
    new Map([["1001", 16], ["1002", 2]]),
  );
  assert.equal(t.sim.calls()[0]?.legs[0]?.state, "on_hold");
  await t.sim.act("1001", "resume");
  await t.sim.act("1002", "hold");
  await t.sim.act("1002", "hangup"); // a held call can be hung up
  assertPhoneEvents(
    t.take(),
    [
      ["alice", "EventDialing", "1001", "1002", "A"],
      ["bob", "EventRinging", "1002", "1001", "B"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["bob", "EventEstablished", "1002", "1001", "B"],
      ["alice", "EventOnHold", "1001", "1002", "A"],
      ["alice", "EventEstablished", "1001", "1002", "A"],
      ["bob", "EventOnHold", "1002", "1001", "B"],
      ["alice", "EventReleased", "1001", "1002", "A"],
      ["bob", "EventReleased", "1002", "1001", "B"],
    ],
    { users, linkedId, firstLeg: "A" },
  );
  assert.equal((await history(t, bob))[0]?.status, "answered");
});

Deno.test("originate leg not answered: EventFailure only, no history", async (s) => {
  const { t, alice, bob, users } = await threeUsers();
  await changeUser(t, alice.id, (user) => ({ ...user, ring_seconds: 8 }));

  await s.step("rings out after the caller's ring_seconds", async () => {
    const { linkedId } = await t.sim.dialNumber(alice, "1002", { v: "1" });
    await t.advance(7999);
    assert.deepEqual(t.events, []);
    await t.advance(1);
    assertPhoneEvents(t.take(), [["alice", "EventFailure", "1001", "1002", "A"]], {
      users,
      linkedId,
      firstLeg: "A",
      usr: { USR_v: "1" },
    });
  });

  await s.step("rejected, busy or unavailable", async () => {
    await t.sim.dialUser(alice, bob, {});
    await t.sim.act("1001", "reject");
    for (const policy of ["busy", "unavailable"] as const) {
      await t.sim.setPolicy("1001", { policy });
      await t.sim.dialNumber(alice, "1002", {});
    }
    assert.deepEqual(
      phoneEvents(t.take()).map((e) => [e.eventType, e.otherDN]),
      [["EventFailure", "1002"], ["EventFailure", "1002"], ["EventFailure", "1002"]],
    );
  });

  assert.deepEqual(await history(t, alice), []);
  assert.deepEqual(await history(t, bob), []);
  assert.deepEqual(t.sim.calls(), []);
});

Deno.test("a caller without a phone is refused", async () => {
  const t = await simSetup();
  const bob = await phoneUser(t, "bob", "1002");
  const lonely = await createUser(t.ctx.services.store, {
    firstname: "Lonely",
    username: "lonely",
  });
  await assert.rejects(
    () => t.sim.dialNumber(lonely, "1002", {}),
    (error) => error instanceof PlatformRefusal && error.reason === "no_line",
  );
  await assert.rejects(
    () => t.sim.dialUser(bob, lonely, {}),
    (error) => error instanceof PlatformRefusal && error.reason === "no_line",
  );
  assert.deepEqual(t.events, []);
});

Deno.test("configuration changes apply to the next call without a restart", async (s) => {
  const { t, alice, bob } = await threeUsers();
  const placeCall = async () => {
    await t.sim.dialNumber(alice, "1002", {});
    await t.sim.act("1001", "answer");
    return phoneEvents(t.take()).map((e) => [e.username, e.eventType, e.DN]);
  };
  const hangUp = () => t.sim.act("1001", "hangup").then(() => t.take());

  await s.step("DND set in the store", async () => {
    assert.deepEqual(await placeCall(), [["alice", "EventDialing", "1001"], [
      "bob",
      "EventRinging",
      "1002",
    ]]);
    await hangUp();
    await changeUser(
      t,
      bob.id,
      (user) => ({ ...user, services: { ...user.services, dnd: { enabled: true } } }),
    );
    assert.deepEqual(await placeCall(), [["alice", "EventDialing", "1001"], [
      "alice",
      "EventFailure",
      "1001",
    ]]);
    await changeUser(
      t,
      bob.id,
      (user) => ({ ...user, services: { ...user.services, dnd: { enabled: false } } }),
    );
  });

  await s.step("ring_seconds changed", async () => {
    await changeUser(t, bob.id, (user) => ({ ...user, ring_seconds: 3 }));
    await placeCall();
    await t.advance(3000);
    assert.deepEqual(phoneEvents(t.take()).map((e) => e.eventType), [
      "EventReleased",
      "EventReleased",
    ]);
  });

  await s.step("bob's extension renumbered", async () => {
    await transact(t.ctx.services.store, async (tx) => {
      const bobLine = (await tx.get(lines, bob.line_ids[0]!))!;
      const extension = (await tx.get(extensions, bobLine.extension_ids[0]!))!;
      tx.put(extensions, { ...extension, exten: "1009" });
    });
    await t.sim.dialNumber(alice, "1002", {});
    await t.sim.setPolicy("external", { policy: "busy" });
    await t.sim.act("1001", "answer");
    assert.deepEqual(
      phoneEvents(t.take()).map((e) => [e.eventType, e.otherDN]),
      [["EventDialing", "1002"], ["EventFailure", "1002"]],
      "1002 is an outside number now",
    );
    await t.sim.dialNumber(alice, "1009", {});
    await t.sim.act("1001", "answer");
    assert.deepEqual(
      phoneEvents(t.take()).map((e) => [e.username, e.eventType, e.DN]),
      [["alice", "EventDialing", "1001"], ["bob", "EventRinging", "1009"]],
    );
  });
});

Deno.test("a listener that fails is logged and does not stop the simulator", async () => {
  const { t, alice } = await threeUsers();
  let calls = 0;
  t.sim.onEvents(() => {
    calls++;
    return Promise.reject(new Error("listener down"));
  });
  await t.sim.dialNumber(alice, "1002", {});
  await t.sim.act("1001", "answer");
  await t.sim.act("1002", "answer");
  assert.equal(phoneEvents(t.take()).length, 4);
  assert.equal(calls, 2);
  assert.ok(t.ctx.logs.some((line) => line.includes("platform listener failed")));
});

Deno.test("commands run one at a time: each step's events reach listeners before the next", async () => {
  const { t, alice, bob } = await threeUsers();
  const order: string[] = [];
  t.sim.onEvents(async (batch) => {
    order.push(`start ${batch.length}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    order.push("end");
  });
  await Promise.all([
    t.sim.dialNumber(alice, "1002", {}).then(() => t.sim.act("1001", "answer")),
    t.sim.setPolicy("1001", { policy: "manual" }),
    t.sim.dialNumber(bob, "1001", {}).then(() => t.sim.act("1002", "answer")),
  ]);
  assert.deepEqual(order.filter((entry) => entry === "end").length, order.length / 2);
  for (let i = 0; i < order.length; i += 2) {
    assert.match(order[i]!, /^start/);
    assert.equal(order[i + 1], "end");
  }
});

Deno.test("close() cancels every timer", async () => {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001");
  await phoneUser(t, "bob", "1002");
  await t.sim.dialNumber(alice, "1002", {});
  assert.ok(t.ctx.clock.pending > 0);
  t.sim.close();
  assert.equal(t.ctx.clock.pending, 0);
  await t.advance(60_000);
  assert.deepEqual(t.events, []);
});

Deno.test("a timer step while the store is unreachable is tried again, not lost", async () => {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001");
  await phoneUser(t, "bob", "1002");
  await t.sim.dialNumber(alice, "1002", {});
  t.ctx.services.store.close();
  await t.advance(1000); // alice's phone would answer now
  await t.advance(3000);
  assert.deepEqual(t.events, []);
  const postponed = t.ctx.logs.filter((line) => line.includes("sim step postponed"));
  assert.equal(postponed.length, 4);
  assert.equal(t.sim.calls()[0]?.legs[0]?.state, "ringing");
  assert.ok(t.ctx.clock.pending > 0, "still scheduled");
  t.sim.close();
  assert.equal(t.ctx.clock.pending, 0);
});

/**
 * Call commands on the simulator beyond the scenario table: answering the caller's own phone rung
 * first, a hang-up of a call only ringing (declined, as a reject), the phone's own hold next to
 * svc's, and every refusal.
 */
import assert from "node:assert/strict";
import type { CallCommand } from "../../../lib/platform/call_control.ts";
import { PlatformRefusal } from "../../../lib/platform/port.ts";
import type { UserRecord } from "../../../lib/store/users.ts";
import { assertPhoneEvents, phoneEvents, phoneUser, simSetup } from "./fixtures.ts";

const refused = (reason: string) => (error: unknown) =>
  error instanceof PlatformRefusal && error.reason === reason;

/** alice 1001 and bob 1002, both phones answering only when told. */
async function twoPhones() {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001");
  const bob = await phoneUser(t, "bob", "1002");
  await t.sim.setPolicy("1001", { policy: "manual" });
  await t.sim.setPolicy("1002", { policy: "manual" });
  /** The party of `user`'s phone (the newest). */
  const callOf = async (user: UserRecord) =>
    (await t.sim.liveCalls()).filter((call) => call.userId === user.id).at(-1)!.callId;
  const on = async (user: UserRecord, command: CallCommand) =>
    t.sim.callCommand(await callOf(user), command);
  return { t, alice, bob, callOf, on };
}

Deno.test("answer of the caller's own phone and of the callee's; svc's hold and the phone's", async () => {
  const { t, alice, bob, on } = await twoPhones();
  await t.sim.dialNumber(alice, "1002", { crm: "42" });
  await on(alice, { kind: "answer" }); // the caller's own phone, rung first
  await on(bob, { kind: "answer" });
  await t.sim.act("1002", "hold"); // bob's phone holds: it stays with alice
  await assert.rejects(() => on(bob, { kind: "resume" }), refused("held_by_phone"));
  await t.sim.act("1002", "resume");
  await on(alice, { kind: "hold" });
  assert.equal((await t.sim.phones())[0]?.state, "on_hold");
  await on(alice, { kind: "resume" });
  await on(alice, { kind: "hangup" });
  assertPhoneEvents(t.take(), [
    ["alice", "EventDialing", "1001", "1002", "a"],
    ["bob", "EventRinging", "1002", "1001", "b"],
    ["alice", "EventEstablished", "1001", "1002", "a"],
    ["bob", "EventEstablished", "1002", "1001", "b"],
    ["bob", "EventOnHold", "1002", "1001", "b"],
    ["bob", "EventEstablished", "1002", "1001", "b"],
    ["alice", "EventOnHold", "1001", "1002", "a"],
    ["alice", "EventEstablished", "1001", "1002", "a"],
    ["alice", "EventReleased", "1001", "1002", "a"],
    ["bob", "EventReleased", "1002", "1001", "b"],
  ], { users: [alice, bob], firstLeg: "a", usr: { USR_crm: "42" } });
  assert.deepEqual(t.sim.calls(), []);
});

Deno.test("hangup: a call only ringing is declined, as a reject does; a calling one ends", async (s) => {
  const { t, alice, bob, on } = await twoPhones();

  await s.step("the callee declines: released, then the caller fails (busy)", async () => {
    await t.sim.dialNumber(alice, "1002", {});
    await on(alice, { kind: "answer" });
    await on(bob, { kind: "hangup" });
    assertPhoneEvents(t.take(), [
      ["alice", "EventDialing", "1001", "1002", "a"],
      ["bob", "EventRinging", "1002", "1001", "b"],
      ["bob", "EventReleased", "1002", "1001", "b"],
      ["alice", "EventFailure", "1001", "1002", "a"],
    ], { users: [alice, bob] });
  });

  await s.step("the caller's own phone, rung first, declines: the dial fails", async () => {
    await t.sim.dialNumber(alice, "1002", {});
    await on(alice, { kind: "hangup" });
    assertPhoneEvents(t.take(), [["alice", "EventFailure", "1001", "1002", "a"]], {
      users: [alice],
    });
  });

  await s.step("a caller whose callee still rings hangs up: both released", async () => {
    await t.sim.dialNumber(alice, "1002", {});
    await on(alice, { kind: "answer" });
    await on(alice, { kind: "hangup" });
    assert.deepEqual(phoneEvents(t.take()).map((e) => [e.username, e.eventType]), [
      ["alice", "EventDialing"],
      ["bob", "EventRinging"],
      ["alice", "EventReleased"],
      ["bob", "EventReleased"],
    ]);
    assert.deepEqual(t.sim.calls(), []);
  });
});

Deno.test("refusals: no_call, not_ringing, not_talking, not_held, recording_not_started", async () => {
  const { t, alice, bob, on, callOf } = await twoPhones();
  for (
    const command of [
      { kind: "answer" },
      { kind: "hangup" },
      { kind: "hold" },
      { kind: "dtmf", digits: "1" },
    ] as CallCommand[]
  ) {
    await assert.rejects(() => t.sim.callCommand("999.9", command), refused("no_call"));
  }
  await t.sim.dialNumber(alice, "1002", {});
  await on(alice, { kind: "answer" });
  // bob rings: nothing to hold, mute, record, send digits to; alice rings nobody
  const bobCall = await callOf(bob);
  for (
    const command of [
      { kind: "hold" },
      { kind: "mute", on: true },
      { kind: "dtmf", digits: "1" },
      { kind: "record", action: "start" },
    ] as CallCommand[]
  ) {
    await assert.rejects(() => t.sim.callCommand(bobCall, command), refused("not_talking"));
  }
  await assert.rejects(() => on(alice, { kind: "answer" }), refused("not_ringing"));
  await assert.rejects(() => on(alice, { kind: "hold" }), refused("not_talking"));
  await on(bob, { kind: "answer" });
  await assert.rejects(() => on(alice, { kind: "resume" }), refused("not_held"));
  for (const action of ["pause", "resume"] as const) {
    await assert.rejects(
      () => on(alice, { kind: "record", action }),
      refused("recording_not_started"),
    );
  }
  // stop and start when already so do nothing
  await on(alice, { kind: "record", action: "stop" });
  await on(alice, { kind: "record", action: "start" });
  await on(alice, { kind: "record", action: "start" });
  assert.equal((await t.sim.liveCalls())[0]?.record, "active");
});

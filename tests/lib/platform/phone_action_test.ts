/**
 * `phoneAction` on the simulator: what a user's CTI page asks of the user's own phone gives the
 * events the control API's hand on that phone gives (docs/platform.md), and its refusals.
 */
import assert from "node:assert/strict";
import { PlatformRefusal } from "../../../lib/platform/port.ts";
import { findUserByUsername } from "../../../lib/store/users.ts";
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
  return { t, alice, bob };
}

Deno.test("answer, hold (a toggle) and hangup give the control API's events", async () => {
  const { t, alice, bob } = await twoPhones();
  await t.sim.dialNumber(alice, "1002", { crm: "42" });
  await t.sim.phoneAction(alice, "answer"); // the caller's own phone, rung first
  await t.sim.phoneAction(bob, "answer");
  await t.sim.phoneAction(alice, "hold");
  assert.equal((await t.sim.phones())[0]?.state, "on_hold");
  await t.sim.phoneAction(alice, "hold"); // on hold already: taken off hold
  await t.sim.phoneAction(bob, "hold");
  await t.sim.phoneAction(alice, "hangup"); // established, the other party on hold
  assertPhoneEvents(t.take(), [
    ["alice", "EventDialing", "1001", "1002", "a"],
    ["bob", "EventRinging", "1002", "1001", "b"],
    ["alice", "EventEstablished", "1001", "1002", "a"],
    ["bob", "EventEstablished", "1002", "1001", "b"],
    ["alice", "EventOnHold", "1001", "1002", "a"],
    ["alice", "EventEstablished", "1001", "1002", "a"],
    ["bob", "EventOnHold", "1002", "1001", "b"],
    ["alice", "EventReleased", "1001", "1002", "a"],
    ["bob", "EventReleased", "1002", "1001", "b"],
  ], { users: [alice, bob], firstLeg: "a", usr: { USR_crm: "42" } });
  assert.deepEqual(t.sim.calls(), []);
});

Deno.test("hangup: a call only ringing is declined, as a reject does; a calling one ends", async (s) => {
  const { t, alice, bob } = await twoPhones();

  await s.step("the callee declines: released, then the caller fails (busy)", async () => {
    await t.sim.dialNumber(alice, "1002", {});
    await t.sim.phoneAction(alice, "answer");
    await t.sim.phoneAction(bob, "hangup");
    assertPhoneEvents(t.take(), [
      ["alice", "EventDialing", "1001", "1002", "a"],
      ["bob", "EventRinging", "1002", "1001", "b"],
      ["bob", "EventReleased", "1002", "1001", "b"],
      ["alice", "EventFailure", "1001", "1002", "a"],
    ], { users: [alice, bob] });
  });

  await s.step("the caller's own phone, rung first, declines: the dial fails", async () => {
    await t.sim.dialNumber(alice, "1002", {});
    await t.sim.phoneAction(alice, "hangup");
    assertPhoneEvents(t.take(), [["alice", "EventFailure", "1001", "1002", "a"]], {
      users: [alice],
    });
  });

  await s.step("a caller whose callee still rings hangs up: both released", async () => {
    await t.sim.dialNumber(alice, "1002", {});
    await t.sim.phoneAction(alice, "answer");
    await t.sim.phoneAction(alice, "hangup");
    assert.deepEqual(phoneEvents(t.take()).map((e) => [e.username, e.eventType]), [
      ["alice", "EventDialing"],
      ["bob", "EventRinging"],
      ["alice", "EventReleased"],
      ["bob", "EventReleased"],
    ]);
    assert.deepEqual(t.sim.calls(), []);
  });
});

Deno.test("refusals: no_line without a phone, no_call with nothing to act on", async (s) => {
  const { t, alice, bob } = await twoPhones();

  await s.step("a user without line: no_line, whatever the action", async () => {
    await t.api.create("/users", { firstname: "dave", username: "dave" });
    const dave = (await findUserByUsername(t.ctx.services.store, "dave"))!;
    for (const action of ["answer", "hangup", "hold"] as const) {
      await assert.rejects(() => t.sim.phoneAction(dave, action), refused("no_line"));
    }
  });

  await s.step("an idle phone: no_call, whatever the action", async () => {
    for (const action of ["answer", "hangup", "hold"] as const) {
      await assert.rejects(() => t.sim.phoneAction(alice, action), refused("no_call"));
    }
  });

  await s.step("nothing rings to answer; a call not yet established cannot be held", async () => {
    await t.sim.dialNumber(alice, "1002", {});
    await t.sim.phoneAction(alice, "answer");
    await assert.rejects(() => t.sim.phoneAction(alice, "answer"), refused("no_call"));
    await assert.rejects(() => t.sim.phoneAction(alice, "hold"), refused("no_call"));
    await assert.rejects(() => t.sim.phoneAction(bob, "hold"), refused("no_call"));
  });
  assert.deepEqual(phoneEvents(t.take()).map((e) => [e.username, e.eventType]), [
    ["alice", "EventDialing"],
    ["bob", "EventRinging"],
  ], "a refusal changes nothing");
});

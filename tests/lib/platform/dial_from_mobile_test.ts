/**
 * `dialFromMobile` on the simulator: the user's mobile (the `external` pseudo-phone) is rung first
 * and stands for the user's phone in the call (its events go to the user, DN = the user's
 * extension); once it answers the destination is called as by `dialNumber` (docs/platform.md).
 */
import assert from "node:assert/strict";
import { PlatformRefusal } from "../../../lib/platform/port.ts";
import { findUserByUsername } from "../../../lib/store/users.ts";
import { assertPhoneEvents, callEnds, phoneEvents, phoneUser, simSetup } from "./fixtures.ts";

const MOBILE = "0611223344";

const refused = (reason: string) => (error: unknown) =>
  error instanceof PlatformRefusal && error.reason === reason;

/** alice 1001 (ringing 10 s) and bob 1002; the phones and the outside network answer when told. */
async function people() {
  const t = await simSetup();
  const alice = await phoneUser(t, "alice", "1001", { ring_seconds: 10 });
  const bob = await phoneUser(t, "bob", "1002");
  for (const phone of ["1001", "1002", "external"]) {
    await t.sim.setPolicy(phone, { policy: "manual" });
  }
  return { t, alice, bob };
}

Deno.test("the mobile answers, then the destination: the user's events, its own phone left out", async () => {
  const { t, alice, bob } = await people();
  const { linkedId } = await t.sim.dialFromMobile(alice, MOBILE, "1002", { crm: "42" });

  // the mobile rings, no event yet; the user's own phone is not in the call
  assert.deepEqual(t.events, []);
  assert.deepEqual(t.sim.calls(), [{
    linkedId,
    legs: [{ uniqueId: linkedId, number: MOBILE, state: "ringing" }],
  }]);
  const state = async () =>
    Object.fromEntries((await t.sim.phones()).map((phone) => [phone.extension, phone.state]));
  assert.deepEqual(await state(), { "1001": "idle", "1002": "idle", external: "ringing" });

  await t.sim.act("external", "answer"); // the mobile answers: bob's phone rings
  assert.deepEqual(await state(), { "1001": "idle", "1002": "ringing", external: "calling" });
  assert.equal((await t.sim.phoneStatuses(["1001"])).get("1001"), 0);
  // the user's party is the mobile, on no line of the user's
  const mine = (await t.sim.liveCalls()).filter((call) => call.userId === alice.id);
  assert.deepEqual(mine.map((call) => [call.lineId, call.number]), [[null, MOBILE]]);

  await t.sim.act("1002", "answer");
  await t.sim.act("1002", "hangup");
  const events = t.take();
  assertPhoneEvents(events, [
    ["alice", "EventDialing", "1001", "1002", "mobile"],
    ["bob", "EventRinging", "1002", "1001", "bob"],
    ["alice", "EventEstablished", "1001", "1002", "mobile"],
    ["bob", "EventEstablished", "1002", "1001", "bob"],
    ["alice", "EventReleased", "1001", "1002", "mobile"],
    ["bob", "EventReleased", "1002", "1001", "bob"],
  ], { users: [alice, bob], linkedId, firstLeg: "mobile", usr: { USR_crm: "42" } });
  const [ended] = callEnds(events);
  assert.equal(ended?.linkedId, linkedId);
  assert.deepEqual(
    ended?.records.map((
      r,
    ) => [r.userId, r.status, r.srcUsername, r.srcNum, r.dstUsername, r.dstNum]),
    [
      [alice.id, "emitted", "alice", "1001", "bob", "1002"],
      [bob.id, "answered", "alice", "1001", "bob", "1002"],
    ],
  );
  assert.ok(ended!.records.every((record) => record.answeredMs !== null));
  assert.deepEqual(t.sim.calls(), []);
});

Deno.test("the mobile does not answer: EventFailure only, no history, the destination never rings", async (s) => {
  const { t, alice } = await people();
  const failed = () => {
    const events = t.take();
    assertPhoneEvents(events, [["alice", "EventFailure", "1001", "1002", "mobile"]], {
      users: [alice],
      firstLeg: "mobile",
    });
    assert.deepEqual(callEnds(events), []);
    assert.deepEqual(t.sim.calls(), []);
  };

  await s.step("it rings out after the user's ring_seconds", async () => {
    await t.sim.dialFromMobile(alice, MOBILE, "1002", {});
    await t.advance(9_999);
    assert.deepEqual(t.events, []);
    await t.advance(1);
    failed();
  });

  await s.step("it declines", async () => {
    await t.sim.dialFromMobile(alice, MOBILE, "1002", {});
    await t.sim.act("external", "reject");
    failed();
  });

  for (const policy of ["busy", "unavailable"] as const) {
    await s.step(`the outside network is ${policy}`, async () => {
      await t.sim.setPolicy("external", { policy });
      await t.sim.dialFromMobile(alice, MOBILE, "1002", {});
      failed();
    });
  }
});

Deno.test("the destination: an outside number, a busy phone", async (s) => {
  const { t, alice, bob } = await people();

  await s.step("an outside number answers; the mobile hangs up", async () => {
    await t.sim.dialFromMobile(alice, MOBILE, "0698765432", {});
    await t.sim.act("external", "answer"); // the mobile, rung first
    await t.sim.act("external", "answer"); // the destination
    await t.sim.act("external", "hangup"); // the oldest up: the mobile
    const events = t.take();
    assertPhoneEvents(events, [
      ["alice", "EventDialing", "1001", "0698765432", "mobile"],
      ["alice", "EventEstablished", "1001", "0698765432", "mobile"],
      ["alice", "EventReleased", "1001", "0698765432", "mobile"],
    ], { users: [alice], firstLeg: "mobile" });
    assert.deepEqual(
      callEnds(events)[0]?.records.map((r) => [r.status, r.srcNum, r.dstUsername, r.dstNum]),
      [["emitted", "1001", "", "0698765432"]],
    );
  });

  await s.step("a busy phone: the caller fails, its history written", async () => {
    await t.sim.setPolicy("1002", { policy: "busy" });
    await t.sim.dialFromMobile(alice, MOBILE, "1002", {});
    await t.sim.act("external", "answer");
    const events = t.take();
    assertPhoneEvents(events, [
      ["alice", "EventDialing", "1001", "1002", "mobile"],
      ["alice", "EventFailure", "1001", "1002", "mobile"],
    ], { users: [alice, bob], firstLeg: "mobile" });
    assert.deepEqual(
      callEnds(events)[0]?.records.map((r) => [r.userId, r.status, r.dstUsername]),
      [[alice.id, "emitted", "bob"]],
    );
  });
});

Deno.test("a user without line is refused no_line: nothing rings", async () => {
  const t = await simSetup();
  await t.api.create("/users", { firstname: "dave", username: "dave" });
  const dave = (await findUserByUsername(t.ctx.services.store, "dave"))!;
  await assert.rejects(
    () => t.sim.dialFromMobile(dave, MOBILE, "1002", {}),
    refused("no_line"),
  );
  assert.deepEqual(t.sim.calls(), []);
  assert.deepEqual(phoneEvents(t.take()), []);
});

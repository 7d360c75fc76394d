/**
 * `phoneAction` on the Asterisk adapter, against a tiny AMI peer (`tiny_asterisk.ts`) that records
 * what svc sends and plays the events a test writes (the recorded sessions hold no PJSIPNotify and
 * no phone ringing while svc may act; the hang-up of a recorded call is in the scenario table): a
 * Hangup per channel of the user's phone, the remote-control PJSIPNotify for answer and hold, the
 * refusals.
 */
import assert from "node:assert/strict";
import { PlatformUnavailable } from "../../../../lib/errors.ts";
import { PlatformRefusal } from "../../../../lib/platform/port.ts";
import { findUserByUsername } from "../../../../lib/store/users.ts";
import { confd } from "../../../helpers.ts";
import { check, onAsterisk } from "../scenario_runner.ts";
import { SCENARIOS } from "../scenarios.ts";
import { asteriskContext } from "./fixtures.ts";
import { channel, connected, tinyAsterisk } from "./tiny_asterisk.ts";

const refused = (reason: string, message?: RegExp) => (error: unknown) =>
  error instanceof PlatformRefusal && error.reason === reason &&
  (message === undefined || message.test(error.message));

Deno.test("answer and hold: a PJSIPNotify to the user's endpoint; hangup: each of its channels", async (s) => {
  const a = await connected();
  const { w, platform, peer } = a;
  try {
    // a call from a trunk rings bob's phone
    await a.play(
      ...channel("PJSIP/trunk-00000001", "1700000000.1", "1700000000.1", 4),
      ...channel("PJSIP/bob-00000002", "1700000000.2", "1700000000.1", 5),
    );
    assert.deepEqual(a.take(), [["bob", "EventRinging"]]);

    await s.step("nothing to act on: no_call, nothing sent", async () => {
      for (const action of ["answer", "hangup", "hold"] as const) {
        await assert.rejects(() => platform.phoneAction(w.alice, action), refused("no_call"));
      }
      await assert.rejects(() => platform.phoneAction(w.bob, "hold"), refused("no_call"));
      assert.deepEqual([...peer.sent("PJSIPNotify"), ...peer.sent("Hangup")], []);
    });

    await s.step(
      "answer: Event talk to bob's endpoint; the phone's answer comes as events",
      async () => {
        await platform.phoneAction(w.bob, "answer");
        assert.deepEqual(peer.sent("PJSIPNotify"), [
          [["Action", "PJSIPNotify"], ["Endpoint", "bob"], ["Variable", "Event=talk"]],
        ]);
        await a.play({ Event: "Newstate", ChannelState: "6", Uniqueid: "1700000000.2" });
        assert.deepEqual(a.take(), [["bob", "EventEstablished"]]);
        await assert.rejects(() => platform.phoneAction(w.bob, "answer"), refused("no_call"));
      },
    );

    await s.step("hold: Event hold, established or on hold (the phone toggles)", async () => {
      await platform.phoneAction(w.bob, "hold");
      await a.play({ Event: "Hold", Channel: "PJSIP/bob-00000002", Uniqueid: "1700000000.2" });
      assert.deepEqual(a.take(), [["bob", "EventOnHold"]]);
      await platform.phoneAction(w.bob, "hold");
      assert.deepEqual(peer.sent("PJSIPNotify").slice(1), [
        [["Action", "PJSIPNotify"], ["Endpoint", "bob"], ["Variable", "Event=hold"]],
        [["Action", "PJSIPNotify"], ["Endpoint", "bob"], ["Variable", "Event=hold"]],
      ]);
    });

    await s.step("hangup: a Hangup for each channel of bob's phone, the trunks left", async () => {
      // a second call rings bob's phone meanwhile
      await a.play(
        ...channel("PJSIP/trunk-00000003", "1700000000.3", "1700000000.3", 4),
        ...channel("PJSIP/bob-00000004", "1700000000.4", "1700000000.3", 5),
      );
      await platform.phoneAction(w.bob, "hangup");
      assert.deepEqual(peer.sent("Hangup"), [
        [["Action", "Hangup"], ["Channel", "PJSIP/bob-00000002"]],
        [["Action", "Hangup"], ["Channel", "PJSIP/bob-00000004"]],
      ]);
    });
  } finally {
    await a.close();
  }
});

Deno.test("not_supported: Asterisk refusing the NOTIFY, a phone that is no PJSIP one", async (s) => {
  const a = await connected();
  const { w, platform, peer } = a;
  try {
    await s.step("Asterisk's error names the phone", async () => {
      await a.play(
        ...channel("PJSIP/trunk-00000001", "1700000000.1", "1700000000.1", 4),
        ...channel("PJSIP/alice-00000002", "1700000000.2", "1700000000.1", 5),
      );
      peer.notify = "Response: Error\r\nMessage: Unable to retrieve endpoint alice";
      await assert.rejects(
        () => platform.phoneAction(w.alice, "answer"),
        refused("not_supported", /^phone 1001 cannot answer .*Unable to retrieve endpoint alice$/),
      );
    });

    await s.step("a custom interface gets no NOTIFY", async () => {
      const api = await confd(a.ctx);
      const user = await api.create("/users", { firstname: "dave", username: "dave" });
      const line = await api.create("/lines", { context: "default" });
      const extension = await api.create("/extensions", { exten: "1004", context: "default" });
      const custom = await api.create("/endpoints/custom", { interface: "DAHDI/1" });
      for (
        const path of [
          `/lines/${line.id}/extensions/${extension.id}`,
          `/lines/${line.id}/endpoints/custom/${custom.id}`,
          `/users/${user.id}/lines/${line.id}`,
        ]
      ) assert.equal((await api.put(path)).status, 204, path);
      const dave = (await findUserByUsername(a.ctx.services.store, "dave"))!;
      // a command reads the directory afresh: from now on the adapter knows dave's phone
      await assert.rejects(() => platform.phoneAction(dave, "hold"), refused("no_call"));
      await a.play(
        ...channel("PJSIP/trunk-00000003", "1700000000.3", "1700000000.3", 4),
        ...channel("DAHDI/1-1", "1700000000.4", "1700000000.3", 5),
      );
      const sent = peer.sent("PJSIPNotify").length;
      await assert.rejects(
        () => platform.phoneAction(dave, "answer"),
        refused("not_supported", /^phone 1004 cannot answer .*DAHDI\/1 takes no remote-control/),
      );
      assert.equal(peer.sent("PJSIPNotify").length, sent);
    });
  } finally {
    await a.close();
  }
});

Deno.test("no_line before anything; Asterisk unreachable: PlatformUnavailable", async () => {
  const peer = tinyAsterisk();
  const t = await asteriskContext(peer.port); // never started: not connected
  try {
    const api = await confd(t.ctx);
    await api.create("/users", { firstname: "dave", username: "dave" });
    const dave = (await findUserByUsername(t.ctx.services.store, "dave"))!;
    for (const action of ["answer", "hangup", "hold"] as const) {
      await assert.rejects(() => t.platform.phoneAction(dave, action), refused("no_line"));
      await assert.rejects(
        () => t.platform.phoneAction(t.w.alice, action),
        (error) => error instanceof PlatformUnavailable,
      );
    }
    assert.deepEqual(peer.actions, []);
  } finally {
    await t.close();
    await peer.close();
  }
});

Deno.test("the recorded hang-up (16): only alice's channel is hung up, bob's is left to Asterisk", async () => {
  const scenario = SCENARIOS.find((one) =>
    one.name === "hold and resume by the caller, who then hangs up through svc"
  )!;
  const outcome = await onAsterisk(scenario);
  check(scenario, outcome);
  const hangups = outcome.actions.filter((action) => action.get("Action") === "Hangup");
  assert.deepEqual(hangups.map((action) => action.get("Channel")), ["PJSIP/alice-0000001f"]);
});

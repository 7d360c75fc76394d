/**
 * The call commands on the Asterisk adapter against a tiny AMI peer (`tiny_asterisk.ts`) that
 * records what svc sends and plays the events a test writes: the exact actions of each command
 * (the recorded sessions of the scenario table prove what Asterisk then does), their refusals,
 * and the remote-control NOTIFY of `answer`.
 */
import assert from "node:assert/strict";
import { PlatformUnavailable } from "../../../../lib/errors.ts";
import type { CallCommand } from "../../../../lib/platform/call_control.ts";
import { PlatformRefusal } from "../../../../lib/platform/port.ts";
import { findUserByUsername } from "../../../../lib/store/users.ts";
import { confd } from "../../../helpers.ts";
import { check, onAsterisk } from "../scenario_runner.ts";
import { SCENARIOS } from "../scenarios.ts";
import { asteriskContext } from "./fixtures.ts";
import { type AmiFields, channel, connected, tinyAsterisk } from "./tiny_asterisk.ts";

const refused = (reason: string, message?: RegExp) => (error: unknown) =>
  error instanceof PlatformRefusal && error.reason === reason &&
  (message === undefined || message.test(error.message));

const TRUNK = { Channel: "PJSIP/trunk-00000001", Uniqueid: "1700000000.1" };
const BOB = { Channel: "PJSIP/bob-00000002", Uniqueid: "1700000000.2" };
const CAROL = { Channel: "PJSIP/carol-00000003", Uniqueid: "1700000000.3" };
const LINKED = "1700000000.1";

const enter = (who: { Channel: string; Uniqueid: string }, bridge: string): AmiFields => ({
  Event: "BridgeEnter",
  BridgeUniqueid: bridge,
  ...who,
  Linkedid: LINKED,
});

/** Bob's consultation of carol about the trunk's call, answered: the events Asterisk sends. */
const CONSULTATION_ANSWERED: AmiFields[] = [
  {
    Event: "UserEvent",
    UserEvent: "SvcTransfer",
    Initiator: BOB.Uniqueid,
    Transferred: TRUNK.Uniqueid,
    Exten: "1003",
    Context: "default",
  },
  { Event: "BridgeLeave", BridgeUniqueid: "b1", ...BOB },
  { Event: "BridgeLeave", BridgeUniqueid: "b1", ...TRUNK },
  ...channel(CAROL.Channel, CAROL.Uniqueid, LINKED, 5),
  { Event: "Newstate", ChannelState: "6", ...CAROL, Linkedid: LINKED },
  enter(BOB, "b3"),
  enter(CAROL, "b3"),
];

/** A call from a trunk rings bob's phone; answered (and bridged) when `up`. */
async function trunkCallsBob(up: boolean) {
  const a = await connected();
  await a.play(
    ...channel(TRUNK.Channel, TRUNK.Uniqueid, LINKED, 6),
    ...channel(BOB.Channel, BOB.Uniqueid, LINKED, 5),
  );
  if (up) {
    await a.play(
      { Event: "Newstate", ChannelState: "6", ...BOB, Linkedid: LINKED },
      enter(BOB, "b1"),
      enter(TRUNK, "b1"),
    );
  }
  a.take();
  const command = (callId: string, run: CallCommand) => a.platform.callCommand(callId, run);
  /** The actions svc sent since the last call, without their ActionIDs. */
  let seen = a.peer.actions.length;
  const sent = () => {
    const actions = a.peer.actions.slice(seen).filter((action) =>
      !["Ping"].includes(action.get("Action") ?? "")
    );
    seen = a.peer.actions.length;
    return actions.map((action) =>
      Object.fromEntries(action.headers.filter(([key]) => key !== "ActionID"))
    );
  };
  return { ...a, command, sent };
}

Deno.test("answer: the remote-control NOTIFY to the ringing phone; its answer comes as events", async () => {
  const a = await trunkCallsBob(false);
  try {
    await a.command(BOB.Uniqueid, { kind: "answer" });
    assert.deepEqual(a.sent(), [{
      Action: "PJSIPNotify",
      Endpoint: "bob",
      Variable: "Event=talk",
    }]);
    await a.play({ Event: "Newstate", ChannelState: "6", ...BOB, Linkedid: LINKED });
    assert.deepEqual(a.take(), [["bob", "EventEstablished"]]);
    await assert.rejects(() => a.command(BOB.Uniqueid, { kind: "answer" }), refused("not_ringing"));
    // the trunk's party is a call too, with no user: nothing to notify
    await assert.rejects(
      () => a.command(TRUNK.Uniqueid, { kind: "hold" }),
      refused("not_talking"),
      "not bridged yet",
    );
  } finally {
    await a.close();
  }
});

Deno.test("answer refused not_supported: Asterisk refusing the NOTIFY, a phone that is no PJSIP one", async (s) => {
  const a = await trunkCallsBob(false);
  try {
    await s.step("Asterisk's error names the phone", async () => {
      a.peer.notify = "Response: Error\r\nMessage: Unable to retrieve endpoint bob";
      await assert.rejects(
        () => a.command(BOB.Uniqueid, { kind: "answer" }),
        refused("not_supported", /^phone 1002 cannot answer .*Unable to retrieve endpoint bob$/),
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
      assert.ok(await findUserByUsername(a.ctx.services.store, "dave"));
      // a command reads the directory afresh: from now on the adapter knows dave's phone
      await assert.rejects(() => a.command("none", { kind: "answer" }), refused("no_call"));
      await a.play(...channel("DAHDI/1-1", "1700000000.9", LINKED, 5));
      a.sent();
      await assert.rejects(
        () => a.command("1700000000.9", { kind: "answer" }),
        refused("not_supported", /^phone 1004 cannot answer .*DAHDI\/1 takes no remote-control/),
      );
      assert.deepEqual(a.sent(), []);
    });
  } finally {
    await a.close();
  }
});

Deno.test("hold, resume, mute, DTMF, recording: the actions sent, and the state the events give", async (s) => {
  const a = await trunkCallsBob(true);
  try {
    await s.step("hold: announced, then both leave their bridge at once", async () => {
      await a.command(BOB.Uniqueid, { kind: "hold" });
      assert.deepEqual(a.sent(), [
        { Action: "UserEvent", UserEvent: "SvcHold", Holder: BOB.Uniqueid, Held: TRUNK.Uniqueid },
        {
          Action: "Redirect",
          Channel: TRUNK.Channel,
          Context: "svc-hold",
          Exten: "s",
          Priority: "1",
          ExtraChannel: BOB.Channel,
          ExtraContext: "svc-wait",
          ExtraExten: "s",
          ExtraPriority: "1",
        },
      ]);
      // Asterisk tells every svc process: bob holds
      await a.play(
        {
          Event: "UserEvent",
          Privilege: "user,all",
          UserEvent: "SvcHold",
          Holder: BOB.Uniqueid,
          Held: TRUNK.Uniqueid,
        },
        { Event: "BridgeLeave", BridgeUniqueid: "b1", ...BOB },
        {
          Event: "BridgeLeave",
          BridgeUniqueid: "b1",
          ...TRUNK,
        },
      );
      assert.deepEqual(a.take(), [["bob", "EventOnHold"]]);
      const bob = (await a.platform.liveCalls()).find((call) => call.callId === BOB.Uniqueid);
      assert.deepEqual([bob?.onHold, bob?.peerCallId, bob?.talkingTo], [true, TRUNK.Uniqueid, []]);
    });
    await s.step("resume: bridged back; both in one bridge is the resume", async () => {
      await a.command(BOB.Uniqueid, { kind: "resume" });
      assert.deepEqual(a.sent(), [
        { Action: "Bridge", Channel1: BOB.Channel, Channel2: TRUNK.Channel },
      ]);
      await a.play(enter(BOB, "b2"), enter(TRUNK, "b2"));
      assert.deepEqual(a.take(), [["bob", "EventEstablished"]]);
      await assert.rejects(() => a.command(BOB.Uniqueid, { kind: "resume" }), refused("not_held"));
    });
    await s.step("mute: the audio from the party, announced to the other processes", async () => {
      await a.command(BOB.Uniqueid, { kind: "mute", on: true });
      assert.deepEqual(a.sent(), [
        { Action: "MuteAudio", Channel: BOB.Channel, Direction: "in", State: "on" },
        { Action: "UserEvent", UserEvent: "SvcMute", Uniqueid: BOB.Uniqueid, Muted: "1" },
      ]);
    });
    await s.step("DTMF: one PlayDTMF per digit, as received from the party", async () => {
      await a.command(BOB.Uniqueid, { kind: "dtmf", digits: "1#" });
      assert.deepEqual(
        a.sent(),
        ["1", "#"].map((digit) => ({
          Action: "PlayDTMF",
          Channel: BOB.Channel,
          Digit: digit,
          Duration: "120",
          Receive: "true",
        })),
      );
    });
    await s.step(
      "recording: MixMonitor into the directory set, a pause records silence",
      async () => {
        await a.command(BOB.Uniqueid, { kind: "record", action: "start" });
        const [start] = a.sent();
        assert.equal(start?.Action, "MixMonitor");
        assert.match(start?.File ?? "", /^1700000000\.1-1700000000\.2-\d+\.wav$/);
        await a.command(BOB.Uniqueid, { kind: "record", action: "pause" });
        await a.command(BOB.Uniqueid, { kind: "record", action: "resume" });
        await a.command(BOB.Uniqueid, { kind: "record", action: "stop" });
        assert.deepEqual(a.sent(), [
          { Action: "MixMonitorMute", Channel: BOB.Channel, Direction: "both", State: "1" },
          { Action: "MixMonitorMute", Channel: BOB.Channel, Direction: "both", State: "0" },
          { Action: "StopMixMonitor", Channel: BOB.Channel },
        ]);
      },
    );
  } finally {
    await a.close();
  }
});

Deno.test("transfers and a conference: the actions sent", async (s) => {
  const a = await trunkCallsBob(true);
  try {
    await s.step(
      "blind: announced, the trunk's party sent on while bob waits, bob hung up",
      async () => {
        await a.platform.startTransfer({
          flow: "blind",
          initiatorCallId: BOB.Uniqueid,
          transferredCallId: TRUNK.Uniqueid,
          exten: "1003",
          context: "default",
          timeoutMs: null,
        });
        assert.deepEqual(a.sent(), [
          {
            Action: "UserEvent",
            UserEvent: "SvcBlindTransfer",
            Initiator: BOB.Uniqueid,
            Transferred: TRUNK.Uniqueid,
            Exten: "1003",
            Context: "default",
          },
          {
            Action: "Redirect",
            Channel: TRUNK.Channel,
            Context: "default",
            Exten: "1003",
            Priority: "1",
            ExtraChannel: BOB.Channel,
            ExtraContext: "svc-wait",
            ExtraExten: "s",
            ExtraPriority: "1",
          },
          { Action: "Hangup", Channel: BOB.Channel },
        ]);
      },
    );
  } finally {
    await a.close();
  }
  const b = await trunkCallsBob(true);
  try {
    await s.step(
      "attended: the consultation's context and time set, then one Redirect",
      async () => {
        await b.platform.startTransfer({
          flow: "attended",
          initiatorCallId: BOB.Uniqueid,
          transferredCallId: TRUNK.Uniqueid,
          exten: "1003",
          context: "default",
          timeoutMs: 8000,
        });
        assert.deepEqual(b.sent(), [
          {
            Action: "Setvar",
            Channel: BOB.Channel,
            Variable: "SVC_CONSULT_CONTEXT",
            Value: "default",
          },
          { Action: "Setvar", Channel: BOB.Channel, Variable: "SVC_CONSULT_TIMEOUT", Value: "8" },
          {
            Action: "UserEvent",
            UserEvent: "SvcTransfer",
            Initiator: BOB.Uniqueid,
            Transferred: TRUNK.Uniqueid,
            Exten: "1003",
            Context: "default",
          },
          {
            Action: "Redirect",
            Channel: TRUNK.Channel,
            Context: "svc-hold",
            Exten: "s",
            Priority: "1",
            ExtraChannel: BOB.Channel,
            ExtraContext: "svc-consult",
            ExtraExten: "1003",
            ExtraPriority: "1",
          },
        ]);
      },
    );
    await s.step("the consultation answered, a conference of the three", async () => {
      await b.play(...CONSULTATION_ANSWERED);
      assert.deepEqual(b.take(), [
        ["bob", "EventDialing"],
        ["carol", "EventRinging"],
        ["bob", "EventEstablished"],
        ["carol", "EventEstablished"],
      ]);
      b.sent();
      await b.platform.startConference(BOB.Uniqueid, [TRUNK.Uniqueid, CAROL.Uniqueid]);
      const setvars = (who: typeof BOB, marked: string) => [
        {
          Action: "Setvar",
          Channel: who.Channel,
          Variable: "SVC_CONFERENCE",
          Value: `svc:${BOB.Uniqueid}`,
        },
        { Action: "Setvar", Channel: who.Channel, Variable: "SVC_CONF_MARKED", Value: marked },
      ];
      const into = (who: typeof BOB, prefix = "") => ({
        [`${prefix}Channel`]: who.Channel,
        [`${prefix}Context`]: "svc-conference",
        [`${prefix}Exten`]: "s",
        [`${prefix}Priority`]: "1",
      });
      assert.deepEqual(b.sent(), [
        {
          Action: "UserEvent",
          UserEvent: "SvcConference",
          Host: BOB.Uniqueid,
          Members: [BOB, TRUNK, CAROL].map((who) => who.Uniqueid).join(","),
        },
        ...setvars(BOB, "1"),
        ...setvars(TRUNK, "0"),
        ...setvars(CAROL, "0"),
        { Action: "Redirect", ...into(TRUNK) },
        { Action: "Redirect", ...into(CAROL), ...into(BOB, "Extra") },
      ]);
    });
  } finally {
    await b.close();
  }
});

Deno.test("a cancelled transfer: the bridge back tried again while Asterisk says the initiator is still leaving its consultation", async (s) => {
  /** bob consults carol about the trunk's call (the events of session 22). */
  const consulting = async () => {
    const a = await trunkCallsBob(true);
    await a.platform.startTransfer({
      flow: "attended",
      initiatorCallId: BOB.Uniqueid,
      transferredCallId: TRUNK.Uniqueid,
      exten: "1003",
      context: "default",
      timeoutMs: null,
    });
    await a.play(...CONSULTATION_ANSWERED);
    a.sent();
    return a;
  };
  const bridges = (a: Awaited<ReturnType<typeof consulting>>) =>
    a.sent().filter((action) => action.Action === "Bridge");
  await s.step("refused twice as still leaving: the third Bridge is the one", async () => {
    const a = await consulting();
    try {
      a.peer.refusals.set("bridge", {
        times: 2,
        message: `Unable to add Channel1 to bridge: ${BOB.Channel}`,
      });
      await a.platform.cancelTransfer(BOB.Uniqueid);
      assert.deepEqual(
        bridges(a),
        [1, 2, 3].map(() => ({
          Action: "Bridge",
          Channel1: BOB.Channel,
          Channel2: TRUNK.Channel,
        })),
      );
    } finally {
      await a.close();
    }
  });
  await s.step("any other refusal is the command's at once", async () => {
    const a = await consulting();
    try {
      a.peer.refusals.set("bridge", { times: 1, message: "Channel2 does not exist" });
      await assert.rejects(
        a.platform.cancelTransfer(BOB.Uniqueid),
        refused("pbx_refused", /Channel2 does not exist/),
      );
      assert.equal(bridges(a).length, 1);
    } finally {
      await a.close();
    }
  });
});

Deno.test("Asterisk unreachable: PlatformUnavailable, nothing sent", async () => {
  const peer = tinyAsterisk();
  const t = await asteriskContext(peer.port); // never started: not connected
  try {
    for (const command of [{ kind: "hangup" }, { kind: "hold" }] as CallCommand[]) {
      await assert.rejects(
        () => t.platform.callCommand("1700000000.2", command),
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

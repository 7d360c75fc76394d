/**
 * `dialFromMobile` on the Asterisk adapter, against a tiny AMI peer (`tiny_asterisk.ts`): no
 * recorded session holds one, so the peer checks the Originate svc sends and plays events modelled
 * on the recorded ones (03-dial-outside-number: the test PBX's dialplan answers an outside number
 * itself, `NoOp`, `Answer`, `Wait`; 13-dial-to-queue: an originated Local channel, its `;2` half,
 * Asterisk optimizing it away). The resulting phone events and history must be the simulator's
 * (`tests/lib/platform/dial_from_mobile_test.ts`).
 */
import assert from "node:assert/strict";
import { PlatformUnavailable } from "../../../../lib/errors.ts";
import { type PlatformEvent, PlatformRefusal } from "../../../../lib/platform/port.ts";
import { findUserByUsername } from "../../../../lib/store/users.ts";
import { confd } from "../../../helpers.ts";
import { callEnds, phoneEvents } from "../fixtures.ts";
import { asteriskContext } from "./fixtures.ts";
import { type AmiFields, connected, tinyAsterisk } from "./tiny_asterisk.ts";

const MOBILE = "0611223344";
const LOCAL = `Local/${MOBILE}@default-00000001`;
const BOB = "PJSIP/bob-00000002";
const BOB_ID = "1795000000.3";

const refused = (reason: string) => (error: unknown) =>
  error instanceof PlatformRefusal && error.reason === reason;

/** Phone events as [username, type, DN, otherDN, uniqueId]. */
const summary = (events: PlatformEvent[]) =>
  phoneEvents(events).map((e) => [e.username, e.eventType, e.DN, e.otherDN, e.uniqueId]);

/** What Asterisk says about the channels of call `linked` (svc's ChannelId). */
function pbx(linked: string) {
  const half1 = { Channel: `${LOCAL};1`, Uniqueid: linked, Linkedid: linked };
  const half2 = { Channel: `${LOCAL};2`, Uniqueid: `${linked};2`, Linkedid: linked };
  const exten = (half: AmiFields, context: string, exten: string, app: string, data: string) => ({
    Event: "Newexten",
    ...half,
    Context: context,
    Exten: exten,
    Application: app,
    AppData: data,
  });
  const created: AmiFields[] = [
    { Event: "Newchannel", ...half1, ChannelState: "0", Context: "default", Exten: "1002" },
    { Event: "Newchannel", ...half2, ChannelState: "4", Context: "default", Exten: MOBILE },
    { Event: "DialBegin", DestChannel: half1.Channel, DestUniqueid: linked },
    exten(half2, "default", MOBILE, "NoOp", `outside call to ${MOBILE}`),
  ];
  return {
    half1,
    half2,
    /** The Originate's Local channel and its `;2` half, which runs the mobile's number. */
    created,
    /** The mobile answers: both halves go up, the first runs the destination. */
    mobileAnswers: (destination: string): AmiFields[] => [
      exten(half2, "default", MOBILE, "Answer", ""),
      { Event: "Newstate", ...half2, ChannelState: "6" },
      { Event: "Newstate", ...half1, ChannelState: "6" },
      { Event: "DialEnd", DestChannel: half1.Channel, DestUniqueid: linked, DialStatus: "ANSWER" },
      exten(half2, "default", MOBILE, "Wait", "3600"),
      exten(half1, "default", destination, "NoOp", `call to ${destination}`),
    ],
    hangup: (half: AmiFields, cause = "16") => ({ Event: "Hangup", ...half, Cause: cause }),
    exten,
  };
}

/** svc's Originate, its ChannelId (the call's linkedId) as the test reads it. */
function originateOf(a: Awaited<ReturnType<typeof connected>>) {
  const [originate] = a.peer.sent("Originate");
  assert.ok(originate, "an Originate was sent");
  const linked = originate.find(([key]) => key === "ChannelId")?.[1];
  assert.match(linked ?? "", /^[0-9a-f-]{36}$/);
  return { originate, linked: linked! };
}

Deno.test("the Originate: a Local channel to the mobile, then the destination in the line's context", async () => {
  const a = await connected();
  try {
    const { linkedId } = await a.platform.dialFromMobile(a.w.alice, MOBILE, "1002", { crm: "42" });
    const { originate, linked } = originateOf(a);
    assert.equal(linkedId, linked);
    assert.deepEqual(originate, [
      ["Action", "Originate"],
      ["Channel", `Local/${MOBILE}@default`],
      ["Context", "default"],
      ["Exten", "1002"],
      ["Priority", "1"],
      ["Timeout", String(a.w.alice.ring_seconds * 1000)],
      ["ChannelId", linked],
      ["Variable", "__USR_crm=42"],
      // no CallerID: the destination sees the user, the mobile the destination
      ["Variable", 'CALLERID(all)="alice" <1001>'],
      ["Variable", 'CONNECTEDLINE(all)="bob" <1002>'],
      ["Async", "true"],
    ]);

    // an outside destination: its number is the name the mobile shows
    await a.platform.dialFromMobile(a.w.alice, MOBILE, "0698765432", {});
    const second = a.peer.sent("Originate")[1]!;
    assert.deepEqual(second.filter(([key]) => key === "Variable"), [
      ["Variable", 'CALLERID(all)="alice" <1001>'],
      ["Variable", 'CONNECTEDLINE(all)="0698765432" <0698765432>'],
    ]);
    assert.deepEqual(second.find(([key]) => key === "Exten"), ["Exten", "0698765432"]);
  } finally {
    await a.close();
  }
});

Deno.test("the mobile answers, then bob: the user's events on the Local channel, bob's as for a dial", async () => {
  const a = await connected();
  const { w, platform } = a;
  try {
    await platform.dialFromMobile(w.alice, MOBILE, "1002", { crm: "42" });
    const { linked } = originateOf(a);
    const p = pbx(linked);
    await a.play(...p.created, { Event: "Newstate", ...p.half1, ChannelState: "5" });
    assert.deepEqual(a.takeAll(), [], "no event while the mobile rings");

    await a.play(...p.mobileAnswers("1002"));
    assert.deepEqual(summary(a.takeAll()), [["alice", "EventDialing", "1001", "1002", linked]]);
    // the user's party is the mobile, on no line of the user's
    const mine = (await platform.liveCalls()).filter((call) => call.userId === w.alice.id);
    assert.deepEqual(mine.map((call) => [call.lineId, call.number]), [[null, MOBILE]]);

    await a.play(
      p.exten(p.half1, "default", "1002", "Gosub", "svc-user,1002,1(PJSIP/bob,30,2,default,5)"),
      p.exten(p.half1, "svc-user", "1002", "Dial", "PJSIP/bob,30"),
      { Event: "Newchannel", Channel: BOB, ChannelState: "0", Uniqueid: BOB_ID, Linkedid: linked },
      { Event: "DialBegin", ...p.half1, DestChannel: BOB, DestUniqueid: BOB_ID },
      { Event: "Newstate", Channel: BOB, ChannelState: "5", Uniqueid: BOB_ID, Linkedid: linked },
      { Event: "OriginateResponse", Response: "Success", Uniqueid: linked, Reason: "4" },
      { Event: "Newstate", Channel: BOB, ChannelState: "6", Uniqueid: BOB_ID, Linkedid: linked },
      {
        Event: "DialEnd",
        ...p.half1,
        DestChannel: BOB,
        DestUniqueid: BOB_ID,
        DialStatus: "ANSWER",
      },
    );
    assert.deepEqual(summary(a.takeAll()), [
      ["bob", "EventRinging", "1002", "1001", BOB_ID],
      ["alice", "EventEstablished", "1001", "1002", linked],
      ["bob", "EventEstablished", "1002", "1001", BOB_ID],
    ]);

    // bob hangs up: Dial returns on the Local channel, which ends, then its other half
    await a.play(
      { Event: "Hangup", Channel: BOB, Uniqueid: BOB_ID, Linkedid: linked, Cause: "16" },
      p.hangup(p.half1),
      p.hangup(p.half2),
    );
    const events = a.takeAll();
    const phone = phoneEvents(events);
    assert.deepEqual(summary(events), [
      ["alice", "EventReleased", "1001", "1002", linked],
      ["bob", "EventReleased", "1002", "1001", BOB_ID],
    ]);
    for (const event of phone) {
      assert.equal(event.linkedId, linked);
      assert.equal(event.userId, event.username === "alice" ? w.alice.id : w.bob.id);
      assert.deepEqual(event.userData, { PLATFORM_USERID: String(event.userId), USR_crm: "42" });
    }
    const [ended] = callEnds(events);
    assert.equal(ended?.linkedId, linked);
    assert.deepEqual(
      ended?.records.map((r) => [
        r.userId,
        r.status,
        r.srcUsername,
        r.srcNum,
        r.dstUsername,
        r.dstNum,
        r.answeredMs !== null,
      ]),
      [
        [w.alice.id, "emitted", "alice", "1001", "bob", "1002", true],
        [w.bob.id, "answered", "alice", "1001", "bob", "1002", true],
      ],
    );
    assert.deepEqual(platform.calls(), []);
  } finally {
    await a.close();
  }
});

Deno.test("the mobile does not answer: EventFailure, no history, nothing else rings", async () => {
  const a = await connected();
  try {
    await a.platform.dialFromMobile(a.w.alice, MOBILE, "1002", {});
    const { linked } = originateOf(a);
    const p = pbx(linked);
    await a.play(
      ...p.created,
      { Event: "Newstate", ...p.half1, ChannelState: "5" },
      // the Originate's Timeout: the Local channel is hung up, then its other half
      {
        Event: "DialEnd",
        DestChannel: p.half1.Channel,
        DestUniqueid: linked,
        DialStatus: "NOANSWER",
      },
      p.hangup(p.half1, "19"),
      p.hangup(p.half2, "19"),
      { Event: "OriginateResponse", Response: "Failure", Uniqueid: linked, Reason: "3" },
    );
    const events = a.takeAll();
    assert.deepEqual(summary(events), [["alice", "EventFailure", "1001", "1002", linked]]);
    assert.deepEqual(callEnds(events), []);
    assert.deepEqual(a.platform.calls(), []);
  } finally {
    await a.close();
  }
});

Deno.test("an outside destination answers (the test PBX's dialplan), then the mobile hangs up", async () => {
  const a = await connected();
  try {
    await a.platform.dialFromMobile(a.w.alice, MOBILE, "0698765432", {});
    const { linked } = originateOf(a);
    const p = pbx(linked);
    await a.play(
      ...p.created,
      ...p.mobileAnswers("0698765432"),
      p.exten(p.half1, "default", "0698765432", "Answer", ""),
      p.exten(p.half1, "default", "0698765432", "Wait", "3600"),
    );
    assert.deepEqual(summary(a.takeAll()), [
      ["alice", "EventDialing", "1001", "0698765432", linked],
      ["alice", "EventEstablished", "1001", "0698765432", linked],
    ]);
    await a.play(p.hangup(p.half2), p.hangup(p.half1));
    const events = a.takeAll();
    assert.deepEqual(summary(events), [["alice", "EventReleased", "1001", "0698765432", linked]]);
    assert.deepEqual(
      callEnds(events)[0]?.records.map((r) => [r.status, r.srcNum, r.dstUsername, r.dstNum]),
      [["emitted", "1001", "", "0698765432"]],
    );
  } finally {
    await a.close();
  }
});

Deno.test("Asterisk optimizes the Local channel away: the call goes on until a party hangs up", async () => {
  const a = await connected();
  const { w, platform } = a;
  try {
    await platform.dialFromMobile(w.alice, MOBILE, "1002", {});
    const { linked } = originateOf(a);
    const p = pbx(linked);
    // a real PBX: the `;2` half dials the mobile through a trunk
    const trunk = {
      Channel: "PJSIP/trunk-00000003",
      Uniqueid: "1795000000.4",
      Linkedid: linked,
    };
    const bob = { Channel: BOB, Uniqueid: BOB_ID, Linkedid: linked };
    await a.play(
      p.created[0]!,
      p.created[1]!,
      p.exten(p.half2, "default", MOBILE, "Dial", `PJSIP/${MOBILE}@trunk,60`),
      { Event: "Newchannel", ...trunk, ChannelState: "0" },
      { Event: "Newstate", ...trunk, ChannelState: "5" },
      { Event: "Newstate", ...p.half1, ChannelState: "5" },
      { Event: "Newstate", ...trunk, ChannelState: "6" },
      { Event: "DialEnd", ...p.half2, DestChannel: trunk.Channel, DialStatus: "ANSWER" },
      { Event: "Newstate", ...p.half2, ChannelState: "6" },
      { Event: "Newstate", ...p.half1, ChannelState: "6" },
      p.exten(p.half1, "svc-user", "1002", "Dial", "PJSIP/bob,30"),
      { Event: "Newchannel", ...bob, ChannelState: "0" },
      { Event: "Newstate", ...bob, ChannelState: "5" },
      { Event: "Newstate", ...bob, ChannelState: "6" },
      { Event: "DialEnd", ...p.half1, DestChannel: BOB, DialStatus: "ANSWER" },
    );
    assert.deepEqual(a.take(), [
      ["alice", "EventDialing"],
      ["bob", "EventRinging"],
      ["alice", "EventEstablished"],
      ["bob", "EventEstablished"],
    ]);
    // both halves bridged: Asterisk swaps the trunk into bob's bridge and drops the Local channel
    await a.play(
      { Event: "LocalOptimizationBegin", LocalOneChannel: `${LOCAL};1` },
      { Event: "LocalOptimizationEnd", LocalOneChannel: `${LOCAL};1` },
      p.hangup(p.half2),
      p.hangup(p.half1),
    );
    assert.deepEqual(a.take(), []);
    assert.deepEqual(platform.calls(), [linked]);
    // the mobile hangs up: the bridge ends bob's channel
    await a.play(
      { Event: "Hangup", ...trunk, Cause: "16" },
      { Event: "Hangup", ...bob, Cause: "16" },
    );
    const events = a.takeAll();
    assert.deepEqual(summary(events), [
      ["alice", "EventReleased", "1001", "1002", linked],
      ["bob", "EventReleased", "1002", "1001", BOB_ID],
    ]);
    assert.equal(callEnds(events)[0]?.records.length, 2);
    assert.deepEqual(platform.calls(), []);
  } finally {
    await a.close();
  }
});

Deno.test("refusals: no_line before anything; Asterisk unreachable: PlatformUnavailable", async () => {
  const peer = tinyAsterisk();
  const t = await asteriskContext(peer.port); // never started: not connected
  try {
    const api = await confd(t.ctx);
    await api.create("/users", { firstname: "dave", username: "dave" });
    const dave = (await findUserByUsername(t.ctx.services.store, "dave"))!;
    await assert.rejects(
      () => t.platform.dialFromMobile(dave, MOBILE, "1002", {}),
      refused("no_line"),
    );
    await assert.rejects(
      () => t.platform.dialFromMobile(t.w.alice, MOBILE, "1002", {}),
      (error) => error instanceof PlatformUnavailable,
    );
    assert.deepEqual(peer.actions, []);
  } finally {
    await t.close();
    await peer.close();
  }
});

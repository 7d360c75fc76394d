/**
 * The CTI socket's commands on the user's own calls (docs/cti.md, lib/cti/call_commands.ts) over
 * a real server and Deno's WebSocket client, on the simulator: hold, answer, hang-up, DTMF,
 * transfers, conferences and the current calls, with the phone events they cause, the messages
 * they answer, their errors, their ACLs, and another user's call refused.
 */
import assert from "node:assert/strict";
import type { LiveCall } from "../../lib/platform/call_control.ts";
import { getUser, type UserRecord } from "../../lib/store/users.ts";
import { login } from "../helpers.ts";
import {
  Client,
  type Fixture,
  fixture,
  type Message,
  refused,
  socketWithAcls,
  userWithLine,
} from "./cti_fixtures.ts";

type Name = "alice" | "bob" | "carol";
const EXTEN: Record<Name, string> = { alice: "1001", bob: "1002", carol: "1003" };

interface World {
  f: Fixture;
  users: Record<Name, UserRecord>;
  /** A socket of each user, opened with the token a login gives (`alias.ctiuser`). */
  as: Record<Name, Client>;
  /** `caller` dials `callee`'s number; the caller's phone, then the callee's, answer. */
  call(caller: Name, callee: Name): Promise<void>;
  /** `caller` dials `callee`'s number; the caller's phone answers, the callee's rings. */
  ring(caller: Name, callee: Name): Promise<void>;
  /** The parties of the calls in progress. */
  calls(): Promise<LiveCall[]>;
  /** `user`'s newest party. */
  callOf(user: Name): Promise<LiveCall>;
  act(user: Name, action: "answer" | "hangup" | "hold" | "resume"): Promise<void>;
  /** A socket of `user` whose token holds `acls` only. */
  socket(user: Name, acls: string[]): Promise<Client>;
}

/** alice 1001, bob 1002 and carol 1003, their phones answering by hand, a socket each. */
async function withWorld(test: (w: World) => Promise<void>): Promise<void> {
  const f = await fixture();
  try {
    const { platform, sim, store } = f.ctx.services;
    const users = {} as Record<Name, UserRecord>;
    const as = {} as Record<Name, Client>;
    for (const name of ["alice", "bob", "carol"] as const) {
      const { id } = await userWithLine(f.api, name, EXTEN[name]);
      users[name] = (await getUser(store, id))!;
      await sim!.setPolicy(EXTEN[name], { policy: "manual" });
      as[name] = await f.open(await login(f.ctx, "login", name));
    }
    const w: World = {
      f,
      users,
      as,
      async ring(caller, callee) {
        await platform.dialNumber(users[caller], EXTEN[callee], {});
        await sim!.act(EXTEN[caller], "answer");
        await as[callee].next(phoneEvent("EventRinging"), `${callee} ringing`);
      },
      async call(caller, callee) {
        await w.ring(caller, callee);
        await sim!.act(EXTEN[callee], "answer");
        for (const name of [caller, callee]) {
          await as[name].next(phoneEvent("EventEstablished"), `${name} established`);
        }
      },
      calls: () => platform.liveCalls(),
      async callOf(user) {
        const call = (await w.calls()).findLast((call) => call.userId === users[user].id);
        assert.ok(call, `${user} has a call`);
        return call;
      },
      act: (user, action) => sim!.act(EXTEN[user], action),
      socket: (user, acls) => socketWithAcls(f, users[user], acls),
    };
    await test(w);
  } finally {
    await f.close();
  }
}

/** A `PhoneEvent` of `eventType`, and of the call `uniqueId` when given. */
const phoneEvent = (eventType: string, uniqueId?: string) => (message: Message) =>
  message.msgType === "PhoneEvent" && message.ctiMessage.eventType === eventType &&
  (uniqueId === undefined || message.ctiMessage.uniqueId === uniqueId);

/** Waits for `client`'s next `PhoneEvent` of `eventType` (and call); answers its `ctiMessage`. */
async function event(client: Client, eventType: string, uniqueId?: string) {
  return (await client.next(phoneEvent(eventType, uniqueId), `${eventType} ${uniqueId ?? ""}`))
    .ctiMessage;
}

/** Sends `command` and waits until it has run (commands run in order): it answered no `Error`. */
async function done(client: Client, command: string, fields: Record<string, unknown> = {}) {
  const errors = client.messages.filter((message) => message.msgType === "Error").length;
  client.web(command, fields);
  client.send({ claz: "ping" });
  await client.type("Pong");
  const now = client.messages.filter((message) => message.msgType === "Error");
  assert.equal(now.length, errors, `${command}: ${JSON.stringify(now.at(-1))}`);
}

/** The state of the calls, to compare before and after a refused command. */
const snapshot = async (w: World) => JSON.stringify(await w.calls());

Deno.test("hold, answer and hangup: the user's current call, or the one its uniqueId names", async () => {
  await withWorld(async (w) => {
    const { alice } = w.as;
    await w.ring("bob", "alice");
    const first = (await w.callOf("alice")).callId;
    alice.web("answer");
    await event(alice, "EventEstablished", first);
    await event(w.as.bob, "EventEstablished");
    await w.ring("carol", "alice");
    const second = (await w.callOf("alice")).callId;
    alice.web("answer", { uniqueId: second });
    assert.equal((await event(alice, "EventEstablished", second)).otherDN, "1003");
    // no uniqueId: the oldest call talking
    alice.web("hold");
    assert.equal((await event(alice, "EventOnHold", first)).otherDN, "1002");
    alice.web("hold", { uniqueId: second });
    await event(alice, "EventOnHold", second);
    // none talking: the oldest held one, taken back (a toggle)
    alice.web("hold");
    await event(alice, "EventEstablished", first);
    assert.deepEqual(
      (await w.calls()).filter((call) => call.userId === w.users.alice.id)
        .map((call) => [call.callId, call.onHold]),
      [[first, false], [second, true]],
    );
    alice.web("hangup", { uniqueId: second });
    await event(alice, "EventReleased", second);
    await event(w.as.carol, "EventReleased");
    alice.web("hangup");
    await event(alice, "EventReleased", first);
    await event(w.as.bob, "EventReleased");
    assert.deepEqual(await w.calls(), []);
  });
});

Deno.test("hangup of a ringing call declines it; a phone that holds its call itself takes it back", async () => {
  await withWorld(async (w) => {
    await w.ring("bob", "alice");
    w.as.alice.web("hangup");
    await event(w.as.alice, "EventReleased");
    await event(w.as.bob, "EventFailure");
    await w.call("alice", "bob");
    const call = (await w.callOf("alice")).callId;
    await w.act("alice", "hold"); // the phone's own hold
    await event(w.as.alice, "EventOnHold", call);
    const before = await snapshot(w);
    assert.match(await refused(w.as.alice, "hold", {}, "HeldByPhone"), /held by its phone/);
    assert.equal(await snapshot(w), before);
    await w.act("alice", "resume");
    await event(w.as.alice, "EventEstablished", call);
  });
});

Deno.test("sendDtmf: the keys go into the current call", async () => {
  await withWorld(async (w) => {
    await w.call("alice", "bob");
    await done(w.as.alice, "sendDtmf", { key: "12*#" });
    // bob heard what alice's keypad would have sent
    const bob = (await w.callOf("bob")).callId;
    const legs = w.f.ctx.services.sim!.calls().flatMap((call) => call.legs);
    assert.equal(legs.find((leg) => leg.uniqueId === bob)?.dtmf, "12*#");
    w.as.alice.web("hold");
    await event(w.as.alice, "EventOnHold");
    // a held call hears nobody to send the keys to
    await refused(w.as.alice, "sendDtmf", { key: "1" }, "NotTalking");
  });
});

Deno.test("every call command without a call, and with fields off the model", async () => {
  await withWorld(async (w) => {
    const { alice } = w.as;
    for (
      const [command, fields, error] of [
        ["hold", {}, "NoCall"],
        ["answer", {}, "NoCall"],
        ["hangup", {}, "NoCall"],
        ["hangup", { uniqueId: "9.9" }, "NoCall"],
        ["sendDtmf", { key: "1" }, "NoCall"],
        ["directTransfer", { destination: "1003" }, "NoCall"],
        ["attendedTransfer", { destination: "1003", device: "SIP/abc" }, "NoCall"],
        ["conference", {}, "NoCall"],
        ["completeTransfer", {}, "NoTransfer"],
        ["cancelTransfer", {}, "NoTransfer"],
        ["conferenceMuteMe", { numConf: "9.9" }, "NoConference"],
        ["conferenceUnmuteMe", { numConf: "9.9" }, "NoConference"],
        ["conferenceMute", { numConf: "9.9", index: 0 }, "NoConference"],
        ["conferenceUnmute", { numConf: "9.9", index: 0 }, "NoConference"],
        ["conferenceKick", { numConf: "9.9", index: 0 }, "NoConference"],
        ["conferenceMuteAll", { numConf: "9.9" }, "NoConference"],
        ["conferenceUnmuteAll", { numConf: "9.9" }, "NoConference"],
        ["hold", { uniqueId: 12 }, "BadRequest"],
        ["answer", { uniqueId: "" }, "BadRequest"],
        ["hangup", { uniqueId: "x".repeat(300) }, "BadRequest"],
        ["directTransfer", {}, "BadRequest"],
        ["directTransfer", { destination: 1003 }, "BadRequest"],
        ["directTransfer", { destination: "abc" }, "BadRequest"],
        ["attendedTransfer", { destination: "1".repeat(300) }, "BadRequest"],
        ["conferenceMuteMe", {}, "BadRequest"],
        ["conferenceMuteAll", { numConf: 1 }, "BadRequest"],
        ["conferenceMute", { numConf: "1.1" }, "BadRequest"],
        ["conferenceUnmute", { numConf: "1.1", index: -1 }, "BadRequest"],
        ["conferenceKick", { numConf: "1.1", index: "0" }, "BadRequest"],
        ["sendDtmf", {}, "BadRequest"],
        ["sendDtmf", { key: "a" }, "BadRequest"],
        ["sendDtmf", { key: "1".repeat(65) }, "BadRequest"],
      ] as const
    ) {
      await refused(alice, command, fields, error);
    }
    alice.web("getCurrentCallsPhoneEvents");
    assert.deepEqual((await alice.type("CurrentCallsPhoneEvents")).ctiMessage, { events: [] });
  });
});

Deno.test("a plain CTI user cannot act on another user's call by its uniqueId", async () => {
  await withWorld(async (w) => {
    await w.ring("bob", "alice");
    const ringing = (await w.callOf("alice")).callId;
    const before = await snapshot(w);
    for (const command of ["answer", "hangup"]) {
      const message = await refused(w.as.carol, command, { uniqueId: ringing }, "Forbidden");
      assert.match(message, /another user's/);
    }
    assert.equal(await snapshot(w), before);
    w.as.alice.web("answer");
    await event(w.as.alice, "EventEstablished", ringing);
    const talking = await snapshot(w);
    await refused(w.as.carol, "hold", { uniqueId: ringing }, "Forbidden");
    await refused(w.as.carol, "hangup", { uniqueId: ringing }, "Forbidden");
    assert.equal(await snapshot(w), talking);
    // bob's own call is his to act on; alice's party is not
    await refused(w.as.bob, "hold", { uniqueId: ringing }, "Forbidden");
    assert.equal(await snapshot(w), talking);
  });
});

Deno.test("directTransfer: the peer calls the destination, the user leaves", async () => {
  await withWorld(async (w) => {
    await w.call("alice", "bob");
    w.as.alice.web("directTransfer", { destination: " 10-03 " }); // sanitized as a dial's
    assert.equal((await event(w.as.alice, "EventReleased")).otherDN, "1002");
    assert.equal((await event(w.as.carol, "EventRinging")).otherDN, "1002");
    await w.act("carol", "answer");
    assert.equal((await event(w.as.bob, "EventEstablished")).otherDN, "1003");
    assert.equal((await event(w.as.carol, "EventEstablished")).otherDN, "1002");
  });
});

Deno.test("attendedTransfer then completeTransfer: bob and carol talk, alice is released", async () => {
  await withWorld(async (w) => {
    const { alice } = w.as;
    await w.call("alice", "bob");
    const call = (await w.callOf("alice")).callId;
    alice.web("attendedTransfer", { destination: "1003", device: "SIP/abc" });
    assert.equal((await event(alice, "EventDialing", call)).otherDN, "1003");
    assert.equal((await event(w.as.carol, "EventRinging")).otherDN, "1001");
    // the transfer goes on: a second one, and a hold of its call, are refused
    await refused(alice, "attendedTransfer", { destination: "1003" }, "TransferInProgress");
    await refused(alice, "hold", {}, "TransferInProgress");
    await w.act("carol", "answer");
    assert.equal((await event(alice, "EventEstablished", call)).otherDN, "1003");
    assert.equal((await event(w.as.carol, "EventEstablished")).otherDN, "1001");
    alice.web("completeTransfer");
    assert.equal((await event(alice, "EventReleased", call)).otherDN, "1003");
    assert.equal((await event(w.as.bob, "EventEstablished")).otherDN, "1003");
    assert.equal((await event(w.as.carol, "EventEstablished")).otherDN, "1002");
    assert.deepEqual((await w.calls()).map((party) => party.userId), [
      w.users.bob.id,
      w.users.carol.id,
    ]);
    await refused(alice, "completeTransfer", {}, "NoTransfer");
  });
});

Deno.test("attendedTransfer then cancelTransfer: carol is released, alice and bob talk again", async () => {
  await withWorld(async (w) => {
    const { alice } = w.as;
    await w.call("alice", "bob");
    const call = (await w.callOf("alice")).callId;
    alice.web("attendedTransfer", { destination: "1003" });
    await event(alice, "EventDialing", call);
    await event(w.as.carol, "EventRinging");
    alice.web("cancelTransfer");
    await event(w.as.carol, "EventReleased");
    assert.equal((await event(alice, "EventEstablished", call)).otherDN, "1002");
    await refused(alice, "cancelTransfer", {}, "NoTransfer");
  });
});

Deno.test("getCurrentCallsPhoneEvents: the user's calls as the PhoneEvents of their state now", async () => {
  await withWorld(async (w) => {
    const { alice } = w.as;
    const current = async () => {
      alice.web("getCurrentCallsPhoneEvents");
      const answer = await alice.type("CurrentCallsPhoneEvents");
      assert.deepEqual(Object.keys(answer.ctiMessage), ["events"]);
      return answer.ctiMessage.events as Record<string, unknown>[];
    };
    const userData = { PLATFORM_USERID: String(w.users.alice.id) };
    // alice's own phone rings first for her dial, then she waits for bob
    await w.f.ctx.services.platform.dialNumber(w.users.alice, "1002", {});
    const own = await w.callOf("alice");
    const names: Record<string, string> = { "1002": "bob", "1003": "carol" };
    const shown = (eventType: string, otherDN: string, call = own) => ({
      eventType,
      DN: "1001",
      otherDN,
      otherDName: names[otherDN],
      linkedId: call.linkedId,
      uniqueId: call.callId,
      userData,
      recordState: "inactive",
    });
    assert.deepEqual(await current(), [shown("EventDialing", "1002")]);
    await w.act("alice", "answer");
    await event(alice, "EventDialing");
    assert.deepEqual(await current(), [shown("EventDialing", "1002")]);
    await w.act("bob", "answer");
    await event(alice, "EventEstablished");
    assert.deepEqual(await current(), [shown("EventEstablished", "1002")]);
    alice.web("hold");
    await event(alice, "EventOnHold");
    // carol calls: alice's phone rings beside the held call
    await w.ring("carol", "alice");
    const ringing = await w.callOf("alice");
    assert.deepEqual(await current(), [
      shown("EventOnHold", "1002"),
      shown("EventRinging", "1003", ringing),
    ]);
    // an attended transfer whose recipient rings is dialing
    alice.web("hangup", { uniqueId: ringing.callId });
    await event(alice, "EventReleased", ringing.callId);
    alice.web("attendedTransfer", { destination: "1003" });
    await event(alice, "EventDialing", own.callId);
    assert.deepEqual(await current(), [shown("EventDialing", "1003")]);
    // the bob's socket sees bob's own call
    w.as.bob.web("getCurrentCallsPhoneEvents");
    const bob = (await w.as.bob.type("CurrentCallsPhoneEvents")).ctiMessage;
    assert.deepEqual(
      (bob.events as Record<string, unknown>[]).map((e) => [e.eventType, e.DN, e.otherDN]),
      [["EventEstablished", "1002", "1001"]],
    );
  });
});

/** alice talks with bob, transfers him (attended) to carol, who answers; answers their parties. */
async function consultation(w: World) {
  await w.call("alice", "bob");
  const host = (await w.callOf("alice")).callId;
  const bob = (await w.callOf("bob")).callId;
  w.as.alice.web("attendedTransfer", { destination: "1003" });
  await event(w.as.carol, "EventRinging");
  await w.act("carol", "answer");
  await event(w.as.alice, "EventEstablished", host);
  return { host, bob, carol: (await w.callOf("carol")).callId };
}

/** The members of `id` as the platform has them: [callId, muted]. */
async function members(w: World, id: string) {
  const conference = (await w.f.ctx.services.platform.conferences()).find((c) => c.id === id);
  return conference?.members.map((member) => [member.callId, member.muted]) ?? [];
}

Deno.test("conference from a transfer: its ConferenceEvent, muting, kicking, and who may", async () => {
  await withWorld(async (w) => {
    const { alice, bob } = w.as;
    const calls = await consultation(w);
    alice.web("conference");
    const joined = await alice.type("ConferenceEvent");
    const { host } = calls;
    const participant = (index: number, name: string, number: string, role: string) => ({
      index,
      callerIdName: name,
      callerIdNum: number,
      since: 0,
      isTalking: false,
      role,
      isMuted: false,
      isMe: index === 0,
      username: name,
    });
    assert.deepEqual(joined, {
      msgType: "ConferenceEvent",
      ctiMessage: {
        eventType: "Join",
        uniqueId: host,
        conferenceNumber: host,
        conferenceName: host,
        since: 0,
        participants: [
          participant(0, "alice", "1001", "Organizer"),
          participant(1, "bob", "1002", "User"),
          participant(2, "carol", "1003", "User"),
        ],
      },
    });
    // only the requester is answered
    for (const other of [bob, w.as.carol]) {
      other.send({ claz: "ping" });
      await other.type("Pong");
      assert.ok(!other.messages.some((message) => message.msgType === "ConferenceEvent"));
    }
    // a conference already: nothing more to merge
    await refused(alice, "conference", {}, "InConference");

    const numConf = host;
    await done(bob, "conferenceMuteMe", { numConf });
    assert.deepEqual(await members(w, numConf), [
      [host, false],
      [calls.bob, true],
      [calls.carol, false],
    ]);
    await done(bob, "conferenceUnmuteMe", { numConf });
    await done(alice, "conferenceMute", { numConf, index: 2 });
    assert.deepEqual((await members(w, numConf)).map(([, muted]) => muted), [false, false, true]);
    await done(alice, "conferenceUnmute", { numConf, index: 2 });
    await done(alice, "conferenceMuteAll", { numConf });
    assert.deepEqual((await members(w, numConf)).map(([, muted]) => muted), [false, true, true]);
    await done(alice, "conferenceUnmuteAll", { numConf });
    assert.deepEqual((await members(w, numConf)).map(([, muted]) => muted), [false, false, false]);

    // a member is no host; no member at that index
    const before = await snapshot(w);
    for (const command of ["conferenceKick", "conferenceMute", "conferenceUnmute"]) {
      await refused(bob, command, { numConf, index: 2 }, "NoConference");
    }
    await refused(bob, "conferenceMuteAll", { numConf }, "NoConference");
    await refused(bob, "conferenceUnmuteAll", { numConf }, "NoConference");
    await refused(w.as.carol, "conferenceKick", { numConf, index: 1 }, "NoConference");
    assert.equal(await snapshot(w), before);
    assert.match(
      await refused(alice, "conferenceKick", { numConf, index: 3 }, "NoCall"),
      /no member 3/,
    );
    await refused(alice, "conferenceMute", { numConf, index: 3 }, "NoCall");

    alice.web("conferenceKick", { numConf, index: 2 });
    assert.equal((await event(w.as.carol, "EventReleased", calls.carol)).otherDN, "1001");
    assert.deepEqual(await members(w, numConf), [[host, false], [calls.bob, false]]);
    // kicking the host ends the conference
    alice.web("conferenceKick", { numConf, index: 0 });
    await event(alice, "EventReleased", host);
    await event(bob, "EventReleased", calls.bob);
    assert.deepEqual(await w.calls(), []);
  });
});

Deno.test("conference without a transfer: the current call hosts the peers of all the user's calls", async () => {
  await withWorld(async (w) => {
    const { alice } = w.as;
    await w.call("alice", "bob");
    const held = (await w.callOf("alice")).callId;
    alice.web("hold");
    await event(alice, "EventOnHold");
    await w.call("alice", "carol");
    const host = (await w.callOf("alice")).callId;
    alice.web("conference");
    const joined = (await alice.type("ConferenceEvent")).ctiMessage;
    assert.equal(joined.uniqueId, host);
    const participants = joined.participants as Record<string, unknown>[];
    assert.deepEqual(
      participants.map((p) => [p.index, p.username, p.role, p.isMe]),
      [[0, "alice", "Organizer", true], [1, "bob", "User", false], [2, "carol", "User", false]],
    );
    // alice's held call with bob ended as bob joined
    await alice.seen(phoneEvent("EventReleased", held), "the held call released");
    // carol, a member, mutes herself; a conference she is not in is none of hers
    await done(w.as.carol, "conferenceMuteMe", { numConf: host });
    assert.deepEqual((await members(w, host)).map(([, muted]) => muted), [false, false, true]);
    await refused(w.as.carol, "conferenceMuteMe", { numConf: "9.9" }, "NoConference");
  });
});

Deno.test("conference while the transfer's recipient still rings: NotPeer, nothing merged", async () => {
  await withWorld(async (w) => {
    await w.call("alice", "bob");
    w.as.alice.web("attendedTransfer", { destination: "1003" });
    await event(w.as.carol, "EventRinging");
    const before = await snapshot(w);
    await refused(w.as.alice, "conference", {}, "NotPeer");
    assert.equal(await snapshot(w), before);
    assert.deepEqual(await w.f.ctx.services.platform.conferences(), []);
  });
});

Deno.test("refusals of the platform: a call not ringing, not talking, or with no peer yet", async () => {
  await withWorld(async (w) => {
    await w.call("alice", "bob");
    const talking = (await w.callOf("alice")).callId;
    await refused(w.as.alice, "answer", { uniqueId: talking }, "NotRinging");
    await w.ring("carol", "alice");
    const ringing = (await w.callOf("alice")).callId;
    await refused(w.as.alice, "hold", { uniqueId: ringing }, "NotTalking");
    // a ringing call is no current call to transfer
    await w.act("alice", "hangup"); // the talking one
    await event(w.as.alice, "EventReleased", talking);
    let before = await snapshot(w);
    await refused(w.as.alice, "directTransfer", { destination: "1002" }, "NoCall");
    assert.equal(await snapshot(w), before);
    // bob's phone answered his dial, carol's rings: nobody to transfer yet
    await w.ring("bob", "carol");
    before = await snapshot(w);
    await refused(w.as.bob, "attendedTransfer", { destination: "1001" }, "NotTalking");
    assert.equal(await snapshot(w), before);
  });
});

Deno.test("each call command needs its call daemon ACL, filled with the call it acts on", async () => {
  await withWorld(async (w) => {
    const denied = await w.socket("alice", ["alias.ctiuser", "!calld.#"]);
    const forbidden = async (command: string, fields: Record<string, unknown>, acl: string) => {
      const before = await snapshot(w);
      assert.equal(await refused(denied, command, fields, "Forbidden"), `missing ACL ${acl}`);
      assert.equal(await snapshot(w), before);
    };
    await forbidden("getCurrentCallsPhoneEvents", {}, "calld.users.me.calls.read");
    await forbidden("directTransfer", { destination: "1003" }, "calld.users.me.transfers.create");
    await forbidden("attendedTransfer", { destination: "1003" }, "calld.users.me.transfers.create");
    await forbidden("conference", {}, "calld.users.me.conferences.adhoc.create");
    const participants = "calld.users.me.conferences.adhoc.participants";
    await forbidden("conferenceMute", { numConf: "1.1", index: 0 }, `${participants}.update`);
    await forbidden("conferenceUnmute", { numConf: "1.1", index: 0 }, `${participants}.update`);
    await forbidden("conferenceMuteAll", { numConf: "1.1" }, `${participants}.update`);
    await forbidden("conferenceUnmuteAll", { numConf: "1.1" }, `${participants}.update`);
    await forbidden("conferenceKick", { numConf: "1.1", index: 0 }, `${participants}.delete`);

    await w.ring("bob", "alice");
    const call = (await w.callOf("alice")).callId;
    const acl = `calld.users.me.calls.${call.replaceAll(".", "_")}`;
    await forbidden("answer", {}, `${acl}.answer.update`);
    await forbidden("hangup", {}, `${acl}.delete`);
    w.as.alice.web("answer");
    await event(w.as.alice, "EventEstablished", call);
    await forbidden("hold", {}, `${acl}.hold.start.update`);
    await forbidden("sendDtmf", { key: "1" }, `${acl}.dtmf.update`);
    w.as.alice.web("hold");
    await event(w.as.alice, "EventOnHold", call);
    await forbidden("hold", {}, `${acl}.hold.stop.update`);
    w.as.alice.web("hold");
    await event(w.as.alice, "EventEstablished", call);

    w.as.alice.web("attendedTransfer", { destination: "1003" });
    await event(w.as.carol, "EventRinging");
    const transfer = `calld.users.me.transfers.${call.replaceAll(".", "_")}`;
    await forbidden("completeTransfer", {}, `${transfer}.complete.update`);
    await forbidden("cancelTransfer", {}, `${transfer}.delete`);
    await w.act("carol", "answer");
    await event(w.as.alice, "EventEstablished", call);
    w.as.alice.web("conference");
    await w.as.alice.type("ConferenceEvent");
    await forbidden("conferenceMuteMe", { numConf: call }, `${acl}.mute.start.update`);
    await forbidden("conferenceUnmuteMe", { numConf: call }, `${acl}.mute.stop.update`);

    // one denial leaves the rest: transfers denied, holds allowed
    const noTransfers = await w.socket("alice", ["alias.ctiuser", "!calld.users.me.transfers.#"]);
    assert.equal(
      await refused(noTransfers, "directTransfer", { destination: "1003" }, "Forbidden"),
      "missing ACL calld.users.me.transfers.create",
    );
    await done(noTransfers, "conferenceMuteMe", { numConf: call });
    // a token without alias.ctiuser holds none of them
    const bare = await w.socket("alice", []);
    await refused(bare, "getCurrentCallsPhoneEvents", {}, "Forbidden");
    await refused(bare, "hangup", {}, "Forbidden");
  });
});

/**
 * Meeting rooms on the CTI channel (docs/cti.md "Meeting rooms") over a real server and Deno's
 * WebSocket client, on the simulator: `getConferenceRooms` (`ConferenceList`), the phones joining
 * a personal room (`ConferenceEvent`, `ConferenceParticipantEvent`), the owner muting, unmuting and
 * kicking by index, a member muting itself, `inviteConferenceRoom`, and each refusal as
 * `ConferenceCommandError` (a member who does not own the room cannot kick), the socket open.
 */
import assert from "node:assert/strict";
import { getUser, type UserRecord } from "../../lib/store/users.ts";
import { login } from "../helpers.ts";
import {
  Client,
  type Fixture,
  fixture,
  type Message,
  refused,
  userWithLine,
  V2,
} from "./cti_fixtures.ts";
import { ctiToken } from "../daemons/agentd/fixtures.ts";

type Name = "alice" | "bob" | "carol";
const EXTEN: Record<Name, string> = { alice: "1001", bob: "1002", carol: "1003" };

interface World {
  f: Fixture;
  users: Record<Name, UserRecord>;
  as: Record<Name, Client>;
  /** alice's personal room 4100, PIN 1234. */
  room: { id: string; number: string };
  /** `name`'s phone dials the room, answers, types the PIN. */
  join(name: Name, pin?: string): Promise<void>;
}

async function withWorld(test: (w: World) => Promise<void>) {
  const f = await fixture();
  try {
    const { sim, store, platform } = f.ctx.services;
    const users = {} as Record<Name, UserRecord>;
    const as = {} as Record<Name, Client>;
    for (const name of ["alice", "bob", "carol"] as const) {
      const { id } = await userWithLine(f.api, name, EXTEN[name]);
      await sim!.setPolicy(EXTEN[name], { policy: "manual" });
      users[name] = (await getUser(store, id))!;
      as[name] = await f.open(await login(f.ctx, "login", name));
    }
    const created = await f.ctx.app.request(`${V2}/config/meetingrooms/personal`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${await ctiToken(f.ctx, users.alice)}`,
        "Content-Type": "application/json",
      },
      body: JSON.stringify({ displayName: "Weekly", userPin: "1234" }),
    });
    assert.equal(created.status, 201);
    const room = await created.json();
    await test({
      f,
      users,
      as,
      room,
      async join(name, pin = "1234") {
        await platform.dialNumber(users[name], room.number, {});
        await sim!.act(EXTEN[name], "answer");
        await sim!.pressKeys(EXTEN[name], `${pin}#`);
      },
    });
  } finally {
    await f.close();
  }
}

const conferenceEvent = (eventType: string) => (message: Message) =>
  message.msgType === "ConferenceEvent" && message.ctiMessage.eventType === eventType;
const participant = (eventType: string, username?: string) => (message: Message) =>
  message.msgType === "ConferenceParticipantEvent" && message.ctiMessage.eventType === eventType &&
  (username === undefined || message.ctiMessage.username === username);

Deno.test("CTI meeting rooms: the list, joins, the owner mutes and kicks, a member may not", async () => {
  await withWorld(async (w) => {
    const { alice, bob, carol } = w.as;
    alice.web("getList", { objectType: "meetme" });
    const list = await alice.type("ConferenceList");
    assert.deepEqual(list.ctiMessage, [
      { name: "Weekly", number: "4100", pinRequired: true, startTime: 0, members: 0 },
    ]);
    bob.web("getList", { objectType: "meetme" });
    assert.deepEqual((await bob.type("ConferenceList")).ctiMessage, [], "alice's room is hers");

    await w.join("alice");
    const joined =
      (await alice.next(conferenceEvent("Join"), "alice's ConferenceEvent")).ctiMessage;
    assert.deepEqual(Object.keys(joined).sort(), [
      "conferenceName",
      "conferenceNumber",
      "eventType",
      "participants",
      "phoneNumber",
      "since",
      "uniqueId",
    ]);
    assert.deepEqual(
      [joined.conferenceName, joined.conferenceNumber, joined.phoneNumber, joined.since],
      ["Weekly", "4100", "1001", 0],
    );
    const aliceCall = joined.uniqueId as string;
    assert.deepEqual(joined.participants, [{
      index: 0,
      callerIdName: "alice",
      callerIdNum: "1001",
      since: 0,
      isTalking: false,
      role: "Organizer",
      isMuted: false,
      isMe: true,
      username: "alice",
    }]);
    await w.join("bob");
    const bobJoined = (await bob.next(conferenceEvent("Join"), "bob's ConferenceEvent")).ctiMessage;
    const bobCall = bobJoined.uniqueId as string;
    assert.deepEqual(
      (bobJoined.participants as Record<string, unknown>[]).map((
        p,
      ) => [p.username, p.role, p.isMe]),
      [["alice", "Organizer", false], ["bob", "User", true]],
    );
    const seenByAlice = (await alice.next(participant("Join", "bob"), "bob joining")).ctiMessage;
    assert.deepEqual(
      [seenByAlice.uniqueId, seenByAlice.phoneNumber, seenByAlice.index, seenByAlice.role],
      [aliceCall, "1001", 1, "User"],
      "alice's client finds the room by her own call",
    );
    await w.join("carol");
    await carol.next(conferenceEvent("Join"), "carol's ConferenceEvent");
    assert.equal(
      (await bob.next(participant("Join", "carol"), "carol joining")).ctiMessage.uniqueId,
      bobCall,
    );

    // a member who does not own the room: no kick, no mute of another
    bob.web("conferenceKick", { numConf: "4100", index: 2 });
    const error = (await bob.type("ConferenceCommandError")).ctiMessage;
    assert.deepEqual([error.error, error.command], ["NotOrganizer", "conferenceKick"]);
    bob.web("conferenceMute", { numConf: "4100", index: 0 });
    assert.equal((await bob.type("ConferenceCommandError")).ctiMessage.error, "NotOrganizer");
    bob.web("conferenceMuteAll", { numConf: "4100" });
    assert.equal((await bob.type("ConferenceCommandError")).ctiMessage.error, "NotOrganizer");
    // but mutes itself
    bob.web("conferenceMuteMe", { numConf: "4100" });
    const update = (await carol.next(participant("Update", "bob"), "bob muted")).ctiMessage;
    assert.deepEqual([update.isMuted, update.index], [true, 1]);
    bob.web("conferenceUnmuteMe", { numConf: "4100" });
    await carol.next(participant("Update", "bob"), "bob unmuted");

    // the owner mutes, unmutes, mutes all, kicks
    alice.web("conferenceMute", { numConf: "4100", index: 2 });
    assert.equal(
      (await bob.next(participant("Update", "carol"), "carol muted")).ctiMessage.isMuted,
      true,
    );
    alice.web("conferenceUnmute", { numConf: "4100", index: 2 });
    assert.equal(
      (await bob.next(participant("Update", "carol"), "carol unmuted")).ctiMessage.isMuted,
      false,
    );
    alice.web("conferenceMuteAll", { numConf: "4100" });
    await carol.next(participant("Update", "bob"), "bob muted by all");
    await bob.next(participant("Update", "carol"), "carol muted by all");
    alice.web("conferenceUnmuteAll", { numConf: "4100" });
    await bob.next(participant("Update", "carol"), "carol unmuted by all");
    alice.web("conferenceKick", { numConf: "4100", index: 2 });
    const left = (await carol.next(conferenceEvent("Leave"), "carol's Leave")).ctiMessage;
    assert.deepEqual(left.participants, []);
    const gone = (await bob.next(participant("Leave", "carol"), "carol leaving")).ctiMessage;
    assert.equal(gone.index, 2);
    alice.web("conferenceKick", { numConf: "4100", index: 5 });
    assert.equal(
      (await alice.type("ConferenceCommandError")).ctiMessage.error,
      "ParticipantNotFound",
    );
    // carol is out: she cannot mute herself there
    carol.web("conferenceMuteMe", { numConf: "4100" });
    assert.equal((await carol.type("ConferenceCommandError")).ctiMessage.error, "NotAMember");

    alice.web("getList", { objectType: "meetme" });
    const now = (await alice.type("ConferenceList")).ctiMessage as unknown as Record<
      string,
      unknown
    >[];
    assert.equal(now[0]!.members, 2);
    // every socket is still open
    for (const client of [alice, bob, carol]) assert.equal(client.socket.readyState, 1);
  });
});

Deno.test("CTI meeting rooms: inviteConferenceRoom calls a user's phone in, no PIN asked", async () => {
  await withWorld(async (w) => {
    const { alice, bob, carol } = w.as;
    alice.web("inviteConferenceRoom", { userId: w.users.carol.id });
    assert.equal(
      (await alice.type("ConferenceCommandError")).ctiMessage.error,
      "NotAMember",
      "the inviter must be in a room",
    );
    await w.join("alice");
    await w.join("bob");
    await alice.next(conferenceEvent("Join"), "alice in");
    alice.web("inviteConferenceRoom", { userId: 9999 });
    assert.equal((await alice.type("ConferenceCommandError")).ctiMessage.error, "UserNotFound");
    bob.web("inviteConferenceRoom", { userId: w.users.carol.id });
    // her phone rings first (an originate: no event until it answers)
    const sim = w.f.ctx.services.sim!;
    const ringing = () =>
      sim.calls().some((call) =>
        call.legs.some((leg) => "extension" in leg && leg.extension === "1003")
      );
    for (let tries = 0; !ringing() && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(ringing(), "carol's phone rings");
    await w.f.ctx.services.sim!.act("1003", "answer");
    const joined = (await carol.next(conferenceEvent("Join"), "carol in")).ctiMessage;
    assert.equal((joined.participants as unknown[]).length, 3);
    await alice.next(participant("Join", "carol"), "alice sees carol");
    // bad fields: the usual Error
    await refused(alice, "inviteConferenceRoom", { userId: "carol" }, "BadRequest");
    await refused(alice, "conferenceKick", { numConf: "4100", index: -1 }, "BadRequest");
    await refused(alice, "conferenceMute", { numConf: "4100" }, "BadRequest");
  });
});

Deno.test("CTI meeting rooms: a static room has no organizer; a full one takes no invitation", async () => {
  await withWorld(async (w) => {
    const { api, ctx } = w.f;
    const { sim, platform } = ctx.services;
    const conference = await api.create("/conferences", { name: "Hall", max_users: 2 });
    const extension = await api.create("/extensions", { exten: "4000", context: "default" });
    assert.equal(
      (await api.put(`/conferences/${conference.id}/extensions/${extension.id}`)).status,
      204,
    );
    for (const name of ["alice", "bob"] as const) {
      await platform.dialNumber(w.users[name], "4000", {});
      await sim!.act(EXTEN[name], "answer");
      const joined =
        (await w.as[name].next(conferenceEvent("Join"), `${name} in the hall`)).ctiMessage;
      assert.equal(joined.conferenceNumber, "4000");
    }
    w.as.alice.web("getList", { objectType: "meetme" });
    const list = (await w.as.alice.type("ConferenceList")).ctiMessage as unknown as {
      number: string;
      members: number;
    }[];
    assert.deepEqual(list.map((room) => [room.number, room.members]), [["4000", 2], ["4100", 0]]);
    w.as.alice.web("conferenceKick", { numConf: "4000", index: 1 });
    assert.equal(
      (await w.as.alice.type("ConferenceCommandError")).ctiMessage.error,
      "NotOrganizer",
    );
    w.as.bob.web("conferenceMuteMe", { numConf: "4000" });
    await w.as.alice.next(participant("Update", "bob"), "bob mutes himself");
    w.as.alice.web("inviteConferenceRoom", { userId: w.users.carol.id });
    assert.equal((await w.as.alice.type("ConferenceCommandError")).ctiMessage.error, "RoomFull");
  });
});

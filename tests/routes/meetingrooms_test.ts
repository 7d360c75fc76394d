/**
 * The 2.0 meeting rooms (`routes/meetingrooms.ts`, docs/meetingrooms.md) through the real app: a
 * CTI user's personal rooms (list, read, create, update, delete), the three token routes with and
 * without video settings, and every refusal in the 2.0 error form, nothing changed by it.
 */
import assert from "node:assert/strict";
import { jwtVerify } from "jose";
import { tokenHolding } from "../daemons/agentd/fixtures.ts";
import { eventReceiver, expectConfdError, expectError, expectForbidden } from "../helpers.ts";
import { alicesRoom, inRoom, ROOMS, roomsWorld, v2 } from "./meetingrooms_fixtures.ts";

const JITSI = {
  SVC_JITSI_DOMAIN: "meet.example.test",
  SVC_JITSI_APP_ID: "svc-app",
  SVC_JITSI_SECRET: "0123456789abcdef0123456789abcdef",
};
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

Deno.test("a CTI user creates, lists, reads, changes and deletes its personal rooms", async () => {
  const w = await roomsWorld();
  assert.deepEqual(await w.v2.alice.expect(200, "GET", `${ROOMS}/personal`), []);
  const response = await w.v2.alice.call("POST", `${ROOMS}/personal`, {
    displayName: " Weekly ",
    userPin: "1234",
  });
  assert.equal(response.status, 201);
  const room = await response.json();
  assert.match(room.id, UUID);
  assert.equal(response.headers.get("location"), `/svc/api/2.0${ROOMS}/personal/${room.id}`);
  assert.deepEqual(room, {
    id: room.id,
    roomType: "personal",
    displayName: "Weekly",
    number: "4100",
    userPin: "1234",
  }, "the lowest free number of the personal range");
  await w.t.advance(1);
  const second = await alicesRoom(w, { number: "4150" });
  assert.equal(second.number, "4150");
  await w.t.advance(1);
  const third = await alicesRoom(w);
  assert.equal(third.number, "4101");
  assert.deepEqual(
    (await w.v2.alice.expect<{ id: string }[]>(200, "GET", `${ROOMS}/personal`)).map((r) => r.id),
    [room.id, second.id, third.id],
  );
  assert.deepEqual(await w.v2.alice.expect(200, "GET", `${ROOMS}/personal/${room.id}`), room);

  const changed = await w.v2.alice.expect(200, "PUT", `${ROOMS}/personal`, {
    id: room.id,
    displayName: "Monday",
    number: "4199",
    userPin: "",
  });
  assert.deepEqual(changed, { ...room, displayName: "Monday", number: "4199", userPin: null });
  const kept = await w.v2.alice.expect(200, "PUT", `${ROOMS}/personal`, {
    id: room.id,
    roomType: "personal",
    userPin: "99",
  });
  assert.deepEqual(kept, { ...changed, userPin: "99" }, "fields left out are kept");
  assert.equal(
    (await w.v2.alice.expect(200, "PUT", `${ROOMS}/personal`, { id: room.id, number: "4199" }))
      .number,
    "4199",
    "its own number is not taken from itself",
  );

  await w.v2.alice.expect(204, "DELETE", `${ROOMS}/personal/${room.id}`);
  await expectError(
    await w.v2.alice.call("GET", `${ROOMS}/personal/${room.id}`),
    404,
    "MeetingRoomNotFound",
  );
  assert.equal((await alicesRoom(w, { number: "4199" })).number, "4199", "its number is free");
});

Deno.test("another user's room is not found, and stays as it was", async () => {
  const w = await roomsWorld();
  const room = await alicesRoom(w, { userPin: "1234" });
  assert.deepEqual(await w.v2.bob.expect(200, "GET", `${ROOMS}/personal`), []);
  for (
    const [method, path, body] of [
      ["GET", `${ROOMS}/personal/${room.id}`],
      ["GET", `${ROOMS}/personal/token/${room.id}`],
      ["DELETE", `${ROOMS}/personal/${room.id}`],
      ["PUT", `${ROOMS}/personal`, { id: room.id, displayName: "Mine now", userPin: "0000" }],
    ] as const
  ) {
    await expectError(
      await w.v2.bob.call(method, path, body),
      404,
      "MeetingRoomNotFound",
      new RegExp(room.id),
    );
  }
  assert.deepEqual(await w.v2.alice.expect(200, "GET", `${ROOMS}/personal/${room.id}`), room);
});

Deno.test("unknown ids answer 404 MeetingRoomNotFound", async () => {
  const w = await roomsWorld();
  for (const id of ["00000000-0000-4000-8000-000000000000", "nope", "x".repeat(300)]) {
    await expectError(
      await w.v2.alice.call("GET", `${ROOMS}/personal/${id}`),
      404,
      "MeetingRoomNotFound",
    );
  }
  await expectError(
    await w.v2.alice.call("DELETE", `${ROOMS}/personal/00000000-0000-4000-8000-000000000000`),
    404,
    "MeetingRoomNotFound",
  );
  await expectError(
    await w.v2.alice.call("PUT", `${ROOMS}/personal`, { id: "nope", displayName: "x" }),
    404,
    "MeetingRoomNotFound",
  );
  await expectError(
    await w.v2.alice.call("GET", `${ROOMS}/static/token/999`),
    404,
    "MeetingRoomNotFound",
  );
  await expectError(
    await w.v2.alice.call("GET", `${ROOMS}/static/token/abc`),
    404,
    "MeetingRoomNotFound",
  );
});

Deno.test("a number outside the range, or taken, is refused and nothing changes", async () => {
  const w = await roomsWorld({ SVC_MEETINGROOM_PERSONAL_RANGE: "4100-4102" });
  for (const number of ["4200", "4099", "41000", "999"]) {
    await expectError(
      await w.v2.alice.call("POST", `${ROOMS}/personal`, { displayName: "x", number }),
      400,
      "InvalidMeetingRoom",
      /outside the range of personal rooms, 4100-4102/,
    );
  }
  const room = await alicesRoom(w, { number: "4101" });
  await expectError(
    await w.v2.bob.call("POST", `${ROOMS}/personal`, { displayName: "x", number: "4101" }),
    409,
    "MeetingRoomNumberTaken",
    /4101 is taken/,
  );
  // an extension of the rooms' context holds 4102: no room takes it
  await w.t.api.create("/extensions", { exten: "4102", context: "default" });
  await expectError(
    await w.v2.bob.call("POST", `${ROOMS}/personal`, { displayName: "x", number: "4102" }),
    409,
    "MeetingRoomNumberTaken",
  );
  const bobs = await w.v2.bob.expect<{ id: string; number: string }>(
    201,
    "POST",
    `${ROOMS}/personal`,
    { displayName: "Bob's" },
  );
  assert.equal(bobs.number, "4100", "the lowest free one");
  await expectError(
    await w.v2.bob.call("POST", `${ROOMS}/personal`, { displayName: "x" }),
    409,
    "NoMeetingRoomNumberLeft",
    /4100-4102/,
  );
  await expectError(
    await w.v2.bob.call("PUT", `${ROOMS}/personal`, { id: bobs.id, number: "4101" }),
    409,
    "MeetingRoomNumberTaken",
  );
  await expectError(
    await w.v2.bob.call("PUT", `${ROOMS}/personal`, { id: bobs.id, number: "5000" }),
    400,
    "InvalidMeetingRoom",
  );
  assert.deepEqual(
    (await w.v2.bob.expect<{ number: string }[]>(200, "GET", `${ROOMS}/personal`)).map((r) =>
      r.number
    ),
    ["4100"],
  );
  assert.equal(
    (await w.v2.alice.expect<{ number: string }>(200, "GET", `${ROOMS}/personal/${room.id}`))
      .number,
    "4101",
  );
  // an extension cannot take a room's number either (the configuration daemon's refusal)
  await expectConfdError(
    await w.t.api.post("/extensions", { exten: "4101", context: "default" }),
    400,
    /Extension already exists/,
  );
  const other = await w.t.api.create("/extensions", { exten: "4199", context: "default" });
  await expectConfdError(
    await w.t.api.put(`/extensions/${other.id}`, { exten: "4101" }),
    400,
    /Extension already exists/,
  );
});

Deno.test("bad bodies answer 400 InvalidMeetingRoom, nothing created or changed", async () => {
  const w = await roomsWorld();
  const room = await alicesRoom(w, { userPin: "1234" });
  const bad: [unknown, RegExp][] = [
    ["{oops", /JSON/],
    ["[1]", /./],
    ["null", /./],
    ['{"displayName": "x"', /JSON/],
    [{}, /displayName/],
    [{ displayName: "" }, /displayName/],
    [{ displayName: "   " }, /displayName/],
    [{ displayName: 5 }, /displayName/],
    [{ displayName: "x".repeat(129) }, /displayName/],
    [{ displayName: "x", userPin: "12a4" }, /userPin/],
    [{ displayName: "x", userPin: 1234 }, /userPin/],
    [{ displayName: "x", userPin: "1".repeat(17) }, /userPin/],
    [{ displayName: "x", number: 4100 }, /number/],
    [{ displayName: "x", number: "41 00" }, /number/],
    [{ displayName: "x", number: "9".repeat(400) }, /number/],
    [{ displayName: "x", owner: 3 }, /owner/],
  ];
  for (const [body, message] of bad) {
    await expectError(
      await w.v2.alice.call("POST", `${ROOMS}/personal`, body),
      400,
      "InvalidMeetingRoom",
      message,
    );
    // the same body as a change of alice's room (an object names the room)
    const update = typeof body === "object" && body !== null ? { ...body, id: room.id } : body;
    if (JSON.stringify(update) === JSON.stringify({ id: room.id })) continue; // changes nothing
    await expectError(
      await w.v2.alice.call("PUT", `${ROOMS}/personal`, update),
      400,
      "InvalidMeetingRoom",
      message,
    );
  }
  await expectError(
    await w.v2.alice.call("PUT", `${ROOMS}/personal`, { displayName: "no id" }),
    400,
    "InvalidMeetingRoom",
    /id/,
  );
  await expectError(
    await w.v2.alice.call("PUT", `${ROOMS}/personal`, { id: room.id, roomType: "static" }),
    400,
    "InvalidMeetingRoom",
    /roomType/,
  );
  assert.deepEqual(
    await w.v2.alice.expect(200, "GET", `${ROOMS}/personal`),
    [room],
    "nothing created, nothing changed",
  );
});

Deno.test("rights: personal rooms are CTI users'; a token lacking the right is refused", async () => {
  const w = await roomsWorld();
  const ctx = w.t.ctx;
  const ws = v2(ctx, await tokenHolding(ctx, ["svc.rest.config.meetingrooms.#"]));
  for (const method of ["GET", "POST", "PUT"]) {
    await expectError(
      await ws.call(
        method,
        `${ROOMS}/personal`,
        method === "GET" ? undefined : { displayName: "x" },
      ),
      403,
      "Forbidden",
      /CTI users only/,
    );
  }
  assert.equal(
    (await ws.expect<unknown[]>(200, "GET", `${ROOMS}/static`)).length,
    0,
    "the static rooms are anyone's holding the right",
  );
  const narrow = v2(ctx, await tokenHolding(ctx, ["svc.rest.contact.#"], "cti"));
  await expectForbidden(
    await narrow.call("GET", `${ROOMS}/personal`),
    "svc.rest.config.meetingrooms.personal.read",
  );
  await expectForbidden(
    await narrow.call("POST", `${ROOMS}/personal`, { displayName: "x" }),
    "svc.rest.config.meetingrooms.personal.create",
  );
  await expectForbidden(
    await narrow.call("PUT", `${ROOMS}/personal`, { id: "x" }),
    "svc.rest.config.meetingrooms.personal.update",
  );
  await expectForbidden(
    await narrow.call("DELETE", `${ROOMS}/personal/abc`),
    "svc.rest.config.meetingrooms.personal.abc.delete",
  );
  await expectForbidden(
    await narrow.call("GET", `${ROOMS}/temporary/token/standup`),
    "svc.rest.config.meetingrooms.temporary.token.standup.read",
  );
  await expectError(
    await ctx.app.request(`/svc/api/2.0${ROOMS}/personal`),
    400,
    "AuthorizationHeaderNotFound",
  );
});

Deno.test("token routes without video settings: the number and PIN, and why no video token", async () => {
  const w = await roomsWorld();
  const room = await alicesRoom(w, { userPin: "1234" });
  const token = await w.v2.alice.expect(200, "GET", `${ROOMS}/personal/token/${room.id}`);
  assert.deepEqual(token, {
    roomType: "personal",
    id: room.id,
    displayName: "Weekly",
    number: room.number,
    userPin: "1234",
    token: null,
    jitsiDomain: null,
    jitsiRoom: null,
    url: null,
    expiresAt: null,
    video: "no video token is configured: set SVC_JITSI_DOMAIN, SVC_JITSI_APP_ID and " +
      "SVC_JITSI_SECRET",
  });
});

Deno.test("token routes with video settings: a Jitsi JWT signed with the key", async () => {
  const w = await roomsWorld(JITSI);
  const now = w.t.ctx.clock.now();
  const room = await alicesRoom(w, { userPin: "1234" });
  const personal = await w.v2.alice.expect<Record<string, string | number>>(
    200,
    "GET",
    `${ROOMS}/personal/token/${room.id}`,
  );
  const key = new TextEncoder().encode(JITSI.SVC_JITSI_SECRET);
  const { payload, protectedHeader } = await jwtVerify(String(personal.token), key, {
    issuer: "svc-app",
    audience: "jitsi",
    subject: "meet.example.test",
    currentDate: new Date(now),
  });
  assert.equal(protectedHeader.alg, "HS256");
  assert.equal(payload.room, room.id);
  assert.deepEqual(payload.context, { user: { id: String(w.alice.id), name: "alice Liddell" } });
  assert.equal(payload.exp, Math.floor(now / 1000) + 3600);
  assert.equal(personal.expiresAt, now + 3_600_000);
  assert.equal(personal.jitsiDomain, "meet.example.test");
  assert.equal(personal.url, `https://meet.example.test/${room.id}?jwt=${personal.token}`);
  assert.equal(personal.video, null);
  await assert.rejects(
    jwtVerify(String(personal.token), new TextEncoder().encode("x".repeat(32))),
    "signed with the configured key only",
  );

  // the static rooms: the administrator's conferences with an extension
  const conference = await w.t.api.create("/conferences", { name: "All hands", pin: "42" });
  const extension = await w.t.api.create("/extensions", { exten: "4000", context: "default" });
  const linked = await w.t.api.put(`/conferences/${conference.id}/extensions/${extension.id}`);
  assert.equal(linked.status, 204);
  assert.deepEqual(await w.v2.bob.expect(200, "GET", `${ROOMS}/static`), [
    {
      id: conference.id,
      roomType: "static",
      displayName: "All hands",
      number: "4000",
      pinRequired: true,
    },
  ]);
  const stat = await w.v2.bob.expect(200, "GET", `${ROOMS}/static/token/${conference.id}`);
  assert.deepEqual([stat.roomType, stat.id, stat.number, stat.userPin, stat.jitsiRoom], [
    "static",
    conference.id,
    "4000",
    "42",
    `conference-${conference.id}`,
  ]);

  // a temporary room: opened by its name, the same one while it lasts
  const first = await w.v2.bob.expect(200, "GET", `${ROOMS}/temporary/token/Standup`);
  assert.deepEqual([first.roomType, first.number, first.userPin, first.jitsiRoom], [
    "temporary",
    "4200",
    null,
    "standup",
  ]);
  const again = await w.v2.carol.expect(200, "GET", `${ROOMS}/temporary/token/standup`);
  assert.deepEqual([again.id, again.number], [first.id, "4200"]);
  await expectError(
    await w.v2.carol.call("GET", `${ROOMS}/temporary/token/${encodeURIComponent("no way")}`),
    400,
    "InvalidMeetingRoom",
  );
  await expectError(
    await w.v2.carol.call("GET", `${ROOMS}/temporary/token/${"a".repeat(65)}`),
    400,
    "InvalidMeetingRoom",
  );
  // its tokens expired and nobody in it: it goes, its number is free for the next one
  await w.t.advance(3_601_000);
  const next = await w.v2.bob.expect(200, "GET", `${ROOMS}/temporary/token/retro`);
  assert.equal(next.number, "4200");
  assert.notEqual(next.id, first.id);
});

Deno.test("a full static room gets no token; a deleted room's people are hung up", async () => {
  const w = await roomsWorld(JITSI);
  const conference = await w.t.api.create("/conferences", { name: "Small", max_users: 1 });
  const extension = await w.t.api.create("/extensions", { exten: "4000", context: "default" });
  await w.t.api.put(`/conferences/${conference.id}/extensions/${extension.id}`);
  await w.join(w.bob, "4000");
  assert.deepEqual(await inRoom(w, `conference-${conference.id}`), [["bob", false]]);
  await expectError(
    await w.v2.alice.call("GET", `${ROOMS}/static/token/${conference.id}`),
    409,
    "MeetingRoomFull",
  );
  // a third party dialling the full room is hung up by it
  await w.join(w.carol, "4000");
  assert.deepEqual(await inRoom(w, `conference-${conference.id}`), [["bob", false]]);

  const room = await alicesRoom(w, { userPin: "1234" });
  await w.join(w.carol, room.number, "1234");
  await w.join(w.alice, room.number, "1234");
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), [["carol", false], ["alice", false]]);
  await w.v2.alice.expect(204, "DELETE", `${ROOMS}/personal/${room.id}`);
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), [], "everybody hung up");
  assert.deepEqual(
    (await w.t.ctx.services.platform.liveCalls()).filter((call) =>
      call.userId === w.alice.id || call.userId === w.carol.id
    ),
    [],
    "their calls ended",
  );
  // its number now leads nowhere: no room asks a PIN
  await w.join(w.carol, room.number);
  await assert.rejects(w.t.sim.pressKeys("1003", "1234#"), /talks with nobody/);
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), []);
});

Deno.test("a wrong PIN is refused three times, then the room hangs up", async () => {
  const w = await roomsWorld();
  const room = await alicesRoom(w, { userPin: "1234" });
  await w.join(w.bob, room.number, "9999");
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), []);
  await w.t.sim.pressKeys("1002", "0000#");
  await w.t.sim.pressKeys("1002", "1111#");
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), []);
  await assert.rejects(w.t.sim.pressKeys("1002", "1234#"), /no call up/, "the room hung up");
  await w.join(w.bob, room.number, "1234");
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), [["bob", false]]);
});

Deno.test("joins and leaves are RoomParticipantEvents on eventUrl and the event feed", async () => {
  const receiver = eventReceiver<{
    username: string;
    message: { msgType: string; ctiMessage: Record<string, unknown> };
  }>();
  const { posted } = receiver;
  try {
    const w = await roomsWorld({ SVC_EVENT_URL: receiver.url });
    const { services } = w.t.ctx;
    const feed: string[] = [];
    const stop = services.feed.subscribeAll((entries) =>
      feed.push(...entries.map((entry) => entry.event.message.msgType))
    );
    const room = await alicesRoom(w, { userPin: "1234" });
    await w.join(w.bob, room.number, "1234");
    await w.join(w.carol, room.number, "1234");
    await w.act("1002", "hangup");
    await services.events.deliverDue();
    const rooms = posted.filter((event) => event.message.msgType === "RoomParticipantEvent");
    assert.deepEqual(
      rooms.map((event) => [
        event.username,
        event.message.ctiMessage.eventType,
        event.message.ctiMessage.participants,
      ]),
      [["bob", "Join", 1], ["carol", "Join", 2], ["bob", "Leave", 1]],
    );
    assert.deepEqual(
      Object.keys(rooms[0]!.message.ctiMessage).sort(),
      [
        "callerIdName",
        "callerIdNum",
        "eventType",
        "linkedId",
        "participants",
        "roomId",
        "roomName",
        "roomNumber",
        "roomType",
        "uniqueId",
        "username",
      ],
    );
    assert.deepEqual(
      [rooms[0]!.message.ctiMessage.roomId, rooms[0]!.message.ctiMessage.roomNumber],
      [room.id, room.number],
    );
    assert.equal(feed.filter((type) => type === "RoomParticipantEvent").length, 3);
    stop();
    services.feed.close();
    await services.events.close();
  } finally {
    await receiver.close();
  }
});

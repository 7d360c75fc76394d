/**
 * The call daemon's meeting rooms through the real app (`/1.0/conferences/{id}/participants`,
 * `/1.0/meetings/{uuid}/participants`, their `/users/me/…` forms, recording, a guest's status):
 * the simulated phones join by number and PIN, then are listed, muted, unmuted, kicked; every
 * error in the daemon's form, and who may do what.
 */
import assert from "node:assert/strict";
import {
  alicesRoom,
  inRoom,
  type RoomsWorld,
  roomsWorld,
} from "../../routes/meetingrooms_fixtures.ts";

const NO_SUCH = "00000000-0000-4000-8000-000000000000";

/** A static room 4000 (PIN 77) with alice and bob in it. */
async function conferenceWithTwo(w: RoomsWorld, fields: Record<string, unknown> = {}) {
  const conference = await w.t.api.create("/conferences", { name: "Hall", pin: "77", ...fields });
  const extension = await w.t.api.create("/extensions", { exten: "4000", context: "default" });
  await w.t.api.put(`/conferences/${conference.id}/extensions/${extension.id}`);
  await w.join(w.alice, "4000", "77");
  await w.join(w.bob, "4000", "77");
  return conference.id as number;
}

type Participants = { total: number; items: Record<string, unknown>[] };

Deno.test("/1.0/conferences/{id}/participants: list, mute, unmute, kick", async () => {
  const w = await roomsWorld();
  const id = await conferenceWithTwo(w);
  await w.t.advance(5000);
  const list = await w.as.admin.expect<Participants>(200, "GET", `/conferences/${id}/participants`);
  assert.equal(list.total, 2);
  const [alice, bob] = list.items;
  assert.deepEqual(alice, {
    id: alice!.call_id,
    caller_id_name: "alice Liddell",
    caller_id_num: "1001",
    muted: false,
    join_time: 5,
    admin: false,
    language: "",
    call_id: alice!.call_id,
    user_uuid: w.alice.uuid,
  });
  assert.equal(bob!.user_uuid, w.bob.uuid);
  const path = `/conferences/${id}/participants/${bob!.id}`;
  await w.as.admin.expect(204, "PUT", `${path}/mute`);
  assert.deepEqual(await inRoom(w, `conference-${id}`), [["alice", false], ["bob", true]]);
  await w.as.admin.expect(204, "PUT", `${path}/unmute`);
  assert.deepEqual(await inRoom(w, `conference-${id}`), [["alice", false], ["bob", false]]);
  await w.as.admin.expect(204, "DELETE", path);
  assert.deepEqual(await inRoom(w, `conference-${id}`), [["alice", false]]);
  const details = await w.as.admin.error(404, "no-such-participant", "DELETE", path);
  assert.equal(details.participant_id, bob!.id);

  // a participant lists its conference; someone not in it is refused
  const mine = await w.as.alice.expect<Participants>(
    200,
    "GET",
    `/users/me/conferences/${id}/participants`,
  );
  assert.equal(mine.total, 1);
  await w.as.carol.error(
    403,
    "user-not-participant",
    "GET",
    `/users/me/conferences/${id}/participants`,
  );
  // a CTI user holds no right on the administrator's routes
  const denied = await w.as.alice.call("PUT", `/conferences/${id}/participants/${alice!.id}/mute`);
  assert.equal(denied.status, 401, await denied.text());
});

Deno.test("/1.0 conferences: unknown ids, and an empty room's participants", async () => {
  const w = await roomsWorld();
  for (const raw of ["999", "abc", "-1", "1".repeat(12)]) {
    const details = await w.as.admin.error(
      404,
      "no-such-conference",
      "GET",
      `/conferences/${raw}/participants`,
    );
    assert.equal(details.conference_id, raw);
  }
  const conference = await w.t.api.create("/conferences", { name: "Empty" });
  assert.deepEqual(
    await w.as.admin.expect(200, "GET", `/conferences/${conference.id}/participants`),
    { total: 0, items: [] },
  );
  await w.as.admin.error(
    404,
    "no-such-participant",
    "PUT",
    `/conferences/${conference.id}/participants/1.1/mute`,
  );
  await w.as.admin.error(
    400,
    "conference-has-no-participants",
    "POST",
    `/conferences/${conference.id}/record`,
  );
  // a meeting's id is no conference's, and a conference's no meeting's
  const room = await alicesRoom(w);
  await w.as.admin.error(404, "no-such-conference", "GET", `/conferences/${room.id}/participants`);
  await w.as.admin.error(404, "no-such-meeting", "GET", `/meetings/${NO_SUCH}/participants`);
  await w.as.admin.error(404, "no-such-meeting", "GET", `/meetings/nope/participants`);
});

Deno.test("/1.0 conference recording: start, already, stop, not recorded", async () => {
  const w = await roomsWorld();
  const id = await conferenceWithTwo(w);
  await w.as.admin.expect(204, "POST", `/conferences/${id}/record`);
  const rooms = await w.t.ctx.services.platform.rooms();
  assert.equal(rooms.find((room) => room.roomId === `conference-${id}`)?.recording, true);
  await w.as.admin.error(400, "conference-already-recorded", "POST", `/conferences/${id}/record`);
  await w.as.admin.expect(204, "DELETE", `/conferences/${id}/record`);
  await w.as.admin.error(400, "conference-not-recorded", "DELETE", `/conferences/${id}/record`);
  const events = w.t.take().filter((event) => event.kind === "room" && event.event === "recording");
  assert.deepEqual(events.map((event) => event.kind === "room" && event.recording), [true, false]);
});

Deno.test("/1.0 meetings: the owner lists, mutes, kicks and records; others may not", async () => {
  const w = await roomsWorld();
  const room = await alicesRoom(w, { userPin: "1234" });
  await w.join(w.bob, room.number, "1234");
  await w.join(w.carol, room.number, "1234");
  const base = `/users/me/meetings/${room.id}`;
  // the owner, not in the room
  const list = await w.as.alice.expect<Participants>(200, "GET", `${base}/participants`);
  assert.deepEqual(list.items.map((item) => [item.user_uuid, item.admin]), [
    [w.bob.uuid, false],
    [w.carol.uuid, false],
  ]);
  const [bob, carol] = list.items;
  // a participant lists it too, but holds no command
  assert.equal(
    (await w.as.bob.expect<Participants>(200, "GET", `${base}/participants`)).total,
    2,
  );
  await w.as.bob.error(404, "no-such-meeting", "PUT", `${base}/participants/${carol!.id}/mute`);
  await w.as.bob.error(404, "no-such-meeting", "DELETE", `${base}/participants/${carol!.id}`);
  await w.as.bob.error(404, "no-such-meeting", "POST", `${base}/record`);
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), [["bob", false], ["carol", false]]);

  await w.as.alice.expect(204, "PUT", `${base}/participants/${carol!.id}/mute`);
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), [["bob", false], ["carol", true]]);
  await w.as.alice.expect(204, "PUT", `${base}/participants/${carol!.id}/unmute`);
  await w.as.alice.expect(204, "POST", `${base}/record`);
  await w.as.alice.expect(204, "DELETE", `${base}/record`);
  await w.as.alice.expect(204, "DELETE", `${base}/participants/${bob!.id}`);
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), [["carol", false]]);
  await w.as.alice.error(404, "no-such-participant", "DELETE", `${base}/participants/${bob!.id}`);
  await w.as.alice.error(
    404,
    "no-such-meeting",
    "GET",
    `/users/me/meetings/${NO_SUCH}/participants`,
  );

  // someone neither owner nor in it
  await w.as.bob.error(403, "user-not-participant", "GET", `${base}/participants`);
  // the administrator's form
  assert.equal(
    (await w.as.admin.expect<Participants>(200, "GET", `/meetings/${room.id}/participants`)).total,
    1,
  );
  await w.as.admin.expect(204, "DELETE", `/meetings/${room.id}/participants/${carol!.id}`);
  assert.deepEqual(await inRoom(w, `meeting-${room.id}`), []);
});

Deno.test("/1.0/guests/me/meetings/{uuid}/status: full or not, no token", async () => {
  const w = await roomsWorld();
  const room = await alicesRoom(w);
  const status = async () => {
    const response = await w.t.ctx.app.request(`/1.0/guests/me/meetings/${room.id}/status`);
    assert.equal(response.status, 200);
    return await response.json();
  };
  assert.deepEqual(await status(), { full: false });
  const unknown = await w.t.ctx.app.request(`/1.0/guests/me/meetings/${NO_SUCH}/status`);
  assert.equal(unknown.status, 404);
  assert.equal((await unknown.json()).error_id, "no-such-meeting");
});

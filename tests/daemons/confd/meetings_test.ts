/**
 * Wazo's meetings on `/1.1` (docs/meetingrooms.md): the administrator's `/meetings`, a CTI user's
 * `/users/me/meetings` (the same rooms as the 2.0 personal ones), guests asking to join and the
 * owner accepting or rejecting, every error in the daemon's form, and another user's meeting.
 */
import assert from "node:assert/strict";
import { ctiToken, tokenHolding } from "../agentd/fixtures.ts";
import { apiCall, expectConfdError, expectNotFound } from "../../helpers.ts";
import { ROOMS, roomsWorld } from "../../routes/meetingrooms_fixtures.ts";
import type { UserRecord } from "../../../lib/store/users.ts";
import type { TestContext } from "../../helpers.ts";

const GUEST = "0f1e2d3c-4b5a-4697-8877-665544332211";
const NO_SUCH = "00000000-0000-4000-8000-000000000000";

/** `/1.1` as `user` (a CTI token). */
async function as(ctx: TestContext, user: UserRecord) {
  const call = apiCall(ctx, "/1.1", await ctiToken(ctx, user));
  return {
    call,
    async json(status: number, method: string, path: string, body?: unknown) {
      const response = await call(method, path, body);
      const text = await response.text();
      assert.equal(response.status, status, `${method} ${path}: ${text}`);
      return text ? JSON.parse(text) : null;
    },
  };
}

/** `/1.1` without a token (a guest). */
const guest = (ctx: TestContext) => ({
  async json(status: number, method: string, path: string, body?: unknown) {
    const response = await ctx.app.request(`/1.1${path}`, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await response.text();
    assert.equal(response.status, status, `${method} ${path}: ${text}`);
    return JSON.parse(text);
  },
});

Deno.test("/1.1/users/me/meetings: a CTI user's meetings are its 2.0 personal rooms", async () => {
  const w = await roomsWorld();
  const alice = await as(w.t.ctx, w.alice);
  const meeting = await alice.json(201, "POST", "/users/me/meetings", {
    name: "Retro",
    pin: "4321",
    require_authorization: true,
  });
  assert.deepEqual(Object.keys(meeting).sort(), [
    "creation_time",
    "exten",
    "guest_sip_authorization",
    "ingress_http_uri",
    "name",
    "owner_uuids",
    "persistent",
    "pin",
    "require_authorization",
    "uuid",
  ]);
  assert.deepEqual([meeting.exten, meeting.pin, meeting.owner_uuids], [
    "4100",
    "4321",
    [w.alice.uuid],
  ]);
  const rooms = await w.v2.alice.expect<{ id: string }[]>(200, "GET", `${ROOMS}/personal`);
  assert.deepEqual(rooms.map((room) => room.id), [meeting.uuid], "the same room on 2.0");
  const list = await alice.json(200, "GET", "/users/me/meetings");
  assert.deepEqual([list.total, list.items[0].uuid], [1, meeting.uuid]);
  assert.equal((await alice.json(200, "GET", `/users/me/meetings/${meeting.uuid}`)).name, "Retro");
  await alice.json(204, "PUT", `/users/me/meetings/${meeting.uuid}`, { name: "Retro 2", pin: "" });
  const changed = await alice.json(200, "GET", `/users/me/meetings/${meeting.uuid}`);
  assert.deepEqual([changed.name, changed.pin], ["Retro 2", null]);

  // bob: another user's meeting does not exist for him, and stays as it was
  const bob = await as(w.t.ctx, w.bob);
  assert.equal((await bob.json(200, "GET", "/users/me/meetings")).total, 0);
  for (const [method, body] of [["GET"], ["PUT", { name: "mine" }], ["DELETE"]] as const) {
    await expectNotFound(
      await bob.call(method, `/users/me/meetings/${meeting.uuid}`, body),
      "Meeting",
      { uuid: meeting.uuid },
    );
  }
  await expectNotFound(
    await bob.call("GET", `/users/me/meetings/${meeting.uuid}/authorizations`),
    "Meeting",
    { uuid: meeting.uuid },
  );
  assert.equal(
    (await alice.json(200, "GET", `/users/me/meetings/${meeting.uuid}`)).name,
    "Retro 2",
  );

  // errors
  await expectConfdError(await alice.call("POST", "/users/me/meetings", "{oops"), 400, /JSON/);
  await expectConfdError(await alice.call("POST", "/users/me/meetings", {}), 400, /name/);
  await expectConfdError(
    await alice.call("POST", "/users/me/meetings", { name: "x", pin: "12ab" }),
    400,
    /pin/,
  );
  await expectConfdError(
    await alice.call("POST", "/users/me/meetings", { name: "x", owner_uuids: [NO_SUCH] }),
    400,
    /owner_uuids/,
  );
  await expectConfdError(
    await alice.call("POST", "/users/me/meetings", { name: "x", persistent: "yes" }),
    400,
    /persistent/,
  );
  await expectNotFound(await alice.call("GET", `/users/me/meetings/${NO_SUCH}`), "Meeting", {
    uuid: NO_SUCH,
  });
  assert.equal((await alice.json(200, "GET", "/users/me/meetings")).total, 1, "nothing created");
  // a web service token is no user's
  const ws = apiCall(w.t.ctx, "/1.1", await tokenHolding(w.t.ctx, ["confd.#"]));
  await expectConfdError(await ws("GET", "/users/me/meetings"), 400, /user_uuid/);

  await alice.json(204, "DELETE", `/users/me/meetings/${meeting.uuid}`);
  assert.deepEqual(await w.v2.alice.expect(200, "GET", `${ROOMS}/personal`), []);
});

Deno.test("/1.1/meetings: the administrator's, owners by uuid, bad input refused", async () => {
  const w = await roomsWorld();
  const { api } = w.t;
  const meeting = await api.create("/meetings", {
    name: "Board",
    owner_uuids: [w.alice.uuid, w.bob.uuid],
  });
  assert.deepEqual([meeting.exten, meeting.owner_uuids], ["4100", [w.alice.uuid, w.bob.uuid]]);
  assert.equal((await api.list("/meetings")).total, 1);
  const bob = await as(w.t.ctx, w.bob);
  assert.equal((await bob.json(200, "GET", "/users/me/meetings")).total, 1, "bob owns it too");
  assert.equal(
    (await api.put(`/meetings/${meeting.uuid}`, { owner_uuids: [w.carol.uuid] }))
      .status,
    204,
  );
  assert.equal((await bob.json(200, "GET", "/users/me/meetings")).total, 0);
  await api.expectJsonObjectBody("POST", "/meetings");
  await api.expectInvalid("POST", "/meetings", [
    [{}, /name/],
    [{ name: 5 }, /name/],
    [{ name: "x", owner_uuids: ["nope"] }, /owner_uuids/],
    [{ name: "x", owner_uuids: [NO_SUCH] }, /owner_uuids/],
    [{ name: "x", pin: "abc" }, /pin/],
  ]);
  await api.expectUnknownId("/meetings", "Meeting", { uuid: NO_SUCH });
  await api.expectDeleted("/meetings", "Meeting", { uuid: meeting.uuid });
});

Deno.test("guests ask to join; the owner accepts or rejects; the PIN shows once accepted", async () => {
  const w = await roomsWorld();
  const alice = await as(w.t.ctx, w.alice);
  const meeting = await alice.json(201, "POST", "/users/me/meetings", {
    name: "Demo",
    pin: "2468",
    require_authorization: true,
  });
  const g = guest(w.t.ctx);
  const seen = await g.json(200, "GET", `/guests/me/meetings/${meeting.uuid}`);
  assert.equal(seen.pin, undefined, "a guest is not shown the PIN");
  const base = `/guests/${GUEST}/meetings/${meeting.uuid}/authorizations`;
  const asked = await g.json(201, "POST", base, { guest_name: "Visitor" });
  assert.deepEqual([asked.status, asked.exten, asked.pin, asked.guest_name], [
    "pending",
    null,
    null,
    "Visitor",
  ]);
  const rejectedOne = await g.json(201, "POST", base, { guest_name: "Spammer" });
  const owner = `/users/me/meetings/${meeting.uuid}/authorizations`;
  assert.equal((await alice.json(200, "GET", owner)).total, 2);
  const accepted = await alice.json(200, "PUT", `${owner}/${asked.uuid}/accept`);
  assert.deepEqual([accepted.status, accepted.exten, accepted.pin], ["accepted", "4100", "2468"]);
  const rejected = await alice.json(200, "PUT", `${owner}/${rejectedOne.uuid}/reject`);
  assert.deepEqual([rejected.status, rejected.pin], ["rejected", null]);
  assert.deepEqual(
    [(await g.json(200, "GET", `${base}/${asked.uuid}`)).pin],
    ["2468"],
    "the guest reads its answer",
  );
  // bob is no owner: alice's authorizations do not exist for him
  const bob = await as(w.t.ctx, w.bob);
  await expectNotFound(await bob.call("PUT", `${owner}/${asked.uuid}/reject`), "Meeting", {
    uuid: meeting.uuid,
  });
  // errors
  await expectConfdError(
    await w.t.ctx.app.request(`/1.1/guests/nope/meetings/${meeting.uuid}/authorizations`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ guest_name: "x" }),
    }),
    400,
    /guest_uuid/,
  );
  await expectConfdError(
    await w.t.ctx.app.request(`/1.1/guests/${GUEST}/meetings/${NO_SUCH}/authorizations`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ guest_name: "x" }),
    }),
    404,
    /Meeting was not found/,
  );
  await expectConfdError(
    await w.t.ctx.app.request(`/1.1${base}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ guest_name: 7 }),
    }),
    400,
    /guest_name/,
  );
  await expectNotFound(
    await alice.call("PUT", `${owner}/${NO_SUCH}/accept`),
    "MeetingAuthorization",
    {
      uuid: NO_SUCH,
    },
  );
  await alice.json(204, "DELETE", `${owner}/${rejectedOne.uuid}`);
  assert.equal((await alice.json(200, "GET", owner)).total, 1);
  // a day later, they are gone
  await w.t.advance(24 * 3600 * 1000);
  const later = await as(w.t.ctx, w.alice); // a fresh token: the first one expired meanwhile
  assert.equal((await later.json(200, "GET", owner)).total, 0);
  // deleting the meeting deletes its authorizations
  const again = await g.json(201, "POST", base, { guest_name: "Late" });
  await later.json(204, "DELETE", `/users/me/meetings/${meeting.uuid}`);
  await expectConfdError(
    await w.t.ctx.app.request(`/1.1${base}/${again.uuid}`),
    404,
    /Meeting was not found/,
  );
});

Deno.test("a meeting that requires no authorization accepts a guest at once", async () => {
  const w = await roomsWorld();
  const alice = await as(w.t.ctx, w.alice);
  const meeting = await alice.json(201, "POST", "/users/me/meetings", { name: "Open", pin: "1" });
  const asked = await guest(w.t.ctx).json(
    201,
    "POST",
    `/guests/${GUEST}/meetings/${meeting.uuid}/authorizations`,
    { guest_name: "Anyone" },
  );
  assert.deepEqual([asked.status, asked.exten, asked.pin], ["accepted", "4100", "1"]);
});

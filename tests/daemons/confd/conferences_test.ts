/**
 * `/1.1/conferences` (docs/meetingrooms.md): Wazo's static rooms, their one extension, every
 * error in the daemon's form, the ACLs, and deleting one while people are in it.
 */
import assert from "node:assert/strict";
import { expectAcls, expectConfdError, expectNotFound, setupConfd } from "../../helpers.ts";
import { inRoom, roomsWorld } from "../../routes/meetingrooms_fixtures.ts";

Deno.test("/1.1/conferences: create, list, get, update, extension, delete", async () => {
  const { api } = await setupConfd();
  const created = await api.create("/conferences", { name: "All hands", pin: "1234" });
  assert.deepEqual(created, {
    id: created.id,
    name: "All hands",
    preprocess_subroutine: null,
    max_users: 50,
    record: false,
    pin: "1234",
    admin_pin: null,
    quiet_join_leave: false,
    announce_join_leave: false,
    announce_user_count: false,
    announce_only_user: true,
    music_on_hold: null,
    extensions: [],
    incalls: [],
  });
  assert.deepEqual(await api.list("/conferences"), { total: 1, values: ["All hands"] });
  const changed = await api.put(`/conferences/${created.id}`, { max_users: 3, pin: "" });
  assert.equal(changed.status, 204);
  const read = await (await api.get(`/conferences/${created.id}`)).json();
  assert.deepEqual([read.max_users, read.pin, read.name], [3, null, "All hands"]);

  const extension = await api.create("/extensions", { exten: "4000", context: "default" });
  const path = `/conferences/${created.id}/extensions/${extension.id}`;
  assert.equal((await api.put(path)).status, 204);
  assert.deepEqual((await (await api.get(`/conferences/${created.id}`)).json()).extensions, [
    { id: extension.id, exten: "4000", context: "default" },
  ]);
  await expectConfdError(
    await api.delete(`/extensions/${extension.id}`),
    400,
    /associated with a Conference/,
  );
  const other = await api.create("/conferences", { name: "Other" });
  await expectConfdError(
    await api.put(`/conferences/${other.id}/extensions/${extension.id}`),
    400,
    /./,
  );
  assert.equal((await api.delete(path)).status, 204);
  assert.deepEqual((await (await api.get(`/conferences/${created.id}`)).json()).extensions, []);
  assert.equal((await api.put(path)).status, 204);
  await api.expectDeleted("/conferences", "Conference", { id: created.id });
  assert.equal(
    (await (await api.get(`/extensions/${extension.id}`)).json()).conference,
    null,
    "its extension is freed",
  );
});

Deno.test("/1.1/conferences: bad bodies, unknown ids, extension outside the ranges", async () => {
  const { api } = await setupConfd();
  await api.expectJsonObjectBody("POST", "/conferences");
  await api.expectInvalid("POST", "/conferences", [
    [{ pin: "12a" }, /pin/],
    [{ pin: 1234 }, /pin/],
    [{ pin: "1".repeat(81) }, /pin/],
    [{ admin_pin: "x" }, /admin_pin/],
    [{ max_users: -1 }, /max_users/],
    [{ max_users: "5" }, /max_users/],
    [{ max_users: 2 ** 40 }, /max_users/],
    [{ name: 5 }, /name/],
    [{ record: "yes" }, /record/],
  ]);
  assert.deepEqual(await api.list("/conferences"), { total: 0, values: [] });
  await api.expectUnknownId("/conferences", "Conference", { id: 999 });
  const conference = await api.create("/conferences", { name: "x" });
  await expectNotFound(
    await api.put(`/conferences/${conference.id}/extensions/999`),
    "Extension",
    { id: 999 },
  );
  const outside = await api.create("/extensions", { exten: "1500", context: "default" });
  await expectConfdError(
    await api.put(`/conferences/${conference.id}/extensions/${outside.id}`),
    400,
    /outside the conference room ranges/,
  );
});

Deno.test("/1.1/conferences: ACLs", async (t) => {
  const { ctx, api } = await setupConfd();
  const { id } = await api.create("/conferences", { name: "x" });
  const extension = await api.create("/extensions", { exten: "4000", context: "default" });
  await expectAcls(t, ctx, [
    ["GET", "/conferences", "confd.conferences.read"],
    ["POST", "/conferences", "confd.conferences.create", { name: "y" }],
    ["GET", `/conferences/${id}`, `confd.conferences.${id}.read`],
    ["PUT", `/conferences/${id}`, `confd.conferences.${id}.update`, { name: "z" }],
    [
      "PUT",
      `/conferences/${id}/extensions/${extension.id}`,
      `confd.conferences.${id}.extensions.${extension.id}.update`,
    ],
    [
      "DELETE",
      `/conferences/${id}/extensions/${extension.id}`,
      `confd.conferences.${id}.extensions.${extension.id}.delete`,
    ],
    ["DELETE", `/conferences/${id}`, `confd.conferences.${id}.delete`],
  ]);
});

Deno.test("/1.1/conferences: deleting one people are in hangs them up", async () => {
  const w = await roomsWorld();
  const { api } = w.t;
  const conference = await api.create("/conferences", { name: "x", pin: "77" });
  const extension = await api.create("/extensions", { exten: "4000", context: "default" });
  await api.put(`/conferences/${conference.id}/extensions/${extension.id}`);
  await w.join(w.alice, "4000", "77");
  await w.join(w.bob, "4000", "77");
  assert.deepEqual(await inRoom(w, `conference-${conference.id}`), [
    ["alice", false],
    ["bob", false],
  ]);
  assert.equal((await api.delete(`/conferences/${conference.id}`)).status, 204);
  assert.deepEqual(await inRoom(w, `conference-${conference.id}`), []);
  assert.deepEqual(await w.t.ctx.services.platform.liveCalls(), []);
});

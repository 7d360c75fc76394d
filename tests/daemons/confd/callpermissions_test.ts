import assert from "node:assert/strict";
import { callPermissionsOfUser } from "../../../lib/store/callpermissions.ts";
import { getUser } from "../../../lib/store/users.ts";
import {
  ctiUser,
  expectAcls,
  expectConfdError,
  expectNotFound,
  setupConfd,
} from "../../helpers.ts";

Deno.test("/1.1/callpermissions: create, list, get, update, delete", async (t) => {
  const { api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and the permission with its defaults", async () => {
    const body = await api.create("/callpermissions", { name: "no-mobiles", user_ids: [1] });
    id = body.id;
    assert.deepEqual(body, {
      id,
      name: "no-mobiles",
      password: null,
      mode: "deny",
      extensions: [],
      enabled: true,
      description: null,
      users: [],
    });
  });

  await t.step("POST takes every field", async () => {
    const full = {
      name: "international_ok",
      password: "1234",
      mode: "allow",
      extensions: ["_00.", "112"],
      enabled: false,
      description: "Abroad with a code",
    };
    const body = await api.create("/callpermissions", full);
    assert.deepEqual(body, { id: body.id, ...full, users: [] });
  });

  await t.step("GET lists, searches and filters", async () => {
    assert.equal((await api.list("/callpermissions")).total, 2);
    assert.deepEqual((await api.list("/callpermissions?search=abroad")).values, [
      "international_ok",
    ]);
    assert.deepEqual((await api.list("/callpermissions?mode=deny")).values, ["no-mobiles"]);
  });

  await t.step("GET by id and PUT changing only what it sends", async () => {
    assert.equal((await (await api.get(`/callpermissions/${id}`)).json()).name, "no-mobiles");
    const response = await api.put(`/callpermissions/${id}`, {
      extensions: ["_06XXXXXXXX", "_07XXXXXXXX"],
      password: "99",
    });
    assert.equal(response.status, 204);
    const body = await (await api.get(`/callpermissions/${id}`)).json();
    assert.deepEqual(body.extensions, ["_06XXXXXXXX", "_07XXXXXXXX"]);
    assert.equal(body.password, "99");
    assert.equal(body.mode, "deny");
    assert.equal((await api.put(`/callpermissions/${id}`, { password: null })).status, 204);
    assert.equal((await (await api.get(`/callpermissions/${id}`)).json()).password, null);
  });

  await t.step("an extension given twice is kept once, on create and update", async () => {
    const body = await api.create("/callpermissions", {
      name: "twice",
      extensions: ["112", "_00.", "112", "_00.", "15"],
    });
    assert.deepEqual(body.extensions, ["112", "_00.", "15"]);
    const stored = await (await api.get(`/callpermissions/${body.id}`)).json();
    assert.deepEqual(stored.extensions, ["112", "_00.", "15"]);
    const response = await api.put(`/callpermissions/${body.id}`, { extensions: ["17", "17"] });
    assert.equal(response.status, 204);
    assert.deepEqual((await (await api.get(`/callpermissions/${body.id}`)).json()).extensions, [
      "17",
    ]);
  });

  await t.step("DELETE answers 204, then the permission is gone", async () => {
    await api.expectDeleted("/callpermissions", "CallPermission", { id });
  });
});

Deno.test("/1.1/callpermissions: every error", async (t) => {
  const { api } = await setupConfd();
  const created = await (await api.post("/callpermissions", { name: "taken" })).json();

  await t.step("unknown ids: 404", async () => {
    await api.expectUnknownId("/callpermissions", "CallPermission", { id: 999 });
    await expectConfdError(await api.get("/callpermissions/999/users"), 404, /not found/);
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    await api.expectInvalid("POST", "/callpermissions", [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than minimum length 1/],
      [{ name: "n".repeat(129) }, /field 'name': Longer than maximum length 128/],
      [{ name: "with space" }, /field 'name': Must be letters/],
      [{ name: "x", password: "12ab" }, /field 'password'/],
      [{ name: "x", password: "1".repeat(17) }, /field 'password'/],
      [{ name: "x", mode: "maybe" }, /field 'mode'/],
      [{ name: "x", extensions: "112" }, /field 'extensions'/],
      [{ name: "x", extensions: ["1a"] }, /field 'extensions.0'/],
      [{ name: "x", enabled: "true" }, /field 'enabled'/],
      [{ name: "x", description: 5 }, /field 'description'/],
    ]);
    await expectConfdError(
      await api.put(`/callpermissions/${created.id}`, { mode: "open" }),
      400,
      /field 'mode'/,
    );
  });

  await t.step("a taken name: 400 Resource Error", async () => {
    const message = /^Resource Error - CallPermission already exists \('name': 'taken'\)$/;
    await api.expectTaken("/callpermissions", { name: "taken" }, { name: "other" }, message);
  });
});

Deno.test("/1.1/users/{id}/callpermissions: associate and dissociate", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await ctiUser(ctx, "alice");
  const bob = await ctiUser(ctx, "bob");
  const deny = await (await api.post("/callpermissions", { name: "deny" })).json();
  const allow = await (await api.post("/callpermissions", { name: "allow", mode: "allow" }))
    .json();

  await t.step("PUT associates, many to many, by user id or uuid", async () => {
    assert.deepEqual(await (await api.get(`/users/${alice.id}/callpermissions`)).json(), {
      total: 0,
      items: [],
    });
    for (
      const path of [
        `/users/${alice.id}/callpermissions/${deny.id}`,
        `/users/${alice.uuid}/callpermissions/${allow.id}`,
        `/users/${bob.id}/callpermissions/${deny.id}`,
      ]
    ) {
      assert.equal((await api.put(path)).status, 204, path);
    }
    assert.deepEqual(await (await api.get(`/users/${alice.uuid}/callpermissions`)).json(), {
      total: 2,
      items: [
        { user_id: alice.id, call_permission_id: deny.id },
        { user_id: alice.id, call_permission_id: allow.id },
      ],
    });
    assert.deepEqual(await (await api.get(`/callpermissions/${deny.id}/users`)).json(), {
      total: 2,
      items: [
        { user_id: alice.id, call_permission_id: deny.id },
        { user_id: bob.id, call_permission_id: deny.id },
      ],
    });
    const view = await (await api.get(`/callpermissions/${deny.id}`)).json();
    assert.deepEqual(view.users, [{ id: alice.id }, { id: bob.id }]);
    const stored = await getUser(ctx.services.store, alice.id);
    assert.deepEqual(
      (await callPermissionsOfUser(ctx.services.store, stored!)).map((p) => p.name),
      ["deny", "allow"],
    );
  });

  await t.step("associating twice: 400", async () => {
    await expectConfdError(
      await api.put(`/users/${alice.id}/callpermissions/${deny.id}`),
      400,
      new RegExp(
        `^Resource Error - User is already associated with this CallPermission \\('user_id': ${alice.id}, 'call_permission_id': ${deny.id}\\)$`,
      ),
    );
  });

  await t.step("unknown user or call permission: 404", async () => {
    await expectNotFound(
      await api.put(`/users/${alice.id}/callpermissions/999`),
      "CallPermission",
      { id: 999 },
    );
    await expectNotFound(await api.put(`/users/999/callpermissions/${deny.id}`), "User", {
      id: 999,
    });
    await expectConfdError(await api.get("/users/999/callpermissions"), 404, /User was not found/);
  });

  await t.step("an associated call permission cannot be deleted", async () => {
    await expectConfdError(
      await api.delete(`/callpermissions/${deny.id}`),
      400,
      /^Resource Error - CallPermission is associated with a User$/,
    );
    assert.equal((await api.get(`/callpermissions/${deny.id}`)).status, 200);
  });

  await t.step("DELETE dissociates; dissociating what is not associated: 400", async () => {
    assert.equal((await api.delete(`/users/${alice.id}/callpermissions/${deny.id}`)).status, 204);
    await expectConfdError(
      await api.delete(`/users/${alice.id}/callpermissions/${deny.id}`),
      400,
      /^Resource Error - User is not associated with this CallPermission/,
    );
    assert.equal((await api.delete(`/users/${bob.uuid}/callpermissions/${deny.id}`)).status, 204);
    assert.deepEqual(await (await api.get(`/callpermissions/${deny.id}/users`)).json(), {
      total: 0,
      items: [],
    });
    assert.deepEqual((await getUser(ctx.services.store, alice.id))?.callpermission_ids, [
      allow.id,
    ]);
    assert.equal((await api.delete(`/callpermissions/${deny.id}`)).status, 204);
  });
});

Deno.test("/1.1/callpermissions: ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  await (await admin.post("/callpermissions", { name: "first" })).body?.cancel();
  const user = await ctiUser(ctx);
  const association = `/users/${user.id}/callpermissions/1`;
  const associationAcl = `confd.users.${user.id}.callpermissions.1`;
  await expectAcls(t, ctx, [
    ["GET", "/callpermissions", "confd.callpermissions.read"],
    ["POST", "/callpermissions", "confd.callpermissions.create", { name: "second" }],
    ["GET", "/callpermissions/1", "confd.callpermissions.1.read"],
    ["PUT", "/callpermissions/1", "confd.callpermissions.1.update", {}],
    ["GET", `/users/${user.id}/callpermissions`, `confd.users.${user.id}.callpermissions.read`],
    ["PUT", association, `${associationAcl}.update`],
    ["GET", "/callpermissions/1/users", "confd.callpermissions.1.users.read"],
    ["DELETE", association, `${associationAcl}.delete`],
    ["DELETE", "/callpermissions/1", "confd.callpermissions.1.delete"],
  ]);
});

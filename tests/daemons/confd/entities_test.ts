import assert from "node:assert/strict";
import { usersOfEntity } from "../../../lib/store/entities.ts";
import {
  ctiUser,
  expectAcls,
  expectConfdError,
  expectNotFound,
  setupConfd,
} from "../../helpers.ts";

Deno.test("/1.1/entities: create, list, get, update, delete", async (t) => {
  const { api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and the entity", async () => {
    const body = await api.create("/entities", { name: "acme", display_name: "ACME Inc." });
    id = body.id;
    assert.deepEqual(body, { id, name: "acme", display_name: "ACME Inc.", description: null });
  });

  await t.step("GET lists and searches", async () => {
    await (await api.post("/entities", { name: "globex" })).body?.cancel();
    assert.deepEqual((await api.list("/entities?order=name&direction=desc")).values, [
      "globex",
      "acme",
    ]);
    assert.deepEqual((await api.list("/entities?search=inc")).values, ["acme"]);
  });

  await t.step("GET by id and PUT changing only what it sends", async () => {
    assert.equal((await (await api.get(`/entities/${id}`)).json()).name, "acme");
    assert.equal((await api.put(`/entities/${id}`, { description: "HQ" })).status, 204);
    assert.deepEqual(await (await api.get(`/entities/${id}`)).json(), {
      id,
      name: "acme",
      display_name: "ACME Inc.",
      description: "HQ",
    });
  });

  await t.step("DELETE answers 204, then the entity is gone", async () => {
    await api.expectDeleted("/entities", "Entity", { id });
  });
});

Deno.test("/1.1/entities: every error", async (t) => {
  const { api } = await setupConfd();
  const created = await (await api.post("/entities", { name: "acme" })).json();

  await t.step("unknown ids: 404", async () => {
    await api.expectUnknownId("/entities", "Entity", { id: 999 });
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    await api.expectInvalid("POST", "/entities", [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than minimum length 1/],
      [{ name: "n".repeat(65) }, /field 'name': Longer than maximum length 64/],
      [{ name: "with space" }, /field 'name': Must be letters/],
      [{ name: "x", display_name: "d".repeat(129) }, /field 'display_name'/],
      [{ name: "x", description: false }, /field 'description'/],
    ]);
    await expectConfdError(
      await api.put(`/entities/${created.id}`, { name: "bad name" }),
      400,
      /field 'name'/,
    );
  });

  await t.step("a taken name: 400 Resource Error", async () => {
    const message = /^Resource Error - Entity already exists \('name': 'acme'\)$/;
    await api.expectTaken("/entities", { name: "acme" }, { name: "other" }, message);
  });
});

Deno.test("/1.1/users/{id}/entities: a user's entity", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await ctiUser(ctx, "alice");
  const acme = await (await api.post("/entities", { name: "acme" })).json();
  const globex = await (await api.post("/entities", { name: "globex" })).json();

  await t.step("a user without entity lists none", async () => {
    const response = await api.get(`/users/${alice.id}/entities`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { total: 0, items: [] });
  });

  await t.step("PUT sets the entity, and again replaces it", async () => {
    assert.equal((await api.put(`/users/${alice.id}/entities/${acme.id}`)).status, 204);
    assert.deepEqual(await (await api.get(`/users/${alice.uuid}/entities`)).json(), {
      total: 1,
      items: [{ user_id: alice.id, entity_id: acme.id }],
    });
    assert.equal((await api.put(`/users/${alice.uuid}/entities/${globex.id}`)).status, 204);
    assert.deepEqual(await (await api.get(`/users/${alice.id}/entities`)).json(), {
      total: 1,
      items: [{ user_id: alice.id, entity_id: globex.id }],
    });
    const members = await usersOfEntity(ctx.services.store, globex.id);
    assert.deepEqual(members.map((user) => user.id), [alice.id]);
  });

  await t.step("unknown user or entity: 404", async () => {
    await expectNotFound(await api.put(`/users/${alice.id}/entities/999`), "Entity", { id: 999 });
    await expectNotFound(await api.put(`/users/999/entities/${acme.id}`), "User", { id: 999 });
    await expectNotFound(await api.get("/users/nobody/entities"), "User", { uuid: "nobody" });
  });

  await t.step("an entity users belong to cannot be deleted; the others can", async () => {
    await expectConfdError(
      await api.delete(`/entities/${globex.id}`),
      400,
      /^Resource Error - Entity is associated with a User$/,
    );
    assert.equal((await api.get(`/entities/${globex.id}`)).status, 200);
    assert.equal((await api.delete(`/entities/${acme.id}`)).status, 204);
  });
});

Deno.test("/1.1/entities: ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  await (await admin.post("/entities", { name: "first" })).body?.cancel();
  const user = await ctiUser(ctx);
  await expectAcls(t, ctx, [
    ["GET", "/entities", "confd.entities.read"],
    ["POST", "/entities", "confd.entities.create", { name: "second" }],
    ["GET", "/entities/1", "confd.entities.1.read"],
    ["PUT", "/entities/1", "confd.entities.1.update", {}],
    ["GET", `/users/${user.id}/entities`, `confd.users.${user.id}.entities.read`],
    ["PUT", `/users/${user.id}/entities/2`, `confd.users.${user.id}.entities.2.update`],
    ["DELETE", "/entities/1", "confd.entities.1.delete"],
  ]);
});

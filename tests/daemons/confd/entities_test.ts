import assert from "node:assert/strict";
import { usersOfEntity } from "../../../lib/store/entities.ts";
import { confd, ctiUser, expectConfdError, setup } from "../../helpers.ts";

Deno.test("/1.1/entities: create, list, get, update, delete", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  let id = 0;

  await t.step("POST answers 201 with Location and the entity", async () => {
    const response = await api.post("/entities", { name: "acme", display_name: "ACME Inc." });
    assert.equal(response.status, 201);
    const body = await response.json();
    id = body.id;
    assert.equal(response.headers.get("location"), `/1.1/entities/${id}`);
    assert.deepEqual(body, { id, name: "acme", display_name: "ACME Inc.", description: null });
  });

  await t.step("GET lists and searches", async () => {
    await (await api.post("/entities", { name: "globex" })).body?.cancel();
    const all = await (await api.get("/entities?order=name&direction=desc")).json();
    assert.deepEqual(all.items.map((e: { name: string }) => e.name), ["globex", "acme"]);
    const found = await (await api.get("/entities?search=inc")).json();
    assert.deepEqual(found.items.map((e: { name: string }) => e.name), ["acme"]);
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
    assert.equal((await api.delete(`/entities/${id}`)).status, 204);
    await expectConfdError(
      await api.get(`/entities/${id}`),
      404,
      new RegExp(`^Resource Not Found - Entity was not found \\('id': ${id}\\)$`),
    );
  });
});

Deno.test("/1.1/entities: every error", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  const created = await (await api.post("/entities", { name: "acme" })).json();

  await t.step("unknown ids: 404", async () => {
    await expectConfdError(await api.get("/entities/999"), 404, /\('id': 999\)/);
    await expectConfdError(await api.put("/entities/999", {}), 404, /not found/);
    await expectConfdError(await api.delete("/entities/999"), 404, /not found/);
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than minimum length 1/],
      [{ name: "n".repeat(65) }, /field 'name': Longer than maximum length 64/],
      [{ name: "with space" }, /field 'name': Must be letters/],
      [{ name: "x", display_name: "d".repeat(129) }, /field 'display_name'/],
      [{ name: "x", description: false }, /field 'description'/],
    ];
    for (const [body, pattern] of cases) {
      await expectConfdError(await api.post("/entities", body), 400, pattern);
    }
    await expectConfdError(
      await api.put(`/entities/${created.id}`, { name: "bad name" }),
      400,
      /field 'name'/,
    );
  });

  await t.step("a taken name: 400 Resource Error", async () => {
    const message = /^Resource Error - Entity already exists \('name': 'acme'\)$/;
    await expectConfdError(await api.post("/entities", { name: "acme" }), 400, message);
    const other = await (await api.post("/entities", { name: "other" })).json();
    await expectConfdError(await api.put(`/entities/${other.id}`, { name: "acme" }), 400, message);
  });
});

Deno.test("/1.1/users/{id}/entities: a user's entity", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
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
    await expectConfdError(
      await api.put(`/users/${alice.id}/entities/999`),
      404,
      /^Resource Not Found - Entity was not found \('id': 999\)$/,
    );
    await expectConfdError(
      await api.put(`/users/999/entities/${acme.id}`),
      404,
      /^Resource Not Found - User was not found \('id': 999\)$/,
    );
    await expectConfdError(
      await api.get("/users/nobody/entities"),
      404,
      /User was not found \('uuid': 'nobody'\)/,
    );
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
  const ctx = await setup();
  const admin = await confd(ctx);
  await (await admin.post("/entities", { name: "first" })).body?.cancel();
  const user = await ctiUser(ctx);
  const narrow = await confd(ctx, ["confd.contexts.#"]);
  const routes: [string, string, string, unknown?][] = [
    ["GET", "/entities", "confd.entities.read"],
    ["POST", "/entities", "confd.entities.create", { name: "second" }],
    ["GET", "/entities/1", "confd.entities.1.read"],
    ["PUT", "/entities/1", "confd.entities.1.update", {}],
    ["GET", `/users/${user.id}/entities`, `confd.users.${user.id}.entities.read`],
    ["PUT", `/users/${user.id}/entities/2`, `confd.users.${user.id}.entities.2.update`],
    ["DELETE", "/entities/1", "confd.entities.1.delete"],
  ];
  const granted = await confd(ctx, routes.map(([, , acl]) => acl));
  for (const [method, path, acl, body] of routes) {
    await t.step(`${method} ${path} needs ${acl}`, async () => {
      const refused = await narrow.call(method, path, body);
      assert.equal(refused.status, 403);
      assert.deepEqual(await refused.json(), [`Forbidden - missing ACL ${acl}`]);
      const allowed = await granted.call(method, path, body);
      assert.ok(allowed.status < 300, `${method} ${path}: ${allowed.status}`);
      await allowed.body?.cancel();
    });
  }
});

import assert from "node:assert/strict";
import { findLabel } from "../../../lib/store/labels.ts";
import { confd, expectConfdError, setup } from "../../helpers.ts";

Deno.test("/1.1/labels: create, list, get, update, delete", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  let id = 0;

  await t.step("POST answers 201 with Location and the label", async () => {
    const response = await api.post("/labels", { name: "VIP" });
    assert.equal(response.status, 201);
    const body = await response.json();
    id = body.id;
    assert.equal(response.headers.get("location"), `/1.1/labels/${id}`);
    assert.deepEqual(body, { id, name: "VIP", description: null });
    assert.deepEqual(await findLabel(ctx.services.store, "VIP"), body);
  });

  await t.step("GET lists and searches", async () => {
    await (await api.post("/labels", { name: "Support", description: "Level 2" })).body?.cancel();
    assert.equal((await (await api.get("/labels")).json()).total, 2);
    const found = await (await api.get("/labels?search=level")).json();
    assert.deepEqual(found.items.map((l: { name: string }) => l.name), ["Support"]);
  });

  await t.step("GET by id and PUT changing only what it sends", async () => {
    assert.equal((await (await api.get(`/labels/${id}`)).json()).name, "VIP");
    assert.equal((await api.put(`/labels/${id}`, { description: "Key clients" })).status, 204);
    assert.deepEqual(await (await api.get(`/labels/${id}`)).json(), {
      id,
      name: "VIP",
      description: "Key clients",
    });
    assert.equal((await api.put(`/labels/${id}`, { name: "Gold" })).status, 204);
    assert.equal(await findLabel(ctx.services.store, "VIP"), null);
  });

  await t.step("DELETE answers 204, then the label is gone", async () => {
    assert.equal((await api.delete(`/labels/${id}`)).status, 204);
    await expectConfdError(
      await api.get(`/labels/${id}`),
      404,
      new RegExp(`^Resource Not Found - Label was not found \\('id': ${id}\\)$`),
    );
  });
});

Deno.test("/1.1/labels: every error", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  await (await api.post("/labels", { name: "VIP" })).body?.cancel();

  await t.step("unknown ids: 404", async () => {
    await expectConfdError(await api.get("/labels/999"), 404, /\('id': 999\)/);
    await expectConfdError(await api.put("/labels/999", {}), 404, /not found/);
    await expectConfdError(await api.delete("/labels/999"), 404, /not found/);
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than minimum length 1/],
      [{ name: "n".repeat(129) }, /field 'name': Longer than maximum length 128/],
      [{ name: null }, /field 'name'/],
      [{ name: "x", description: "d".repeat(1025) }, /field 'description'/],
    ];
    for (const [body, pattern] of cases) {
      await expectConfdError(await api.post("/labels", body), 400, pattern);
    }
    await expectConfdError(await api.put("/labels/1", { name: 3 }), 400, /field 'name'/);
  });

  await t.step("a taken name: 400 Resource Error", async () => {
    const message = /^Resource Error - Label already exists \('name': 'VIP'\)$/;
    await expectConfdError(await api.post("/labels", { name: "VIP" }), 400, message);
    const other = await (await api.post("/labels", { name: "other" })).json();
    await expectConfdError(await api.put(`/labels/${other.id}`, { name: "VIP" }), 400, message);
  });
});

Deno.test("/1.1/labels: ACLs", async (t) => {
  const ctx = await setup();
  const admin = await confd(ctx);
  await (await admin.post("/labels", { name: "first" })).body?.cancel();
  const narrow = await confd(ctx, ["confd.contexts.#"]);
  const routes: [string, string, string, unknown?][] = [
    ["GET", "/labels", "confd.labels.read"],
    ["POST", "/labels", "confd.labels.create", { name: "second" }],
    ["GET", "/labels/1", "confd.labels.1.read"],
    ["PUT", "/labels/1", "confd.labels.1.update", {}],
    ["DELETE", "/labels/1", "confd.labels.1.delete"],
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

import assert from "node:assert/strict";
import { findLabel } from "../../../lib/store/labels.ts";
import { expectAcls, expectConfdError, setupConfd } from "../../helpers.ts";

Deno.test("/1.1/labels: create, list, get, update, delete", async (t) => {
  const { ctx, api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and the label", async () => {
    const body = await api.create("/labels", { name: "VIP" });
    id = body.id;
    assert.deepEqual(body, { id, name: "VIP", description: null });
    assert.deepEqual(await findLabel(ctx.services.store, "VIP"), body);
  });

  await t.step("GET lists and searches", async () => {
    await (await api.post("/labels", { name: "Support", description: "Level 2" })).body?.cancel();
    assert.equal((await api.list("/labels")).total, 2);
    assert.deepEqual((await api.list("/labels?search=level")).values, ["Support"]);
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
    await api.expectDeleted("/labels", "Label", { id });
  });
});

Deno.test("/1.1/labels: every error", async (t) => {
  const { api } = await setupConfd();
  await (await api.post("/labels", { name: "VIP" })).body?.cancel();

  await t.step("unknown ids: 404", async () => {
    await api.expectUnknownId("/labels", "Label", { id: 999 });
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    await api.expectInvalid("POST", "/labels", [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than minimum length 1/],
      [{ name: "n".repeat(129) }, /field 'name': Longer than maximum length 128/],
      [{ name: null }, /field 'name'/],
      [{ name: "x", description: "d".repeat(1025) }, /field 'description'/],
    ]);
    await expectConfdError(await api.put("/labels/1", { name: 3 }), 400, /field 'name'/);
  });

  await t.step("a taken name: 400 Resource Error", async () => {
    const message = /^Resource Error - Label already exists \('name': 'VIP'\)$/;
    await api.expectTaken("/labels", { name: "VIP" }, { name: "other" }, message);
  });
});

Deno.test("/1.1/labels: ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  await (await admin.post("/labels", { name: "first" })).body?.cancel();
  await expectAcls(t, ctx, [
    ["GET", "/labels", "confd.labels.read"],
    ["POST", "/labels", "confd.labels.create", { name: "second" }],
    ["GET", "/labels/1", "confd.labels.1.read"],
    ["PUT", "/labels/1", "confd.labels.1.update", {}],
    ["DELETE", "/labels/1", "confd.labels.1.delete"],
  ]);
});

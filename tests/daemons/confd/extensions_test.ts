import assert from "node:assert/strict";
import { findExtension } from "../../../lib/store/extensions.ts";
import { type Confd, expectAcls, expectConfdError, setupConfd } from "../../helpers.ts";

/** Puts the extension on a new line of a new user, through the API; answers the line's id. */
async function putOnUserLine(api: Confd, id: number): Promise<number> {
  const line = await (await api.post("/lines", { context: "default" })).json();
  const user = await (await api.post("/users", { firstname: "Owner" })).json();
  assert.equal((await api.put(`/users/${user.id}/lines/${line.id}`)).status, 204);
  assert.equal((await api.put(`/lines/${line.id}/extensions/${id}`)).status, 204);
  return line.id;
}

Deno.test("/1.1/extensions: create, list, get, update, delete", async (t) => {
  const { ctx, api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and the extension, enabled by default", async () => {
    const body = await api.create("/extensions", {
      exten: "1001",
      context: "default",
      line_id: 7,
    });
    id = body.id;
    assert.deepEqual(body, {
      id,
      exten: "1001",
      context: "default",
      enabled: true,
      line: null,
      conference: null,
    });
    const stored = await findExtension(ctx.services.store, "1001", "default");
    assert.deepEqual(stored, {
      id,
      exten: "1001",
      context: "default",
      enabled: true,
      line_id: null,
    });
  });

  await t.step("patterns, *, # and + are extensions too", async () => {
    for (const exten of ["_1XXX.", "_[2-5]NZ!", "*21", "#99", "+33123"]) {
      const response = await api.post("/extensions", { exten, context: "to-extern" });
      assert.equal(response.status, 201, exten);
      await response.body?.cancel();
    }
  });

  await t.step("GET lists with filters and search", async () => {
    assert.equal((await api.list("/extensions")).total, 6);
    assert.deepEqual((await api.list("/extensions?context=default", "exten")).values, ["1001"]);
    assert.deepEqual((await api.list("/extensions?search=xxx", "exten")).values, ["_1XXX."]);
  });

  await t.step("GET by id", async () => {
    const response = await api.get(`/extensions/${id}`);
    assert.equal(response.status, 200);
    assert.equal((await response.json()).exten, "1001");
  });

  await t.step("PUT changes only what it sends", async () => {
    const response = await api.put(`/extensions/${id}`, { exten: "1002", enabled: false });
    assert.equal(response.status, 204);
    const body = await (await api.get(`/extensions/${id}`)).json();
    assert.deepEqual(body, {
      id,
      exten: "1002",
      context: "default",
      enabled: false,
      line: null,
      conference: null,
    });
    assert.equal(await findExtension(ctx.services.store, "1001", "default"), null);
  });

  await t.step("an extension off a line may move anywhere", async () => {
    assert.equal((await api.put(`/extensions/${id}`, { context: "from-extern" })).status, 204);
    assert.equal((await (await api.get(`/extensions/${id}`)).json()).context, "from-extern");
  });

  await t.step("DELETE answers 204, then the extension is gone", async () => {
    await api.expectDeleted("/extensions", "Extension", { id });
  });
});

Deno.test("/1.1/extensions: every error", async (t) => {
  const { api } = await setupConfd();
  const created = await (await api.post("/extensions", { exten: "1001", context: "default" }))
    .json();

  await t.step("unknown ids: 404", async () => {
    await api.expectUnknownId("/extensions", "Extension", { id: 999 });
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    await api.expectInvalid("POST", "/extensions", [
      [{ context: "default" }, /^Input Error - field 'exten': /],
      [{ exten: "", context: "default" }, /field 'exten': /],
      [{ exten: "10a1", context: "default" }, /field 'exten': Must be digits/],
      [{ exten: "1".repeat(41), context: "default" }, /field 'exten': Longer than maximum/],
      [{ exten: "XXX", context: "default" }, /field 'exten'/],
      [{ exten: 1001, context: "default" }, /field 'exten'/],
      [{ exten: "1002" }, /^Input Error - field 'context': /],
      [{ exten: "1002", context: "default", enabled: "true" }, /field 'enabled'/],
      [
        { exten: "1002", context: "nowhere" },
        /^Input Error - field 'context': Context was not found \('name': 'nowhere'\)$/,
      ],
    ]);
    await expectConfdError(
      await api.put(`/extensions/${created.id}`, { context: "nowhere" }),
      400,
      /field 'context': Context was not found/,
    );
    await expectConfdError(
      await api.put(`/extensions/${created.id}`, { exten: "1a" }),
      400,
      /field 'exten'/,
    );
  });

  await t.step("a taken (exten, context): 400 Resource Error, exten first", async () => {
    const message =
      /^Resource Error - Extension already exists \('exten': '1001', 'context': 'default'\)$/;
    const other = { exten: "1001", context: "to-extern" };
    await api.expectTaken("/extensions", { exten: "1001", context: "default" }, other, message);
  });

  let lineId = 0;
  await t.step("an extension on a user's line keeps to its context's user ranges", async () => {
    lineId = await putOnUserLine(api, created.id);
    assert.deepEqual((await (await api.get(`/extensions/${created.id}`)).json()).line, {
      id: lineId,
    });
    assert.equal((await api.put(`/extensions/${created.id}`, { exten: "1999" })).status, 204);
    assert.equal((await api.put(`/extensions/${created.id}`, { enabled: false })).status, 204);
    await expectConfdError(
      await api.put(`/extensions/${created.id}`, { exten: "2000" }),
      400,
      /^Resource Error - Extension is outside the user ranges of its context \('exten': '2000', 'context': 'default'\)$/,
    );
    await expectConfdError(
      await api.put(`/extensions/${created.id}`, { context: "from-extern" }),
      400,
      /^Resource Error - Extension is outside the user ranges/,
    );
    const body = await (await api.get(`/extensions/${created.id}`)).json();
    assert.deepEqual(body, {
      id: created.id,
      exten: "1999",
      context: "default",
      enabled: false,
      line: { id: lineId },
      conference: null,
    });
  });

  await t.step("an extension on a line cannot be deleted", async () => {
    await expectConfdError(
      await api.delete(`/extensions/${created.id}`),
      400,
      /^Resource Error - Extension is associated with a Line$/,
    );
    assert.equal((await api.get(`/extensions/${created.id}`)).status, 200);
  });
});

Deno.test("/1.1/extensions: ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  await (await admin.post("/extensions", { exten: "1001", context: "default" })).body?.cancel();
  await expectAcls(t, ctx, [
    ["GET", "/extensions", "confd.extensions.read"],
    ["POST", "/extensions", "confd.extensions.create", { exten: "1002", context: "default" }],
    ["GET", "/extensions/1", "confd.extensions.1.read"],
    ["PUT", "/extensions/1", "confd.extensions.1.update", {}],
    ["DELETE", "/extensions/1", "confd.extensions.1.delete"],
  ]);
});

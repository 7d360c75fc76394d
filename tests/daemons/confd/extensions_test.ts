import assert from "node:assert/strict";
import { findExtension } from "../../../lib/store/extensions.ts";
import { confd, expectConfdError, setup } from "../../helpers.ts";

/** Puts the extension on a new line of a new user, through the API; answers the line's id. */
async function putOnUserLine(api: Awaited<ReturnType<typeof confd>>, id: number): Promise<number> {
  const line = await (await api.post("/lines", { context: "default" })).json();
  const user = await (await api.post("/users", { firstname: "Owner" })).json();
  assert.equal((await api.put(`/users/${user.id}/lines/${line.id}`)).status, 204);
  assert.equal((await api.put(`/lines/${line.id}/extensions/${id}`)).status, 204);
  return line.id;
}

Deno.test("/1.1/extensions: create, list, get, update, delete", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  let id = 0;

  await t.step("POST answers 201 with Location and the extension, enabled by default", async () => {
    const response = await api.post("/extensions", {
      exten: "1001",
      context: "default",
      line_id: 7,
    });
    assert.equal(response.status, 201);
    const body = await response.json();
    id = body.id;
    assert.equal(response.headers.get("location"), `/1.1/extensions/${id}`);
    assert.deepEqual(body, { id, exten: "1001", context: "default", enabled: true, line: null });
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
    const all = await (await api.get("/extensions")).json();
    assert.equal(all.total, 6);
    const filtered = await (await api.get("/extensions?context=default")).json();
    assert.deepEqual(filtered.items.map((e: { exten: string }) => e.exten), ["1001"]);
    const found = await (await api.get("/extensions?search=xxx")).json();
    assert.deepEqual(found.items.map((e: { exten: string }) => e.exten), ["_1XXX."]);
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
    assert.deepEqual(body, { id, exten: "1002", context: "default", enabled: false, line: null });
    assert.equal(await findExtension(ctx.services.store, "1001", "default"), null);
  });

  await t.step("an extension off a line may move anywhere", async () => {
    assert.equal((await api.put(`/extensions/${id}`, { context: "from-extern" })).status, 204);
    assert.equal((await (await api.get(`/extensions/${id}`)).json()).context, "from-extern");
  });

  await t.step("DELETE answers 204, then the extension is gone", async () => {
    assert.equal((await api.delete(`/extensions/${id}`)).status, 204);
    await expectConfdError(
      await api.get(`/extensions/${id}`),
      404,
      new RegExp(`^Resource Not Found - Extension was not found \\('id': ${id}\\)$`),
    );
  });
});

Deno.test("/1.1/extensions: every error", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  const created = await (await api.post("/extensions", { exten: "1001", context: "default" }))
    .json();

  await t.step("unknown ids: 404", async () => {
    await expectConfdError(await api.get("/extensions/999"), 404, /\('id': 999\)/);
    await expectConfdError(await api.put("/extensions/999", {}), 404, /not found/);
    await expectConfdError(await api.delete("/extensions/999"), 404, /not found/);
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    const cases: [unknown, RegExp][] = [
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
    ];
    for (const [body, pattern] of cases) {
      await expectConfdError(await api.post("/extensions", body), 400, pattern);
    }
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
    await expectConfdError(
      await api.post("/extensions", { exten: "1001", context: "default" }),
      400,
      message,
    );
    const other = await (await api.post("/extensions", { exten: "1001", context: "to-extern" }))
      .json();
    await expectConfdError(
      await api.put(`/extensions/${other.id}`, { context: "default" }),
      400,
      message,
    );
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
  const ctx = await setup();
  const admin = await confd(ctx);
  await (await admin.post("/extensions", { exten: "1001", context: "default" })).body?.cancel();
  const narrow = await confd(ctx, ["confd.contexts.#"]);
  const routes: [string, string, string, unknown?][] = [
    ["GET", "/extensions", "confd.extensions.read"],
    ["POST", "/extensions", "confd.extensions.create", { exten: "1002", context: "default" }],
    ["GET", "/extensions/1", "confd.extensions.1.read"],
    ["PUT", "/extensions/1", "confd.extensions.1.update", {}],
    ["DELETE", "/extensions/1", "confd.extensions.1.delete"],
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

import assert from "node:assert/strict";
import {
  bearer,
  ctiUser,
  expectAcls,
  expectConfdError,
  login,
  setup,
  setupConfd,
  webServiceUser,
} from "../../helpers.ts";

Deno.test("the default contexts exist in a new store", async () => {
  const { api } = await setupConfd();
  const response = await api.get("/contexts");
  assert.equal(response.status, 200);
  const body = await response.json();
  assert.equal(body.total, 3);
  assert.deepEqual(body.items.map((c: { name: string }) => c.name), [
    "default",
    "from-extern",
    "to-extern",
  ]);
  assert.deepEqual(body.items[0].user_ranges, [{ start: "1000", end: "1999" }]);
  assert.deepEqual(body.items[0].queue_ranges, [{ start: "3000", end: "3099" }]);
  assert.deepEqual(body.items.map((c: { type: string }) => c.type), [
    "internal",
    "incall",
    "outcall",
  ]);
});

Deno.test("/1.1/contexts: create, get, update, delete", async (t) => {
  const { api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and the record with its defaults", async () => {
    const body = await api.create("/contexts", {
      name: "sales",
      display_name: "Sales floor",
      user_ranges: [{ start: "2000", end: "2099" }],
      ignored_field: "dropped",
    });
    id = body.id;
    assert.deepEqual(body, {
      id,
      name: "sales",
      display_name: "Sales floor",
      type: "internal",
      description: null,
      enabled: true,
      user_ranges: [{ start: "2000", end: "2099" }],
      queue_ranges: [],
      conference_room_ranges: [],
    });
  });

  await t.step("GET by id", async () => {
    const response = await api.get(`/contexts/${id}`);
    assert.equal(response.status, 200);
    assert.equal((await response.json()).name, "sales");
  });

  await t.step("PUT changes only what it sends, answers 204", async () => {
    const response = await api.put(`/contexts/${id}`, {
      description: "second floor",
      enabled: false,
    });
    assert.equal(response.status, 204);
    assert.equal(await response.text(), "");
    const body = await (await api.get(`/contexts/${id}`)).json();
    assert.equal(body.description, "second floor");
    assert.equal(body.enabled, false);
    assert.equal(body.display_name, "Sales floor");
  });

  await t.step("DELETE answers 204, then the context is gone", async () => {
    await api.expectDeleted("/contexts", "Context", { id });
  });
});

Deno.test("/1.1/contexts: every error", async (t) => {
  const { api } = await setupConfd();

  await t.step("unknown or malformed ids: 404", async () => {
    await api.expectUnknownId("/contexts", "Context", { id: 999 });
    await api.expectUnknownId("/contexts", "Context", { id: "abc" });
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    await api.expectInvalid("POST", "/contexts", [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than minimum length 1/],
      [{ name: "a".repeat(40) }, /field 'name': Longer than maximum length 39/],
      [{ name: "with space" }, /field 'name': /],
      [{ name: 7 }, /field 'name': /],
      [{ name: "x", type: "weird" }, /field 'type': /],
      [{ name: "x", enabled: "true" }, /field 'enabled': /],
      [{ name: "x", enabled: 1 }, /field 'enabled': /],
      [{ name: "x", user_ranges: [{ start: "10a", end: "20" }] }, /field 'user_ranges.0.start'/],
      [{ name: "x", user_ranges: [{ start: "2000", end: "1000" }] }, /field 'user_ranges.0'/],
      [{ name: "x", display_name: "d".repeat(129) }, /field 'display_name'/],
    ]);
    await expectConfdError(await api.put("/contexts/1", { enabled: "no" }), 400, /field 'enabled'/);
  });

  await t.step("bodies that are not a JSON object: 400", async () => {
    await api.expectJsonObjectBody("POST", "/contexts");
  });

  await t.step("a taken name: 400 Resource Error", async () => {
    await expectConfdError(
      await api.post("/contexts", { name: "default" }),
      400,
      /^Resource Error - Context already exists \('name': 'default'\)$/,
    );
  });

  await t.step("the name cannot change", async () => {
    await expectConfdError(await api.put("/contexts/1", { name: "other" }), 400, /field 'name'/);
    assert.equal((await api.put("/contexts/1", { name: "default" })).status, 204);
  });

  await t.step("bodies over 1 MiB: 413 in the daemon's form", async () => {
    const response = await api.post("/contexts", {
      name: "x",
      description: "d".repeat(1024 * 1024),
    });
    await expectConfdError(response, 413, /^PayloadTooLarge - /);
  });
});

Deno.test("/1.1/contexts: tokens and ACLs", async (t) => {
  const ctx = await setup();
  await ctiUser(ctx, "alice");
  const ctiToken = await login(ctx, "login", "alice");
  await expectAcls(t, ctx, [
    ["GET", "/contexts", "confd.contexts.read"],
    ["POST", "/contexts", "confd.contexts.create", { name: "sales" }],
    ["GET", "/contexts/1", "confd.contexts.1.read"],
    ["PUT", "/contexts/1", "confd.contexts.1.update", {}],
    ["DELETE", "/contexts/1", "confd.contexts.1.delete"],
  ], ["confd.users.#"]);

  await t.step("no token or a bad token: 401", async () => {
    await expectConfdError(await ctx.app.request("/1.1/contexts"), 401, /^Unauthorized - /);
    await expectConfdError(
      await ctx.app.request("/1.1/contexts", { headers: bearer("not.a.token") }),
      401,
      /^Unauthorized - /,
    );
  });

  await t.step("a CTI user's token is refused", async () => {
    const response = await ctx.app.request("/1.1/contexts", { headers: bearer(ctiToken) });
    assert.equal(response.status, 403);
    await response.body?.cancel();
  });

  await t.step("X-Auth-Token is accepted", async () => {
    const admin = await webServiceUser(ctx, ["#"]);
    const token = await login(ctx, "webservice", admin.login);
    const response = await ctx.app.request("/1.1/contexts", { headers: { "X-Auth-Token": token } });
    assert.equal(response.status, 200);
    await response.body?.cancel();
  });

  await t.step("an unknown /1.1 route: 404 in the daemon's form", async () => {
    await expectConfdError(await ctx.app.request("/1.1/nothing"), 404, /^Resource Not Found - /);
  });
});

Deno.test("/1.1 lists: search, order, direction, limit, offset, skip, filters", async (t) => {
  const { api } = await setupConfd();
  for (const [name, display] of [["zeta", "Élan"], ["alpha", "elan vital"], ["mid", "Other"]]) {
    assert.equal(
      (await api.post("/contexts", { name, display_name: display, type: "others" })).status,
      201,
    );
  }
  const names = (query: string) => api.list(`/contexts?${query}`);

  await t.step("search is case- and accent-insensitive over text fields", async () => {
    assert.deepEqual(await names("search=ELAN"), { total: 2, values: ["zeta", "alpha"] });
    assert.deepEqual(await names("search=xtern"), {
      total: 2,
      values: ["from-extern", "to-extern"],
    });
  });
  await t.step("order and direction", async () => {
    assert.deepEqual((await names("type=others&order=name")).values, ["alpha", "mid", "zeta"]);
    assert.deepEqual((await names("type=others&order=name&direction=desc")).values, [
      "zeta",
      "mid",
      "alpha",
    ]);
  });
  await t.step("exact-match filters", async () => {
    assert.deepEqual(await names("type=incall"), { total: 1, values: ["from-extern"] });
    assert.deepEqual(await names("name=mid"), { total: 1, values: ["mid"] });
    assert.deepEqual(await names("name=mi"), { total: 0, values: [] });
  });
  await t.step("limit and offset page after counting", async () => {
    assert.deepEqual(await names("order=name&limit=2"), { total: 6, values: ["alpha", "default"] });
    assert.deepEqual(await names("order=name&limit=2&offset=2"), {
      total: 6,
      values: ["from-extern", "mid"],
    });
  });
  await t.step("skip is a deprecated alias of offset", async () => {
    const response = await api.get("/contexts?order=name&limit=1&skip=1");
    assert.equal(response.headers.get("deprecation"), "true");
    assert.deepEqual((await response.json()).items.map((c: { name: string }) => c.name), [
      "default",
    ]);
  });
  await t.step("bad parameters: 400", async () => {
    await expectConfdError(await api.get("/contexts?order=nope"), 400, /field 'order'/);
    await expectConfdError(await api.get("/contexts?direction=up"), 400, /field 'direction'/);
    await expectConfdError(await api.get("/contexts?limit=0"), 400, /field 'limit'/);
    await expectConfdError(await api.get("/contexts?limit=x"), 400, /field 'limit'/);
    await expectConfdError(await api.get("/contexts?offset=-1"), 400, /field 'offset'/);
  });
});

Deno.test("a context still used by an extension, line, voicemail or queue cannot be deleted", async () => {
  const { api } = await setupConfd();
  const context = await (await api.post("/contexts", {
    name: "office",
    user_ranges: [{ start: "100", end: "199" }],
    queue_ranges: [{ start: "300", end: "399" }],
  })).json();
  const uses: [string, Record<string, unknown>, string][] = [
    ["/extensions", { exten: "100", context: "office" }, "Extension"],
    ["/lines", { context: "office" }, "Line"],
    ["/voicemails", { name: "VM", number: "100", context: "office" }, "Voicemail"],
    ["/queues", { name: "office-queue", context: "office" }, "Queue"],
  ];
  for (const [path, body, label] of uses) {
    const { id } = await api.create(path, body);
    await expectConfdError(
      await api.delete(`/contexts/${context.id}`),
      400,
      new RegExp(`^Resource Error - Context is associated with a ${label}$`),
    );
    assert.equal((await api.delete(`${path}/${id}`)).status, 204);
  }
  assert.equal((await api.delete(`/contexts/${context.id}`)).status, 204);
});

import assert from "node:assert/strict";
import { type AclRoute, expectAcls, expectConfdError, setupConfd } from "../../helpers.ts";

Deno.test("/1.1/endpoints/sip: create, get, update, delete", async (t) => {
  const { api } = await setupConfd();

  await t.step("POST generates username and secret and takes the defaults", async () => {
    const body = await api.create("/endpoints/sip", { ignored: 1, line_id: 7 });
    assert.match(body.username, /^[a-z0-9]{8}$/);
    assert.match(body.secret, /^[a-z0-9]{16}$/);
    assert.deepEqual(body, {
      id: body.id,
      username: body.username,
      secret: body.secret,
      type: "friend",
      host: "dynamic",
      options: [],
      line: null,
    });
  });

  await t.step("POST with every field; any unlisted option is accepted (16.01)", async () => {
    const options = [["allow", "ulaw,alaw"], ["disallow", "all"], ["my-own", "a"], ["my-own", "b"]];
    const body = await api.create("/endpoints/sip", {
      username: "alice.sip",
      secret: "s3cret!",
      type: "peer",
      host: "10.0.0.2",
      options,
    });
    assert.deepEqual(body, {
      id: 2,
      username: "alice.sip",
      secret: "s3cret!",
      type: "peer",
      host: "10.0.0.2",
      options,
      line: null,
    });
  });

  await t.step("GET by id and lists with search, filters and order", async () => {
    const one = await api.get("/endpoints/sip/2");
    assert.equal(one.status, 200);
    // allow stays one option, not split (16.05)
    assert.deepEqual((await one.json()).options[0], ["allow", "ulaw,alaw"]);
    assert.deepEqual((await api.list("/endpoints/sip?search=ALICE", "id")).values, [2]);
    assert.equal((await api.list("/endpoints/sip?type=peer")).total, 1);
    const ordered = await api.list("/endpoints/sip?order=id&direction=desc", "id");
    assert.deepEqual(ordered.values, [2, 1]);
  });

  await t.step("PUT changes what it sends; options are replaced whole", async () => {
    const response = await api.put("/endpoints/sip/2", {
      host: "dynamic",
      options: [["nat", "force_rport"]],
      line: { id: 3 },
    });
    assert.equal(response.status, 204);
    const body = await (await api.get("/endpoints/sip/2")).json();
    assert.equal(body.host, "dynamic");
    assert.equal(body.type, "peer");
    assert.deepEqual(body.options, [["nat", "force_rport"]]);
    assert.equal(body.line, null);
  });

  await t.step("DELETE answers 204, then 404", async () => {
    await api.expectDeleted("/endpoints/sip", "SIPEndpoint", { id: 1 });
  });
});

Deno.test("/1.1/endpoints/sip: every error", async (t) => {
  const { api } = await setupConfd();
  assert.equal((await api.post("/endpoints/sip", { username: "taken" })).status, 201);

  await t.step("unknown ids: 404", async () => {
    await api.expectUnknownId("/endpoints/sip", "SIPEndpoint", { id: 99 });
    await api.expectUnknownId("/endpoints/sip", "SIPEndpoint", { id: "x" });
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{ username: "" }, /field 'username'/],
      [{ username: "with space" }, /field 'username'/],
      [{ username: "u".repeat(41) }, /field 'username'/],
      [{ secret: "" }, /field 'secret'/],
      [{ secret: "a b" }, /field 'secret'/],
      [{ type: "other" }, /field 'type'/],
      [{ host: "" }, /field 'host'/],
      [{ options: "allow=ulaw" }, /field 'options'/],
      [{ options: [["allow"]] }, /field 'options.0/],
      [{ options: [["allow", 1]] }, /field 'options.0.1'/],
      [{ options: [["", "x"]] }, /field 'options.0.0'/],
    ];
    await api.expectInvalid("POST", "/endpoints/sip", cases);
    await api.expectInvalid("PUT", "/endpoints/sip/1", cases);
  });

  await t.step("a listed parameter given twice: 400 naming it", async () => {
    const options = [["allow", "ulaw"], ["nat", "no"], ["allow", "alaw"]];
    await expectConfdError(
      await api.post("/endpoints/sip", { options }),
      400,
      /^Input Error - field 'options': 'allow' may appear only once/,
    );
    await expectConfdError(await api.put("/endpoints/sip/1", { options }), 400, /'allow'/);
  });

  await t.step("a taken username: 400 Resource Error", async () => {
    await api.expectTaken(
      "/endpoints/sip",
      { username: "taken" },
      { username: "other" },
      /^Resource Error - SIPEndpoint already exists \('username': 'taken'\)$/,
    );
    assert.equal((await api.put("/endpoints/sip/1", { username: "taken" })).status, 204);
  });
});

Deno.test("/1.1/endpoints/sccp and /1.1/endpoints/custom", async (t) => {
  const { api } = await setupConfd();

  await t.step("SCCP: create with options, get, update, list, delete", async () => {
    const created = await api.create("/endpoints/sccp", { options: [["cid_name", "Alice"]] });
    assert.deepEqual(created, {
      id: 1,
      options: [["cid_name", "Alice"]],
      line: null,
    });
    assert.equal((await api.post("/endpoints/sccp", {})).status, 201);
    assert.equal((await api.put("/endpoints/sccp/2", { options: [["a", "b"]] })).status, 204);
    assert.deepEqual((await (await api.get("/endpoints/sccp/2")).json()).options, [["a", "b"]]);
    assert.equal((await api.list("/endpoints/sccp")).total, 2);
    await expectConfdError(await api.post("/endpoints/sccp", { options: [1] }), 400, /options/);
    assert.equal((await api.delete("/endpoints/sccp/2")).status, 204);
    await expectConfdError(await api.get("/endpoints/sccp/2"), 404, /SCCPEndpoint was not found/);
  });

  await t.step("custom: create, get, update, list, delete", async () => {
    const created = await api.post("/endpoints/custom", { interface: "dahdi/i1/1234" });
    assert.equal(created.status, 201);
    assert.deepEqual(await created.json(), {
      id: 1,
      interface: "dahdi/i1/1234",
      enabled: true,
      line: null,
    });
    assert.equal((await api.put("/endpoints/custom/1", { enabled: false })).status, 204);
    const body = await (await api.get("/endpoints/custom/1")).json();
    assert.equal(body.enabled, false);
    assert.equal(body.interface, "dahdi/i1/1234");
    assert.equal((await api.list("/endpoints/custom?search=DAHDI")).total, 1);
    assert.equal((await api.delete("/endpoints/custom/1")).status, 204);
    await expectConfdError(
      await api.get("/endpoints/custom/1"),
      404,
      /CustomEndpoint was not found/,
    );
  });

  await t.step("custom: interface required, valid and unique", async () => {
    await expectConfdError(await api.post("/endpoints/custom", {}), 400, /field 'interface'/);
    await expectConfdError(
      await api.post("/endpoints/custom", { interface: "a b" }),
      400,
      /field 'interface'/,
    );
    await expectConfdError(
      await api.post("/endpoints/custom", { interface: "x", enabled: "yes" }),
      400,
      /field 'enabled'/,
    );
    await api.create("/endpoints/custom", { interface: "local/100" });
    await api.expectTaken(
      "/endpoints/custom",
      { interface: "local/100" },
      { interface: "local/200" },
      /^Resource Error - CustomEndpoint already exists \('interface': 'local\/100'\)$/,
    );
  });
});

Deno.test("/1.1/endpoints: an endpoint on a line cannot be deleted", async () => {
  const { api } = await setupConfd();
  const line = await (await api.post("/lines", { context: "default" })).json();
  for (
    const [type, body, label] of [
      ["sip", {}, "SIPEndpoint"],
      ["sccp", {}, "SCCPEndpoint"],
      ["custom", { interface: "local/1" }, "CustomEndpoint"],
    ] as const
  ) {
    const endpoint = await (await api.post(`/endpoints/${type}`, body)).json();
    assert.equal((await api.put(`/lines/${line.id}/endpoints/${type}/${endpoint.id}`)).status, 204);
    assert.deepEqual((await (await api.get(`/endpoints/${type}/${endpoint.id}`)).json()).line, {
      id: line.id,
    });
    await expectConfdError(
      await api.delete(`/endpoints/${type}/${endpoint.id}`),
      400,
      new RegExp(`^Resource Error - ${label} is associated with a Line$`),
    );
    assert.equal((await api.get(`/endpoints/${type}/${endpoint.id}`)).status, 200);
    assert.equal(
      (await api.delete(`/lines/${line.id}/endpoints/${type}/${endpoint.id}`)).status,
      204,
    );
    assert.equal((await api.delete(`/endpoints/${type}/${endpoint.id}`)).status, 204);
  }
});

Deno.test("/1.1/endpoints: tokens and ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  for (const [type, body] of [["sip", {}], ["sccp", {}], ["custom", { interface: "x/1" }]]) {
    assert.equal((await admin.post(`/endpoints/${type}`, body)).status, 201);
  }
  const routes = ["sip", "sccp", "custom"].flatMap((type): AclRoute[] => [
    ["GET", `/endpoints/${type}`, `confd.endpoints.${type}.read`],
    [
      "POST",
      `/endpoints/${type}`,
      `confd.endpoints.${type}.create`,
      type === "custom" ? { interface: "y/2" } : {},
    ],
    ["GET", `/endpoints/${type}/1`, `confd.endpoints.${type}.1.read`],
    ["PUT", `/endpoints/${type}/1`, `confd.endpoints.${type}.1.update`, {}],
    ["GET", `/endpoints/${type}/1/lines`, `confd.endpoints.${type}.1.lines.read`],
    ["DELETE", `/endpoints/${type}/1`, `confd.endpoints.${type}.1.delete`],
  ]);
  await expectAcls(t, ctx, routes, ["confd.lines.#"]);
});

import assert from "node:assert/strict";
import {
  bearer,
  expectAcls,
  expectConfdError,
  postJson,
  setup,
  setupConfd,
  type TestContext,
} from "../../helpers.ts";

const webserviceLogin = (ctx: TestContext, login: string, password: string) =>
  postJson(ctx, "/svc/api/2.0/auth/webservice", { login, password });

Deno.test("/1.1/webservice_users: create, log in, update, delete", async (t) => {
  const { ctx, api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location, no password in the view", async () => {
    const body = await api.create("/webservice_users", {
      login: "crm",
      password: "crm-secret",
      acls: ["svc.rest.dial.#", "confd.agents.read"],
    });
    id = body.id;
    assert.deepEqual(body, {
      id,
      login: "crm",
      name: "crm",
      acls: ["svc.rest.dial.#", "confd.agents.read"],
    });
  });

  await t.step("the new user logs in and holds its ACLs", async () => {
    const response = await webserviceLogin(ctx, "crm", "crm-secret");
    assert.equal(response.status, 200);
    const { token } = await response.json();
    const agents = await ctx.app.request("/1.1/agents", { headers: bearer(token) });
    assert.equal(agents.status, 200);
    await agents.body?.cancel();
    const refused = await ctx.app.request("/1.1/queues", { headers: bearer(token) });
    assert.equal(refused.status, 403);
    await refused.body?.cancel();
  });

  await t.step("GET by id and the list", async () => {
    assert.equal((await (await api.get(`/webservice_users/${id}`)).json()).login, "crm");
    assert.deepEqual((await api.list("/webservice_users?search=CRM", "login")).values, ["crm"]);
    const all = await (await api.get("/webservice_users")).json();
    assert.equal(all.total, 2);
    assert.ok(all.items.every((u: object) => !("password_hash" in u) && !("password" in u)));
  });

  await t.step("PUT changes the name, the ACLs and the password", async () => {
    const response = await api.put(`/webservice_users/${id}`, {
      name: "CRM connector",
      acls: [],
      password: "new-secret",
    });
    assert.equal(response.status, 204);
    assert.deepEqual(await (await api.get(`/webservice_users/${id}`)).json(), {
      id,
      login: "crm",
      name: "CRM connector",
      acls: [],
    });
    assert.equal((await webserviceLogin(ctx, "crm", "crm-secret")).status, 401);
    assert.equal((await webserviceLogin(ctx, "crm", "new-secret")).status, 200);
  });

  await t.step("DELETE answers 204; the user can no longer log in", async () => {
    await api.expectDeleted("/webservice_users", "WebServiceUser", { id });
    assert.equal((await webserviceLogin(ctx, "crm", "new-secret")).status, 401);
  });
});

Deno.test("/1.1/webservice_users: every error", async (t) => {
  const { api } = await setupConfd();
  assert.equal((await api.post("/webservice_users", { login: "crm", password: "pw" })).status, 201);

  await t.step("unknown or malformed ids: 404", async () => {
    await api.expectUnknownId("/webservice_users", "WebServiceUser", { id: 99 });
    await api.expectUnknownId("/webservice_users", "WebServiceUser", { id: "x" });
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    await api.expectInvalid("POST", "/webservice_users", [
      [{ password: "pw" }, /^Input Error - field 'login': /],
      [{ login: "a b", password: "pw" }, /field 'login': Must be letters/],
      [{ login: "l".repeat(65), password: "pw" }, /field 'login': Longer than/],
      [{ login: "x" }, /field 'password'/],
      [{ login: "x", password: "" }, /field 'password': Shorter than/],
      [{ login: "x", password: "pw", acls: "#" }, /field 'acls'/],
      [{ login: "x", password: "pw", acls: ["a b"] }, /field 'acls.0'/],
      [{ login: "x", password: "pw", acls: [""] }, /field 'acls.0'/],
      [{ login: "x", password: "pw", name: "" }, /field 'name'/],
    ]);
    await expectConfdError(await api.put("/webservice_users/2", { acls: [1] }), 400, /'acls.0'/);
  });

  await t.step("a taken login: 400 Resource Error", async () => {
    await api.expectTaken(
      "/webservice_users",
      { login: "crm", password: "pw" },
      { login: "o", password: "p" },
      /^Resource Error - WebServiceUser already exists \('login': 'crm'\)$/,
    );
  });
});

Deno.test("/1.1/webservice_users: ACLs", async (t) => {
  const ctx = await setup();
  await expectAcls(t, ctx, [
    ["GET", "/webservice_users", "confd.webservice_users.read"],
    ["POST", "/webservice_users", "confd.webservice_users.create", { login: "x", password: "p" }],
    ["GET", "/webservice_users/1", "confd.webservice_users.1.read"],
    ["PUT", "/webservice_users/1", "confd.webservice_users.1.update", {}],
    ["DELETE", "/webservice_users/1", "confd.webservice_users.1.delete"],
  ]);
});

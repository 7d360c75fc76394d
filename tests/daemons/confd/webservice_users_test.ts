import assert from "node:assert/strict";
import {
  bearer,
  confd,
  expectConfdError,
  postJson,
  setup,
  type TestContext,
} from "../../helpers.ts";

const webserviceLogin = (ctx: TestContext, login: string, password: string) =>
  postJson(ctx, "/svc/api/2.0/auth/webservice", { login, password });

Deno.test("/1.1/webservice_users: create, log in, update, delete", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  let id = 0;

  await t.step("POST answers 201 with Location, no password in the view", async () => {
    const response = await api.post("/webservice_users", {
      login: "crm",
      password: "crm-secret",
      acls: ["svc.rest.dial.#", "confd.agents.read"],
    });
    assert.equal(response.status, 201);
    const body = await response.json();
    id = body.id;
    assert.equal(response.headers.get("location"), `/1.1/webservice_users/${id}`);
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
    const list = await (await api.get("/webservice_users?search=CRM")).json();
    assert.deepEqual(list.items.map((u: { login: string }) => u.login), ["crm"]);
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
    assert.equal((await api.delete(`/webservice_users/${id}`)).status, 204);
    await expectConfdError(
      await api.get(`/webservice_users/${id}`),
      404,
      new RegExp(`^Resource Not Found - WebServiceUser was not found \\('id': ${id}\\)$`),
    );
    assert.equal((await webserviceLogin(ctx, "crm", "new-secret")).status, 401);
  });
});

Deno.test("/1.1/webservice_users: every error", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  assert.equal((await api.post("/webservice_users", { login: "crm", password: "pw" })).status, 201);

  await t.step("unknown or malformed ids: 404", async () => {
    await expectConfdError(await api.get("/webservice_users/99"), 404, /WebServiceUser was not/);
    await expectConfdError(await api.get("/webservice_users/x"), 404, /\('id': 'x'\)/);
    await expectConfdError(await api.put("/webservice_users/99", {}), 404, /not found/);
    await expectConfdError(await api.delete("/webservice_users/99"), 404, /not found/);
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{ password: "pw" }, /^Input Error - field 'login': /],
      [{ login: "a b", password: "pw" }, /field 'login': Must be letters/],
      [{ login: "l".repeat(65), password: "pw" }, /field 'login': Longer than/],
      [{ login: "x" }, /field 'password'/],
      [{ login: "x", password: "" }, /field 'password': Shorter than/],
      [{ login: "x", password: "pw", acls: "#" }, /field 'acls'/],
      [{ login: "x", password: "pw", acls: ["a b"] }, /field 'acls.0'/],
      [{ login: "x", password: "pw", acls: [""] }, /field 'acls.0'/],
      [{ login: "x", password: "pw", name: "" }, /field 'name'/],
    ];
    for (const [body, pattern] of cases) {
      await expectConfdError(await api.post("/webservice_users", body), 400, pattern);
    }
    await expectConfdError(await api.put("/webservice_users/2", { acls: [1] }), 400, /'acls.0'/);
  });

  await t.step("a taken login: 400 Resource Error", async () => {
    await expectConfdError(
      await api.post("/webservice_users", { login: "crm", password: "pw" }),
      400,
      /^Resource Error - WebServiceUser already exists \('login': 'crm'\)$/,
    );
    const other = await (await api.post("/webservice_users", { login: "o", password: "p" })).json();
    await expectConfdError(
      await api.put(`/webservice_users/${other.id}`, { login: "crm" }),
      400,
      /already exists \('login': 'crm'\)/,
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

/** Each route refuses a token without its ACL (403 naming it) and accepts one with only it. */
async function expectAcls(
  t: Deno.TestContext,
  ctx: TestContext,
  routes: [string, string, string, unknown?][],
) {
  const narrow = await confd(ctx, ["confd.nothing.read"]);
  for (const [method, path, acl, body] of routes) {
    await t.step(`${method} ${path} needs ${acl}`, async () => {
      const refused = await narrow.call(method, path, body);
      assert.equal(refused.status, 403);
      assert.deepEqual(await refused.json(), [`Forbidden - missing ACL ${acl}`]);
      const allowed = await (await confd(ctx, [acl])).call(method, path, body);
      assert.ok(allowed.status < 300, `${method} ${path}: ${allowed.status}`);
      await allowed.body?.cancel();
    });
  }
}

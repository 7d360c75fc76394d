import assert from "node:assert/strict";
import { prepareStore } from "../../lib/bootstrap.ts";
import { DEMO_USERS, DEMO_WEBSERVICE_USER } from "../../lib/demo.ts";
import { bearer, postJson, setup } from "../helpers.ts";

Deno.test("the demo data set", async (t) => {
  const ctx = await setup({ SVC_DEMO: "true" });
  const wsLogin = await postJson(ctx, "/svc/api/2.0/auth/webservice", {
    login: DEMO_WEBSERVICE_USER.login,
    password: DEMO_WEBSERVICE_USER.password,
  });
  assert.equal(wsLogin.status, 200);
  const headers = bearer((await wsLogin.json()).token);
  const get = async (path: string) => {
    const response = await ctx.app.request(`/1.1${path}`, { headers });
    assert.equal(response.status, 200, path);
    return await response.json();
  };

  await t.step(
    "alice, bob and sam log in and have SIP lines with 1001, 1002 and 1004",
    async () => {
      for (const user of DEMO_USERS) {
        const login = await postJson(ctx, "/svc/api/2.0/auth/login", {
          login: user.username,
          password: user.password,
        });
        assert.equal(login.status, 200);
        await login.body?.cancel();
      }
      const summary = await get("/users?view=summary&order=firstname");
      assert.deepEqual(
        summary.items.map((u: Record<string, string>) => [u.firstname, u.extension, u.protocol]),
        [["Alice", "1001", "sip"], ["Bob", "1002", "sip"], ["Sam", "1004", "sip"]],
      );
    },
  );

  await t.step(
    "queue sales (3000) with one agent, two call qualifications, a callback list",
    async () => {
      const queues = await get("/queues?name=sales");
      assert.equal(queues.total, 1);
      const sales = queues.items[0];
      assert.equal(sales.number, "3000");
      assert.equal(sales.agents.length, 1);
      const qualifications = await get(`/queues/${sales.id}/call_qualifications`);
      assert.equal(qualifications.total ?? qualifications.length, 2);
      const lists = await get("/callback_lists");
      assert.equal(lists.total, 1);
      assert.equal(lists.items[0].queue_id, sales.id);
    },
  );

  await t.step("rights profiles: alice an admin, sam a supervisor of sales alone", async () => {
    const profiles = await ctx.app.request("/svc/api/2.0/rights/profiles", { headers });
    assert.equal(profiles.status, 200);
    const [sales] = (await get("/queues?name=sales")).items;
    assert.deepEqual(
      (await profiles.json()).map((
        p: Record<string, unknown>,
      ) => [p.username, p.profile, p.queueIds]),
      [["alice", "admin", undefined], ["sam", "supervisor", [sales.id]]],
    );
    assert.equal((await get("/queues?name=support")).total, 1);
  });

  await t.step("a second start adds nothing", async () => {
    const before = (await get("/users")).total;
    await prepareStore(ctx.services);
    assert.equal((await get("/users")).total, before);
    assert.equal((await get("/queues")).total, 2);
  });
});

/**
 * The agent daemon's guard and error handling (decisions §9, §11): every route refuses a missing,
 * unreadable, invalid or expired token and one without the route's ACL with the same 401; an
 * unexpected failure answers 500 in the daemon's form, the store failing 503; an unknown path 404.
 */
import assert from "node:assert/strict";
import { bearer, login, setup, webServiceUser } from "../../helpers.ts";
import { agentdClient, callCenter, expectAgentdError, tokenHolding } from "./fixtures.ts";

const line = { extension: "1001", context: "default" };

/**
 * Every route with the ACL it needs (agent 1 is 8001), in an order in which each succeeds once its
 * ACL is held: `[method, path below /agents, ACL, body]`.
 */
const routes: [method: string, path: string, acl: string, body?: unknown][] = [
  ["GET", "", "agentd.agents.read"],
  ["GET", "/by-id/1", "agentd.agents.by-id.1.read"],
  ["GET", "/by-number/8001", "agentd.agents.by-number.8001.read"],
  ["POST", "/by-id/1/login", "agentd.agents.by-id.1.login.create", line],
  ["POST", "/by-id/1/pause", "agentd.agents.by-id.1.pause.create", { reason: "r" }],
  ["POST", "/by-id/1/unpause", "agentd.agents.by-id.1.unpause.create"],
  ["POST", "/by-id/1/logoff", "agentd.agents.by-id.1.logoff.create"],
  ["POST", "/by-number/8001/login", "agentd.agents.by-number.8001.login.create", line],
  ["POST", "/by-number/8001/pause", "agentd.agents.by-number.8001.pause.create", {}],
  ["POST", "/by-number/8001/unpause", "agentd.agents.by-number.8001.unpause.create"],
  ["POST", "/by-number/8001/logoff", "agentd.agents.by-number.8001.logoff.create"],
  ["GET", "/status", "agentd.status.read"],
  ["POST", "/by-id/1/add", "agentd.agents.by-id.1.add.create", { queue_id: 2 }],
  // the ACL the daemon svc follows checks for remove (its documentation says remove.create)
  ["POST", "/by-id/1/remove", "agentd.agents.by-id.1.delete.create", { queue_id: 2 }],
  ["POST", "/logoff", "agentd.agents.logoff.create"],
  ["POST", "/relog", "agentd.agents.relog.create"],
];

Deno.test("every route: 401 without a valid token holding its ACL, 2xx with one", async (t) => {
  const { t: sim, agent } = await callCenter();
  assert.equal(agent.id, 1);
  assert.equal((await sim.api.create("/queues", { name: "support", number: "3001" })).id, 2);
  const ctx = sim.ctx;
  const other = await setup(); // another service: another signing key
  const foreign = await tokenHolding(other, ["#"]);
  const expiring = await tokenHolding(ctx, ["#"]);
  const refusedHeaders: [string, Record<string, string>][] = [
    ["no token", {}],
    ["Authorization without Bearer", { Authorization: `Basic ${btoa("a:b")}` }],
    ["an empty bearer", { Authorization: "Bearer " }],
    ["a malformed token", bearer("not.a.token")],
    ["a token of another key", bearer(foreign)],
    ["an X-Auth-Token of another key", { "X-Auth-Token": foreign }],
  ];
  for (const [method, path, acl, body] of routes) {
    await t.step(`${method} /agents${path} needs ${acl}`, async () => {
      for (const [why, headers] of refusedHeaders) {
        const response = await agentdClient(ctx, headers).call(method, path, body);
        await expectAgentdError(response, 401, "invalid token or unauthorized").catch((error) => {
          throw new Error(`${why}: ${error.message}`);
        });
      }
      const lacking = [
        await tokenHolding(ctx, []),
        await tokenHolding(ctx, ["agentd.#", `!${acl}`]),
        await tokenHolding(ctx, ["alias.ctiuser"], "cti"),
        await tokenHolding(ctx, [acl.replace(/\.(read|create)$/, ".update")]),
      ];
      for (const token of lacking) {
        const response = await agentdClient(ctx, bearer(token)).call(method, path, body);
        await expectAgentdError(response, 401, "invalid token or unauthorized");
      }
      const allowed = agentdClient(ctx, bearer(await tokenHolding(ctx, [acl])));
      const response = await allowed.call(method, path, body);
      const text = await response.text();
      assert.ok(response.status < 300, `${response.status} ${text}`);
    });
  }
  await t.step("an expired token: 401 on every route", async () => {
    await ctx.clock.advance(ctx.services.config.tokenTtl * 1000);
    for (const [method, path, , body] of routes) {
      const response = await agentdClient(ctx, bearer(expiring)).call(method, path, body);
      await expectAgentdError(response, 401, "invalid token or unauthorized");
    }
  });
});

Deno.test("GET /status (at the root): 401 without a token holding agentd.status.read", async () => {
  const { t } = await callCenter();
  const get = async (headers: Record<string, string>) =>
    await t.ctx.app.request("/status", { headers });
  for (
    const headers of [
      {},
      bearer("not.a.token"),
      bearer(await tokenHolding(t.ctx, ["agentd.agents.#"])),
      bearer(await tokenHolding(t.ctx, ["alias.ctiuser"], "cti")),
      bearer(await tokenHolding(t.ctx, ["agentd.#", "!agentd.status.read"])),
    ]
  ) {
    await expectAgentdError(await get(headers), 401, "invalid token or unauthorized");
  }
  const allowed = await get({ "X-Auth-Token": await tokenHolding(t.ctx, ["agentd.status.read"]) });
  assert.equal(allowed.status, 200);
});

Deno.test("a dot in a path value adds no ACL word", async () => {
  const { t } = await callCenter();
  // filled literally, /by-number/8001.x would need the ACL this token holds
  const token = await tokenHolding(t.ctx, ["agentd.agents.by-number.8001.x.read"]);
  const response = await agentdClient(t.ctx, bearer(token)).get("/by-number/8001.x");
  await expectAgentdError(response, 401, "invalid token or unauthorized");
  // the value's dot is a `_`: a token holding that ACL reaches the route (no such agent)
  const underscored = await tokenHolding(t.ctx, ["agentd.agents.by-number.8001_x.read"]);
  const found = await agentdClient(t.ctx, bearer(underscored)).get("/by-number/8001.x");
  await expectAgentdError(found, 404, "no such agent");
});

Deno.test("a web service user logged in with agentd ACLs; a CTI user without them", async () => {
  const { t, api } = await callCenter();
  const ws = await webServiceUser(t.ctx, ["agentd.agents.read", "agentd.agents.by-number.*.#"]);
  const client = agentdClient(t.ctx, bearer(await login(t.ctx, "webservice", ws.login)));
  assert.equal((await client.status<unknown[]>("")).length, 1);
  await client.command("/by-number/8001/login", line);
  await expectAgentdError(await client.get("/by-id/1"), 401, "invalid token or unauthorized");
  assert.equal((await api.status<{ logged: boolean }>("/by-id/1")).logged, true);

  await t.api.create("/users", { firstname: "Carol", username: "carol", password: "carol-pw" });
  const cti = agentdClient(t.ctx, bearer(await login(t.ctx, "login", "carol")));
  await expectAgentdError(await cti.get(""), 401, "invalid token or unauthorized");
});

Deno.test("an unknown path below /agents: 404 in the daemon's form, no token needed", async () => {
  const { api, t } = await callCenter();
  const anonymous = agentdClient(t.ctx, {});
  for (const [method, path] of [["GET", "/"], ["GET", "/by-id"], ["PUT", "/by-id/1/nothing"]]) {
    const message = `no route for ${method} /agents${path}`;
    await expectAgentdError(await api.call(method!, path!), 404, message);
    await expectAgentdError(await anonymous.call(method!, path!), 404, message);
  }
});

Deno.test("a known path below /agents with another method: 405 with Allow, in the daemon's form", async () => {
  const { api, t } = await callCenter();
  const anonymous = agentdClient(t.ctx, {});
  for (
    const [method, path, allow] of [
      ["DELETE", "/by-id/1", "GET, HEAD"],
      ["GET", "/by-id/1/login", "POST"],
      ["PUT", "/logoff", "POST"],
    ]
  ) {
    for (const client of [api, anonymous]) {
      const response = await client.call(method!, path!);
      assert.equal(response.headers.get("allow"), allow);
      const message = `${method} is not allowed on /agents${path} (allowed: ${allow})`;
      await expectAgentdError(response, 405, message);
    }
  }
});

Deno.test("a platform failure: 500 with the request id, logged, nothing leaked", async () => {
  const { t, api } = await callCenter();
  t.ctx.services.platform.agentPresence = () =>
    Promise.reject(new Error("platform down: secret detail"));
  const response = await api.get("/by-number/8001");
  const requestId = response.headers.get("x-request-id");
  await expectAgentdError(response, 500, `internal error, request id ${requestId}`);
  const logged = t.ctx.logs.map((line) => JSON.parse(line))
    .find((line) => line.msg === "unhandled error");
  assert.equal(logged?.requestId, requestId);
  assert.match(logged?.error, /platform down/);
});

Deno.test("the store failing: 503 Unreachable", async () => {
  const { t, api } = await callCenter();
  t.ctx.services.store.close();
  await expectAgentdError(await api.get(""), 503, "Unreachable");
  await expectAgentdError(await api.post("/by-number/8001/login", line), 503, "Unreachable");
});

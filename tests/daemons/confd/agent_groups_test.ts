/**
 * `/1.1/agentgroups` (docs/supervision.md, "Agent groups"): the groups, their agents (an agent in
 * one group at most), what deleting a group or an agent does, every error and every ACL, and the
 * supervisors' `PUT /svc/api/2.0/supervision/agents/{agentId}/group`.
 */
import assert from "node:assert/strict";
import { groupOfAgent, listAgentGroups } from "../../../lib/agent_groups/store.ts";
import {
  apiCall,
  ctiUser,
  expectAcls,
  expectConfdError,
  expectError,
  expectForbidden,
  expectNotFound,
  login,
  setupConfd,
  webServiceUser,
} from "../../helpers.ts";

async function twoAgents(api: Awaited<ReturnType<typeof setupConfd>>["api"]) {
  const anna = await api.create("/agents", {
    number: "8001",
    firstname: "Anna",
    lastname: "Smith",
  });
  const ben = await api.create("/agents", { number: "8002", firstname: "Ben" });
  return { anna: anna.id as number, ben: ben.id as number };
}

Deno.test("/1.1/agentgroups: create, list, get, update, members, delete", async (t) => {
  const { ctx, api } = await setupConfd();
  const { store } = ctx.services;
  const { anna, ben } = await twoAgents(api);
  let teamA = 0;
  let teamB = 0;

  await t.step("POST answers 201 with Location and the group, no agent yet", async () => {
    const body = await api.create("/agentgroups", { name: "team_a", display_name: "Team A" });
    teamA = body.id;
    assert.deepEqual(body, { id: teamA, name: "team_a", display_name: "Team A", agents: [] });
    teamB = (await api.create("/agentgroups", { name: "team-b" })).id;
  });

  await t.step("GET lists, searches and filters", async () => {
    assert.deepEqual(await api.list("/agentgroups"), { total: 2, values: ["team_a", "team-b"] });
    assert.deepEqual((await api.list("/agentgroups?search=team a")).values, ["team_a"]);
    assert.deepEqual((await api.list("/agentgroups?name=team-b")).values, ["team-b"]);
    assert.deepEqual((await api.list("/agentgroups?order=id&direction=desc")).values, [
      "team-b",
      "team_a",
    ]);
  });

  await t.step("PUT .../agents/{agent_id}: the agent joins; twice is no error", async () => {
    for (let i = 0; i < 2; i++) {
      assert.equal((await api.put(`/agentgroups/${teamA}/agents/${anna}`)).status, 204);
    }
    assert.equal((await api.put(`/agentgroups/${teamA}/agents/${ben}`)).status, 204);
    const view = await (await api.get(`/agentgroups/${teamA}`)).json();
    assert.deepEqual(view.agents, [
      { id: anna, number: "8001", firstname: "Anna", lastname: "Smith" },
      { id: ben, number: "8002", firstname: "Ben", lastname: null },
    ]);
  });

  await t.step("joining another group leaves the first: one group at most", async () => {
    assert.equal((await api.put(`/agentgroups/${teamB}/agents/${anna}`)).status, 204);
    const views = (await (await api.get("/agentgroups")).json()).items;
    assert.deepEqual(
      views.map((group: { agents: { id: number }[] }) => group.agents.map((a) => a.id)),
      [[ben], [anna]],
    );
    assert.equal(await groupOfAgent(store, anna), teamB);
  });

  await t.step(
    "DELETE .../agents/{agent_id}: leaves; not in it: 204, nothing changes",
    async () => {
      assert.equal((await api.delete(`/agentgroups/${teamA}/agents/${anna}`)).status, 204);
      assert.equal(await groupOfAgent(store, anna), teamB, "anna stays in team-b");
      assert.equal((await api.delete(`/agentgroups/${teamB}/agents/${anna}`)).status, 204);
      assert.equal(await groupOfAgent(store, anna), null);
    },
  );

  await t.step("PUT changes the name and display name only", async () => {
    const changed = await api.put(`/agentgroups/${teamA}`, { name: "alpha", display_name: null });
    assert.equal(changed.status, 204);
    assert.deepEqual(await (await api.get(`/agentgroups/${teamA}`)).json(), {
      id: teamA,
      name: "alpha",
      display_name: null,
      agents: [{ id: ben, number: "8002", firstname: "Ben", lastname: null }],
    });
  });

  await t.step("deleting an agent takes it out of its group", async () => {
    assert.equal((await api.delete(`/agents/${ben}`)).status, 204);
    assert.deepEqual((await (await api.get(`/agentgroups/${teamA}`)).json()).agents, []);
  });

  await t.step("deleting a group: its agents are in none", async () => {
    assert.equal((await api.put(`/agentgroups/${teamA}/agents/${anna}`)).status, 204);
    await api.expectDeleted("/agentgroups", "AgentGroup", { id: teamA });
    assert.equal(await groupOfAgent(store, anna), null);
    assert.deepEqual((await listAgentGroups(store)).map((group) => group.id), [teamB]);
  });
});

Deno.test("/1.1/agentgroups: every error", async (t) => {
  const { api } = await setupConfd();
  const { anna } = await twoAgents(api);
  const group = (await api.create("/agentgroups", { name: "team" })).id;

  await t.step("unknown or malformed ids: 404", async () => {
    await api.expectUnknownId("/agentgroups", "AgentGroup", { id: 999 });
    await expectNotFound(await api.get("/agentgroups/abc"), "AgentGroup", { id: "abc" });
    for (const method of ["PUT", "DELETE"]) {
      await expectNotFound(
        await api.call(method, `/agentgroups/999/agents/${anna}`),
        "AgentGroup",
        { id: 999 },
      );
      await expectNotFound(
        await api.call(method, `/agentgroups/${group}/agents/999`),
        "Agent",
        { id: 999 },
      );
      await expectNotFound(
        await api.call(method, `/agentgroups/${group}/agents/x`),
        "Agent",
        { agent_id: "x" },
      );
    }
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    await api.expectInvalid("POST", "/agentgroups", [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than minimum length 1/],
      [{ name: "a b" }, /field 'name': Must be letters, digits, - or _/],
      [{ name: "n".repeat(129) }, /field 'name': Longer than maximum length 128/],
      [{ name: 7 }, /field 'name'/],
      [{ name: "x", display_name: "d".repeat(129) }, /field 'display_name'/],
      [{ name: "x", display_name: 3 }, /field 'display_name'/],
    ]);
    await api.expectInvalid("PUT", `/agentgroups/${group}`, [
      [{ name: "é" }, /field 'name'/],
      [{ name: null }, /field 'name'/],
    ]);
    await api.expectJsonObjectBody("POST", "/agentgroups");
    await api.expectJsonObjectBody("PUT", `/agentgroups/${group}`);
  });

  await t.step("agents are not set through the group's body", async () => {
    const made = await api.create("/agentgroups", { name: "other", agents: [{ id: anna }] });
    assert.deepEqual(made.agents, []);
  });

  await t.step("a taken name: 400 Resource Error", async () => {
    const message = /^Resource Error - AgentGroup already exists \('name': 'team'\)$/;
    await api.expectTaken("/agentgroups", { name: "team" }, { name: "third" }, message);
  });

  await t.step("a CTI user's token: 403", async () => {
    const { ctx } = await setupConfd();
    await ctiUser(ctx, "carl");
    const token = await login(ctx, "login", "carl");
    const response = await apiCall(ctx, "/1.1", token)("GET", "/agentgroups");
    await expectConfdError(response, 403, /^Forbidden - /);
  });
});

Deno.test("/1.1/agentgroups: ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  await admin.create("/agents", { number: "8001" });
  await admin.create("/agentgroups", { name: "first" });
  await expectAcls(t, ctx, [
    ["GET", "/agentgroups", "confd.agentgroups.read"],
    ["POST", "/agentgroups", "confd.agentgroups.create", { name: "second" }],
    ["GET", "/agentgroups/1", "confd.agentgroups.1.read"],
    ["PUT", "/agentgroups/1", "confd.agentgroups.1.update", {}],
    ["PUT", "/agentgroups/1/agents/1", "confd.agentgroups.1.agents.1.update"],
    ["DELETE", "/agentgroups/1/agents/1", "confd.agentgroups.1.agents.1.delete"],
    ["DELETE", "/agentgroups/1", "confd.agentgroups.1.delete"],
  ]);
});

Deno.test("PUT /supervision/agents/{agentId}/group: a supervisor's; every error", async (t) => {
  const { ctx, api } = await setupConfd();
  const { store } = ctx.services;
  const { anna } = await twoAgents(api);
  const group = (await api.create("/agentgroups", { name: "team" })).id;
  const supervisor = await webServiceUser(ctx, ["svc.rest.supervision.#"]);
  const call = apiCall(ctx, "/svc/api/2.0", await login(ctx, "webservice", supervisor.login));
  const path = `/supervision/agents/${anna}/group`;

  await t.step("puts the agent in the group, then in none", async () => {
    assert.equal((await call("PUT", path, { groupId: group })).status, 204);
    assert.equal(await groupOfAgent(store, anna), group);
    assert.equal((await call("PUT", path, { groupId: null })).status, 204);
    assert.equal(await groupOfAgent(store, anna), null);
  });

  await t.step("errors: 400 for the body, 404 for unknown ids; nothing changes", async () => {
    await expectError(await call("PUT", path), 400, "JsonBodyNotFound");
    await expectError(await call("PUT", path, "{oops"), 400, "JsonErrorDecoding");
    await expectError(await call("PUT", path, {}), 400, "JsonErrorDecoding", /groupId/);
    await expectError(await call("PUT", path, { groupId: "1" }), 400, "JsonErrorDecoding");
    await expectError(await call("PUT", path, { groupId: 1.5 }), 400, "JsonErrorDecoding");
    await expectError(
      await call("PUT", path, { groupId: 999 }),
      404,
      "AgentGroupNotFound",
      /agent group 999/,
    );
    await expectError(
      await call("PUT", "/supervision/agents/999/group", { groupId: group }),
      404,
      "AgentNotFound",
    );
    await expectError(
      await call("PUT", "/supervision/agents/01/group", { groupId: group }),
      404,
      "AgentNotFound",
    );
    assert.equal(await groupOfAgent(store, anna), null);
  });

  await t.step("without its ACL: 403 naming it", async () => {
    const other = await webServiceUser(ctx, ["svc.rest.supervision.agents.read"]);
    const narrow = apiCall(ctx, "/svc/api/2.0", await login(ctx, "webservice", other.login));
    await expectForbidden(
      await narrow("PUT", path, { groupId: group }),
      `svc.rest.supervision.agents.${anna}.group.update`,
    );
    assert.equal(await groupOfAgent(store, anna), null);
  });
});

Deno.test("two servers on one store file: a group made through one is seen and changed through the other, and kept", async () => {
  const dir = await Deno.makeTempDir();
  const env = { SVC_KV: `${dir}/svc.kv` };
  try {
    const one = await setupConfd(env);
    const two = await setupConfd(env);
    const anna = (await one.api.create("/agents", { number: "8001" })).id;
    const team = (await one.api.create("/agentgroups", { name: "team" })).id;
    assert.equal((await two.api.put(`/agentgroups/${team}/agents/${anna}`)).status, 204);
    const seen = await (await one.api.get(`/agentgroups/${team}`)).json();
    assert.deepEqual(seen.agents.map((agent: { id: number }) => agent.id), [anna]);
    for (const { ctx } of [one, two]) ctx.services.store.close();

    // a restart: still there
    const again = await setupConfd(env);
    try {
      assert.equal(await groupOfAgent(again.ctx.services.store, anna), team);
    } finally {
      again.ctx.services.store.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

import assert from "node:assert/strict";
import { verifyPassword } from "../../../lib/auth/passwords.ts";
import { getAgent } from "../../../lib/store/agents.ts";
import { expectAcls, expectConfdError, setupConfd } from "../../helpers.ts";

Deno.test("/1.1/agents: create, get, list, update, delete", async (t) => {
  const { ctx, api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and nulls for what was not sent", async () => {
    const body = await api.create("/agents", {
      number: "8000",
      firstname: "Alice",
      password: "1234",
      ignored: true,
    });
    id = body.id;
    assert.deepEqual(body, {
      id,
      number: "8000",
      firstname: "Alice",
      lastname: null,
      language: null,
      description: null,
      preprocess_subroutine: null,
      queues: [],
    });
    const stored = await getAgent(ctx.services.store, id);
    assert.ok(await verifyPassword("1234", stored!.password_hash));
  });

  await t.step("GET by id and the list", async () => {
    assert.equal((await (await api.get(`/agents/${id}`)).json()).number, "8000");
    assert.equal((await api.post("/agents", { number: "8001", lastname: "Bob" })).status, 201);
    assert.deepEqual(await api.list("/agents?search=bob", "number"), {
      total: 1,
      values: ["8001"],
    });
  });

  await t.step("PUT changes what it sends; the same number is accepted", async () => {
    const response = await api.put(`/agents/${id}`, {
      number: "8000",
      lastname: "Martin",
      language: "fr_FR",
      password: "9999",
    });
    assert.equal(response.status, 204);
    const body = await (await api.get(`/agents/${id}`)).json();
    assert.equal(body.lastname, "Martin");
    assert.equal(body.firstname, "Alice");
    assert.equal(body.language, "fr_FR");
    assert.equal("password" in body, false);
    const stored = await getAgent(ctx.services.store, id);
    assert.ok(await verifyPassword("9999", stored!.password_hash));
  });

  await t.step("the view and GET /agents/{id}/queues show its queues", async () => {
    const queue = await (await api.post("/queues", { name: "sales" })).json();
    assert.equal(
      (await api.put(`/queues/${queue.id}/members/agents/${id}`, { penalty: 2 })).status,
      204,
    );
    const body = await (await api.get(`/agents/${id}`)).json();
    assert.deepEqual(body.queues, [{ id: queue.id, name: "sales", penalty: 2 }]);
    const queues = await api.get(`/agents/${id}/queues`);
    assert.equal(queues.status, 200);
    assert.deepEqual(await queues.json(), {
      total: 1,
      items: [{ id: queue.id, name: "sales", penalty: 2 }],
    });
  });

  await t.step("a queue member cannot be deleted: 400, nothing changes", async () => {
    await expectConfdError(
      await api.delete(`/agents/${id}`),
      400,
      /^Resource Error - Agent is associated with a Queue$/,
    );
    assert.equal((await api.get(`/agents/${id}`)).status, 200);
    assert.equal((await api.delete(`/queues/1/members/agents/${id}`)).status, 204);
  });

  await t.step("DELETE answers 204, then the agent is gone", async () => {
    await api.expectDeleted("/agents", "Agent", { id });
  });
});

Deno.test("/1.1/agents: every error", async (t) => {
  const { api } = await setupConfd();
  assert.equal((await api.post("/agents", { number: "8000" })).status, 201);

  await t.step("unknown or malformed ids: 404", async () => {
    await api.expectUnknownId("/agents", "Agent", { id: 999 });
    await api.expectUnknownId("/agents", "Agent", { id: "abc" });
    await expectConfdError(await api.get("/agents/999/queues"), 404, /Agent was not found/);
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    await api.expectInvalid("POST", "/agents", [
      [{}, /^Input Error - field 'number': /],
      [{ number: "" }, /field 'number': Must be 1 to 40 digits/],
      [{ number: "12a" }, /field 'number'/],
      [{ number: 8002 }, /field 'number'/],
      [{ number: "8002", firstname: "f".repeat(129) }, /field 'firstname': Longer than/],
      [{ number: "8002", lastname: 3 }, /field 'lastname'/],
      [{ number: "8002", language: "x".repeat(21) }, /field 'language'/],
      [{ number: "8002", preprocess_subroutine: "x".repeat(40) }, /field 'preprocess_subroutine'/],
      [{ number: "8002", password: "p".repeat(129) }, /field 'password'/],
    ]);
    await expectConfdError(await api.put("/agents/1", { firstname: 1 }), 400, /field 'firstname'/);
    await api.expectJsonObjectBody("POST", "/agents");
  });

  await t.step("a taken number: 400 Resource Error", async () => {
    await expectConfdError(
      await api.post("/agents", { number: "8000" }),
      400,
      /^Resource Error - Agent already exists \('number': '8000'\)$/,
    );
  });

  await t.step("the number cannot change", async () => {
    await expectConfdError(
      await api.put("/agents/1", { number: "8009" }),
      400,
      /^Input Error - field 'number': An agent's number cannot be changed/,
    );
  });
});

Deno.test("/1.1/agents: ACLs", async (t) => {
  const { ctx, api } = await setupConfd();
  assert.equal((await api.post("/agents", { number: "8000" })).status, 201);
  await expectAcls(t, ctx, [
    ["GET", "/agents", "confd.agents.read"],
    ["POST", "/agents", "confd.agents.create", { number: "8001" }],
    ["GET", "/agents/1", "confd.agents.1.read"],
    ["GET", "/agents/1/queues", "confd.agents.1.queues.read"],
    ["PUT", "/agents/1", "confd.agents.1.update", {}],
    ["DELETE", "/agents/1", "confd.agents.1.delete"],
  ]);
});

import assert from "node:assert/strict";
import { findQueueByNumber } from "../../../lib/store/queues.ts";
import { expectAcls, expectConfdError, expectNotFound, setupConfd } from "../../helpers.ts";

Deno.test("/1.1/queues: create, get, list, update, delete", async (t) => {
  const { ctx, api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and the defaults", async () => {
    const body = await api.create("/queues", { name: "sales", number: "3000", other: 1 });
    id = body.id;
    assert.deepEqual(body, {
      id,
      name: "sales",
      display_name: null,
      number: "3000",
      context: "default",
      wrapup_seconds: 0,
      agents: [],
    });
    assert.equal((await findQueueByNumber(ctx.services.store, "3000", "default"))?.id, id);
  });

  await t.step("GET by id and the list with a filter", async () => {
    assert.equal((await (await api.get(`/queues/${id}`)).json()).name, "sales");
    assert.equal(
      (await api.post("/queues", { name: "support", display_name: "Help" })).status,
      201,
    );
    assert.deepEqual((await api.list("/queues?number=3000")).values, ["sales"]);
    assert.deepEqual((await api.list("/queues?search=help")).values, ["support"]);
  });

  await t.step("PUT changes what it sends; the number may move or go", async () => {
    assert.equal(
      (await api.put(`/queues/${id}`, { display_name: "Sales", wrapup_seconds: 15 })).status,
      204,
    );
    let body = await (await api.get(`/queues/${id}`)).json();
    assert.equal(body.display_name, "Sales");
    assert.equal(body.wrapup_seconds, 15);
    assert.equal(body.number, "3000");
    assert.equal((await api.put(`/queues/${id}`, { number: "3001", name: "sales" })).status, 204);
    assert.equal((await api.post("/queues", { name: "q3000", number: "3000" })).status, 201);
    assert.equal((await api.put(`/queues/${id}`, { number: null })).status, 204);
    body = await (await api.get(`/queues/${id}`)).json();
    assert.equal(body.number, null);
  });

  await t.step("agent members: add, change the penalty, remove", async () => {
    const a1 = (await (await api.post("/agents", { number: "8001" })).json()).id;
    const a2 = (await (await api.post("/agents", { number: "8002" })).json()).id;
    assert.equal((await api.put(`/queues/${id}/members/agents/${a1}`)).status, 204);
    assert.equal((await api.put(`/queues/${id}/members/agents/${a2}`, { penalty: 3 })).status, 204);
    const members = async () => (await (await api.get(`/queues/${id}`)).json()).agents;
    assert.deepEqual(await members(), [{ id: a1, penalty: 0 }, { id: a2, penalty: 3 }]);
    assert.equal((await api.put(`/queues/${id}/members/agents/${a1}`, { penalty: 5 })).status, 204);
    assert.deepEqual(await members(), [{ id: a1, penalty: 5 }, { id: a2, penalty: 3 }]);
    assert.equal((await api.delete(`/queues/${id}/members/agents/${a1}`)).status, 204);
    assert.equal((await api.delete(`/queues/${id}/members/agents/${a1}`)).status, 204);
    assert.deepEqual(await members(), [{ id: a2, penalty: 3 }]);
  });

  await t.step("a queue with members cannot be deleted", async () => {
    await expectConfdError(
      await api.delete(`/queues/${id}`),
      400,
      /^Resource Error - Queue is associated with an Agent$/,
    );
    assert.equal((await api.delete(`/queues/${id}/members/agents/2`)).status, 204);
  });

  await t.step("call qualifications: associate, list, dissociate", async () => {
    const q = await (await api.post("/call_qualifications", {
      name: "Sale",
      sub_qualifications: [{ name: "Won" }],
    })).json();
    assert.equal((await api.put(`/queues/${id}/call_qualifications/${q.id}`)).status, 204);
    assert.equal((await api.put(`/queues/${id}/call_qualifications/${q.id}`)).status, 204);
    const list = await api.get(`/queues/${id}/call_qualifications`);
    assert.equal(list.status, 200);
    assert.deepEqual(await list.json(), {
      total: 1,
      items: [{
        id: q.id,
        name: "Sale",
        sub_qualifications: q.sub_qualifications,
        queues: [{ id }],
      }],
    });
    await expectConfdError(
      await api.delete(`/queues/${id}`),
      400,
      /^Resource Error - Queue is associated with a CallQualification$/,
    );
    assert.equal((await api.delete(`/queues/${id}/call_qualifications/${q.id}`)).status, 204);
    assert.equal((await api.list(`/queues/${id}/call_qualifications`)).total, 0);
  });

  await t.step("a queue with a callback list cannot be deleted", async () => {
    const list = await (await api.post("/callback_lists", { name: "cb", queue_id: id })).json();
    await expectConfdError(
      await api.delete(`/queues/${id}`),
      400,
      /^Resource Error - Queue is associated with a CallbackList$/,
    );
    assert.equal((await api.delete(`/callback_lists/${list.uuid}`)).status, 204);
  });

  await t.step("DELETE answers 204, then the queue is gone", async () => {
    await api.expectDeleted("/queues", "Queue", { id });
  });
});

Deno.test("/1.1/queues: every error", async (t) => {
  const { api } = await setupConfd();
  assert.equal((await api.post("/queues", { name: "sales", number: "3000" })).status, 201);
  assert.equal((await api.post("/agents", { number: "8000" })).status, 201);
  assert.equal((await api.post("/call_qualifications", { name: "Sale" })).status, 201);

  await t.step("unknown or malformed ids: 404", async () => {
    await api.expectUnknownId("/queues", "Queue", { id: 99 });
    await api.expectUnknownId("/queues", "Queue", { id: "x" });
    await expectConfdError(await api.put("/queues/99/members/agents/1"), 404, /Queue was not/);
    await expectConfdError(await api.put("/queues/1/members/agents/9"), 404, /Agent was not/);
    await expectConfdError(await api.delete("/queues/1/members/agents/9"), 404, /Agent was not/);
    await expectConfdError(await api.get("/queues/99/call_qualifications"), 404, /Queue was not/);
    await expectNotFound(
      await api.put("/queues/1/call_qualifications/9"),
      "CallQualification",
      { id: 9 },
    );
    await expectConfdError(
      await api.delete("/queues/99/call_qualifications/1"),
      404,
      /Queue was not found/,
    );
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    await api.expectInvalid("POST", "/queues", [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than minimum length 1/],
      [{ name: "with space" }, /field 'name': Must be letters/],
      [{ name: "n".repeat(129) }, /field 'name': Longer than/],
      [{ name: "q", number: "30a" }, /field 'number': Must be 1 to 40 digits/],
      [{ name: "q", number: 3001 }, /field 'number'/],
      [{ name: "q", number: "4000" }, /field 'number': Number '4000' is not in a queue range/],
      [{ name: "q", number: "3001", context: "from-extern" }, /field 'number'/],
      [{ name: "q", context: "nowhere" }, /field 'context': Context was not found/],
      [{ name: "q", wrapup_seconds: -1 }, /field 'wrapup_seconds': Must be greater/],
      [{ name: "q", wrapup_seconds: 1.5 }, /field 'wrapup_seconds'/],
      [{ name: "q", display_name: "d".repeat(129) }, /field 'display_name'/],
    ]);
    await expectConfdError(await api.put("/queues/1", { number: "5000" }), 400, /field 'number'/);
    await expectConfdError(await api.put("/queues/1", { context: "x" }), 400, /field 'context'/);
    await expectConfdError(
      await api.put("/queues/1/members/agents/1", { penalty: -1 }),
      400,
      /field 'penalty'/,
    );
    await expectConfdError(
      await api.put("/queues/1/members/agents/1", { penalty: "1" }),
      400,
      /field 'penalty'/,
    );
    await api.expectJsonObjectBody("PUT", "/queues/1/members/agents/1");
  });

  await t.step("a taken name, or a taken number in the context: 400", async () => {
    await expectConfdError(
      await api.post("/queues", { name: "sales" }),
      400,
      /^Resource Error - Queue already exists \('name': 'sales'\)$/,
    );
    await expectConfdError(
      await api.post("/queues", { name: "other", number: "3000" }),
      400,
      /^Resource Error - Queue already exists \('number': '3000', 'context': 'default'\)$/,
    );
  });

  await t.step("the name cannot change", async () => {
    await expectConfdError(await api.put("/queues/1", { name: "other" }), 400, /field 'name'/);
  });
});

Deno.test("/1.1/queues: ACLs", async (t) => {
  const { ctx, api } = await setupConfd();
  assert.equal((await api.post("/queues", { name: "sales" })).status, 201);
  assert.equal((await api.post("/agents", { number: "8000" })).status, 201);
  assert.equal((await api.post("/call_qualifications", { name: "Sale" })).status, 201);
  await expectAcls(t, ctx, [
    ["GET", "/queues", "confd.queues.read"],
    ["POST", "/queues", "confd.queues.create", { name: "other" }],
    ["GET", "/queues/1", "confd.queues.1.read"],
    ["PUT", "/queues/1", "confd.queues.1.update", {}],
    ["PUT", "/queues/1/members/agents/1", "confd.queues.1.members.agents.1.update", {}],
    ["DELETE", "/queues/1/members/agents/1", "confd.queues.1.members.agents.1.delete"],
    ["GET", "/queues/1/call_qualifications", "confd.queues.1.call_qualifications.read"],
    ["PUT", "/queues/1/call_qualifications/1", "confd.queues.1.call_qualifications.1.update"],
    ["DELETE", "/queues/1/call_qualifications/1", "confd.queues.1.call_qualifications.1.delete"],
    ["DELETE", "/queues/1", "confd.queues.1.delete"],
  ]);
});

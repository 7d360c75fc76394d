import assert from "node:assert/strict";
import {
  createCallQualification,
  findSubQualification,
  qualificationsOfQueue,
} from "../../../lib/store/call_qualifications.ts";
import { createQueue } from "../../../lib/store/queues.ts";
import { expectAcls, expectConfdError, setup, setupConfd } from "../../helpers.ts";

Deno.test("/1.1/call_qualifications: create, get, list, update, delete", async (t) => {
  const { ctx, api } = await setupConfd();
  let id = 0;

  await t.step("POST numbers the sub-qualifications from one sequence", async () => {
    const body = await api.create("/call_qualifications", {
      name: "Sale",
      sub_qualifications: [{ name: "Won" }, { id: 77, name: "Lost" }],
    });
    id = body.id;
    assert.deepEqual(body, {
      id,
      name: "Sale",
      sub_qualifications: [{ id: 1, name: "Won" }, { id: 2, name: "Lost" }],
      queues: [],
    });
    const other = await (await api.post("/call_qualifications", {
      name: "Support",
      sub_qualifications: [{ name: "Solved" }],
    })).json();
    assert.deepEqual(other.sub_qualifications, [{ id: 3, name: "Solved" }]);
    const bare = await (await api.post("/call_qualifications", { name: "Bare" })).json();
    assert.deepEqual(bare.sub_qualifications, []);
  });

  await t.step("GET by id and the list", async () => {
    assert.equal((await (await api.get(`/call_qualifications/${id}`)).json()).name, "Sale");
    assert.deepEqual((await api.list("/call_qualifications?search=supp")).values, ["Support"]);
  });

  await t.step("PUT keeps sent ids, numbers new entries, drops the others", async () => {
    const response = await api.put(`/call_qualifications/${id}`, {
      sub_qualifications: [{ id: 2, name: "Lost for good" }, { name: "Postponed" }],
    });
    assert.equal(response.status, 204);
    assert.deepEqual(await (await api.get(`/call_qualifications/${id}`)).json(), {
      id,
      name: "Sale",
      sub_qualifications: [{ id: 2, name: "Lost for good" }, { id: 4, name: "Postponed" }],
      queues: [],
    });
    assert.equal((await api.put(`/call_qualifications/${id}`, { name: "Sales" })).status, 204);
    const body = await (await api.get(`/call_qualifications/${id}`)).json();
    assert.equal(body.name, "Sales");
    assert.equal(body.sub_qualifications.length, 2);
  });

  await t.step("the 2.0 API's readers: per queue, and by sub-qualification id", async () => {
    const queue = (await (await api.post("/queues", { name: "sales" })).json()).id;
    assert.equal((await api.put(`/queues/${queue}/call_qualifications/${id}`)).status, 204);
    const store = ctx.services.store;
    assert.deepEqual(await qualificationsOfQueue(store, queue), [{
      id,
      name: "Sales",
      subQualifications: [{ id: 2, name: "Lost for good" }, { id: 4, name: "Postponed" }],
    }]);
    assert.deepEqual(await qualificationsOfQueue(store, 999), []);
    const found = await findSubQualification(store, 4);
    assert.deepEqual(found?.subQualification, { id: 4, name: "Postponed" });
    assert.equal(found?.qualification.id, id);
    assert.equal(await findSubQualification(store, 1), null);
    assert.deepEqual((await (await api.get(`/call_qualifications/${id}`)).json()).queues, [{
      id: queue,
    }]);
  });

  await t.step("a qualification offered on a queue cannot be deleted", async () => {
    await expectConfdError(
      await api.delete(`/call_qualifications/${id}`),
      400,
      /^Resource Error - CallQualification is associated with a Queue$/,
    );
    assert.equal((await api.delete(`/queues/1/call_qualifications/${id}`)).status, 204);
  });

  await t.step("DELETE answers 204, then it is gone", async () => {
    await api.expectDeleted("/call_qualifications", "CallQualification", { id });
  });
});

Deno.test("createCallQualification: the demo's way in", async () => {
  const ctx = await setup();
  const store = ctx.services.store;
  const queue = await createQueue(store, { name: "sales", number: "3000" });
  const created = await createCallQualification(store, {
    name: "Sale",
    sub_qualifications: [{ name: "Won" }, { name: "Lost" }],
    queue_ids: [queue.id],
  });
  assert.deepEqual(await qualificationsOfQueue(store, queue.id), [{
    id: created.id,
    name: "Sale",
    subQualifications: [{ id: 1, name: "Won" }, { id: 2, name: "Lost" }],
  }]);
});

Deno.test("/1.1/call_qualifications: every error", async (t) => {
  const { api } = await setupConfd();
  await api.post("/call_qualifications", { name: "A", sub_qualifications: [{ name: "a" }] });
  await api.post("/call_qualifications", { name: "B", sub_qualifications: [{ name: "b" }] });

  await t.step("unknown or malformed ids: 404", async () => {
    await api.expectUnknownId("/call_qualifications", "CallQualification", { id: 99 });
    await api.expectUnknownId("/call_qualifications", "CallQualification", { id: "x" });
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    await api.expectInvalid("POST", "/call_qualifications", [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than/],
      [{ name: "n".repeat(129) }, /field 'name': Longer than/],
      [{ name: "x", sub_qualifications: "a" }, /field 'sub_qualifications'/],
      [{ name: "x", sub_qualifications: [{}] }, /field 'sub_qualifications.0.name'/],
      [{ name: "x", sub_qualifications: [{ name: "" }] }, /field 'sub_qualifications.0.name'/],
      [{ name: "x", sub_qualifications: [{ id: "1", name: "a" }] }, /'sub_qualifications.0.id'/],
    ]);
  });

  await t.step("a PUT naming another qualification's or a repeated sub id: 400", async () => {
    await expectConfdError(
      await api.put("/call_qualifications/1", { sub_qualifications: [{ id: 2, name: "b" }] }),
      400,
      /^Input Error - field 'sub_qualifications.0.id': SubQualification was not found \('id': 2\)$/,
    );
    await expectConfdError(
      await api.put("/call_qualifications/1", {
        sub_qualifications: [{ id: 1, name: "a" }, { id: 1, name: "again" }],
      }),
      400,
      /field 'sub_qualifications.1.id': Repeated id/,
    );
  });
});

Deno.test("/1.1/call_qualifications: ACLs", async (t) => {
  const { ctx, api } = await setupConfd();
  assert.equal((await api.post("/call_qualifications", { name: "A" })).status, 201);
  await expectAcls(t, ctx, [
    ["GET", "/call_qualifications", "confd.call_qualifications.read"],
    ["POST", "/call_qualifications", "confd.call_qualifications.create", { name: "B" }],
    ["GET", "/call_qualifications/1", "confd.call_qualifications.1.read"],
    ["PUT", "/call_qualifications/1", "confd.call_qualifications.1.update", {}],
    ["DELETE", "/call_qualifications/1", "confd.call_qualifications.1.delete"],
  ]);
});

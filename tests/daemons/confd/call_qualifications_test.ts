import assert from "node:assert/strict";
import {
  createCallQualification,
  findSubQualification,
  qualificationsOfQueue,
} from "../../../lib/store/call_qualifications.ts";
import { createQueue } from "../../../lib/store/queues.ts";
import { confd, expectConfdError, setup, type TestContext } from "../../helpers.ts";

Deno.test("/1.1/call_qualifications: create, get, list, update, delete", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  let id = 0;

  await t.step("POST numbers the sub-qualifications from one sequence", async () => {
    const response = await api.post("/call_qualifications", {
      name: "Sale",
      sub_qualifications: [{ name: "Won" }, { id: 77, name: "Lost" }],
    });
    assert.equal(response.status, 201);
    const body = await response.json();
    id = body.id;
    assert.equal(response.headers.get("location"), `/1.1/call_qualifications/${id}`);
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
    const list = await (await api.get("/call_qualifications?search=supp")).json();
    assert.deepEqual(list.items.map((q: { name: string }) => q.name), ["Support"]);
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
    assert.equal((await api.delete(`/call_qualifications/${id}`)).status, 204);
    await expectConfdError(
      await api.get(`/call_qualifications/${id}`),
      404,
      new RegExp(`^Resource Not Found - CallQualification was not found \\('id': ${id}\\)$`),
    );
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
  const ctx = await setup();
  const api = await confd(ctx);
  await api.post("/call_qualifications", { name: "A", sub_qualifications: [{ name: "a" }] });
  await api.post("/call_qualifications", { name: "B", sub_qualifications: [{ name: "b" }] });

  await t.step("unknown or malformed ids: 404", async () => {
    await expectConfdError(await api.get("/call_qualifications/99"), 404, /CallQualification/);
    await expectConfdError(await api.get("/call_qualifications/x"), 404, /\('id': 'x'\)/);
    await expectConfdError(await api.put("/call_qualifications/99", {}), 404, /not found/);
    await expectConfdError(await api.delete("/call_qualifications/99"), 404, /not found/);
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /^Input Error - field 'name': /],
      [{ name: "" }, /field 'name': Shorter than/],
      [{ name: "n".repeat(129) }, /field 'name': Longer than/],
      [{ name: "x", sub_qualifications: "a" }, /field 'sub_qualifications'/],
      [{ name: "x", sub_qualifications: [{}] }, /field 'sub_qualifications.0.name'/],
      [{ name: "x", sub_qualifications: [{ name: "" }] }, /field 'sub_qualifications.0.name'/],
      [{ name: "x", sub_qualifications: [{ id: "1", name: "a" }] }, /'sub_qualifications.0.id'/],
    ];
    for (const [body, pattern] of cases) {
      await expectConfdError(await api.post("/call_qualifications", body), 400, pattern);
    }
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
  const ctx = await setup();
  const api = await confd(ctx);
  assert.equal((await api.post("/call_qualifications", { name: "A" })).status, 201);
  await expectAcls(t, ctx, [
    ["GET", "/call_qualifications", "confd.call_qualifications.read"],
    ["POST", "/call_qualifications", "confd.call_qualifications.create", { name: "B" }],
    ["GET", "/call_qualifications/1", "confd.call_qualifications.1.read"],
    ["PUT", "/call_qualifications/1", "confd.call_qualifications.1.update", {}],
    ["DELETE", "/call_qualifications/1", "confd.call_qualifications.1.delete"],
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

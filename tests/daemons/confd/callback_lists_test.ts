import assert from "node:assert/strict";
import { getCallbackList, periodOf } from "../../../lib/store/callback_lists.ts";
import { confd, expectConfdError, setup, type TestContext } from "../../helpers.ts";

const ALL_DAY = { name: "All day", periodStart: "00:00", periodEnd: "23:59", default: true };

Deno.test("/1.1/callback_lists: create, get, list, update, delete", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  const queue = (await (await api.post("/queues", { name: "sales" })).json()).id;
  const other = (await (await api.post("/queues", { name: "support" })).json()).id;
  let uuid = "";

  await t.step("POST without periods: one default period, All day", async () => {
    const response = await api.post("/callback_lists", { name: "Sales", queue_id: queue });
    assert.equal(response.status, 201);
    const body = await response.json();
    uuid = body.uuid;
    assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.equal(response.headers.get("location"), `/1.1/callback_lists/${uuid}`);
    assert.deepEqual(body, { uuid, name: "Sales", queue_id: queue, periods: [ALL_DAY] });
  });

  await t.step("POST with periods keeps them", async () => {
    const periods = [
      { name: "Morning", periodStart: "08:00", periodEnd: "12:00", default: true },
      { name: "Afternoon", periodStart: "14:00", periodEnd: "18:00" },
    ];
    const response = await api.post("/callback_lists", {
      name: "Support",
      queue_id: other,
      periods,
    });
    assert.equal(response.status, 201);
    const body = await response.json();
    assert.deepEqual(body.periods, [periods[0], { ...periods[1], default: false }]);
    const list = await getCallbackList(ctx.services.store, body.uuid);
    assert.equal(periodOf(list!, "")?.name, "Morning");
    assert.equal(periodOf(list!, "Afternoon")?.periodStart, "14:00");
    assert.equal(periodOf(list!, "Night"), null);
  });

  await t.step("GET by uuid (any case) and the list with a filter", async () => {
    assert.equal((await (await api.get(`/callback_lists/${uuid}`)).json()).name, "Sales");
    assert.equal((await api.get(`/callback_lists/${uuid.toUpperCase()}`)).status, 200);
    const list = await (await api.get(`/callback_lists?queue_id=${other}`)).json();
    assert.deepEqual(list.items.map((l: { name: string }) => l.name), ["Support"]);
    assert.equal((await (await api.get("/callback_lists")).json()).total, 2);
  });

  await t.step("PUT changes what it sends", async () => {
    const periods = [{ name: "Late", periodStart: "18:00", periodEnd: "21:30", default: true }];
    assert.equal(
      (await api.put(`/callback_lists/${uuid}`, { queue_id: other, periods })).status,
      204,
    );
    assert.deepEqual(await (await api.get(`/callback_lists/${uuid}`)).json(), {
      uuid,
      name: "Sales",
      queue_id: other,
      periods,
    });
    assert.equal((await api.put(`/callback_lists/${uuid}`, { name: "Evening" })).status, 204);
    const body = await (await api.get(`/callback_lists/${uuid}`)).json();
    assert.equal(body.name, "Evening");
    assert.deepEqual(body.periods, periods);
  });

  await t.step("DELETE answers 204, then the list is gone", async () => {
    assert.equal((await api.delete(`/callback_lists/${uuid}`)).status, 204);
    await expectConfdError(
      await api.get(`/callback_lists/${uuid}`),
      404,
      new RegExp(`^Resource Not Found - CallbackList was not found \\('uuid': '${uuid}'\\)$`),
    );
  });
});

Deno.test("/1.1/callback_lists: every error", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  await api.post("/queues", { name: "sales" });
  const { uuid } = await (await api.post("/callback_lists", { name: "L", queue_id: 1 })).json();
  const missing = "00000000-0000-4000-8000-000000000000";

  await t.step("unknown or malformed uuids: 404", async () => {
    await expectConfdError(
      await api.get(`/callback_lists/${missing}`),
      404,
      new RegExp(`CallbackList was not found \\('uuid': '${missing}'\\)`),
    );
    await expectConfdError(await api.get("/callback_lists/12"), 404, /\('uuid': '12'\)/);
    await expectConfdError(await api.put(`/callback_lists/${missing}`, {}), 404, /not found/);
    await expectConfdError(await api.delete(`/callback_lists/${missing}`), 404, /not found/);
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    const period = (p: object) => ({ name: "p", periodStart: "08:00", periodEnd: "09:00", ...p });
    const cases: [unknown, RegExp][] = [
      [{ queue_id: 1 }, /^Input Error - field 'name': /],
      [{ name: "x" }, /field 'queue_id'/],
      [{ name: "x", queue_id: "1" }, /field 'queue_id'/],
      [
        { name: "x", queue_id: 9 },
        /^Input Error - field 'queue_id': Queue was not found \('id': 9\)$/,
      ],
      [{ name: "x", queue_id: 1, periods: [] }, /field 'periods': Exactly one period/],
      [{ name: "x", queue_id: 1, periods: [period({})] }, /field 'periods': Exactly one/],
      [
        { name: "x", queue_id: 1, periods: [period({ default: true }), period({ default: true })] },
        /field 'periods': Exactly one period must be the default/,
      ],
      [
        { name: "x", queue_id: 1, periods: [period({ default: true }), period({})] },
        /field 'periods.1.name': Repeated period name/,
      ],
      [
        { name: "x", queue_id: 1, periods: [period({ periodStart: "8:00", default: true })] },
        /field 'periods.0.periodStart': Must be a time HH:MM/,
      ],
      [
        { name: "x", queue_id: 1, periods: [period({ periodEnd: "24:00", default: true })] },
        /field 'periods.0.periodEnd'/,
      ],
      [
        { name: "x", queue_id: 1, periods: [period({ periodStart: "10:00", default: true })] },
        /field 'periods.0': periodEnd must be after periodStart/,
      ],
      [
        { name: "x", queue_id: 1, periods: [period({ default: "true" })] },
        /field 'periods.0.default'/,
      ],
    ];
    for (const [body, pattern] of cases) {
      await expectConfdError(await api.post("/callback_lists", body), 400, pattern);
    }
    await expectConfdError(
      await api.put(`/callback_lists/${uuid}`, { queue_id: 7 }),
      400,
      /field 'queue_id': Queue was not found/,
    );
    await expectConfdError(
      await api.put(`/callback_lists/${uuid}`, { periods: [] }),
      400,
      /field 'periods'/,
    );
  });
});

Deno.test("/1.1/callback_lists: ACLs", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  await api.post("/queues", { name: "sales" });
  const { uuid } = await (await api.post("/callback_lists", { name: "L", queue_id: 1 })).json();
  await expectAcls(t, ctx, [
    ["GET", "/callback_lists", "confd.callback_lists.read"],
    ["POST", "/callback_lists", "confd.callback_lists.create", { name: "M", queue_id: 1 }],
    ["GET", `/callback_lists/${uuid}`, `confd.callback_lists.${uuid}.read`],
    ["PUT", `/callback_lists/${uuid}`, `confd.callback_lists.${uuid}.update`, {}],
    ["DELETE", `/callback_lists/${uuid}`, `confd.callback_lists.${uuid}.delete`],
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

import assert from "node:assert/strict";
import { getCallbackList, periodOf } from "../../../lib/store/callback_lists.ts";
import { expectAcls, expectConfdError, setupConfd } from "../../helpers.ts";

const ALL_DAY = { name: "All day", periodStart: "00:00", periodEnd: "23:59", default: true };

Deno.test("/1.1/callback_lists: create, get, list, update, delete", async (t) => {
  const { ctx, api } = await setupConfd();
  const queue = (await (await api.post("/queues", { name: "sales" })).json()).id;
  const other = (await (await api.post("/queues", { name: "support" })).json()).id;
  let uuid = "";

  await t.step("POST without periods: one default period, All day", async () => {
    const body = await api.create("/callback_lists", { name: "Sales", queue_id: queue });
    uuid = body.uuid;
    assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.deepEqual(body, { uuid, name: "Sales", queue_id: queue, periods: [ALL_DAY] });
  });

  await t.step("POST with periods keeps them", async () => {
    const periods = [
      { name: "Morning", periodStart: "08:00", periodEnd: "12:00", default: true },
      { name: "Afternoon", periodStart: "14:00", periodEnd: "18:00" },
    ];
    const body = await api.create("/callback_lists", {
      name: "Support",
      queue_id: other,
      periods,
    });
    assert.deepEqual(body.periods, [periods[0], { ...periods[1], default: false }]);
    const list = await getCallbackList(ctx.services.store, body.uuid);
    assert.equal(periodOf(list!, "")?.name, "Morning");
    assert.equal(periodOf(list!, "Afternoon")?.periodStart, "14:00");
    assert.equal(periodOf(list!, "Night"), null);
  });

  await t.step("GET by uuid (any case) and the list with a filter", async () => {
    assert.equal((await (await api.get(`/callback_lists/${uuid}`)).json()).name, "Sales");
    assert.equal((await api.get(`/callback_lists/${uuid.toUpperCase()}`)).status, 200);
    assert.deepEqual((await api.list(`/callback_lists?queue_id=${other}`)).values, ["Support"]);
    assert.equal((await api.list("/callback_lists")).total, 2);
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
    await api.expectDeleted("/callback_lists", "CallbackList", { uuid });
  });
});

Deno.test("/1.1/callback_lists: every error", async (t) => {
  const { api } = await setupConfd();
  await api.post("/queues", { name: "sales" });
  const { uuid } = await (await api.post("/callback_lists", { name: "L", queue_id: 1 })).json();
  const missing = "00000000-0000-4000-8000-000000000000";

  await t.step("unknown or malformed uuids: 404", async () => {
    await api.expectUnknownId("/callback_lists", "CallbackList", { uuid: missing });
    await api.expectUnknownId("/callback_lists", "CallbackList", { uuid: "12" });
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    const period = (p: object) => ({ name: "p", periodStart: "08:00", periodEnd: "09:00", ...p });
    await api.expectInvalid("POST", "/callback_lists", [
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
    ]);
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
  const { ctx, api } = await setupConfd();
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

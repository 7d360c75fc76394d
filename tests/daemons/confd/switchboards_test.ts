import assert from "node:assert/strict";
import {
  recordSwitchboardCall,
  type SwitchboardCallRecord,
} from "../../../lib/store/switchboards.ts";
import { expectAcls, expectConfdError, expectNotFound, setupConfd } from "../../helpers.ts";

const at = (day: number, hour: number, minute = 0, second = 0) =>
  Date.UTC(2024, 0, day, hour, minute, second);

/** A call that entered switchboard 1, overridden by `fields`. */
const call = (fields: Partial<SwitchboardCallRecord>): SwitchboardCallRecord => ({
  id: crypto.randomUUID(),
  switchboard_id: 1,
  entered_at: at(1, 10),
  answered_at: null,
  ended_at: null,
  transferred: false,
  ...fields,
});

Deno.test("/1.1/switchboards: create, list, get, update, delete", async (t) => {
  const { api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and the switchboard", async () => {
    const body = await api.create("/switchboards", { name: "Reception" });
    id = body.id;
    assert.deepEqual(body, { id, name: "Reception", members: { users: [] } });
  });

  await t.step("GET lists and searches", async () => {
    await (await api.post("/switchboards", { name: "Night desk" })).body?.cancel();
    assert.equal((await api.list("/switchboards")).total, 2);
    assert.deepEqual((await api.list("/switchboards?search=night")).values, ["Night desk"]);
  });

  await t.step("GET by id and PUT", async () => {
    assert.equal((await (await api.get(`/switchboards/${id}`)).json()).name, "Reception");
    assert.equal((await api.put(`/switchboards/${id}`, { name: "Front desk" })).status, 204);
    assert.deepEqual(await (await api.get(`/switchboards/${id}`)).json(), {
      id,
      name: "Front desk",
      members: { users: [] },
    });
  });

  await t.step("DELETE answers 204, then the switchboard is gone", async () => {
    await api.expectDeleted("/switchboards", "Switchboard", { id });
  });
});

Deno.test("PUT /1.1/switchboards/{id}/members/users replaces the member users", async (t) => {
  const { api } = await setupConfd();
  const board = await api.create("/switchboards", { name: "Reception" });
  const alice = await api.create("/users", { firstname: "Alice", lastname: "Martin" });
  const bob = await api.create("/users", { firstname: "Bob" });
  const carol = await api.create("/users", { firstname: "Carol" });
  const path = `/switchboards/${board.id}/members/users`;
  const member = (u: Record<string, unknown>) => ({
    uuid: u.uuid,
    firstname: u.firstname,
    lastname: u.lastname,
  });
  const members = async () => (await (await api.get(`/switchboards/${board.id}`)).json()).members;

  await t.step("the users of the body, by uuid, in its order", async () => {
    // the body the clients build: `{"users": [{"uuid": …}]}`
    const response = await api.put(path, { users: [{ uuid: bob.uuid }, { uuid: alice.uuid }] });
    assert.equal(response.status, 204);
    assert.deepEqual(await members(), { users: [member(bob), member(alice)] });
    const listed = await (await api.get("/switchboards")).json();
    assert.deepEqual(listed.items[0].members, { users: [member(bob), member(alice)] });
  });

  await t.step("a second PUT replaces them; an empty list removes every member", async () => {
    assert.equal((await api.put(path, { users: [{ uuid: carol.uuid }] })).status, 204);
    assert.deepEqual(await members(), { users: [member(carol)] });
    assert.equal((await api.put(path, { users: [] })).status, 204);
    assert.deepEqual(await members(), { users: [] });
  });

  await t.step("a refused body changes nothing", async () => {
    assert.equal((await api.put(path, { users: [{ uuid: alice.uuid }] })).status, 204);
    const unknown = crypto.randomUUID();
    await expectConfdError(
      await api.put(path, { users: [{ uuid: bob.uuid }, { uuid: unknown }] }),
      400,
      `Input Error - field 'users': User was not found ('uuid': '${unknown}')`,
    );
    await expectConfdError(
      await api.put(path, { users: [{ uuid: bob.uuid }, { uuid: bob.uuid.toUpperCase() }] }),
      400,
      "Resource Error - Operation not permitted. Cannot associate same user more than once",
    );
    await api.expectInvalid("PUT", path, [
      [{}, /^Input Error - field 'users': /],
      [{ users: bob.uuid }, /^Input Error - field 'users': /],
      [{ users: [{ id: bob.id }] }, /^Input Error - field 'users\.0\.uuid': /],
      [{ users: [{ uuid: 5 }] }, /^Input Error - field 'users\.0\.uuid': /],
    ]);
    await api.expectJsonObjectBody("PUT", path);
    assert.deepEqual(await members(), { users: [member(alice)] });
  });

  await t.step("an unknown switchboard: 404", async () => {
    await expectNotFound(
      await api.put("/switchboards/999/members/users", { users: [] }),
      "Switchboard",
      { id: 999 },
    );
    await expectNotFound(
      await api.put("/switchboards/abc/members/users", { users: [] }),
      "Switchboard",
      { id: "abc" },
    );
  });

  await t.step("a member cannot be deleted; once removed it can", async () => {
    await expectConfdError(
      await api.delete(`/users/${alice.id}`),
      400,
      "Resource Error - User is associated with a Switchboard",
    );
    assert.equal((await api.put(path, { users: [] })).status, 204);
    assert.equal((await api.delete(`/users/${alice.id}`)).status, 204);
  });
});

Deno.test("/1.1/switchboards: every error", async (t) => {
  const { api } = await setupConfd();
  await (await api.post("/switchboards", { name: "Reception" })).body?.cancel();

  await t.step("unknown ids: 404", async () => {
    await api.expectUnknownId("/switchboards", "Switchboard", { id: 999 });
    await expectNotFound(await api.get("/switchboards/999/stats"), "Switchboard", { id: 999 });
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    await expectConfdError(await api.post("/switchboards", {}), 400, /field 'name'/);
    await expectConfdError(
      await api.post("/switchboards", { name: "n".repeat(129) }),
      400,
      /field 'name': Longer than maximum length 128/,
    );
    await expectConfdError(await api.put("/switchboards/1", { name: "" }), 400, /field 'name'/);
  });

  await t.step("bad stats dates: 400 naming the parameter", async () => {
    for (
      const query of ["from=2024-13-01", "from=2024-02-30", "until=yesterday", "from=2024-1-1"]
    ) {
      await expectConfdError(
        await api.get(`/switchboards/1/stats?${query}`),
        400,
        new RegExp(`^Input Error - field '${query.split("=")[0]}': Must be a date`),
      );
    }
  });
});

Deno.test("/1.1/switchboards/{id}/stats: per-day figures from the call records", async (t) => {
  const { ctx, api } = await setupConfd();
  const { store } = ctx.services;
  await (await api.post("/switchboards", { name: "Reception" })).body?.cancel();
  const stats = async (query = "") => {
    const response = await api.get(`/switchboards/1/stats${query}`);
    assert.equal(response.status, 200);
    return await response.json();
  };

  await t.step("no calls: no days", async () => {
    assert.deepEqual(await stats(), { total: 0, items: [] });
  });

  const waiting = call({ id: "late", entered_at: at(3, 9) });
  const records = [
    call({ entered_at: at(1, 10), answered_at: at(1, 10, 0, 10), ended_at: at(1, 10, 5) }),
    call({ entered_at: at(1, 11), ended_at: at(1, 11, 0, 30) }),
    call({
      entered_at: at(1, 12),
      answered_at: at(1, 12, 0, 5),
      ended_at: at(1, 12, 1),
      transferred: true,
    }),
    call({ entered_at: at(2, 23, 59, 50) }),
    call({ switchboard_id: 2, entered_at: at(1, 10), ended_at: at(1, 10, 1) }),
    waiting,
  ];
  const day1 = {
    date: "2024-01-01",
    entered: 3,
    answered: 2,
    abandoned: 1,
    transferred: 1,
    waiting_time_average: 15,
  };
  const day2 = {
    date: "2024-01-02",
    entered: 1,
    answered: 0,
    abandoned: 0,
    transferred: 0,
    waiting_time_average: null,
  };

  await t.step("calls are counted per UTC day; waiting ones have no waiting time", async () => {
    for (const record of records) await recordSwitchboardCall(store, record);
    assert.deepEqual(await stats(), {
      total: 3,
      items: [day1, day2, { ...day2, date: "2024-01-03" }],
    });
  });

  await t.step("recording a call again replaces it", async () => {
    await recordSwitchboardCall(store, { ...waiting, answered_at: at(3, 9, 0, 4) });
    const body = await stats("?from=2024-01-03");
    assert.deepEqual(body.items, [{
      ...day2,
      date: "2024-01-03",
      answered: 1,
      waiting_time_average: 4,
    }]);
  });

  await t.step("from and until bound the days, both included", async () => {
    assert.deepEqual((await stats("?until=2024-01-01")).items, [day1]);
    assert.deepEqual((await stats("?from=2024-01-02&until=2024-01-02")).items, [day2]);
    assert.equal((await stats("?from=2024-01-02")).total, 2);
    assert.equal((await stats("?from=2024-02-01")).total, 0);
  });
});

Deno.test("/1.1/switchboards: ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  await (await admin.post("/switchboards", { name: "first" })).body?.cancel();
  await expectAcls(t, ctx, [
    ["GET", "/switchboards", "confd.switchboards.read"],
    ["POST", "/switchboards", "confd.switchboards.create", { name: "second" }],
    ["GET", "/switchboards/1", "confd.switchboards.1.read"],
    ["PUT", "/switchboards/1", "confd.switchboards.1.update", {}],
    ["GET", "/switchboards/1/stats", "confd.switchboards.1.stats.read"],
    ["PUT", "/switchboards/1/members/users", "confd.switchboards.1.members.users.update", {
      users: [],
    }],
    ["DELETE", "/switchboards/1", "confd.switchboards.1.delete"],
  ]);
});

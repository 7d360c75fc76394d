import assert from "node:assert/strict";
import { transact } from "../../../lib/store/records.ts";
import { users } from "../../../lib/store/users.ts";
import {
  expectAcls,
  expectConfdError,
  expectNotFound,
  postJson,
  setupConfd,
} from "../../helpers.ts";

Deno.test("/1.1/users: create, read by id or uuid, update, delete", async (t) => {
  const { api } = await setupConfd();
  let alice: Record<string, unknown> = {};

  await t.step("POST with only a firstname: 201, Location, defaults, nulls", async () => {
    alice = await api.create("/users", { firstname: "Alice", unknown_field: 1 });
    assert.match(String(alice.uuid), /^[0-9a-f-]{36}$/);
    assert.equal(alice.firstname, "Alice");
    for (
      const field of [
        "lastname",
        "email",
        "username",
        "outgoing_caller_id",
        "mobile_phone_number",
        "language",
        "timezone",
        "description",
        "userfield",
        "line_type",
        "call_permission_password",
      ]
    ) assert.equal(alice[field], null, field);
    assert.equal(alice.caller_id, '"Alice"');
    assert.equal(alice.enabled, true);
    assert.equal(alice.supervision_enabled, true, "Wazo's default: the phone may be watched");
    assert.equal(alice.call_tranfer_enabled, true);
    assert.equal(alice.ring_seconds, 30);
    assert.equal(alice.simultaneous_calls, 5);
    assert.deepEqual(alice.lines, []);
    assert.equal(alice.voicemail, null);
    assert.ok(!("password" in alice) && !("password_hash" in alice) && !("unknown_field" in alice));
  });

  await t.step("GET by id and by uuid", async () => {
    assert.deepEqual(await (await api.get(`/users/${alice.id}`)).json(), alice);
    assert.deepEqual(await (await api.get(`/users/${alice.uuid}`)).json(), alice);
  });

  await t.step("HEAD by id or uuid: 200 without a body, 404 when unknown", async () => {
    for (const id of [alice.id, alice.uuid]) {
      const response = await api.call("HEAD", `/users/${id}`);
      assert.equal(response.status, 200);
      assert.equal(await response.text(), "");
    }
    const missing = await api.call("HEAD", "/users/999");
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  });

  await t.step(
    "the caller id is generated from the names only when absent at creation",
    async () => {
      const bob = await api.create("/users", { firstname: "Bob", lastname: "Durand" });
      assert.equal(bob.caller_id, '"Bob Durand"');
      const given = await api.create("/users", { firstname: "Carol", caller_id: '"C" <1003>' });
      assert.equal(given.caller_id, '"C" <1003>');
      assert.equal((await api.put(`/users/${bob.id}`, { firstname: "Robert" })).status, 204);
      const renamed = await (await api.get(`/users/${bob.id}`)).json();
      assert.equal(renamed.firstname, "Robert");
      assert.equal(renamed.caller_id, '"Bob Durand"');
    },
  );

  await t.step("PUT by uuid changes only what it sends", async () => {
    const response = await api.put(`/users/${alice.uuid}`, {
      lastname: "Martin",
      ring_seconds: 45,
      enabled: false,
    });
    assert.equal(response.status, 204);
    const body = await (await api.get(`/users/${alice.id}`)).json();
    assert.equal(body.lastname, "Martin");
    assert.equal(body.ring_seconds, 45);
    assert.equal(body.enabled, false);
    assert.equal(body.firstname, "Alice");
    assert.equal((await api.put(`/users/${alice.id}`, { lastname: null })).status, 204);
    assert.equal((await (await api.get(`/users/${alice.id}`)).json()).lastname, null);
  });

  await t.step("DELETE: 204, then 404", async () => {
    assert.equal((await api.delete(`/users/${alice.uuid}`)).status, 204);
    await expectNotFound(await api.get(`/users/${alice.id}`), "User", { id: Number(alice.id) });
    await expectNotFound(await api.get(`/users/${alice.uuid}`), "User", {
      uuid: String(alice.uuid),
    });
    await expectConfdError(await api.delete(`/users/${alice.id}`), 404, /not found/);
  });
});

Deno.test("/1.1/users: a user with username and password is a CTI user", async () => {
  const { ctx, api } = await setupConfd();
  const login = (password: string) =>
    postJson(ctx, "/svc/api/2.0/auth/login", { login: "dave", password });
  const dave = await api.create("/users", {
    firstname: "Dave",
    username: "dave",
    password: "first-pw",
  });
  assert.equal((await login("first-pw")).status, 200);
  assert.equal((await api.put(`/users/${dave.id}`, { password: "second-pw" })).status, 204);
  assert.equal((await login("first-pw")).status, 401);
  assert.equal((await login("second-pw")).status, 200);
  assert.equal((await api.put(`/users/${dave.id}`, { username: "david" })).status, 204);
  assert.equal((await login("second-pw")).status, 401);
  assert.equal(
    (await postJson(ctx, "/svc/api/2.0/auth/login", { login: "david", password: "second-pw" }))
      .status,
    200,
  );
});

Deno.test("/1.1/users: validation and conflicts", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await api.create("/users", { firstname: "Alice", username: "alice" });

  await t.step("each bad field answers 400 naming it", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{}, "firstname"],
      [{ firstname: "" }, "firstname"],
      [{ firstname: "x".repeat(129) }, "firstname"],
      [{ firstname: 12 }, "firstname"],
      [{ firstname: "A", lastname: 5 }, "lastname"],
      [{ firstname: "A", email: "not-an-email" }, "email"],
      [{ firstname: "A", username: "with space" }, "username"],
      [{ firstname: "A", password: "abc" }, "password"],
      [{ firstname: "A", ring_seconds: -1 }, "ring_seconds"],
      [{ firstname: "A", ring_seconds: 10801 }, "ring_seconds"],
      [{ firstname: "A", ring_seconds: "30" }, "ring_seconds"],
      [{ firstname: "A", ring_seconds: 1.5 }, "ring_seconds"],
      [{ firstname: "A", simultaneous_calls: 0 }, "simultaneous_calls"],
      [{ firstname: "A", simultaneous_calls: 21 }, "simultaneous_calls"],
      [{ firstname: "A", enabled: "true" }, "enabled"],
      [{ firstname: "A", supervision_enabled: 1 }, "supervision_enabled"],
      [{ firstname: "A", call_tranfer_enabled: null }, "call_tranfer_enabled"],
      [{ firstname: "A", language: "french" }, "language"],
      [{ firstname: "A", mobile_phone_number: "06 12" }, "mobile_phone_number"],
      [{ firstname: "A", call_permission_password: "12ab" }, "call_permission_password"],
      [{ firstname: "A", caller_id: "c".repeat(81) }, "caller_id"],
    ];
    for (const [body, field] of cases) {
      await expectConfdError(
        await api.post("/users", body),
        400,
        new RegExp(`^Input Error - field '${field}': `),
      );
    }
    await expectConfdError(
      await api.put(`/users/${alice.id}`, { firstname: "" }),
      400,
      /field 'firstname'/,
    );
    await api.expectJsonObjectBody("POST", "/users");
  });

  await t.step("a taken username: 400 Resource Error", async () => {
    await api.expectTaken(
      "/users",
      { firstname: "Other", username: "alice" },
      { firstname: "Other" },
      /^Resource Error - User already exists \('username': 'alice'\)$/,
    );
  });

  await t.step("a user still associated cannot be deleted", async () => {
    await transact(ctx.services.store, async (tx) => {
      const user = await tx.get(users, alice.id);
      tx.put(users, { ...user!, line_ids: [7] });
    });
    await expectConfdError(
      await api.delete(`/users/${alice.id}`),
      400,
      /^Resource Error - User is associated with a Line$/,
    );
    assert.equal((await api.get(`/users/${alice.id}`)).status, 200);
  });
});

Deno.test("/1.1/users lists", async (t) => {
  const { api } = await setupConfd();
  for (const [firstname, lastname] of [["Zoé", "Ärger"], ["anna", "Berg"], ["Marc", "Aubert"]]) {
    await api.create("/users", { firstname, lastname });
  }
  const list = async (query: string) => {
    const { total, values } = await api.list(`/users?${query}`, "firstname");
    return [total, values];
  };
  await t.step("search, filters, order, paging", async () => {
    assert.deepEqual(await list("search=zoe"), [1, ["Zoé"]]);
    assert.deepEqual(await list("search=ARG"), [1, ["Zoé"]]);
    assert.deepEqual(await list("order=lastname"), [3, ["Zoé", "Marc", "anna"]]);
    assert.deepEqual(await list("order=firstname&direction=desc&limit=2"), [3, ["Zoé", "Marc"]]);
    assert.deepEqual(await list("order=firstname&offset=1&limit=1"), [3, ["Marc"]]);
    assert.deepEqual(await list("lastname=Berg"), [1, ["anna"]]);
    assert.deepEqual(await list("enabled=true&order=id"), [3, ["Zoé", "anna", "Marc"]]);
  });
  await t.step("bad list parameters", async () => {
    await expectConfdError(await api.get("/users?order=password"), 400, /field 'order'/);
    await expectConfdError(await api.get("/users?limit=-2"), 400, /field 'limit'/);
  });
});

Deno.test("/1.1/users services and forwards", async (t) => {
  const { ctx, api } = await setupConfd();
  const user = await api.create("/users", { firstname: "Alice", username: "alice" });
  const path = `/users/${user.id}`;

  await t.step("services: DND and incoming call filter", async () => {
    assert.deepEqual(await (await api.get(`${path}/services`)).json(), {
      dnd: { enabled: false },
      incallfilter: { enabled: false },
    });
    assert.equal((await api.put(`${path}/services/dnd`, { enabled: true })).status, 204);
    assert.deepEqual(await (await api.get(`${path}/services/dnd`)).json(), { enabled: true });
    assert.deepEqual(await (await api.get(`/users/${user.uuid}/services/incallfilter`)).json(), {
      enabled: false,
    });
    await expectConfdError(
      await api.get(`${path}/services/vacation`),
      404,
      /Service was not found/,
    );
    await expectConfdError(
      await api.put(`${path}/services/dnd`, { enabled: "yes" }),
      400,
      /field 'enabled'/,
    );
    await expectConfdError(await api.put(`${path}/services/dnd`, {}), 400, /field 'enabled'/);
    await expectConfdError(await api.get("/users/999/services"), 404, /User was not found/);
  });

  await t.step("services: all at once, as the clients send them", async () => {
    const configUpdates = async () =>
      (await ctx.services.events.retained()).filter((event) =>
        event.message.msgType === "UserConfigUpdate" && event.message.userId === user.id
      ).length;
    const before = await configUpdates();
    const response = await api.put(`${path}/services`, {
      dnd: { enabled: false },
      incallfilter: { enabled: true },
    });
    assert.equal(response.status, 204);
    assert.deepEqual(await (await api.get(`${path}/services`)).json(), {
      dnd: { enabled: false },
      incallfilter: { enabled: true },
    });
    assert.equal(await configUpdates(), before + 1, "one UserConfigUpdate: DND changed");
    // a service left out, or sent without `enabled`, keeps its state; by uuid too
    assert.equal(
      (await api.put(`/users/${user.uuid}/services`, { dnd: { enabled: true } })).status,
      204,
    );
    assert.equal((await api.put(`${path}/services`, { incallfilter: {} })).status, 204);
    assert.equal((await api.put(`${path}/services`, {})).status, 204);
    assert.deepEqual(await (await api.get(`${path}/services`)).json(), {
      dnd: { enabled: true },
      incallfilter: { enabled: true },
    });
  });

  await t.step("services: every error of the whole-body PUT", async () => {
    await api.expectInvalid("PUT", `${path}/services`, [
      [{ dnd: { enabled: "true" } }, /^Input Error - field 'dnd\.enabled': /],
      [{ dnd: true }, /^Input Error - field 'dnd': /],
      [{ dnd: { enabled: true }, incallfilter: { enabled: 1 } }, /field 'incallfilter\.enabled'/],
    ]);
    await api.expectJsonObjectBody("PUT", `${path}/services`);
    await expectNotFound(
      await api.put("/users/999/services", { dnd: { enabled: true } }),
      "User",
      { id: 999 },
    );
    // a refused body changed nothing
    assert.deepEqual(await (await api.get(`${path}/services`)).json(), {
      dnd: { enabled: true },
      incallfilter: { enabled: true },
    });
  });

  await t.step("forwards: one at a time and all at once", async () => {
    const off = { enabled: false, destination: null };
    assert.deepEqual(await (await api.get(`${path}/forwards`)).json(), {
      busy: off,
      noanswer: off,
      unconditional: off,
    });
    assert.equal(
      (await api.put(`${path}/forwards/busy`, { enabled: true, destination: "1002" })).status,
      204,
    );
    assert.deepEqual(await (await api.get(`${path}/forwards/busy`)).json(), {
      enabled: true,
      destination: "1002",
    });
    assert.equal(
      (await api.put(`${path}/forwards`, {
        noanswer: { enabled: true, destination: "0612345678" },
        busy: { enabled: false },
      })).status,
      204,
    );
    const all = await (await api.get(`${path}/forwards`)).json();
    assert.deepEqual(all.busy, { enabled: false, destination: "1002" });
    assert.deepEqual(all.noanswer, { enabled: true, destination: "0612345678" });
    assert.deepEqual(all.unconditional, off);
  });

  await t.step("forward errors", async () => {
    await expectConfdError(
      await api.put(`${path}/forwards/unconditional`, { enabled: true }),
      400,
      /field 'unconditional.destination': An enabled forward needs a destination/,
    );
    await expectConfdError(
      await api.put(`${path}/forwards/busy`, { enabled: true, destination: "" }),
      400,
      /destination/,
    );
    await expectConfdError(
      await api.put(`${path}/forwards/busy`, { enabled: "true" }),
      400,
      /field 'enabled'/,
    );
    await expectConfdError(
      await api.get(`${path}/forwards/sometimes`),
      404,
      /Forward was not found/,
    );
    await expectConfdError(
      await api.put(`${path}/forwards`, { busy: { enabled: true, destination: null } }),
      400,
      /busy.destination/,
    );
  });
});

Deno.test("/1.1/users: every route needs its ACL", async (t) => {
  const { ctx, api } = await setupConfd();
  const { id, uuid } = await api.create("/users", { firstname: "Alice" });
  await expectAcls(t, ctx, [
    ["GET", "/users", "confd.users.read"],
    ["POST", "/users", "confd.users.create", { firstname: "Bob" }],
    ["GET", `/users/${id}`, `confd.users.${id}.read`],
    ["GET", `/users/${uuid}`, `confd.users.${uuid}.read`], // a uuid fills the template too
    ["PUT", `/users/${id}`, `confd.users.${id}.update`, {}],
    ["GET", `/users/${id}/services`, `confd.users.${id}.services.read`],
    ["GET", `/users/${id}/services/dnd`, `confd.users.${id}.services.dnd.read`],
    ["PUT", `/users/${id}/services/dnd`, `confd.users.${id}.services.dnd.update`, {
      enabled: true,
    }],
    ["PUT", `/users/${id}/services`, `confd.users.${id}.services.update`, {
      incallfilter: { enabled: true },
    }],
    ["GET", `/users/${id}/forwards`, `confd.users.${id}.forwards.read`],
    ["PUT", `/users/${id}/forwards`, `confd.users.${id}.forwards.update`, {}],
    ["GET", `/users/${id}/forwards/busy`, `confd.users.${id}.forwards.busy.read`],
    [
      "PUT",
      `/users/${id}/forwards/busy`,
      `confd.users.${id}.forwards.busy.update`,
      { enabled: false },
    ],
    ["DELETE", `/users/${id}`, `confd.users.${id}.delete`],
  ]);
});

Deno.test("GET /1.1/users: a page asked again is the same until a user changes", async () => {
  const { api } = await setupConfd();
  const alice = await api.create("/users", { firstname: "Alice" });
  await api.create("/users", { firstname: "Bob" });
  const page = async (query: string) => {
    const response = await api.get(`/users${query}`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    return { body: await response.json(), deprecation: response.headers.get("deprecation") };
  };
  const first = await page("?limit=1");
  assert.deepEqual(first.body.items.map((user: { firstname: string }) => user.firstname), [
    "Alice",
  ]);
  assert.deepEqual(await page("?limit=1"), first, "the kept page");
  // a skip-only query keeps its Deprecation header when answered again
  for (let n = 0; n < 2; n++) {
    const skipped = await page("?limit=1&skip=1");
    assert.equal(skipped.deprecation, "true");
    assert.equal(skipped.body.items[0].firstname, "Bob");
  }
  assert.equal((await api.put(`/users/${alice.id}`, { firstname: "Alicia" })).status, 204);
  const after = await page("?limit=1");
  assert.equal(after.body.items[0].firstname, "Alicia", "a write gives a new page");
  assert.equal(after.body.total, 2);
});

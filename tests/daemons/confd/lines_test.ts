import assert from "node:assert/strict";
import { createUser } from "../../../lib/store/users.ts";
import {
  type AclRoute,
  expectAcls,
  expectConfdError,
  expectNotFound,
  setupConfd,
  type TestContext,
} from "../../helpers.ts";

const json = async (response: Response | Promise<Response>) => await (await response).json();

/** A user straight in the store (no password, so no hashing cost). */
const user = (ctx: TestContext, firstname: string) =>
  createUser(ctx.services.store, { firstname, lastname: "Doe" });

Deno.test("/1.1/lines: create, get, update, delete", async (t) => {
  const { api } = await setupConfd();
  let line: Record<string, unknown> = {};

  await t.step(
    "POST generates name and provisioning code; the old names echo the new",
    async () => {
      line = await api.create("/lines", {
        context: "default",
        name: "ignored",
        protocol: "sip",
        device_id: "ignored",
      });
      assert.match(String(line.name), /^[a-z0-9]{8}$/);
      assert.match(String(line.provisioning_code), /^\d{6}$/);
      assert.deepEqual(line, {
        id: 1,
        name: line.name,
        protocol: null,
        context: "default",
        position: 1,
        device_slot: 1,
        provisioning_code: line.provisioning_code,
        provisioning_extension: line.provisioning_code,
        caller_id_name: null,
        caller_id_num: null,
        registrar: "default",
        device_id: null,
        endpoint_sip: null,
        endpoint_sccp: null,
        endpoint_custom: null,
        extensions: [],
        users: [],
      });
    },
  );

  await t.step("POST with every editable field", async () => {
    const body = await api.create("/lines", {
      context: "from-extern",
      position: 3,
      provisioning_code: "123456",
      caller_id_name: "Reception",
      caller_id_num: "+3310",
    });
    assert.equal(body.position, 3);
    assert.equal(body.device_slot, 3);
    assert.equal(body.provisioning_code, "123456");
    assert.equal(body.provisioning_extension, "123456");
    assert.equal(body.caller_id_name, "Reception");
    assert.equal(body.caller_id_num, "+3310");
  });

  await t.step("GET by id and lists with filters, search and order", async () => {
    assert.deepEqual(await json(api.get("/lines/1")), line);
    assert.equal((await api.list("/lines")).total, 2);
    assert.deepEqual((await api.list("/lines?context=from-extern", "id")).values, [2]);
    assert.equal((await api.list("/lines?search=recep")).total, 1);
    assert.equal((await api.list("/lines?provisioning_extension=123456")).total, 1);
    const ordered = await api.list("/lines?order=position&direction=desc", "id");
    assert.deepEqual(ordered.values, [2, 1]);
  });

  await t.step("PUT changes editable fields and ignores read-only ones", async () => {
    const response = await api.put("/lines/1", {
      context: "to-extern",
      position: 2,
      provisioning_code: "654321",
      caller_id_name: "Desk",
      name: "other",
      protocol: "sccp",
      device_slot: 9,
      provisioning_extension: "111111",
      device_id: "abc",
      id: 5,
    });
    assert.equal(response.status, 204);
    const body = await json(api.get("/lines/1"));
    assert.deepEqual(body, {
      ...line,
      context: "to-extern",
      position: 2,
      device_slot: 2,
      provisioning_code: "654321",
      provisioning_extension: "654321",
      caller_id_name: "Desk",
    });
    assert.equal((await api.put("/lines/1", { caller_id_name: null })).status, 204);
    assert.equal((await json(api.get("/lines/1"))).caller_id_name, null);
  });

  await t.step("DELETE answers 204, then 404", async () => {
    await api.expectDeleted("/lines", "Line", { id: 1 });
  });
});

Deno.test("/1.1/lines: every error", async (t) => {
  const { api } = await setupConfd();
  const line = await api.create("/lines", { context: "default", provisioning_code: "111111" });

  await t.step("unknown or malformed ids: 404", async () => {
    await api.expectUnknownId("/lines", "Line", { id: 99 });
    await api.expectUnknownId("/lines", "Line", { id: "abc" });
    await expectConfdError(await api.get("/lines/99/users"), 404, /Line was not found/);
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /^Input Error - field 'context': /],
      [{ context: "" }, /field 'context'/],
      [{ context: 5 }, /field 'context'/],
      [
        { context: "nowhere" },
        /^Input Error - field 'context': Context was not found \('name': 'nowhere'\)$/,
      ],
      [{ context: "default", position: 0 }, /field 'position'/],
      [{ context: "default", position: 1.5 }, /field 'position'/],
      [{ context: "default", position: "2" }, /field 'position'/],
      [{ context: "default", provisioning_code: "12345" }, /field 'provisioning_code'/],
      [{ context: "default", provisioning_code: "12345a" }, /field 'provisioning_code'/],
      [{ context: "default", provisioning_code: 123456 }, /field 'provisioning_code'/],
      [{ context: "default", caller_id_name: "n".repeat(81) }, /field 'caller_id_name'/],
      [{ context: "default", caller_id_num: "12a" }, /field 'caller_id_num'/],
    ];
    await api.expectInvalid("POST", "/lines", cases);
    const edits = cases.filter(([body]) => Object.keys(body).length > 1);
    await api.expectInvalid("PUT", `/lines/${line.id}`, edits);
    await expectConfdError(
      await api.put(`/lines/${line.id}`, { context: "nowhere" }),
      400,
      /field 'context': Context was not found/,
    );
    await api.expectJsonObjectBody("POST", "/lines");
  });

  await t.step("registrar: only the default one, or null meaning it", async () => {
    const message = /^Input Error - field 'registrar': Registrar was not found \('id': 'other'\)$/;
    await expectConfdError(
      await api.post("/lines", { context: "default", registrar: "other" }),
      400,
      message,
    );
    await expectConfdError(
      await api.put(`/lines/${line.id}`, { registrar: "other" }),
      400,
      message,
    );
    await expectConfdError(
      await api.put(`/lines/${line.id}`, { registrar: 5 }),
      400,
      /^Input Error - field 'registrar': /,
    );
    await expectConfdError(
      await api.put(`/lines/${line.id}`, { registrar: "r".repeat(129) }),
      400,
      /field 'registrar': Longer than maximum length 128/,
    );
    for (const registrar of ["default", null]) {
      const created = await api.create("/lines", { context: "default", registrar });
      assert.equal(created.registrar, "default");
      assert.equal((await api.put(`/lines/${created.id}`, { registrar })).status, 204);
      assert.equal((await json(api.get(`/lines/${created.id}`))).registrar, "default");
    }
    // every line view shows it, and lists filter and order on it
    const all = await api.list("/lines?registrar=default&order=registrar", "registrar");
    assert.ok(all.total >= 3 && all.values.every((value) => value === "default"));
  });

  await t.step("a taken provisioning code: 400 Resource Error", async () => {
    await api.expectTaken(
      "/lines",
      { context: "default", provisioning_code: "111111" },
      { context: "default" },
      /^Resource Error - Line already exists \('provisioning_code': '111111'\)$/,
    );
    assert.equal((await api.put(`/lines/${line.id}`, { provisioning_code: "111111" })).status, 204);
  });
});

Deno.test("/1.1/lines/{id}/endpoints: associate, read, dissociate", async (t) => {
  const { api } = await setupConfd();
  const line = await api.create("/lines", { context: "default" });
  const second = await api.create("/lines", { context: "default" });
  const sip = await api.create("/endpoints/sip", { username: "alice" });
  const sccp = await api.create("/endpoints/sccp", {});
  const custom = await api.create("/endpoints/custom", { interface: "dahdi/i1/1" });
  const endpoints = { sip, sccp, custom };
  const labels = { sip: "SIPEndpoint", sccp: "SCCPEndpoint", custom: "CustomEndpoint" };

  for (const type of ["sip", "sccp", "custom"] as const) {
    const endpoint = endpoints[type];
    const label = labels[type];
    const path = `/lines/${line.id}/endpoints/${type}`;

    await t.step(`${type}: no association yet`, async () => {
      await expectConfdError(
        await api.get(path),
        404,
        new RegExp(`^Resource Not Found - ${label} was not found \\('line_id': ${line.id}\\)$`),
      );
      assert.deepEqual(await json(api.get(`/endpoints/${type}/${endpoint.id}/lines`)), {
        total: 0,
        items: [],
      });
    });

    await t.step(`${type}: PUT associates; both sides show it`, async () => {
      assert.equal((await api.put(`${path}/${endpoint.id}`)).status, 204);
      const body = await json(api.get(`/lines/${line.id}`));
      assert.equal(body.protocol, type);
      assert.deepEqual(body[`endpoint_${type}`], { id: endpoint.id });
      const association = await json(api.get(path));
      assert.deepEqual(association, {
        line_id: line.id,
        endpoint_id: endpoint.id,
        endpoint: { ...endpoint, line: { id: line.id } },
      });
      const lines = await json(api.get(`/endpoints/${type}/${endpoint.id}/lines`));
      assert.equal(lines.total, 1);
      assert.deepEqual(lines.items[0], body);
    });

    await t.step(`${type}: errors`, async () => {
      await expectConfdError(
        await api.put(`/lines/99/endpoints/${type}/${endpoint.id}`),
        404,
        /Line/,
      );
      await expectConfdError(
        await api.put(`${path}/99`),
        404,
        new RegExp(`^Resource Not Found - ${label} was not found \\('id': 99\\)$`),
      );
      await expectConfdError(
        await api.put(`${path}/${endpoint.id}`),
        400,
        new RegExp(`^Resource Error - Line is already associated with a ${label}`),
      );
      await expectConfdError(
        await api.put(`/lines/${second.id}/endpoints/${type}/${endpoint.id}`),
        400,
        new RegExp(`^Resource Error - ${label} is already associated with a Line`),
      );
      await expectConfdError(
        await api.delete(`/lines/${second.id}/endpoints/${type}/${endpoint.id}`),
        400,
        new RegExp(`^Resource Error - Line is not associated with the ${label}`),
      );
      await expectConfdError(
        await api.delete(`/lines/${line.id}`),
        400,
        new RegExp(`^Resource Error - Line is associated with a ${label}$`),
      );
      await expectConfdError(await api.get(`/endpoints/${type}/99/lines`), 404, /not found/);
      await expectConfdError(await api.get(`/lines/99/endpoints/${type}`), 404, /Line/);
    });

    await t.step(`${type}: DELETE dissociates; protocol back to null`, async () => {
      assert.equal((await api.delete(`${path}/${endpoint.id}`)).status, 204);
      const body = await json(api.get(`/lines/${line.id}`));
      assert.equal(body.protocol, null);
      assert.equal(body[`endpoint_${type}`], null);
      assert.equal((await json(api.get(`/endpoints/${type}/${endpoint.id}`))).line, null);
      await expectConfdError(await api.delete(`${path}/${endpoint.id}`), 400, /not associated/);
    });
  }

  await t.step("a line with an endpoint refuses an endpoint of another type", async () => {
    assert.equal((await api.put(`/lines/${line.id}/endpoints/sip/${sip.id}`)).status, 204);
    await expectConfdError(
      await api.put(`/lines/${line.id}/endpoints/sccp/${sccp.id}`),
      400,
      /^Resource Error - Line is already associated with a SIPEndpoint/,
    );
    await expectConfdError(
      await api.delete(`/lines/${line.id}/endpoints/sccp/${sccp.id}`),
      400,
      /not associated/,
    );
  });
});

Deno.test("/1.1/lines/{id}/extensions: associate and dissociate", async (t) => {
  const { ctx, api } = await setupConfd();
  const line = await api.create("/lines", { context: "default" });
  const second = await api.create("/lines", { context: "default" });
  const inside = await api.create("/extensions", { exten: "1001", context: "default" });
  const outside = await api.create("/extensions", { exten: "2001", context: "default" });
  const alice = await user(ctx, "Alice");

  await t.step("PUT associates; the line lists it, the extension points back", async () => {
    assert.equal((await api.put(`/lines/${line.id}/extensions/${inside.id}`)).status, 204);
    const body = await json(api.get(`/lines/${line.id}`));
    assert.deepEqual(body.extensions, [{ id: inside.id, exten: "1001", context: "default" }]);
    assert.deepEqual((await json(api.get(`/extensions/${inside.id}`))).line, { id: line.id });
  });

  await t.step("an extension is on one line only (14.14)", async () => {
    await expectConfdError(
      await api.put(`/lines/${second.id}/extensions/${inside.id}`),
      400,
      /^Resource Error - Extension is already associated with a Line/,
    );
    await expectConfdError(
      await api.put(`/lines/${line.id}/extensions/${inside.id}`),
      400,
      /already associated/,
    );
  });

  await t.step("unknown line or extension: 404; not associated: 400", async () => {
    await expectConfdError(await api.put(`/lines/99/extensions/${inside.id}`), 404, /Line/);
    await expectNotFound(await api.put(`/lines/${line.id}/extensions/99`), "Extension", { id: 99 });
    await expectConfdError(
      await api.delete(`/lines/${second.id}/extensions/${inside.id}`),
      400,
      /^Resource Error - Line is not associated with the Extension/,
    );
    await expectConfdError(await api.delete(`/lines/${line.id}/extensions/99`), 404, /Extension/);
  });

  await t.step("a line with extensions cannot be deleted", async () => {
    await expectConfdError(
      await api.delete(`/lines/${line.id}`),
      400,
      /^Resource Error - Line is associated with a Extension$/,
    );
  });

  await t.step("a line with users takes only extensions in the user ranges", async () => {
    assert.equal((await api.put(`/users/${alice.id}/lines/${line.id}`)).status, 204);
    await expectConfdError(
      await api.put(`/lines/${line.id}/extensions/${outside.id}`),
      400,
      new RegExp(
        "^Resource Error - Extension is outside the user ranges of its context " +
          "\\('exten': '2001', 'context': 'default'\\)$",
      ),
    );
    assert.equal((await json(api.get(`/extensions/${outside.id}`))).line, null);
    // without users, the line takes it; then a user cannot join that line
    assert.equal((await api.put(`/lines/${second.id}/extensions/${outside.id}`)).status, 204);
    await expectConfdError(
      await api.put(`/users/${alice.id}/lines/${second.id}`),
      400,
      /outside the user ranges/,
    );
  });

  await t.step("DELETE dissociates", async () => {
    assert.equal((await api.delete(`/lines/${line.id}/extensions/${inside.id}`)).status, 204);
    assert.deepEqual((await json(api.get(`/lines/${line.id}`))).extensions, []);
    assert.equal((await json(api.get(`/extensions/${inside.id}`))).line, null);
  });
});

Deno.test("/1.1/users/{id}/lines: associate, list, main line, dissociate", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await user(ctx, "Alice");
  const bob = await user(ctx, "Bob");
  const first = await api.create("/lines", { context: "default" });
  const second = await api.create("/lines", { context: "default" });
  const summary = (u: typeof alice) => ({
    id: u.id,
    uuid: u.uuid,
    firstname: u.firstname,
    lastname: u.lastname,
  });

  await t.step("PUT by id or uuid; the first line is the main line", async () => {
    assert.equal((await api.put(`/users/${alice.id}/lines/${first.id}`)).status, 204);
    assert.equal((await api.put(`/users/${alice.uuid}/lines/${second.id}`)).status, 204);
    assert.equal((await api.put(`/users/${bob.id}/lines/${first.id}`)).status, 204);
    const lines = await json(api.get(`/users/${alice.uuid}/lines`));
    assert.equal(lines.total, 2);
    assert.deepEqual(
      lines.items.map((l: { id: number; main_line: boolean }) => [l.id, l.main_line]),
      [[first.id, true], [second.id, false]],
    );
    assert.deepEqual(lines.items[0].users, [summary(alice), summary(bob)]);
    const mainOnly = await api.list(`/users/${alice.id}/lines?main_line=true`, "id");
    assert.deepEqual(mainOnly.values, [first.id]);
    assert.deepEqual((await json(api.get(`/users/${alice.id}`))).lines, [
      { id: first.id },
      { id: second.id },
    ]);
  });

  await t.step("GET /lines/{id}/users: the first user is the main user", async () => {
    const users = await json(api.get(`/lines/${first.id}/users`));
    assert.deepEqual(users, {
      total: 2,
      items: [{ ...summary(alice), main_user: true }, { ...summary(bob), main_user: false }],
    });
    assert.equal((await json(api.get(`/lines/${first.id}/users?search=bob`))).total, 1);
  });

  await t.step("errors: unknown user or line 404, twice 400, not associated 400", async () => {
    await expectConfdError(
      await api.put(`/users/99/lines/${first.id}`),
      404,
      /^Resource Not Found - User was not found/,
    );
    await expectConfdError(
      await api.put(`/users/${alice.id}/lines/99`),
      404,
      /^Resource Not Found - Line was not found/,
    );
    await expectConfdError(
      await api.put(`/users/${alice.id}/lines/${first.id}`),
      400,
      /^Resource Error - User is already associated with a Line/,
    );
    await expectConfdError(
      await api.delete(`/users/${bob.id}/lines/${second.id}`),
      400,
      /^Resource Error - User is not associated with the Line/,
    );
    await expectConfdError(await api.get("/users/99/lines"), 404, /User was not found/);
    await expectConfdError(
      await api.delete(`/lines/${first.id}`),
      400,
      /^Resource Error - Line is associated with a User$/,
    );
  });

  await t.step("DELETE dissociates; the next line becomes the main line", async () => {
    assert.equal((await api.delete(`/users/${alice.id}/lines/${first.id}`)).status, 204);
    const lines = await json(api.get(`/users/${alice.id}/lines`));
    assert.deepEqual(
      lines.items.map((l: { id: number; main_line: boolean }) => [l.id, l.main_line]),
      [[second.id, true]],
    );
    const users = await json(api.get(`/lines/${first.id}/users`));
    assert.deepEqual(users.items, [{ ...summary(bob), main_user: true }]);
  });
});

Deno.test("/1.1/users/{uuid}/lines/main/associated/endpoints/sip", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await user(ctx, "Alice");
  const path = `/users/${alice.uuid}/lines/main/associated/endpoints/sip`;
  const line = await api.create("/lines", { context: "default" });

  await t.step("404 for an unknown user, no main line, or no SIP endpoint", async () => {
    await expectConfdError(
      await api.get(`/users/${crypto.randomUUID()}/lines/main/associated/endpoints/sip`),
      404,
      /User was not found/,
    );
    await expectConfdError(await api.get(path), 404, /^Resource Not Found - Line was not found/);
    assert.equal((await api.put(`/users/${alice.id}/lines/${line.id}`)).status, 204);
    await expectConfdError(
      await api.get(path),
      404,
      /^Resource Not Found - SIPEndpoint was not found/,
    );
    const sccp = await api.create("/endpoints/sccp", {});
    assert.equal((await api.put(`/lines/${line.id}/endpoints/sccp/${sccp.id}`)).status, 204);
    await expectConfdError(await api.get(path), 404, /SIPEndpoint was not found/);
    assert.equal((await api.delete(`/lines/${line.id}/endpoints/sccp/${sccp.id}`)).status, 204);
  });

  await t.step("the SIP endpoint of the main line", async () => {
    const sip = await api.create("/endpoints/sip", { username: "alice" });
    assert.equal((await api.put(`/lines/${line.id}/endpoints/sip/${sip.id}`)).status, 204);
    const response = await api.get(path);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { ...sip, line: { id: line.id } });
    assert.equal(
      (await api.get(`/users/${alice.id}/lines/main/associated/endpoints/sip`)).status,
      200,
    );
  });
});

Deno.test("PUT /1.1/users/{id}/lines replaces the user's lines, all or nothing", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await user(ctx, "Alice");
  const bob = await user(ctx, "Bob");
  const [a, b, c] = [
    await api.create("/lines", { context: "default" }),
    await api.create("/lines", { context: "default" }),
    await api.create("/lines", { context: "default" }),
  ];
  const put = (who: string | number, ids: number[]) =>
    api.put(`/users/${who}/lines`, { lines: ids.map((id) => ({ id })) });
  const linesOf = async (who: number) =>
    (await json(api.get(`/users/${who}/lines`))).items.map((
      line: { id: number; main_line: boolean },
    ) => [line.id, line.main_line]);
  const usersOf = async (line: number) =>
    (await json(api.get(`/lines/${line}/users`))).items.map((u: { id: number }) => u.id);

  await t.step("the lines of the body, in its order: the first is the main line", async () => {
    assert.equal((await put(alice.id, [b.id, a.id])).status, 204);
    assert.deepEqual(await linesOf(alice.id), [[b.id, true], [a.id, false]]);
    assert.deepEqual((await json(api.get(`/users/${alice.id}`))).lines, [
      { id: b.id },
      { id: a.id },
    ]);
    assert.deepEqual(await usersOf(a.id), [alice.id]);
    assert.deepEqual(await usersOf(b.id), [alice.id]);
  });

  await t.step("lines left out lose the user; a joined line keeps its main user", async () => {
    assert.equal((await put(bob.uuid, [a.id])).status, 204);
    assert.equal((await put(alice.uuid, [c.id, a.id])).status, 204);
    assert.deepEqual(await linesOf(alice.id), [[c.id, true], [a.id, false]]);
    assert.deepEqual(await usersOf(b.id), []);
    assert.deepEqual(await usersOf(a.id), [alice.id, bob.id]);
    assert.deepEqual(await usersOf(c.id), [alice.id]);
  });

  await t.step("an empty list dissociates every line", async () => {
    assert.equal((await put(bob.id, [])).status, 204);
    assert.deepEqual(await linesOf(bob.id), []);
    assert.deepEqual(await usersOf(a.id), [alice.id]);
  });

  await t.step("a refused body changes nothing", async () => {
    const before = {
      alice: await linesOf(alice.id),
      a: await usersOf(a.id),
      b: await usersOf(b.id),
    };
    await expectConfdError(
      await put(alice.id, [b.id, 99]),
      400,
      /^Input Error - field 'lines': Line was not found \('id': 99\)$/,
    );
    await expectConfdError(
      await put(alice.id, [b.id, a.id, b.id]),
      400,
      /^Resource Error - Operation not permitted\. Cannot associate same line more than once$/,
    );
    const outside = await api.create("/extensions", { exten: "2001", context: "default" });
    assert.equal((await api.put(`/lines/${b.id}/extensions/${outside.id}`)).status, 204);
    await expectConfdError(await put(alice.id, [a.id, b.id]), 400, /outside the user ranges/);
    assert.deepEqual(
      { alice: await linesOf(alice.id), a: await usersOf(a.id), b: await usersOf(b.id) },
      before,
    );
  });

  await t.step("bad bodies: 400 naming the field; unknown user: 404", async () => {
    await api.expectInvalid("PUT", `/users/${alice.id}/lines`, [
      [{}, /^Input Error - field 'lines': /],
      [{ lines: { id: a.id } }, /^Input Error - field 'lines': /],
      [{ lines: [a.id] }, /^Input Error - field 'lines\.0': /],
      [{ lines: [{}] }, /^Input Error - field 'lines\.0\.id': /],
      [{ lines: [{ id: String(a.id) }] }, /^Input Error - field 'lines\.0\.id': /],
      [{ lines: [{ id: 1.5 }] }, /^Input Error - field 'lines\.0\.id': Not a valid integer/],
    ]);
    await api.expectJsonObjectBody("PUT", `/users/${alice.id}/lines`);
    await expectNotFound(await put(99, [a.id]), "User", { id: 99 });
    const uuid = crypto.randomUUID();
    await expectNotFound(await put(uuid, [a.id]), "User", { uuid });
  });
});

Deno.test("/1.1/users/{id}/lines/{line_id}/associated/endpoints/sip", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await user(ctx, "Alice");
  const bob = await user(ctx, "Bob");
  const main = await api.create("/lines", { context: "default" });
  const second = await api.create("/lines", { context: "default" });
  const foreign = await api.create("/lines", { context: "default" });
  const sip = await api.create("/endpoints/sip", { username: "alice2", secret: "s3cret" });
  for (const line of [main, second]) {
    assert.equal((await api.put(`/users/${alice.id}/lines/${line.id}`)).status, 204);
  }
  assert.equal((await api.put(`/users/${bob.id}/lines/${foreign.id}`)).status, 204);
  const path = (who: string | number, line: string | number) =>
    `/users/${who}/lines/${line}/associated/endpoints/sip`;

  await t.step("404s: unknown user or line, a line not the user's, no SIP endpoint", async () => {
    await expectNotFound(await api.get(path(99, second.id)), "User", { id: 99 });
    const uuid = crypto.randomUUID();
    await expectNotFound(await api.get(path(uuid, second.id)), "User", { uuid });
    await expectNotFound(await api.get(path(alice.uuid, 99)), "Line", { id: 99 });
    await expectNotFound(await api.get(path(alice.uuid, "abc")), "Line", { line_id: "abc" });
    await expectConfdError(
      await api.get(path(alice.uuid, foreign.id)),
      404,
      `Resource Not Found - UserLine was not found ('user_id': ${alice.id}, 'line_id': ${foreign.id})`,
    );
    await expectNotFound(await api.get(path(alice.uuid, second.id)), "SIPEndpoint", {
      line_id: second.id,
    });
    const sccp = await api.create("/endpoints/sccp", {});
    assert.equal((await api.put(`/lines/${second.id}/endpoints/sccp/${sccp.id}`)).status, 204);
    await expectNotFound(await api.get(path(alice.uuid, second.id)), "SIPEndpoint", {
      line_id: second.id,
    });
    assert.equal((await api.delete(`/lines/${second.id}/endpoints/sccp/${sccp.id}`)).status, 204);
  });

  await t.step(
    "the SIP endpoint of that line, by user uuid or id, any line of the user",
    async () => {
      assert.equal((await api.put(`/lines/${second.id}/endpoints/sip/${sip.id}`)).status, 204);
      for (const who of [alice.uuid, alice.id]) {
        const response = await api.get(path(who, second.id), { Accept: "application/json" });
        assert.equal(response.status, 200);
        const body = await response.json();
        assert.deepEqual(body, { ...sip, line: { id: second.id } });
        assert.equal(body.username, "alice2");
        assert.equal(body.secret, "s3cret");
      }
      // `main` still names the main line, which has no SIP endpoint
      await expectNotFound(await api.get(path(alice.uuid, "main")), "SIPEndpoint", {
        line_id: main.id,
      });
    },
  );
});

Deno.test("/1.1/lines_sip (deprecated): lines with a SIP endpoint", async () => {
  const { api } = await setupConfd();
  const line = await api.create("/lines", {
    context: "default",
    provisioning_code: "123456",
    caller_id_name: "Alice",
    caller_id_num: "1001",
  });
  await api.create("/lines", { context: "default" });
  const sip = await api.create("/endpoints/sip", { username: "alice", secret: "pw" });
  assert.equal((await api.put(`/lines/${line.id}/endpoints/sip/${sip.id}`)).status, 204);
  const response = await api.get("/lines_sip");
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("deprecation"), "true");
  assert.deepEqual(await response.json(), {
    total: 1,
    items: [{
      id: line.id,
      username: "alice",
      secret: "pw",
      context: "default",
      provisioning_extension: "123456",
      device_slot: 1,
      callerid: '"Alice" <1001>',
    }],
  });
  assert.equal((await json(api.get("/lines_sip?search=nobody"))).total, 0);
});

Deno.test("/1.1/lines: tokens and ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  const alice = await user(ctx, "Alice");
  const extension = await admin.create("/extensions", { exten: "1001", context: "default" });
  const types = ["sip", "sccp", "custom"] as const;
  const bodies = { sip: {}, sccp: {}, custom: { interface: "x/1" } };
  const pairs = [];
  for (const type of types) {
    const line = await admin.create("/lines", { context: "default" });
    pairs.push({
      type,
      l: line.id,
      e: (await admin.create(`/endpoints/${type}`, bodies[type])).id,
    });
  }
  const l = pairs[0]!.l;
  const u = alice.id;
  await expectAcls(t, ctx, [
    ["GET", "/lines", "confd.lines.read"],
    ["POST", "/lines", "confd.lines.create", { context: "default" }],
    ["GET", "/lines_sip", "confd.lines_sip.read"],
    ["GET", `/lines/${l}`, `confd.lines.${l}.read`],
    ["PUT", `/lines/${l}`, `confd.lines.${l}.update`, { context: "default" }],
    ["GET", `/lines/${l}/users`, `confd.lines.${l}.users.read`],
    [
      "PUT",
      `/lines/${l}/extensions/${extension.id}`,
      `confd.lines.${l}.extensions.${extension.id}.update`,
    ],
    [
      "DELETE",
      `/lines/${l}/extensions/${extension.id}`,
      `confd.lines.${l}.extensions.${extension.id}.delete`,
    ],
    ["PUT", `/users/${u}/lines/${l}`, `confd.users.${u}.lines.${l}.update`],
    ["GET", `/users/${u}/lines`, `confd.users.${u}.lines.read`],
    ...pairs.flatMap(({ type, l, e }): AclRoute[] => [
      [
        "PUT",
        `/lines/${l}/endpoints/${type}/${e}`,
        `confd.lines.${l}.endpoints.${type}.${e}.update`,
      ],
      ["GET", `/lines/${l}/endpoints/${type}`, `confd.lines.${l}.endpoints.${type}.read`],
      ["GET", `/endpoints/${type}/${e}/lines`, `confd.endpoints.${type}.${e}.lines.read`],
    ]),
    [
      "GET",
      `/users/${alice.uuid}/lines/main/associated/endpoints/sip`,
      `confd.users.${alice.uuid}.lines.main.associated.endpoints.sip.read`,
    ],
    [
      "GET",
      `/users/${alice.uuid}/lines/${l}/associated/endpoints/sip`,
      `confd.users.${alice.uuid}.lines.${l}.associated.endpoints.sip.read`,
    ],
    ["PUT", `/users/${u}/lines`, `confd.users.${u}.lines.update`, { lines: [{ id: l }] }],
    ...pairs.map(({ type, l, e }): AclRoute => [
      "DELETE",
      `/lines/${l}/endpoints/${type}/${e}`,
      `confd.lines.${l}.endpoints.${type}.${e}.delete`,
    ]),
    ["DELETE", `/users/${u}/lines/${l}`, `confd.users.${u}.lines.${l}.delete`],
    ["DELETE", `/lines/${l}`, `confd.lines.${l}.delete`],
  ]);
});

import assert from "node:assert/strict";
import { getUser } from "../../../lib/store/users.ts";
import {
  ctiUser,
  expectAcls,
  expectConfdError,
  expectNotFound,
  setupConfd,
} from "../../helpers.ts";

const MAILBOX = { name: "Alice", number: "1001", context: "default" };

Deno.test("/1.1/voicemails: create, list, get, update, delete", async (t) => {
  const { api } = await setupConfd();
  let id = 0;

  await t.step("POST answers 201 with Location and the voicemail with its defaults", async () => {
    const body = await api.create("/voicemails", { ...MAILBOX, users: [{ id: 3 }] });
    id = body.id;
    assert.deepEqual(body, {
      id,
      ...MAILBOX,
      password: null,
      email: null,
      pager: null,
      language: null,
      timezone: null,
      max_messages: null,
      attach_audio: false,
      delete_messages: false,
      ask_password: true,
      enabled: true,
      options: [],
      users: [],
    });
  });

  await t.step("POST takes every field", async () => {
    const full = {
      name: "Bob",
      number: "1002",
      context: "default",
      password: "0042",
      email: "bob@example.com",
      pager: "bob-pager@example.com",
      language: "fr_FR",
      timezone: "eu-fr",
      max_messages: 50,
      attach_audio: true,
      delete_messages: true,
      ask_password: false,
      enabled: false,
      options: [["saycid", "yes"]],
    };
    const body = await api.create("/voicemails", full);
    assert.deepEqual(body, { id: body.id, ...full, users: [] });
  });

  await t.step("GET lists with filters and search", async () => {
    assert.equal((await api.list("/voicemails")).total, 2);
    assert.deepEqual((await api.list("/voicemails?search=BOB", "number")).values, ["1002"]);
    assert.deepEqual((await api.list("/voicemails?enabled=false", "number")).values, ["1002"]);
  });

  await t.step("GET by id and PUT changing only what it sends", async () => {
    assert.equal((await (await api.get(`/voicemails/${id}`)).json()).name, "Alice");
    const response = await api.put(`/voicemails/${id}`, {
      number: "1003",
      password: "1234",
      email: null,
      enabled: false,
    });
    assert.equal(response.status, 204);
    const body = await (await api.get(`/voicemails/${id}`)).json();
    assert.equal(body.number, "1003");
    assert.equal(body.password, "1234");
    assert.equal(body.enabled, false);
    assert.equal(body.name, "Alice");
  });

  await t.step("DELETE answers 204, then the voicemail is gone", async () => {
    await api.expectDeleted("/voicemails", "Voicemail", { id });
  });
});

Deno.test("/1.1/voicemails: every error", async (t) => {
  const { api } = await setupConfd();
  const created = await (await api.post("/voicemails", MAILBOX)).json();

  await t.step("unknown ids: 404", async () => {
    await api.expectUnknownId("/voicemails", "Voicemail", { id: 999 });
  });

  await t.step("invalid fields: 400 Input Error naming the field", async () => {
    await api.expectInvalid("POST", "/voicemails", [
      [{ number: "1002", context: "default" }, /^Input Error - field 'name': /],
      [{ ...MAILBOX, name: "n".repeat(81) }, /field 'name': Longer than maximum length 80/],
      [{ name: "x", context: "default" }, /field 'number': /],
      [{ ...MAILBOX, number: "10a" }, /field 'number': Must be digits/],
      [{ ...MAILBOX, number: "1".repeat(41) }, /field 'number': Longer than maximum length 40/],
      [{ name: "x", number: "1002" }, /field 'context': /],
      [
        { ...MAILBOX, context: "nowhere" },
        /^Input Error - field 'context': Context was not found \('name': 'nowhere'\)$/,
      ],
      [{ ...MAILBOX, password: "12ab" }, /field 'password': Must be digits/],
      [{ ...MAILBOX, email: "e".repeat(81) }, /field 'email'/],
      [{ ...MAILBOX, language: "l".repeat(21) }, /field 'language'/],
      [{ ...MAILBOX, max_messages: -1 }, /field 'max_messages'/],
      [{ ...MAILBOX, max_messages: 1.5 }, /field 'max_messages'/],
      [{ ...MAILBOX, attach_audio: "true" }, /field 'attach_audio'/],
      [{ ...MAILBOX, delete_messages: 1 }, /field 'delete_messages'/],
      [{ ...MAILBOX, ask_password: null }, /field 'ask_password'/],
      [{ ...MAILBOX, enabled: "yes" }, /field 'enabled'/],
      [{ ...MAILBOX, options: [["a"]] }, /field 'options.0'/],
      [{ ...MAILBOX, options: "a=b" }, /field 'options'/],
    ]);
    await expectConfdError(
      await api.put(`/voicemails/${created.id}`, { context: "nowhere" }),
      400,
      /field 'context': Context was not found/,
    );
    await expectConfdError(
      await api.put(`/voicemails/${created.id}`, { name: null }),
      400,
      /field 'name'/,
    );
  });

  await t.step("a taken (number, context): 400 Resource Error", async () => {
    const message =
      /^Resource Error - Voicemail already exists \('number': '1001', 'context': 'default'\)$/;
    await api.expectTaken("/voicemails", MAILBOX, { ...MAILBOX, context: "to-extern" }, message);
  });
});

Deno.test("/1.1/users/{id}/voicemails: associate and dissociate", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await ctiUser(ctx, "alice");
  const bob = await ctiUser(ctx, "bob");
  const first = await (await api.post("/voicemails", MAILBOX)).json();
  const second = await (await api.post("/voicemails", { ...MAILBOX, number: "1002" })).json();

  await t.step("a user without voicemail lists none", async () => {
    const response = await api.get(`/users/${alice.id}/voicemails`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { total: 0, items: [] });
  });

  await t.step("PUT associates a user without line (15.15), by id or uuid", async () => {
    assert.equal((await api.put(`/users/${alice.id}/voicemails/${first.id}`)).status, 204);
    assert.equal((await api.put(`/users/${bob.uuid}/voicemails/${first.id}`)).status, 204);
    assert.equal((await getUser(ctx.services.store, alice.id))?.voicemail_id, first.id);
    const association = await (await api.get(`/users/${alice.uuid}/voicemails`)).json();
    assert.deepEqual(association, {
      total: 1,
      items: [{ user_id: alice.id, voicemail_id: first.id }],
    });
    const voicemail = await (await api.get(`/voicemails/${first.id}`)).json();
    // each user as the clients read it: `list_users` reads `users`, then uuid and names
    assert.deepEqual(
      voicemail.users,
      [alice, bob].map(({ id, uuid, firstname, lastname }) => ({
        id,
        uuid,
        firstname,
        lastname,
      })),
    );
  });

  await t.step("a user has one voicemail at most", async () => {
    for (const other of [first.id, second.id]) {
      await expectConfdError(
        await api.put(`/users/${alice.id}/voicemails/${other}`),
        400,
        new RegExp(
          `^Resource Error - User already has a Voicemail \\('user_id': ${alice.id}, 'voicemail_id': ${first.id}\\)$`,
        ),
      );
    }
  });

  await t.step("an unknown voicemail is 400 (14.16), an unknown user 404", async () => {
    await expectConfdError(
      await api.put(`/users/${alice.id}/voicemails/999`),
      400,
      /^Input Error - field 'voicemail_id': Voicemail was not found \('id': 999\)$/,
    );
    await expectConfdError(
      await api.delete(`/users/${alice.id}/voicemails/abc`),
      400,
      /field 'voicemail_id': Voicemail was not found \('id': 'abc'\)/,
    );
    await expectNotFound(await api.put(`/users/999/voicemails/${second.id}`), "User", { id: 999 });
    const uuid = "no-such-uuid";
    await expectNotFound(await api.get(`/users/${uuid}/voicemails`), "User", { uuid });
  });

  await t.step("an associated voicemail stays editable (15.15) but cannot be deleted", async () => {
    assert.equal((await api.put(`/voicemails/${first.id}`, { name: "Shared" })).status, 204);
    await expectConfdError(
      await api.delete(`/voicemails/${first.id}`),
      400,
      /^Resource Error - Voicemail is associated with a User$/,
    );
    assert.equal((await api.get(`/voicemails/${first.id}`)).status, 200);
  });

  await t.step("DELETE dissociates; a voicemail the user lacks is 400", async () => {
    await expectConfdError(
      await api.delete(`/users/${alice.id}/voicemails/${second.id}`),
      400,
      /^Resource Error - User is not associated with this Voicemail/,
    );
    assert.equal((await api.delete(`/users/${alice.id}/voicemails/${first.id}`)).status, 204);
    assert.equal((await api.delete(`/users/${bob.id}/voicemails/${first.id}`)).status, 204);
    assert.deepEqual(await (await api.get(`/users/${alice.id}/voicemails`)).json(), {
      total: 0,
      items: [],
    });
    assert.deepEqual((await (await api.get(`/voicemails/${first.id}`)).json()).users, []);
    assert.equal((await api.delete(`/voicemails/${first.id}`)).status, 204);
  });
});

Deno.test("DELETE /1.1/users/{id}/voicemails dissociates the user's voicemail, unnamed", async (t) => {
  const { ctx, api } = await setupConfd();
  const alice = await ctiUser(ctx, "alice");
  const bob = await ctiUser(ctx, "bob");
  const voicemail = await (await api.post("/voicemails", MAILBOX)).json();
  for (const user of [alice, bob]) {
    assert.equal((await api.put(`/users/${user.id}/voicemails/${voicemail.id}`)).status, 204);
  }

  await t.step("204; both sides forget it, the other user keeps it", async () => {
    // as the clients send it: no body, `Accept: application/json`
    const response = await api.call("DELETE", `/users/${alice.uuid}/voicemails`, undefined, {
      Accept: "application/json",
    });
    assert.equal(response.status, 204);
    assert.equal(await response.text(), "");
    assert.deepEqual(await (await api.get(`/users/${alice.id}/voicemails`)).json(), {
      total: 0,
      items: [],
    });
    assert.equal((await getUser(ctx.services.store, alice.id))?.voicemail_id, null);
    const users = (await (await api.get(`/voicemails/${voicemail.id}`)).json()).users;
    assert.deepEqual(users.map((user: { id: number }) => user.id), [bob.id]);
  });

  await t.step("a user without voicemail: 204, nothing changes", async () => {
    assert.equal((await api.delete(`/users/${alice.id}/voicemails`)).status, 204);
    assert.equal((await getUser(ctx.services.store, bob.id))?.voicemail_id, voicemail.id);
  });

  await t.step("an unknown user: 404", async () => {
    await expectNotFound(await api.delete("/users/999/voicemails"), "User", { id: 999 });
    const uuid = crypto.randomUUID();
    await expectNotFound(await api.delete(`/users/${uuid}/voicemails`), "User", { uuid });
  });

  await t.step("the voicemail can be deleted once no user holds it", async () => {
    assert.equal((await api.delete(`/users/${bob.id}/voicemails`)).status, 204);
    assert.equal((await api.delete(`/voicemails/${voicemail.id}`)).status, 204);
  });
});

Deno.test("/1.1/voicemails: ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  await (await admin.post("/voicemails", MAILBOX)).body?.cancel();
  const user = await ctiUser(ctx);
  await expectAcls(t, ctx, [
    ["GET", "/voicemails", "confd.voicemails.read"],
    ["POST", "/voicemails", "confd.voicemails.create", { ...MAILBOX, number: "1002" }],
    ["GET", "/voicemails/1", "confd.voicemails.1.read"],
    ["PUT", "/voicemails/1", "confd.voicemails.1.update", {}],
    ["GET", `/users/${user.id}/voicemails`, `confd.users.${user.id}.voicemails.read`],
    ["PUT", `/users/${user.id}/voicemails/1`, `confd.users.${user.id}.voicemails.1.update`],
    ["DELETE", `/users/${user.id}/voicemails/1`, `confd.users.${user.id}.voicemails.1.delete`],
    ["DELETE", `/users/${user.id}/voicemails`, `confd.users.${user.id}.voicemails.delete`],
    ["DELETE", "/voicemails/1", "confd.voicemails.1.delete"],
  ]);
});

/**
 * A line's caller id follows its main user's (as XiVO derives it) unless it was written on the
 * line: every way a line gains or loses its main user, its first extension, or the user's caller
 * id changes, through the real routes.
 */
import assert from "node:assert/strict";
import { type Confd, setupConfd } from "../../helpers.ts";

const json = async (response: Response | Promise<Response>) => await (await response).json();

/** The line's `[caller_id_name, caller_id_num]`. */
async function callerId(api: Confd, line: number) {
  const body = await json(api.get(`/lines/${line}`));
  return [body.caller_id_name, body.caller_id_num];
}

async function ok(response: Response | Promise<Response>) {
  const answered = await response;
  assert.ok(answered.status < 300, `${answered.status} ${await answered.text()}`);
}

Deno.test("a line's caller id follows its main user", async (t) => {
  const { api } = await setupConfd();
  const alice = await api.create("/users", { firstname: "Alice", lastname: "Martin" });
  const bob = await api.create("/users", { firstname: "Bob", caller_id: '"Bob B" <2002>' });
  const line = await api.create("/lines", { context: "default" });
  const extension = await api.create("/extensions", { exten: "1001", context: "default" });
  await ok(api.put(`/lines/${line.id}/extensions/${extension.id}`));

  await t.step("no user: no caller id", async () => {
    assert.deepEqual(await callerId(api, line.id), [null, null]);
  });

  await t.step("the main user joins: its caller id name, the line's extension", async () => {
    await ok(api.put(`/users/${alice.id}/lines/${line.id}`));
    assert.deepEqual(await callerId(api, line.id), ["Alice Martin", "1001"]);
  });

  await t.step("a second user does not change it, nor do its own changes", async () => {
    await ok(api.put(`/users/${bob.id}/lines/${line.id}`));
    await ok(api.put(`/users/${bob.id}`, { caller_id: '"Robert"' }));
    assert.deepEqual(await callerId(api, line.id), ["Alice Martin", "1001"]);
  });

  await t.step("the main user's caller id changes: name and number follow", async () => {
    await ok(api.put(`/users/${alice.uuid}`, { caller_id: '"Boss" <+3310>' }));
    assert.deepEqual(await callerId(api, line.id), ["Boss", "+3310"]);
    await ok(api.put(`/users/${alice.id}`, { caller_id: "Desk <1999>" }));
    assert.deepEqual(await callerId(api, line.id), ["Desk", "1999"]);
    // a number that is no number is left out: the extension's number is used
    await ok(api.put(`/users/${alice.id}`, { caller_id: '"Alice" <abc>' }));
    assert.deepEqual(await callerId(api, line.id), ["Alice", "1001"]);
    // no caller id: the names; a name change then shows
    await ok(api.put(`/users/${alice.id}`, { caller_id: null }));
    assert.deepEqual(await callerId(api, line.id), ["Alice Martin", "1001"]);
    await ok(api.put(`/users/${alice.id}`, { lastname: "Durand" }));
    assert.deepEqual(await callerId(api, line.id), ["Alice Durand", "1001"]);
  });

  await t.step("the first extension's number follows its changes and dissociation", async () => {
    await ok(api.put(`/extensions/${extension.id}`, { exten: "1002" }));
    assert.deepEqual(await callerId(api, line.id), ["Alice Durand", "1002"]);
    await ok(api.delete(`/lines/${line.id}/extensions/${extension.id}`));
    assert.deepEqual(await callerId(api, line.id), ["Alice Durand", null]);
    await ok(api.put(`/lines/${line.id}/extensions/${extension.id}`));
    assert.deepEqual(await callerId(api, line.id), ["Alice Durand", "1002"]);
  });

  await t.step("the main user leaves: the next user's caller id; no user: none", async () => {
    await ok(api.delete(`/users/${alice.id}/lines/${line.id}`));
    assert.deepEqual(await callerId(api, line.id), ["Robert", "1002"]);
    await ok(api.put(`/users/${bob.id}/lines`, { lines: [] }));
    assert.deepEqual(await callerId(api, line.id), [null, null]);
  });

  await t.step("PUT /users/{id}/lines: the lines it joins follow the user", async () => {
    await ok(api.put(`/users/${bob.id}/lines`, { lines: [{ id: line.id }] }));
    assert.deepEqual(await callerId(api, line.id), ["Robert", "1002"]);
  });
});

Deno.test("a caller id written on the line stays until both parts are written null", async (t) => {
  const { api } = await setupConfd();
  const alice = await api.create("/users", { firstname: "Alice", caller_id: '"Alice" <1001>' });
  const line = await api.create("/lines", { context: "default" });
  await ok(api.put(`/users/${alice.id}/lines/${line.id}`));
  assert.deepEqual(await callerId(api, line.id), ["Alice", "1001"]);

  await t.step("written through /lines: kept whole, whatever the user does", async () => {
    await ok(api.put(`/lines/${line.id}`, { caller_id_name: "Reception" }));
    assert.deepEqual(await callerId(api, line.id), ["Reception", "1001"]);
    await ok(api.put(`/users/${alice.id}`, { caller_id: '"Other" <1555>' }));
    assert.deepEqual(await callerId(api, line.id), ["Reception", "1001"]);
    // other fields of the line leave it explicit
    await ok(api.put(`/lines/${line.id}`, { position: 2 }));
    await ok(api.put(`/users/${alice.id}`, { caller_id: '"Third"' }));
    assert.deepEqual(await callerId(api, line.id), ["Reception", "1001"]);
  });

  await t.step("one part null is still explicit", async () => {
    await ok(api.put(`/lines/${line.id}`, { caller_id_num: null }));
    await ok(api.put(`/users/${alice.id}`, { caller_id: '"Fourth" <1444>' }));
    assert.deepEqual(await callerId(api, line.id), ["Reception", null]);
  });

  await t.step("both null: the line follows its main user again at once", async () => {
    await ok(api.put(`/lines/${line.id}`, { caller_id_name: null, caller_id_num: null }));
    assert.deepEqual(await callerId(api, line.id), ["Fourth", "1444"]);
    await ok(api.put(`/users/${alice.id}`, { caller_id: '"Fifth"' }));
    assert.deepEqual(await callerId(api, line.id), ["Fifth", null]);
  });

  await t.step("a line created with a caller id keeps it when a user joins", async () => {
    const own = await api.create("/lines", { context: "default", caller_id_num: "1800" });
    await ok(api.put(`/users/${alice.id}/lines/${own.id}`));
    assert.deepEqual(await callerId(api, own.id), [null, "1800"]);
  });
});

Deno.test("users CSV: imported lines follow their user, and so do updates", async (t) => {
  const { api } = await setupConfd();
  const csv = (method: string, body: string) =>
    api.call(method, "/users/import", body, { "Content-Type": "text/csv; charset=utf-8" });
  const response = await csv(
    "POST",
    [
      "firstname,lastname,caller_id,line_protocol,context,exten",
      "Alice,Martin,,sip,default,1001",
      'Bob,,"""Bob B"" <2002>",sccp,default,1002',
      "Carol,,,sip,default,",
    ].join("\n"),
  );
  assert.equal(response.status, 201);
  const { created } = await response.json();

  await t.step("POST: the new lines show their user's caller id", async () => {
    assert.deepEqual(await callerId(api, created[0].line_id), ["Alice Martin", "1001"]);
    assert.deepEqual(await callerId(api, created[1].line_id), ["Bob B", "2002"]);
    assert.deepEqual(await callerId(api, created[2].line_id), ["Carol", null]);
  });

  await t.step("PUT: a changed caller id or name reaches the lines", async () => {
    const explicit = created[2].line_id;
    await ok(api.put(`/lines/${explicit}`, { caller_id_name: "Kept" }));
    const update = await csv(
      "PUT",
      [
        "uuid,caller_id,firstname",
        `${created[0].user_uuid},"""Alice M"" <1900>",`,
        `${created[1].user_uuid},,Robert`,
        `${created[2].user_uuid},"""Ignored""",`,
      ].join("\n"),
    );
    assert.equal(update.status, 200, await update.clone().text());
    assert.deepEqual(await callerId(api, created[0].line_id), ["Alice M", "1900"]);
    // an empty caller_id cell clears it: the names, then the extension
    assert.deepEqual(await callerId(api, created[1].line_id), ["Robert", "1002"]);
    assert.deepEqual(await callerId(api, explicit), ["Kept", null]);
  });
});

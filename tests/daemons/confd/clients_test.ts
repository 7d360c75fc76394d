/**
 * The routes of issue 14 called exactly as the two real clients call them: wazo-confd-client
 * (`X-Auth-Token`, `Accept: application/json` on reads, `Content-Type: application/json` on
 * writes, no body on associations, 200/201/204 as success) and the GLPI xivo plugin (`X-Auth-Token`,
 * both JSON headers on every call, `limit`/`direction`/`offset` on lists, any status above 400 a
 * failure), reading back the fields each reads.
 */
import assert from "node:assert/strict";
import { setupConfd, type TestContext } from "../../helpers.ts";

/** wazo-confd-client's session: its headers, its body encoding, its success statuses. */
function wazoConfdClient(ctx: TestContext, token: string) {
  const READ = { "Accept": "application/json", "X-Auth-Token": token };
  const WRITE = { ...READ, "Content-Type": "application/json" };
  const send = async (method: string, path: string, headers: object, body?: unknown) => {
    const response = await ctx.app.request(`/1.1/${path}`, {
      method,
      headers: headers as Record<string, string>,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    assert.ok([200, 201, 204].includes(response.status), `${method} ${path}: ${text}`);
    return text ? JSON.parse(text) : null;
  };
  return {
    get: (path: string) => send("GET", path, READ),
    put: (path: string, body?: unknown) => send("PUT", path, WRITE, body),
    delete: (path: string) => send("DELETE", path, READ),
  };
}

/** The GLPI plugin's `httpQuery`: both JSON headers and the token on every call. */
function glpiPlugin(ctx: TestContext, token: string) {
  const headers = {
    "content-type": "application/json",
    "Accept": "application/json",
    "X-Auth-Token": token,
  };
  const get = async (resource: string, query: Record<string, string | number> = {}) => {
    const search = new URLSearchParams(
      Object.entries(query).map(([name, value]) => [name, String(value)]),
    );
    const response = await ctx.app.request(`/1.1/${resource}${search.size ? `?${search}` : ""}`, {
      headers,
    });
    const text = await response.text();
    assert.ok(response.status <= 400, `GET ${resource}: ${response.status} ${text}`);
    return JSON.parse(text);
  };
  // `getList`'s defaults once empty values are dropped: order and search are not sent
  const getList = (resource: string, query: Record<string, number> = {}) =>
    get(resource, { limit: 50, direction: "asc", offset: 0, ...query });
  return {
    getList,
    getSingle: (resource: string, id: string | number) => get(`${resource}/${id}`),
    /** `getSingleDeviceLines`: the device's line ids, then each line. */
    async getSingleDeviceLines(id: string) {
      const { items } = await getList(`devices/${id}/lines`);
      return await Promise.all(
        items.map((item: { line_id: number }) => get(`lines/${item.line_id}`)),
      );
    },
  };
}

Deno.test("wazo-confd-client calls the new routes as it does", async (t) => {
  const { ctx, api } = await setupConfd();
  const client = wazoConfdClient(ctx, api.token);
  const alice = await api.create("/users", { firstname: "Alice", caller_id: '"Alice" <1001>' });
  const bob = await api.create("/users", { firstname: "Bob" });
  const main = await api.create("/lines", { context: "default" });
  const desk = await api.create("/lines", { context: "default" });
  const sip = await api.create("/endpoints/sip", { username: "alice-desk" });
  assert.equal((await api.put(`/lines/${desk.id}/endpoints/sip/${sip.id}`)).status, 204);
  const device = await api.create("/devices", { mac: "00:11:22:33:44:55" });

  await t.step("user_line.update_lines, then get_endpoint_sip(line_id)", async () => {
    // `update_lines` keeps only each line's id
    await client.put(`users/${alice.uuid}/lines`, {
      lines: [main, desk].map(({ id }) => ({ id })),
    });
    const endpoint = await client.get(
      `users/${alice.uuid}/lines/${desk.id}/associated/endpoints/sip`,
    );
    assert.equal(endpoint.id, sip.id);
    assert.equal(endpoint.username, "alice-desk");
    assert.equal(endpoint.secret, sip.secret);
    const lines = await client.get(`users/${alice.uuid}/lines`);
    assert.deepEqual(lines.items.map((line: { id: number }) => line.id), [main.id, desk.id]);
    assert.equal(lines.items[0].caller_id_name, "Alice");
  });

  await t.step("line_device associate, get_by_line, list_by_device", async () => {
    await client.put(`lines/${desk.id}/devices/${device.id}`);
    const association = await client.get(`lines/${desk.id}/devices`);
    assert.equal(association.line_id, desk.id);
    assert.equal(association.device_id, device.id);
    const list = await client.get(`devices/${device.id}/lines`);
    assert.equal(list.total, 1);
    assert.deepEqual(list.items, [{ line_id: desk.id, device_id: device.id }]);
  });

  await t.step("user_voicemail: associate, get_voicemail, list_users, dissociate", async () => {
    const voicemail = await api.create("/voicemails", {
      name: "Alice",
      number: "1001",
      context: "default",
    });
    await client.put(`users/${alice.id}/voicemails/${voicemail.id}`);
    const [first] = (await client.get(`users/${alice.id}/voicemails`)).items;
    assert.equal(first.voicemail_id, voicemail.id);
    const users = (await client.get(`voicemails/${voicemail.id}`)).users;
    assert.deepEqual(users, [{
      id: alice.id,
      uuid: alice.uuid,
      firstname: "Alice",
      lastname: null,
    }]);
    await client.delete(`users/${alice.id}/voicemails`);
    assert.deepEqual((await client.get(`users/${alice.id}/voicemails`)).items, []);
  });

  await t.step("user_service.update_services, then list_services", async () => {
    const services = { dnd: { enabled: true }, incallfilter: { enabled: true } };
    await client.put(`users/${alice.uuid}/services`, services);
    assert.deepEqual(await client.get(`users/${alice.uuid}/services`), services);
  });

  await t.step("switchboard member users: associate with the users' uuids", async () => {
    const board = await api.create("/switchboards", { name: "Reception" });
    const users = [alice, bob].map((user) => ({ uuid: user.uuid }));
    await client.put(`switchboards/${board.id}/members/users`, { users });
    const read = await client.get(`switchboards/${board.id}`);
    assert.deepEqual(read.members.users.map((user: { uuid: string }) => user.uuid), [
      alice.uuid,
      bob.uuid,
    ]);
  });

  await t.step("call permissions with an extension twice: created, kept once", async () => {
    const permission = await api.create("/callpermissions", {
      name: "mobiles",
      extensions: ["_06XXXXXXXX", "_06XXXXXXXX"],
    });
    assert.deepEqual(permission.extensions, ["_06XXXXXXXX"]);
  });
});

Deno.test("the GLPI xivo plugin's status checks and import read what they need", async (t) => {
  const { ctx, api } = await setupConfd();
  const glpi = glpiPlugin(ctx, api.token);
  const alice = await api.create("/users", { firstname: "Alice", lastname: "Martin" });
  const device = await api.create("/devices", { mac: "00:11:22:33:44:55", sn: "SN1" });
  const lines: { id: number }[] = [];
  for (const position of [1, 2]) {
    const line = await api.create("/lines", { context: "default", position });
    assert.equal((await api.put(`/lines/${line.id}/devices/${device.id}`)).status, 204);
    lines.push(line);
  }
  const first = lines[0]!;
  const extension = await api.create("/extensions", { exten: "1001", context: "default" });
  assert.equal((await api.put(`/lines/${first.id}/extensions/${extension.id}`)).status, 204);
  assert.equal((await api.put(`/users/${alice.id}/lines/${first.id}`)).status, 204);

  await t.step("status(): one device, its lines, one line, one user", async () => {
    const devices = await glpi.getList("devices", { limit: 1 });
    const deviceId = devices.items.at(-1).id;
    assert.equal(deviceId, device.id);
    assert.equal((await glpi.getSingle("devices", deviceId)).id, device.id);
    const deviceLines = await glpi.getSingleDeviceLines(deviceId);
    assert.deepEqual(deviceLines.map((line: { id: number }) => line.id), lines.map((l) => l.id));
    const line = await glpi.getList("lines", { limit: 1 });
    assert.equal((await glpi.getSingle("lines", line.items.at(-1).id)).id, first.id);
    assert.equal((await glpi.getList("users", { limit: 1 })).items.length, 1);
  });

  await t.step("importSingle: every field a line is read for", async () => {
    const { items, total } = await glpi.getList("lines", { offset: 0, limit: 200 });
    assert.equal(total, 2);
    const line = items[0];
    for (
      const field of [
        "protocol",
        "name",
        "provisioning_extension",
        "provisioning_code",
        "device_slot",
        "caller_id_num",
        "caller_id_name",
        "context",
        "position",
        "registrar",
        "id",
        "device_id",
      ]
    ) {
      assert.ok(field in line, `a line has no ${field}`);
    }
    assert.equal(line.registrar, "default");
    assert.equal(line.caller_id_name, "Alice Martin");
    assert.equal(line.caller_id_num, "1001");
    assert.equal(line.device_id, device.id);
  });
});

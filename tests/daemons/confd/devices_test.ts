import assert from "node:assert/strict";
import { expectAcls, expectConfdError, expectNotFound, setupConfd } from "../../helpers.ts";

Deno.test("/1.1/devices: create, get, update, delete", async (t) => {
  const { api } = await setupConfd();
  let id = "";

  await t.step("POST answers 201 with a 32-hex id, the MAC in lower case", async () => {
    const body = await api.create("/devices", {
      mac: "AA-BB-CC-00-11-22",
      ip: "10.0.0.5",
      vendor: "Yealink",
      model: "T46S",
      options: { switchboard: true },
      status: "configured",
      id: "mine",
    });
    id = body.id;
    assert.match(id, /^[0-9a-f]{32}$/);
    assert.deepEqual(body, {
      id,
      mac: "aa:bb:cc:00:11:22",
      ip: "10.0.0.5",
      sn: null,
      vendor: "Yealink",
      model: "T46S",
      version: null,
      plugin: null,
      description: null,
      template_id: null,
      status: "not_configured",
      options: { switchboard: true },
      lines: [],
    });
  });

  await t.step("GET by id and lists", async () => {
    assert.equal((await (await api.get(`/devices/${id}`)).json()).vendor, "Yealink");
    assert.equal((await api.post("/devices", {})).status, 201);
    assert.equal((await api.list("/devices")).total, 2);
    assert.deepEqual((await api.list("/devices?search=yealink", "id")).values, [id]);
    assert.equal((await api.list("/devices?mac=aa:bb:cc:00:11:22")).total, 1);
    assert.deepEqual((await api.list("/devices?order=vendor&limit=1", "id")).values, [id]);
  });

  await t.step("PUT changes what it sends; status and id are read-only", async () => {
    const response = await api.put(`/devices/${id}`, {
      ip: "fe80::1",
      mac: null,
      description: "desk",
      status: "configured",
      id: "other",
    });
    assert.equal(response.status, 204);
    const body = await (await api.get(`/devices/${id}`)).json();
    assert.equal(body.ip, "fe80::1");
    assert.equal(body.mac, null);
    assert.equal(body.description, "desk");
    assert.equal(body.vendor, "Yealink");
    assert.equal(body.status, "not_configured");
  });

  await t.step("DELETE answers 204, then 404", async () => {
    await api.expectDeleted("/devices", "Device", { id });
  });
});

Deno.test("/1.1/devices: every error", async (t) => {
  const { api } = await setupConfd();
  const device = await (await api.post("/devices", { mac: "00:11:22:33:44:55" })).json();

  await t.step("unknown ids: 404", async () => {
    await api.expectUnknownId("/devices", "Device", { id: "0".repeat(32) });
    await api.expectUnknownId("/devices", "Device", { id: "not-an-id" });
  });

  await t.step("invalid fields: 400 naming the field", async () => {
    const cases: [unknown, RegExp][] = [
      [{ mac: "00:11:22:33:44" }, /^Input Error - field 'mac': Must be a MAC address/],
      [{ mac: "00:11:22:33:44:zz" }, /field 'mac'/],
      [{ mac: 7 }, /field 'mac'/],
      [{ ip: "10.0.0.300" }, /field 'ip': Not a valid IP address/],
      [{ vendor: "v".repeat(129) }, /field 'vendor'/],
      [{ description: 3 }, /field 'description'/],
      [{ options: "x" }, /field 'options'/],
      [{ options: [1] }, /field 'options'/],
    ];
    await api.expectInvalid("POST", "/devices", cases);
    await api.expectInvalid("PUT", `/devices/${device.id}`, cases);
  });

  await t.step("a taken MAC address, in any spelling: 400 Resource Error", async () => {
    await api.expectTaken(
      "/devices",
      { mac: "00-11-22-33-44-55" },
      {},
      /^Resource Error - Device already exists \('mac': '00:11:22:33:44:55'\)$/,
    );
    assert.equal(
      (await api.put(`/devices/${device.id}`, { mac: "00:11:22:33:44:55" })).status,
      204,
    );
  });

  await t.step("the removed associate/dissociate routes answer 404 (16.03)", async () => {
    const line = await (await api.post("/lines", { context: "default" })).json();
    for (const action of ["associate_line", "dissociate_line"]) {
      await expectConfdError(
        await api.get(`/devices/${device.id}/${action}/${line.id}`),
        404,
        /^Resource Not Found - /,
      );
    }
    assert.equal((await (await api.get(`/lines/${line.id}`)).json()).device_id, null);
  });
});

Deno.test("/1.1/lines/{id}/devices/{device_id}: associate and dissociate", async (t) => {
  const { api } = await setupConfd();
  const device = await (await api.post("/devices", {})).json();
  const first = await (await api.post("/lines", { context: "default" })).json();
  const second = await (await api.post("/lines", { context: "default", position: 2 })).json();
  const status = async () => (await (await api.get(`/devices/${device.id}`)).json()).status;

  await t.step("a device takes several lines and becomes configured", async () => {
    assert.equal((await api.put(`/lines/${first.id}/devices/${device.id}`)).status, 204);
    assert.equal((await api.put(`/lines/${second.id}/devices/${device.id}`)).status, 204);
    const body = await (await api.get(`/devices/${device.id}`)).json();
    assert.equal(body.status, "configured");
    assert.deepEqual(body.lines, [{ id: first.id }, { id: second.id }]);
    assert.equal((await (await api.get(`/lines/${first.id}`)).json()).device_id, device.id);
  });

  await t.step("errors: unknown line or device 404, a line with a device 400", async () => {
    await expectConfdError(
      await api.put(`/lines/99/devices/${device.id}`),
      404,
      /Line was not found/,
    );
    await expectConfdError(
      await api.put(`/lines/${first.id}/devices/${"f".repeat(32)}`),
      404,
      /Device was not found/,
    );
    const other = await (await api.post("/devices", {})).json();
    await expectConfdError(
      await api.put(`/lines/${first.id}/devices/${other.id}`),
      400,
      /^Resource Error - Line is already associated with a Device/,
    );
    await expectConfdError(
      await api.put(`/lines/${first.id}/devices/${device.id}`),
      400,
      /already associated/,
    );
    await expectConfdError(
      await api.delete(`/lines/${first.id}/devices/${other.id}`),
      400,
      /^Resource Error - Line is not associated with the Device/,
    );
    await expectConfdError(await api.delete(`/lines/99/devices/${device.id}`), 404, /Line/);
    await expectConfdError(await api.delete(`/lines/${first.id}/devices/x`), 404, /Device/);
  });

  await t.step("GET /lines/{id}/devices: the line's device as {line_id, device_id}", async () => {
    const response = await api.get(`/lines/${first.id}/devices`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { line_id: first.id, device_id: device.id });
    const alone = await (await api.post("/lines", { context: "default" })).json();
    await expectNotFound(await api.get(`/lines/${alone.id}/devices`), "LineDevice", {
      line_id: alone.id,
    });
    await expectNotFound(await api.get("/lines/99/devices"), "Line", { id: 99 });
    await expectNotFound(await api.get("/lines/abc/devices"), "Line", { id: "abc" });
  });

  await t.step("GET /devices/{id}/lines: {total, items} of {line_id, device_id}", async () => {
    const response = await api.get(`/devices/${device.id}/lines`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), {
      total: 2,
      items: [
        { line_id: first.id, device_id: device.id },
        { line_id: second.id, device_id: device.id },
      ],
    });
    // the paging and order parameters every list takes
    const page = await (await api.get(`/devices/${device.id}/lines?limit=1&offset=1`)).json();
    assert.deepEqual(page, { total: 2, items: [{ line_id: second.id, device_id: device.id }] });
    const desc = await api.list(
      `/devices/${device.id}/lines?order=line_id&direction=desc`,
      "line_id",
    );
    assert.deepEqual(desc.values, [second.id, first.id]);
    await expectConfdError(
      await api.get(`/devices/${device.id}/lines?order=mac`),
      400,
      /^Input Error - field 'order'/,
    );
    const empty = await (await api.post("/devices", {})).json();
    assert.deepEqual(await (await api.get(`/devices/${empty.id}/lines`)).json(), {
      total: 0,
      items: [],
    });
    await expectNotFound(await api.get(`/devices/${"f".repeat(32)}/lines`), "Device", {
      id: "f".repeat(32),
    });
    await expectNotFound(await api.get("/devices/not-an-id/lines"), "Device", {
      id: "not-an-id",
    });
  });

  await t.step("a device with lines and a line with a device cannot be deleted", async () => {
    await expectConfdError(
      await api.delete(`/devices/${device.id}`),
      400,
      /^Resource Error - Device is associated with a Line$/,
    );
    await expectConfdError(
      await api.delete(`/lines/${first.id}`),
      400,
      /^Resource Error - Line is associated with a Device$/,
    );
    assert.equal(await status(), "configured");
  });

  await t.step("dissociating every line makes it not_configured again", async () => {
    assert.equal((await api.delete(`/lines/${first.id}/devices/${device.id}`)).status, 204);
    assert.equal(await status(), "configured");
    assert.equal((await api.delete(`/lines/${second.id}/devices/${device.id}`)).status, 204);
    assert.equal(await status(), "not_configured");
    assert.equal((await (await api.get(`/lines/${first.id}`)).json()).device_id, null);
    assert.equal((await api.delete(`/devices/${device.id}`)).status, 204);
    assert.equal((await api.delete(`/lines/${first.id}`)).status, 204);
  });
});

Deno.test("/1.1/devices: tokens and ACLs", async (t) => {
  const { ctx, api: admin } = await setupConfd();
  const device = await (await admin.post("/devices", {})).json();
  const line = await (await admin.post("/lines", { context: "default" })).json();
  const d = device.id;
  await expectAcls(t, ctx, [
    ["GET", "/devices", "confd.devices.read"],
    ["POST", "/devices", "confd.devices.create", {}],
    ["GET", `/devices/${d}`, `confd.devices.${d}.read`],
    ["PUT", `/devices/${d}`, `confd.devices.${d}.update`, {}],
    ["PUT", `/lines/${line.id}/devices/${d}`, `confd.lines.${line.id}.devices.${d}.update`],
    ["GET", `/lines/${line.id}/devices`, `confd.lines.${line.id}.devices.read`],
    ["GET", `/devices/${d}/lines`, `confd.devices.${d}.lines.read`],
    ["DELETE", `/lines/${line.id}/devices/${d}`, `confd.lines.${line.id}.devices.${d}.delete`],
    ["DELETE", `/devices/${d}`, `confd.devices.${d}.delete`],
  ], ["confd.users.#"]);
});

import assert from "node:assert/strict";
import { confd, expectConfdError, setup } from "../../helpers.ts";

Deno.test("/1.1/devices: create, get, update, delete", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  let id = "";

  await t.step("POST answers 201 with a 32-hex id, the MAC in lower case", async () => {
    const response = await api.post("/devices", {
      mac: "AA-BB-CC-00-11-22",
      ip: "10.0.0.5",
      vendor: "Yealink",
      model: "T46S",
      options: { switchboard: true },
      status: "configured",
      id: "mine",
    });
    assert.equal(response.status, 201);
    const body = await response.json();
    id = body.id;
    assert.match(id, /^[0-9a-f]{32}$/);
    assert.equal(response.headers.get("location"), `/1.1/devices/${id}`);
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
    assert.equal((await (await api.get("/devices")).json()).total, 2);
    const found = await (await api.get("/devices?search=yealink")).json();
    assert.deepEqual(found.items.map((d: { id: string }) => d.id), [id]);
    const filtered = await (await api.get("/devices?mac=aa:bb:cc:00:11:22")).json();
    assert.equal(filtered.total, 1);
    const paged = await (await api.get("/devices?order=vendor&limit=1")).json();
    assert.deepEqual(paged.items.map((d: { id: string }) => d.id), [id]);
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
    assert.equal((await api.delete(`/devices/${id}`)).status, 204);
    await expectConfdError(
      await api.get(`/devices/${id}`),
      404,
      new RegExp(`^Resource Not Found - Device was not found \\('id': '${id}'\\)$`),
    );
  });
});

Deno.test("/1.1/devices: every error", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  const device = await (await api.post("/devices", { mac: "00:11:22:33:44:55" })).json();
  const other = await (await api.post("/devices", {})).json();

  await t.step("unknown ids: 404", async () => {
    const missing = "0".repeat(32);
    await expectConfdError(await api.get(`/devices/${missing}`), 404, /Device was not found/);
    await expectConfdError(await api.get("/devices/not-an-id"), 404, /Device was not found/);
    await expectConfdError(await api.put(`/devices/${missing}`, {}), 404, /not found/);
    await expectConfdError(await api.delete(`/devices/${missing}`), 404, /not found/);
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
    for (const [body, pattern] of cases) {
      await expectConfdError(await api.post("/devices", body), 400, pattern);
      await expectConfdError(await api.put(`/devices/${device.id}`, body), 400, pattern);
    }
  });

  await t.step("a taken MAC address, in any spelling: 400 Resource Error", async () => {
    await expectConfdError(
      await api.post("/devices", { mac: "00-11-22-33-44-55" }),
      400,
      /^Resource Error - Device already exists \('mac': '00:11:22:33:44:55'\)$/,
    );
    await expectConfdError(
      await api.put(`/devices/${other.id}`, { mac: "00:11:22:33:44:55" }),
      400,
      /already exists/,
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
  const ctx = await setup();
  const api = await confd(ctx);
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
  const ctx = await setup();
  const admin = await confd(ctx);
  const device = await (await admin.post("/devices", {})).json();
  const line = await (await admin.post("/lines", { context: "default" })).json();
  const d = device.id;
  const routes: [string, string, string][] = [
    ["GET", "/devices", "confd.devices.read"],
    ["POST", "/devices", "confd.devices.create"],
    ["GET", `/devices/${d}`, `confd.devices.${d}.read`],
    ["PUT", `/devices/${d}`, `confd.devices.${d}.update`],
    ["PUT", `/lines/${line.id}/devices/${d}`, `confd.lines.${line.id}.devices.${d}.update`],
    ["DELETE", `/lines/${line.id}/devices/${d}`, `confd.lines.${line.id}.devices.${d}.delete`],
    ["DELETE", `/devices/${d}`, `confd.devices.${d}.delete`],
  ];
  const narrow = await confd(ctx, ["confd.users.#"]);
  const allowed = await confd(ctx, routes.map(([, , acl]) => acl));
  for (const [method, path, acl] of routes) {
    await t.step(`${method} ${path} needs ${acl}`, async () => {
      const refused = await narrow.call(method, path, method === "GET" ? undefined : {});
      assert.equal(refused.status, 403);
      assert.deepEqual(await refused.json(), [`Forbidden - missing ACL ${acl}`]);
      const response = await allowed.call(method, path, method === "GET" ? undefined : {});
      assert.ok(response.status < 300, `${method} ${path}: ${response.status}`);
      await response.body?.cancel();
    });
  }
});

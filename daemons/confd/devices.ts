/**
 * `/1.1/devices`: phones, with 32-hex-character ids and a unique MAC address. `status` is read-only
 * (`configured` once a line is associated through `/lines/{id}/devices/{device_id}`); a device
 * with lines cannot be deleted. The GET `associate_line`/`dissociate_line` routes were removed
 * (16.03) and answer 404.
 */
import { Hono } from "hono";
import { isIP } from "node:net";
import { z } from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { type DeviceRecord, devices, newDeviceId, normalizeMac } from "../../lib/store/devices.ts";
import { transact, type Transaction } from "../../lib/store/records.ts";
import { fields, readBody } from "./body.ts";
import { withConflicts } from "./crud.ts";
import { notFound, resourceError } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { listItems } from "./list.ts";

const text = fields.text;

const schema = z.object({
  mac: text(17)
    .refine((mac) => mac === null || normalizeMac(mac) !== null, {
      message: "Must be a MAC address such as aa:bb:cc:dd:ee:ff.",
    })
    .transform((mac) => mac === null ? null : normalizeMac(mac))
    .optional(),
  ip: text(39).refine((ip) => ip === null || isIP(ip) !== 0, { message: "Not a valid IP address." })
    .optional(),
  sn: text(128).optional(),
  vendor: text(128).optional(),
  model: text(128).optional(),
  version: text(128).optional(),
  plugin: text(128).optional(),
  description: text(1024).optional(),
  template_id: text(128).optional(),
  options: z.record(z.string(), z.unknown()).optional(),
});

/** The API shape of a device: its lines as `[{id}]`. */
export function deviceView({ line_ids, ...device }: DeviceRecord) {
  return { ...device, lines: line_ids.map((id) => ({ id })) };
}

const LIST = {
  fields: [
    "id",
    "mac",
    "ip",
    "sn",
    "vendor",
    "model",
    "version",
    "plugin",
    "description",
    "template_id",
    "status",
  ],
  search: ["mac", "ip", "sn", "vendor", "model", "version", "plugin", "description"],
};

const LABEL = { label: "Device" };

/** The device of a path id, read in `tx`, or 404 (an id that cannot be one is not looked up). */
export async function loadDevice(tx: Transaction, id: string): Promise<DeviceRecord> {
  const device = /^[0-9a-f]{32}$/.test(id) ? await tx.get(devices, id) : null;
  if (!device) throw notFound("Device", { id });
  return device;
}

export function deviceRoutes({ store, tokens }: Services) {
  return new Hono<AppEnv>()
    .get("/devices", confdAcl(tokens, "confd.devices.read"), async (c) => {
      return c.json(listItems(c, (await devices.all(store)).map(deviceView), LIST));
    })
    .post("/devices", confdAcl(tokens, "confd.devices.create"), async (c) => {
      const device: DeviceRecord = {
        id: newDeviceId(),
        mac: null,
        ip: null,
        sn: null,
        vendor: null,
        model: null,
        version: null,
        plugin: null,
        description: null,
        template_id: null,
        status: "not_configured",
        options: {},
        line_ids: [],
        ...await readBody(c, schema),
      };
      await withConflicts(
        LABEL,
        () => transact(store, (tx) => Promise.resolve(tx.put(devices, device))),
      );
      c.header("Location", `/1.1/devices/${device.id}`);
      return c.json(deviceView(device), 201);
    })
    .get("/devices/:id", confdAcl(tokens, "confd.devices.{id}.read"), async (c) => {
      const device = await transact(store, (tx) => loadDevice(tx, c.req.param("id")));
      return c.json(deviceView(device));
    })
    .put("/devices/:id", confdAcl(tokens, "confd.devices.{id}.update"), async (c) => {
      const input = await readBody(c, schema);
      await withConflicts(LABEL, () =>
        transact(store, async (tx) => {
          const device = await loadDevice(tx, c.req.param("id"));
          tx.put(devices, { ...device, ...input });
        }));
      return c.body(null, 204);
    })
    .delete("/devices/:id", confdAcl(tokens, "confd.devices.{id}.delete"), async (c) => {
      await transact(store, async (tx) => {
        const device = await loadDevice(tx, c.req.param("id"));
        if (device.line_ids.length) throw resourceError("Device is associated with a Line");
        tx.remove(devices, device.id);
      });
      return c.body(null, 204);
    });
}

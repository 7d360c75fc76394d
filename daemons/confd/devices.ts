/**
 * `/1.1/devices`: phones, with 32-hex-character ids and a unique MAC address. `status` is read-only
 * (`configured` once a line is associated through `/lines/{id}/devices/{device_id}`); a device
 * with lines cannot be deleted. The GET `associate_line`/`dissociate_line` routes were removed
 * (16.03) and answer 404.
 */
import * as z from "zod";
import { canonicalAddress } from "../../lib/ip_address.ts";
import type { Services } from "../../lib/services.ts";
import { type DeviceRecord, devices, newDeviceId, normalizeMac } from "../../lib/store/devices.ts";
import type { Transaction } from "../../lib/store/records.ts";
import { check, fields } from "./body.ts";
import { type Resource, resourceRoutes } from "./crud.ts";
import { notFound, resourceError } from "./errors.ts";

const text = fields.text;

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const schema = z.lazy(() =>
  z.object({
    mac: text(17)
      .refine((mac) => mac === null || normalizeMac(mac) !== null, {
        message: "Must be a MAC address such as aa:bb:cc:dd:ee:ff.",
      })
      .transform((mac) => mac === null ? null : normalizeMac(mac))
      .optional(),
    ip: text(39).refine((ip) => ip === null || canonicalAddress(ip) !== null, {
      message: "Not a valid IP address.",
    })
      .optional(),
    sn: text(128).optional(),
    vendor: text(128).optional(),
    model: text(128).optional(),
    version: text(128).optional(),
    plugin: text(128).optional(),
    description: text(1024).optional(),
    template_id: text(128).optional(),
    options: z.record(z.string(), z.unknown()).optional(),
  })
);

/** What a device id is: 32 lowercase hex characters. */
const DEVICE_ID = /^[0-9a-f]{32}$/;

const checkBody = (body: unknown) => check(schema, body);

/** The API shape of a device: its lines as `[{id}]`. */
export function deviceView({ line_ids, ...device }: DeviceRecord) {
  return { ...device, lines: line_ids.map((id) => ({ id })) };
}

/** The device of a path id, read in `tx`, or 404 (an id that cannot be one is not looked up). */
export async function loadDevice(tx: Transaction, id: string): Promise<DeviceRecord> {
  const device = DEVICE_ID.test(id) ? await tx.get(devices, id) : null;
  if (!device) throw notFound("Device", { id });
  return device;
}

export const deviceResource: Resource<
  DeviceRecord,
  ReturnType<typeof deviceView>,
  z.infer<typeof schema>
> = {
  path: "/devices",
  label: "Device",
  collection: devices,
  parseId: (raw) => DEVICE_ID.test(raw) ? raw : null,
  newId: () => Promise.resolve(newDeviceId()),
  view: deviceView,
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
  bodies: { create: checkBody, update: checkBody },
  create: (_tx, input, id) =>
    Promise.resolve({
      id,
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
      ...input,
    }),
  update: (_tx, current, input) => Promise.resolve({ ...current, ...input }),
  beforeDelete(_tx, device) {
    if (device.line_ids.length) throw resourceError("Device is associated with a Line");
    return Promise.resolve();
  },
};

/** The device CRUD routes. */
export function deviceRoutes(services: Services) {
  return resourceRoutes(services, deviceResource);
}

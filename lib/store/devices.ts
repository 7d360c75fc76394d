/**
 * Devices: the phones that lines are provisioned on. Ids are 32 lowercase hex characters, like the
 * provisioning daemon the API follows; the MAC address is unique. A device keeps its lines
 * (`line_ids`), each line its device (`lines.device_id`).
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

/** `configured` once a line is associated, `not_configured` otherwise. */
export type DeviceStatus = "not_configured" | "configured";

export interface DeviceRecord {
  id: string;
  /** Lowercase `aa:bb:cc:dd:ee:ff`. */
  mac: string | null;
  ip: string | null;
  sn: string | null;
  vendor: string | null;
  model: string | null;
  version: string | null;
  plugin: string | null;
  description: string | null;
  template_id: string | null;
  status: DeviceStatus;
  options: Record<string, unknown>;
  line_ids: number[];
}

export const devices = new Collection<DeviceRecord>("devices", { mac: (device) => device.mac });

/** A new device id: 32 random lowercase hex characters. */
export function newDeviceId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The status a device has with these lines. */
export const deviceStatus = (lineIds: number[]): DeviceStatus =>
  lineIds.length ? "configured" : "not_configured";

/** `mac` as lowercase `aa:bb:cc:dd:ee:ff` (`:` or `-` separators accepted), or null. */
export function normalizeMac(mac: string): string | null {
  return /^[0-9a-f]{2}([:-][0-9a-f]{2}){5}$/i.test(mac)
    ? mac.toLowerCase().replaceAll("-", ":")
    : null;
}

export const getDevice = (store: Store, id: string) => devices.get(store, id);

/** The device with this MAC address (any accepted spelling), or null. */
export async function findDeviceByMac(store: Store, mac: string): Promise<DeviceRecord | null> {
  const normal = normalizeMac(mac);
  return normal ? await devices.findBy(store, "mac", normal) : null;
}

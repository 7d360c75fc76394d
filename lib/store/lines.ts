/**
 * Lines: what a user is reached on. A line lives in a context, holds extensions (the numbers that
 * ring it), one endpoint (SIP, SCCP or custom: how the platform reaches it), at most one device,
 * and its users (the first is the main user). Both sides of each association keep it
 * (docs/confd.md).
 */
import {
  type EndpointRecord,
  type EndpointType,
  getEndpoint,
  type SipEndpointRecord,
} from "./endpoints.ts";
import { Collection, randomText } from "./records.ts";
import type { Store } from "./store.ts";
import type { UserRecord } from "./users.ts";

export interface LineRecord {
  id: number;
  /** Generated, 8 lowercase letters or digits; the SCCP interface is `SCCP/<name>`. */
  name: string;
  /** The endpoint's type, null while the line has none. */
  protocol: EndpointType | null;
  /** Name of the context. */
  context: string;
  /** Key of the line on its device, from 1 (formerly `device_slot`). */
  position: number;
  /** 6 digits that provision a phone (formerly `provisioning_extension`). */
  provisioning_code: string;
  caller_id_name: string | null;
  caller_id_num: string | null;
  device_id: string | null;
  endpoint: { type: EndpointType; id: number } | null;
  extension_ids: number[];
  /** Users in association order; the first is the main user. */
  user_ids: number[];
}

export const lines = new Collection<LineRecord>("lines", {
  name: (line) => line.name,
  provisioning_code: (line) => line.provisioning_code,
});

export const getLine = (store: Store, id: number) => lines.get(store, id);

/** A new line name: 8 lowercase letters or digits. */
export const newLineName = () => randomText(8);

/** A new provisioning code: 6 digits, not starting with 0. */
export function newProvisioningCode(): string {
  const [random] = crypto.getRandomValues(new Uint32Array(1));
  return String(100000 + random! % 900000);
}

/** The lines of `user`, main line first. */
export async function linesOfUser(store: Store, user: UserRecord): Promise<LineRecord[]> {
  const found = await Promise.all(user.line_ids.map((id) => getLine(store, id)));
  return found.filter((line) => line !== null);
}

/** The main line of `user` (the first associated), or null. */
export async function mainLine(store: Store, user: UserRecord): Promise<LineRecord | null> {
  const id = user.line_ids[0];
  return id === undefined ? null : await getLine(store, id);
}

/** The endpoint of `line`, or null when it has none. */
export function lineEndpoint(store: Store, line: LineRecord): Promise<EndpointRecord | null> {
  return line.endpoint
    ? getEndpoint(store, line.endpoint.type, line.endpoint.id)
    : Promise.resolve(null);
}

/** The SIP endpoint of the user's main line, or null when there is none. */
export async function mainSipEndpoint(
  store: Store,
  user: UserRecord,
): Promise<SipEndpointRecord | null> {
  const line = await mainLine(store, user);
  if (line?.endpoint?.type !== "sip") return null;
  return await lineEndpoint(store, line) as SipEndpointRecord | null;
}

/**
 * The platform interface of `line`: `SIP/<username>`, `SCCP/<line name>` or the custom
 * endpoint's interface; null without an endpoint.
 */
export async function lineInterface(store: Store, line: LineRecord): Promise<string | null> {
  const endpoint = await lineEndpoint(store, line);
  if (!endpoint) return null;
  if ("interface" in endpoint) return endpoint.interface;
  if ("username" in endpoint) return `SIP/${endpoint.username}`;
  return `SCCP/${line.name}`;
}

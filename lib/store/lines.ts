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
import { type ExtensionRecord, extensions } from "./extensions.ts";
import { Collection, randomBytes, randomText, type Transaction } from "./records.ts";
import type { Store } from "./store.ts";
import { type UserRecord, users } from "./users.ts";

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
  /** Follows the main user's caller id unless {@link callerIdIsExplicit}. */
  caller_id_name: string | null;
  caller_id_num: string | null;
  /**
   * True once the caller id was written through `/1.1/lines` with a value: it then no longer
   * follows the main user (both parts, until both are written null again). Absent on records
   * older than the field, which count as explicit when either part is set.
   */
  caller_id_explicit?: boolean;
  device_id: string | null;
  endpoint: { type: EndpointType; id: number } | null;
  extension_ids: number[];
  /** Users in association order; the first is the main user. */
  user_ids: number[];
  /**
   * The Asterisk server the line is placed on when svc drives several (`/1.1` shows it as
   * `registrar`, docs/asterisk.md "Several servers"); absent: the main one.
   */
  registrar?: string;
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
  const [a, b, c, d] = randomBytes(4);
  return String(100000 + ((a! | b! << 8 | c! << 16 | d! << 24) >>> 0) % 900000);
}

/** The longest caller id name a line takes (`/1.1/lines` accepts no longer). */
const MAX_CALLER_ID_NAME = 80;

/** Whether the line keeps its own caller id instead of following its main user. */
export function callerIdIsExplicit(line: LineRecord): boolean {
  return line.caller_id_explicit ?? (line.caller_id_name !== null || line.caller_id_num !== null);
}

/**
 * The caller id a line takes from its main user, as XiVO derives it: the name and number of the
 * user's `caller_id` (`"Alice Martin" <1001>`, `"Alice Martin"`, or `Alice <1001>` as users type
 * it); without a name there, the user's first and last names; without a number there, `exten`
 * (the line's first extension; a pattern is no number). Both null without a user.
 *
 * @example
 * mainUserCallerId({ firstname: "Alice", lastname: null, caller_id: '"Alice"' }, "1001");
 * // { caller_id_name: "Alice", caller_id_num: "1001" }
 */
export function mainUserCallerId(
  user: Pick<UserRecord, "firstname" | "lastname" | "caller_id"> | null,
  exten: string | null,
): { caller_id_name: string | null; caller_id_num: string | null } {
  if (!user) return { caller_id_name: null, caller_id_num: null };
  const raw = user.caller_id ?? "";
  const match = /^\s*(?:"([^"]*)"|([^"<]*?))\s*(?:<([^>]*)>)?\s*$/.exec(raw);
  const stated = match ? (match[1] ?? match[2] ?? "").trim() : raw.trim();
  const names = [user.firstname, user.lastname].filter(Boolean).join(" ");
  const name = (stated || names).slice(0, MAX_CALLER_ID_NAME) || null;
  const number = match?.[3]?.trim() ?? "";
  const isNumber = (text: string | null): text is string => !!text && /^\+?[0-9*#]+$/.test(text);
  return {
    caller_id_name: name,
    caller_id_num: isNumber(number) ? number : isNumber(exten) ? exten : null,
  };
}

/**
 * `line` with the caller id of `user` (its main user, or null) and `exten` (its first
 * extension's), unless the line's caller id is explicit.
 */
export function followMainUser(
  line: LineRecord,
  user: Pick<UserRecord, "firstname" | "lastname" | "caller_id"> | null,
  exten: string | null,
): LineRecord {
  if (callerIdIsExplicit(line)) return line;
  return { ...line, ...mainUserCallerId(user, exten), caller_id_explicit: false };
}

/**
 * {@link followMainUser} reading the line's main user and first extension in `tx`. `changed`
 * holds records the transaction already changed: `tx.get` answers what was stored, not what the
 * transaction wrote.
 *
 * @example
 * tx.put(lines, await followMainUserIn(tx, { ...line, user_ids }, { users: [user] }));
 */
export async function followMainUserIn(
  tx: Transaction,
  line: LineRecord,
  changed: { users?: UserRecord[]; extensions?: ExtensionRecord[] } = {},
): Promise<LineRecord> {
  if (callerIdIsExplicit(line)) return line;
  const userId = line.user_ids[0];
  const extensionId = line.extension_ids[0];
  const user = userId === undefined
    ? null
    : changed.users?.find((u) => u.id === userId) ?? await tx.get(users, userId);
  const extension = extensionId === undefined
    ? null
    : changed.extensions?.find((e) => e.id === extensionId) ??
      await tx.get(extensions, extensionId);
  return followMainUser(line, user, extension?.exten ?? null);
}

/**
 * Writes in `tx` the caller id of every line `user` (as it now is) is the main user of, when it
 * follows the user and changed.
 */
export async function followUserInLines(tx: Transaction, user: UserRecord): Promise<void> {
  for (const id of user.line_ids) {
    const line = await tx.get(lines, id);
    if (!line || line.user_ids[0] !== user.id) continue;
    const followed = await followMainUserIn(tx, line, { users: [user] });
    if (!sameCallerId(line, followed)) tx.put(lines, followed);
  }
}

/** Whether both versions of a line hold the same caller id fields. */
export const sameCallerId = (a: LineRecord, b: LineRecord) =>
  a.caller_id_name === b.caller_id_name && a.caller_id_num === b.caller_id_num &&
  a.caller_id_explicit === b.caller_id_explicit;

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
  return endpoint ? endpointInterface(line, endpoint) : null;
}

/** {@link lineInterface} of `line` given its endpoint record, without a read. */
export function endpointInterface(line: LineRecord, endpoint: EndpointRecord): string {
  if ("interface" in endpoint) return endpoint.interface;
  if ("username" in endpoint) return `SIP/${endpoint.username}`;
  return `SCCP/${line.name}`;
}

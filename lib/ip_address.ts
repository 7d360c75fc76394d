/**
 * IP addresses in one canonical form, so that two ways of writing an address compare equal: IPv4
 * as four decimal bytes, IPv6 as its eight groups (`::1` is `0:0:0:0:0:0:0:1`, case does not
 * matter). An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) is the IPv4 address `10.0.0.1`: a
 * dual-stack listener reports IPv4 clients so, and it is the same host. An IPv6 zone
 * (`fe80::1%eth0`) is part of the address. Used by the configuration (`SVC_DEPRECATED_API_HOST`
 * lists IP addresses only) and by the 1.0 API's client allowlist.
 */

/** The four bytes of a dotted-decimal IPv4 address (no leading zeros), or null. */
function ipv4Bytes(text: string): number[] | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((part) => /^(0|[1-9]\d{0,2})$/.test(part))) return null;
  const bytes = parts.map(Number);
  return bytes.every((byte) => byte <= 255) ? bytes : null;
}

/** The eight groups of an IPv6 address (with `::` and a dotted IPv4 tail allowed), or null. */
function ipv6Groups(text: string): number[] | null {
  let groupsText = text;
  const tail: number[] = [];
  if (text.includes(".")) {
    const cut = text.lastIndexOf(":");
    const bytes = ipv4Bytes(text.slice(cut + 1));
    if (cut < 0 || !bytes) return null;
    tail.push(bytes[0]! * 256 + bytes[1]!, bytes[2]! * 256 + bytes[3]!);
    groupsText = text.slice(0, cut + 1);
    if (!groupsText.endsWith("::")) groupsText = groupsText.slice(0, -1);
  }
  const halves = groupsText.split("::");
  if (halves.length > 2) return null;
  const groups = (part: string) =>
    part === ""
      ? []
      : part.split(":").map((group) => /^[0-9a-f]{1,4}$/i.test(group) ? parseInt(group, 16) : NaN);
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  if ([...head, ...rest].some(Number.isNaN)) return null;
  const given = head.length + rest.length + tail.length;
  if (halves.length === 2 ? given > 7 : given !== 8) return null;
  return [...head, ...Array(8 - given).fill(0), ...rest, ...tail];
}

/**
 * The canonical form of an IP address, or null when `text` is none: `10.0.0.1`,
 * `0:0:0:0:0:0:0:1`, `fe80:0:0:0:0:0:0:1%eth0`; an IPv4-mapped IPv6 address answers its IPv4
 * form.
 *
 * @example
 * canonicalAddress("::FFFF:10.0.0.1"); // "10.0.0.1"
 */
export function canonicalAddress(text: string): string | null {
  const v4 = ipv4Bytes(text);
  if (v4) return v4.join(".");
  const zoneAt = text.indexOf("%");
  const zone = zoneAt < 0 ? "" : text.slice(zoneAt);
  if (zone === "%") return null;
  const groups = ipv6Groups(zoneAt < 0 ? text : text.slice(0, zoneAt));
  if (!groups) return null;
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return [groups[6]! >> 8, groups[6]! & 255, groups[7]! >> 8, groups[7]! & 255].join(".") +
      zone;
  }
  return groups.map((group) => group.toString(16)).join(":") + zone;
}

/**
 * The bytes Deno KV stores a key as (the `k` column of its SQLite file): the FoundationDB tuple
 * encoding limited to Deno KV's key part types, as `denokv_proto`'s codec writes it. The restore
 * (`lib/store/backup.ts`) reads a backup both through Deno KV (keys and values decoded by Deno
 * itself) and through SQLite (each row's expiry); these bytes join the two.
 *
 * - `Uint8Array`: `0x01`, the bytes with each `0x00` written `0x00 0xff`, then `0x00`;
 * - `string`: `0x02`, its UTF-8 escaped the same way, then `0x00`;
 * - `bigint`: `0x14` for 0; else `0x14 ± n` and the n big-endian bytes of the magnitude (ones'
 *   complement when negative) for n ≤ 8 bytes, `0x1d`/`0x0b` and a length byte beyond;
 * - `number`: `0x21` and the 8 big-endian bytes of the IEEE double, all bits flipped when negative,
 *   the sign bit only otherwise (NaN canonical);
 * - `false` `0x26`, `true` `0x27`.
 */

const BYTES = 0x01;
const STRING = 0x02;
const NEG_INT_START = 0x0b;
const INT_ZERO = 0x14;
const POS_INT_END = 0x1d;
const DOUBLE = 0x21;
const FALSE = 0x26;
const TRUE = 0x27;

/**
 * The stored bytes of `key`.
 *
 * @example
 * encodeKvKey(["c"]); // Uint8Array [2, 99, 0]
 */
export function encodeKvKey(key: Deno.KvKey): Uint8Array {
  const out: number[] = [];
  for (const part of key) encodePart(out, part);
  return Uint8Array.from(out);
}

/** Lower-case hexadecimal of `bytes`, to use stored keys as map keys. */
export function hex(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += byte.toString(16).padStart(2, "0");
  return text;
}

function encodePart(out: number[], part: Deno.KvKeyPart): void {
  if (part instanceof Uint8Array) {
    out.push(BYTES);
    escaped(out, part);
  } else if (typeof part === "string") {
    out.push(STRING);
    escaped(out, new TextEncoder().encode(part));
  } else if (typeof part === "bigint") {
    encodeBigint(out, part);
  } else if (typeof part === "number") {
    encodeDouble(out, part);
  } else if (typeof part === "boolean") {
    out.push(part ? TRUE : FALSE);
  } else {
    throw new TypeError(`not a Deno KV key part: ${String(part)}`);
  }
}

function escaped(out: number[], bytes: Uint8Array): void {
  for (const byte of bytes) {
    out.push(byte);
    if (byte === 0) out.push(0xff);
  }
  out.push(0x00);
}

/** Big-endian bytes of `n` ≥ 0, as few as hold it (none for 0). */
function magnitudeBytes(n: bigint): number[] {
  const bytes: number[] = [];
  for (let rest = n; rest > 0n; rest >>= 8n) bytes.unshift(Number(rest & 0xffn));
  return bytes;
}

function encodeBigint(out: number[], n: bigint): void {
  if (n === 0n) {
    out.push(INT_ZERO);
    return;
  }
  const bytes = magnitudeBytes(n < 0n ? -n : n);
  const length = bytes.length;
  if (n > 0n) {
    if (length <= 8) out.push(INT_ZERO + length, ...bytes);
    else out.push(POS_INT_END, length, ...bytes);
    return;
  }
  const complement = bytes.map((byte) => byte ^ 0xff);
  if (length <= 8) out.push(INT_ZERO - length, ...complement);
  else out.push(NEG_INT_START, length ^ 0xff, ...complement);
}

function encodeDouble(out: number[], x: number): void {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  let bits = view.getBigUint64(0);
  if (Number.isNaN(x)) bits = (bits >> 63n) === 1n ? 0xfff8000000000000n : 0x7ff8000000000000n;
  bits = (bits >> 63n) === 1n ? bits ^ 0xffffffffffffffffn : bits ^ 0x8000000000000000n;
  view.setBigUint64(0, bits);
  out.push(DOUBLE, ...new Uint8Array(view.buffer));
}

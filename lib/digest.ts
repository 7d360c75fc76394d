/**
 * SHA-256 and a constant-time comparison, through Web Crypto: `node:crypto` would load Deno's Node
 * layer at every start (about 10 ms).
 */

const encoder = new TextEncoder();

/** SHA-256 of `data` (text as UTF-8). */
export async function sha256(data: string | Uint8Array): Promise<Uint8Array> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

/** SHA-256 of `data`, as lower-case hex. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  return Array.from(await sha256(data), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * True when `a` and `b` hold the same bytes; every byte is compared whichever differs first, so the
 * time does not tell where a guess went wrong.
 */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ (b[i] ?? 0);
  return difference === 0;
}

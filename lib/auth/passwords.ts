/**
 * Salted, slow password hashes (PBKDF2-SHA256 through Web Crypto). The stored form names the
 * algorithm and the iteration count, so the cost can be raised later without breaking old hashes:
 * `pbkdf2-sha256$<iterations>$<salt base64>$<hash base64>`.
 */

const ITERATIONS = 600_000; // OWASP's 2023 figure for PBKDF2-HMAC-SHA256
const encoder = new TextEncoder();

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (char) => char.charCodeAt(0));

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, [
    "deriveBits",
  ]);
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt: salt as BufferSource, iterations },
    key,
    256,
  );
  return new Uint8Array(bits);
}

/**
 * Hashes a password with a fresh random salt.
 *
 * @example
 * const stored = await hashPassword("s3cret");
 */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const hash = await derive(password, salt, ITERATIONS);
  return `pbkdf2-sha256$${ITERATIONS}$${toBase64(salt)}$${toBase64(hash)}`;
}

/**
 * Checks a password against a stored hash in constant time. With `stored` null (no such user) it
 * still spends the same work, so a response time does not tell which logins exist.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const [scheme, iterations, salt, hash] = (stored ?? "").split("$");
  if (scheme !== "pbkdf2-sha256" || !iterations || !salt || !hash) {
    await derive(password, new Uint8Array(16), ITERATIONS);
    return false;
  }
  const expected = fromBase64(hash);
  const actual = await derive(password, fromBase64(salt), Number(iterations));
  let difference = expected.length ^ actual.length;
  for (let i = 0; i < expected.length; i++) difference |= expected[i]! ^ (actual[i] ?? 0);
  return difference === 0;
}

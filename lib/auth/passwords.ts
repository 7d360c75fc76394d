/**
 * Salted, slow password hashes (PBKDF2-SHA256 through Web Crypto). The stored form names the
 * algorithm and the iteration count, so the cost can be raised later without breaking old hashes:
 * `pbkdf2-sha256$<iterations>$<salt base64>$<hash base64>`.
 *
 * Every derivation of the process (logins, password changes, imports) goes through one pool
 * (docs/performance.md, "Password hashing"): at most `concurrency` run at once, the cores by
 * default, and the others wait in one first-come first-served queue. Web Crypto already derives
 * off the event loop, on Deno's blocking threads, but without a bound: 50 logins at once were 50
 * threads sharing two cores with the event loop, which then answered everything else late.
 */
import pLimit from "p-limit";
import { sameBytes } from "../digest.ts";

/** OWASP's 2023 figure for PBKDF2-HMAC-SHA256; `SVC_HASH_ITERATIONS` changes it. */
export const DEFAULT_ITERATIONS = 600_000;

const encoder = new TextEncoder();
const pool = pLimit(navigator.hardwareConcurrency);
let iterations = DEFAULT_ITERATIONS;

/**
 * Sets the pool's size and the cost of new hashes for the whole process (`createServices` does,
 * from `SVC_HASH_CONCURRENCY` and `SVC_HASH_ITERATIONS`). Derivations already queued keep their
 * place; a smaller size applies as running ones end.
 *
 * @example
 * configurePasswordHashing({ concurrency: 2, iterations: 600_000 });
 */
export function configurePasswordHashing(
  settings: { concurrency: number; iterations: number },
): void {
  pool.concurrency = settings.concurrency;
  iterations = settings.iterations;
}

/** The pool every derivation goes through: its size and load, and a way to run under it. */
export const hashPool = {
  /** Derivations allowed at once. */
  get size(): number {
    return pool.concurrency;
  },
  /** Derivations running now. */
  get running(): number {
    return pool.activeCount;
  },
  /** Derivations waiting for their turn. */
  get waiting(): number {
    return pool.pendingCount;
  },
  /** Runs `task` once it is its turn, holding one place of the pool until it settles. */
  run<T>(task: () => Promise<T>): Promise<T> {
    return pool(task);
  },
};

const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (char) => char.charCodeAt(0));

function derive(password: string, salt: Uint8Array, count: number): Promise<Uint8Array> {
  return pool(async () => {
    const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, [
      "deriveBits",
    ]);
    const bits = await crypto.subtle.deriveBits(
      { name: "PBKDF2", hash: "SHA-256", salt: salt as BufferSource, iterations: count },
      key,
      256,
    );
    return new Uint8Array(bits);
  });
}

/**
 * Hashes a password with a fresh random salt, at the configured cost.
 *
 * @example
 * const stored = await hashPassword("s3cret");
 */
export async function hashPassword(password: string): Promise<string> {
  const count = iterations;
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const hash = await derive(password, salt, count);
  return `pbkdf2-sha256$${count}$${toBase64(salt)}$${toBase64(hash)}`;
}

/**
 * Hashes many passwords (null: none) through the pool, answering the hashes in order. At most the
 * pool's size of them wait in its queue at once, so a login arriving during an import of thousands
 * of passwords waits for a few hashes, not for the import. `onHashed` is told each index done.
 *
 * @example
 * const hashes = await hashPasswords(["a-pw", null, "c-pw"]); // [hash, null, hash]
 */
export async function hashPasswords(
  passwords: readonly (string | null)[],
  onHashed: (index: number) => void = () => {},
): Promise<(string | null)[]> {
  const hashes: (string | null)[] = passwords.map(() => null);
  let next = 0;
  const lane = async () => {
    while (next < passwords.length) {
      const index = next++;
      const password = passwords[index];
      if (password) hashes[index] = await hashPassword(password);
      onHashed(index);
    }
  };
  const lanes = Math.max(1, Math.min(pool.concurrency, passwords.length));
  await Promise.all(Array.from({ length: lanes }, lane));
  return hashes;
}

/**
 * Checks a password against a stored hash in constant time. With `stored` null (no such user) it
 * still spends the same work, so a response time does not tell which logins exist.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const [scheme, count, salt, hash] = (stored ?? "").split("$");
  if (scheme !== "pbkdf2-sha256" || !/^[1-9]\d{0,9}$/.test(count ?? "") || !salt || !hash) {
    await derive(password, new Uint8Array(16), iterations);
    return false;
  }
  const expected = fromBase64(hash);
  const actual = await derive(password, fromBase64(salt), Number(count));
  return sameBytes(expected, actual);
}

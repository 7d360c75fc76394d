/**
 * Idempotency keys in the store (docs/decisions.md "Idempotent commands"): which request of a
 * caller first used a key, whether it is still running, and its answer once it ended. Every
 * process shares them, so a retry reaching another process finds the first answer.
 *
 * Keys:
 * - `["idempotency_keys", caller, key]` → {@link IdempotencyEntry}: the claim of a running
 *   request (with a short lease) or the answer of an ended one. Written with `expireIn` so that Deno
 *   KV drops it after the key's lifetime; the stored `expiresAt` (on the injected clock) is what
 *   decides, since `expireIn` deletes lazily and follows the wall clock.
 * - `["idempotency_parts", caller, key, claim, n]` → one slice of an answer body too large to sit in
 *   the entry (Deno KV values are at most 64 KiB). Parts are written first, under the claim's id,
 *   then the entry names how many there are and the body's digest, so a reader never assembles a
 *   half-written answer, and parts of an older claim are never mistaken for the current one's.
 *
 * Claiming is a check-and-set on the entry's versionstamp: of two requests racing for one key,
 * exactly one holds the claim.
 */
import { sha256Hex } from "../digest.ts";
import type { Store } from "./store.ts";

/** The answer of an ended request, as replayed. */
export interface StoredAnswer {
  status: number;
  /** The headers replayed, lower-case names, in order. */
  headers: [string, string][];
  body: Uint8Array;
}

interface EntryBase {
  /** Digest of the request (method, path, query, media type, body) that first used the key. */
  fingerprint: string;
  /** Id of the claim that ran (or runs) the request. */
  claim: string;
  /** The key is forgotten once this time (ms, injected clock) has passed. */
  expiresAt: number;
}

/** A request holding the key while it runs; free again once `leaseUntil` has passed. */
export interface RunningEntry extends EntryBase {
  state: "running";
  leaseUntil: number;
}

/** An ended request and its answer (gzip-compressed body, inline or in parts). */
export interface AnsweredEntry extends EntryBase {
  state: "answered";
  status: number;
  headers: [string, string][];
  /** The compressed body when small enough, else null and the body is in `parts` parts. */
  inline: Uint8Array | null;
  parts: number;
  /** SHA-256 (hex) of the compressed body, checked when the parts are assembled. */
  digest: string;
}

export type IdempotencyEntry = RunningEntry | AnsweredEntry;

/** What claiming a key found. */
export type ClaimOutcome =
  /** The caller holds the key now and runs the request under `claim`. */
  | { kind: "claimed"; claim: string }
  /** The same request ended before: its answer. */
  | { kind: "answered"; answer: StoredAnswer }
  /** The same request is still running (here or in another process). */
  | { kind: "running" }
  /** Another request (method, path, query or body differ) used the key. */
  | { kind: "mismatch" };

const entryKey = (caller: string, key: string): Deno.KvKey => ["idempotency_keys", caller, key];
const partKey = (caller: string, key: string, claim: string, n: number): Deno.KvKey => [
  "idempotency_parts",
  caller,
  key,
  claim,
  n,
];

/** Largest compressed body kept inside the entry itself. */
const INLINE_BYTES = 48 * 1024;
/** One part of a larger body: well under Deno KV's 64 KiB per value. */
export const PART_BYTES = 60 * 1024;
/** Parts written per atomic operation (Deno KV allows 800 KiB per operation). */
const PARTS_PER_COMMIT = 10;
/** Parts read at once (Deno KV's `getMany` limit). */
const READ_BATCH = 10;
/** Parts outlive their entry a little, so an entry read just before its expiry still finds them. */
const PART_MARGIN_MS = 60_000;

/** Lifetimes of a claim, from {@link claimKey}'s caller. */
export interface Lifetimes {
  now: number;
  /** How long the key lives after its first use. */
  ttlMs: number;
  /** How long a claim holds the key without being renewed. */
  leaseMs: number;
}

/** The entry, unless its lifetime ended (or its lease ran out while running). */
function live(entry: IdempotencyEntry | null, now: number): IdempotencyEntry | null {
  if (!entry || entry.expiresAt <= now) return null;
  if (entry.state === "running" && entry.leaseUntil <= now) return null;
  return entry;
}

/**
 * Claims `key` for `caller`'s request `fingerprint`, atomically: the key is free (never used,
 * expired, or its claim's lease ran out: a process died running it), so the caller holds it now;
 * or the same request ended (its answer) or runs; or another request used the key.
 *
 * @example
 * const outcome = await claimKey(store, "webservice:3", "k-1", digest, { now, ttlMs, leaseMs });
 */
export async function claimKey(
  store: Store,
  caller: string,
  key: string,
  fingerprint: string,
  { now, ttlMs, leaseMs }: Lifetimes,
): Promise<ClaimOutcome> {
  const at = entryKey(caller, key);
  for (;;) {
    const current = await store.get<IdempotencyEntry>(at);
    const entry = live(current.value, now);
    if (entry) {
      if (entry.fingerprint !== fingerprint) return { kind: "mismatch" };
      if (entry.state === "running") return { kind: "running" };
      return { kind: "answered", answer: await assemble(store, caller, key, entry) };
    }
    const claim = crypto.randomUUID();
    const running: RunningEntry = {
      state: "running",
      fingerprint,
      claim,
      expiresAt: now + ttlMs,
      leaseUntil: now + leaseMs,
    };
    const result = await store.commit((op) =>
      op.check({ key: at, versionstamp: current.versionstamp }).set(at, running, {
        expireIn: ttlMs,
      })
    );
    if (result.ok) return { kind: "claimed", claim };
    // another request changed the entry meanwhile: look again
  }
}

/** The running entry of `claim`, with its versionstamp; null when the claim was lost. */
async function ownEntry(store: Store, at: Deno.KvKey, claim: string) {
  const current = await store.get<IdempotencyEntry>(at);
  const entry = current.value;
  if (entry?.state !== "running" || entry.claim !== claim) return null;
  return { entry, versionstamp: current.versionstamp };
}

/**
 * Extends `claim`'s lease to `now + leaseMs` while its request runs; false when the claim was
 * lost (its lease ran out and another request took the key).
 */
export async function renewClaim(
  store: Store,
  caller: string,
  key: string,
  claim: string,
  now: number,
  leaseMs: number,
): Promise<boolean> {
  const at = entryKey(caller, key);
  const own = await ownEntry(store, at, claim);
  if (!own) return false;
  const renewed: RunningEntry = { ...own.entry, leaseUntil: now + leaseMs };
  const result = await store.commit((op) =>
    op.check({ key: at, versionstamp: own.versionstamp }).set(at, renewed, {
      expireIn: Math.max(1, own.entry.expiresAt - now),
    })
  );
  return result.ok;
}

/** Gives the key back (the request's answer is not kept: a retry runs it again). */
export async function releaseClaim(
  store: Store,
  caller: string,
  key: string,
  claim: string,
): Promise<void> {
  const at = entryKey(caller, key);
  const own = await ownEntry(store, at, claim);
  if (!own) return;
  await store.commit((op) => op.check({ key: at, versionstamp: own.versionstamp }).delete(at));
}

/**
 * Keeps `answer` as the key's answer for the rest of its lifetime; false (and nothing kept) when
 * `claim` was lost meanwhile.
 */
export async function saveAnswer(
  store: Store,
  caller: string,
  key: string,
  claim: string,
  answer: StoredAnswer,
  now: number,
): Promise<boolean> {
  const at = entryKey(caller, key);
  const own = await ownEntry(store, at, claim);
  if (!own) return false;
  const remaining = Math.max(1, own.entry.expiresAt - now);
  const compressed = await gzip(answer.body);
  const inline = compressed.length <= INLINE_BYTES ? compressed : null;
  const parts = inline ? 0 : Math.ceil(compressed.length / PART_BYTES);
  for (let first = 0; first < parts; first += PARTS_PER_COMMIT) {
    const last = Math.min(parts, first + PARTS_PER_COMMIT);
    await store.commit((op) => {
      for (let n = first; n < last; n++) {
        op.set(
          partKey(caller, key, claim, n),
          compressed.subarray(n * PART_BYTES, (n + 1) * PART_BYTES),
          { expireIn: remaining + PART_MARGIN_MS },
        );
      }
      return op;
    });
  }
  const answered: AnsweredEntry = {
    state: "answered",
    fingerprint: own.entry.fingerprint,
    claim,
    expiresAt: own.entry.expiresAt,
    status: answer.status,
    headers: answer.headers,
    inline,
    parts,
    digest: await sha256Hex(compressed),
  };
  const result = await store.commit((op) =>
    op.check({ key: at, versionstamp: own.versionstamp }).set(at, answered, {
      expireIn: remaining,
    })
  );
  if (!result.ok) await deleteParts(store, caller, key, claim, parts);
  return result.ok;
}

async function deleteParts(store: Store, caller: string, key: string, claim: string, n: number) {
  for (let first = 0; first < n; first += PARTS_PER_COMMIT) {
    const last = Math.min(n, first + PARTS_PER_COMMIT);
    await store.commit((op) => {
      for (let i = first; i < last; i++) op.delete(partKey(caller, key, claim, i));
      return op;
    });
  }
}

/** The answer of an ended request; its parts must all be there and match the digest. */
async function assemble(
  store: Store,
  caller: string,
  key: string,
  entry: AnsweredEntry,
): Promise<StoredAnswer> {
  let compressed = entry.inline;
  if (!compressed) {
    compressed = new Uint8Array(entry.parts * PART_BYTES);
    let length = 0;
    for (let first = 0; first < entry.parts; first += READ_BATCH) {
      const keys = [];
      for (let n = first; n < Math.min(entry.parts, first + READ_BATCH); n++) {
        keys.push(partKey(caller, key, entry.claim, n));
      }
      for (const part of await store.getMany<Uint8Array>(keys)) {
        if (!(part.value instanceof Uint8Array)) throw new Error("a stored answer lost a part");
        compressed.set(part.value, length);
        length += part.value.length;
      }
    }
    compressed = compressed.subarray(0, length);
  }
  if (await sha256Hex(compressed) !== entry.digest) {
    throw new Error("a stored answer does not match its digest");
  }
  return { status: entry.status, headers: entry.headers, body: await gunzip(compressed) };
}

/** The entry of `caller`'s `key` as stored, expired or not (tests and diagnostics). */
export async function readEntry(
  store: Store,
  caller: string,
  key: string,
): Promise<IdempotencyEntry | null> {
  return (await store.get<IdempotencyEntry>(entryKey(caller, key))).value;
}

const through = async (bytes: Uint8Array, stream: CompressionStream | DecompressionStream) =>
  new Uint8Array(
    await new Response(new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(stream))
      .arrayBuffer(),
  );
const gzip = (bytes: Uint8Array) => through(bytes, new CompressionStream("gzip"));
const gunzip = (bytes: Uint8Array) => through(bytes, new DecompressionStream("gzip"));

/**
 * The store side of idempotency keys (lib/store/idempotency_keys.ts) and the header's syntax
 * (lib/idempotency.ts): one claim among racers, leases, lost claims, answers larger than a Deno KV
 * value kept in parts, expiry on the injected clock.
 */
import assert from "node:assert/strict";
import { parseIdempotencyKey } from "../../lib/idempotency.ts";
import {
  claimKey,
  PART_BYTES,
  readEntry,
  releaseClaim,
  renewClaim,
  saveAnswer,
  type StoredAnswer,
} from "../../lib/store/idempotency_keys.ts";
import { Store } from "../../lib/store/store.ts";

const T0 = Date.UTC(2026, 0, 1);
const TTL = 24 * 3600_000;
const LEASE = 30_000;
const at = (now: number) => ({ now, ttlMs: TTL, leaseMs: LEASE });

async function withStore(fn: (store: Store) => Promise<void>) {
  const store = await Store.open(":memory:");
  try {
    await fn(store);
  } finally {
    store.close();
  }
}

/** Bytes that do not compress: the body stays about as large once gzipped. */
function noise(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i += 65536) {
    crypto.getRandomValues(bytes.subarray(i, Math.min(length, i + 65536)));
  }
  return bytes;
}

const answer = (body: Uint8Array, status = 201): StoredAnswer => ({
  status,
  headers: [["content-type", "application/json"]],
  body,
});

Deno.test("claimKey: of ten racers exactly one holds the key", async () => {
  await withStore(async (store) => {
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () => claimKey(store, "c", "k", "f", at(T0))),
    );
    assert.equal(outcomes.filter((o) => o.kind === "claimed").length, 1);
    assert.equal(outcomes.filter((o) => o.kind === "running").length, 9);
  });
});

Deno.test("an answer larger than a Deno KV value is kept in parts and read back whole", async () => {
  await withStore(async (store) => {
    const claimed = await claimKey(store, "c", "big", "f", at(T0));
    assert.equal(claimed.kind, "claimed");
    const body = noise(12 * PART_BYTES + 123); // more parts than one atomic operation writes
    const kept = await saveAnswer(store, "c", "big", claimed.claim, answer(body), T0 + 10);
    assert.equal(kept, true);
    const entry = await readEntry(store, "c", "big");
    assert.equal(entry?.state, "answered");
    assert.ok(entry.state === "answered" && entry.inline === null && entry.parts >= 12);
    const again = await claimKey(store, "c", "big", "f", at(T0 + 20));
    assert.equal(again.kind, "answered");
    assert.equal(again.answer.status, 201);
    assert.deepEqual(again.answer.headers, [["content-type", "application/json"]]);
    assert.deepEqual(again.answer.body, body);
    // a small one sits in the entry itself
    const small = await claimKey(store, "c", "small", "f", at(T0));
    assert.equal(small.kind, "claimed");
    await saveAnswer(store, "c", "small", small.claim, answer(new Uint8Array(10), 400), T0);
    const smallEntry = await readEntry(store, "c", "small");
    assert.ok(smallEntry?.state === "answered" && smallEntry.inline && smallEntry.parts === 0);
  });
});

Deno.test("a claim whose lease ran out is lost: the key is free, the late answer is not kept", async () => {
  await withStore(async (store) => {
    const first = await claimKey(store, "c", "k", "f", at(T0));
    assert.equal(first.kind, "claimed");
    assert.equal((await claimKey(store, "c", "k", "f", at(T0 + LEASE - 1))).kind, "running");
    // renewed, it holds on
    assert.equal(await renewClaim(store, "c", "k", first.claim, T0 + LEASE - 1, LEASE), true);
    assert.equal((await claimKey(store, "c", "k", "f", at(T0 + LEASE + 1))).kind, "running");
    // not renewed any more: after its lease another request takes the key
    const second = await claimKey(store, "c", "k", "other", at(T0 + 2 * LEASE));
    assert.equal(second.kind, "claimed");
    const late = await saveAnswer(store, "c", "k", first.claim, answer(noise(3 * PART_BYTES)), T0);
    assert.equal(late, false);
    assert.equal(await renewClaim(store, "c", "k", first.claim, T0, LEASE), false);
    const parts = await store.list({ prefix: ["idempotency_parts", "c", "k", first.claim] });
    assert.equal(parts.length, 0, "the lost claim's parts are removed");
    // releasing someone else's claim does nothing
    await releaseClaim(store, "c", "k", first.claim);
    assert.equal((await readEntry(store, "c", "k"))?.claim, second.claim);
  });
});

Deno.test("keys expire after their lifetime on the injected clock; callers never meet", async () => {
  await withStore(async (store) => {
    const claimed = await claimKey(store, "c", "k", "f", at(T0));
    assert.equal(claimed.kind, "claimed");
    await saveAnswer(store, "c", "k", claimed.claim, answer(new Uint8Array([1])), T0 + 5);
    assert.equal((await claimKey(store, "c", "k", "f", at(T0 + TTL - 1))).kind, "answered");
    assert.equal((await claimKey(store, "c", "k", "g", at(T0 + TTL - 1))).kind, "mismatch");
    assert.equal((await claimKey(store, "other", "k", "g", at(T0))).kind, "claimed");
    assert.equal((await claimKey(store, "c", "k", "g", at(T0 + TTL))).kind, "claimed");
  });
});

Deno.test("parseIdempotencyKey: an RFC 8941 sf-string of 1 to 255 characters, or unquoted", () => {
  const cases: [string, string | null][] = [
    ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', "8e03978e-40d5-43e8-bc93-6894a57f9324"],
    ['  "a b"  ', "a b"],
    ['"a\\"b\\\\c"', 'a"b\\c'],
    [`"${"x".repeat(255)}"`, "x".repeat(255)],
    [`"${"x".repeat(256)}"`, null],
    ['""', null],
    ["", null],
    ["abc", "abc"],
    ["8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"],
    ["x".repeat(256), null],
    ["a b", null],
    ["a,b", null],
    ["a;p=1", null],
    ["é", null],
    ['"abc', null],
    ['"abc"x', null],
    ['"abc";p=1', null],
    ['"a", "b"', null],
    ['"a\\nb"', null],
    ['"tab\there"', null],
    ['"é"', null],
    ['\t"a"', null],
  ];
  for (const [value, expected] of cases) {
    assert.equal(parseIdempotencyKey(value), expected, JSON.stringify(value));
  }
});

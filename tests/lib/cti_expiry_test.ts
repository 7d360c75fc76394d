/**
 * The CTI hub's expiry queue (lib/cti/expiry.ts): one timer hands each item on at its expiry, in
 * order, whatever the order of adding; a deleted item is never handed on; a wait longer than a
 * `setTimeout` can hold is cut into waits of a day.
 */
import assert from "node:assert/strict";
import { type Clock, ManualClock } from "../../lib/clock.ts";
import { ExpiryQueue, MAX_WAIT_MS } from "../../lib/cti/expiry.ts";

interface Item {
  name: string;
  at: number;
}

/** A queue on a manual clock, with every wait asked of the clock. */
function queue() {
  const clock = new ManualClock(0);
  const waits: number[] = [];
  const recording: Clock = {
    now: () => clock.now(),
    after: (ms, task) => (waits.push(ms), clock.after(ms, task)),
  };
  const expired: string[] = [];
  const items = new ExpiryQueue<Item>(
    recording,
    (item) => item.at,
    (item) => expired.push(item.name),
  );
  return { clock, waits, expired, items };
}

Deno.test("items are handed on at their expiry, in order, with one timer", async () => {
  const { clock, expired, items } = queue();
  const late = { name: "late", at: 300 };
  const early = { name: "early", at: 100 };
  const twin = { name: "twin", at: 100 };
  const middle = { name: "middle", at: 200 };
  for (const item of [late, middle, early, twin]) items.add(item);
  assert.equal(clock.pending, 1, "one timer for every item");
  await clock.advance(99);
  assert.deepEqual(expired, []);
  await clock.advance(1);
  assert.deepEqual(expired, ["early", "twin"]);
  await clock.advance(200);
  assert.deepEqual(expired, ["early", "twin", "middle", "late"]);
  assert.equal(items.size, 0);
  assert.equal(clock.pending, 0, "no timer left once empty");
});

Deno.test("a deleted item is not handed on; the others still are", async () => {
  const { clock, expired, items } = queue();
  const first = { name: "first", at: 100 };
  const same = { name: "same", at: 100 };
  const second = { name: "second", at: 200 };
  for (const item of [first, same, second]) items.add(item);
  items.delete(first);
  items.delete({ name: "stranger", at: 100 }); // not in the queue: nothing happens
  await clock.advance(200);
  assert.deepEqual(expired, ["same", "second"]);
  items.add(first);
  items.delete(first);
  assert.equal(clock.pending, 0, "deleting the last item stops the timer");
});

Deno.test("an item expiring in 30 days waits in steps of a day, and not a day less", async () => {
  const { clock, waits, expired, items } = queue();
  items.add({ name: "month", at: 30 * MAX_WAIT_MS });
  await clock.advance(30 * MAX_WAIT_MS - 1);
  assert.deepEqual(expired, []);
  await clock.advance(1);
  assert.deepEqual(expired, ["month"]);
  assert.equal(waits.length, 30);
  assert.ok(waits.every((ms) => ms <= MAX_WAIT_MS), "no wait longer than a day");
});

Deno.test("an item already expired when added is handed on at once", async () => {
  const { clock, expired, items } = queue();
  await clock.advance(1000);
  items.add({ name: "past", at: 10 });
  await clock.advance(0);
  assert.deepEqual(expired, ["past"]);
});

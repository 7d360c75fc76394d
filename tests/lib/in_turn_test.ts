/** `lib/store/in_turn.ts`: the calls for one key run one after the other, in the order made. */
import assert from "node:assert/strict";
import { inTurn } from "../../lib/store/in_turn.ts";

const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

Deno.test("calls for one key run one at a time, first come first served; other keys do not wait", async () => {
  const store = {};
  const log: string[] = [];
  let running = 0;
  const work = (name: string) => async (waited: boolean) => {
    running++;
    assert.equal(running, 1, `${name} ran beside another call for its key`);
    log.push(`${name} start${waited ? " (waited)" : ""}`);
    await tick();
    log.push(`${name} end`);
    running--;
    return name;
  };
  const other = inTurn(store, "b", (waited) => {
    log.push(`other${waited ? " waited" : ""}`);
    return Promise.resolve("other");
  });
  const answers = await Promise.all([
    inTurn(store, "a", work("first")),
    inTurn(store, "a", work("second")),
    inTurn(store, "a", work("third")),
    other,
  ]);
  assert.deepEqual(answers, ["first", "second", "third", "other"]);
  assert.deepEqual(log, [
    "other", // asked first, for another key: at once
    "first start",
    "first end",
    "second start (waited)",
    "second end",
    "third start (waited)",
    "third end",
  ]);
  // the queue of "a" is empty again: the next call does not wait
  assert.equal(await inTurn(store, "a", (waited) => Promise.resolve(waited)), false);
});

Deno.test("a failed call gives its error to its caller only; the next one runs", async () => {
  const store = {};
  const failed = inTurn(store, 1, async () => {
    await tick();
    throw new Error("refused");
  });
  const next = inTurn(store, 1, (waited) => Promise.resolve(waited));
  await assert.rejects(failed, /refused/);
  assert.equal(await next, true);
});

Deno.test("the same key of two stores: no waiting for each other", async () => {
  const [one, two] = [{}, {}];
  let release!: () => void;
  const held = inTurn(one, 7, () => new Promise<void>((resolve) => release = resolve));
  assert.equal(await inTurn(two, 7, (waited) => Promise.resolve(waited)), false);
  release();
  await held;
});

/** `lib/platform/delivery.ts`: platform events to the listeners in order, a burst together. */
import assert from "node:assert/strict";
import { EventDelivery } from "../../../lib/platform/delivery.ts";
import type { PlatformEvent } from "../../../lib/platform/port.ts";

/** A phone event or a finished call, named by `id`. */
const phone = (id: string) => ({ kind: "phone", id }) as unknown as PlatformEvent;
const history = (id: string) => ({ kind: "call_ended", id }) as unknown as PlatformEvent;
/** A delivery whose listeners stay busy with the first batch until `gate` opens. */
function gated(most?: number) {
  const told: string[][] = [];
  const gate = Promise.withResolvers<void>();
  const delivery = new EventDelivery(async (batch) => {
    told.push(ids(batch));
    if (told.length === 1) await gate.promise;
    return true;
  }, most);
  return { told, gate, delivery };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
const ids = (batch: PlatformEvent[]) => batch.map((event) => event.id ?? "");

Deno.test("pushes of one turn go together", async () => {
  const told: string[][] = [];
  const delivery = new EventDelivery((batch) => {
    told.push(ids(batch));
    return Promise.resolve(true);
  });
  await Promise.all([delivery.push([phone("a")]), delivery.push([phone("b")])]);
  assert.deepEqual(told, [["a", "b"]]);
});

Deno.test("one push: its phone events, then its history, in a batch each", async () => {
  const told: string[][] = [];
  const delivery = new EventDelivery((batch) => {
    told.push(ids(batch));
    return Promise.resolve(true);
  });
  await delivery.push([history("h1"), phone("p1"), phone("p2")]);
  assert.deepEqual(told, [["p1", "p2"], ["h1"]]);
  await delivery.push([]);
  assert.deepEqual(told, [["p1", "p2"], ["h1"]], "nothing to tell: nothing told");
});

Deno.test("pushes while the listeners are busy go together, in order, each push's history last", async () => {
  const { told, gate, delivery } = gated();
  const first = delivery.push([phone("a")]);
  await tick(); // "a" is with the listeners
  const second = delivery.push([phone("b"), history("hb")]);
  const third = delivery.push([phone("c")]);
  const fourth = delivery.push([phone("d")]);
  let secondDone = false;
  second.then(() => secondDone = true);
  await new Promise((resolve) => setTimeout(resolve, 10));
  assert.deepEqual(told, [["a"]]);
  assert.equal(secondDone, false, "a push resolves once told");
  gate.resolve();
  await Promise.all([first, second, third, fourth]);
  assert.deepEqual(told, [["a"], ["b"], ["hb"], ["c", "d"]]);
});

Deno.test("at most `most` events at once, without splitting a push's kinds' order", async () => {
  const { told, gate, delivery } = gated(2);
  const pushes = [delivery.push([phone("a")])];
  await tick();
  pushes.push(
    delivery.push([phone("b"), phone("c"), phone("d")]),
    delivery.push([phone("e")]),
    delivery.push([phone("f")]),
  );
  gate.resolve();
  await Promise.all(pushes);
  assert.deepEqual(told, [["a"], ["b", "c"], ["d"], ["e", "f"]]);
});

Deno.test("`tell` answering false: what waits is dropped, every push resolves, later ones go", async () => {
  const told: string[][] = [];
  let open = false;
  const gate = Promise.withResolvers<void>();
  const delivery = new EventDelivery(async (batch) => {
    told.push(ids(batch));
    await gate.promise;
    return open;
  });
  const pushes = [delivery.push([phone("a")])];
  await tick();
  pushes.push(delivery.push([phone("b")]));
  gate.resolve();
  await Promise.all(pushes);
  await delivery.idle();
  assert.deepEqual(told, [["a"]], "b dropped with the refusal");
  open = true;
  await delivery.push([phone("c")]);
  assert.deepEqual(told, [["a"], ["c"]]);
});

Deno.test("idle() waits for every push so far", async () => {
  const told: string[] = [];
  const delivery = new EventDelivery(async (batch) => {
    await new Promise((resolve) => setTimeout(resolve, 5));
    told.push(...ids(batch));
    return true;
  });
  delivery.push([phone("a")]);
  delivery.push([phone("b")]);
  await delivery.idle();
  assert.deepEqual(told, ["a", "b"]);
});

/**
 * `lib/store/shared_commit.ts`: operations asked for while a commit runs go together in the next
 * one, each caller answered as if its operation had gone alone.
 */
import assert from "node:assert/strict";
import { setDnd } from "../../lib/user_services.ts";
import type { ExportedMessage } from "../../lib/events/messages.ts";
import { commitShared } from "../../lib/store/shared_commit.ts";
import { transact } from "../../lib/store/records.ts";
import { Store } from "../../lib/store/store.ts";
import { StoreUnavailable } from "../../lib/errors.ts";
import { createUser, getUser, users } from "../../lib/store/users.ts";
import { EventExport } from "../../lib/events/export.ts";
import { ManualClock } from "../../lib/clock.ts";
import { createLogger } from "../../lib/log.ts";

/** A store whose commits are counted. */
async function countedStore() {
  const store = await Store.open(":memory:");
  const counted = { store, commits: 0 };
  const commit = store.commit.bind(store);
  store.commit = (build) => {
    counted.commits++;
    return commit(build);
  };
  return counted;
}

Deno.test("operations asked for during a commit go together in the next one", async () => {
  const counted = await countedStore();
  const { store } = counted;
  try {
    const results = await Promise.all(
      Array.from(
        { length: 6 },
        (_, i) =>
          commitShared(store, (op) =>
            op.check({ key: ["thing", i], versionstamp: null })
              .set(["thing", i], i)
              // markers every operation sets, as a collection's version key
              .set(["marker"], true)
              .set(["log_marker"], true, { expireIn: 60_000 })),
      ),
    );
    assert.ok(results.every((result) => result.ok));
    // the first alone (nothing ran), the five asked meanwhile together
    assert.equal(counted.commits, 2);
    const entries = await store.getMany(Array.from({ length: 6 }, (_, i) => ["thing", i]));
    assert.deepEqual(entries.map((entry) => entry.value), [0, 1, 2, 3, 4, 5]);
    assert.equal((await store.get(["marker"])).value, true);
  } finally {
    store.close();
  }
});

Deno.test("a failed check fails only its own operation", async () => {
  const counted = await countedStore();
  const { store } = counted;
  try {
    await store.set(["taken"], "already");
    const [first, good, bad, other] = await Promise.all([
      commitShared(store, (op) => op.set(["first"], 1)),
      commitShared(store, (op) => op.check({ key: ["a"], versionstamp: null }).set(["a"], 1)),
      commitShared(store, (op) => op.check({ key: ["taken"], versionstamp: null }).set(["b"], 1)),
      commitShared(store, (op) => op.check({ key: ["c"], versionstamp: null }).set(["c"], 1)),
    ]);
    assert.equal(first.ok, true);
    assert.equal(good.ok, true);
    assert.equal(bad.ok, false);
    assert.equal(other.ok, true);
    assert.equal((await store.get(["a"])).value, 1);
    assert.equal((await store.get(["b"])).value, null);
    assert.equal((await store.get(["c"])).value, 1);
  } finally {
    store.close();
  }
});

Deno.test("an operation the store refuses is refused alone", async () => {
  const { store } = await countedStore();
  try {
    const huge = "x".repeat(70_000); // over the 64 KiB of a value
    const answers = await Promise.allSettled([
      commitShared(store, (op) => op.set(["first"], 1)),
      commitShared(store, (op) => op.set(["small"], 1)),
      commitShared(store, (op) => op.set(["huge"], huge)),
      commitShared(store, (op) => op.set(["other"], 1)),
    ]);
    assert.deepEqual(answers.map((answer) => answer.status), [
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    assert.equal((await store.get(["small"])).value, 1);
    assert.equal((await store.get(["other"])).value, 1);
    assert.equal((await store.get(["huge"])).value, null);
  } finally {
    store.close();
  }
});

Deno.test("operations touching the same key are never merged: they commit in order", async () => {
  const counted = await countedStore();
  const { store } = counted;
  try {
    const first = await store.set(["k"], 0);
    const answers = await Promise.all([
      commitShared(store, (op) => op.set(["start"], 1)),
      // a check of what the next one writes, then a write of what the one before wrote
      commitShared(store, (op) => op.check({ key: ["k"], versionstamp: first.versionstamp })),
      commitShared(store, (op) => op.set(["k"], 1)),
      commitShared(store, (op) => op.set(["k"], 2)),
      commitShared(store, (op) => op.set(["marker"], "a value, not a marker")),
      commitShared(store, (op) => op.set(["marker"], "the last")),
    ]);
    assert.ok(answers.every((answer) => answer.ok));
    assert.equal((await store.get(["k"])).value, 2);
    assert.equal((await store.get(["marker"])).value, "the last");
    // start alone; check + set k=1; k=2 + the first marker; the second marker
    assert.equal(counted.commits, 5);
  } finally {
    store.close();
  }
});

Deno.test("at most ten checks per shared commit (the Deno KV limit)", async () => {
  const counted = await countedStore();
  const { store } = counted;
  try {
    const answers = await Promise.all(
      Array.from(
        { length: 21 },
        (_, i) =>
          commitShared(
            store,
            (op) => op.check({ key: ["n", i], versionstamp: null }).set(["n", i], i),
          ),
      ),
    );
    assert.ok(answers.every((answer) => answer.ok));
    // 1 alone, then 10 + 10
    assert.equal(counted.commits, 3);
  } finally {
    store.close();
  }
});

Deno.test("users' DND changes made at once share commits; each keeps its event", async () => {
  const counted = await countedStore();
  const { store } = counted;
  const clock = new ManualClock();
  const events = new EventExport({
    store,
    clock,
    logger: createLogger("error"),
    url: "http://127.0.0.1:9/unused",
    secret: null,
    retentionMs: 3600_000,
  });
  const written: ExportedMessage[] = [];
  events.onWritten((entries) => written.push(...entries.map((entry) => entry.event)));
  try {
    const created = [];
    for (let i = 0; i < 5; i++) {
      created.push(await createUser(store, { firstname: "U", username: `u${i}` }));
    }
    const deps = { store, events, platform: { userServicesChanged: () => Promise.resolve() } };
    const before = counted.commits;
    const results = await Promise.all(created.map((user) => setDnd(deps, user, true)));
    assert.ok(results.every((result) => result?.changed));
    assert.ok(counted.commits - before < created.length, "no commit was shared");
    for (const user of created) {
      assert.equal((await getUser(store, user.id))!.services.dnd.enabled, true);
    }
    assert.deepEqual(
      written.map((event) => event.username).sort(),
      created.map((user) => user.username).sort(),
    );
    const deliveries = await events.deliveries();
    assert.equal(deliveries.pending, 5);
    // one user's changes in a row each wait for the one before: their events keep their order
    const alice = created[0]!;
    await Promise.all([setDnd(deps, alice.id, false), setDnd(deps, alice.id, true)]);
    const mine = written.filter((event) => event.username === alice.username);
    assert.deepEqual(
      mine.map((event) => (event.message as { dndEnabled: boolean }).dndEnabled),
      [true, false, true],
    );
  } finally {
    await events.close();
    store.close();
  }
});

Deno.test("a transaction sharing commits still runs again when its read changed", async () => {
  const store = await Store.open(":memory:");
  try {
    const user = await createUser(store, { firstname: "U", username: "racer" });
    let attempts = 0;
    const [changed] = await Promise.all([
      transact(store, async (tx) => {
        attempts++;
        const current = await tx.get(users, user.id);
        // the first attempt's read changes before its commit: it must run again
        if (attempts === 1) await store.set(users.key(user.id), { ...current!, lastname: "X" });
        tx.put(users, { ...current!, firstname: "V" });
        return current;
      }, { shareCommit: true }),
    ]);
    assert.equal(attempts, 2);
    assert.equal(changed!.lastname, "X");
    const stored = await getUser(store, user.id);
    assert.equal(stored!.firstname, "V");
    assert.equal(stored!.lastname, "X");
  } finally {
    store.close();
  }
});

Deno.test("a build that throws is answered as the store answers it, and stops nothing", async () => {
  const { store } = await countedStore();
  try {
    const failing = commitShared(store, () => {
      throw new Error("boom");
    });
    const next = commitShared(store, (op) => op.set(["after"], 1));
    await assert.rejects(failing, StoreUnavailable);
    assert.equal((await next).ok, true);
    assert.equal((await store.get(["after"])).value, 1);
  } finally {
    store.close();
  }
});

Deno.test("an operation that cannot be merged goes alone, before and after the others", async () => {
  const counted = await countedStore();
  const { store } = counted;
  try {
    const answers = await Promise.all([
      commitShared(store, (op) => op.set(["start"], 1)),
      commitShared(store, (op) => op.sum(["count"], 1n)),
      commitShared(store, (op) => op.set(["a"], 1)),
      commitShared(store, (op) => op.sum(["count"], 2n)),
      commitShared(store, (op) => op.set(["b"], 1)),
      commitShared(store, (op) => op.set(["c"], 1)),
    ]);
    assert.ok(answers.every((answer) => answer.ok));
    assert.equal((await store.get<Deno.KvU64>(["count"])).value?.value, 3n);
    // start; the first sum alone; a; the second sum alone; b and c together
    assert.equal(counted.commits, 5);
  } finally {
    store.close();
  }
});

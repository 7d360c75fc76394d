/**
 * The password hash pool (lib/auth/passwords.ts): the settings size it and set the cost, it runs
 * at most its size at once and serves the others in their order of arrival, and an import's many
 * hashes never stand in front of a login for more than the pool's size. Observed through the
 * pool's counts and the order things end in, never through times.
 */
import assert from "node:assert/strict";
import {
  DEFAULT_ITERATIONS,
  hashPassword,
  hashPasswords,
  hashPool,
  verifyPassword,
} from "../../lib/auth/passwords.ts";
import { ctiUser, postJson, setup, setupConfd, waitForJob } from "../helpers.ts";

/** A task holding one place of the pool until `release` is called. */
function holdPlace() {
  const { promise, resolve } = Promise.withResolvers<void>();
  const held = hashPool.run(() => promise);
  return { release: () => resolve(), held };
}

/** Yields to the event loop until `condition` holds (at most `turns` times). */
async function until(condition: () => boolean, what: string, turns = 2000): Promise<void> {
  for (let turn = 0; turn < turns; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`never: ${what}`);
}

Deno.test("the settings size the pool and set the cost of new hashes", async () => {
  await setup({ SVC_HASH_CONCURRENCY: "3", SVC_HASH_ITERATIONS: "100000" });
  assert.equal(hashPool.size, 3);
  assert.match(await hashPassword("pw"), /^pbkdf2-sha256\$100000\$/);
  await setup({});
  assert.equal(hashPool.size, navigator.hardwareConcurrency);
  assert.match(await hashPassword("pw"), new RegExp(`^pbkdf2-sha256\\$${DEFAULT_ITERATIONS}\\$`));
});

Deno.test("a hash of another cost still verifies: the stored form names its own", async () => {
  await setup({ SVC_HASH_ITERATIONS: "100000" });
  const cheap = await hashPassword("s3cret");
  await setup({ SVC_HASH_ITERATIONS: "200000" });
  assert.ok(await verifyPassword("s3cret", cheap));
  assert.ok(!await verifyPassword("other", cheap));
  for (const broken of ["pbkdf2-sha256$0$AAAA$AAAA", "pbkdf2-sha256$x$AAAA$AAAA", "md5$1$a$b"]) {
    assert.ok(!await verifyPassword("s3cret", broken), broken);
  }
});

Deno.test("with a pool of 1, one derivation runs at a time, the others in arrival order", async () => {
  await setup({ SVC_HASH_CONCURRENCY: "1", SVC_HASH_ITERATIONS: "100000" });
  const place = holdPlace();
  const ended: string[] = [];
  const hashes = ["first", "second", "third"].map((name) =>
    hashPassword(name).then(() => ended.push(name))
  );
  await until(() => hashPool.waiting === 3, "three derivations waiting");
  assert.equal(hashPool.running, 1); // the place held: nothing else runs
  place.release();
  await Promise.all(hashes);
  assert.deepEqual(ended, ["first", "second", "third"]);
  assert.equal(hashPool.running + hashPool.waiting, 0);
});

Deno.test("hashPasswords answers in order, skips nulls, and queues at most the pool's size", async () => {
  await setup({ SVC_HASH_CONCURRENCY: "2", SVC_HASH_ITERATIONS: "100000" });
  const place = holdPlace();
  const second = holdPlace();
  const done: number[] = [];
  const hashing = hashPasswords(["a", null, "c", "d", "e"], (index) => done.push(index));
  await until(() => hashPool.waiting === 2, "the import's first two in the queue");
  for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setTimeout(resolve, 0));
  assert.equal(hashPool.waiting, 2, "never more of them than the pool's size");
  place.release();
  second.release();
  const hashes = await hashing;
  assert.equal(hashes[1], null);
  assert.deepEqual(done.toSorted(), [0, 1, 2, 3, 4]);
  for (const [index, password] of ["a", null, "c", "d", "e"].entries()) {
    if (password) assert.ok(await verifyPassword(password, hashes[index]!), `${index}`);
  }
});

Deno.test("logins wait their turn in the pool, in the order they came", async () => {
  // each hash long enough (tens of ms) that a login's few steps after its hash end before the next
  const ctx = await setup({ SVC_HASH_CONCURRENCY: "1", SVC_HASH_ITERATIONS: "300000" });
  const users = [await ctiUser(ctx), await ctiUser(ctx), await ctiUser(ctx)];
  const place = holdPlace();
  const answered: string[] = [];
  const logins = [];
  for (const [n, user] of users.entries()) {
    const login = { login: user.username!, password: `${user.username}-pw` };
    logins.push(
      postJson(ctx, "/svc/api/2.0/auth/login", login).then(async (response) => {
        assert.equal(response.status, 200);
        await response.body?.cancel();
        answered.push(user.username!);
      }),
    );
    await until(() => hashPool.waiting === n + 1, `login ${n + 1} in the queue`);
  }
  assert.equal(hashPool.running, 1);
  assert.deepEqual(answered, []);
  place.release();
  await Promise.all(logins);
  assert.deepEqual(answered, users.map((user) => user.username));
});

Deno.test("a login during an import of many passwords waits for one of its hashes, not all", async () => {
  const { ctx, api } = await setupConfd({
    SVC_HASH_CONCURRENCY: "1",
    SVC_HASH_ITERATIONS: "300000", // the import's five other hashes outlast the login's answer
  });
  const alice = await ctiUser(ctx);
  const rows = Array.from({ length: 6 }, (_, n) => `Row,${n},imp${n},imp${n}-pw`);
  const place = holdPlace();
  const submitted = await api.call(
    "POST",
    "/users/import",
    ["firstname,lastname,username,password", ...rows].join("\n"),
    { "Content-Type": "text/csv", Prefer: "respond-async" },
  );
  assert.equal(submitted.status, 202);
  const job = submitted.headers.get("location")!.replace("/1.1", "");
  await until(() => hashPool.waiting === 1, "the import's first hash in the queue");
  const login = postJson(ctx, "/svc/api/2.0/auth/login", {
    login: alice.username,
    password: `${alice.username}-pw`,
  });
  await until(() => hashPool.waiting === 2, "the login behind it");
  place.release();
  const response = await login;
  assert.equal(response.status, 200);
  await response.body?.cancel();
  // the login is answered after one hash of the import: five are still to come
  assert.equal((await (await api.get(job)).json()).state, "running");
  assert.equal((await waitForJob(api, job)).state, "succeeded");
});

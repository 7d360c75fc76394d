/**
 * Jobs in the store (lib/store/jobs.ts): a live job's heartbeat keeps it running however long it
 * runs, one that stops beating is taken for abandoned and its owner can write nothing more, and an
 * outcome larger than a Deno KV value comes back whole.
 */
import assert from "node:assert/strict";
import { ManualClock } from "../../lib/clock.ts";
import {
  ABANDONED,
  JOB_HEARTBEAT_MS,
  JOB_STALE_MS,
  JobLost,
  JobRun,
  readJob,
  readOutcomeBody,
} from "../../lib/store/jobs.ts";
import { Store } from "../../lib/store/store.ts";

async function withStore(test: (store: Store, clock: ManualClock) => Promise<void>) {
  const store = await Store.open(":memory:");
  try {
    await test(store, new ManualClock());
  } finally {
    store.close();
  }
}

const REQUEST = { request: "POST /1.1/users/import", owner: "7" };

Deno.test("a job that beats stays running for as long as it runs, with its progress", () =>
  withStore(async (store, clock) => {
    const job = await JobRun.create(store, clock, REQUEST);
    await job.running(1000);
    for (let beat = 1; beat <= 30; beat++) {
      job.progress(beat * 10);
      await clock.advance(JOB_HEARTBEAT_MS);
      const read = await readJob(store, clock, job.id);
      assert.equal(read?.state, "running", `after ${beat} beats`);
      assert.deepEqual(read?.rows, { done: beat * 10, total: 1000 });
    }
    await job.finish({ status: 201, body: { created: [] } });
    const ended = (await readJob(store, clock, job.id))!;
    assert.equal(ended.state, "succeeded");
    assert.deepEqual(ended.rows, { done: 1000, total: 1000 });
    assert.deepEqual(await readOutcomeBody(store, ended), { created: [] });
    assert.equal(clock.pending, 0, "no heartbeat left behind");
  }));

Deno.test("a job that stops beating is failed by a reader, and its owner can write nothing more", () =>
  withStore(async (store, clock) => {
    const job = await JobRun.create(store, clock, REQUEST);
    await job.running(3);
    // the owner's clock stands still (a dead or stalled process); a reader's goes on
    const reader = new ManualClock(clock.now() + JOB_STALE_MS);
    assert.equal((await readJob(store, reader, job.id))?.state, "running", "not stale yet");
    const later = new ManualClock(clock.now() + JOB_STALE_MS + 1);
    const failed = (await readJob(store, later, job.id))!;
    assert.equal(failed.state, "failed");
    assert.equal(failed.outcome?.status, ABANDONED.status);
    assert.deepEqual(await readOutcomeBody(store, failed), ABANDONED.body);
    await assert.rejects(job.finish({ status: 201, body: {} }), JobLost);
    const last = job.lastCommit({ status: 201, body: {} });
    await last.prepare();
    const refused = await store.commit((op) => last.add(op));
    assert.equal(refused.ok, false, "its last commit is refused");
    assert.deepEqual(await readJob(store, later, job.id), failed);
  }));

Deno.test("an outcome larger than a store value is kept in parts and read back whole", () =>
  withStore(async (store, clock) => {
    const job = await JobRun.create(store, clock, REQUEST);
    const body = Array.from(
      { length: 4000 },
      (_, n) => `Line ${n + 2}: Input Error – é ${"x".repeat(60)}`,
    );
    await job.finish({ status: 400, body });
    const ended = (await readJob(store, clock, job.id))!;
    assert.equal(ended.state, "failed");
    assert.ok(ended.outcome!.parts > 3, `${ended.outcome!.parts} parts`);
    assert.deepEqual(await readOutcomeBody(store, ended), body);
    assert.equal(await readJob(store, clock, crypto.randomUUID()), null);
  }));

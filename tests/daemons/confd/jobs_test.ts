/**
 * Users CSV imports as jobs (`Prefer: respond-async` → 202, `GET /1.1/jobs/{id}`): the lifecycle,
 * the answer equal to the synchronous one, failures with nothing written, who may read a job, and a
 * job whose process stopped answered failed by another process sharing the store.
 */
import assert from "node:assert/strict";
import { hashPool } from "../../../lib/auth/passwords.ts";
import { prepareStore } from "../../../lib/bootstrap.ts";
import { ManualClock } from "../../../lib/clock.ts";
import { loadConfig } from "../../../lib/config.ts";
import { createLogger } from "../../../lib/log.ts";
import { createServices } from "../../../lib/services.ts";
import { ABANDONED, JOB_HEARTBEAT_MS, JOB_STALE_MS, JOB_TTL_MS } from "../../../lib/store/jobs.ts";
import { Store } from "../../../lib/store/store.ts";
import { prefersAsync } from "../../../daemons/confd/jobs.ts";
import { createApp } from "../../../routes/mod.ts";
import {
  bearer,
  type Confd,
  confd,
  ctiUser,
  expectConfdError,
  expectNotFound,
  login,
  setupConfd,
  type TestContext,
  waitForJob,
} from "../../helpers.ts";

/** Cheap hashes, one at a time: a test holding the pool's place decides when hashing goes on. */
const ENV = { SVC_HASH_CONCURRENCY: "1", SVC_HASH_ITERATIONS: "100000" };

const CSV = { "Content-Type": "text/csv; charset=utf-8" };
const ASYNC = { ...CSV, Prefer: "respond-async" };

/** Rows with fixed uuids, a line and an extension, two with a password. */
const FILE = [
  "uuid,firstname,lastname,username,password,line_protocol,context,exten",
  "00000000-0000-4000-8000-000000000001,Alice,Martin,alice,alice-pw,sip,default,1001",
  "00000000-0000-4000-8000-000000000002,Bob,Durand,bob,bob-pw,sccp,default,1002",
  "00000000-0000-4000-8000-000000000003,Carol,Petit,,,,,",
].join("\n");

/** Submits `csv` as a job; answers the job's path (`/jobs/<id>`) and the 202's body. */
async function submit(api: Confd, method: "POST" | "PUT", csv: string, headers = ASYNC) {
  const response = await api.call(method, "/users/import", csv, headers);
  const body = await response.json();
  assert.equal(response.status, 202, JSON.stringify(body));
  const location = response.headers.get("location") ?? "";
  assert.match(location, /^\/1\.1\/jobs\/[0-9a-f-]{36}$/);
  assert.equal(response.headers.get("preference-applied"), "respond-async");
  assert.equal(location, `/1.1/jobs/${body.id}`);
  return { path: location.slice("/1.1".length), body };
}

/** A task holding the pool's one place until `release`. */
function holdPool() {
  const { promise, resolve } = Promise.withResolvers<void>();
  hashPool.run(() => promise);
  return () => resolve();
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let turn = 0; turn < 2000; turn++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`never: ${what}`);
}

const usersTotal = async (api: Confd) => (await api.list("/users")).total;

Deno.test("Prefer: respond-async is read as RFC 7240 writes it", () => {
  for (
    const yes of ["respond-async", "Respond-Async", "wait=10, respond-async", "respond-async;x"]
  ) {
    assert.ok(prefersAsync(yes), yes);
  }
  for (const no of [undefined, "", "return=minimal", "respond-asyncx", "wait=respond-async"]) {
    assert.ok(!prefersAsync(no), String(no));
  }
});

Deno.test("POST /1.1/users/import as a job: 202, progress, then the synchronous answer", async (t) => {
  const sync = await setupConfd(ENV);
  const expected = await sync.api.call("POST", "/users/import", FILE, CSV);
  assert.equal(expected.status, 201);
  assert.equal(expected.headers.get("location"), null);
  const created = await expected.json();

  const { ctx, api } = await setupConfd(ENV);
  const release = holdPool();
  const { path, body } = await submit(api, "POST", FILE);

  await t.step("the 202 is the job, not started", () => {
    assert.equal(body.request, "POST /1.1/users/import");
    assert.equal(body.state, "pending");
    assert.deepEqual(body.rows, { done: 0, total: null });
    assert.equal(body.status, null);
    assert.equal(body.result, null);
    assert.equal(body.errors, null);
    assert.equal(body.created_at, new Date(ctx.clock.now()).toISOString());
    assert.equal(body.finished_at, null);
  });

  await t.step("while its passwords wait for the pool: running, rows done so far", async () => {
    await until(() => hashPool.waiting === 1, "the first password in the queue");
    await ctx.clock.advance(JOB_HEARTBEAT_MS); // the heartbeat stores the progress
    const job = await (await api.get(path)).json();
    assert.equal(job.state, "running");
    assert.deepEqual(job.rows, { done: 0, total: 3 });
    assert.equal(await usersTotal(api), 0);
  });

  await t.step("once ended: succeeded, with the body the synchronous import answers", async () => {
    release();
    const job = await waitForJob(api, path);
    assert.equal(job.state, "succeeded");
    assert.equal(job.status, 201);
    assert.deepEqual(job.result, created);
    assert.equal(job.errors, null);
    assert.deepEqual(job.rows, { done: 3, total: 3 });
    assert.equal(job.finished_at, new Date(ctx.clock.now()).toISOString());
    assert.equal(await usersTotal(api), 3);
    assert.equal(await loginStatus(ctx, "alice", "alice-pw"), 200);
  });
});

Deno.test("a job's rows done count as the passwords are hashed", async () => {
  const { ctx, api } = await setupConfd(ENV);
  const release = holdPool();
  const csv = "firstname,username,password\nNo,,\nFirst,first,first-pw\nSecond,second,second-pw";
  const { path } = await submit(api, "POST", csv);
  await until(() => hashPool.waiting === 1, "the first password in the queue");
  await ctx.clock.advance(JOB_HEARTBEAT_MS);
  assert.deepEqual((await (await api.get(path)).json()).rows, { done: 1, total: 3 });
  release();
  const job = await waitForJob(api, path);
  assert.deepEqual(job.rows, { done: 3, total: 3 });
  assert.equal(await loginStatus(ctx, "first", "first-pw"), 200);
});

async function loginStatus(ctx: TestContext, username: string, password: string) {
  const response = await ctx.app.request("/svc/api/2.0/auth/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ login: username, password }),
  });
  await response.body?.cancel();
  return response.status;
}

Deno.test("a job that fails keeps the synchronous 400 and writes nothing", async (t) => {
  const { api } = await setupConfd(ENV);
  assert.equal(
    (await api.call("POST", "/users/import", "firstname,username\nT,taken", CSV)).status,
    201,
  );
  const cases: [string, string][] = [
    ["row errors", "firstname,email,password\nA,nope,a-pw\n,b@example.test,b-pw"],
    ["a unique value taken, found by the write", "firstname,username,password\nD,taken,d-pw"],
    ["a file-level error", ""],
    ["an unknown column", "firstname,shoe_size\nA,42"],
  ];
  for (const [name, csv] of cases) {
    await t.step(name, async () => {
      const before = await usersTotal(api);
      const answer = await api.call("POST", "/users/import", csv, CSV);
      const expected = await answer.json();
      assert.equal(answer.status, 400);
      const job = await waitForJob(api, (await submit(api, "POST", csv)).path);
      assert.equal(job.state, "failed");
      assert.equal(job.status, 400);
      assert.deepEqual(job.errors, expected);
      assert.equal(job.result, null);
      assert.equal(await usersTotal(api), before);
    });
  }
});

Deno.test("PUT /1.1/users/import as a job answers the synchronous 200 body", async () => {
  const { ctx, api } = await setupConfd(ENV);
  assert.equal((await api.call("POST", "/users/import", FILE, CSV)).status, 201);
  const update = [
    "uuid,lastname,password",
    "00000000-0000-4000-8000-000000000001,Martin-Roy,alice-new-pw",
    "00000000-0000-4000-8000-000000000002,Durand,",
  ].join("\n");
  const job = await waitForJob(api, (await submit(api, "PUT", update)).path);
  assert.equal(job.request, "PUT /1.1/users/import");
  assert.equal(job.status, 200);
  assert.deepEqual(job.result.updated.map((row: { row_number: number }) => row.row_number), [2, 3]);
  assert.equal((await (await api.get("/users/1")).json()).lastname, "Martin-Roy");
  assert.equal(await loginStatus(ctx, "alice", "alice-new-pw"), 200);
  const unknown = "uuid,lastname\n00000000-0000-4000-8000-00000000000f,X";
  const failed = await waitForJob(api, (await submit(api, "PUT", unknown)).path);
  assert.equal(failed.status, 400);
  assert.match(failed.errors[0], /^Line 2: Resource Not Found - User was not found/);
});

Deno.test("without Prefer: respond-async an import answers at once, as before", async () => {
  const { api } = await setupConfd(ENV);
  for (const prefer of [undefined, "return=minimal"]) {
    const headers: Record<string, string> = prefer ? { ...CSV, Prefer: prefer } : CSV;
    const response = await api.call("POST", "/users/import", "firstname\nA", headers);
    assert.equal(response.status, 201);
    assert.equal(response.headers.get("location"), null);
    assert.equal(response.headers.get("preference-applied"), null);
    assert.equal((await response.json()).created.length, 1);
  }
});

Deno.test("an Idempotency-Key sent again replays the 202 and its job: the file imports once", async () => {
  const { api } = await setupConfd(ENV);
  const headers = { ...ASYNC, "Idempotency-Key": '"job-key-1"' };
  const first = await submit(api, "POST", "firstname,username\nOnce,once", headers);
  const again = await api.call("POST", "/users/import", "firstname,username\nOnce,once", headers);
  assert.equal(again.status, 202);
  assert.equal(again.headers.get("idempotent-replayed"), "true");
  assert.equal(again.headers.get("location"), `/1.1${first.path}`);
  assert.deepEqual(await again.json(), first.body);
  assert.equal((await waitForJob(api, first.path)).status, 201);
  assert.equal(await usersTotal(api), 1);
});

Deno.test("GET /1.1/jobs/{id}: the owner and holders of confd.jobs.{id}.read read it", async (t) => {
  const { ctx, api } = await setupConfd(ENV);
  const { path, body } = await submit(api, "POST", "firstname\nA");
  await waitForJob(api, path);
  await t.step("an unknown id is 404", async () => {
    await expectNotFound(await api.get("/jobs/nope"), "Job", { id: "nope" });
    const unknown = crypto.randomUUID();
    await expectNotFound(await api.get(`/jobs/${unknown}`), "Job", { id: unknown });
  });
  await t.step("another web service user without the ACL: as unknown, 404", async () => {
    const other = await confd(ctx, ["confd.users.import.create"]);
    await expectNotFound(await other.get(path), "Job", { id: body.id });
  });
  await t.step("one holding confd.jobs.{id}.read reads it", async () => {
    for (const acls of [[`confd.jobs.${body.id}.read`], ["confd.jobs.*.read"]]) {
      const reader = await confd(ctx, acls);
      const response = await reader.get(path);
      assert.equal(response.status, 200);
      assert.equal((await response.json()).id, body.id);
    }
  });
  await t.step("a CTI user's token is refused, no token is 401", async () => {
    const user = await ctiUser(ctx);
    const token = await login(ctx, "login", user.username!);
    const response = await ctx.app.request(`/1.1${path}`, { headers: bearer(token) });
    await expectConfdError(response, 403, /^Forbidden - the configuration API is for web service/);
    await expectConfdError(await ctx.app.request(`/1.1${path}`), 401, /^Unauthorized - /);
  });
  await t.step("24 hours after it ended, it is gone", async () => {
    const admin = await confd(ctx, ["confd.#"]);
    assert.equal((await admin.get(path)).status, 200);
    await ctx.clock.advance(JOB_TTL_MS);
    const later = await confd(ctx, ["confd.#"]); // the tokens before expired too
    await expectNotFound(await later.get(path), "Job", { id: body.id });
  });
});

/** Another process on `store`, with its own clock. */
async function processOn(store: Store, clock: ManualClock): Promise<TestContext> {
  const logs: string[] = [];
  const config = loadConfig({ SVC_KV: ":memory:", ...ENV });
  const services = await createServices(config, {
    store,
    clock,
    logger: createLogger("debug", (line) => logs.push(line)),
  });
  await prepareStore(services);
  return { services, app: createApp(services), clock, logs };
}

Deno.test("a job whose process stopped is answered failed by another, and writes nothing after", async () => {
  const store = await Store.open(":memory:");
  try {
    const first = await processOn(store, new ManualClock());
    const api = await confd(first);
    const release = holdPool();
    const { path } = await submit(api, "POST", FILE);
    await until(() => hashPool.waiting === 1, "the job hashing");

    // another process sharing the store, whose clock goes on while the first one's stands still
    const second = await processOn(store, new ManualClock(first.clock.now()));
    const call = (ctx: TestContext) =>
      ctx.app.request(`/1.1${path}`, { headers: bearer(api.token) });
    assert.equal((await (await call(second)).json()).state, "running");
    await second.clock.advance(JOB_STALE_MS + 1);
    const failed = await (await call(second)).json();
    assert.equal(failed.state, "failed");
    assert.equal(failed.status, ABANDONED.status);
    assert.deepEqual(failed.errors, ABANDONED.body);

    // the first process goes on: its import's last commit is refused, nothing shows
    release();
    await until(() => first.logs.some((line) => line.includes('"job not ended"')), "its end");
    assert.deepEqual(await (await call(second)).json(), failed);
    assert.equal(await usersTotal(api), 0);
    const hidden = await store.get(["bulk_hidden"]);
    assert.equal(hidden.value, null);
  } finally {
    store.close();
  }
});

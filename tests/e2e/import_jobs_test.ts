/**
 * A users import as a job (`Prefer: respond-async`) against the real server process: a server
 * killed while the job hashes its passwords leaves a job that the restarted server answers failed
 * once its heartbeat is stale (it never stays `running`), nothing of the file shows, and the same
 * file sent again as a job imports.
 */
import assert from "node:assert/strict";
import { ABANDONED } from "../../lib/store/jobs.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { call, expectStatus, login, until, V2 } from "./svc_http.ts";

const ADMIN = { SVC_ADMIN_LOGIN: "jobs-admin", SVC_ADMIN_PASSWORD: "jobs-admin-password" };
/** Cheaper hashes than the default, still far more than a moment's work for 300 rows. */
const ENV = { ...ADMIN, SVC_HASH_ITERATIONS: "100000" };
const ROWS = 300;

const CSV = ["firstname,lastname,username,password,line_protocol,context,exten"];
for (let row = 1; row <= ROWS; row++) {
  CSV.push(`Job,Row ${row},job${row},job${row}-pw,sip,default,${1000 + row}`);
}

/** Submits the file as a job; answers its path. */
async function submit(server: RunningServer, token: string): Promise<string> {
  const response = await fetch(`${server.baseUrl}/1.1/users/import`, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${token}`,
      "Content-Type": "text/csv",
      Prefer: "respond-async",
    },
    body: CSV.join("\n"),
    signal: AbortSignal.timeout(10_000),
  });
  const body = await response.json();
  assert.equal(response.status, 202, JSON.stringify(body));
  return response.headers.get("location")!;
}

const job = async (server: RunningServer, token: string, path: string) =>
  (await expectStatus(200, server, "GET", path, { token })).body;

const ended = async (server: RunningServer, token: string, path: string) =>
  ["succeeded", "failed"].includes((await job(server, token, path)).state);

Deno.test("a job whose server was killed is answered failed after the restart; nothing shows", async () => {
  await withTempDir(async (dir) => {
    const kv = `${dir}/svc.kv`;
    let server = await startServer({ SVC_KV: kv, ...ENV });
    try {
      const token = await login(
        server,
        "webservice",
        ADMIN.SVC_ADMIN_LOGIN,
        ADMIN.SVC_ADMIN_PASSWORD,
      );
      const path = await submit(server, token);
      // the heartbeat (every 2 s) shows rows hashed: kill it then, mid-way
      let seen = await job(server, token, path);
      await until(
        async () => {
          seen = await job(server, token, path);
          return seen.rows.done > 0;
        },
        60_000,
        "rows done",
      );
      assert.equal(seen.state, "running");
      assert.ok(seen.rows.done < ROWS, `${seen.rows.done} rows done already`);
      assert.equal((await server.kill()).signal, "SIGKILL");

      server = await startServer({ SVC_KV: kv, ...ENV });
      await until(() => ended(server, token, path), 30_000, "the job ended");
      const failed = await job(server, token, path);
      assert.equal(failed.state, "failed");
      assert.equal(failed.status, ABANDONED.status);
      assert.deepEqual(failed.errors, ABANDONED.body);
      const users = await expectStatus(200, server, "GET", "/1.1/users?limit=1", { token });
      assert.equal(users.body.total, 0);
      const refused = await call(server, "POST", `${V2}/auth/login`, {
        body: { login: "job1", password: "job1-pw" },
      });
      assert.equal(refused.status, 401);

      // the same file again, as a job: imported whole
      const again = await submit(server, token);
      await until(() => ended(server, token, again), 120_000, "the second job ended");
      const done = await job(server, token, again);
      assert.equal(done.state, "succeeded", JSON.stringify(done.errors));
      assert.equal(done.result.created.length, ROWS);
      const total = await expectStatus(200, server, "GET", "/1.1/users?limit=1", { token });
      assert.equal(total.body.total, ROWS);
      await login(server, "login", `job${ROWS}`, `job${ROWS}-pw`);
    } finally {
      await server.stop();
    }
  });
});

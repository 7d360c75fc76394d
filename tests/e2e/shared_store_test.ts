/**
 * End-to-end: two real server processes writing to one store file at once, many writers per user.
 * Before the fixes, this lost requests two ways: SQLite's "database is locked", answered at once
 * when the other process commits between a transaction's reads and its write (a 503), and
 * transactions that lost the race for the same user fifty times in a row, retrying without a pause
 * (a 500). The store now runs a locked operation again, and a transaction that lost waits a random
 * moment before its next try (docs/decisions.md, Errors and HTTP).
 */
import assert from "node:assert/strict";
import { DEMO_USERS, DEMO_WEBSERVICE_USER } from "../../lib/demo.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { call, login, V2 } from "./svc_http.ts";

Deno.test("two processes on one store file: concurrent writes through both, none refused", async () => {
  await withTempDir(async (dir) => {
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true" };
    const one = await startServer(env);
    let two: RunningServer | null = null;
    try {
      await one.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      two = await startServer(env);
      const servers = [one, two];
      const tokens = await Promise.all(
        servers.map((server) =>
          login(server, "webservice", DEMO_WEBSERVICE_USER.login, DEMO_WEBSERVICE_USER.password)
        ),
      );
      const statuses = new Map<number, number>();
      const refused: string[] = [];
      // 1,500 DND changes of the demo users, 80 in flight at once, alternating the processes
      const changes = Array.from({ length: 1500 }, (_, n) => n);
      const worker = async () => {
        for (let n = changes.shift(); n !== undefined; n = changes.shift()) {
          const user = DEMO_USERS[n % DEMO_USERS.length]!;
          const { status, body } = await call(
            servers[n % 2]!,
            "POST",
            `${V2}/dnd/${user.username}`,
            {
              token: tokens[n % 2],
              body: { state: n % 3 === 0 },
            },
          );
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status !== 200) refused.push(`${status} ${JSON.stringify(body)}`);
        }
      };
      await Promise.all(Array.from({ length: 80 }, worker));
      const errors = [...one.stderrLines, ...two.stderrLines]
        .filter((line) => /"level":"error"|database is locked|Unreachable/.test(line));
      assert.deepEqual(
        Object.fromEntries(statuses),
        { 200: 1500 },
        `refused: ${refused.join("; ")}\nlogged: ${errors.join("\n")}`,
      );
      assert.deepEqual(errors, [], "no store failure logged by either process");
    } finally {
      await two?.stop();
      await one.stop();
    }
  });
});

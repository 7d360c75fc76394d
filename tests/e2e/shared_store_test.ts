/**
 * End-to-end: two real server processes writing to one store file at once, many writers per user
 * through both. Before the fixes, this lost requests two ways: SQLite's "database is locked",
 * answered at once when the other process commits between a transaction's reads and its write (a
 * 503), and transactions that lost the race for the same user fifty times in a row, retrying
 * without a pause (a 500; still a 503 on a loaded machine, to the user's other writers in the same
 * process). The store now runs a locked operation again, a transaction that lost waits a random
 * moment before its next try, and a user's changes take turns within a process
 * (docs/decisions.md, Errors and HTTP). The events
 * of the changes reach the event URL once each, in the order of their ids, whichever process made
 * them and delivers them, and each user's events keep the order of the user's changes.
 */
import assert from "node:assert/strict";
import { DEMO_USERS, DEMO_WEBSERVICE_USER } from "../../lib/demo.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { call, login, until, V2 } from "./svc_http.ts";

/** A receiver of `SVC_EVENT_URL` keeping each `UserConfigUpdate`'s event id, user and DND. */
function dndReceiver() {
  const received: { id: string; username: string; dnd: boolean }[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const { username, message } = await request.json();
    if (message.msgType === "UserConfigUpdate") {
      const id = request.headers.get("X-Svc-Event-Id")!;
      received.push({ id, username, dnd: (message.ctiMessage ?? message).dndEnabled });
    }
    return new Response(null, { status: 200 });
  });
  const url = `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/e2e/dropbox/`;
  return { url, received, close: () => server.shutdown() };
}

Deno.test("two processes on one store file: concurrent writes through both, none refused, each event once", async () => {
  const receiver = dndReceiver();
  await withTempDir(async (dir) => {
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true", SVC_EVENT_URL: receiver.url };
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
      const dnd = (n: number, user: string, state: boolean) =>
        call(servers[n % 2]!, "POST", `${V2}/dnd/${user}`, {
          token: tokens[n % 2],
          body: { state },
        });
      const statuses = new Map<number, number>();
      const refused: string[] = [];
      // 1,500 DND changes of the demo users, 80 in flight at once, each user's through both
      const changes = Array.from({ length: 1500 }, (_, n) => n);
      const worker = async () => {
        for (let n = changes.shift(); n !== undefined; n = changes.shift()) {
          const user = DEMO_USERS[n % DEMO_USERS.length]!.username;
          const { status, body } = await dnd(Math.floor(n / DEMO_USERS.length), user, n % 3 === 0);
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

      // a last change of each user, once the storm is over: its event comes last
      const last = new Map<string, boolean>();
      for (const [n, { username }] of DEMO_USERS.entries()) {
        const seen = receiver.received.filter((event) => event.username === username).at(-1);
        const state = !(seen?.dnd ?? false);
        assert.equal((await dnd(n, username, state)).status, 200);
        last.set(username, state);
      }
      await until(
        () =>
          DEMO_USERS.every(({ username }) =>
            receiver.received.filter((event) => event.username === username).at(-1)?.dnd ===
              last.get(username)
          ),
        20_000,
        "each user's last change delivered",
      );
      const ids = receiver.received.map((event) => event.id);
      assert.equal(new Set(ids).size, ids.length, "each event delivered once");
      for (const { username } of DEMO_USERS) {
        const events = receiver.received.filter((event) => event.username === username);
        assert.deepEqual(events.map((event) => event.id), events.map((event) => event.id).sort());
        // an event is published only when DND changes: in the order of the changes, each event
        // says the opposite of the one before (ids drawn above the user's last event id)
        const repeated = events.findIndex((event, n) => n > 0 && event.dnd === events[n - 1]!.dnd);
        assert.equal(repeated, -1, `${username}: event ${repeated} repeats the state before it`);
      }
    } finally {
      await two?.stop();
      await one.stop();
      await receiver.close();
    }
  });
});

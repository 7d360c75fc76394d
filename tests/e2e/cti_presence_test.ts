/**
 * End-to-end: presences live in the store. Two real server processes on one store file: a status
 * chosen on a socket of one reaches the user's socket on the other, a list of statuses set through
 * one is what the other greets with; and after both stop, a new process greets the user with the
 * status chosen before.
 */
import assert from "node:assert/strict";
import { DEMO_USERS, DEMO_WEBSERVICE_USER } from "../../lib/demo.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { expectStatus, login, until, V2 } from "./svc_http.ts";

interface Message {
  msgType: string;
  ctiMessage: Record<string, unknown>;
}

/** A socket of `token` on `server` keeping every message it gets. */
function socketOn(server: RunningServer, token: string) {
  const messages: Message[] = [];
  const socket = new WebSocket(`${server.baseUrl.replace("http", "ws")}${V2}/cti?token=${token}`);
  socket.onmessage = (event) => messages.push(JSON.parse(event.data));
  const closed = new Promise((resolve) => socket.addEventListener("close", resolve));
  return {
    messages,
    socket,
    send: (message: unknown) => socket.send(JSON.stringify(message)),
    /** The `ctiMessage` of the first `msgType` message matching `test`, within 5 s. */
    async seen(msgType: string, test: (m: Message["ctiMessage"]) => boolean = () => true) {
      const find = () => messages.find((m) => m.msgType === msgType && test(m.ctiMessage));
      await until(() => find() !== undefined, 5_000, msgType);
      return find()!.ctiMessage;
    },
    async close() {
      socket.close();
      await closed;
    },
  };
}

Deno.test("presences through the store: across two processes, and across a restart", async () => {
  await withTempDir(async (dir) => {
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true" };
    const alice = DEMO_USERS.find((user) => user.username === "alice")!;
    const sockets: ReturnType<typeof socketOn>[] = [];
    let one: RunningServer | null = await startServer(env);
    let two: RunningServer | null = null;
    try {
      await one.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      two = await startServer(env);
      const onOne = socketOn(one, await login(one, "login", alice.username, alice.password));
      const onTwo = socketOn(two, await login(two, "login", alice.username, alice.password));
      sockets.push(onOne, onTwo);
      for (const socket of [onOne, onTwo]) {
        assert.deepEqual(await socket.seen("UserStatusUpdate"), { status: "available" });
      }
      onOne.send({ claz: "web", command: "userStatusUpdate", status: "outtolunch" });
      await onTwo.seen("UserStatusUpdate", (m) => m.status === "outtolunch");

      // the list set through process one is the one process two greets with
      const ws = await login(
        one,
        "webservice",
        DEMO_WEBSERVICE_USER.login,
        DEMO_WEBSERVICE_USER.password,
      );
      const { body: defaults } = await expectStatus(200, two, "GET", `${V2}/presences`, {
        token: ws,
      });
      const extra = { name: "training", color: "#336699", longName: "Training", actions: [] };
      await expectStatus(200, one, "PUT", `${V2}/presences`, {
        token: ws,
        body: [...defaults, extra],
      });
      const later = socketOn(two, await login(two, "login", alice.username, alice.password));
      sockets.push(later);
      const names = (await later.seen("UsersStatuses")) as unknown as { name: string }[];
      assert.equal(names.at(-1)!.name, "training");
      assert.deepEqual(await later.seen("UserStatusUpdate"), { status: "outtolunch" });

      for (const socket of sockets.splice(0)) await socket.close();
      await two.stop();
      two = null;
      await one.stop();
      one = null;

      // a new process on the same store greets alice with the status she chose before
      one = await startServer(env);
      const again = socketOn(one, await login(one, "login", alice.username, alice.password));
      sockets.push(again);
      assert.deepEqual(await again.seen("UserStatusUpdate"), { status: "outtolunch" });
    } finally {
      for (const socket of sockets) socket.socket.close();
      await two?.stop();
      await one?.stop();
    }
  });
});

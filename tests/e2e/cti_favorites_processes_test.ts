/**
 * End-to-end: favourites (docs/cti.md, "Directory and favourites") live in the store. Two real
 * server processes on one store file: a favourite added through a socket on the first is
 * announced (`FavoriteUpdated`) to the user's socket on the second, and a third process started
 * on the same file once both stopped lists it.
 */
import assert from "node:assert/strict";
import { DEMO_USERS } from "../../lib/demo.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { login, until, V2 } from "./svc_http.ts";

interface Message {
  msgType: string;
  ctiMessage: Record<string, unknown>;
}

/** A socket of alice's on `server`, keeping every message, once greeted. */
async function aliceSocket(server: RunningServer) {
  const alice = DEMO_USERS.find((user) => user.username === "alice")!;
  const token = await login(server, "login", alice.username, alice.password);
  const messages: Message[] = [];
  const socket = new WebSocket(`${server.baseUrl.replace("http", "ws")}${V2}/cti?token=${token}`);
  socket.onmessage = (event) => messages.push(JSON.parse(event.data));
  await until(() => messages.some((m) => m.msgType === "LoggedOn"), 5_000, "LoggedOn");
  const closed = new Promise((resolve) => socket.addEventListener("close", resolve));
  const send = (command: string, fields: Record<string, unknown> = {}) =>
    socket.send(JSON.stringify({ claz: "web", command, ...fields }));
  const close = async () => {
    socket.close();
    await closed;
  };
  return { messages, send, close };
}

Deno.test("favourites across processes: announced on the other, kept after both stop", async () => {
  await withTempDir(async (dir) => {
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true" };
    const one = await startServer(env);
    let two: RunningServer | null = null;
    let three: RunningServer | null = null;
    try {
      await one.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      two = await startServer(env);
      const onOne = await aliceSocket(one);
      const onTwo = await aliceSocket(two);

      onOne.send("directoryLookUp", { term: "durand" });
      await until(
        () => onOne.messages.some((m) => m.msgType === "DirectoryResult"),
        5_000,
        "DirectoryResult",
      );
      const result = onOne.messages.find((m) => m.msgType === "DirectoryResult")!;
      const [bob] = result.ctiMessage.entries as { contact_id: string; source: string }[];
      assert.equal(bob?.source, "internal");
      onOne.send("addFavorite", { contactId: bob!.contact_id, source: "internal" });
      const added = { action: "Added", contact_id: bob!.contact_id, source: "internal" };
      for (const socket of [onOne, onTwo]) {
        await until(
          () => socket.messages.some((m) => m.msgType === "FavoriteUpdated"),
          5_000,
          "FavoriteUpdated",
        );
        assert.deepEqual(
          socket.messages.find((m) => m.msgType === "FavoriteUpdated")!.ctiMessage,
          added,
        );
      }
      await onOne.close();
      await onTwo.close();
      await two.stop();
      two = null;
      await one.stop();

      three = await startServer(env);
      const onThree = await aliceSocket(three);
      onThree.send("getFavorites");
      await until(
        () => onThree.messages.some((m) => m.msgType === "Favorites"),
        5_000,
        "Favorites",
      );
      const favorites = onThree.messages.find((m) => m.msgType === "Favorites")!;
      const entries = favorites.ctiMessage.entries as { entry: string[]; contact_id: string }[];
      assert.deepEqual(entries.map((e) => [e.contact_id, e.entry[0], e.entry[1]]), [
        [bob!.contact_id, "Bob Durand", "1002"],
      ]);
      await onThree.close();
    } finally {
      await three?.stop();
      await two?.stop();
      await one.stop();
    }
  });
});

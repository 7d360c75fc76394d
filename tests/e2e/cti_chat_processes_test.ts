/**
 * End-to-end: the chat (docs/cti.md, "Chat") across two real server processes on one store file.
 * A message sent through one process reaches its recipient's sockets on both, each once; one sent
 * while the recipient holds no socket waits in the store and is given by whichever process the
 * recipient's next socket opens on, and none is given again.
 */
import assert from "node:assert/strict";
import { DEMO_USERS } from "../../lib/demo.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { login, until, V2 } from "./svc_http.ts";

interface Message {
  msgType: string;
  ctiMessage: Record<string, unknown>;
}

/** A socket keeping what it is sent. */
async function openSocket(server: RunningServer, token: string) {
  const messages: Message[] = [];
  const socket = new WebSocket(`${server.baseUrl.replace("http", "ws")}${V2}/cti?token=${token}`);
  socket.onmessage = (event) => messages.push(JSON.parse(event.data));
  const closed = new Promise((resolve) => socket.addEventListener("close", resolve));
  await until(() => messages.some((m) => m.msgType === "LoggedOn"), 5_000, "LoggedOn");
  return {
    messages,
    socket,
    closed,
    /** The `FlashTextEvent`s of kind `event` it got. */
    flashText: (event: string) =>
      messages.filter((m) => m.msgType === "FlashTextEvent" && m.ctiMessage.event === event),
    send: (to: string, sequence: number, message: string) =>
      socket.send(JSON.stringify({
        claz: "web",
        command: "flashTextBrowserRequest",
        request: "FlashTextDirectMessage",
        sequence,
        to: { username: to },
        message,
      })),
  };
}

Deno.test("two processes on one store: a chat message sent through one reaches the other's sockets", async () => {
  await withTempDir(async (dir) => {
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true" };
    const one = await startServer(env);
    let two: RunningServer | null = null;
    const sockets: WebSocket[] = [];
    try {
      await one.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      two = await startServer(env);
      const [alice, bob] = DEMO_USERS;
      const aliceSocket = await openSocket(one, await login(one, "login", "alice", alice.password));
      const bobToken = await login(two, "login", "bob", bob.password);
      const bobOnTwo = await openSocket(two, bobToken);
      const bobOnOne = await openSocket(one, bobToken);
      sockets.push(aliceSocket.socket, bobOnTwo.socket, bobOnOne.socket);

      aliceSocket.send("bob", 1, "hello from process one");
      for (const socket of [bobOnTwo, bobOnOne]) {
        await until(
          () => socket.flashText("FlashTextUserMessage").length === 1,
          5_000,
          "the message on each of bob's sockets",
        );
        const [received] = socket.flashText("FlashTextUserMessage");
        assert.equal(received!.ctiMessage.message, "hello from process one");
        assert.equal((received!.ctiMessage.from as { username: string }).username, "alice");
      }
      await until(
        () => aliceSocket.flashText("FlashTextSendMessageAck").length === 1,
        5_000,
        "ack",
      );
      assert.equal(aliceSocket.flashText("FlashTextSendMessageAck")[0]!.ctiMessage.sequence, 1);

      // bob holds no socket: the message waits, and his next socket (on process two) gets it once
      for (const socket of [bobOnTwo, bobOnOne]) {
        socket.socket.close();
        await socket.closed;
      }
      aliceSocket.send("bob", 2, "while you were away");
      await until(
        () => aliceSocket.flashText("FlashTextSendMessageAck").length === 2,
        5_000,
        "ack",
      );
      const bobBack = await openSocket(two, bobToken);
      sockets.push(bobBack.socket);
      await until(
        () => bobBack.flashText("FlashTextUserMessage").length === 1,
        5_000,
        "the waiting message",
      );
      // a second socket on process one, later, is given nothing again
      const bobAgain = await openSocket(one, bobToken);
      sockets.push(bobAgain.socket);
      bobAgain.socket.send(JSON.stringify({ claz: "ping" }));
      await until(() => bobAgain.messages.some((m) => m.msgType === "Pong"), 5_000, "Pong");
      await new Promise((resolve) => setTimeout(resolve, 500)); // a feed poll or more
      assert.deepEqual(
        bobBack.flashText("FlashTextUserMessage").map((m) => m.ctiMessage.message),
        ["while you were away"],
      );
      assert.deepEqual(bobAgain.flashText("FlashTextUserMessage"), []);
    } finally {
      for (const socket of sockets) socket.close();
      await two?.stop();
      await one.stop();
    }
  });
});

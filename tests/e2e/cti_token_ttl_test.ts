/**
 * End-to-end, on the real clock: a CTI socket whose token lives longer than a `setTimeout` can
 * wait (2^31 - 1 ms, 24.8 days) stays open. Such a wait overflows and fires at once, so the hub's
 * expiry timer waits one day at most and looks again (lib/cti/hub.ts).
 */
import assert from "node:assert/strict";
import { DEMO_USERS } from "../../lib/demo.ts";
import { startServer } from "./server.ts";
import { login, sleep, until, V2 } from "./svc_http.ts";

Deno.test("a token living 30 days keeps its CTI socket open", async () => {
  const server = await startServer({
    SVC_KV: ":memory:",
    SVC_DEMO: "true",
    SVC_TOKEN_TTL: String(30 * 86_400),
  });
  let socket: WebSocket | null = null;
  try {
    await server.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
    const alice = DEMO_USERS.find((user) => user.username === "alice")!;
    const token = await login(server, "login", alice.username, alice.password);
    const messages: string[] = [];
    let closed: CloseEvent | null = null;
    socket = new WebSocket(`${server.baseUrl.replace("http", "ws")}${V2}/cti?token=${token}`);
    socket.onmessage = (event) => messages.push(JSON.parse(event.data).msgType);
    socket.onclose = (event) => closed = event;
    await until(() => messages.includes("PhoneStatusUpdate") || closed !== null, 5_000, "greeting");
    await sleep(500); // an overflowing timer would have fired by now
    socket.send(JSON.stringify({ claz: "ping" }));
    await until(() => messages.includes("Pong") || closed !== null, 5_000, "Pong");
    assert.equal(closed, null, `closed: ${(closed as CloseEvent | null)?.code}`);
    assert.equal(socket.readyState, WebSocket.OPEN);
  } finally {
    socket?.close();
    await server.stop();
  }
});

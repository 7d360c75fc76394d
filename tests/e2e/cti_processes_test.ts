/**
 * End-to-end: two real server processes on one store file. A CTI socket and an SSE stream held by
 * the second see the events the first publishes (a DND change through its REST route, a call its
 * simulator places): the live feed goes through the store, not process memory. A rights profile
 * changed through the first holds on a socket of the second within a second, and at its next
 * request there.
 */
import assert from "node:assert/strict";
import { DEMO_USERS, DEMO_WEBSERVICE_USER } from "../../lib/demo.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { expectStatus, login, until, V2 } from "./svc_http.ts";

Deno.test("two processes on one store: an event published by one reaches a socket on the other", async () => {
  await withTempDir(async (dir) => {
    const env = {
      SVC_KV: `${dir}/svc.kv`,
      SVC_DEMO: "true",
      SVC_SIM_ANSWER_MS: "100",
      SVC_SIM_TALK_MS: "200",
    };
    const one = await startServer(env);
    let two: RunningServer | null = null;
    const socketMessages: { msgType: string; ctiMessage: Record<string, unknown> }[] = [];
    let socket: WebSocket | null = null;
    let stream: ReadableStreamDefaultReader<string> | null = null;
    try {
      await one.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      two = await startServer(env);
      const alice = DEMO_USERS.find((user) => user.username === "alice")!;
      const bob = DEMO_USERS.find((user) => user.username === "bob")!;
      const aliceToken = await login(two, "login", alice.username, alice.password);
      await login(one, "login", bob.username, bob.password); // bob is connected: he may dial
      const ws = await login(
        one,
        "webservice",
        DEMO_WEBSERVICE_USER.login,
        DEMO_WEBSERVICE_USER.password,
      );
      // alice's socket and a web service stream, both on process two
      socket = new WebSocket(`${two.baseUrl.replace("http", "ws")}${V2}/cti?token=${aliceToken}`);
      socket.onmessage = (event) => socketMessages.push(JSON.parse(event.data));
      await until(() => socketMessages.some((m) => m.msgType === "LoggedOn"), 5_000, "LoggedOn");
      const wsTwo = await login(
        two,
        "webservice",
        DEMO_WEBSERVICE_USER.login,
        DEMO_WEBSERVICE_USER.password,
      );
      const response = await fetch(`${two.baseUrl}${V2}/events/stream?username=alice`, {
        headers: { Authorization: `Bearer ${wsTwo}` },
      });
      assert.equal(response.status, 200);
      stream = response.body!.pipeThrough(new TextDecoderStream()).getReader();
      let streamed = "";
      const reading = (async () => {
        for (;;) {
          const { value, done } = await stream!.read();
          if (done) return;
          streamed += value;
        }
      })().catch(() => {});

      // process one changes alice's DND
      await expectStatus(200, one, "POST", `${V2}/dnd/alice`, {
        token: ws,
        body: { state: true },
      });
      await until(
        () =>
          socketMessages.some((m) =>
            m.msgType === "UserConfigUpdate" && m.ctiMessage.dndEnabled === true
          ),
        5_000,
        "alice's DND on the socket of the other process",
      );
      await until(
        () => /event: UserConfigUpdate\ndata: .*"dndEnabled":true/.test(streamed),
        5_000,
        "the DND change on the other process's stream",
      );
      await expectStatus(200, one, "POST", `${V2}/dnd/alice`, {
        token: ws,
        body: { state: false },
      });
      // bob calls alice on process one: alice's phone events reach her socket on process two
      await expectStatus(200, one, "POST", `${V2}/dial/user/bob`, {
        token: ws,
        body: { username: "alice" },
      });
      const types = () =>
        socketMessages.filter((m) => m.msgType === "PhoneEvent").map((m) => m.ctiMessage.eventType);
      await until(() => types().includes("EventReleased"), 10_000, "alice's call released");
      assert.deepEqual(types(), ["EventRinging", "EventEstablished", "EventReleased"]);
      // her screen pop, made by process one from the ringing, reached her socket on two, once,
      // and her events name bob
      const sheets = socketMessages.filter((m) => m.msgType === "Sheet");
      assert.deepEqual(
        sheets.map((m) => [m.ctiMessage.callerNumber, m.ctiMessage.callerName]),
        [[bob.exten, "Bob Durand"]],
      );
      const ringing = socketMessages.find((m) => m.msgType === "PhoneEvent")!;
      assert.equal(ringing.ctiMessage.otherDName, "Bob Durand");
      await stream.cancel();
      await reading;
    } finally {
      socket?.close();
      await two?.stop();
      await one.stop();
    }
  });
});

Deno.test("two processes on one store: a rights profile changed on one holds on a socket of the other within a second", async () => {
  await withTempDir(async (dir) => {
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true" };
    const one = await startServer(env);
    let two: RunningServer | null = null;
    const messages: { msgType: string; ctiMessage: unknown }[] = [];
    let socket: WebSocket | null = null;
    try {
      await one.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      two = await startServer(env);
      const sam = DEMO_USERS.find((user) => user.username === "sam")!;
      const ws = await login(
        one,
        "webservice",
        DEMO_WEBSERVICE_USER.login,
        DEMO_WEBSERVICE_USER.password,
      );
      const samToken = await login(two, "login", sam.username, sam.password);
      const profiles = (await expectStatus(200, one, "GET", `${V2}/rights/profiles`, { token: ws }))
        .body as { userId: number; username: string; queueIds?: number[] }[];
      const samId = profiles.find((profile) => profile.username === "sam")!.userId;
      // sam's socket on process two follows the queues: sales alone
      socket = new WebSocket(`${two.baseUrl.replace("http", "ws")}${V2}/cti?token=${samToken}`);
      socket.onmessage = (event) => messages.push(JSON.parse(event.data));
      await until(() => messages.some((m) => m.msgType === "RightProfile"), 5_000, "RightProfile");
      socket.send(JSON.stringify({ claz: "web", command: "getList", objectType: "queue" }));
      const queueLists = () =>
        messages.filter((m) => m.msgType === "QueueList").map((m) =>
          (m.ctiMessage as { name: string }[]).map((queue) => queue.name).join()
        );
      await until(() => queueLists().length === 1, 5_000, "the first QueueList");
      assert.deepEqual(queueLists(), ["sales"]);
      // process one gives him support too: his socket on process two follows within a second
      const started = performance.now();
      await expectStatus(200, one, "PUT", `${V2}/rights/profiles/${samId}`, {
        token: ws,
        body: { profile: "supervisor", queueIds: [1, 2], changeQueues: true },
      });
      await until(() => queueLists().includes("sales,support"), 5_000, "both queues");
      const took = performance.now() - started;
      assert.ok(took < 1_000, `the change took ${Math.round(took)} ms to reach the socket`);
      assert.ok(messages.filter((m) => m.msgType === "RightProfile").length >= 2);
      // and his next request to process two, with the same token
      const queues = await expectStatus(200, two, "GET", `${V2}/supervision/queues`, {
        token: samToken,
      });
      assert.deepEqual((queues.body as { name: string }[]).map((q) => q.name), [
        "sales",
        "support",
      ]);
    } finally {
      socket?.close();
      await two?.stop();
      await one.stop();
    }
  });
});

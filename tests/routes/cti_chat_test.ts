/**
 * The chat on the CTI socket (docs/cti.md, "Chat"): `flashTextBrowserRequest` as `cti.js`'s
 * `sendFlashTextMessage` sends it, acknowledged to the sender, live to every socket of the
 * recipient, kept for a recipient without a socket and given at the next socket's open, never
 * twice to a socket; every refusal a `FlashTextSendMessageNack` or an `Error`, the socket open and
 * nothing stored.
 */
import assert from "node:assert/strict";
import { MAX_CHAT_MESSAGE } from "../../lib/chat/mod.ts";
import {
  addChatMessage,
  CHAT_BACKLOG,
  CHAT_RETENTION_MS,
  waitingChatMessages,
} from "../../lib/store/chat_messages.ts";
import { getUser } from "../../lib/store/users.ts";
import { userMessage } from "../../lib/chat/messages.ts";
import { login } from "../helpers.ts";
import { type Client, type Fixture, fixture, type Message, userWithLine } from "./cti_fixtures.ts";

const flashText = (event: string) => (message: Message) =>
  message.msgType === "FlashTextEvent" && message.ctiMessage.event === event;
const isUserMessage = flashText("FlashTextUserMessage");

/** `cti.js`'s `sendFlashTextMessage(to, sequence, message)`. */
const send = (client: Client, to: string, sequence: number, message: string) =>
  client.web("flashTextBrowserRequest", {
    request: "FlashTextDirectMessage",
    sequence,
    to: { username: to },
    message,
  });

/** Waits until every message sent to `client` before now was read (a ping's `Pong` came). */
async function settled(client: Client) {
  const pongs = client.messages.filter((message) => message.msgType === "Pong").length;
  client.send({ claz: "ping" });
  await client.seen(
    () => client.messages.filter((message) => message.msgType === "Pong").length > pongs,
    "Pong",
  );
}

const userMessages = (client: Client) => client.messages.filter(isUserMessage);

/** The messages waiting for `userId` in the store, once the deliveries under way are done. */
async function waiting(f: Fixture, userId: number, expected: number) {
  const { store, clock } = f.ctx.services;
  for (let tries = 0; tries < 50; tries++) {
    const messages = await waitingChatMessages(store, userId, clock.now());
    if (messages.length === expected) return messages;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return await waitingChatMessages(store, userId, clock.now());
}

/** Alice (1001) and Bob (1002), alice with a socket. */
async function aliceAndBob() {
  const f = await fixture();
  const alice = await userWithLine(f.api, "alice", "1001");
  const bob = await userWithLine(f.api, "bob", "1002");
  const aliceSocket = await f.open(await login(f.ctx, "login", "alice"));
  return { f, alice, bob, aliceSocket };
}

Deno.test("a message goes live to every socket of its recipient and is acknowledged to its sender", async () => {
  const { f, alice, bob, aliceSocket } = await aliceAndBob();
  try {
    const bobToken = await login(f.ctx, "login", "bob");
    const bobSockets = [await f.open(bobToken), await f.open(bobToken)];
    send(aliceSocket, "bob", 7, "Lunch at noon? <b>é</b> 👋");

    const ack = await aliceSocket.next(flashText("FlashTextSendMessageAck"), "the ack");
    assert.deepEqual(ack.ctiMessage, {
      event: "FlashTextSendMessageAck",
      sequence: 7,
      offline: false,
      date: new Date(f.ctx.clock.now()).toISOString(),
    });
    for (const socket of bobSockets) {
      const received = await socket.next(isUserMessage, "the message");
      assert.deepEqual(received.ctiMessage, {
        event: "FlashTextUserMessage",
        id: 1,
        from: {
          username: "alice",
          phoneNumber: "1001",
          displayName: "alice",
          guid: (await getUser(f.ctx.services.store, alice.id))!.uuid,
        },
        to: {
          username: "bob",
          phoneNumber: "1002",
          displayName: "bob",
          guid: (await getUser(f.ctx.services.store, bob.id))!.uuid,
        },
        sequence: 7,
        message: "Lunch at noon? <b>é</b> 👋",
        date: new Date(f.ctx.clock.now()).toISOString(),
      });
    }
    // delivered: not kept for bob's next socket, and the sender's socket is not sent it
    assert.deepEqual(await waiting(f, bob.id, 0), []);
    const later = await f.open(bobToken);
    await settled(later);
    await settled(aliceSocket);
    assert.deepEqual(userMessages(later), []);
    assert.deepEqual(userMessages(aliceSocket), []);
    for (const socket of bobSockets) assert.equal(userMessages(socket).length, 1);
  } finally {
    await f.close();
  }
});

Deno.test("a message to a user without a socket waits for their next socket, given once", async () => {
  const { f, bob, aliceSocket } = await aliceAndBob();
  try {
    send(aliceSocket, "bob", 1, "first");
    send(aliceSocket, "bob", 2, "second");
    const ack = await aliceSocket.next(flashText("FlashTextSendMessageAckOffline"), "the ack");
    assert.deepEqual(ack.ctiMessage, {
      event: "FlashTextSendMessageAckOffline",
      sequence: 1,
      offline: true,
      date: new Date(f.ctx.clock.now()).toISOString(),
    });
    assert.equal(
      (await aliceSocket.next(flashText("FlashTextSendMessageAckOffline"), "ack 2")).ctiMessage
        .sequence,
      2,
    );
    assert.deepEqual((await waiting(f, bob.id, 2)).map((m) => m.message), ["first", "second"]);

    const bobToken = await login(f.ctx, "login", "bob");
    const bobSocket = await f.open(bobToken);
    const first = await bobSocket.next(isUserMessage, "the first message");
    const second = await bobSocket.next(isUserMessage, "the second message");
    assert.deepEqual([first.ctiMessage.message, second.ctiMessage.message], ["first", "second"]);
    assert.equal((first.ctiMessage.from as { username: string }).username, "alice");
    // after the greeting (`LoggedOn`, …)
    assert.ok(
      bobSocket.messages.indexOf(first) > bobSocket.messages.findIndex(
        (message) => message.msgType === "LoggedOn",
      ),
    );
    assert.deepEqual(await waiting(f, bob.id, 0), []);
    const again = await f.open(bobToken);
    await settled(again);
    await settled(bobSocket);
    assert.deepEqual(userMessages(again), []);
    assert.equal(userMessages(bobSocket).length, 2);
  } finally {
    await f.close();
  }
});

Deno.test("a recipient connected (holding a token) without a socket: acknowledged online, kept", async () => {
  const { f, bob, aliceSocket } = await aliceAndBob();
  try {
    const bobToken = await login(f.ctx, "login", "bob"); // connected (docs/decisions.md)
    send(aliceSocket, "bob", 3, "are you there?");
    const ack = await aliceSocket.next(flashText("FlashTextSendMessageAck"), "the ack");
    assert.equal(ack.ctiMessage.offline, false);
    assert.equal((await waiting(f, bob.id, 1)).length, 1);
    const bobSocket = await f.open(bobToken);
    assert.equal((await bobSocket.next(isUserMessage, "the message")).ctiMessage.sequence, 3);
  } finally {
    await f.close();
  }
});

Deno.test("two sockets opening at once share the waiting messages: each given once, to one", async () => {
  const { f, bob, aliceSocket } = await aliceAndBob();
  try {
    const count = 250; // more than one claim's batch
    for (let sequence = 1; sequence <= count; sequence++) {
      send(aliceSocket, "bob", sequence, `message ${sequence}`);
    }
    await aliceSocket.seen(
      () =>
        aliceSocket.messages.filter(flashText("FlashTextSendMessageAckOffline")).length === count,
      "every ack",
    );
    const bobToken = await login(f.ctx, "login", "bob");
    const sockets = await Promise.all([f.open(bobToken), f.open(bobToken), f.open(bobToken)]);
    await Promise.all(sockets.map(settled));
    const given = sockets.flatMap(userMessages).map((message) => message.ctiMessage.sequence);
    assert.equal(given.length, count);
    assert.equal(new Set(given).size, count);
    for (const socket of sockets) {
      const sequences = userMessages(socket).map((message) =>
        message.ctiMessage.sequence as number
      );
      assert.deepEqual(sequences, [...sequences].sort((a, b) => a - b), "oldest first");
    }
    assert.deepEqual(await waiting(f, bob.id, 0), []);
  } finally {
    await f.close();
  }
});

Deno.test("a message given at a socket's open is not given again by its live notice arriving late", async () => {
  const { f, bob } = await aliceAndBob();
  try {
    const { store, clock, events } = f.ctx.services;
    const party = { username: "alice", phoneNumber: "1001", displayName: "alice", guid: "" };
    const record = await addChatMessage(store, bob.id, {
      from: party,
      to: { ...party, username: "bob" },
      sequence: 9,
      message: "in flight",
    }, clock.now());
    const bobSocket = await f.open(await login(f.ctx, "login", "bob"));
    await settled(bobSocket);
    assert.equal(userMessages(bobSocket).length, 1);
    // the notice the sender's process published, reaching this process after the open
    await events.notify([{ username: "bob", notice: true, message: userMessage(record!) }]);
    await settled(bobSocket);
    assert.equal(userMessages(bobSocket).length, 1);
  } finally {
    await f.close();
  }
});

Deno.test("a restart keeps the messages waiting", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-chat-" });
  const env = { SVC_KV: `${dir}/svc.kv` };
  try {
    let f = await fixture(env);
    try {
      await userWithLine(f.api, "alice", "1001");
      await userWithLine(f.api, "bob", "1002");
      const aliceSocket = await f.open(await login(f.ctx, "login", "alice"));
      send(aliceSocket, "bob", 5, "kept across a restart");
      await aliceSocket.next(flashText("FlashTextSendMessageAckOffline"), "the ack");
    } finally {
      await f.close();
    }
    f = await fixture(env);
    try {
      const bobSocket = await f.open(await login(f.ctx, "login", "bob"));
      const received = await bobSocket.next(isUserMessage, "the message");
      assert.equal(received.ctiMessage.message, "kept across a restart");
    } finally {
      await f.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Closes `client` and waits for its close (the clock may then move far: no socket to expire). */
async function closeSocket(client: Client) {
  client.socket.close();
  await client.closed;
}

Deno.test("a message is kept 30 days, then dropped unseen", async () => {
  const { f, bob, aliceSocket } = await aliceAndBob();
  try {
    send(aliceSocket, "bob", 1, "too late");
    await aliceSocket.next(flashText("FlashTextSendMessageAckOffline"), "the ack");
    await closeSocket(aliceSocket);
    await f.ctx.clock.advance(CHAT_RETENTION_MS);
    const bobSocket = await f.open(await login(f.ctx, "login", "bob"));
    await settled(bobSocket);
    assert.deepEqual(userMessages(bobSocket), []);
    assert.deepEqual(await waitingChatMessages(f.ctx.services.store, bob.id, 0), []);
  } finally {
    await f.close();
  }
});

Deno.test("refusals: a nack with its reason, nothing stored, the socket open", async () => {
  const { f, bob, aliceSocket } = await aliceAndBob();
  try {
    const nack = async (fields: Record<string, unknown>, reason: string) => {
      aliceSocket.web("flashTextBrowserRequest", { request: "FlashTextDirectMessage", ...fields });
      const refusal = await aliceSocket.next(flashText("FlashTextSendMessageNack"), reason);
      assert.deepEqual(refusal.ctiMessage, {
        event: "FlashTextSendMessageNack",
        sequence: fields.sequence,
        reason,
        date: new Date(f.ctx.clock.now()).toISOString(),
      }, JSON.stringify(fields));
    };
    const to = { username: "bob" };
    await nack({ sequence: 1, message: "no recipient" }, "BadRequest");
    await nack({ sequence: 2, to: "bob", message: "to is a string" }, "BadRequest");
    await nack({ sequence: 3, to: { username: 2 }, message: "a number" }, "BadRequest");
    await nack({ sequence: 4, to: null, message: "null" }, "BadRequest");
    await nack({ sequence: 5, to }, "BadRequest");
    await nack({ sequence: 6, to, message: 42 }, "BadRequest");
    await nack({ sequence: 7, to, message: "" }, "EmptyMessage");
    await nack({ sequence: 8, to, message: " \n\t " }, "EmptyMessage");
    await nack({ sequence: 9, to, message: "x".repeat(MAX_CHAT_MESSAGE + 1) }, "MessageTooLong");
    await nack({ sequence: 10, to: { username: "alice" }, message: "me" }, "ToSelf");
    await nack({ sequence: 11, to: { username: "nobody" }, message: "hi" }, "UserNotFound");
    await nack(
      { sequence: 12, to: { username: "x".repeat(5_000) }, message: "hi" },
      "UserNotFound",
    );
    await nack({ sequence: -3, to: { username: "" }, message: "hi" }, "UserNotFound");
    assert.deepEqual(await waitingChatMessages(f.ctx.services.store, bob.id, 0), []);
    // the longest message counts characters, not UTF-16 units
    send(aliceSocket, "bob", 13, "👋".repeat(MAX_CHAT_MESSAGE));
    await aliceSocket.next(flashText("FlashTextSendMessageAckOffline"), "the longest message");
    assert.equal((await waiting(f, bob.id, 1)).length, 1);
    assert.deepEqual(aliceSocket.messages.filter((m) => m.msgType === "Error"), []);
  } finally {
    await f.close();
  }
});

Deno.test("a full backlog refuses more until its messages expire", async () => {
  const { f, bob, aliceSocket: before } = await aliceAndBob();
  try {
    const { store } = f.ctx.services;
    const { clock } = f.ctx;
    const party = { username: "alice", phoneNumber: "", displayName: "", guid: "" };
    for (let i = 0; i < CHAT_BACKLOG; i++) {
      const draft = { from: party, to: party, sequence: i, message: "m" };
      await addChatMessage(store, bob.id, draft, clock.now());
    }
    await closeSocket(before);
    await clock.advance(CHAT_RETENTION_MS - 1);
    const aliceSocket = await f.open(await login(f.ctx, "login", "alice"));
    send(aliceSocket, "bob", 1, "one too many");
    const refusal = await aliceSocket.next(flashText("FlashTextSendMessageNack"), "the nack");
    assert.equal(refusal.ctiMessage.reason, "RecipientBacklogFull");
    assert.equal((await waitingChatMessages(store, bob.id, clock.now())).length, CHAT_BACKLOG);
    await clock.advance(1);
    send(aliceSocket, "bob", 2, "room again");
    await aliceSocket.next(flashText("FlashTextSendMessageAckOffline"), "the ack");
    assert.deepEqual(
      (await waitingChatMessages(store, bob.id, clock.now())).map((m) => m.message),
      ["room again"],
    );
  } finally {
    await f.close();
  }
});

Deno.test("malformed requests, history and a missing ACL answer Error; the socket stays open", async () => {
  const { f, alice, bob, aliceSocket } = await aliceAndBob();
  try {
    const error = async (fields: Record<string, unknown>, code: string, pattern: RegExp) => {
      aliceSocket.web("flashTextBrowserRequest", fields);
      const refusal = await aliceSocket.type("Error");
      assert.deepEqual(
        [refusal.ctiMessage.error, refusal.ctiMessage.command],
        [code, "flashTextBrowserRequest"],
        JSON.stringify(fields),
      );
      assert.match(String(refusal.ctiMessage.message), pattern);
    };
    const message = { to: { username: "bob" }, message: "hi" };
    const direct = { request: "FlashTextDirectMessage", ...message };
    await error(message, "BadRequest", /field request/);
    await error({ request: 7, sequence: 1, ...message }, "BadRequest", /field request/);
    await error({ request: "FlashTextShout", sequence: 1 }, "BadRequest", /unknown request/);
    await error(direct, "BadRequest", /sequence/);
    await error({ ...direct, sequence: "1" }, "BadRequest", /sequence/);
    await error({ ...direct, sequence: 1.5 }, "BadRequest", /sequence/);
    await error({ ...direct, sequence: 2 ** 60 }, "BadRequest", /sequence/);
    await error(
      { request: "FlashTextDirectMessageHistory", sequence: 3, to: { username: "bob" } },
      "NotSupported",
      /no chat history/,
    );
    // marking as read is accepted: each message is given once, there is nothing to mark
    aliceSocket.web("flashTextBrowserRequest", {
      request: "FlashTextMarkAsRead",
      sequence: 4,
      to: { username: "bob" },
    });
    await settled(aliceSocket);
    assert.equal(aliceSocket.messages.filter((m) => m.msgType === "Error").length, 8);

    const identity = { userId: String(alice.id), login: "alice", userType: "cti" as const };
    const denied = await f.open(
      (await f.ctx.services.tokens.issue({
        ...identity,
        acls: ["alias.ctiuser", "!svc.cti.chat.#"],
      }))
        .token,
    );
    send(denied, "bob", 5, "hi");
    const refusal = await denied.type("Error");
    assert.equal(refusal.ctiMessage.error, "Forbidden");
    assert.match(String(refusal.ctiMessage.message), /svc\.cti\.chat\.alice\.create/);
    await settled(denied);
    assert.deepEqual(denied.messages.filter(flashText("FlashTextSendMessageAck")), []);
    assert.deepEqual(await waitingChatMessages(f.ctx.services.store, bob.id, 0), []);
  } finally {
    await f.close();
  }
});

Deno.test("the unchanged cti.js's sendFlashTextMessage is served", async () => {
  const path = Deno.env.get("SVC_TEST_CTI_JS");
  if (!path) {
    console.log("skipped: SVC_TEST_CTI_JS names no cti.js (the GLPI xivo plugin's js/xivo/cti.js)");
    return;
  }
  const { f, bob, aliceSocket } = await aliceAndBob();
  try {
    // cti.js's own factory builds the message, sent through the test's socket
    const Cti = new Function(`${await Deno.readTextFile(path)}\nreturn Cti;`)();
    Cti.init("alice", null, { sendCallback: (message: unknown) => aliceSocket.send(message) });
    Cti.sendFlashTextMessage("bob", 42, "sent by cti.js");
    const ack = await aliceSocket.next(flashText("FlashTextSendMessageAckOffline"), "the ack");
    assert.equal(ack.ctiMessage.sequence, 42);
    const [record] = await waiting(f, bob.id, 1);
    assert.equal(record?.message, "sent by cti.js");
  } finally {
    await f.close();
  }
});

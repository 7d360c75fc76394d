/**
 * The CTI socket (`GET /svc/api/2.0/cti`, docs/cti.md) over a real HTTP server on loopback and
 * Deno's own WebSocket client: refusals before the upgrade, the greeting, every command, errors
 * that leave the socket open, token renewal and expiry, the per-user cap and a slow reader. The commands on
 * the user's calls are in cti_calls_test.ts.
 */
import assert from "node:assert/strict";
import { adminProfile, setProfile } from "../../lib/rights/profiles.ts";
import { createAgent } from "../../lib/store/agents.ts";
import { createContact } from "../../lib/store/contacts.ts";
import { linkUserAgent } from "../../lib/store/user_agents.ts";
import { deleteUser } from "../../lib/store/users.ts";
import { bearer, login, postJson, webServiceUser } from "../helpers.ts";
import { Client, fixture, phoneEvent, userWithLine, V2 } from "./cti_fixtures.ts";

Deno.test("refusals before the upgrade, in the 2.0 error form", async (t) => {
  const f = await fixture({ SVC_CTI_MAX_PER_USER: "1" });
  try {
    await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const http = `http://${f.base}${V2}/cti`;
    const refused = async (url: string, status: number, error: string, init?: RequestInit) => {
      const response = await fetch(url, init);
      assert.equal(response.status, status);
      assert.equal((await response.json()).error, error);
    };
    await t.step("no token: 401", () => refused(http, 401, "AuthorizationHeaderNotFound"));
    await t.step(
      "a forged token: 401 InvalidToken",
      () => refused(`${http}?token=abc.def.ghi`, 401, "InvalidToken"),
    );
    await t.step("a web service user: 403", async () => {
      const ws = await webServiceUser(f.ctx, ["#"]);
      await refused(
        `${http}?token=${await login(f.ctx, "webservice", ws.login)}`,
        403,
        "Forbidden",
      );
    });
    await t.step(
      "a plain GET: 426",
      () => refused(http, 426, "UpgradeRequired", { headers: bearer(token) }),
    );
    await t.step(
      "the token in Authorization works too; a second socket is over the cap: 429",
      async () => {
        const client = new Client(
          new WebSocket(`ws://${f.base}${V2}/cti`, { headers: bearer(token) } as never),
        );
        f.clients.push(client);
        await client.type("LoggedOn");
        // SVC_CTI_MAX_PER_USER=1: a second socket is refused
        await refused(`${http}?token=${token}`, 429, "TooManyConnections", {
          headers: {
            Upgrade: "websocket",
            Connection: "Upgrade",
            "Sec-WebSocket-Version": "13",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
          },
        });
        client.socket.close();
        await client.closed;
      },
    );
    await t.step("an expired token: 401 TokenExpired", async () => {
      await f.ctx.clock.advance(7200_000);
      await refused(`${http}?token=${token}`, 401, "TokenExpired");
    });
  } finally {
    await f.close();
  }
});

Deno.test("greeting, ping, errors that keep the socket open", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    await userWithLine(f.api, "bob", "1002");
    await createContact(
      f.ctx.services.store,
      alice.id,
      {
        company: "",
        email: "",
        fax: "",
        firstname: "Bob",
        lastname: "B",
        mobile: "",
        number: "1002",
      },
      false,
      100,
    );
    const client = await f.open(await login(f.ctx, "login", "alice"));
    assert.deepEqual(client.messages[0]!.ctiMessage, {
      userId: alice.id,
      username: "alice",
      phoneNumber: "1001",
    });
    const config = await client.type("UserConfigUpdate");
    assert.equal(config.ctiMessage.fullName, "alice");
    assert.equal(config.ctiMessage.dndEnabled, false);
    assert.deepEqual((await client.type("PhoneStatusUpdate")).ctiMessage, { status: 0 });
    assert.deepEqual((await client.type("PhoneHintStatusEvent")).ctiMessage, {
      number: "1002",
      status: 0,
    });

    client.send({ claz: "ping" });
    await client.type("Pong");
    const errors: [unknown, string, RegExp][] = [
      ["not json", "BadRequest", /not valid JSON/],
      ["[1,2]", "BadRequest", /JSON object/],
      [{ claz: 3 }, "BadRequest", /claz/],
      [{ claz: "other" }, "BadRequest", /unknown claz/],
      [{ claz: "web" }, "BadRequest", /names a command/],
      [{ claz: "web", command: "noSuchCommand" }, "UnknownCommand", /noSuchCommand/],
      [{ claz: "web", command: "toString" }, "UnknownCommand", /toString/],
      [{ claz: "web", command: "dnd", state: "yes" }, "BadRequest", /field state/],
      [{ claz: "web", command: "dnd" }, "BadRequest", /field state/],
      [{ claz: "web", command: "dial", destination: 12 }, "BadRequest", /destination/],
      [{ claz: "web", command: "dial", destination: "x".repeat(300) }, "BadRequest", /destination/],
      [
        { claz: "web", command: "dial", destination: "1002", variables: [] },
        "BadRequest",
        /variables/,
      ],
      [{ claz: "web", command: "uncFwd", state: true }, "BadRequest", /destination/],
      [{ claz: "web", command: "hangup" }, "NoCall", /./],
      [
        { claz: "web", command: "dialFromQueue", destination: "1", queueId: 1 },
        "Forbidden",
        /fromqueue/,
      ],
      [{ claz: "web", command: "dialFromMobile", destination: "1002" }, "NoMobileNumber", /mobile/],
      [{ claz: "web", command: "getConfig", objectType: "meetme" }, "BadRequest", /objectType/],
      [
        JSON.stringify({ claz: "web", command: "dial", destination: "1".repeat(70_000) }),
        "BadRequest",
        /longer than/,
      ],
    ];
    for (const [message, error, text] of errors) {
      client.send(message);
      const answer = await client.type("Error");
      assert.equal(answer.ctiMessage.error, error, JSON.stringify(message).slice(0, 80));
      assert.match(String(answer.ctiMessage.message), text);
    }
    // an agent command the agent's state refuses answers xuc's AgentError, not Error
    client.web("agentLogin");
    assert.deepEqual((await client.type("AgentError")).ctiMessage, {
      Error: "AgentNotFound",
      message: "user alice has no agent",
      command: "agentLogin",
    });
    client.socket.send(new Uint8Array([1, 2, 3]));
    assert.equal((await client.type("Error")).ctiMessage.error, "BadRequest");
    client.send({ claz: "ping" });
    await client.type("Pong"); // still open
    assert.equal(client.socket.readyState, WebSocket.OPEN);
  } finally {
    await f.close();
  }
});

Deno.test("DND and forwards: the change and its UserConfigUpdate, on every socket of the user", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const [one, two] = [await f.open(token), await f.open(token)];
    for (const client of [one, two]) await client.type("UserConfigUpdate");
    one.web("dnd", { state: true });
    for (const client of [one, two]) {
      const update = await client.type("UserConfigUpdate");
      assert.equal(update.ctiMessage.dndEnabled, true);
      assert.equal(update.ctiMessage.fullName, "alice");
    }
    one.web("naFwd", { state: true, destination: "2000" });
    const forward = await two.type("UserConfigUpdate");
    assert.equal(forward.ctiMessage.naFwdEnabled, true);
    assert.equal(forward.ctiMessage.naFwdDestination, "2000");
    const forwards = await (await f.api.get(`/users/${alice.id}/forwards`)).json();
    assert.deepEqual(forwards.noanswer, { enabled: true, destination: "2000" });
    one.web("getConfig");
    assert.equal((await one.type("UserConfigUpdate")).ctiMessage.naFwdDestination, "2000");
  } finally {
    await f.close();
  }
});

Deno.test("dial, answer, hold and hang up through the socket, with the phones' events", async () => {
  const f = await fixture({ SVC_SIM_ANSWER_MS: "100", SVC_SIM_TALK_MS: "100000" });
  try {
    await userWithLine(f.api, "alice", "1001");
    await userWithLine(f.api, "bob", "1002");
    // bob's own phone picks up at once (the caller's leg); alice's waits for her socket
    await f.ctx.services.sim!.setPolicy("1001", { policy: "manual" });
    const alice = await f.open(await login(f.ctx, "login", "alice"));
    const bob = await f.open(await login(f.ctx, "login", "bob"));
    // bob's phone waits: alice's socket answers for alice's own phone when bob calls her
    bob.web("dial", { destination: "1001", variables: { crm: "42" } });
    // the command reaches the server over the socket: move the virtual clock until it has run
    for (let i = 0; i < 100 && !bob.messages.some(phoneEvent("EventDialing")); i++) {
      await f.ctx.clock.advance(100);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const dialing = await bob.next(phoneEvent("EventDialing"), "bob dialing");
    assert.equal(dialing.ctiMessage.otherDN, "1001");
    assert.equal((dialing.ctiMessage.userData as Record<string, string>).USR_crm, "42");
    await alice.next(phoneEvent("EventRinging"), "alice ringing");
    await f.ctx.clock.advance(250);
    assert.deepEqual((await alice.type("PhoneStatusUpdate")).ctiMessage, { status: 8 });
    alice.web("answer");
    await alice.next(phoneEvent("EventEstablished"), "alice established");
    await bob.next(phoneEvent("EventEstablished"), "bob established");
    alice.web("hold");
    await alice.next(phoneEvent("EventOnHold"), "alice on hold");
    alice.web("hold"); // a toggle: back from hold
    await alice.next(phoneEvent("EventEstablished"), "alice back");
    alice.web("hangup");
    await alice.next(phoneEvent("EventReleased"), "alice released");
    await bob.next(phoneEvent("EventReleased"), "bob released");
  } finally {
    await f.close();
  }
});

Deno.test("dialFromMobile: the user's mobile first, then the destination, as the user's events", async () => {
  const f = await fixture({ SVC_SIM_ANSWER_MS: "100", SVC_SIM_TALK_MS: "300" });
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    await userWithLine(f.api, "bob", "1002");
    const put = await f.api.put(`/users/${alice.id}`, {
      firstname: "alice",
      mobile_phone_number: "0612345678",
    });
    assert.equal(put.status, 204);
    const client = await f.open(await login(f.ctx, "login", "alice"));
    client.web("dialFromMobile", { destination: "1002", variables: { ticket: "7" } });
    for (let i = 0; i < 100 && !client.messages.some(phoneEvent("EventReleased")); i++) {
      await f.ctx.clock.advance(100);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const events = client.messages.filter((m) => m.msgType === "PhoneEvent");
    assert.deepEqual(
      events.map((m) => [m.ctiMessage.eventType, m.ctiMessage.DN, m.ctiMessage.otherDN]),
      [
        ["EventDialing", "1001", "1002"],
        ["EventEstablished", "1001", "1002"],
        ["EventReleased", "1001", "1002"],
      ],
    );
    assert.equal((events[0]!.ctiMessage.userData as Record<string, string>).USR_ticket, "7");
  } finally {
    await f.close();
  }
});

Deno.test("agents: login on the user's own line, pause, states; another agent's id refused", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const store = f.ctx.services.store;
    const agent = await createAgent(store, { number: "8001" });
    const other = await createAgent(store, { number: "8002" });
    await linkUserAgent(store, alice.id, agent.id);
    const client = await f.open(await login(f.ctx, "login", "alice"));
    client.web("agentLogin", { agentphonenumber: "9999" });
    assert.match(String((await client.type("Error")).ctiMessage.message), /not a line/);
    client.web("agentLogin", { agentid: other.id });
    assert.equal((await client.type("Error")).ctiMessage.error, "Forbidden");
    client.web("agentLogin", { agentphonenumber: "1001", agentid: agent.id });
    const ready = await client.type("AgentStateEvent");
    assert.equal(ready.ctiMessage.name, "AgentReady");
    assert.equal(ready.ctiMessage.phoneNb, "1001");
    client.web("agentLogin");
    assert.equal((await client.type("AgentError")).ctiMessage.Error, "AlreadyLogged");
    client.web("pauseAgent", { reason: "lunch" });
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentOnPause");
    client.web("unpauseAgent");
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentReady");
    client.web("getAgentStates"); // the own agent only, without agentd.agents.read
    const states = await client.type("AgentStateEvent");
    assert.equal(states.ctiMessage.agentId, agent.id);
    client.web("agentLogout");
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentLoggedOut");
    // another agent's events are not sent without agentd.agents.read, even after subscribing
    await userWithLine(f.api, "bob", "1002");
    client.web("subscribeToAgentEvents");
    await f.ctx.services.platform.agentLogin(other, "1002", "default");
    client.send({ claz: "ping" });
    await client.type("Pong");
    assert.ok(
      !client.messages.some((m) =>
        m.msgType === "AgentStateEvent" && m.ctiMessage.agentId === other.id
      ),
    );
  } finally {
    await f.close();
  }
});

Deno.test("an agent logged on the user's line elsewhere becomes the socket's agent", async () => {
  const f = await fixture();
  try {
    await userWithLine(f.api, "alice", "1001");
    const agent = await createAgent(f.ctx.services.store, { number: "8001" });
    const client = await f.open(await login(f.ctx, "login", "alice"));
    // logged on alice's phone through the agent daemon, not through the socket
    await f.ctx.services.platform.agentLogin(agent, "1001", "default");
    const ready = await client.type("AgentStateEvent");
    assert.deepEqual([ready.ctiMessage.name, ready.ctiMessage.agentId], ["AgentReady", agent.id]);
    client.web("pauseAgent");
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentOnPause");
    client.web("agentLogout");
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentLoggedOut");
  } finally {
    await f.close();
  }
});

Deno.test("a token denying an ACL refuses the command; an admin rights profile shows every agent", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const store = f.ctx.services.store;
    const other = await createAgent(store, { number: "8002" });
    const { tokens } = f.ctx.services;
    const identity = { userId: String(alice.id), login: "alice", userType: "cti" as const };
    const denied = await f.open(
      (await tokens.issue({ ...identity, acls: ["alias.ctiuser", "!svc.rest.dnd.#"] })).token,
    );
    denied.web("dnd", { state: true });
    const refusal = await denied.type("Error");
    assert.equal(refusal.ctiMessage.error, "Forbidden");
    assert.match(String(refusal.ctiMessage.message), /svc\.rest\.dnd\.alice\.create/);
    // the token's ACLs grant no agent but the user's own on the socket: the profile does
    await setProfile(store, adminProfile(alice.id));
    const supervisor = await f.open(
      (await tokens.issue({ ...identity, acls: ["alias.ctiuser"] })).token,
    );
    supervisor.web("subscribeToAgentEvents");
    supervisor.web("getAgentStates");
    assert.equal((await supervisor.type("AgentStateEvent")).ctiMessage.agentId, other.id);
    await f.ctx.services.platform.agentLogin(other, "1001", "default");
    const event = await supervisor.next(
      (m) => m.msgType === "AgentStateEvent" && m.ctiMessage.name === "AgentReady",
      "the other agent ready",
    );
    assert.equal(event.ctiMessage.agentId, other.id);
  } finally {
    await f.close();
  }
});

Deno.test("a token that cannot be renewed (its user was deleted) closes the socket with 4001 at its expiry", async () => {
  const f = await fixture({ SVC_TOKEN_TTL: "60" });
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const client = await f.open(await login(f.ctx, "login", "alice"));
    assert.ok(await deleteUser(f.ctx.services.store, alice.id));
    await f.ctx.clock.advance(30_000); // the renewal's time: no user to renew for
    client.send({ claz: "ping" });
    await client.type("Pong");
    assert.ok(!client.messages.some((m) => m.msgType === "AuthenticationToken"));
    await f.ctx.clock.advance(29_999);
    assert.equal(client.socket.readyState, WebSocket.OPEN);
    await f.ctx.clock.advance(1);
    const closed = await client.closed;
    assert.equal(closed.code, 4001);
    assert.match(closed.reason, /token expired/);
  } finally {
    await f.close();
  }
});

Deno.test("one timer renews each socket's token at its own time, whatever the order they opened in", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const identity = { userId: String(alice.id), login: "alice", userType: "cti" as const };
    const tokenFor = async (ttl: number) =>
      (await f.ctx.services.tokens.issue({ ...identity, acls: ["alias.ctiuser"] }, ttl)).token;
    const renewals = (client: Client) =>
      client.messages.filter((m) => m.msgType === "AuthenticationToken").length;
    // the latest expiry opens first: the one opened last is renewed first (halfway: short tokens)
    const late = await f.open(await tokenFor(120));
    const leaving = await f.open(await tokenFor(90));
    const early = await f.open(await tokenFor(60));
    leaving.socket.close(); // gone before its renewal: the others are still renewed on time
    await leaving.closed;
    await f.ctx.clock.advance(29_999);
    assert.deepEqual([renewals(early), renewals(late)], [0, 0]);
    await f.ctx.clock.advance(1);
    await early.type("AuthenticationToken");
    late.send({ claz: "ping" });
    await late.type("Pong");
    assert.equal(renewals(late), 0);
    await f.ctx.clock.advance(30_000); // 60 s: the late one's halfway, the early one's old expiry
    await late.type("AuthenticationToken");
    for (const client of [early, late]) {
      client.send({ claz: "ping" });
      await client.type("Pong");
      assert.equal(client.socket.readyState, WebSocket.OPEN);
    }
  } finally {
    await f.close();
  }
});

Deno.test("a user changed in confd shows in the UserConfigUpdate of every socket of the user", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const [one, two] = [await f.open(token), await f.open(token)];
    for (const client of [one, two]) await client.type("UserConfigUpdate");
    const ws = await webServiceUser(f.ctx, ["svc.rest.dnd.#"]);
    const wsToken = await login(f.ctx, "webservice", ws.login);
    const dnd = async (state: boolean) => {
      const response = await postJson(f.ctx, `${V2}/dnd/alice`, { state }, bearer(wsToken));
      assert.equal(response.status, 200);
      for (const client of [one, two]) {
        const update = await client.type("UserConfigUpdate");
        assert.equal(update.ctiMessage.dndEnabled, state);
      }
      return [one, two].map((client) => client.messages.at(-1)!.ctiMessage.fullName);
    };
    const rename = async (firstname: string) => {
      const put = await f.api.put(`/users/${alice.id}`, { firstname, lastname: "Martin" });
      assert.equal(put.status, 204);
    };
    // a command on one socket reads the user again, for both sockets
    await rename("Alicia");
    one.web("getConfig");
    assert.equal((await one.type("UserConfigUpdate")).ctiMessage.fullName, "Alicia Martin");
    assert.deepEqual(await dnd(true), ["Alicia Martin", "Alicia Martin"]);
    // without a command, the user is read again with the personal contacts, every 30 s
    await rename("Alison");
    await f.ctx.clock.advance(30_000);
    assert.deepEqual(await dnd(false), ["Alison Martin", "Alison Martin"]);
  } finally {
    await f.close();
  }
});

/** A masked client text frame (RFC 6455 §5.2), for a client that never reads. */
function textFrame(text: string): Uint8Array {
  const payload = new TextEncoder().encode(text);
  const header = payload.length < 126
    ? [0x81, 0x80 | payload.length]
    : [0x81, 0x80 | 126, payload.length >> 8, payload.length & 255];
  const mask = [1, 2, 3, 4];
  return new Uint8Array([...header, ...mask, ...payload.map((byte, i) => byte ^ mask[i % 4]!)]);
}

Deno.test("a slow reader is closed with 4008; the other sockets go on", async () => {
  const f = await fixture({ SVC_CTI_SEND_BUFFER: "4096", SVC_CTI_MAX_PER_USER: "5" });
  try {
    await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const reader = await f.open(token);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: f.server.addr.port });
    await conn.write(new TextEncoder().encode(
      `GET ${V2}/cti?token=${token} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    ));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(f.ctx.services.cti.count("alice"), 2);
    // the slow client asks for much and reads nothing
    const ask = textFrame(JSON.stringify({ claz: "web", command: "getConfig" }));
    const deadline = Date.now() + 20_000;
    while (f.ctx.services.cti.count("alice") === 2 && Date.now() < deadline) {
      await conn.write(new Uint8Array(Array.from({ length: 200 }, () => [...ask]).flat()));
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    assert.equal(f.ctx.services.cti.count("alice"), 1, "the slow socket is gone");
    conn.close();
    reader.send({ claz: "ping" });
    await reader.type("Pong");
  } finally {
    await f.close();
  }
});

Deno.test("the DND route's events reach the socket (REST and socket are one path)", async () => {
  const f = await fixture();
  try {
    await userWithLine(f.api, "alice", "1001");
    const client = await f.open(await login(f.ctx, "login", "alice"));
    await client.type("UserConfigUpdate");
    const ws = await webServiceUser(f.ctx, ["svc.rest.dnd.#"]);
    const response = await postJson(
      f.ctx,
      `${V2}/dnd/alice`,
      { state: true },
      bearer(await login(f.ctx, "webservice", ws.login)),
    );
    assert.equal(response.status, 200);
    assert.equal((await client.type("UserConfigUpdate")).ctiMessage.dndEnabled, true);
  } finally {
    await f.close();
  }
});

Deno.test("sockets opening together are each greeted in full; one opening later reads the contacts again", async () => {
  const f = await fixture({ SVC_CTI_MAX_PER_USER: "20" });
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    await userWithLine(f.api, "bob", "1002");
    const contact = (number: string) => ({
      company: "",
      email: "",
      fax: "",
      firstname: "Contact",
      lastname: number,
      mobile: "",
      number,
    });
    await createContact(f.ctx.services.store, alice.id, contact("1002"), false, 100);
    const [aliceToken, bobToken] = [
      await login(f.ctx, "login", "alice"),
      await login(f.ctx, "login", "bob"),
    ];
    const tokens = [...Array(12).fill(aliceToken), ...Array(4).fill(bobToken)];
    const clients = await Promise.all(tokens.map((token) => f.open(token)));
    // a message is run once the greeting is sent: what came before the Pong is the whole greeting
    // (a socket opening while another's first statuses go out gets those too, as changes)
    const greetings = await Promise.all(clients.map(async (client) => {
      client.send({ claz: "ping" });
      await client.type("Pong");
      return client.messages.slice(0, -1).map((message) => message.msgType);
    }));
    for (const [i, greeting] of greetings.entries()) {
      const statuses = i < 12
        ? ["PhoneHintStatusEvent", "PhoneStatusUpdate"]
        : ["PhoneStatusUpdate"];
      assert.deepEqual(greeting.slice(0, 2), ["LoggedOn", "UserConfigUpdate"], `socket ${i}`);
      // the phone statuses, then the concerns' greetings (lib/cti/command_set.ts)
      const phones = greeting.slice(2).filter((type) => type.startsWith("Phone"));
      assert.deepEqual([...new Set(phones)].sort(), statuses, `socket ${i}`);
      const concerns = greeting.slice(2).filter((type) => !type.startsWith("Phone"));
      assert.deepEqual(
        concerns,
        ["LineConfig", "RightProfile", "UsersStatuses", "UserStatusUpdate"],
        `socket ${i}`,
      );
    }
    assert.equal(f.ctx.services.cti.count("alice"), 12);
    // a socket opening later reads the contacts again: its greeting has the new one, and the
    // other sockets of the user get its status as a change
    await createContact(f.ctx.services.store, alice.id, contact("1003"), false, 100);
    const late = await f.open(aliceToken);
    const hint = (message: { msgType: string; ctiMessage: Record<string, unknown> }) =>
      message.msgType === "PhoneHintStatusEvent" && message.ctiMessage.number === "1003";
    assert.deepEqual((await late.next(hint, "the new contact's status")).ctiMessage, {
      number: "1003",
      status: -2,
    });
    await clients[0]!.next(hint, "the new contact's status on an older socket");
  } finally {
    await f.close();
  }
});

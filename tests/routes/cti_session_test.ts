/**
 * Keeping a CTI session alive (lib/cti_session/, docs/cti.md "Keeping the session alive"), over a
 * real socket: `LineConfig` and `RightProfile` after the greeting, `LineConfig` on `getConfig` and
 * when the line changes, `AuthenticationToken` before the token expires (the socket then signed
 * in with it), `RightProfile` again when the user's rights profile changes (at once, no renewal
 * needed), and `AgentError` for the agent commands the agent's state refuses.
 */
import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { createAgent } from "../../lib/store/agents.ts";
import { getLine } from "../../lib/store/lines.ts";
import { linkUserAgent } from "../../lib/store/user_agents.ts";
import { getUser } from "../../lib/store/users.ts";
import { bearer, login, rightsAdmin } from "../helpers.ts";
import {
  type Client,
  type Fixture,
  fixture,
  type Message,
  userWithLine,
  V2,
} from "./cti_fixtures.ts";

/** What follows the hub's greeting: the next `LineConfig` and `RightProfile`. */
async function sessionGreeting(client: Client) {
  return {
    line: (await client.type("LineConfig")).ctiMessage,
    rights: (await client.type("RightProfile")).ctiMessage,
  };
}

/** Sends a ping and waits for its Pong: what the socket was sent before is in. */
async function settled(client: Client): Promise<void> {
  client.send({ claz: "ping" });
  await client.type("Pong");
}

/** The user's main line's id. */
async function mainLine(f: Fixture, userId: number): Promise<number> {
  return (await getUser(f.ctx.services.store, userId))!.line_ids[0]!;
}

const count = (client: Client, msgType: string) =>
  client.messages.filter((message: Message) => message.msgType === msgType).length;

Deno.test("LineConfig and RightProfile follow the greeting; getConfig line answers LineConfig", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const client = await f.open(await login(f.ctx, "login", "alice"));
    const order = () => client.messages.map((message) => message.msgType);
    const { line, rights } = await sessionGreeting(client);
    assert.deepEqual(order().slice(0, 2), ["LoggedOn", "UserConfigUpdate"]);
    assert.ok(order().indexOf("LineConfig") > order().indexOf("PhoneStatusUpdate"));
    const lineId = await mainLine(f, alice.id);
    const lineName = (await getLine(f.ctx.services.store, lineId))!.name;
    assert.deepEqual(line, {
      id: String(lineId),
      context: "default",
      name: lineName, // no SIP endpoint: the line's own name
      number: "1001",
      webRtc: false,
      hasDevice: false,
      sipProxyName: "default",
    });
    assert.deepEqual(rights, { profile: "NoRight", rights: [] });

    client.web("getConfig", { objectType: "line" });
    assert.deepEqual((await client.type("LineConfig")).ctiMessage, line);
    client.web("getConfig", { objectType: "user" });
    assert.equal((await client.type("UserConfigUpdate")).ctiMessage.userId, alice.id);
    client.web("getConfig", { objectType: "queue" }); // a supervisor's (docs/cti.md, Configuration)
    assert.equal((await client.type("Error")).ctiMessage.error, "Forbidden");
    client.web("getConfig", { objectType: "nosuchtype" });
    assert.equal((await client.type("Error")).ctiMessage.error, "BadRequest");
  } finally {
    await f.close();
  }
});

Deno.test("LineConfig of a WebRTC SIP line on a device; of a user without a line; a supervisor's RightProfile", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const lineId = await mainLine(f, alice.id);
    const sip = await f.api.create("/endpoints/sip", {
      username: "alice-webrtc",
      secret: "s3cret-sip",
      options: [["webrtc", "yes"]],
    });
    assert.equal((await f.api.put(`/lines/${lineId}/endpoints/sip/${sip.id}`)).status, 204);
    const device = await f.api.create("/devices", { mac: "aa:bb:cc:00:11:22", vendor: "Yealink" });
    assert.equal((await f.api.put(`/lines/${lineId}/devices/${device.id}`)).status, 204);
    await (await rightsAdmin(f.ctx))(alice.id, { profile: "supervisor", listen: true });
    const client = await f.open(await login(f.ctx, "login", "alice"));
    const { line, rights } = await sessionGreeting(client);
    assert.deepEqual(line, {
      id: String(lineId),
      context: "default",
      name: "alice-webrtc",
      number: "1001",
      webRtc: true,
      hasDevice: true,
      vendor: "Yealink",
      sipProxyName: "default",
      password: "s3cret-sip", // a WebRTC line's browser registers with it
    });
    assert.deepEqual(rights, { profile: "Supervisor", rights: ["listen"] });

    // a line that is no WebRTC line never shows its secret
    const plain = await f.api.create("/endpoints/sip", { username: "bob-sip", secret: "hidden" });
    const bob = await userWithLine(f.api, "bob", "1002");
    const bobLine = await mainLine(f, bob.id);
    assert.equal((await f.api.put(`/lines/${bobLine}/endpoints/sip/${plain.id}`)).status, 204);
    const bobClient = await f.open(await login(f.ctx, "login", "bob"));
    const bobGreeting = await sessionGreeting(bobClient);
    assert.equal(bobGreeting.line.name, "bob-sip");
    assert.equal(bobGreeting.line.webRtc, false);
    assert.ok(!("password" in bobGreeting.line));

    // no line: xuc's "-", which its clients take as a user without a line
    const carol = await f.api.create("/users", {
      firstname: "carol",
      username: "carol",
      password: "carol-pw",
    });
    const carolClient = await f.open(await login(f.ctx, "login", "carol"));
    assert.deepEqual((await sessionGreeting(carolClient)).line, {
      id: "-",
      context: "",
      name: "",
      number: "",
      webRtc: false,
      hasDevice: false,
      sipProxyName: "default",
    });
    assert.ok(carol.id);
  } finally {
    await f.close();
  }
});

Deno.test("a changed line is sent as LineConfig to every socket of the user at the next refresh", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const [one, two] = [await f.open(token), await f.open(token)];
    for (const client of [one, two]) await sessionGreeting(client);
    await f.ctx.clock.advance(30_000); // a refresh with nothing changed sends nothing
    for (const client of [one, two]) {
      await settled(client);
      assert.equal(count(client, "LineConfig"), 1);
    }
    // alice's main line becomes another one, with another number
    const oldLine = await mainLine(f, alice.id);
    assert.equal((await f.api.delete(`/users/${alice.id}/lines/${oldLine}`)).status, 204);
    const line = await f.api.create("/lines", { context: "default" });
    const extension = await f.api.create("/extensions", { exten: "1010", context: "default" });
    assert.equal((await f.api.put(`/lines/${line.id}/extensions/${extension.id}`)).status, 204);
    assert.equal((await f.api.put(`/users/${alice.id}/lines/${line.id}`)).status, 204);
    await f.ctx.clock.advance(30_000);
    for (const client of [one, two]) {
      const changed = await client.type("LineConfig");
      assert.equal(changed.ctiMessage.id, String(line.id));
      assert.equal(changed.ctiMessage.number, "1010");
    }
  } finally {
    await f.close();
  }
});

Deno.test("the token is renewed before it expires: AuthenticationToken, the socket stays open with it", async () => {
  const f = await fixture(); // SVC_TOKEN_TTL 7200: renewed 5 minutes before it expires
  try {
    await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const client = await f.open(token);
    await sessionGreeting(client);
    await f.ctx.clock.advance(7_200_000 - 300_001);
    await settled(client);
    assert.equal(count(client, "AuthenticationToken"), 0);
    await f.ctx.clock.advance(1);
    const renewed = (await client.type("AuthenticationToken")).ctiMessage;
    assert.deepEqual(Object.keys(renewed).sort(), ["TTL", "login", "token"]);
    assert.equal(renewed.login, "alice");
    assert.equal(renewed.TTL, 7200);
    assert.notEqual(renewed.token, token);

    // the renewed token is a token like any: it checks, and opens another socket
    const check = await f.ctx.app.request(`${V2}/auth/check`, {
      headers: bearer(renewed.token as string),
    });
    assert.equal(check.status, 200);
    // past the old token's expiry the socket is open and commands run
    await f.ctx.clock.advance(300_000);
    const check2 = await f.ctx.app.request(`${V2}/auth/check`, { headers: bearer(token) });
    assert.equal(check2.status, 403); // the old one expired
    const other = await f.open(renewed.token as string);
    await settled(other);
    client.web("dnd", { state: true });
    await client.next(
      (m) => m.msgType === "UserConfigUpdate" && m.ctiMessage.dndEnabled === true,
      "DND",
    );
    assert.equal(client.socket.readyState, WebSocket.OPEN);
    // and again before the renewed one expires
    await f.ctx.clock.advance(7_200_000 - 300_000);
    const again = (await client.type("AuthenticationToken")).ctiMessage;
    assert.notEqual(again.token, renewed.token);
    await settled(client);
    assert.equal(client.socket.readyState, WebSocket.OPEN);
  } finally {
    await f.close();
  }
});

Deno.test("sockets sharing a token get the same renewal", async () => {
  const f = await fixture({ SVC_TOKEN_TTL: "600" });
  try {
    await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const [one, two] = [await f.open(token), await f.open(token)];
    for (const client of [one, two]) await sessionGreeting(client);
    await f.ctx.clock.advance(300_000);
    const [first, second] = [
      (await one.type("AuthenticationToken")).ctiMessage,
      (await two.type("AuthenticationToken")).ctiMessage,
    ];
    assert.equal(first.token, second.token);
    assert.deepEqual(decodeJwt(first.token as string).acls, ["alias.ctiuser"]);
  } finally {
    await f.close();
  }
});

Deno.test("a change of rights profile reaches every socket of the user at once, no renewal needed", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const give = await rightsAdmin(f.ctx);
    const token = await login(f.ctx, "login", "alice");
    const [one, two] = [await f.open(token), await f.open(token)];
    for (const client of [one, two]) {
      assert.equal((await sessionGreeting(client)).rights.profile, "NoRight");
      client.web("subscribeToQueueStats");
      assert.deepEqual((await client.type("Error")).ctiMessage, {
        error: "Forbidden",
        message: "the user has no supervisor rights profile",
        command: "subscribeToQueueStats",
      });
    }
    await give(alice.id, { profile: "admin" });
    for (const client of [one, two]) {
      assert.deepEqual((await client.type("RightProfile")).ctiMessage, {
        profile: "Admin",
        rights: ["recording", "listen", "changeQueues"],
      });
      const refusals = count(client, "Error");
      client.web("subscribeToQueueStats"); // the same token: the profile decides
      await settled(client);
      assert.equal(count(client, "Error"), refusals, JSON.stringify(client.messages.slice(-3)));
    }
    await give(alice.id, null);
    for (const client of [one, two]) {
      assert.deepEqual((await client.type("RightProfile")).ctiMessage, {
        profile: "NoRight",
        rights: [],
      });
    }
  } finally {
    await f.close();
  }
});

Deno.test("agent commands the agent's state refuses answer AgentError; malformed ones Error", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const client = await f.open(await login(f.ctx, "login", "alice"));
    await sessionGreeting(client);
    const agentError = async (command: string) => {
      const message = await client.next(
        (m) => m.msgType === "AgentError" && m.ctiMessage.command === command,
        `${command}'s AgentError`,
      );
      return message.ctiMessage;
    };
    client.web("pauseAgent");
    assert.deepEqual(await agentError("pauseAgent"), {
      Error: "AgentNotFound",
      message: "user alice has no agent",
      command: "pauseAgent",
    });
    const agent = await createAgent(f.ctx.services.store, { number: "8001" });
    await linkUserAgent(f.ctx.services.store, alice.id, agent.id);
    client.web("unpauseAgent");
    assert.equal((await agentError("unpauseAgent")).Error, "NotLogged");
    client.web("agentLogout");
    assert.equal((await agentError("agentLogout")).Error, "NotLogged");
    client.web("agentLogin", { agentphonenumber: "9999" }); // none of the user's lines
    assert.equal((await client.type("Error")).ctiMessage.error, "BadRequest");
    client.web("agentLogin");
    await client.type("AgentStateEvent");
    client.web("agentLogin");
    assert.equal((await agentError("agentLogin")).Error, "AlreadyLogged");
    // not understood, or not allowed: Error, as for any command
    client.web("pauseAgent", { agentid: "one" });
    const bad = await client.type("Error");
    assert.deepEqual([bad.ctiMessage.error, bad.ctiMessage.command], ["BadRequest", "pauseAgent"]);
    const other = await createAgent(f.ctx.services.store, { number: "8002" });
    client.web("pauseAgent", { agentid: other.id });
    assert.equal((await client.type("Error")).ctiMessage.error, "Forbidden");
    await settled(client);
  } finally {
    await f.close();
  }
});

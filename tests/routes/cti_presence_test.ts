/**
 * Presence and phone hints on the CTI socket (docs/cti.md, "Presence and phone hints",
 * lib/presence/) over a real server and Deno's WebSocket client, on the simulator: the statuses at
 * sign-in, `userStatusUpdate` and its actions (DND, the agent), `subscribeToPhoneHints` and
 * `unsubscribeFromAllPhoneHints` as the simulated phones ring, every error, and the REST routes
 * of the statuses (`/presences`).
 */
import assert from "node:assert/strict";
import { DEFAULT_STATUSES, type UserStatus } from "../../lib/presence/statuses.ts";
import { readGreeting } from "../../lib/presence/store.ts";
import { createAgent } from "../../lib/store/agents.ts";
import { createContact } from "../../lib/store/contacts.ts";
import { linkUserAgent } from "../../lib/store/user_agents.ts";
import { getUser } from "../../lib/store/users.ts";
import { apiCall, expectForbidden, login, webServiceUser } from "../helpers.ts";
import {
  Client,
  type Fixture,
  fixture,
  type Message,
  refused,
  userWithLine,
  V2,
} from "./cti_fixtures.ts";

/** The status `userId` last chose, as stored (null: none). */
const readPresence = async (store: Parameters<typeof readGreeting>[0], userId: number) =>
  (await readGreeting(store, userId)).presence;

/** Waits until what `client` sent so far has run (messages run in order; ping answers `Pong`). */
async function settled(client: Client): Promise<void> {
  client.send({ claz: "ping" });
  await client.type("Pong");
}

const statusUpdate = (status: string) => (message: Message) =>
  message.msgType === "UserStatusUpdate" && message.ctiMessage.status === status;

const hint = (number: string, status?: number) => (message: Message) =>
  message.msgType === "PhoneHintStatusEvent" && message.ctiMessage.number === number &&
  (status === undefined || message.ctiMessage.status === status);

/** A socket of `username` (user `id`) whose token holds `acls` only. */
async function socketWith(f: Fixture, id: number, username: string, acls: string[]) {
  const identity = { userId: String(id), login: username, userType: "cti" as const, acls };
  return await f.open((await f.ctx.services.tokens.issue(identity)).token);
}

Deno.test("sign-in: UsersStatuses (XiVO's defaults), then the user's UserStatusUpdate", async () => {
  const f = await fixture();
  try {
    await userWithLine(f.api, "alice", "1001");
    const client = await f.open(await login(f.ctx, "login", "alice"));
    const statuses = await client.type("UsersStatuses");
    assert.deepEqual(statuses.ctiMessage, DEFAULT_STATUSES);
    assert.deepEqual(
      (statuses.ctiMessage as unknown as UserStatus[]).map((status) => status.name),
      ["available", "away", "berightback", "outtolunch", "donotdisturb", "disconnected"],
    );
    // the status comes after the list: the GLPI plugin looks it up there
    assert.deepEqual((await client.type("UserStatusUpdate")).ctiMessage, { status: "available" });
    const types = client.messages.map((message) => message.msgType);
    assert.ok(types.indexOf("LoggedOn") < types.indexOf("UsersStatuses"));
  } finally {
    await f.close();
  }
});

Deno.test("userStatusUpdate: every socket of the user is told, no one else; a new socket is greeted with it", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    await userWithLine(f.api, "bob", "1002");
    const aliceToken = await login(f.ctx, "login", "alice");
    const [one, two] = [await f.open(aliceToken), await f.open(aliceToken)];
    const bob = await f.open(await login(f.ctx, "login", "bob"));
    for (const client of [one, two, bob]) await client.type("UserStatusUpdate");
    one.web("userStatusUpdate", { status: "away" });
    for (const client of [one, two]) {
      assert.deepEqual((await client.type("UserStatusUpdate")).ctiMessage, { status: "away" });
    }
    await settled(bob);
    assert.ok(!bob.messages.some(statusUpdate("away")), "bob is not told alice's status");
    assert.equal(await readPresence(f.ctx.services.store, alice.id), "away");
    // away clears DND, which was off: no UserConfigUpdate
    assert.ok(!one.messages.some((m) => m.msgType === "UserConfigUpdate" && m !== one.messages[1]));
    const three = await f.open(aliceToken);
    await three.type("UsersStatuses");
    assert.deepEqual((await three.type("UserStatusUpdate")).ctiMessage, { status: "away" });
  } finally {
    await f.close();
  }
});

Deno.test("userStatusUpdate: DND follows the status's enablednd action", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const client = await f.open(await login(f.ctx, "login", "alice"));
    await client.type("UserStatusUpdate");
    client.web("userStatusUpdate", { status: "donotdisturb" });
    assert.equal((await client.type("UserConfigUpdate")).ctiMessage.dndEnabled, true);
    await client.next(statusUpdate("donotdisturb"), "donotdisturb");
    assert.equal((await getUser(f.ctx.services.store, alice.id))!.services.dnd.enabled, true);
    client.web("userStatusUpdate", { status: "berightback" });
    assert.equal((await client.type("UserConfigUpdate")).ctiMessage.dndEnabled, false);
    await client.next(statusUpdate("berightback"), "berightback");
    assert.equal((await getUser(f.ctx.services.store, alice.id))!.services.dnd.enabled, false);
  } finally {
    await f.close();
  }
});

Deno.test("userStatusUpdate: disconnected logs the user's agent off; a configured status pauses it", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const store = f.ctx.services.store;
    const agent = await createAgent(store, { number: "8001" });
    await linkUserAgent(store, alice.id, agent.id);
    const ws = await webServiceUser(f.ctx, ["svc.rest.presences.#"]);
    const rest = apiCall(f.ctx, V2, await login(f.ctx, "webservice", ws.login));
    const statuses: UserStatus[] = [
      ...DEFAULT_STATUSES,
      {
        name: "meeting",
        color: "#123456",
        longName: "In a meeting",
        actions: [{ name: "queuepause_all", parameters: "true" }],
      },
      {
        name: "back",
        color: "#654321",
        longName: "Back",
        actions: [{ name: "queueunpause_all", parameters: "true" }],
      },
    ];
    assert.equal((await rest("PUT", "/presences", statuses)).status, 200);
    const client = await f.open(await login(f.ctx, "login", "alice"));
    await client.type("UserStatusUpdate");
    // the agent is not logged in: the actions do nothing, the status is taken
    client.web("userStatusUpdate", { status: "meeting" });
    await client.next(statusUpdate("meeting"), "meeting without an agent logged in");
    client.web("agentLogin");
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentReady");
    client.web("userStatusUpdate", { status: "meeting" });
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentOnPause");
    const presence = await f.ctx.services.platform.agentPresence(agent.id);
    assert.deepEqual([presence.paused, presence.pausedReason], [true, "meeting"]);
    client.web("userStatusUpdate", { status: "back" });
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentReady");
    client.web("userStatusUpdate", { status: "disconnected" });
    assert.equal((await client.type("AgentStateEvent")).ctiMessage.name, "AgentLoggedOut");
    await client.next(statusUpdate("disconnected"), "disconnected");
  } finally {
    await f.close();
  }
});

Deno.test("userStatusUpdate errors: each an Error, nothing changed, the socket open", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const client = await f.open(await login(f.ctx, "login", "alice"));
    await client.type("UserStatusUpdate");
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ status: "gone-fishing" }, /unknown status "gone-fishing"/],
      [{ status: "Available" }, /unknown status/], // names are case-sensitive, as in XiVO
      [{}, /field status: required/],
      [{ status: 12 }, /field status: expected a string/],
      [{ status: null }, /field status: expected a string/],
      [{ status: "" }, /field status: must not be empty/],
      [{ status: "a".repeat(65) }, /field status: longer than 64/],
      [{ status: "x".repeat(60_000) }, /field status: longer than 64/],
    ];
    for (const [fields, message] of cases) {
      assert.match(await refused(client, "userStatusUpdate", fields, "BadRequest"), message);
    }
    await settled(client);
    assert.equal(client.messages.filter((m) => m.msgType === "UserStatusUpdate").length, 1);
    assert.equal(await readPresence(f.ctx.services.store, alice.id), null);

    // without the command's ACL; with it but denying DND, a status setting DND is refused whole
    const narrow = await socketWith(f, alice.id, "alice", ["svc.rest.dnd.#"]);
    assert.match(
      await refused(narrow, "userStatusUpdate", { status: "away" }, "Forbidden"),
      /missing ACL svc\.cti\.presence\.alice\.update/,
    );
    const noDnd = await socketWith(f, alice.id, "alice", ["alias.ctiuser", "!svc.rest.dnd.#"]);
    assert.match(
      await refused(noDnd, "userStatusUpdate", { status: "donotdisturb" }, "Forbidden"),
      /missing ACL svc\.rest\.dnd\.alice\.create/,
    );
    const user = await getUser(f.ctx.services.store, alice.id);
    assert.equal(user!.services.dnd.enabled, false);
    assert.equal(await readPresence(f.ctx.services.store, alice.id), null);
    await settled(noDnd);
    assert.ok(!client.messages.some(statusUpdate("donotdisturb")));
  } finally {
    await f.close();
  }
});

Deno.test("a status that left the list shows as the list's first; deleting the user forgets it", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const client = await f.open(token);
    client.web("userStatusUpdate", { status: "outtolunch" });
    await client.next(statusUpdate("outtolunch"), "outtolunch");
    const ws = await webServiceUser(f.ctx, ["svc.rest.presences.update"]);
    const rest = apiCall(f.ctx, V2, await login(f.ctx, "webservice", ws.login));
    const only: UserStatus[] = [
      { name: "here", color: "#00FF00", longName: "Here", actions: [] },
      { name: "gone", color: "#FF0000", longName: "Gone", actions: [] },
    ];
    assert.equal((await rest("PUT", "/presences", only)).status, 200);
    const later = await f.open(token);
    assert.deepEqual((await later.type("UsersStatuses")).ctiMessage, only);
    assert.deepEqual((await later.type("UserStatusUpdate")).ctiMessage, { status: "here" });
    assert.equal(await readPresence(f.ctx.services.store, alice.id), "outtolunch");
    // a user without a line, which the configuration daemon may delete
    const dave = await f.api.create("/users", {
      firstname: "dave",
      username: "dave",
      password: "dave-pw",
    }) as { id: number };
    const daves = await f.open(await login(f.ctx, "login", "dave"));
    daves.web("userStatusUpdate", { status: "gone" });
    await daves.next(statusUpdate("gone"), "dave gone");
    assert.equal(await readPresence(f.ctx.services.store, dave.id), "gone");
    assert.equal((await f.api.call("DELETE", `/users/${dave.id}`)).status, 204);
    assert.equal(await readPresence(f.ctx.services.store, dave.id), null);
  } finally {
    await f.close();
  }
});

Deno.test("GET and PUT /presences: the list, its ACLs and every bad body", async (t) => {
  const f = await fixture();
  try {
    const token = async (acls: string[]) =>
      await login(f.ctx, "webservice", (await webServiceUser(f.ctx, acls)).login);
    const reader = apiCall(f.ctx, V2, await token(["svc.rest.presences.read"]));
    const writer = apiCall(f.ctx, V2, await token(["svc.rest.presences.update"]));
    await t.step("ACLs: each route needs its own", async () => {
      const response = await reader("GET", "/presences");
      assert.equal(response.status, 200);
      assert.deepEqual(await response.json(), DEFAULT_STATUSES);
      await expectForbidden(await writer("GET", "/presences"), "svc.rest.presences.read");
      await expectForbidden(
        await reader("PUT", "/presences", DEFAULT_STATUSES),
        "svc.rest.presences.update",
      );
      // a CTI user's token holds neither
      await userWithLine(f.api, "alice", "1001");
      const cti = apiCall(f.ctx, V2, await login(f.ctx, "login", "alice"));
      await expectForbidden(await cti("GET", "/presences"), "svc.rest.presences.read");
    });
    await t.step('PUT replaces the list; parameters default to ""', async () => {
      const body = [{
        name: "lunch.break_1",
        color: "#abcdef",
        longName: "Lunch ☕",
        actions: [{ name: "agentlogoff" }, { name: "enablednd", parameters: "true" }],
      }];
      const response = await writer("PUT", "/presences", body);
      assert.equal(response.status, 200);
      const expected = [{
        ...body[0],
        actions: [{ name: "agentlogoff", parameters: "" }, {
          name: "enablednd",
          parameters: "true",
        }],
      }];
      assert.deepEqual(await response.json(), expected);
      assert.deepEqual(await (await reader("GET", "/presences")).json(), expected);
    });
    await t.step("bad bodies: 400, the list unchanged", async () => {
      const ok = { name: "a", color: "#000000", longName: "A", actions: [] };
      const cases: [unknown, string, RegExp][] = [
        ["", "JsonBodyNotFound", /no JSON body/],
        ["[{", "JsonErrorDecoding", /not valid JSON/],
        [{ statuses: [ok] }, "JsonErrorDecoding", /JSON array of statuses/],
        [[], "JsonErrorDecoding", /one status at least/],
        [Array(51).fill(0).map((_, i) => ({ ...ok, name: `s${i}` })), "JsonErrorDecoding", /50/],
        [[ok, ok], "JsonErrorDecoding", /field 1\.name: a appears twice/],
        [[{ ...ok, name: "a b" }], "JsonErrorDecoding", /field 0\.name: letters/],
        [[{ ...ok, name: "x".repeat(65) }], "JsonErrorDecoding", /field 0\.name: longer than 64/],
        [[{ ...ok, name: 3 }], "JsonErrorDecoding", /field 0\.name: expected a string/],
        [[{ ...ok, color: "red" }], "JsonErrorDecoding", /field 0\.color: expected #RRGGBB/],
        [[{ ...ok, longName: "" }], "JsonErrorDecoding", /field 0\.longName: must not be empty/],
        [[{ ...ok, longName: "L".repeat(129) }], "JsonErrorDecoding", /longer than 128/],
        [[{ ...ok, actions: undefined }], "JsonErrorDecoding", /field 0\.actions: required/],
        [
          [{ ...ok, actions: [{ name: "reboot" }] }],
          "JsonErrorDecoding",
          /field 0\.actions\.0\.name: expected one of enablednd/,
        ],
        [
          [{ ...ok, actions: [{ name: "enablednd", parameters: "yes" }] }],
          "JsonErrorDecoding",
          /field 0\.actions\.0\.parameters: enablednd takes "true" or "false"/,
        ],
        [
          [{ ...ok, actions: [{ name: "agentlogoff" }, { name: "agentlogoff" }] }],
          "JsonErrorDecoding",
          /field 0\.actions: an action appears twice/,
        ],
        [
          [{ ...ok, actions: [{ name: "agentlogoff", parameters: "p".repeat(65) }] }],
          "JsonErrorDecoding",
          /field 0\.actions\.0\.parameters/,
        ],
      ];
      const before = await (await reader("GET", "/presences")).json();
      for (const [body, error, message] of cases) {
        const response = await writer("PUT", "/presences", body);
        assert.equal(response.status, 400, JSON.stringify(body).slice(0, 80));
        const answer = await response.json();
        assert.equal(answer.error, error, answer.message);
        assert.match(answer.message, message);
      }
      assert.deepEqual(await (await reader("GET", "/presences")).json(), before);
    });
  } finally {
    await f.close();
  }
});

/** alice 1001, bob 1002 and carol 1003, their phones answering by hand. */
async function phones(f: Fixture) {
  const ids: Record<string, number> = {};
  const extens = { alice: "1001", bob: "1002", carol: "1003" };
  for (const [name, exten] of Object.entries(extens)) {
    ids[name] = (await userWithLine(f.api, name, exten)).id;
    await f.ctx.services.sim!.setPolicy(exten, { policy: "manual" });
  }
  return {
    ids,
    /** carol calls bob: carol's phone answers, bob's rings (status 8). */
    async ringBob() {
      const carol = await getUser(f.ctx.services.store, ids.carol!);
      await f.ctx.services.platform.dialNumber(carol!, "1002", {});
      await f.ctx.services.sim!.act("1003", "answer");
    },
  };
}

Deno.test("subscribeToPhoneHints: every number's status at once, then each change as the phone rings", async () => {
  const f = await fixture();
  try {
    const world = await phones(f);
    const token = await login(f.ctx, "login", "alice");
    const [tab, other] = [await f.open(token), await f.open(token)];
    tab.web("subscribeToPhoneHints", { phoneNumbers: ["1002", "0612345678", "1002", "1003"] });
    assert.deepEqual((await tab.next(hint("1002"), "1002")).ctiMessage, {
      number: "1002",
      status: 0,
    });
    assert.deepEqual((await tab.next(hint("0612345678"), "outside")).ctiMessage, {
      number: "0612345678",
      status: -2,
    });
    await tab.next(hint("1003"), "1003");
    await settled(tab);
    assert.equal(tab.messages.filter(hint("1002")).length, 1, "a number asked twice: once");
    // the subscription is the socket's: the user's other socket is not sent them
    await settled(other);
    assert.ok(!other.messages.some(hint("1002")));

    await world.ringBob();
    await f.ctx.clock.advance(250); // the status poll
    await tab.next(hint("1002", 8), "bob's phone ringing");
    await tab.next(hint("1003", 1), "carol's phone calling");
    // an empty list is no error and changes nothing
    tab.web("subscribeToPhoneHints", { phoneNumbers: [] });
    await settled(tab);
    assert.ok(!tab.messages.some((m) => m.msgType === "Error"));

    // unsubscribed: no more; a socket subscribed to the same numbers shows the poll ran
    tab.web("unsubscribeFromAllPhoneHints");
    await settled(tab);
    other.web("subscribeToPhoneHints", { phoneNumbers: ["1002"] });
    await other.next(hint("1002", 8), "the other socket's first status");
    await f.ctx.services.sim!.act("1002", "answer");
    await f.ctx.clock.advance(250);
    await other.next(hint("1002", 2), "bob's phone busy, on the other socket");
    await settled(tab);
    assert.ok(!tab.messages.some(hint("1002", 2)), "no hint after unsubscribing");
  } finally {
    await f.close();
  }
});

Deno.test("a subscribed number that is also a personal contact's is sent once per change", async () => {
  const f = await fixture();
  try {
    const world = await phones(f);
    await createContact(
      f.ctx.services.store,
      world.ids.alice!,
      {
        company: "",
        email: "",
        fax: "",
        firstname: "Bob",
        lastname: "",
        mobile: "",
        number: "1002",
      },
      false,
      100,
    );
    const client = await f.open(await login(f.ctx, "login", "alice"));
    await client.next(hint("1002", 0), "the contact's status at sign-in");
    client.web("subscribeToPhoneHints", { phoneNumbers: ["1002"] });
    await client.next(hint("1002", 0), "the subscription's status at once");
    await world.ringBob();
    await f.ctx.clock.advance(250);
    await client.next(hint("1002", 8), "bob ringing");
    await f.ctx.services.sim!.act("1002", "answer");
    await f.ctx.clock.advance(250);
    await client.next(hint("1002", 2), "bob busy");
    await settled(client);
    assert.equal(client.messages.filter(hint("1002", 8)).length, 1);
    assert.equal(client.messages.filter(hint("1002", 2)).length, 1);
  } finally {
    await f.close();
  }
});

Deno.test("subscribeToPhoneHints errors: each an Error, nothing changed", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const client = await f.open(await login(f.ctx, "login", "alice"));
    const numbers = (count: number, from = 0) =>
      Array.from({ length: count }, (_, i) => String(10_000 + from + i));
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /field phoneNumbers: required/],
      [{ phoneNumbers: "1002" }, /field phoneNumbers: expected an array of numbers/],
      [{ phoneNumbers: [1002] }, /field phoneNumbers\.0: expected a string/],
      [{ phoneNumbers: ["1002", ""] }, /field phoneNumbers\.1: must not be empty/],
      [{ phoneNumbers: ["9".repeat(65)] }, /field phoneNumbers\.0: longer than 64/],
      [{ phoneNumbers: numbers(1_001) }, /more than 1000 numbers/],
    ];
    for (const [fields, message] of cases) {
      assert.match(await refused(client, "subscribeToPhoneHints", fields, "BadRequest"), message);
    }
    // 1,000 per socket in all: 600, then 500 more is refused whole, then 400 more is fine
    client.web("subscribeToPhoneHints", { phoneNumbers: numbers(600) });
    assert.match(
      await refused(
        client,
        "subscribeToPhoneHints",
        { phoneNumbers: numbers(500, 600) },
        "BadRequest",
      ),
      /1000 numbers at most \(it watches 600\)/,
    );
    assert.ok(!client.messages.some(hint(String(10_600))));
    client.web("subscribeToPhoneHints", { phoneNumbers: numbers(400, 600) });
    await client.next(hint(String(10_999), -2), "the 1,000th number");
    // the same numbers again are no more numbers
    client.web("subscribeToPhoneHints", { phoneNumbers: numbers(10) });
    await settled(client);
    assert.equal(client.messages.filter((m) => m.msgType === "Error").length, cases.length + 1);
    // without the ACL
    const narrow = await socketWith(f, alice.id, "alice", ["svc.rest.dnd.#"]);
    assert.match(
      await refused(narrow, "subscribeToPhoneHints", { phoneNumbers: ["1002"] }, "Forbidden"),
      /missing ACL svc\.cti\.phone_hints\.read/,
    );
    // unsubscribing needs none, and works with nothing subscribed
    narrow.web("unsubscribeFromAllPhoneHints");
    await settled(narrow);
    assert.equal(narrow.messages.filter((m) => m.msgType === "Error").length, 1);
  } finally {
    await f.close();
  }
});

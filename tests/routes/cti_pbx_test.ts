/**
 * The CTI channel's commands and messages on the PBX (docs/cti.md, "Listening and recordings",
 * "Screen pops", "Voicemail", "Calls") over a real server and Deno's WebSocket client, on the
 * simulator: `listenAgent` and `AgentListen`, `monitorPause`/`monitorUnpause` and the recording's
 * state in `PhoneEvent` and `AgentStateEvent`, `setData`, `originate`, the `Sheet` of a ringing
 * phone, `VoiceMailStatusUpdate`; each command's refusals (rights, bad fields, unknown ids, nothing
 * to act on), the socket staying open.
 */
import assert from "node:assert/strict";
import { adminProfile, type RightsProfileRecord, setProfile } from "../../lib/rights/profiles.ts";
import type { AgentRecord } from "../../lib/store/agents.ts";
import { getUser, type UserRecord } from "../../lib/store/users.ts";
import { ctiUser, login } from "../helpers.ts";
import {
  Client,
  type Fixture,
  fixture,
  type Message,
  refused,
  socketWithAcls,
  userWithLine,
} from "./cti_fixtures.ts";

type Name = "alice" | "bob" | "carol" | "pat";
const EXTEN: Record<Name, string> = { alice: "1001", bob: "1002", carol: "1003", pat: "1004" };
const SHEET_URL = "https://crm.example/pop?n={callerNumber}&who={callerName}&q={queueName}" +
  "&f={USR_folderNumber}&t={xuc-token}&x={nothing}";

interface World {
  f: Fixture;
  users: Record<Name, UserRecord>;
  /** A socket of each: carol is a supervisor, bob agent 8001's user, pat a plain CTI user. */
  as: Record<Name, Client>;
  agent: AgentRecord;
  queueId: number;
  /** Agent 8001 logs in on bob's phone. */
  logIn(): Promise<void>;
  /** `caller` dials `callee`; both phones answer. */
  call(caller: Name, callee: Name, variables?: Record<string, string>): Promise<void>;
  act(user: Name, action: "answer" | "hangup" | "hold"): Promise<void>;
  /** `user`'s newest party. */
  callOf(user: Name): Promise<{ callId: string }>;
  /** A socket of `user` whose token holds `acls` only. */
  socket(user: Name, acls: string[]): Promise<Client>;
}

/** A supervisor of `queueIds` who may listen and pause recordings. */
const supervisorOf = (id: number, queueIds: number[]): RightsProfileRecord => ({
  id,
  profile: "supervisor",
  queue_ids: queueIds,
  group_ids: [],
  incalls: [],
  recording: true,
  listen: true,
  change_queues: false,
});

/**
 * alice 1001, bob 1002, carol 1003 (a supervisor of `support`, listening and recordings), pat 1004, phones answering by hand; agent 8001
 * of queue `support` 3001, bob's; a socket each, opened with a login's token.
 */
async function withWorld(test: (w: World) => Promise<void>): Promise<void> {
  const f = await fixture({ SVC_SHEET_URL: SHEET_URL });
  try {
    const { platform, sim, store } = f.ctx.services;
    const users = {} as Record<Name, UserRecord>;
    for (const name of ["alice", "bob", "carol", "pat"] as const) {
      const { id } = await userWithLine(f.api, name, EXTEN[name]);
      await sim!.setPolicy(EXTEN[name], { policy: "manual" });
      users[name] = (await getUser(store, id))!;
    }
    const agent = await f.api.create("/agents", { number: "8001" }) as AgentRecord;
    const queue = await f.api.create("/queues", { name: "support", number: "3001" });
    await f.api.put(`/queues/${queue.id}/members/agents/${agent.id}`, { penalty: 0 });
    await setProfile(store, supervisorOf(users.carol.id, [queue.id]));
    const as = {} as Record<Name, Client>;
    for (const name of ["alice", "bob", "carol", "pat"] as const) {
      as[name] = await f.open(await login(f.ctx, "login", name));
    }
    const w: World = {
      f,
      users,
      as,
      agent,
      queueId: queue.id,
      logIn: () => platform.agentLogin(agent, "1002", "default"),
      async call(caller, callee, variables = {}) {
        await platform.dialNumber(users[caller], EXTEN[callee], variables);
        await sim!.act(EXTEN[caller], "answer");
        await as[callee].next(phoneEvent("EventRinging"), `${callee} ringing`);
        await sim!.act(EXTEN[callee], "answer");
        for (const name of [caller, callee]) {
          await as[name].next(phoneEvent("EventEstablished"), `${name} established`);
        }
      },
      act: (user, action) => sim!.act(EXTEN[user], action),
      async callOf(user) {
        const call = (await platform.liveCalls()).findLast((one) => one.userId === users[user].id);
        assert.ok(call, `${user} has a call`);
        return call;
      },
      socket: (user, acls) => socketWithAcls(f, users[user], acls),
    };
    await test(w);
  } finally {
    await f.close();
  }
}

const phoneEvent = (eventType: string) => (message: Message) =>
  message.msgType === "PhoneEvent" && message.ctiMessage.eventType === eventType;

const ofType = (msgType: string) => (message: Message) => message.msgType === msgType;

/**
 * Sends `command` and waits until it ran (commands run in order): it answered no `Error`. The
 * messages it caused are left to take.
 */
async function done(client: Client, command: string, fields: Record<string, unknown> = {}) {
  const from = client.messages.length;
  client.web(command, fields);
  client.send({ claz: "ping" });
  const answer = await client.seen(
    (message) =>
      client.messages.indexOf(message) >= from &&
      (message.msgType === "Pong" || message.msgType === "Error"),
    `${command} done`,
  );
  assert.equal(answer.msgType, "Pong", `${command}: ${JSON.stringify(answer.ctiMessage)}`);
}

/** No message of `msgType` among those `client` got so far (after a ping's round trip). */
async function noneOf(client: Client, msgType: string) {
  await done(client, "getAgentStates");
  assert.deepEqual(client.messages.filter(ofType(msgType)), [], `no ${msgType}`);
}

Deno.test("listenAgent: the supervisor's phone rings; answered, AgentListen to the agent and the supervisor, until it hangs up", async () => {
  await withWorld(async (w) => {
    await w.logIn();
    await w.call("alice", "bob");
    await done(w.as.carol, "listenAgent", { agentid: w.agent.id });
    // carol's phone rings for the listening, with no phone event of a call
    assert.deepEqual(
      w.f.ctx.services.sim!.calls().at(-1)?.legs.map((leg) => [
        "extension" in leg ? leg.extension : leg.number,
        leg.state,
      ]),
      [["1003", "ringing"]],
    );
    await w.act("carol", "answer");
    const started = { started: true, phoneNumber: "1002", agentId: w.agent.id };
    assert.deepEqual((await w.as.bob.type("AgentListen")).ctiMessage, started);
    assert.deepEqual((await w.as.carol.type("AgentListen")).ctiMessage, started);
    assert.equal((await w.f.ctx.services.platform.liveCalls()).length, 2, "alice and bob only");
    await w.act("carol", "hangup");
    const stopped = { ...started, started: false };
    assert.deepEqual((await w.as.bob.type("AgentListen")).ctiMessage, stopped);
    assert.deepEqual((await w.as.carol.type("AgentListen")).ctiMessage, stopped);
    await noneOf(w.as.carol, "PhoneEvent");
    await noneOf(w.as.alice, "AgentListen");
  });
});

Deno.test("listenAgent: the agent's call ending stops the listening", async () => {
  await withWorld(async (w) => {
    await w.logIn();
    await w.call("alice", "bob");
    await done(w.as.carol, "listenAgent", { agentid: w.agent.id });
    await w.act("carol", "answer");
    assert.equal((await w.as.carol.type("AgentListen")).ctiMessage.started, true);
    await w.act("alice", "hangup");
    assert.equal((await w.as.carol.type("AgentListen")).ctiMessage.started, false);
    assert.deepEqual(w.f.ctx.services.sim!.calls(), [], "carol's listening call ended too");
  });
});

Deno.test("listenAgent: refused to a plain CTI user, for an unknown, absent or idle agent, with bad fields", async () => {
  await withWorld(async (w) => {
    assert.match(
      await refused(w.as.pat, "listenAgent", { agentid: w.agent.id }, "Forbidden"),
      /no supervisor rights profile/,
    );
    // the agent itself is no supervisor either
    await refused(w.as.bob, "listenAgent", { agentid: w.agent.id }, "Forbidden");
    await refused(w.as.carol, "listenAgent", {}, "BadRequest");
    await refused(w.as.carol, "listenAgent", { agentid: "8001" }, "BadRequest");
    await refused(w.as.carol, "listenAgent", { agentid: 1.5 }, "BadRequest");
    // an agent carol's profile does not cover: refused, whether it exists or not
    await refused(w.as.carol, "listenAgent", { agentid: 9999 }, "Forbidden");
    await refused(w.as.carol, "listenAgent", { agentid: w.agent.id }, "NotLogged");
    await w.logIn();
    await refused(w.as.carol, "listenAgent", { agentid: w.agent.id }, "NoCall");
    // an admin without a phone: every agent, yet no phone to listen with
    const sam = await ctiUser(w.f.ctx, "sam");
    await setProfile(w.f.ctx.services.store, adminProfile(sam.id));
    const samSocket = await w.f.open(await login(w.f.ctx, "login", "sam"));
    await refused(samSocket, "listenAgent", { agentid: 9999 }, "AgentNotFound");
    await w.call("alice", "bob");
    await refused(samSocket, "listenAgent", { agentid: w.agent.id }, "NoLine");
    // carol's profile without `listen`; then covering another queue only
    const store = w.f.ctx.services.store;
    await setProfile(store, { ...supervisorOf(w.users.carol.id, [w.queueId]), listen: false });
    assert.match(
      await refused(w.as.carol, "listenAgent", { agentid: w.agent.id }, "Forbidden"),
      /may not listen/,
    );
    const other = await w.f.api.create("/queues", { name: "sales", number: "3002" });
    await setProfile(store, supervisorOf(w.users.carol.id, [other.id]));
    await refused(w.as.carol, "listenAgent", { agentid: w.agent.id }, "Forbidden");
    // nothing rang, and every socket is still open
    assert.equal(w.f.ctx.services.sim!.calls().length, 1);
    for (const client of [w.as.pat, w.as.carol, samSocket]) await done(client, "getAgentStates");
  });
});

Deno.test("monitorPause, monitorUnpause: the agent's queue call's recording in its PhoneEvent and its AgentStateEvent", async () => {
  await withWorld(async (w) => {
    const { platform, sim } = w.f.ctx.services;
    await w.logIn();
    await platform.dialNumber(w.users.alice, "3001", {});
    await sim!.act("1001", "answer");
    await w.as.bob.next(phoneEvent("EventRinging"), "bob ringing");
    await sim!.act("1002", "answer");
    const onCall = (state: string) => (message: Message) =>
      message.msgType === "AgentStateEvent" && message.ctiMessage.name === "AgentOnCall" &&
      message.ctiMessage.monitorState === state;
    await w.as.bob.next(onCall("DISABLED"), "AgentOnCall, not recorded");
    await w.as.bob.next(phoneEvent("EventEstablished"), "bob established");
    await refused(w.as.bob, "monitorPause", {}, "RecordingNotStarted");
    await platform.callCommand((await w.callOf("bob")).callId, { kind: "record", action: "start" });
    const recorded = await w.as.bob.next(phoneEvent("EventEstablished"), "recorded");
    assert.equal(recorded.ctiMessage.recordState, "active");
    assert.equal(recorded.ctiMessage.otherDName, "alice");
    await w.as.bob.next(onCall("ACTIVE"), "AgentOnCall, recorded");

    // the agent pauses its own call's recording (card numbers)
    await done(w.as.bob, "monitorPause", {});
    assert.equal(
      (await w.as.bob.next(phoneEvent("EventEstablished"), "paused")).ctiMessage
        .recordState,
      "paused",
    );
    await w.as.bob.next(onCall("PAUSED"), "AgentOnCall, paused");
    assert.equal((await w.callOf("bob") as unknown as { record: string }).record, "paused");
    await done(w.as.bob, "monitorUnpause", { agentid: w.agent.id });
    await w.as.bob.next(onCall("ACTIVE"), "AgentOnCall, resumed");

    // another agent's: a supervisor may, a plain user may not
    await refused(w.as.pat, "monitorPause", { agentid: w.agent.id }, "Forbidden");
    await done(w.as.carol, "monitorPause", { agentid: w.agent.id });
    await w.as.bob.next(onCall("PAUSED"), "AgentOnCall, paused by the supervisor");
    await done(w.as.carol, "monitorUnpause", { agentid: w.agent.id });
    await w.as.bob.next(onCall("ACTIVE"), "AgentOnCall, resumed by the supervisor");
    // a profile without `recording`, or not covering the agent, may not
    const store = w.f.ctx.services.store;
    await setProfile(store, { ...supervisorOf(w.users.carol.id, [w.queueId]), recording: false });
    assert.match(
      await refused(w.as.carol, "monitorPause", { agentid: w.agent.id }, "Forbidden"),
      /does not allow recordings/,
    );
    await setProfile(store, supervisorOf(w.users.carol.id, []));
    await refused(w.as.carol, "monitorPause", { agentid: w.agent.id }, "Forbidden");
    assert.equal((await w.callOf("bob") as unknown as { record: string }).record, "active");
  });
});

Deno.test("monitorPause, monitorUnpause: refusals leave the socket open and nothing changed", async () => {
  await withWorld(async (w) => {
    // alice has no agent; 9999 is none; bad ids
    await refused(w.as.alice, "monitorPause", {}, "AgentNotFound");
    await refused(w.as.carol, "monitorPause", { agentid: 9999 }, "Forbidden"); // not covered
    await refused(w.as.carol, "monitorUnpause", { agentid: "x" }, "BadRequest");
    await refused(w.as.carol, "monitorPause", { agentid: -1 }, "BadRequest");
    // the agent out, then on no call
    await refused(w.as.carol, "monitorPause", { agentid: w.agent.id }, "NotLogged");
    await w.logIn();
    await refused(w.as.bob, "monitorUnpause", {}, "NoCall");
    // a token without the call daemon's ACL on the user's own call
    await w.call("alice", "bob");
    await w.f.ctx.services.platform.callCommand((await w.callOf("bob")).callId, {
      kind: "record",
      action: "start",
    });
    const narrow = await w.socket("bob", ["agentd.users.me.#"]);
    assert.match(
      await refused(narrow, "monitorPause", {}, "Forbidden"),
      /calld\.users\.me\.calls\.[^ ]+\.record\.pause\.update/,
    );
    assert.equal((await w.callOf("bob") as unknown as { record: string }).record, "active");
  });
});

Deno.test("setData: the data goes with the call, to every party and to whoever gets it next, with its screen pop", async () => {
  await withWorld(async (w) => {
    await w.call("alice", "bob", { crm: "42" });
    await done(w.as.alice, "setData", { variables: { folderNumber: "F-42", note: "VIP" } });
    w.as.bob.web("getCurrentCallsPhoneEvents");
    const current = (await w.as.bob.type("CurrentCallsPhoneEvents")).ctiMessage
      .events as Record<string, unknown>[];
    assert.deepEqual(current[0]?.userData, {
      PLATFORM_USERID: String(w.users.bob.id),
      USR_crm: "42",
      USR_folderNumber: "F-42",
      USR_note: "VIP",
    });
    // alice hands bob to carol: carol's phone rings with the data, and its screen pop has it
    await done(w.as.alice, "directTransfer", { destination: "1003" });
    const ringing = await w.as.carol.next(phoneEvent("EventRinging"), "carol ringing");
    assert.equal((ringing.ctiMessage.userData as Record<string, string>).USR_folderNumber, "F-42");
    const sheet = (await w.as.carol.type("Sheet")).ctiMessage;
    assert.deepEqual(sheet.variables, { USR_crm: "42", USR_folderNumber: "F-42", USR_note: "VIP" });
    const info = Object.fromEntries(
      (sheet.payload as { profile: { user: { sheetInfo: { name: string; value: string }[] } } })
        .profile.user.sheetInfo.map(({ name, value }) => [name, value]),
    );
    assert.equal(info.folderNumber, "F-42");
    assert.equal(info.USR_note, "VIP");
    assert.equal(
      sheet.popupUrl,
      "https://crm.example/pop?n=1002&who=bob&q=&f=F-42&t={xuc-token}&x=",
    );
  });
});

Deno.test("setData: refusals: no call, bad or missing variables, no right on the call", async () => {
  await withWorld(async (w) => {
    await refused(w.as.alice, "setData", { variables: { a: "1" } }, "NoCall");
    await w.call("alice", "bob");
    await refused(w.as.alice, "setData", {}, "BadRequest");
    await refused(w.as.alice, "setData", { variables: "a=1" }, "BadRequest");
    await refused(w.as.alice, "setData", { variables: { a: 1 } }, "BadRequest");
    await refused(w.as.alice, "setData", { variables: { "bad key": "1" } }, "BadRequest");
    await refused(w.as.alice, "setData", { variables: { a: "x".repeat(1025) } }, "BadRequest");
    await refused(w.as.alice, "setData", { variables: { a: "line\nbreak" } }, "BadRequest");
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"]));
    await refused(w.as.alice, "setData", { variables: many }, "BadRequest");
    // another user's call, by its uniqueId
    const bobs = (await w.callOf("bob")).callId;
    await refused(w.as.alice, "setData", { variables: { a: "1" }, uniqueId: bobs }, "Forbidden");
    const narrow = await w.socket("alice", ["svc.rest.dnd.alice.create"]);
    await refused(narrow, "setData", { variables: { a: "1" } }, "Forbidden");
    // nothing was attached
    w.as.bob.web("getCurrentCallsPhoneEvents");
    const current = (await w.as.bob.type("CurrentCallsPhoneEvents")).ctiMessage
      .events as Record<string, unknown>[];
    assert.deepEqual(current[0]?.userData, { PLATFORM_USERID: String(w.users.bob.id) });
    // an empty set attaches nothing, and is no error
    await done(w.as.alice, "setData", { variables: {} });
  });
});

Deno.test("Sheet: the ringing user's screen pop: caller, contact, queue, variables, the URL", async () => {
  await withWorld(async (w) => {
    const { platform, sim } = w.f.ctx.services;
    await platform.dialNumber(w.users.alice, "1003", { crm: "42" });
    await sim!.act("1001", "answer");
    const sheet = (await w.as.carol.type("Sheet")).ctiMessage;
    const ringing = await w.as.carol.seen(phoneEvent("EventRinging"), "carol ringing");
    assert.equal(ringing.ctiMessage.otherDName, "alice");
    assert.deepEqual(
      {
        callerNumber: sheet.callerNumber,
        callerName: sheet.callerName,
        calledNumber: sheet.calledNumber,
        linkedId: sheet.linkedId,
        uniqueId: sheet.uniqueId,
        channel: sheet.channel,
        queue: sheet.queue,
        variables: sheet.variables,
        popupUrl: sheet.popupUrl,
      },
      {
        callerNumber: "1001",
        callerName: "alice",
        calledNumber: "1003",
        linkedId: ringing.ctiMessage.linkedId,
        uniqueId: ringing.ctiMessage.uniqueId,
        channel: ringing.ctiMessage.uniqueId,
        queue: null,
        variables: { USR_crm: "42" },
        popupUrl: "https://crm.example/pop?n=1001&who=alice&q=&f=&t={xuc-token}&x=",
      },
    );
    assert.deepEqual(sheet.contact, {
      source: "users",
      id: String(w.users.alice.id),
      name: "alice",
      firstname: "alice",
      lastname: "",
      company: "",
      email: "",
      number: "1001",
      mobile: "",
    });
    // xuc's shape: no folderNumber without the variable (its agent opens nothing)
    const info = (sheet.payload as { profile: { user: { sheetInfo: { name: string }[] } } })
      .profile.user.sheetInfo.map((field) => field.name);
    assert.ok(info.includes("popupUrl") && info.includes("USR_crm"), String(info));
    assert.ok(!info.includes("folderNumber"));
    // the caller gets none
    await noneOf(w.as.alice, "Sheet");

    // a queue call: the agent's pop names the queue
    await sim!.act("1003", "answer");
    await w.act("alice", "hangup");
    await w.logIn();
    await platform.dialNumber(w.users.alice, "3001", {});
    await sim!.act("1001", "answer");
    const queued = (await w.as.bob.type("Sheet")).ctiMessage;
    assert.deepEqual(queued.queue, {
      id: w.queueId,
      name: "support",
      displayName: "support",
      number: "3001",
    });
    assert.equal(
      queued.popupUrl,
      "https://crm.example/pop?n=1001&who=alice&q=support&f=&t={xuc-token}&x=",
    );
  });
});

Deno.test("originate: the user's phone rings, then the destination; refusals", async () => {
  await withWorld(async (w) => {
    await done(w.as.alice, "originate", { destination: "10 02" });
    await w.act("alice", "answer");
    const dialing = await w.as.alice.next(phoneEvent("EventDialing"), "alice dialing");
    assert.deepEqual([dialing.ctiMessage.otherDN, dialing.ctiMessage.otherDName], ["1002", "bob"]);
    await w.as.bob.next(phoneEvent("EventRinging"), "bob ringing");

    await refused(w.as.alice, "originate", {}, "BadRequest");
    await refused(w.as.alice, "originate", { destination: 1002 }, "BadRequest");
    await refused(w.as.alice, "originate", { destination: "abc" }, "BadRequest");
    await refused(w.as.alice, "originate", { destination: "1".repeat(300) }, "BadRequest");
    const narrow = await w.socket("alice", ["svc.rest.dnd.alice.create"]);
    assert.match(
      await refused(narrow, "originate", { destination: "1002" }, "Forbidden"),
      /svc\.rest\.dial\.number\.alice\.create/,
    );
    // a user without a line
    const sam = await ctiUser(w.f.ctx, "sam");
    const samSocket = await w.f.open(await login(w.f.ctx, "login", sam.username!));
    assert.match(
      await refused(samSocket, "originate", { destination: "1002" }, "BadRequest"),
      /no line/,
    );
  });
});

Deno.test("VoiceMailStatusUpdate: at sign-in for a user with a voicemail, then on each new message, to every user of the box", async () => {
  await withWorld(async (w) => {
    const box = await w.f.api.create("/voicemails", {
      name: "bob",
      number: "1002",
      context: "default",
    });
    assert.equal((await w.f.api.put(`/users/${w.users.bob.id}/voicemails/${box.id}`)).status, 204);
    assert.equal((await w.f.api.put(`/users/${w.users.bob.id}`, { ring_seconds: 5 })).status, 204);
    const bob = await w.f.open(await login(w.f.ctx, "login", "bob"));
    const empty = { voiceMailId: box.id, newMessages: 0, waitingMessages: 0, oldMessages: 0 };
    assert.deepEqual((await bob.type("VoiceMailStatusUpdate")).ctiMessage, empty);
    // alice has no voicemail: none at her sign-in
    await noneOf(w.as.alice, "VoiceMailStatusUpdate");
    // bob does not answer: the voicemail takes alice's message
    const { platform, sim } = w.f.ctx.services;
    await platform.dialNumber(w.users.alice, "1002", {});
    await sim!.act("1001", "answer");
    await bob.next(phoneEvent("EventRinging"), "bob ringing");
    await w.f.ctx.clock.advance(5_000);
    await w.as.alice.next(phoneEvent("EventEstablished"), "the voicemail answers alice");
    await w.f.ctx.clock.advance(3_000);
    await w.act("alice", "hangup");
    const one = { ...empty, newMessages: 1, waitingMessages: 1 };
    assert.deepEqual((await bob.type("VoiceMailStatusUpdate")).ctiMessage, one);
    assert.deepEqual((await w.as.bob.type("VoiceMailStatusUpdate")).ctiMessage, one);
    assert.deepEqual(await platform.voicemailCounts(box.id), { newMessages: 1, oldMessages: 0 });
    await noneOf(w.as.alice, "VoiceMailStatusUpdate");
  });
});

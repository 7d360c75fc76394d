/**
 * End-to-end against a REAL Asterisk 22 and real SIP phones (baresip, Debian's `baresip-core`),
 * when both are installed: `SVC_TEST_ASTERISK` names Asterisk's prefix (`<prefix>/sbin/asterisk`),
 * else an `asterisk` on PATH, else `/opt/asterisk`; baresip is the one on PATH. Without either the
 * test is skipped with a one-line notice; no Asterisk can be installed from the registries the
 * project reaches, so CI skips it.
 *
 * The PBX is the project's own throw-away Asterisk (`tests/peers/asterisk_pbx.ts`: its users,
 * dialplan and queue are svc's, through `#tryinclude` of the files svc generates); three phones come
 * from `tests/peers/baresip_phone.ts` (alice, bob, carol, answering by themselves unless told). The
 * real svc server drives it through the unchanged routes, and every scenario is checked at svc's
 * `eventUrl` receiver: dial user and number, DND, the three forwards, an agent and its queue (to
 * and from queue), the history, the contacts list view's live status, call control of calls in
 * progress (the call daemon's `/1.0/users/me/…` calls, transfers and ad-hoc conferences, and the
 * CTI channel's commands on a real WebSocket), and a PBX restart (back within 5 s, the agent still
 * logged in, a new dial working).
 */
import assert from "node:assert/strict";
import { preparePbx } from "../peers/asterisk_pbx.ts";
import { livePeers } from "../peers/live_peers.ts";
import { type Phone, type PhoneControl, startPhone } from "../peers/baresip_phone.ts";
import type { CallView } from "../../lib/calls/view.ts";
import { type RunningServer, startServer } from "./server.ts";
import {
  call,
  eventReceiver,
  expectStatus,
  login,
  type Person,
  phoneUser,
  type Receiver,
  sleep,
  until,
  V2,
} from "./svc_http.ts";

const ADMIN = { login: "admin", password: "asterisk-live-admin" };

const { prefix: PREFIX, baresip: BARESIP, missing } = livePeers("asterisk_live_test");

// ---- small helpers ----------------------------------------------------------------------------

/**
 * Waits until each user of `expected` got as many phone events since `since` as listed, then
 * asserts them (event types, in order, per user), that the users of `none` got none, and that all
 * share one linkedId; answers it.
 */
async function expectPhoneEvents(
  receiver: Receiver,
  since: number,
  expected: Record<string, string[]>,
  none: string[] = [],
): Promise<string> {
  const users = Object.keys(expected);
  await until(
    () => users.every((user) => receiver.phone(since, user).length >= expected[user]!.length),
    20_000,
    `phone events ${JSON.stringify(expected)}; got ${JSON.stringify(receiver.phone(since))}`,
  );
  for (const user of users) {
    const types = receiver.phone(since, user).map((event) => event.eventType);
    assert.deepEqual(types, expected[user], `${user}'s phone events`);
  }
  for (const user of none) {
    assert.deepEqual(receiver.phone(since, user), [], `no phone event for ${user}`);
  }
  const linkedIds = new Set(receiver.phone(since).map((event) => event.linkedId));
  assert.equal(linkedIds.size, 1, `one call: ${[...linkedIds]}`);
  return [...linkedIds][0]!;
}

/** Waits until agent `number` went through `names` since `since` (and nothing else). */
async function expectAgentStates(
  receiver: Receiver,
  since: number,
  number: string,
  names: string[],
): Promise<void> {
  await until(
    () => receiver.agent(since, number).length >= names.length,
    20_000,
    `agent ${number}: ${names.join(", ")}; got ${receiver.agent(since, number).join(", ")}`,
  );
  assert.deepEqual(receiver.agent(since, number), names, `agent ${number}'s states`);
}

/** The value of `read` once `test` holds of it (within 20 s); else fails showing the last one. */
async function readUntil<T>(
  read: () => T | Promise<T>,
  test: (value: T) => boolean,
  what: string,
): Promise<T> {
  let value: T | undefined;
  try {
    await until(async () => test(value = await read()), 20_000, what);
  } catch (error) {
    throw new Error(`${(error as Error).message}; last: ${JSON.stringify(value)}`);
  }
  return value as T;
}

/** A transfer as the call daemon shows it (the fields the steps read). */
interface TransferView {
  id: string;
  transferred_call: string;
  recipient_call: string | null;
  status: string;
}

/** A message of the CTI channel. */
interface CtiMessage {
  msgType: string;
  ctiMessage: Record<string, unknown>;
}

/**
 * A CTI socket on the real server, as a client not in a browser opens it: every message kept,
 * each waited for up to 20 s. Resolves once the server said `LoggedOn`.
 */
async function openCti(url: string) {
  const messages: CtiMessage[] = [];
  const socket = new WebSocket(url);
  socket.onmessage = (event) => messages.push(JSON.parse(event.data));
  const closed = new Promise((resolve) => socket.addEventListener("close", resolve));
  const cti = {
    messages,
    /** Where the messages received from now on start. */
    mark: () => messages.length,
    /** Sends the command `command` with `fields`. */
    web: (command: string, fields: Record<string, unknown> = {}) =>
      socket.send(JSON.stringify({ claz: "web", command, ...fields })),
    /** The first message of `msgType` since `since` (matching `test`), waiting for it. */
    next: async (since: number, msgType: string, test = (_: CtiMessage) => true) => {
      const wanted = (m: CtiMessage) => m.msgType === msgType && test(m);
      const got = await readUntil(
        () => messages.slice(since),
        (received) => received.some(wanted),
        `the socket's ${msgType}`,
      );
      return got.find(wanted)!;
    },
    /** The event types of the `PhoneEvent`s since `since`. */
    phoneEvents: (since = 0) =>
      messages.slice(since).filter((m) => m.msgType === "PhoneEvent")
        .map((m) => m.ctiMessage.eventType),
    async close() {
      socket.close();
      await closed;
    },
  };
  await cti.next(0, "LoggedOn");
  return cti;
}

// ---- the test ---------------------------------------------------------------------------------

/** The agent states of one queue call answered and ended. */
const QUEUE_CALL = ["AgentRinging", "AgentOnCall", "AgentOnWrapup", "AgentReady"];
/** alice's phone events of a call to bob that she holds and takes back once. */
const ALICE_HOLDS = [
  "EventDialing",
  "EventEstablished",
  "EventOnHold",
  "EventEstablished",
  "EventReleased",
];
/** alice's phone events of a call to bob in which she consults carol (an attended transfer). */
const ALICE_CONSULTS = [
  "EventDialing",
  "EventEstablished",
  "EventDialing",
  "EventEstablished",
  "EventReleased",
];

const ALICE: Person = {
  username: "alice",
  password: "alice-pw",
  exten: "1001",
  secret: "alice-pw-sip",
};
// bob rings 8 s when nobody answers (the no-answer forward), not 30
const BOB: Person = {
  username: "bob",
  password: "bob-pw",
  exten: "1002",
  secret: "bob-pw-sip",
  fields: { ring_seconds: 8 },
};
const CAROL: Person = {
  username: "carol",
  password: "carol-pw",
  exten: "1003",
  secret: "carol-pw-sip",
};

Deno.test({
  name: "on a real Asterisk with three SIP phones: the whole scenario through the unchanged routes",
  ignore: missing,
  // child processes' pipes and the phones' sockets close asynchronously; everything is reaped
  // in `finally`, so the sanitizers would only report those closings
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    /** A step that must pass for the next ones to make sense. */
    const step = async (name: string, fn: () => Promise<void>) => {
      if (!await t.step(name, fn)) throw new Error(`step failed: ${name}`);
    };
    // written, not started yet (a wrong SVC_TEST_ASTERISK fails here)
    const asterisk = await preparePbx({ prefix: PREFIX! });
    const { configDir, workDir } = asterisk;
    const receiver = eventReceiver();
    const phones: Record<string, Phone> = {};
    let server: RunningServer | undefined;
    /** What the peers said last: it helps more than the assertion alone. */
    const tellPeers = () => {
      const tail = (lines: string[]) => lines.slice(-40).join("\n");
      console.error(`--- asterisk\n${tail(asterisk.output)}`);
      for (const phone of Object.values(phones)) {
        console.error(`--- ${phone.process.name}\n${tail(phone.process.output)}`);
      }
      const svcLines = server?.stderrLines.filter((line) => !line.includes('"msg":"request"'));
      if (svcLines) console.error(`--- svc (request lines left out)\n${tail(svcLines)}`);
    };
    try {
      // svc first: it writes its three files at start-up, Asterisk unreachable or not, so that
      // Asterisk boots with every #tryinclude present (as the operator's would)
      server = await startServer({
        SVC_KV: `${workDir}/svc.kv`,
        SVC_ADMIN_LOGIN: ADMIN.login,
        SVC_ADMIN_PASSWORD: ADMIN.password,
        SVC_EVENT_URL: receiver.url,
        SVC_PLATFORM: "asterisk",
        SVC_AMI_PORT: String(asterisk.amiPort),
        SVC_AMI_USERNAME: asterisk.ami.username,
        SVC_AMI_SECRET: asterisk.ami.secret,
        SVC_ASTERISK_CONFIG_DIR: configDir,
      });
      const svc = server;
      const unreachable = await call(svc, "GET", "/ready");
      assert.deepEqual([unreachable.status, unreachable.body], [503, {
        status: "unavailable",
        platform: "unreachable",
      }]);
      await until(
        async () => {
          const texts = await Promise.all(
            ["pjsip_svc.conf", "extensions_svc.conf", "queues_svc.conf"].map((file) =>
              Deno.readTextFile(`${configDir}/${file}`).catch(() => "")
            ),
          );
          return texts.every((text) => text.startsWith("; "));
        },
        5_000,
        "svc's three files written before Asterisk starts",
      );

      await asterisk.start();
      const ready = async () => (await call(svc, "GET", "/ready")).status === 200;
      await until(ready, 10_000, "svc connected to Asterisk (/ready 200)");

      const admin = await login(svc, "webservice", ADMIN.login, ADMIN.password);
      const ids: Record<string, number> = {};
      const api = (method: string, path: string, body?: unknown, status = 200) =>
        expectStatus(status, svc, method, path, { token: admin, body });

      await step("users, agent and queue through /1.1 reach Asterisk", async () => {
        for (const person of [ALICE, BOB, CAROL]) {
          ids[person.username] = await phoneUser(svc, admin, person);
        }
        const agent = (await api("POST", "/1.1/agents", { number: "8001" }, 201)).body.id;
        const queue = (await api("POST", "/1.1/queues", { name: "support", number: "3001" }, 201))
          .body.id;
        ids.queue = queue;
        await api("PUT", `/1.1/queues/${queue}/members/agents/${agent}`, { penalty: 0 }, 204);

        const read = (file: string) => Deno.readTextFile(`${configDir}/${file}`).catch(() => "");
        await until(
          async () => {
            const [pjsip, extensions, queues] = await Promise.all(
              ["pjsip_svc.conf", "extensions_svc.conf", "queues_svc.conf"].map(read),
            );
            return ["alice", "bob", "carol"].every((name) =>
              new RegExp(`^\\[${name}\\]\\ntype = endpoint$`, "m").test(pjsip!)
            ) && /^exten => 3001,1,/m.test(extensions!) &&
              /^exten => 1003,hint,/m.test(extensions!) &&
              /^\[support\]$/m.test(queues!);
          },
          3_000,
          "svc's files hold the users and the queue",
        );
        // svc reloads the modules once the files are written (at most once a second each)
        await until(
          async () => {
            const outputs = await Promise.all([
              ...["alice", "bob", "carol"].map((name) =>
                asterisk.cli(`pjsip show endpoint ${name}`)
              ),
              asterisk.cli("dialplan show 3001@default"),
              asterisk.cli("queue show support"),
            ]);
            return ["alice", "bob", "carol"].every((name, i) =>
              new RegExp(`Endpoint:\\s+${name}\\b`).test(outputs[i]!)
            ) && /Queue\(support/.test(outputs[3]!) && /^support has/m.test(outputs[4]!);
          },
          2_000,
          "Asterisk reloaded svc's files",
        );
      });

      await step("three phones register", async () => {
        for (const person of [ALICE, BOB, CAROL]) {
          const { username: user, secret: password } = person;
          phones[user] = await startPhone({ pbx: asterisk, user, password, baresip: BARESIP! });
        }
        await until(
          () => asterisk.registered(["alice", "bob", "carol"]),
          30_000,
          "alice, bob and carol registered and reachable",
        );
      });

      const alice = phones.alice!.ctrl;
      const bob = phones.bob!.ctrl;
      const carol = phones.carol!.ctrl;
      // a dial needs its user connected: alice logs in, as her softphone would
      const aliceToken = await login(svc, "login", ALICE.username, ALICE.password);
      /** Waits until Asterisk has no channel left: the last call is over. */
      const pbxIdle = () =>
        until(
          async () => /^0 active channels/m.test(await asterisk.cli("core show channels count")),
          20_000,
          "no channel left on Asterisk",
        );
      const bobStatus = async () => {
        const view = await expectStatus(200, svc, "GET", `${V2}/contact/personal`, {
          token: aliceToken,
        });
        const entry = view.body.entries.find((e: { entry: string[] }) => e.entry[2] === "1002");
        return entry.status as number;
      };

      await step(
        "dial user: both answer, bob hangs up; the list view shows bob busy",
        async () => {
          await expectStatus(201, svc, "POST", `${V2}/contact/personal`, {
            token: aliceToken,
            body: { firstname: "Bob", lastname: "Phone", number: "1002" },
          });
          await until(async () => await bobStatus() === 0, 10_000, "bob available");
          const since = receiver.mark();
          const bobSince = bob.mark();
          await api("POST", `${V2}/dial/user/alice`, { username: "bob", variables: { crm: "7" } });
          await receiver.waitFor(
            since,
            (e) => e.username === "bob" && e.eventType === "EventEstablished",
            "bob talks",
          );
          await until(async () => await bobStatus() === 2, 5_000, "bob busy in the list view");
          await bob.waitEvent("CALL_ESTABLISHED", bobSince);
          await bob.hangup();
          await pbxIdle();
          const linkedId = await expectPhoneEvents(receiver, since, {
            alice: ["EventDialing", "EventEstablished", "EventReleased"],
            bob: ["EventRinging", "EventEstablished", "EventReleased"],
          });
          assert.match(linkedId, /^[0-9a-f-]{36}$/, "the ChannelId svc gave");
          const dialing = receiver.phone(since, "alice")[0]!;
          assert.deepEqual([dialing.DN, dialing.otherDN, dialing.uniqueId], [
            "1001",
            "1002",
            linkedId,
          ]);
          for (const event of receiver.phone(since)) {
            assert.deepEqual(event.userData, {
              PLATFORM_USERID: String(ids[event.username]),
              USR_crm: "7",
            });
          }
          await until(async () => await bobStatus() === 0, 5_000, "bob available again");
        },
      );

      await step("dial number 1002: alice hangs up", async () => {
        const since = receiver.mark();
        const aliceSince = alice.mark();
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await receiver.waitFor(
          since,
          (e) => e.username === "bob" && e.eventType === "EventEstablished",
          "bob talks",
        );
        await alice.waitEvent("CALL_ESTABLISHED", aliceSince);
        await alice.hangup();
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventEstablished", "EventReleased"],
        });
      });

      await step("DND on bob: alice's call fails, bob's phone never rings", async () => {
        await api("POST", `${V2}/dnd/bob`, { state: true });
        await until(async () => await bobStatus() === -1, 5_000, "DND shows as -1");
        const since = receiver.mark();
        const bobSince = bob.mark();
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await pbxIdle();
        await expectPhoneEvents(receiver, since, { alice: ["EventDialing", "EventFailure"] }, [
          "bob",
        ]);
        assert.ok(!bob.saw("CALL_INCOMING", bobSince), "bob's phone never rang");
        await api("POST", `${V2}/dnd/bob`, { state: false });
      });

      await step("unconditional forward bob → carol", async () => {
        const forward = `${V2}/forward/unconditional/bob`;
        await api("POST", forward, { destination: "1003", enabled: true });
        const since = receiver.mark();
        const [bobSince, carolSince] = [bob.mark(), carol.mark()];
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await carol.waitEvent("CALL_ESTABLISHED", carolSince);
        await carol.hangup();
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
        }, ["bob"]);
        assert.ok(!bob.saw("CALL_INCOMING", bobSince), "bob's phone never rang");
        await api("POST", forward, { destination: "1003", enabled: false });
      });

      await step("busy forward: bob rejects, carol takes the call", async () => {
        const forward = `${V2}/forward/busy/bob`;
        await api("POST", forward, { destination: "1003", enabled: true });
        await bob.answerMode("manual");
        const since = receiver.mark();
        const [aliceSince, bobSince] = [alice.mark(), bob.mark()];
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await bob.waitEvent("CALL_INCOMING", bobSince);
        await bob.hangup(); // while it rings: 486, DIALSTATUS BUSY
        await receiver.waitFor(
          since,
          (e) => e.username === "carol" && e.eventType === "EventEstablished",
          "carol talks",
        );
        await alice.waitEvent("CALL_ESTABLISHED", aliceSince);
        await alice.hangup();
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventReleased"],
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
        });
        await api("POST", forward, { destination: "1003", enabled: false });
      });

      await step("no-answer forward: bob rings 8 s, carol takes the call", async () => {
        const forward = `${V2}/forward/noanswer/bob`;
        await api("POST", forward, { destination: "1003", enabled: true });
        const since = receiver.mark();
        const [bobSince, carolSince] = [bob.mark(), carol.mark()];
        await api("POST", `${V2}/dial/number/alice`, { destination: "1002" });
        await bob.waitEvent("CALL_INCOMING", bobSince);
        await carol.waitEvent("CALL_ESTABLISHED", carolSince, 30_000);
        await carol.hangup();
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventReleased"],
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
        });
        await api("POST", forward, { destination: "1003", enabled: false });
        await bob.answerMode("auto");
      });

      const agentStatus = async () => (await api("GET", "/agents/by-number/8001")).body;

      await step("agent 8001 logs in on bob's phone, pauses, unpauses", async () => {
        const since = receiver.mark();
        await api("POST", "/agents/by-number/8001/login", {
          extension: "1002",
          context: "default",
        }, 204);
        await expectAgentStates(receiver, since, "8001", ["AgentReady"]);
        await until(
          async () => /\b8001 \(/.test(await asterisk.cli("queue show support")),
          5_000,
          "8001 a member of support on Asterisk",
        );
        await api("POST", "/agents/by-number/8001/pause", { reason: "lunch" }, 204);
        await api("POST", "/agents/by-number/8001/unpause", undefined, 204);
        await expectAgentStates(receiver, since, "8001", [
          "AgentReady",
          "AgentOnPause",
          "AgentReady",
        ]);
        const status = await agentStatus();
        assert.deepEqual(
          [status.logged, status.paused, status.extension, status.state],
          [true, false, "1002", "AgentReady"],
        );
      });

      await step("a queue call: alice dials 3001, the agent answers on bob's phone", async () => {
        const since = receiver.mark();
        const bobSince = bob.mark();
        await api("POST", `${V2}/dial/number/alice`, { destination: "3001" });
        await bob.waitEvent("CALL_ESTABLISHED", bobSince, 30_000);
        await bob.hangup();
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          alice: ["EventDialing", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventEstablished", "EventReleased"],
        });
        assert.equal(receiver.phone(since, "alice")[0]!.otherDN, "3001");
        await expectAgentStates(receiver, since, "8001", QUEUE_CALL);
      });

      await step("dial to queue: carol is called first, then the agent", async () => {
        const since = receiver.mark();
        const bobSince = bob.mark();
        await api("POST", `${V2}/dial/toqueue`, {
          destination: "1003",
          queueName: "support",
          callerIdNumber: "3001",
        });
        await bob.waitEvent("CALL_ESTABLISHED", bobSince, 30_000);
        await carol.hangup();
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
          bob: ["EventRinging", "EventEstablished", "EventReleased"],
        }, ["alice"]);
        await expectAgentStates(receiver, since, "8001", QUEUE_CALL);
      });

      await step("dial from queue: the agent answers first, then carol is called", async () => {
        const since = receiver.mark();
        const carolSince = carol.mark();
        await api("POST", `${V2}/dial/fromqueue/alice`, {
          destination: "1003",
          queueId: ids.queue,
        });
        await carol.waitEvent("CALL_ESTABLISHED", carolSince, 30_000);
        await carol.hangup();
        await pbxIdle();
        await expectPhoneEvents(receiver, since, {
          bob: ["EventRinging", "EventDialing", "EventEstablished", "EventReleased"],
          carol: ["EventRinging", "EventEstablished", "EventReleased"],
        }, ["alice"]);
        assert.equal(receiver.phone(since, "carol")[0]!.otherDN, "3001", "carol sees the queue");
        await expectAgentStates(receiver, since, "8001", QUEUE_CALL);
      });

      /** The user's history, newest first. */
      const history = async (user: string) =>
        (await api("GET", `${V2}/history/${user}?size=20`)).body.data.entries as {
          srcUsername: string;
          dstUsername: string;
          srcNum: string;
          dstNum: string;
          status: string;
        }[];

      await step("the history tells alice's and bob's calls", async () => {
        await until(async () => (await history("alice")).length === 7, 10_000, "7 calls of alice");
        assert.deepEqual(
          (await history("alice")).map((e) => [e.dstUsername, e.dstNum, e.status]),
          [
            ["bob", "3001", "emitted"], // the queue call
            ["carol", "1002", "emitted"], // no-answer forward
            ["carol", "1002", "emitted"], // busy forward
            ["carol", "1002", "emitted"], // unconditional forward
            ["bob", "1002", "emitted"], // DND: not answered
            ["bob", "1002", "emitted"], // dial number
            ["bob", "1002", "emitted"], // dial user
          ],
        );
        const missed = (await history("bob")).filter((e) => e.status === "missed");
        assert.equal(missed.length, 2, "bob missed the busy and the no-answer forward calls");
      });

      // ---- call control of calls in progress: the call daemon's /1.0 and the CTI channel -------

      const bobToken = await login(svc, "login", BOB.username, BOB.password);
      // a supervision screen's web service user, reading every call
      await api("POST", "/1.1/webservice_users", {
        login: "calld",
        password: "calld-secret-pw",
        acls: ["calld.#"],
      }, 201);
      const calldToken = await login(svc, "webservice", "calld", "calld-secret-pw");
      const uuids: Record<string, string> = {};
      for (const user of ["alice", "bob", "carol"]) {
        uuids[user] = (await api("GET", `/1.1/users/${ids[user]}`)).body.uuid;
      }
      /** A request to the call daemon, the token in `X-Auth-Token` as wazo-calld-client sends it. */
      const calld = (token: string, method: string, path: string, status = 200, body?: unknown) =>
        expectStatus(status, svc, method, `/1.0${path}`, {
          token,
          body,
          tokenHeader: "x-auth-token",
        });
      /** The items of the list `path` once `test` holds of them (within 20 s). */
      const itemsWhen = <T>(
        token: string,
        path: string,
        test: (items: T[]) => boolean,
        what: string,
      ) => readUntil(async () => (await calld(token, "GET", path)).body.items as T[], test, what);
      /** A call up, hearing one other party, not on hold. */
      const talking = (call: CallView) =>
        call.status === "Up" && !call.on_hold && Object.keys(call.talking_to).length === 1;
      /** alice's only call, once `test` holds of it. */
      const aliceCall = async (test: (call: CallView) => boolean, what: string) =>
        (await itemsWhen<CallView>(
          aliceToken,
          "/users/me/calls",
          (calls) => calls.length === 1 && test(calls[0]!),
          what,
        ))[0]!;
      /** The phone picks up the call ringing it since `since`. */
      const pickUp = async (phone: PhoneControl, since: number) => {
        await phone.waitEvent("CALL_INCOMING", since);
        await phone.accept();
      };
      /** alice picks up her phone rung for her dial, then bob his: answers alice's call. */
      const bothPickUp = async (aliceSince: number, bobSince: number) => {
        await pickUp(alice, aliceSince);
        await pickUp(bob, bobSince);
        return await aliceCall(talking, "alice talks with bob");
      };
      /** alice calls bob through `POST /1.0/users/me/calls`; both pick up. */
      const aliceCallsBob = async () => {
        const [aliceSince, bobSince] = [alice.mark(), bob.mark()];
        const created = await calld(aliceToken, "POST", "/users/me/calls", 201, {
          extension: "1002",
        });
        return { created: created.body as CallView, call: await bothPickUp(aliceSince, bobSince) };
      };
      /** The first phone event of `user` of type `eventType` since `since`, waiting for it. */
      const phoneEvent = (since: number, user: string, eventType: string) =>
        receiver.waitFor(
          since,
          (e) => e.username === user && e.eventType === eventType,
          `${user}'s ${eventType}`,
        );
      /** Each user's phone events since `since` as [eventType, otherDN]. */
      const expectOtherDNs = (since: number, expected: Record<string, string[][]>) => {
        for (const [user, events] of Object.entries(expected)) {
          const got = receiver.phone(since, user).map((event) => [event.eventType, event.otherDN]);
          assert.deepEqual(got, events, `${user}'s phone events and their otherDN`);
        }
      };
      /** alice's call attended-transferred to carol (1003), who picks up: answers the transfer. */
      const consultCarol = async (initiator: string) => {
        const carolSince = carol.mark();
        const started = await calld(aliceToken, "POST", "/users/me/transfers", 201, {
          initiator_call: initiator,
          exten: "1003",
          flow: "attended",
        });
        await pickUp(carol, carolSince);
        const [answered] = await itemsWhen<TransferView>(
          aliceToken,
          "/users/me/transfers",
          (items) => items.length === 1 && items[0]!.status === "answered",
          "carol answered the consultation",
        );
        return { started: started.body as TransferView, answered: answered! };
      };

      /**
       * A step of call control, run whatever became of the previous one: the phones pick up only
       * when told (`accept`); on a failure the peers' output is shown and every call hung up.
       */
      const controlStep = (name: string, fn: () => Promise<void>) =>
        t.step(name, async () => {
          for (const phone of [alice, bob, carol]) await phone.answerMode("manual");
          try {
            await fn();
          } catch (error) {
            tellPeers();
            await asterisk.cli("channel request hangup all");
            await pbxIdle().catch(() => {});
            throw error;
          } finally {
            for (const phone of [alice, bob, carol]) await phone.answerMode("auto");
          }
        });

      await controlStep(
        "/1.0/users/me/calls: alice calls bob, holds, takes back, records, sends DTMF, hangs up",
        async () => {
          const since = receiver.mark();
          const { created, call } = await aliceCallsBob();
          const id = created.call_id;
          assert.equal(id, created.conversation_id, "alice's leg is the call's first");
          assert.deepEqual(
            [created.user_uuid, created.is_caller, created.dialed_extension],
            [uuids.alice, true, "1002"],
          );
          assert.equal(call.call_id, id);
          const bobCall = Object.keys(call.talking_to)[0]!;
          assert.deepEqual(call.talking_to, { [bobCall]: uuids.bob });
          assert.deepEqual([call.on_hold, call.record_state], [false, "inactive"]);
          assert.equal(typeof call.answer_time, "string", "alice's own phone answered");
          const path = `/users/me/calls/${id}`;
          const put = (action: string) => calld(aliceToken, "PUT", `${path}/${action}`, 204);

          // bob may not act on alice's call
          for (const [method, action] of [["PUT", "/hold/start"], ["DELETE", ""]]) {
            const refused = await calld(bobToken, method!, `${path}${action}`, 403);
            assert.equal(refused.body.error_id, "user-permission-denied");
          }

          let mark = receiver.mark();
          await put("hold/start");
          await phoneEvent(mark, "alice", "EventOnHold");
          await aliceCall((c) => c.on_hold, "on_hold true");
          mark = receiver.mark();
          await put("hold/stop");
          await phoneEvent(mark, "alice", "EventEstablished");
          await aliceCall(talking, "alice talks with bob again");
          await put("record/start");
          await aliceCall((c) => c.record_state === "active", "record_state active");
          await put("record/stop");
          await aliceCall((c) => c.record_state === "inactive", "record_state inactive");
          const dtmf = bob.mark();
          await put("dtmf?digits=12");
          await bob.waitEvent("CALL_DTMF_START", dtmf);

          await calld(aliceToken, "DELETE", path, 204);
          await pbxIdle();
          const linkedId = await expectPhoneEvents(receiver, since, {
            // the recording started, then stopped: alice's EventEstablished with each recordState
            alice: [
              ...ALICE_HOLDS.slice(0, -1),
              "EventEstablished",
              "EventEstablished",
              "EventReleased",
            ],
            bob: ["EventRinging", "EventEstablished", "EventReleased"],
          }, ["carol"]);
          assert.deepEqual(
            receiver.phone(since, "alice").slice(4, 6).map((event) => event.recordState),
            ["active", "inactive"],
          );
          assert.equal(linkedId, created.conversation_id);
          assert.deepEqual((await calld(aliceToken, "GET", "/users/me/calls")).body.items, []);
        },
      );

      await controlStep(
        "/1.0/users/me/transfers: alice transfers bob to carol, attended; carol hangs up",
        async () => {
          const carolCalls = (await history("carol")).length;
          const since = receiver.mark();
          const { call } = await aliceCallsBob();
          const bobCall = Object.keys(call.talking_to)[0]!;
          // the call view says "talking" before the events saying it reach the receiver: the
          // consultation's events start after them
          await phoneEvent(since, "alice", "EventEstablished");
          await phoneEvent(since, "bob", "EventEstablished");
          const consultation = receiver.mark();
          const { started, answered } = await consultCarol(call.call_id);
          assert.deepEqual(
            [started.id, started.transferred_call, started.recipient_call, started.status],
            [call.call_id, bobCall, null, "ringback"],
          );
          await calld(aliceToken, "PUT", `/users/me/transfers/${answered.id}/complete`, 204);
          await receiver.waitFor(
            consultation,
            (e) =>
              e.username === "carol" && e.eventType === "EventEstablished" &&
              e.otherDN === "1002",
            "carol talks with bob",
          );
          await itemsWhen(aliceToken, "/users/me/calls", (items) => !items.length, "alice is free");
          await carol.hangup();
          await pbxIdle();
          await expectPhoneEvents(receiver, since, {
            alice: ALICE_CONSULTS,
            bob: ["EventRinging", "EventEstablished", "EventEstablished", "EventReleased"],
            carol: ["EventRinging", "EventEstablished", "EventEstablished", "EventReleased"],
          });
          expectOtherDNs(consultation, {
            alice: [
              ["EventDialing", "1003"],
              ["EventEstablished", "1003"],
              ["EventReleased", "1003"],
            ],
            bob: [["EventEstablished", "1003"], ["EventReleased", "1003"]],
            carol: [
              ["EventRinging", "1001"],
              ["EventEstablished", "1001"],
              ["EventEstablished", "1002"],
              ["EventReleased", "1002"],
            ],
          });
          const carolHistory = await readUntil(
            () => history("carol"),
            (entries) => entries.length === carolCalls + 1,
            "the call in carol's history",
          );
          const { srcUsername, dstUsername, srcNum, dstNum, status } = carolHistory[0]!;
          assert.deepEqual(
            [srcUsername, dstUsername, srcNum, dstNum, status],
            ["bob", "carol", "1002", "1003", "answered"],
            "carol's history names bob",
          );
        },
      );

      await controlStep(
        "/1.0/users/me/conferences/adhoc: alice merges bob and carol, then ends the conference",
        async () => {
          const since = receiver.mark();
          const { call } = await aliceCallsBob();
          const { answered } = await consultCarol(call.call_id);
          const participants = [answered.transferred_call, answered.recipient_call!];
          const conference = await calld(aliceToken, "POST", "/users/me/conferences/adhoc", 201, {
            host_call_id: call.call_id,
            participant_call_ids: participants,
          });
          assert.deepEqual(conference.body, { conference_id: call.call_id });
          const id = conference.body.conference_id;
          const members = [call.call_id, ...participants].sort();
          const calls = await itemsWhen<CallView>(
            calldToken,
            "/calls",
            (items) =>
              items.length === 3 && items.every((c) => c.bridges[0] === id) &&
              items.every((c) => Object.keys(c.talking_to).length === 2),
            "the three in the conference, each hearing the two others",
          );
          assert.deepEqual(calls.map((c) => c.call_id).sort(), members);
          for (const c of calls) {
            assert.deepEqual(c.bridges, [id]);
            assert.deepEqual(
              Object.keys(c.talking_to).sort(),
              members.filter((member) => member !== c.call_id),
            );
          }

          await calld(aliceToken, "DELETE", `/users/me/conferences/adhoc/${id}`, 204);
          await pbxIdle();
          await expectPhoneEvents(receiver, since, {
            alice: ALICE_CONSULTS,
            bob: ["EventRinging", "EventEstablished", "EventReleased"],
            carol: ["EventRinging", "EventEstablished", "EventReleased"],
          });
          assert.deepEqual((await calld(calldToken, "GET", "/calls")).body.items, []);
        },
      );

      await controlStep(
        "/1.0/users/me/conferences/adhoc: alice's two calls of her own merged, then deleted",
        async () => {
          // issue 43: alice talks with bob, then calls carol (her phone holds bob to answer);
          // her call with bob hosts, carol's own call joins, as wazo-calld-client sends it
          const since = receiver.mark();
          const { call: withBob } = await aliceCallsBob();
          const bobCall = Object.keys(withBob.talking_to)[0]!;
          const [aliceSince, carolSince] = [alice.mark(), carol.mark()];
          await calld(aliceToken, "POST", "/users/me/calls", 201, { extension: "1003" });
          await pickUp(alice, aliceSince);
          await pickUp(carol, carolSince);
          const mine = await itemsWhen<CallView>(
            aliceToken,
            "/users/me/calls",
            // her call with carol up and bridged (her own phone's leg is up before carol answers)
            (items) =>
              items.length === 2 && items.every((c) => c.status === "Up") &&
              items.some((c) =>
                c.call_id !== withBob.call_id && Object.keys(c.talking_to).length === 1
              ),
            "alice's two calls up, carol talking",
          );
          const withCarol = mine.find((c) => c.call_id !== withBob.call_id)!;
          const carolCall = Object.keys(withCarol.talking_to)[0];
          assert.ok(carolCall, "carol's call talks with alice's");
          const [bobMerged, carolMerged] = [bob.mark(), carol.mark()];
          const conference = await calld(aliceToken, "POST", "/users/me/conferences/adhoc", 201, {
            host_call_id: withBob.call_id,
            participant_call_ids: [carolCall],
          });
          const id = conference.body.conference_id;
          const members = [withBob.call_id, bobCall, carolCall].sort();
          const inConference = (items: CallView[]) =>
            items.length === 3 && items.every((c) => c.bridges[0] === id) &&
            items.every((c) => Object.keys(c.talking_to).length === 2);
          const calls = await itemsWhen<CallView>(
            calldToken,
            "/calls",
            inConference,
            "alice, bob and carol in the conference, each hearing the two others",
          );
          assert.deepEqual(calls.map((c) => c.call_id).sort(), members);
          // nobody is dropped a moment later (svc hung everyone up within milliseconds before)
          await sleep(1_500);
          assert.ok(
            inConference((await calld(calldToken, "GET", "/calls")).body.items),
            "the conference holds",
          );
          assert.equal(bob.saw("CALL_CLOSED", bobMerged), false, "bob's phone still in the call");
          assert.equal(carol.saw("CALL_CLOSED", carolMerged), false, "carol's phone too");

          await calld(aliceToken, "DELETE", `/users/me/conferences/adhoc/${id}`, 204);
          await pbxIdle();
          assert.deepEqual((await calld(calldToken, "GET", "/calls")).body.items, []);
          await until(
            () => receiver.phone(since, "carol").length >= 3,
            20_000,
            "carol's phone events",
          );
          const types = (user: string) =>
            receiver.phone(since, user).map((event) => [event.eventType, event.otherDN]);
          assert.deepEqual(types("bob"), [
            ["EventRinging", "1001"],
            ["EventEstablished", "1001"],
            ["EventReleased", "1001"],
          ]);
          assert.deepEqual(types("carol"), [
            ["EventRinging", "1001"],
            ["EventEstablished", "1001"],
            ["EventReleased", "1001"],
          ]);
          // her phone holds bob as it answers the call to carol: Asterisk may tell the answer
          // (EventDialing) before the hold (its re-INVITE), or after
          const aliceTypes = types("alice");
          if (aliceTypes[2]?.[0] === "EventDialing") {
            [aliceTypes[2], aliceTypes[3]] = [aliceTypes[3]!, aliceTypes[2]];
          }
          assert.deepEqual(aliceTypes, [
            ["EventDialing", "1002"],
            ["EventEstablished", "1002"],
            ["EventOnHold", "1002"],
            ["EventDialing", "1003"],
            ["EventEstablished", "1003"],
            ["EventReleased", "1003"],
            ["EventEstablished", "1002"],
            ["EventReleased", "1002"],
          ]);
        },
      );

      await controlStep(
        "the CTI channel: alice dials bob, holds, takes back, reads her calls, sends bob to carol",
        async () => {
          const cti = await openCti(
            `${svc.baseUrl.replace("http", "ws")}${V2}/cti?token=${aliceToken}`,
          );
          try {
            const since = receiver.mark();
            // bob's busy lamp: available before the call, busy (2) once he talks (device states)
            const lamp = cti.mark();
            const bobHint = (status: number) => (m: CtiMessage) =>
              m.ctiMessage.number === "1002" && m.ctiMessage.status === status;
            cti.web("subscribeToPhoneHints", { phoneNumbers: ["1002"] });
            await cti.next(lamp, "PhoneHintStatusEvent", bobHint(0));
            const [aliceSince, bobSince] = [alice.mark(), bob.mark()];
            cti.web("dial", { destination: "1002" });
            const call = await bothPickUp(aliceSince, bobSince);
            await cti.next(lamp, "PhoneHintStatusEvent", bobHint(2));

            for (const eventType of ["EventOnHold", "EventEstablished"]) {
              const [mark, socketMark] = [receiver.mark(), cti.mark()];
              cti.web("hold");
              await cti.next(socketMark, "PhoneEvent", (m) => m.ctiMessage.eventType === eventType);
              await phoneEvent(mark, "alice", eventType);
            }
            await aliceCall(talking, "alice talks with bob again");

            const asked = cti.mark();
            cti.web("getCurrentCallsPhoneEvents");
            assert.deepEqual((await cti.next(asked, "CurrentCallsPhoneEvents")).ctiMessage, {
              events: [{
                eventType: "EventEstablished",
                DN: "1001",
                otherDN: "1002",
                otherDName: "bob",
                linkedId: call.conversation_id,
                uniqueId: call.call_id,
                userData: { PLATFORM_USERID: String(ids.alice) },
                recordState: "inactive",
              }],
            });

            const transfer = receiver.mark();
            const carolSince = carol.mark();
            cti.web("directTransfer", { destination: "1003" });
            await pickUp(carol, carolSince);
            await phoneEvent(transfer, "carol", "EventEstablished");
            await carol.hangup();
            await pbxIdle();
            await expectPhoneEvents(receiver, since, {
              alice: ALICE_HOLDS,
              bob: ["EventRinging", "EventEstablished", "EventEstablished", "EventReleased"],
              carol: ["EventRinging", "EventEstablished", "EventReleased"],
            });
            expectOtherDNs(transfer, {
              alice: [["EventReleased", "1002"]],
              bob: [["EventEstablished", "1003"], ["EventReleased", "1003"]],
              carol: [
                ["EventRinging", "1002"],
                ["EventEstablished", "1002"],
                ["EventReleased", "1002"],
              ],
            });
            // the socket got alice's events as the receiver did, and no command failed
            await readUntil(
              () => cti.phoneEvents(),
              (types) => types.length >= ALICE_HOLDS.length,
              "alice's phone events on the socket",
            );
            assert.deepEqual(cti.phoneEvents(), ALICE_HOLDS);
            assert.deepEqual(cti.messages.filter((m) => m.msgType === "Error"), []);
          } finally {
            await cti.close();
          }
        },
      );

      await controlStep(
        "the CTI channel on the PBX: screen pop, setData, recording paused, listening, voicemail",
        async () => {
          // carol supervises queue support (listening, recordings); bob's voicemail box 1002
          // (he rings 8 s)
          await api("PUT", `/svc/api/2.0/rights/profiles/${ids.carol}`, {
            profile: "supervisor",
            queueIds: [ids.queue],
            listen: true,
            recording: true,
          });
          const box = (await api("POST", "/1.1/voicemails", {
            name: "Bob",
            number: "1002",
            context: "default",
          }, 201)).body.id;
          await api("PUT", `/1.1/users/${ids.bob}/voicemails/${box}`, undefined, 204);
          await until(
            async () => /\b1002\b/.test(await asterisk.cli("voicemail show users for default")),
            10_000,
            "Asterisk reloaded bob's mailbox",
          );
          const ws = (token: string) =>
            openCti(`${svc.baseUrl.replace("http", "ws")}${V2}/cti?token=${token}`);
          const carolToken = await login(svc, "login", CAROL.username, CAROL.password);
          const [aliceCti, bobCti, carolCti] = [
            await ws(aliceToken),
            await ws(await login(svc, "login", BOB.username, BOB.password)),
            await ws(carolToken),
          ];
          try {
            const empty = { voiceMailId: box, newMessages: 0, waitingMessages: 0, oldMessages: 0 };
            assert.deepEqual((await bobCti.next(0, "VoiceMailStatusUpdate")).ctiMessage, empty);
            const agentId = (await agentStatus()).id;

            // a queue call to the agent on bob's phone: bob's screen pop names the queue
            let [aliceSince, bobSince, bobMark] = [alice.mark(), bob.mark(), bobCti.mark()];
            aliceCti.web("dial", { destination: "3001", variables: { crm: "9" } });
            await pickUp(alice, aliceSince);
            const sheet = (await bobCti.next(bobMark, "Sheet")).ctiMessage;
            assert.deepEqual(
              [sheet.callerNumber, sheet.callerName, (sheet.queue as { name: string }).name],
              ["1001", "alice", "support"],
            );
            assert.deepEqual(sheet.variables, { USR_crm: "9" });
            await pickUp(bob, bobSince);
            await aliceCall(talking, "alice talks with the agent");
            // alice attaches data: bob's next events carry it
            aliceCti.web("setData", { variables: { folderNumber: "F-7" } });
            // setData answers nothing: wait until the data is known (its announcement came back
            // from Asterisk) before the recording's phone event, which must carry it
            await until(
              async () => {
                const asked = aliceCti.mark();
                aliceCti.web("getCurrentCallsPhoneEvents");
                const { events } = (await aliceCti.next(asked, "CurrentCallsPhoneEvents"))
                  .ctiMessage as { events: { userData?: Record<string, string> }[] };
                return events.some((event) => event.userData?.USR_folderNumber === "F-7");
              },
              10_000,
              "alice's call carries the data set",
            );
            const bobCall = await readUntil(
              async () =>
                (await calld(bobToken, "GET", "/users/me/calls")).body.items as CallView[],
              (calls) => calls.length === 1,
              "bob's call",
            );
            await calld(
              bobToken,
              "PUT",
              `/users/me/calls/${bobCall[0]!.call_id}/record/start`,
              204,
            );
            const recorded = await bobCti.next(
              bobMark,
              "PhoneEvent",
              (m) => m.ctiMessage.recordState === "active",
            );
            assert.deepEqual(recorded.ctiMessage.userData, {
              PLATFORM_USERID: String(ids.bob),
              USR_crm: "9",
              USR_folderNumber: "F-7",
            });
            assert.equal(recorded.ctiMessage.otherDName, "alice");
            // bob pauses his call's recording (a card number), then resumes it
            for (
              const [command, state] of [["monitorPause", "PAUSED"], ["monitorUnpause", "ACTIVE"]]
            ) {
              const mark = bobCti.mark();
              bobCti.web(command!);
              await bobCti.next(
                mark,
                "AgentStateEvent",
                (m) => m.ctiMessage.name === "AgentOnCall" && m.ctiMessage.monitorState === state,
              );
            }
            // a plain CTI user may not listen; carol, a supervisor, may
            const refused = aliceCti.mark();
            aliceCti.web("listenAgent", { agentid: agentId });
            assert.equal(
              (await aliceCti.next(refused, "Error")).ctiMessage.error,
              "Forbidden",
            );
            const carolSince = carol.mark();
            bobMark = bobCti.mark();
            carolCti.web("listenAgent", { agentid: agentId });
            await pickUp(carol, carolSince);
            const started = { started: true, phoneNumber: "1002", agentId };
            assert.deepEqual((await bobCti.next(bobMark, "AgentListen")).ctiMessage, started);
            assert.deepEqual((await carolCti.next(0, "AgentListen")).ctiMessage, started);
            await sleep(1500);
            await carol.hangup();
            const stopped = { ...started, started: false };
            assert.deepEqual(
              (await bobCti.next(bobMark, "AgentListen", (m) => !m.ctiMessage.started))
                .ctiMessage,
              stopped,
            );
            await alice.hangup();
            await pbxIdle();

            // alice calls bob, who does not answer: his voicemail takes her message
            [aliceSince, bobMark] = [alice.mark(), bobCti.mark()];
            const aliceMark = aliceCti.mark();
            aliceCti.web("dial", { destination: "1002" });
            await pickUp(alice, aliceSince);
            await aliceCti.next(
              aliceMark,
              "PhoneEvent",
              (m) => m.ctiMessage.eventType === "EventEstablished",
            );
            await sleep(3000); // alice's tone is the message
            await alice.hangup();
            assert.deepEqual(
              (await bobCti.next(bobMark, "VoiceMailStatusUpdate")).ctiMessage,
              { ...empty, newMessages: 1, waitingMessages: 1 },
            );
            await pbxIdle();
            const inbox = `${asterisk.voicemailDir}/default/1002/INBOX`;
            const files = [...Deno.readDirSync(inbox)].map((entry) => entry.name);
            assert.ok(files.includes("msg0000.wav"), `bob's message: ${files}`);
            for (const cti of [aliceCti, bobCti, carolCti]) {
              assert.deepEqual(
                cti.messages.filter((m) =>
                  m.msgType === "Error" && m.ctiMessage.command !== "listenAgent"
                ),
                [],
              );
            }
          } finally {
            for (const cti of [aliceCti, bobCti, carolCti]) await cti.close();
          }
        },
      );

      await step(
        "Asterisk restarts: svc back within 5 s, the agent still logged in",
        async () => {
          await asterisk.halt();
          await until(
            async () => (await call(svc, "GET", "/ready")).status === 503,
            15_000,
            "/ready 503 while Asterisk is down",
          );
          assert.deepEqual((await call(svc, "GET", "/ready")).body, {
            status: "unavailable",
            platform: "unreachable",
          });
          // timed from the AMI's first login, not from the end of the boot
          const booting = asterisk.start();
          await until(() => asterisk.amiAcceptsLogin(), 60_000, "Asterisk accepts logins");
          await until(ready, 5_000, "/ready 200 within 5 s of Asterisk accepting logins");
          await booting;
          assert.equal((await agentStatus()).logged, true);
          // dynamic members do not survive a restart: svc adds the agent back
          await until(
            async () => /\b8001 \(/.test(await asterisk.cli("queue show support")),
            15_000,
            "8001 a member of support again",
          );
          const status = await agentStatus();
          assert.deepEqual([status.logged, status.extension, status.state], [
            true,
            "1002",
            "AgentReady",
          ]);
          // the phones' registrations come back from the AstDB; reachable after a qualify
          await until(
            () => asterisk.registered(["alice", "bob"]),
            60_000,
            "alice and bob reachable again",
          );

          const since = receiver.mark();
          const bobSince = bob.mark();
          await api("POST", `${V2}/dial/user/alice`, { username: "bob" });
          await bob.waitEvent("CALL_ESTABLISHED", bobSince);
          await bob.hangup();
          await pbxIdle();
          await expectPhoneEvents(receiver, since, {
            alice: ["EventDialing", "EventEstablished", "EventReleased"],
            bob: ["EventRinging", "EventEstablished", "EventReleased"],
          });
        },
      );
    } catch (error) {
      tellPeers();
      throw error;
    } finally {
      // phones first (they un-register), then svc, then the PBX (and its work dir)
      await Promise.all(Object.values(phones).map((phone) => phone.stop()));
      if (server) await server.stop();
      await asterisk.stop();
      await receiver.close();
    }
  },
});

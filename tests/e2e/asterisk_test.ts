/**
 * End-to-end: the real server process with `SVC_PLATFORM=asterisk`, on the AMI replay server
 * (`tests/peers/ami_replay.ts`, real Asterisk 22 sessions) instead of an Asterisk, checked through
 * HTTP only: readiness, the generated configuration files, a dial whose phone events reach a real
 * `eventUrl` receiver and a CTI socket (with the callee's busy lamp, `subscribeToPhoneHints`) and
 * whose call reaches the history; Asterisk down at start and back; and a missing AMI setting
 * refused at start-up.
 */
import assert from "node:assert/strict";
import { startAmiReplay } from "../peers/ami_replay.ts";
import { type RunningServer, runServerToExit, startServer, withTempDir } from "./server.ts";
import { call, eventReceiver, login, type Person, phoneUser, until, V2 } from "./svc_http.ts";

const ADMIN = { login: "admin", password: "asterisk-e2e-admin" };
const FILES = ["pjsip_svc.conf", "extensions_svc.conf", "queues_svc.conf"];

const readIfExists = (path: string) => Deno.readTextFile(path).catch(() => "");

/** The three files are in `dir`, each at least its header. */
const filesWritten = async (dir: string) =>
  (await Promise.all(FILES.map((file) => readIfExists(`${dir}/${file}`))))
    .every((text) => text.startsWith("; "));

const ALICE: Person = {
  username: "alice",
  password: "alice-pw",
  exten: "1001",
  secret: "alice-sip",
};
const BOB: Person = { username: "bob", password: "bob-pw", exten: "1002", secret: "bob-sip" };

/** The settings of a server on the AMI port `amiPort`, posting its events to `eventUrl`. */
const asteriskEnv = (dir: string, amiPort: number, eventUrl: string) => ({
  SVC_KV: `${dir}/svc.kv`,
  SVC_ADMIN_LOGIN: ADMIN.login,
  SVC_ADMIN_PASSWORD: ADMIN.password,
  SVC_EVENT_URL: eventUrl,
  SVC_PLATFORM: "asterisk",
  SVC_AMI_PORT: String(amiPort),
  SVC_AMI_USERNAME: "admin",
  SVC_AMI_SECRET: "admin",
  SVC_ASTERISK_CONFIG_DIR: `${dir}/asterisk`,
});

/** Stops the server and asserts a clean exit (SIGTERM: code 0). */
async function stopCleanly(server: RunningServer) {
  const status = await server.stop();
  assert.equal(status.code, 0, server.stderrLines.join("\n"));
}

Deno.test("on the AMI replay: ready, config files, a dial's events to eventUrl, its history", async () => {
  await withTempDir(async (dir) => {
    // in real time: the busy lamp's status poll (every 200 ms) sees bob's 2 s call
    const replay = await startAmiReplay({ connections: ["02-dial-answered"], speed: 1 });
    const receiver = eventReceiver();
    let server: RunningServer | undefined;
    let socket: WebSocket | undefined;
    try {
      const env = asteriskEnv(dir, replay.port, receiver.url);
      server = await startServer(env);
      const svc = server;

      await until(async () => (await call(svc, "GET", "/ready")).status === 200, 5_000, "ready");
      assert.deepEqual((await call(svc, "GET", "/ready")).body, { status: "ready" });

      const configDir = env.SVC_ASTERISK_CONFIG_DIR;
      await until(() => filesWritten(configDir), 3_000, "the three configuration files");

      const admin = await login(svc, "webservice", ADMIN.login, ADMIN.password);
      const aliceId = await phoneUser(svc, admin, ALICE);
      const bobId = await phoneUser(svc, admin, BOB);
      // the last /1.1 answer is in: alice and bob are in the files within 2 s (the files are
      // written one after the other: both are read again until both hold them)
      const written = async () => {
        const pjsip = await readIfExists(`${configDir}/pjsip_svc.conf`);
        const extensions = await readIfExists(`${configDir}/extensions_svc.conf`);
        return [
          /^\[alice\]\ntype = endpoint$/m.test(pjsip),
          /^\[bob\]\ntype = endpoint$/m.test(pjsip),
          /^password = alice-sip$/m.test(pjsip),
          /^password = bob-sip$/m.test(pjsip),
          /^exten => 1001,hint,PJSIP\/alice$/m.test(extensions),
          /^exten => 1002,hint,PJSIP\/bob$/m.test(extensions),
        ];
      };
      await until(async () => (await written()).every(Boolean), 2_000, "alice and bob written");

      // alice connects (her softphone would) and opens the CTI socket a browser page would;
      // a CRM's web service user dials for her
      const aliceToken = await login(svc, "login", ALICE.username, ALICE.password);
      const socketEvents: string[] = [];
      /** The statuses of bob's number the socket was sent (its busy lamp). */
      const bobHints: number[] = [];
      socket = new WebSocket(`${svc.baseUrl.replace("http", "ws")}${V2}/cti?token=${aliceToken}`);
      socket.onmessage = (event) => {
        const message = JSON.parse(event.data);
        socketEvents.push(
          message.msgType === "PhoneEvent" ? message.ctiMessage.eventType : message.msgType,
        );
        if (message.msgType === "PhoneHintStatusEvent" && message.ctiMessage.number === "1002") {
          bobHints.push(message.ctiMessage.status);
        }
      };
      await until(() => socketEvents.includes("LoggedOn"), 5_000, "the socket's LoggedOn");
      socket.send(JSON.stringify({
        claz: "web",
        command: "subscribeToPhoneHints",
        phoneNumbers: ["1002"],
      }));
      await until(() => bobHints.length > 0, 5_000, "bob's first phone hint");
      const crm = await call(svc, "POST", "/1.1/webservice_users", {
        token: admin,
        body: { login: "crm", password: "crm-secret-pw", acls: ["svc.rest.#"] },
      });
      assert.equal(crm.status, 201, JSON.stringify(crm.body));
      const ws = await login(svc, "webservice", "crm", "crm-secret-pw");
      const dial = await call(svc, "POST", `${V2}/dial/user/alice`, {
        token: ws,
        body: { username: "bob", variables: { crm: "42" } },
      });
      assert.equal(dial.status, 200, JSON.stringify(dial.body));
      assert.deepEqual(dial.body, { res: "success" });

      const originates = replay.actions.filter((action) => action.get("Action") === "Originate");
      assert.equal(originates.length, 1);
      const originate = originates[0]!;
      assert.equal(originate.get("Channel"), "PJSIP/alice");
      assert.equal(originate.get("Context"), "default");
      assert.equal(originate.get("Exten"), "1002");
      const linkedId = originate.get("ChannelId");
      assert.ok(linkedId, "the Originate names the channel's id");

      await until(() => receiver.phone(0).length >= 6, 10_000, "six phone events");
      const phone = receiver.phone(0);
      const of = (username: string) =>
        phone.filter((event) => event.username === username).map((event) => [
          event.eventType,
          event.DN,
          event.otherDN,
        ]);
      // each user's events come in order; the two users' may interleave either way
      assert.deepEqual(of("alice"), [
        ["EventDialing", "1001", "1002"],
        ["EventEstablished", "1001", "1002"],
        ["EventReleased", "1001", "1002"],
      ]);
      assert.deepEqual(of("bob"), [
        ["EventRinging", "1002", "1001"],
        ["EventEstablished", "1002", "1001"],
        ["EventReleased", "1002", "1001"],
      ]);
      assert.equal(phone.length, 6);
      for (const event of phone) {
        assert.equal(event.linkedId, linkedId, "every event carries the ChannelId svc sent");
        const userId = event.username === "alice" ? aliceId : bobId;
        assert.deepEqual(event.userData, { PLATFORM_USERID: String(userId), USR_crm: "42" });
      }
      const uniqueIds = (username: string) =>
        new Set(phone.filter((e) => e.username === username).map((e) => e.uniqueId));
      assert.deepEqual(uniqueIds("alice"), new Set([linkedId]), "alice's leg is the first");
      assert.equal(uniqueIds("bob").size, 1);
      assert.ok(!uniqueIds("bob").has(linkedId), "bob's leg is another channel");

      // the Asterisk connector feeds the CTI socket the same events as eventUrl
      await until(() => socketEvents.includes("EventReleased"), 5_000, "the socket's events");
      assert.deepEqual(
        socketEvents.filter((type) => type.startsWith("Event")),
        ["EventDialing", "EventEstablished", "EventReleased"],
      );
      // bob's busy lamp, from his device states: busy during the call (2 s), then available
      await until(() => bobHints.at(-1) === 0, 5_000, `bob available again: ${bobHints}`);
      assert.ok(bobHints.includes(2), `bob busy during the call: ${bobHints}`);

      const history = async () =>
        (await call(svc, "GET", `${V2}/history/alice?size=5`, { token: ws })).body;
      await until(async () => (await history()).data.entries.length === 1, 5_000, "history");
      const [entry] = (await history()).data.entries;
      assert.deepEqual(
        [entry.srcUsername, entry.dstUsername, entry.srcNum, entry.dstNum, entry.status],
        ["alice", "bob", "1001", "1002", "emitted"],
      );
    } finally {
      socket?.close();
      if (server) await stopCleanly(server);
      await replay.close();
      await receiver.close();
    }
  });
});

Deno.test("Asterisk down at start: the process serves, /ready and dials 503 at once, then all back", async () => {
  await withTempDir(async (dir) => {
    const replay = await startAmiReplay({ connections: ["02-dial-answered"] });
    await replay.stop(); // nothing listens on its port: a connect is refused, as with no Asterisk
    const receiver = eventReceiver();
    let server: RunningServer | undefined;
    try {
      const env = asteriskEnv(dir, replay.port, receiver.url);
      server = await startServer(env);
      const svc = server;

      const ready = await call(svc, "GET", "/ready");
      assert.equal(ready.status, 503);
      assert.deepEqual(ready.body, { status: "unavailable", platform: "unreachable" });
      assert.equal((await call(svc, "GET", "/health")).status, 200);

      // the files are written anyway, so that Asterisk's #includes find them when it starts
      const configDir = env.SVC_ASTERISK_CONFIG_DIR;
      await until(
        () => filesWritten(configDir),
        3_000,
        "the three files written while Asterisk is unreachable",
      );
      // what needs only the store works: users, logins
      const admin = await login(svc, "webservice", ADMIN.login, ADMIN.password);
      await phoneUser(svc, admin, ALICE);
      await phoneUser(svc, admin, BOB);
      await login(svc, "login", ALICE.username, ALICE.password);

      // a dial is refused at once (given up after 5 s: it never hangs)
      const dial = await call(svc, "POST", `${V2}/dial/user/alice`, {
        token: admin,
        body: { username: "bob" },
        timeoutMs: 5_000,
      });
      assert.equal(dial.status, 503, JSON.stringify(dial.body));
      assert.equal(dial.body.error, "Unreachable");
      assert.equal(typeof dial.body.message, "string");
      assert.equal(replay.connections, 0);

      replay.start();
      await until(
        async () => (await call(svc, "GET", "/ready")).status === 200,
        5_000,
        "/ready 200 once Asterisk listens",
      );
      assert.deepEqual((await call(svc, "GET", "/ready")).body, { status: "ready" });
      const again = await call(svc, "POST", `${V2}/dial/user/alice`, {
        token: admin,
        body: { username: "bob" },
      });
      assert.equal(again.status, 200, JSON.stringify(again.body));
      assert.ok(replay.actions.some((action) => action.get("Action") === "Originate"));
    } finally {
      if (server) await stopCleanly(server);
      await replay.close();
      await receiver.close();
    }
  });
});

Deno.test("start-up refuses SVC_PLATFORM=asterisk without SVC_AMI_USERNAME, never printing the secret", async () => {
  await withTempDir(async (dir) => {
    const secret = "ami-secret-never-printed-7741";
    const result = await runServerToExit({
      SVC_KV: `${dir}/svc.kv`,
      SVC_PLATFORM: "asterisk",
      SVC_AMI_SECRET: secret,
      SVC_ASTERISK_CONFIG_DIR: `${dir}/asterisk`,
    });
    assert.equal(result.code, 1, result.stderr);
    const lines = result.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 1, `one line on stderr, got:\n${result.stderr}`);
    assert.ok(
      lines[0]!.startsWith("svc: invalid configuration: SVC_AMI_USERNAME: "),
      `stderr names SVC_AMI_USERNAME: ${lines[0]}`,
    );
    assert.ok(!`${result.stdout}${result.stderr}`.includes(secret), "the secret is never printed");
  });
});

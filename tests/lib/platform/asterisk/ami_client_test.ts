/**
 * AmiClient against the replay of real Asterisk 22 sessions (tests/peers/ami_replay.ts): login,
 * correlation, event lists, keepalive, dead connections, restarts, garbage; and the replay
 * server's own substitution rules.
 */
import assert from "node:assert/strict";
import {
  AmiClient,
  type AmiClientOptions,
  AmiUnavailable,
} from "../../../../lib/platform/asterisk/ami_client.ts";
import type { AmiMessage } from "../../../../lib/platform/asterisk/ami_message.ts";
import { createLogger } from "../../../../lib/log.ts";
import {
  type AmiReplay,
  type AmiReplayOptions,
  CLIENT_DRIVEN,
  startAmiReplay,
  TRANSCRIPTS,
} from "../../../peers/ami_replay.ts";

const SECRET = "s3cret-never-logged";

interface Scenario {
  server: AmiReplay;
  ami: AmiClient;
  events: AmiMessage[];
  logs: { level: string; msg: string; [field: string]: unknown }[];
  connects: number;
  disconnects: string[];
}

/** Runs `body` with a replay server and a started client, then closes both. */
async function scenario(
  replay: AmiReplayOptions,
  client: Partial<AmiClientOptions>,
  body: (t: Scenario) => Promise<void>,
): Promise<void> {
  const server = await startAmiReplay(replay);
  const logs: Scenario["logs"] = [];
  const t: Scenario = {
    server,
    events: [],
    logs,
    connects: 0,
    disconnects: [],
    ami: new AmiClient({
      host: "127.0.0.1",
      port: server.port,
      username: "admin",
      secret: SECRET,
      logger: createLogger("debug", (line) => logs.push(JSON.parse(line))),
      backoffMs: [20, 50],
      actionIdPrefix: "t-",
      ...client,
    }),
  };
  t.ami.onEvent((event) => t.events.push(event));
  t.ami.onConnect(() => void t.connects++);
  t.ami.onDisconnect((reason) => t.disconnects.push(reason));
  try {
    t.ami.start();
    await body(t);
  } finally {
    await t.ami.close();
    await server.close();
    assert.ok(!JSON.stringify(logs).includes(SECRET), "the secret was logged");
  }
}

/** Waits until `condition` holds (polling), failing after `ms`. */
async function until(condition: () => boolean, ms = 3000, what = "condition"): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The Event names a transcript's recv stream holds, in order. */
async function recordedEvents(name: string): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(`${name}.jsonl`, TRANSCRIPTS));
  return text.split("\n").filter((line) => line !== "")
    .map((line) => JSON.parse(line).data as string)
    .filter((data) => data.startsWith("Event: "))
    .map((data) => data.slice(7, data.indexOf("\r\n")));
}

/** Makes the recorded sends named in `actions` client-driven too. */
function driven(...actions: string[]) {
  return (action: AmiMessage) => {
    const name = action.get("Action")?.toLowerCase() ?? "";
    return !CLIENT_DRIVEN.has(name) && !actions.includes(name);
  };
}

Deno.test("login, an Originate correlated by ActionID, and the call's events in order (02)", async () => {
  await scenario({ connections: ["02-dial-answered"] }, {}, async (t) => {
    assert.equal(t.ami.connected, false);
    await assert.rejects(t.ami.action("Ping"), AmiUnavailable); // not logged in yet
    assert.equal(await t.ami.waitConnected(2000), true);
    assert.equal(t.connects, 1);
    const login = t.server.actions[0]!;
    assert.equal(login.get("Action"), "Login");
    assert.equal(login.get("Username"), "admin");
    assert.equal(login.get("Secret"), SECRET);
    assert.equal(login.get("Events"), "on");

    assert.equal(await t.server.waiting(), "Originate");
    const response = await t.ami.action("Originate", {
      Channel: "PJSIP/alice",
      Context: "default",
      Exten: "1002",
      Priority: "1",
      Variable: ["__USR_crm=42", "USR_ticket=T-1001"],
      Async: "true",
    });
    assert.equal(response.ok, true);
    assert.equal(response.message.get("Message"), "Originate successfully queued");
    const sent = t.server.actions.at(-1)!;
    assert.equal(sent.get("Action"), "Originate");
    assert.deepEqual(sent.all("Variable"), ["__USR_crm=42", "USR_ticket=T-1001"]);
    assert.equal(response.message.actionId, sent.actionId);
    assert.match(sent.actionId!, /^t-\d+$/);

    assert.equal(await t.server.waiting(), "Logoff");
    await until(() => t.events.at(-1)?.event === "ExtensionStatus" && t.events.length > 50);
    assert.deepEqual(t.events.map((e) => e.event), await recordedEvents("02-dial-answered"));
    const originated = t.events.find((e) => e.event === "OriginateResponse");
    assert.equal(originated?.actionId, sent.actionId); // an ActionID of no pending list: an event
    assert.equal(originated?.get("Reason"), "4");

    await t.ami.close();
    assert.equal(t.server.actions.at(-1)?.get("Action"), "Logoff");
    assert.equal(t.ami.connected, false);
    await assert.rejects(t.ami.action("Ping"), AmiUnavailable);
  });
});

Deno.test("a refused login is logged once naming the user, retried, then accepted (01a)", async () => {
  const connections = ["01a-login-failed", "01a-login-failed", "01a-login-failed", "01b-login-ok"];
  await scenario({ connections }, {}, async (t) => {
    await until(() => t.server.connections >= 2, 3000, "a retry");
    assert.equal(t.ami.connected, false);
    const started = performance.now();
    await assert.rejects(t.ami.action("CoreStatus"), AmiUnavailable);
    assert.ok(performance.now() - started < 50, "rejected at once");

    assert.equal(await t.ami.waitConnected(3000), true);
    assert.equal(t.server.connections, 4);
    const refused = t.logs.filter((line) => line.msg === "AMI login refused");
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.level, "error");
    assert.equal(refused[0]!.user, "admin");
    assert.equal(refused[0]!.message, "Authentication failed");
    assert.equal(t.connects, 1);
    assert.deepEqual(t.disconnects, []); // never logged in before
  });
});

Deno.test("refuseLogin keeps the client out until it is lifted", async () => {
  await scenario({ connections: ["18b-restart-reconnect"], refuseLogin: true }, {}, async (t) => {
    await until(() => t.server.connections >= 3, 3000, "retries");
    assert.equal(t.ami.connected, false);
    t.server.refuseLogin = false;
    assert.equal(await t.ami.waitConnected(3000), true);
    assert.equal(t.logs.filter((line) => line.msg === "AMI login refused").length, 1);
  });
});

Deno.test("event lists: items in order, told from events of the same name by ActionID", async (t) => {
  await t.step("QueueStatus in 12", async () => {
    const auto = driven("queuestatus");
    await scenario({ connections: ["12-queue-agent"], auto }, {}, async (t) => {
      await t.ami.waitConnected(2000);
      const add = await t.ami.action("QueueAdd", {
        Queue: "support",
        Interface: "Local/1002@default",
        StateInterface: "PJSIP/bob",
        MemberName: "8001",
      });
      assert.equal(add.message.get("Message"), "Added interface to queue");
      const status = await t.ami.action("QueueStatus", { Queue: "support" });
      assert.equal(status.ok, true);
      assert.equal(status.message.get("EventList"), "start");
      assert.deepEqual(status.items.map((e) => e.event), ["QueueParams", "QueueMember"]);
      assert.equal(status.items[1]!.get("Location"), "Local/1002@default");
      const id = t.server.actions.at(-1)!.actionId;
      assert.ok(status.items.every((item) => item.actionId === id));
      assert.equal(status.complete?.event, "QueueStatusComplete");
      assert.equal(status.complete?.get("ListItems"), "2");
      assert.ok(t.events.some((e) => e.event === "QueueMemberAdded"));
      assert.ok(!t.events.some((e) => e.event === "QueueParams" || e.event === "QueueMember"));

      // a list action the script does not expect: the fallback's empty list
      const summary = await t.ami.action("QueueSummary", { Queue: "support" });
      assert.equal(summary.ok, true);
      assert.deepEqual(summary.items, []);
      assert.equal(summary.complete?.get("ListItems"), "0");
    });
  });

  await t.step("DBGet in 08 (the auto DBGetTree's items are not sent)", async () => {
    await scenario({ connections: ["08-dnd"], auto: driven("dbget") }, {}, async (t) => {
      await t.ami.waitConnected(2000);
      const put = await t.ami.action("DBPut", { Family: "svc", Key: "dnd/bob", Val: "1" });
      assert.equal(put.ok, true);
      const get = await t.ami.action("DBGet", { Family: "svc", Key: "dnd/bob" });
      assert.deepEqual(get.items.map((e) => [e.event, e.get("Key"), e.get("Val")]), [
        ["DBGetResponse", "dnd/bob", "1"],
      ]);
      assert.equal(get.complete?.event, "DBGetComplete");
      assert.equal(await t.server.waiting(), "Originate");
      assert.ok(!t.events.some((e) => e.event?.startsWith("DBGet")));
    });
  });

  await t.step("DeviceStateList and ExtensionStateList items named like events (15)", async () => {
    const auto = driven("devicestatelist", "extensionstatelist");
    await scenario({ connections: ["15-device-states"], auto }, {}, async (t) => {
      await t.ami.waitConnected(2000);
      const before = t.events.length;
      const devices = await t.ami.action("DeviceStateList");
      const extensions = await t.ami.action("ExtensionStateList");
      assert.ok(devices.items.length > 3);
      assert.ok(devices.items.every((item) => item.event === "DeviceStateChange"));
      assert.ok(devices.items.some((item) => item.get("Device") === "Agent:8001"));
      assert.ok(extensions.items.every((item) => item.event === "ExtensionStatus"));
      assert.equal(extensions.complete?.event, "ExtensionStateListComplete");
      assert.equal(t.events.length, before); // none of the items went to the listeners
    });
  });
});

Deno.test("concurrent actions: writes serialised, each response to its caller", async () => {
  await scenario({ connections: ["02-dial-answered"] }, {}, async (t) => {
    await t.ami.waitConnected(2000);
    const names = ["Ping", "CoreStatus", "CoreSettings", "NoSuchThing", "Hangup"];
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => t.ami.action(names[i % names.length]!, { N: `${i}` })),
    );
    const received = t.server.actions.slice(1);
    assert.equal(received.length, 60);
    responses.forEach((response, i) => {
      const action = received.find((a) => a.get("N") === `${i}`)!;
      assert.equal(response.message.actionId, action.actionId);
    });
    assert.equal(responses[0]!.message.get("Ping"), "Pong");
    assert.equal(responses[3]!.ok, false);
    assert.match(responses[3]!.message.get("Message")!, /Invalid\/unknown command: NoSuchThing/);
    await assert.rejects(t.ami.action("Setvar", { Value: "x\r\nAction: Hangup" }), TypeError);
  });
});

Deno.test("keepalive: an idle connection is pinged and stays up", async () => {
  await scenario({ connections: ["02-dial-answered"] }, { keepaliveMs: 40 }, async (t) => {
    await t.ami.waitConnected(2000);
    await until(() => t.server.actions.filter((a) => a.get("Action") === "Ping").length >= 3);
    assert.equal(t.ami.connected, true);
    assert.equal(t.server.connections, 1);
    assert.deepEqual(t.disconnects, []);
  });
});

Deno.test("a dead connection (answers slower than the timeout) is dropped and reconnected", async () => {
  const options = { keepaliveMs: 40, timeoutMs: 150 };
  await scenario({ connections: ["02-dial-answered"] }, options, async (t) => {
    await t.ami.waitConnected(2000);
    t.server.slowMs = 2000;
    const slow = t.ami.action("CoreStatus");
    await assert.rejects(slow, AmiUnavailable);
    await until(() => t.disconnects.length === 1, 3000, "the drop");
    assert.match(t.disconnects[0]!, /no answer to Ping/);
    assert.equal(t.ami.connected, false);
    t.server.slowMs = 0;
    assert.equal(await t.ami.waitConnected(3000), true);
    assert.equal(t.connects, 2);
    assert.ok(t.server.connections >= 2);
  });
});

Deno.test("Asterisk stopped, then back 1 s later: connected again within 5 s", async () => {
  // the default backoff
  const backoff = { backoffMs: undefined };
  await scenario({ connections: ["02-dial-answered"] }, backoff, async (t) => {
    await t.ami.waitConnected(2000);
    t.server.slowMs = 10_000;
    const pending = t.ami.action("CoreStatus");
    await until(() => t.server.actions.length === 2, 2000, "the action at the server");
    await t.server.stop();
    await assert.rejects(pending, AmiUnavailable); // lost with the connection, not timed out
    t.server.slowMs = 0;
    await until(() => !t.ami.connected, 2000, "the loss");
    await assert.rejects(t.ami.action("Ping"), AmiUnavailable);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const back = performance.now();
    t.server.start();
    assert.equal(await t.ami.waitConnected(5000), true);
    assert.ok(performance.now() - back < 5000);
    assert.equal(t.connects, 2);
    assert.equal(t.disconnects.length, 1);
    assert.equal((await t.ami.action("Ping")).ok, true);
  });
});

Deno.test("garbage and a 5 MB value are skipped; the client keeps working", async () => {
  const garbage = [
    "a line without colon\r\n\r\n",
    "Event: CutShort\r\nHalf a li\r\n\r\n",
    "\x00\x01\x02\xff\r\n\r\n",
    "Event: NoSuchEventEver\r\nX: 1\r\n\r\n",
  ];
  await scenario({ connections: ["02-dial-answered"], garbage }, {}, async (t) => {
    assert.equal(await t.ami.waitConnected(2000), true);
    t.server.inject(`Event: Huge\r\nValue: ${"x".repeat(5 * 1024 * 1024)}\r\n\r\n`);
    t.server.inject("Event: AfterHuge\r\n\r\n");
    await until(() => t.events.some((e) => e.event === "AfterHuge"));
    assert.equal((await t.ami.action("Ping")).ok, true);
    const names = t.events.map((e) => e.event);
    assert.ok(names.includes("CutShort") && names.includes("NoSuchEventEver"));
    assert.ok(!names.includes("Huge"));
    const skipped = t.logs.filter((line) => line.msg === "AMI input skipped");
    assert.equal(skipped.length, 4); // 3 bad lines and the huge message
    assert.equal(t.server.connections, 1);
  });
});

Deno.test("Shutdown then EOF (18a): reconnects and logs in again (18b)", async () => {
  const connections = ["18a-restart-shutdown", "18b-restart-reconnect"];
  await scenario({ connections }, {}, async (t) => {
    await until(() => t.connects === 2, 3000, "the second login");
    assert.equal(t.server.connections, 2);
    const shutdown = t.events.find((e) => e.event === "Shutdown");
    assert.equal(shutdown?.get("Shutdown"), "Cleanly");
    assert.equal(t.disconnects.length, 1);
    assert.match(t.disconnects[0]!, /shut down/);
    const contacts = await t.ami.action("PJSIPShowContacts");
    assert.equal(contacts.ok, true);
    await until(() => t.events.some((e) => e.event === "FullyBooted" && e.get("Uptime") === "0"));
  });
});

Deno.test("replay server: ChannelId becomes the originated channel's Uniqueid (02, 03)", async (t) => {
  await t.step("02: the recorded Originate had no ChannelId", async () => {
    await scenario({ connections: ["02-dial-answered"] }, {}, async (t) => {
      await t.ami.waitConnected(2000);
      await t.ami.action("Originate", { Channel: "PJSIP/alice", ChannelId: "call-1" });
      await t.server.waiting();
      await until(() =>
        t.events.some((e) => e.event === "Hangup" && e.get("Uniqueid") === "call-1")
      );
      const alice = t.events.filter((e) => e.get("Channel") === "PJSIP/alice-00000000");
      assert.ok(alice.length > 10 && alice.every((e) => e.get("Uniqueid") === "call-1"));
      const bob = t.events.find((e) =>
        e.event === "Newchannel" && e.get("Channel")?.startsWith("PJSIP/bob")
      );
      assert.equal(bob?.get("Uniqueid"), "1795439518.1"); // a whole-token replace only
      assert.equal(bob?.get("Linkedid"), "call-1");
      assert.ok(!t.events.some((e) => e.format().includes("1795439518.0")));
      const originated = t.events.find((e) => e.event === "OriginateResponse");
      assert.equal(originated?.get("Uniqueid"), "call-1");
    });
  });

  await t.step("03: the recorded ChannelId is mapped to the client's", async () => {
    await scenario({ connections: ["03-dial-outside-number"] }, {}, async (t) => {
      await t.ami.waitConnected(2000);
      await t.ami.action("Originate", { Channel: "PJSIP/alice", ChannelId: "mine" });
      await t.server.waiting();
      await until(() => t.events.some((e) => e.event === "Cdr"));
      const newchannel = t.events.find((e) => e.event === "Newchannel");
      assert.equal(newchannel?.get("Uniqueid"), "mine");
      assert.ok(!t.events.some((e) => e.format().includes("7c01a481-d7cc-440f-b33d-7057a3470dc1")));
    });
  });
});

Deno.test("replay server: speed scales the recorded gaps; dropAfter cuts the connection", async (t) => {
  await t.step("18a at speed 10: the Shutdown comes about 0.1 s after the login", async () => {
    const connections = ["18a-restart-shutdown", "18b-restart-reconnect"];
    await scenario({ connections, speed: 10 }, {}, async (t) => {
      await t.ami.waitConnected(2000);
      const loggedIn = performance.now();
      await until(() => t.events.some((e) => e.event === "Shutdown"), 3000, "the Shutdown");
      assert.ok(performance.now() - loggedIn >= 80, "the recorded 1 s gap at speed 10");
    });
  });

  await t.step("dropAfter 3: banner, login response, FullyBooted, then the close", async () => {
    await scenario({ connections: ["02-dial-answered"], dropAfter: 3 }, {}, async (t) => {
      await until(() => t.disconnects.length >= 1, 3000, "the drop");
      assert.equal(t.events[0]?.event, "FullyBooted");
      assert.ok(!t.events.some((e) => e.event === "SuccessfulAuth"));
      t.server.dropAfter = undefined;
      await until(() => t.ami.connected && t.server.connections >= 2, 3000, "the reconnection");
      assert.equal(await t.server.waiting(), "Originate");
    });
  });
});

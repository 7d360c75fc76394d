/**
 * Several Asterisk servers behind one svc (`SVC_ASTERISK_SERVERS`, docs/asterisk.md "Several
 * servers") through the real app, each server a tiny AMI peer on loopback: lines placed on a
 * server (`registrar`) and moved, each server's files with its own endpoints and the trunks to the
 * others, commands sent to the user's server, a call from another server keeping its id, a server
 * down (its users 503, the others not; /ready and the metrics say which) and back, a server added
 * and a bad file at run time, and the settings refused.
 */
import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../../../../lib/config.ts";
import { createServices } from "../../../../lib/services.ts";
import type { AsteriskServers } from "../../../../lib/platform/asterisk/several.ts";
import { parseServers } from "../../../../lib/platform/asterisk/servers.ts";
import type { PhoneEvent } from "../../../../lib/platform/port.ts";
import { apiCall, expectConfdError, login, setup, webServiceUser } from "../../../helpers.ts";
import { capture } from "../scenario_runner.ts";
import { scenarioWorld } from "../fixtures.ts";
import { channel, type TinyAsterisk, tinyAsterisk } from "./tiny_asterisk.ts";

/** Waits until `test` holds, checking every 20 ms for at most `ms`. */
async function until(test: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!await test()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const read = (path: string) => Deno.readTextFile(path).catch(() => "");

/** A server of the file, its AMI on `port`, its files in `dir`. */
const server = (name: string, port: number, dir: string, sipPort: number) => ({
  name,
  amiHost: "127.0.0.1",
  amiPort: port,
  amiUser: "admin",
  amiSecret: `${name}-ami-secret`,
  configDir: dir,
  sipPort,
});

Deno.test("several Asterisk servers behind one svc, through the real app", async (t) => {
  const peers: Record<string, TinyAsterisk> = { main: tinyAsterisk(), b: tinyAsterisk() };
  const root = await Deno.makeTempDir({ prefix: "svc-servers-" });
  const dirs = { main: `${root}/main`, b: `${root}/b`, c: `${root}/c` };
  const file = `${root}/servers.json`;
  const listed = [
    server("main", peers.main!.port, dirs.main, 5060),
    server("b", peers.b!.port, dirs.b, 5070),
  ];
  await Deno.writeTextFile(file, JSON.stringify(listed));
  const ctx = await setup({ SVC_PLATFORM: "asterisk", SVC_ASTERISK_SERVERS: file });
  const platform = ctx.services.platform as AsteriskServers;
  try {
    const w = await scenarioWorld(ctx);
    const events = capture(ctx);
    platform.start();
    await platform.firstSync();
    const ws = await webServiceUser(ctx, ["svc.rest.#", "svc.rest.metrics.read"]);
    const v2 = apiCall(ctx, "/svc/api/2.0", await login(ctx, "webservice", ws.login));
    await login(ctx, "login", "alice");
    await login(ctx, "login", "bob");
    const bobLine = w.bob.line_ids[0]!;
    const aliceLine = w.alice.line_ids[0]!;

    await t.step("/ready lists the servers, the main one first", async () => {
      const ready = await ctx.app.request("/ready");
      assert.equal(ready.status, 200, await ready.clone().text());
      assert.deepEqual(await ready.json(), {
        status: "ready",
        servers: [{ name: "main", state: "ready" }, { name: "b", state: "ready" }],
      });
    });

    await t.step("a line shows its server as registrar: the main one by default", async () => {
      const line = await (await w.api.get(`/lines/${aliceLine}`)).json();
      assert.equal(line.registrar, "main");
      await expectConfdError(
        await w.api.put(`/lines/${bobLine}`, { registrar: "nowhere" }),
        400,
        /^Input Error - field 'registrar': Registrar was not found \('id': 'nowhere'\)$/,
      );
      await expectConfdError(
        await w.api.post("/lines", { context: "default", registrar: "nowhere" }),
        400,
        /Registrar was not found/,
      );
      const created = await w.api.create("/lines", { context: "default", registrar: "b" });
      assert.equal(created.registrar, "b");
      // `default` (and null) name the main server
      assert.equal((await w.api.put(`/lines/${created.id}`, { registrar: "default" })).status, 204);
      assert.equal((await (await w.api.get(`/lines/${created.id}`)).json()).registrar, "main");
      assert.equal((await w.api.delete(`/lines/${created.id}`)).status, 204);
    });

    await t.step("bob's line placed on b: each server's files, trunks both ways", async () => {
      assert.equal((await w.api.put(`/lines/${bobLine}`, { registrar: "b" })).status, 204);
      assert.equal((await (await w.api.get(`/lines/${bobLine}`)).json()).registrar, "b");
      // each file is written in turn: the dialplans may come a moment after the endpoints
      for (
        const [file, text] of [
          [`${dirs.b}/pjsip_svc.conf`, "[bob]"],
          [`${dirs.main}/pjsip_svc.conf`, "is on server b"],
          [`${dirs.main}/extensions_svc.conf`, "bob on server b"],
          [`${dirs.b}/extensions_svc.conf`, "1002,hint"],
        ] as const
      ) {
        await until(async () => (await read(file)).includes(text), 5000, `${text} in ${file}`);
      }
      const mainPjsip = await read(`${dirs.main}/pjsip_svc.conf`);
      const bPjsip = await read(`${dirs.b}/pjsip_svc.conf`);
      assert.match(mainPjsip, /^\[alice\]\ntype = endpoint$/m);
      assert.match(mainPjsip, /; SIP endpoint \d+ is on server b/);
      assert.doesNotMatch(bPjsip, /^\[alice\]$/m);
      // each side authenticates as itself with the same secret
      assert.match(mainPjsip, /^\[svc-trunk-b\]\ntype = endpoint$/m);
      assert.match(mainPjsip, /^from_user = svc-trunk-main$/m);
      assert.match(mainPjsip, /^contact = sip:127\.0\.0\.1:5070$/m);
      assert.match(bPjsip, /^from_user = svc-trunk-b$/m);
      assert.match(bPjsip, /^contact = sip:127\.0\.0\.1:5060$/m);
      const secrets = (text: string) => [...text.matchAll(/^password = ([0-9a-f]{40})$/gm)];
      assert.equal(secrets(mainPjsip).length, 2);
      assert.equal(secrets(mainPjsip)[0]![1], secrets(bPjsip)[0]![1]);
      // reaching bob from main: over the trunk, svc's call id in a header
      const mainExt = await read(`${dirs.main}/extensions_svc.conf`);
      assert.match(
        mainExt,
        /^exten => 1002,1,NoOp\(call to bob on server b\)\n same => n,Dial\(PJSIP\/\$\{EXTEN\}@svc-trunk-b,,b\(svc-trunk-out\^s\^1\)\)$/m,
      );
      assert.doesNotMatch(mainExt, /^exten => 1002,hint/m);
      assert.match(mainExt, /^\[svc-trunk-in\]\nexten => 1001,1,Set\(__SVC_CALL=/m);
      const bExt = await read(`${dirs.b}/extensions_svc.conf`);
      assert.match(bExt, /^exten => 1002,hint,PJSIP\/bob$/m);
      assert.match(bExt, /^exten => 1001,1,NoOp\(call to alice on server main\)$/m);
      // the queue lives on main: b dials its number over the trunk, writes no queue
      assert.match(bExt, /^exten => 3001,1,NoOp\(queue support on server main\)$/m);
      assert.doesNotMatch(await read(`${dirs.b}/queues_svc.conf`), /^\[support\]$/m);
      assert.match(await read(`${dirs.main}/queues_svc.conf`), /^\[support\]$/m);
      // no trunk secret, no AMI secret in any log line
      const secret = secrets(mainPjsip)[0]![1]!;
      assert.ok(!ctx.logs.some((line) => line.includes(secret) || line.includes("ami-secret")));
    });

    await t.step("each user's commands go to the user's server", async () => {
      const before = {
        main: peers.main!.sent("Originate").length,
        b: peers.b!.sent("Originate").length,
      };
      assert.equal((await v2("POST", "/dial/user/alice", { username: "bob" })).status, 200);
      assert.equal((await v2("POST", "/dial/number/bob", { destination: "1001" })).status, 200);
      const originates = {
        main: peers.main!.sent("Originate").slice(before.main),
        b: peers.b!.sent("Originate").slice(before.b),
      };
      assert.equal(originates.main.length, 1);
      assert.equal(originates.b.length, 1);
      assert.ok(
        originates.main[0]!.some(([key, value]) => key === "Channel" && value === "PJSIP/alice"),
      );
      assert.ok(
        originates.b[0]!.some(([key, value]) => key === "Channel" && value === "PJSIP/bob"),
      );
      const dnd = peers.b!.sent("DBPut").length;
      assert.equal((await v2("POST", "/dnd/bob", { state: true })).status, 200);
      await until(() => peers.b!.sent("DBPut").length > dnd, 2000, "bob's DND on b");
      assert.equal((await v2("POST", "/dnd/bob", { state: false })).status, 200);
      // bob's voicemail box: its messages are left on b, so its counts are asked of b
      const box = await w.api.create("/voicemails", {
        name: "bob",
        number: "1002",
        context: "default",
      });
      assert.equal((await w.api.put(`/users/${w.bob.id}/voicemails/${box.id}`)).status, 204);
      const asked = () => ({
        main: peers.main!.sent("MailboxCount").length,
        b: peers.b!.sent("MailboxCount").length,
      });
      const before2 = asked();
      await platform.voicemailCounts(box.id);
      assert.deepEqual(asked(), { main: before2.main, b: before2.b + 1 });
    });

    await t.step("a call from main keeps main's id on b (SvcLink): one linkedId", async () => {
      events.splice(0);
      peers.b!.send(
        {
          Event: "Newchannel",
          Channel: "PJSIP/svc-trunk-main-00000001",
          ChannelState: "0",
          Uniqueid: "b.1",
          Linkedid: "b.1",
          CallerIDNum: "1001",
          Exten: "1002",
          Context: "svc-trunk-in",
        },
        {
          Event: "UserEvent",
          UserEvent: "SvcLink",
          Channel: "PJSIP/svc-trunk-main-00000001",
          Uniqueid: "b.1",
          Linkedid: "b.1",
          Call: "main-call-1",
        },
        ...channel("PJSIP/bob-00000002", "b.2", "b.1", 5),
      );
      await platform.settled();
      await until(
        () => events.some((event) => event.kind === "phone" && event.username === "bob"),
        2000,
        "bob's ringing",
      );
      const ringing = events.find((event): event is PhoneEvent =>
        event.kind === "phone" && event.username === "bob"
      )!;
      assert.equal(ringing.eventType, "EventRinging");
      assert.equal(ringing.linkedId, "main-call-1");
      peers.b!.send(
        {
          Event: "Hangup",
          Channel: "PJSIP/bob-00000002",
          Uniqueid: "b.2",
          Linkedid: "b.1",
          Cause: "16",
        },
        {
          Event: "Hangup",
          Channel: "PJSIP/svc-trunk-main-00000001",
          Uniqueid: "b.1",
          Linkedid: "b.1",
          Cause: "16",
        },
      );
      await until(
        () => events.some((event) => event.kind === "call_ended"),
        2000,
        "the call's end",
      );
      const ended = events.filter((event) => event.kind === "call_ended");
      assert.deepEqual(ended.map((event) => event.linkedId), ["main-call-1"]);
    });

    await t.step(
      "a call placed on bob's behalf on main (SvcLink Dialled, SvcEstablished): checked fields",
      async () => {
        /** A trunk call to bob from main, its SvcLink saying `dialled`; bob's events. */
        const placed = async (n: number, dialled: string) => {
          events.splice(0);
          const [trunk, phone] = [`b.${n}0`, `b.${n}1`];
          peers.b!.send(
            {
              Event: "Newchannel",
              Channel: `PJSIP/svc-trunk-main-0000000${n}`,
              ChannelState: "0",
              Uniqueid: trunk,
              Linkedid: trunk,
              CallerIDNum: "3001",
              Exten: "1002",
              Context: "svc-trunk-in",
            },
            {
              Event: "UserEvent",
              UserEvent: "SvcLink",
              Uniqueid: trunk,
              Linkedid: trunk,
              Call: `main-call-${n}`,
              Agent: "1",
              Dialled: dialled,
            },
            ...channel(`PJSIP/bob-0000000${n}`, phone, trunk, 5),
            ...channel(`PJSIP/bob-0000000${n}`, phone, trunk, 6).slice(1),
          );
          await platform.settled();
          await until(() => bobs().length === 2, 2000, "bob's ringing and answer");
          return { trunk, phone };
        };
        const bobs = () =>
          events.filter((event): event is PhoneEvent =>
            event.kind === "phone" && event.username === "bob"
          );
        const hangup = async (uniqueIds: string[], linkedId: string) => {
          peers.b!.send(
            ...uniqueIds.map((id) => ({ Event: "Hangup", Uniqueid: id, Linkedid: linkedId })),
          );
          await until(() => events.some((e) => e.kind === "call_ended"), 2000, "its end");
        };

        // no number: an ordinary call to bob (he talks with the trunk's caller once he answers)
        const bad = await placed(3, "1003,x;y");
        assert.deepEqual(bobs().map((e) => [e.eventType, e.otherDN]), [
          ["EventRinging", "3001"],
          ["EventEstablished", "3001"],
        ]);
        await hangup([bad.phone, bad.trunk], bad.trunk);

        // a number: bob's phone shows it and dials it when he answers, established when told
        const good = await placed(4, "1003");
        assert.deepEqual(bobs().map((e) => [e.eventType, e.otherDN]), [
          ["EventRinging", "1003"],
          ["EventDialing", "1003"],
        ]);
        const established = (fields: Record<string, string>) => {
          peers.b!.send({ Event: "UserEvent", UserEvent: "SvcEstablished", ...fields });
          return platform.settled();
        };
        await established({ Call: "no-such-call", By: "carol" });
        await established({ Call: "", By: "" });
        assert.equal(bobs().length, 2, "a call svc does not know changes nothing");
        await established({ Call: "main-call-4", By: "<carol>, x" });
        await until(() => bobs().length === 3, 2000, "bob established");
        assert.deepEqual(bobs().map((e) => [e.eventType, e.linkedId]).at(-1), [
          "EventEstablished",
          "main-call-4",
        ]);
        await established({ Call: "main-call-4", By: "carol" });
        assert.equal(bobs().length, 3, "told twice: established once");
        await hangup([good.phone, good.trunk], good.trunk);
        // the queue's server keeps the record of a call placed there
        const ended = events.filter((e) => e.kind === "call_ended");
        assert.deepEqual(ended.map((e) => e.kind === "call_ended" && e.records.length), [0]);
      },
    );

    await t.step(
      "bob's phone calls main's queue: in when svc says so, whatever the trunk tells after",
      async () => {
        events.splice(0);
        const bobs = () =>
          events.flatMap((e) =>
            e.kind === "phone" && e.username === "bob" ? [[e.eventType, e.otherDN]] : []
          );
        const bob = { Channel: "PJSIP/bob-00000009", Uniqueid: "b.90", Linkedid: "b.90" };
        const trunk = {
          Channel: "PJSIP/svc-trunk-main-00000009",
          Uniqueid: "b.91",
          Linkedid: "b.90",
        };
        peers.b!.send(
          { Event: "Newchannel", ...bob, ChannelState: "6", Context: "default", Exten: "s" },
          { Event: "Newexten", ...bob, Context: "default", Exten: "3001", Application: "NoOp" },
          { Event: "Newchannel", ...trunk, ChannelState: "0", CallerIDNum: "3001" },
          { Event: "Newstate", ...trunk, ChannelState: "6", CallerIDNum: "3001" },
          // the queue answers the trunk first: bob is not in yet
          {
            Event: "DialEnd",
            ...bob,
            DestChannel: trunk.Channel,
            DestUniqueid: trunk.Uniqueid,
            DialStatus: "ANSWER",
          },
          { Event: "BridgeEnter", ...bob, BridgeUniqueid: "bridge-9" },
          { Event: "BridgeEnter", ...trunk, BridgeUniqueid: "bridge-9" },
        );
        await platform.settled();
        await until(() => bobs().length === 1, 2000, "bob dialling");
        peers.b!.send({
          Event: "UserEvent",
          UserEvent: "SvcEstablished",
          Call: "b.90",
          By: "carol",
        });
        await until(() => bobs().length === 2, 2000, "bob established");
        // the trunk then tells of carol, the agent the queue connected: no new party for bob
        peers.b!.send({ Event: "NewConnectedLine", ...bob, ConnectedLineNum: "1003" });
        await platform.settled();
        assert.deepEqual(bobs(), [["EventDialing", "3001"], ["EventEstablished", "3001"]]);
        // a transfer there to alice is one
        peers.b!.send({ Event: "NewConnectedLine", ...bob, ConnectedLineNum: "1001" });
        await until(() => bobs().length === 3, 2000, "bob told of alice");
        assert.deepEqual(bobs().at(-1), ["EventEstablished", "1001"]);
        peers.b!.send(
          { Event: "Hangup", ...trunk, Cause: "16" },
          { Event: "Hangup", ...bob, Cause: "16" },
        );
        await until(() => events.some((e) => e.kind === "call_ended"), 2000, "its end");
      },
    );

    await t.step(
      "b down: bob's routes 503 Unreachable, alice's work; /ready, metrics",
      async () => {
        await peers.b!.kill();
        await until(() => !platform.reachable(w.bob), 10_000, "b seen down");
        for (
          const [path, body] of [
            ["/dnd/bob", { state: true }],
            ["/dial/user/bob", { username: "alice" }],
          ] as const
        ) {
          const response = await v2("POST", path, body);
          assert.equal(response.status, 503, path);
          assert.deepEqual(await response.json(), {
            error: "Unreachable",
            message: "the telephony platform is unreachable",
          });
        }
        assert.equal((await v2("POST", "/dnd/alice", { state: true })).status, 200);
        assert.equal((await v2("POST", "/dnd/alice", { state: false })).status, 200);
        const ready = await ctx.app.request("/ready");
        assert.equal(ready.status, 200);
        assert.deepEqual((await ready.json()).servers, [
          { name: "main", state: "ready" },
          { name: "b", state: "disconnected" },
        ]);
        const scraped = await (await ctx.app.request("/metrics", {
          headers: { Authorization: `Bearer ${await login(ctx, "webservice", ws.login)}` },
        })).text();
        assert.match(scraped, /^svc_platform_server_state\{server="b",state="disconnected"\} 1$/m);
        assert.match(scraped, /^svc_platform_server_state\{server="main",state="ready"\} 1$/m);
      },
    );

    await t.step("b back: resynced within 5 s, bob's DND written again", async () => {
      peers.b = tinyAsterisk(listed[1]!.amiPort);
      const started = performance.now();
      await until(() => platform.reachable(w.bob), 5000, "b back");
      assert.ok(performance.now() - started < 5000);
      assert.ok(peers.b.sent("DBGetTree").length > 0, "resync read the AstDB");
      assert.equal((await v2("POST", "/dnd/bob", { state: false })).status, 200);
    });

    await t.step(
      "a server added to the file: started without restart, its files written",
      async () => {
        peers.c = tinyAsterisk();
        await Deno.writeTextFile(
          file,
          JSON.stringify([...listed, server("c", peers.c.port, dirs.c, 5080)]),
        );
        await platform.reloadNow();
        await until(() => platform.server("c")?.reachable() ?? false, 5000, "c connected");
        assert.deepEqual(platform.servers().map((each) => each.name), ["main", "b", "c"]);
        await until(
          async () => (await read(`${dirs.c}/pjsip_svc.conf`)).includes("[svc-trunk-b]"),
          5000,
          "c's trunks",
        );
        await until(
          async () => (await read(`${dirs.main}/pjsip_svc.conf`)).includes("[svc-trunk-c]"),
          5000,
          "main's trunk to c",
        );
      },
    );

    await t.step("a bad file at run time: logged, the servers keep running", async () => {
      await Deno.writeTextFile(file, "[{");
      await platform.reloadNow();
      assert.deepEqual(platform.servers().map((each) => each.name), ["main", "b", "c"]);
      assert.ok(ctx.logs.some((line) => line.includes("servers file not used")));
    });
  } finally {
    await platform.close();
    ctx.services.store.close();
    for (const peer of Object.values(peers)) await peer.kill().catch(() => {});
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("SVC_ASTERISK_SERVERS: refused settings and files, each with its reason", async (t) => {
  await t.step("needs SVC_PLATFORM=asterisk; replaces the single server's settings", () => {
    assert.throws(
      () => loadConfig({ SVC_ASTERISK_SERVERS: "/tmp/servers.json" }),
      (error) =>
        error instanceof ConfigError && error.message ===
          "SVC_ASTERISK_SERVERS: needs SVC_PLATFORM=asterisk",
    );
    const config = loadConfig({ SVC_PLATFORM: "asterisk", SVC_ASTERISK_SERVERS: "/x.json" });
    assert.equal(config.asteriskServers, "/x.json");
  });

  await t.step("a file missing or unusable stops the start, naming the setting", async () => {
    for (
      const [text, reason] of [
        [null, /cannot be read \(NotFound\)$/],
        ["{", /is not valid JSON$/],
        ["[]", /must hold a non-empty JSON array of servers$/],
      ] as const
    ) {
      const dir = await Deno.makeTempDir();
      const path = `${dir}/servers.json`;
      if (text !== null) await Deno.writeTextFile(path, text);
      const config = loadConfig({
        SVC_KV: ":memory:",
        SVC_PLATFORM: "asterisk",
        SVC_ASTERISK_SERVERS: path,
      });
      await assert.rejects(
        () => createServices(config),
        (error) =>
          error instanceof ConfigError && error.setting === "SVC_ASTERISK_SERVERS" &&
          reason.test(error.message),
      );
      await Deno.remove(dir, { recursive: true });
    }
  });

  await t.step("each server checked: names, fields, ports; no secret in a message", () => {
    const ok = server("main", 5038, "/tmp/m", 5060);
    const cases: [unknown, RegExp][] = [
      [[{}], /^server 1: name must be a non-empty string$/],
      [[{ ...ok, name: "Main!" }], /^server 1: name must be 1 to 32 lowercase/],
      [[ok, ok], /^server 2: name main is used twice$/],
      [[{ ...ok, amiPort: 0 }], /^server 1: amiPort must be an integer from 1 to 65535$/],
      [[{ ...ok, sipPort: "x" }], /^server 1: sipPort must be an integer/],
      [[{ ...ok, amiSecret: "" }], /^server 1: amiSecret must be a non-empty string$/],
      [[{ ...ok, extra: 1 }], /^server 1: unknown field "extra"$/],
      [[{ ...ok, amiHost: "a b" }], /^server 1 \(main\): amiHost is not a host$/],
      [["main"], /^server 1 must be an object$/],
    ];
    for (const [value, reason] of cases) {
      assert.throws(() => parseServers(JSON.stringify(value)), (error: Error) => {
        assert.match(error.message, reason);
        assert.ok(!error.message.includes("main-ami-secret"));
        return true;
      });
    }
    const [parsed] = parseServers(JSON.stringify([{ ...ok, sipPort: undefined }]));
    assert.deepEqual(parsed, {
      ...ok,
      recordingsDir: "",
      sipHost: "127.0.0.1",
      sipPort: 5060,
    });
  });
});

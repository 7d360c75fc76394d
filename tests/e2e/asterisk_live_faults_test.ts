/**
 * A stalled or hostile Asterisk (issue 27 §3) on a REAL Asterisk 22 with real SIP phones, where
 * both are installed (as `asterisk_live_test.ts` finds them; skipped with a one-line notice
 * otherwise, as in CI, where `tests/lib/platform/asterisk/ami_faults_test.ts` proves the same on
 * the AMI replay):
 *
 * 1. Asterisk frozen (SIGSTOP) for 15 s in the middle of a call bob hangs up meanwhile, then
 *    resumed (SIGCONT): svc notices within 10 s, answers 503 `Unreachable` at once while it lasts,
 *    and afterwards resyncs: each phone event of the call once, the history written, no call open.
 * 2. A half-open AMI connection (a relay between svc and Asterisk that stops passing anything,
 *    closing nothing; new connections get nowhere) while bob hangs up: the same.
 * 3. A flood of events svc does not use (100,000 UserEvents Asterisk sends for another AMI
 *    session's actions) during a call whose events carry a 1 MiB channel variable, and 300 more
 *    1 MiB events (added by the relay: Asterisk itself reads AMI lines of 1 KiB at most and
 *    dialplan arguments of 8 KiB): the call's events arrive in order, svc's memory stays bounded.
 *
 * svc is the real server process; it connects to Asterisk directly for 1, through the relay for
 * 2 and 3 (restarted on the same store).
 */
import assert from "node:assert/strict";
import { type Pbx, preparePbx } from "../peers/asterisk_pbx.ts";
import { livePeers } from "../peers/live_peers.ts";
import { type Phone, startPhone } from "../peers/baresip_phone.ts";
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

const { prefix: PREFIX, baresip: BARESIP, missing } = livePeers("asterisk_live_faults_test");

const ADMIN = { login: "admin", password: "asterisk-faults-admin" };
const METRICS_TOKEN = "asterisk-faults-metrics-token-of-32-chars-or-more";
const ALICE: Person = {
  username: "alice",
  password: "alice-pw",
  exten: "1001",
  secret: "alice-pw-sip",
};
const BOB: Person = { username: "bob", password: "bob-pw", exten: "1002", secret: "bob-pw-sip" };

/** The phone events of a call alice places to bob, both answering, ended by either. */
const ALICE_CALLS = ["EventDialing", "EventEstablished", "EventReleased"];
const BOB_ANSWERS = ["EventRinging", "EventEstablished", "EventReleased"];

/** What every command answers while Asterisk is unreachable. */
const UNREACHABLE = { error: "Unreachable", message: "the telephony platform is unreachable" };

// ---- a relay between svc and Asterisk's AMI ------------------------------------------------------

interface Pair {
  client: Deno.TcpConn;
  server: Deno.TcpConn;
  /** Half-open: nothing passes any more, nothing is closed. */
  dead: boolean;
  done: Promise<unknown>;
}

/**
 * A TCP relay to the AMI on `target`. `halfOpen()`: the connections open now pass nothing more
 * in either way (what arrives is dropped) and are not closed, new ones are accepted and get
 * nowhere, until `heal()` (the network back: the dead connections are closed). `hostile()`: what
 * Asterisk sends gets, on each message matching `bloat`, a `ChanVariable(SVC_BLOB)` header of 1
 * MiB (as manager.conf's `channelvars` would add), and after each message one event svc does not
 * use holding a 1 MiB value, `huge` times.
 */
function amiRelay(target: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const pairs = new Set<Pair>();
  let held: PromiseWithResolvers<void> | undefined;
  let bloat: RegExp | undefined;
  let huge = 0;
  const blob = "b".repeat(1 << 20);
  const hugeEvent =
    `Event: VarSet\r\nPrivilege: dialplan,all\r\nChannel: Local/blob-00000001;1\r\n` +
    `Uniqueid: 1700000000.77\r\nLinkedid: 1700000000.77\r\nVariable: BLOB\r\nValue: ${blob}\r\n\r\n`;
  const encoder = new TextEncoder();
  let hugeSent = 0;

  const write = async (conn: Deno.TcpConn, bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
  };

  /** svc → Asterisk as it comes. */
  const up = async (pair: Pair) => {
    const buffer = new Uint8Array(65536);
    for (;;) {
      const n = await pair.client.read(buffer).catch(() => null);
      if (n === null || pair.dead) return;
      await write(pair.server, buffer.subarray(0, n));
    }
  };

  /** Asterisk → svc, message by message (the banner rides with the first one). */
  const down = async (pair: Pair) => {
    const buffer = new Uint8Array(65536);
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const n = await pair.server.read(buffer).catch(() => null);
      if (n === null || pair.dead) return;
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
      if (bloat === undefined && huge === 0) {
        // as it came, up to the last message's end (the rest waits for its end)
        const last = text.lastIndexOf("\r\n\r\n");
        if (last < 0) continue;
        await write(pair.client, encoder.encode(text.slice(0, last + 4)));
        text = text.slice(last + 4);
        continue;
      }
      const out: string[] = [];
      let pos = 0;
      for (let end = text.indexOf("\r\n\r\n"); end >= 0; end = text.indexOf("\r\n\r\n", pos)) {
        const message = text.slice(pos, end + 4);
        pos = end + 4;
        out.push(
          bloat?.test(message)
            ? `${message.slice(0, -2)}ChanVariable(SVC_BLOB): ${blob}\r\n\r\n`
            : message,
        );
        if (huge > 0) {
          huge--;
          hugeSent++;
          out.push(hugeEvent);
        }
      }
      text = text.slice(pos);
      for (const part of out) await write(pair.client, encoder.encode(part));
    }
  };

  const accepting = (async () => {
    for await (const client of listener) {
      while (held) await held.promise;
      let server: Deno.TcpConn;
      try {
        server = await Deno.connect({ hostname: "127.0.0.1", port: target });
      } catch {
        client.close();
        continue;
      }
      const pair: Pair = { client, server, dead: false, done: Promise.resolve() };
      pair.done = Promise.allSettled([up(pair), down(pair)]).then(() => {
        if (pair.dead) return; // closed by heal() or close()
        for (const conn of [client, server]) {
          try {
            conn.close();
          } catch { /* closed */ }
        }
        pairs.delete(pair);
      });
      pairs.add(pair);
    }
  })();

  const closePair = (pair: Pair) => {
    for (const conn of [pair.client, pair.server]) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    pairs.delete(pair);
  };

  return {
    port: (listener.addr as Deno.NetAddr).port,
    get hugeSent() {
      return hugeSent;
    },
    halfOpen() {
      held ??= Promise.withResolvers();
      for (const pair of pairs) pair.dead = true;
    },
    get halfOpened() {
      return held !== undefined;
    },
    heal() {
      for (const pair of [...pairs]) if (pair.dead) closePair(pair);
      held?.resolve();
      held = undefined;
    },
    hostile(options: { bloat?: RegExp; huge?: number }) {
      bloat = options.bloat;
      huge = options.huge ?? 0;
    },
    async close() {
      listener.close();
      held?.resolve();
      held = undefined;
      for (const pair of [...pairs]) {
        pair.dead = true;
        closePair(pair);
      }
      await accepting.catch(() => {});
    },
  };
}

// ---- a second AMI session sending UserEvents: a flood Asterisk sends to every session ----------

/** Logs in to the AMI (events off) and has Asterisk send `count` UserEvents named FloodJunk. */
async function userEventFlood(pbx: Pbx, count: number): Promise<void> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: pbx.amiPort });
  const encoder = new TextEncoder();
  const write = async (text: string) => {
    const bytes = encoder.encode(text);
    for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
  };
  // what Asterisk answers is read and counted, so that it never waits on this session
  let answered = 0;
  const reading = (async () => {
    const buffer = new Uint8Array(65536);
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) return;
      text += decoder.decode(buffer.subarray(0, n), { stream: true });
      const parts = text.split("\r\n\r\n");
      text = parts.pop()!;
      answered += parts.filter((part) => part.includes("Response: ")).length;
    }
  })();
  try {
    await write(
      `Action: Login\r\nUsername: ${pbx.ami.username}\r\nSecret: ${pbx.ami.secret}\r\n` +
        "Events: off\r\n\r\n",
    );
    await until(() => answered >= 1, 5000, "the flood's login");
    const body = "j".repeat(900);
    const batch = 200;
    for (let sent = 0; sent < count; sent += batch) {
      let text = "";
      for (let i = sent; i < Math.min(count, sent + batch); i++) {
        text += `Action: UserEvent\r\nUserEvent: FloodJunk\r\nSeq: ${i}\r\nBody: ${body}\r\n\r\n`;
      }
      await write(text);
      // at most a few batches ahead of Asterisk's answers
      await until(() => answered >= sent - 4 * batch, 60_000, "Asterisk answering the flood");
    }
    await until(() => answered >= count + 1, 60_000, "the whole flood answered");
  } finally {
    conn.close();
    await reading;
  }
}

// ---- helpers ------------------------------------------------------------------------------------

/** Asterisk's process id, from its pid file. */
async function asteriskPid(pbx: Pbx): Promise<number> {
  const pid = Number((await Deno.readTextFile(`${pbx.workDir}/run/asterisk.pid`)).trim());
  assert.ok(pid > 0, "Asterisk's pid file");
  return pid;
}

/** The process state letter of `/proc/<pid>/stat` (`T`: stopped). */
async function processState(pid: number): Promise<string> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
}

/** Waits until each of alice and bob got their events of one call since `since`, then checks. */
async function expectOneCall(receiver: Receiver, since: number): Promise<void> {
  await until(
    () =>
      receiver.phone(since, "alice").length >= ALICE_CALLS.length &&
      receiver.phone(since, "bob").length >= BOB_ANSWERS.length,
    30_000,
    `the call's phone events; got ${JSON.stringify(receiver.phone(since))}`,
  );
  const types = (user: string) => receiver.phone(since, user).map((event) => event.eventType);
  assert.deepEqual(types("alice"), ALICE_CALLS, "alice's phone events, each once");
  assert.deepEqual(types("bob"), BOB_ANSWERS, "bob's phone events, each once");
  const linkedIds = new Set(receiver.phone(since).map((event) => event.linkedId));
  assert.equal(linkedIds.size, 1, "one call");
}

Deno.test({
  name: "on a real Asterisk: frozen, half-open, flooded with events and 1 MiB values",
  ignore: missing,
  // child processes' pipes and the phones' sockets close asynchronously; everything is reaped
  // in `finally`
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const step = async (name: string, fn: () => Promise<void>) => {
      if (!await t.step(name, fn)) throw new Error(`step failed: ${name}`);
    };
    const asterisk = await preparePbx({ prefix: PREFIX! });
    const { configDir, workDir } = asterisk;
    const receiver = eventReceiver();
    const phones: Record<string, Phone> = {};
    let server: RunningServer | undefined;
    let relay: ReturnType<typeof amiRelay> | undefined;
    let frozenPid: number | undefined;
    const tellPeers = () => {
      const tail = (lines: string[]) => lines.slice(-40).join("\n");
      console.error(`--- asterisk\n${tail(asterisk.output)}`);
      for (const phone of Object.values(phones)) {
        console.error(`--- ${phone.process.name}\n${tail(phone.process.output)}`);
      }
      const svcLines = server?.stderrLines.filter((line) => !line.includes('"msg":"request"'));
      if (svcLines) console.error(`--- svc (request lines left out)\n${tail(svcLines)}`);
    };
    /** svc on the store of this test, its AMI at `amiPort` (Asterisk's or the relay's). */
    const startSvc = (amiPort: number) =>
      startServer({
        SVC_KV: `${workDir}/svc.kv`,
        SVC_ADMIN_LOGIN: ADMIN.login,
        SVC_ADMIN_PASSWORD: ADMIN.password,
        SVC_EVENT_URL: receiver.url,
        SVC_METRICS_TOKEN: METRICS_TOKEN,
        SVC_PLATFORM: "asterisk",
        SVC_AMI_PORT: String(amiPort),
        SVC_AMI_USERNAME: asterisk.ami.username,
        SVC_AMI_SECRET: asterisk.ami.secret,
        SVC_ASTERISK_CONFIG_DIR: configDir,
        // SVC_AMI_KEEPALIVE_MS and SVC_AMI_TIMEOUT_MS left at their defaults (4 s, 5 s)
      });
    try {
      server = await startSvc(asterisk.amiPort);
      await until(
        async () =>
          (await Promise.all(
            ["pjsip_svc.conf", "extensions_svc.conf", "queues_svc.conf"].map((file) =>
              Deno.readTextFile(`${configDir}/${file}`).catch(() => "")
            ),
          )).every((text) => text.startsWith("; ")),
        5_000,
        "svc's three files written before Asterisk starts",
      );
      await asterisk.start();
      let svc = server;
      const ready = async () => (await call(svc, "GET", "/ready")).status === 200;
      const unready = async () => (await call(svc, "GET", "/ready")).status === 503;
      await until(ready, 10_000, "svc connected to Asterisk");
      const admin = await login(svc, "webservice", ADMIN.login, ADMIN.password);
      const api = (method: string, path: string, body?: unknown, status = 200) =>
        expectStatus(status, svc, method, path, { token: admin, body });
      for (const person of [ALICE, BOB]) await phoneUser(svc, admin, person);
      await until(
        async () => /Endpoint:\s+bob\b/.test(await asterisk.cli("pjsip show endpoint bob")),
        10_000,
        "Asterisk reloaded svc's files",
      );
      for (const person of [ALICE, BOB]) {
        const { username: user, secret: password } = person;
        phones[user] = await startPhone({ pbx: asterisk, user, password, baresip: BARESIP! });
      }
      await until(() => asterisk.registered(["alice", "bob"]), 30_000, "alice and bob registered");
      const alice = phones.alice!.ctrl;
      const bob = phones.bob!.ctrl;
      let aliceToken = await login(svc, "login", ALICE.username, ALICE.password);
      const pbxIdle = () =>
        until(
          async () => /^0 active channels/m.test(await asterisk.cli("core show channels count")),
          30_000,
          "no channel left on Asterisk",
        );
      /** alice dials bob through svc, both phones answer by themselves: answers when both talk. */
      const aliceCallsBob = async () => {
        const since = receiver.mark();
        const bobSince = bob.mark();
        await api("POST", `${V2}/dial/user/alice`, { username: "bob" });
        await receiver.waitFor(
          since,
          (e) => e.username === "bob" && e.eventType === "EventEstablished",
          "bob talks",
        );
        await bob.waitEvent("CALL_ESTABLISHED", bobSince);
        return since;
      };
      const historyOf = async (user: string) =>
        (await api("GET", `${V2}/history/${user}?size=50`)).body.data.entries as unknown[];
      const noCallOpen = async () => {
        const calls = await expectStatus(200, svc, "GET", "/1.0/users/me/calls", {
          token: aliceToken,
          tokenHeader: "x-auth-token",
        });
        assert.deepEqual(calls.body.items, [], "no call of alice left open");
      };
      /** While Asterisk is unreachable: a dial is refused 503 Unreachable. */
      const refusedDial = async () => {
        const dial = await call(svc, "POST", `${V2}/dial/user/alice`, {
          token: admin,
          body: { username: "bob" },
        });
        assert.deepEqual([dial.status, dial.body], [503, UNREACHABLE]);
      };

      await step(
        "Asterisk frozen 15 s mid-call: noticed, 503 at once, resynced after",
        async () => {
          const historyBefore = [
            (await historyOf("alice")).length,
            (await historyOf("bob")).length,
          ];
          const since = await aliceCallsBob();
          const pid = await asteriskPid(asterisk);
          Deno.kill(pid, "SIGSTOP");
          frozenPid = pid;
          const frozenAt = performance.now();
          // bob hangs up while Asterisk is frozen: his BYE waits in its socket
          await bob.hangup();
          await until(unready, 12_000, "/ready 503 within 10 s of the freeze");
          const noticedMs = performance.now() - frozenAt;
          console.log(`asterisk_live_faults_test: freeze noticed after ${noticedMs.toFixed(0)} ms`);
          assert.deepEqual((await call(svc, "GET", "/ready")).body, {
            status: "unavailable",
            platform: "unreachable",
          });
          await refusedDial();
          assert.equal(await processState(pid), "T", "answered while Asterisk is still stopped");
          await sleep(Math.max(0, 15_000 - (performance.now() - frozenAt)));
          Deno.kill(pid, "SIGCONT");
          frozenPid = undefined;
          await until(ready, 20_000, "svc back once Asterisk resumed");
          await pbxIdle();
          await expectOneCall(receiver, since);
          await until(
            async () =>
              (await historyOf("alice")).length === historyBefore[0]! + 1 &&
              (await historyOf("bob")).length === historyBefore[1]! + 1,
            10_000,
            "the call in alice's and bob's history, once",
          );
          await noCallOpen();
          // a new call works, and nothing more of the frozen one came meanwhile
          const next = await aliceCallsBob();
          await alice.hangup();
          await pbxIdle();
          await expectOneCall(receiver, next);
          // the frozen call's events still once each, the next call's apart
          const frozenCall = receiver.phone(since).filter((e) =>
            e.linkedId === receiver.phone(since)[0]!.linkedId
          );
          const types = (user: string) =>
            frozenCall.filter((e) => e.username === user).map((e) => e.eventType);
          assert.deepEqual([types("alice"), types("bob")], [ALICE_CALLS, BOB_ANSWERS]);
        },
      );

      // svc again, through the relay this time (same store)
      await server.stop();
      relay = amiRelay(asterisk.amiPort);
      server = await startSvc(relay.port);
      svc = server;
      await until(ready, 10_000, "svc connected through the relay");
      aliceToken = await login(svc, "login", ALICE.username, ALICE.password);

      await step(
        "half-open AMI connection mid-call: noticed, 503 at once, resynced after",
        async () => {
          const since = await aliceCallsBob();
          const cutAt = performance.now();
          relay!.halfOpen();
          // Asterisk goes on: bob's hang-up ends the call there, svc sees none of it
          await bob.hangup();
          await pbxIdle();
          await until(unready, 12_000, "/ready 503 within 10 s of the connection's loss");
          const noticedMs = performance.now() - cutAt;
          console.log(
            `asterisk_live_faults_test: half-open noticed after ${noticedMs.toFixed(0)} ms`,
          );
          await refusedDial();
          assert.equal(relay!.halfOpened, true, "answered while the connection is still dead");
          const types = receiver.phone(since).map((event) => event.eventType);
          assert.ok(!types.includes("EventReleased"), "the end of the call not seen yet");
          relay!.heal();
          await until(ready, 20_000, "svc back once the network is");
          await expectOneCall(receiver, since);
          await noCallOpen();
        },
      );

      await step(
        "a flood of events svc does not use, 1 MiB values: the call's events in order, memory bounded",
        async () => {
          const rss = async () => {
            const metrics = await fetch(`${svc.baseUrl}/metrics`, {
              headers: { Authorization: `Bearer ${METRICS_TOKEN}` },
            });
            const text = await metrics.text();
            const line = text.split("\n").find((l) =>
              l.startsWith("process_resident_memory_bytes")
            );
            return Number(line?.split(" ")[1]);
          };
          const logsFrom = server!.stderrLines.length;
          const start = await rss();
          assert.ok(start > 0, "svc's RSS from /metrics");
          let peak = start;
          let sampling = true;
          const sampler = (async () => {
            while (sampling) {
              peak = Math.max(peak, await rss().catch(() => 0));
              await sleep(200);
            }
          })();
          try {
            relay!.hostile({
              bloat:
                /^Event: (Newchannel|Newstate|DialBegin|DialEnd|BridgeEnter|BridgeLeave|Hangup)\r\n/,
              huge: 300,
            });
            const flood = userEventFlood(asterisk, 100_000);
            const since = await aliceCallsBob();
            await bob.hangup();
            await pbxIdle();
            await expectOneCall(receiver, since);
            await flood;
            await until(() => relay!.hugeSent === 300, 60_000, "the 300 huge events sent");
            await noCallOpen();
          } finally {
            sampling = false;
            await sampler;
            relay!.hostile({});
          }
          const logs = server!.stderrLines.slice(logsFrom);
          const cut = logs.filter((line) => line.includes('"msg":"AMI line cut"'));
          assert.ok(cut.length > 0, "svc logged the cut lines");
          assert.ok(
            !logs.some((line) => line.includes('"msg":"AMI connection lost"')),
            "the connection held",
          );
          const grown = (peak - start) / (1 << 20);
          console.log(
            `asterisk_live_faults_test: RSS ${(start / (1 << 20)).toFixed(0)} MiB, peak ` +
              `${(peak / (1 << 20)).toFixed(0)} MiB through about 400 MB of AMI input`,
          );
          assert.ok(grown < 256, `svc's RSS grew by ${grown.toFixed(0)} MiB`);
        },
      );
    } catch (error) {
      tellPeers();
      throw error;
    } finally {
      if (frozenPid !== undefined) Deno.kill(frozenPid, "SIGCONT");
      await Promise.all(Object.values(phones).map((phone) => phone.stop()));
      if (server) await server.stop();
      await relay?.close();
      await asterisk.stop();
      await receiver.close();
    }
  },
});

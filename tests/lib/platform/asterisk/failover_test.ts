/**
 * Several svc processes on one store and one PBX (docs/asterisk.md, "Several svc processes"):
 * two full sets of services in this process, each with its own store handle on one KV file and
 * its own AMI connection to a peer that sends every event to every connection, as Asterisk does.
 * Every event gets the same id in both; when the lease holder's store writes fail, or its AMI
 * connection is lost while the other's is not, the other takes over within 5 s and every phone
 * event, agent state, history record and queue count of that time is written once, in order.
 * (A holder killed outright: `tests/e2e/asterisk_failover_test.ts`, with real processes.)
 */
import assert from "node:assert/strict";
import { prepareStore } from "../../../../lib/bootstrap.ts";
import { ManualClock, systemClock } from "../../../../lib/clock.ts";
import { loadConfig } from "../../../../lib/config.ts";
import type { EventMessage } from "../../../../lib/events/messages.ts";
import { logAfter } from "../../../../lib/events/outbox.ts";
import { createLogger } from "../../../../lib/log.ts";
import type { AsteriskPlatform } from "../../../../lib/platform/asterisk/mod.ts";
import type { PlatformEvent } from "../../../../lib/platform/port.ts";
import { createServices, type Services } from "../../../../lib/services.ts";
import { type CallRecord, lastCalls } from "../../../../lib/store/call_history.ts";
import { Store } from "../../../../lib/store/store.ts";
import { readCounters } from "../../../../lib/store/supervision.ts";
import { createApp } from "../../../../routes/mod.ts";
import type { TestContext } from "../../../helpers.ts";
import {
  type AmiBroadcast,
  recordedRound,
  startAmiBroadcast,
} from "../../../peers/ami_broadcast.ts";
import { scenarioWorld } from "../fixtures.ts";
import type { World } from "../scenarios.ts";

/** Waits until `test` holds, checking every 20 ms for at most `ms`. */
async function until(test: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!await test()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One svc process: its services on its own handle of the shared store file. */
interface SvcProcess {
  name: string;
  services: Services;
  store: Store;
  platform: AsteriskPlatform;
  logs: string[];
  configDir: string;
  close(): Promise<void>;
}

async function svcProcess(name: string, file: string, port: number): Promise<SvcProcess> {
  const configDir = await Deno.makeTempDir({ prefix: `svc-failover-${name}-` });
  const config = loadConfig({
    SVC_KV: file,
    SVC_PLATFORM: "asterisk",
    SVC_AMI_PORT: String(port),
    SVC_AMI_USERNAME: "admin",
    SVC_AMI_SECRET: "admin",
    SVC_ASTERISK_CONFIG_DIR: configDir,
  });
  const store = await Store.open(file);
  const logs: string[] = [];
  // real time: leases expire, as between processes
  const services = await createServices(config, {
    clock: systemClock,
    logger: createLogger("debug", (line) => logs.push(line)),
    store,
  });
  await prepareStore(services);
  const platform = services.platform as AsteriskPlatform;
  return {
    name,
    services,
    store,
    platform,
    logs,
    configDir,
    async close() {
      await platform.close();
      services.supervision.close();
      await services.events.close();
      store.close();
      await Deno.remove(configDir, { recursive: true });
    },
  };
}

/** The two processes on one store and one peer, the scenario's people configured, both synced. */
async function twoProcesses() {
  const dir = await Deno.makeTempDir({ prefix: "svc-failover-" });
  const file = `${dir}/svc.kv`;
  const peer = startAmiBroadcast();
  const a = await svcProcess("a", file, peer.port);
  const b = await svcProcess("b", file, peer.port);
  const ctx: TestContext = {
    services: a.services,
    app: createApp(a.services),
    clock: new ManualClock(),
    logs: a.logs,
  };
  const w = await scenarioWorld(ctx);
  a.platform.start();
  await a.platform.firstSync();
  // a holds the lease, connected (its next renewal says so), before b starts
  await until(() => leaseStrength(a.store).then((s) => s === 1), 3000, "a holds the lease");
  b.platform.start();
  await b.platform.firstSync();
  await until(() => peer.marks().length === 2, 3000, "both marks sent");
  await a.platform.settled();
  await b.platform.settled();
  assert.equal(a.platform.leading(), true);
  assert.equal(b.platform.leading(), false);
  return {
    a,
    b,
    w,
    peer,
    async close() {
      await a.close().catch(() => {});
      await b.close();
      await peer.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

async function leaseStrength(store: Store): Promise<number | null> {
  const lease = await store.get<{ strength?: number }>(["platform_lease"]);
  return lease.value?.strength ?? null;
}

/** Plays `rounds` of the recorded calls (02: alice calls bob; 12: an agent and its queue). */
async function play(peer: AmiBroadcast, rounds: number[], gapMs = 1): Promise<void> {
  for (const round of rounds) {
    for (const [salt, name] of ["02-dial-answered", "12-queue-agent"].entries()) {
      for (const event of await recordedRound(name, round, salt)) {
        peer.broadcast(event);
        if (gapMs > 0) await sleep(gapMs);
      }
    }
  }
}

/** The round of an id made by `recordedRound` (`2000000000 + round * 10 + salt`). */
const roundOf = (id: string) => Math.floor((Number(id.split(".")[0]) - 2_000_000_000) / 10);

/** What the store holds of the rounds: events of the log per user, history, queue counts. */
async function written(store: Store, w: World) {
  const log = [];
  for (let after: string | null = null;;) {
    const page = await logAfter(store, after, 1000);
    log.push(...page);
    if (page.length < 1000) break;
    after = page.at(-1)!.id;
  }
  const perUser = new Map<string, string[]>();
  for (const { event } of log) {
    const { username, message } = event as EventMessage;
    let line: string;
    if (message.msgType === "PhoneEvent") {
      const { eventType, linkedId, uniqueId } = message.ctiMessage;
      line = `${roundOf(linkedId)} ${eventType} ${uniqueId.split(".")[1]}`;
    } else if (message.msgType === "AgentStateEvent") line = `agent ${message.name}`;
    else continue;
    perUser.set(username, [...perUser.get(username) ?? [], line]);
  }
  const history = new Map<string, readonly CallRecord[]>();
  for (const user of [w.alice, w.bob, w.carol]) {
    history.set(user.username!, await lastCalls(store, user.id, 1000));
  }
  const counters = await readCounters(store, "2000-01-01", "2100-01-01");
  const queue = counters.queues.find((row) => row.id === w.queue.id)?.counters;
  return { perUser, history, queue, total: log.length };
}

/**
 * Asserts that what the rounds `rounds` wrote is each round's share once: every user's phone
 * events are the first round's, round after round, in order; as many agent states, history
 * records and queue counts per round as the first round wrote.
 */
function assertEachRoundOnce(
  what: Awaited<ReturnType<typeof written>>,
  first: Awaited<ReturnType<typeof written>>,
  rounds: number,
) {
  for (const [user, lines] of first.perUser) {
    const phone = lines.filter((line) => !line.startsWith("agent"));
    const agent = lines.filter((line) => line.startsWith("agent"));
    const expected = Array.from(
      { length: rounds },
      (_, round) => phone.map((line) => line.replace(/^\d+ /, `${round} `)),
    ).flat();
    const got = what.perUser.get(user) ?? [];
    assert.deepEqual(
      got.filter((line) => !line.startsWith("agent")),
      expected,
      `${user}'s phone events`,
    );
    assert.deepEqual(
      got.filter((line) => line.startsWith("agent")),
      Array.from({ length: rounds }, () => agent).flat(),
      `${user}'s agent states`,
    );
  }
  for (const [user, records] of first.history) {
    assert.equal(what.history.get(user)!.length, records.length * rounds, `${user}'s history`);
    const ids = what.history.get(user)!.map((record) => record.id);
    assert.equal(new Set(ids).size, ids.length, `${user}'s calls once each`);
  }
  // counts (times depend on how fast the rounds were played)
  const counts = Object.entries(first.queue ?? {}).filter(([stat]) => !stat.endsWith("_ms"));
  assert.ok(counts.some(([, value]) => value > 0), "queue calls counted");
  for (const [stat, value] of counts) {
    assert.equal(what.queue?.[stat as keyof typeof what.queue], value * rounds, `queue ${stat}`);
  }
}

Deno.test({
  name:
    "every process names every event alike: the ids of the holder's events and the follower's, agent commands and dials through the follower included",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const t = await twoProcesses();
    try {
      await play(t.peer, [0, 1]);
      // an agent command through the follower: its event comes from the PBX's, in both
      await t.b.platform.agentLogin(t.w.agent, "1003", "default");
      await t.b.platform.agentPause(t.w.agent.id, "lunch");
      await t.b.platform.agentLogout(t.w.agent.id);
      // a dial through the follower: the holder knows it as the follower does (SvcDial), its
      // USR_ variables included; its channels' events are those of session 02
      const { linkedId } = await t.b.platform.dialUser(t.w.alice, t.w.bob, { crm: "7" });
      for (const event of await recordedRound("02-dial-answered", 9)) {
        t.peer.broadcast(event.replace(/\b2000000090\.0\b/g, linkedId));
      }
      await t.a.platform.settled();
      await t.b.platform.settled();
      const dialled = t.a.platform.seenEvents().flatMap((e) =>
        e.kind === "phone" && e.linkedId === linkedId ? [[e.username, e.eventType, e.userData]] : []
      );
      const userData = (user: { id: number }) => ({
        PLATFORM_USERID: String(user.id),
        USR_crm: "7",
      });
      assert.deepEqual(dialled, [
        ["alice", "EventDialing", userData(t.w.alice)],
        ["bob", "EventRinging", userData(t.w.bob)],
        ["alice", "EventEstablished", userData(t.w.alice)],
        ["bob", "EventEstablished", userData(t.w.bob)],
        ["alice", "EventReleased", userData(t.w.alice)],
        ["bob", "EventReleased", userData(t.w.bob)],
      ]);
      const ids = (p: AsteriskPlatform) => p.seenEvents().map((e: PlatformEvent) => e.id!);
      const [ofA, ofB] = [ids(t.a.platform), ids(t.b.platform)];
      assert.ok(ofA.length > 50, `events seen: ${ofA.length}`);
      assert.deepEqual(ofB, ofA);
      assert.equal(new Set(ofA).size, ofA.length, "an id each");
      const agentStates = t.b.platform.seenEvents().flatMap((e) =>
        e.kind === "agent" && e.phoneNb === "1003" ? [e.name] : []
      );
      assert.deepEqual(agentStates, ["AgentReady", "AgentOnPause", "AgentLoggedOut"]);
    } finally {
      await t.close();
    }
  },
});

for (
  const [fault, breakHolder] of [
    [
      "its store writes fail",
      (t: Awaited<ReturnType<typeof twoProcesses>>) => t.a.store.close(),
    ],
    [
      "its AMI connection is lost while the other's is not",
      (t: Awaited<ReturnType<typeof twoProcesses>>) => {
        t.peer.refuseLogins(3000);
        assert.equal(t.peer.drop(t.peer.marks()[0]!.slice(0, 8)), 1);
      },
    ],
  ] as const
) {
  Deno.test({
    name: `the lease holder ${fault}: the other takes over within 5 s, every event written once`,
    sanitizeOps: false,
    sanitizeResources: false,
    async fn() {
      const t = await twoProcesses();
      try {
        await play(t.peer, [0]);
        await t.a.platform.settled();
        const first = await written(t.b.store, t.w);
        assert.ok(first.total > 10, `round 0 wrote ${first.total} events`);

        breakHolder(t);
        const broken = performance.now();
        const playing = play(t.peer, [1, 2, 3, 4, 5, 6], 2);
        await until(() => t.b.platform.leading(), 5000, "b takes over");
        const takeover = performance.now() - broken;
        await playing;
        await t.b.platform.settled();
        await until(
          async () => {
            const now = await written(t.b.store, t.w);
            return now.total >= first.total * 7;
          },
          10_000,
          "every round written",
        );
        await sleep(500); // nothing more comes
        await t.b.platform.settled();
        assertEachRoundOnce(await written(t.b.store, t.w), first, 7);
        assert.ok(
          t.b.logs.some((line) => line.includes("platform events seen handed over")),
          "b handed over what it saw",
        );
        assert.ok(takeover < 5000, `took over after ${takeover} ms`);
      } finally {
        await t.close();
      }
    },
  });
}

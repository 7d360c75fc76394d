/**
 * Platform events written once (lib/store/platform_done.ts, docs/asterisk.md "Several svc
 * processes"): each listener writing platform events to the store — the outbox and event log
 * (`EventExport.publishOnce`), the call history (`recordCallsOnce`), the supervision counters
 * (`Supervision.handle`) — writes an event with an id once, whatever the number of times and
 * processes (store handles) handing it over, in the same commit as the event's mark; and the
 * lease a process better placed takes from one placed worse.
 */
import assert from "node:assert/strict";
import { ManualClock } from "../../lib/clock.ts";
import { EventExport } from "../../lib/events/export.ts";
import { type EventMessage, platformMessage } from "../../lib/events/messages.ts";
import { logAfter } from "../../lib/events/outbox.ts";
import { createLogger } from "../../lib/log.ts";
import type {
  AgentStateEvent,
  CallEnded,
  PhoneEvent,
  PlatformEvent,
  QueueCallEvent,
} from "../../lib/platform/port.ts";
import { type CallRecord, lastCalls, recordCallsOnce } from "../../lib/store/call_history.ts";
import { takeLeaseAt } from "../../lib/store/lease.ts";
import {
  DONE_TTL_MS,
  doneAmong,
  doneKey,
  MAX_ONCE_PER_COMMIT,
  writeOnce,
} from "../../lib/store/platform_done.ts";
import { Store } from "../../lib/store/store.ts";
import { readCounters } from "../../lib/store/supervision.ts";
import { setup } from "../helpers.ts";
import { agentAndQueue, phoneUser } from "./platform/fixtures.ts";
import { confd } from "../helpers.ts";

/** Two handles on one store file: two processes. */
async function twoHandles() {
  const dir = await Deno.makeTempDir({ prefix: "svc-done-" });
  const [one, two] = [await Store.open(`${dir}/svc.kv`), await Store.open(`${dir}/svc.kv`)];
  return {
    one,
    two,
    async close() {
      one.close();
      two.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

const phone = (n: number, username = "alice"): PhoneEvent => ({
  kind: "phone",
  id: `mark-1.${n}:p/1/EventRinging/u${n}`,
  userId: 1,
  username,
  eventType: "EventRinging",
  DN: "1001",
  otherDN: "1002",
  otherDName: "",
  linkedId: `call-${n}`,
  uniqueId: `u${n}`,
  userData: {},
  recordState: "inactive",
});

Deno.test("writeOnce: each id once across handles, in order, 10 per commit; no id: always", async () => {
  const t = await twoHandles();
  try {
    const items = Array.from({ length: 25 }, (_, n) => ({ id: `e${n}`, n }));
    const commits = await writeOnce(t.one, "outbox", items, (op, chunk) => {
      for (const { n } of chunk) op.set(["written", n], n);
      return chunk.length;
    });
    assert.deepEqual(commits.map((c) => c.result), [10, 10, 5], "10 per commit at most");
    assert.equal(MAX_ONCE_PER_COMMIT, 10);
    // the same items again, through the other handle, with three new ones (one twice) and one
    // without id: only those are written
    const again = [...items, { id: "e25", n: 25 }, { id: "e25", n: 25 }, { id: undefined, n: 26 }];
    const more = await writeOnce(t.two, "outbox", again, (op, chunk) => {
      for (const { n } of chunk) op.set(["written", n], n);
    });
    assert.deepEqual(more.flatMap((c) => c.items.map((i) => i.n)), [25, 26]);
    assert.equal((await doneAmong(t.one, "outbox", ["e0", "e24", "e25", "nope"])).size, 3);
    // another consumer has its own marks
    assert.equal((await doneAmong(t.one, "history", ["e0"])).size, 0);
    // a mark written meanwhile (another process won the race): the commit is made again without
    await t.two.set(doneKey("outbox", "e27"), true, { expireIn: DONE_TTL_MS });
    const raced = await writeOnce(t.one, "outbox", [{ id: "e27" }, { id: "e28" }], () => {});
    assert.deepEqual(raced.flatMap((c) => c.items.map((i) => i.id)), ["e28"]);
  } finally {
    await t.close();
  }
});

Deno.test("publishOnce: a platform event's message reaches the outbox and the log once", async () => {
  const t = await twoHandles();
  const clock = new ManualClock();
  const exportOf = (store: Store) =>
    new EventExport({
      store,
      clock,
      logger: createLogger("error", () => {}),
      url: "http://127.0.0.1:9/events",
      secret: null,
      retentionMs: 3600_000,
    });
  const [a, b] = [exportOf(t.one), exportOf(t.two)];
  try {
    const messages = (events: PhoneEvent[]) =>
      events.map((event) => ({ id: event.id, message: platformMessage(event) }));
    const events = Array.from({ length: 14 }, (_, n) => phone(n));
    assert.equal(await a.publishOnce(messages(events.slice(0, 6))), 6);
    // the other process hands them all over (a takeover): only the 8 missing are written
    assert.equal(await b.publishOnce(messages(events)), 8);
    assert.equal(await a.publishOnce(messages(events)), 0);
    const logged = await logAfter(t.one, null, 100);
    assert.deepEqual(
      logged.map((entry) =>
        (entry.event as EventMessage & { message: { ctiMessage: PhoneEvent } })
          .message.ctiMessage.uniqueId
      ),
      events.map((event) => event.uniqueId),
      "once each, in order",
    );
    const outbox = await t.two.list({ prefix: ["outbox"] });
    assert.equal(outbox.length, 14);
    // a message without id is published each time, as publish does
    await a.publishOnce([{ id: undefined, message: platformMessage(phone(99)) }]);
    await a.publishOnce([{ id: undefined, message: platformMessage(phone(99)) }]);
    assert.equal((await logAfter(t.one, null, 100)).length, 16);
  } finally {
    await a.close();
    await b.close();
    await t.close();
  }
});

Deno.test("recordCallsOnce: a finished call's records are written once", async () => {
  const t = await twoHandles();
  try {
    const record = (userId: number, id: string): CallRecord => ({
      id,
      userId,
      startMs: 1000,
      answeredMs: null,
      endMs: 2000,
      srcUsername: "alice",
      dstUsername: "bob",
      srcNum: "1001",
      dstNum: "1002",
      status: "missed",
    });
    const ended = (n: number): CallEnded => ({
      kind: "call_ended",
      id: `mark-1.${n}:e/call-${n}`,
      linkedId: `call-${n}`,
      records: [record(1, `call-${n}`), record(2, `call-${n}`)],
    });
    assert.equal(await recordCallsOnce(t.one, [ended(1), ended(2)]), 2);
    // the same calls with another process's view of them (another start time): still once
    const seenElsewhere = [ended(1), ended(2), ended(3)].map((event) => ({
      ...event,
      records: event.records.map((r) => ({ ...r, startMs: 1500 })),
    }));
    assert.equal(await recordCallsOnce(t.two, seenElsewhere), 1);
    assert.deepEqual((await lastCalls(t.one, 1, 10)).map((r) => [r.id, r.startMs]), [
      ["call-3", 1500],
      ["call-2", 1000],
      ["call-1", 1000],
    ]);
  } finally {
    await t.close();
  }
});

Deno.test("supervision counts each queue call event and agent state once", async () => {
  const ctx = await setup();
  const t = { ctx, api: await confd(ctx) };
  const bob = await phoneUser(t, "bob", "1002");
  const { agent, queue } = await agentAndQueue(t, "8001", { name: "support", number: "3001" });
  const queueEvent = (event: QueueCallEvent["event"], n: number): QueueCallEvent => ({
    kind: "queue_call",
    id: `mark-1.${n}:q/${queue.id}/${event}/call-${n}`,
    event,
    queueId: queue.id,
    linkedId: `call-${n}`,
    callerNumber: "1001",
    callerName: "alice",
    waitMs: 2000,
    agentId: agent.id,
  });
  const agentEvent = (name: AgentStateEvent["name"], n: number): AgentStateEvent => ({
    kind: "agent",
    id: `mark-1.${n}:a/${agent.id}/${name}`,
    agentId: agent.id,
    agentNumber: "8001",
    name,
    phoneNb: "1002",
    username: bob.username!,
    queues: [queue.id],
    monitorState: "DISABLED",
  });
  const batch: PlatformEvent[] = [
    queueEvent("joined", 1),
    queueEvent("answered", 2),
    agentEvent("AgentReady", 3),
    agentEvent("AgentOnPause", 4),
  ];
  const { supervision, store } = ctx.services;
  await supervision.handle(batch);
  const once = await readCounters(store, "2000-01-01", "2100-01-01");
  await ctx.clock.advance(60_000);
  // handed over again (a takeover), with one event more: only that one counts
  await supervision.handle([...batch, agentEvent("AgentReady", 5)]);
  const twice = await readCounters(store, "2000-01-01", "2100-01-01");
  assert.deepEqual(twice.queues, once.queues, "the queue calls counted once");
  assert.equal(once.queues[0]?.counters.entered, 1);
  assert.equal(once.queues[0]?.counters.answered, 1);
  // the pause closed by the new AgentReady only: one minute, not the time since the first
  assert.equal(twice.agents[0]?.counters.pause_ms, 60_000);
});

Deno.test("the platform lease: a process placed better takes it from one placed worse", async () => {
  const store = await Store.open(":memory:");
  try {
    const key = ["platform_lease"];
    assert.equal((await takeLeaseAt(store, key, "a", 0, 3000, null, 0)).held, true);
    // as well placed (not connected either): it waits for the lease to end
    assert.equal((await takeLeaseAt(store, key, "b", 1000, 3000, null, 0)).held, false);
    // connected: it takes it now, and the one not connected cannot take it back
    assert.equal((await takeLeaseAt(store, key, "b", 1000, 3000, null, 1)).held, true);
    assert.equal((await takeLeaseAt(store, key, "a", 2000, 3000, null, 0)).held, false);
    assert.equal((await takeLeaseAt(store, key, "c", 2000, 3000, null, 1)).held, false);
    // a lease without strength (the outbox's) behaves as before
    assert.equal((await takeLeaseAt(store, ["other"], "a", 0, 3000)).held, true);
    assert.equal((await takeLeaseAt(store, ["other"], "b", 1000, 3000)).held, false);
    assert.equal((await takeLeaseAt(store, ["other"], "b", 3001, 3000)).held, true);
  } finally {
    store.close();
  }
});

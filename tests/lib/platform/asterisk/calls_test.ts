/**
 * The call tracker on recorded AMI streams for calls svc did not place: the events of a recorded
 * session handed to it without the dial command that started them, as when a user dials from the
 * phone itself.
 */
import assert from "node:assert/strict";
import { AgentBook } from "../../../../lib/platform/asterisk/agents.ts";
import { AmiParser } from "../../../../lib/platform/asterisk/ami_message.ts";
import { CallTracker, deviceOf } from "../../../../lib/platform/asterisk/calls.ts";
import { directoryLoader } from "../../../../lib/platform/directory.ts";
import type { PlatformEvent } from "../../../../lib/platform/port.ts";
import { setup } from "../../../helpers.ts";
import { TRANSCRIPTS } from "../../../peers/ami_replay.ts";
import { scenarioWorld } from "../fixtures.ts";

/** Every event Asterisk sent in a recorded session, in order; `rename` replaces a word in it. */
async function recordedEvents(name: string, rename?: [string, string]) {
  const parser = new AmiParser();
  let text = await Deno.readTextFile(new URL(`${name}.jsonl`, TRANSCRIPTS));
  if (rename) text = text.replaceAll(rename[0], rename[1]);
  return text.split("\n").filter((line) => line).flatMap((line) => {
    const record = JSON.parse(line) as { dir: string; data: string };
    return record.dir === "recv" ? parser.push(record.data) : [];
  }).filter((message) => message.event !== undefined);
}

async function tracker() {
  const ctx = await setup();
  const w = await scenarioWorld(ctx);
  const dir = await directoryLoader(ctx.services.store).load();
  const events: PlatformEvent[] = [];
  const base = {
    dir: () => dir,
    now: () => ctx.clock.now(),
    emit: (e: PlatformEvent) => events.push(e),
  };
  const agents = new AgentBook({
    ...base,
    clock: ctx.clock,
    logger: ctx.services.logger,
    action: () => Promise.reject(new Error("no AMI in this test")),
  });
  const repairs: [string, Record<string, string>][] = [];
  const repair = (action: string, fields: Record<string, string>) => repairs.push([action, fields]);
  return {
    calls: new CallTracker({ ...base, agents, repair, ignored: () => false, roomOf: () => null }),
    events,
    w,
    repairs,
  };
}

Deno.test("a call from alice's phone itself: she dials, bob rings, both talk, bob hangs up", async () => {
  const { calls, events } = await tracker();
  for (const event of await recordedEvents("02-dial-answered")) calls.handle(event);
  const phone = events.flatMap((e) => e.kind === "phone" ? [e] : []);
  assert.deepEqual(phone.map((e) => [e.username, e.eventType, e.DN, e.otherDN]), [
    ["alice", "EventDialing", "1001", "1002"],
    ["bob", "EventRinging", "1002", "1001"],
    ["alice", "EventEstablished", "1001", "1002"],
    ["bob", "EventEstablished", "1002", "1001"],
    ["alice", "EventReleased", "1001", "1002"],
    ["bob", "EventReleased", "1002", "1001"],
  ]);
  // Asterisk's ids: the call is alice's channel's, each leg its own channel's
  assert.deepEqual(new Set(phone.map((e) => e.linkedId)), new Set(["1795439518.0"]));
  assert.deepEqual(
    phone.map((e) => e.uniqueId),
    [
      "1795439518.0",
      "1795439518.1",
      "1795439518.0",
      "1795439518.1",
      "1795439518.0",
      "1795439518.1",
    ],
  );
  const ended = events.flatMap((e) => e.kind === "call_ended" ? e.records : []);
  assert.deepEqual(ended.map((r) => [r.status, r.srcUsername, r.dstUsername, r.dstNum]), [
    ["emitted", "alice", "bob", "1002"],
    ["answered", "alice", "bob", "1002"],
  ]);
  assert.deepEqual(calls.calls(), [], "nothing left behind");
});

Deno.test("a call svc did not place, lost with a restart, ends at the resync", async () => {
  const { calls, events } = await tracker();
  const recorded = await recordedEvents("02-dial-answered");
  // up to both phones talking (the first BridgeEnter), then the connection is lost
  const upTo = recorded.findIndex((event) => event.event === "BridgeEnter");
  for (const event of recorded.slice(0, upTo)) calls.handle(event);
  assert.equal(calls.calls().length, 1);
  calls.resync(new Set());
  const phone = events.flatMap((e) => e.kind === "phone" ? [[e.username, e.eventType]] : []);
  assert.deepEqual(phone.slice(-2), [["alice", "EventReleased"], ["bob", "EventReleased"]]);
  assert.deepEqual(calls.calls(), []);
});

Deno.test("after a reconnection QueueStatus says which calls still wait: one gone is not counted", async () => {
  const recorded = await recordedEvents("30-queue-statistics");
  // up to carol waiting in the queue (the second join), then the connection is lost
  const carolJoins = recorded.findIndex((event) =>
    event.event === "QueueCallerJoin" && event.get("CallerIDNum") === "1003"
  );
  const entry = (uniqueId: string) =>
    new AmiParser({ banner: false }).push(
      `Event: QueueEntry\r\nQueue: support\r\nPosition: 1\r\nUniqueid: ${uniqueId}\r\n` +
        "CallerIDNum: 1003\r\nWait: 2\r\n\r\n",
    )[0]!;
  for (const stillThere of [true, false]) {
    const { calls, events, w } = await tracker();
    for (const event of recorded.slice(0, carolJoins + 1)) calls.handle(event);
    const [carol] = calls.waitingCalls();
    const uniqueId = recorded[carolJoins]!.get("Uniqueid")!;
    assert.equal(carol?.queueId, w.queue.id);
    const counted = events.filter((e) => e.kind === "queue_call").length;
    calls.resyncQueues(stillThere ? [entry(uniqueId)] : [], new Map());
    // still there: the same call, as svc saw it join; gone (answered while svc was away): no
    // longer waiting, and no event, svc cannot tell how it left
    assert.deepEqual(calls.waitingCalls(), stillThere ? [carol] : []);
    assert.equal(events.filter((e) => e.kind === "queue_call").length, counted);
  }
});

Deno.test("dial number through an outside route that dials a second channel: answered, then released", async () => {
  // 20: svc's dial/number for alice, seen from another AMI session; the operator's route dials
  // Local/<number>@acc-outside (a trunk's channel in production), which answers
  const { calls, events, w } = await tracker();
  const linkedId = "d60b057d-8b38-43d8-8ad6-9945e2b1ce62";
  const dir = await directoryLoader(w.services.store).load();
  const phone = dir.phoneOfUser(w.alice.id)!;
  calls.start({
    linkedId,
    kind: "user",
    context: "default",
    dialled: "0033612345678",
    shownNumber: "1001",
    shownName: "alice",
    src: { userId: w.alice.id, username: "alice", number: "1001" },
    userData: {},
    originate: { channel: "PJSIP/alice", exten: "0033612345678", context: "default" },
    callerPhone: phone,
  });
  // alice's SIP endpoint was named prcdnspl on the recording PBX; here it is alice
  for (
    const event of await recordedEvents("20-dial-outside-second-channel", ["prcdnspl", "alice"])
  ) {
    calls.handle(event);
  }
  const phoneEvents = events.flatMap((e) => e.kind === "phone" ? [e] : []);
  assert.deepEqual(phoneEvents.map((e) => [e.username, e.eventType, e.DN, e.otherDN]), [
    ["alice", "EventDialing", "1001", "0033612345678"],
    ["alice", "EventEstablished", "1001", "0033612345678"],
    ["alice", "EventReleased", "1001", "0033612345678"],
  ]);
  const ended = events.flatMap((e) => e.kind === "call_ended" ? e.records : []);
  assert.deepEqual(ended.map((r) => [r.status, r.srcUsername, r.dstNum, r.answeredMs !== null]), [
    ["emitted", "alice", "0033612345678", true],
  ]);
  assert.deepEqual(calls.calls(), [], "nothing left behind");
});

Deno.test("deviceOf: the device of a channel name; Local channels have none", () => {
  assert.equal(deviceOf("PJSIP/alice-0000000b"), "PJSIP/alice");
  assert.equal(deviceOf("SCCP/abc12345-00000001"), "SCCP/abc12345");
  assert.equal(deviceOf("DAHDI/i1/0612345678-1a"), "DAHDI/i1/0612345678");
  assert.equal(deviceOf("Local/1003@default-00000000;1"), null);
});

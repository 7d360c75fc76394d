/**
 * A supervisor's listening calls on Asterisk (lib/platform/asterisk/listen.ts), from AMI events
 * as Asterisk 22 sends them (the recorded session `36-listen` plays the usual path through the
 * whole adapter): another process's announcement, a supervisor's phone never reached, its channel
 * hanging up without `ChanSpyStop`, a reconnection finding it gone.
 */
import assert from "node:assert/strict";
import { AmiParser } from "../../../../lib/platform/asterisk/ami_message.ts";
import { listenAnnouncement, Spies } from "../../../../lib/platform/asterisk/listen.ts";
import type { PlatformEvent } from "../../../../lib/platform/port.ts";

/** An AMI event of these fields. */
const event = (fields: Record<string, string>) =>
  new AmiParser({ banner: false }).push(
    Object.entries(fields).map(([key, value]) => `${key}: ${value}\r\n`).join("") + "\r\n",
  )[0]!;

const FIELDS = {
  agentId: 3,
  agentNumber: "8001",
  phoneNb: "1002",
  agentUsername: "bob",
  supervisorId: 7,
  supervisorUsername: "carol",
};

function spies() {
  const events: PlatformEvent[] = [];
  return { spies: new Spies((e) => events.push(e)), events };
}

const spy = (what: "ChanSpyStart" | "ChanSpyStop", linkedId: string) =>
  event({ Event: what, SpyerUniqueid: linkedId, SpyerLinkedid: linkedId, SpyeeUniqueid: "b.1" });

Deno.test("another process's listening, announced: followed from its SvcListen", () => {
  const { spies: s, events } = spies();
  const announced = listenAnnouncement("L1", FIELDS, "PJSIP/carol");
  assert.ok(s.handle(event({ Event: "UserEvent", ...announced })));
  assert.ok(s.has("L1"));
  assert.ok(!s.handle(event({ Event: "UserEvent", UserEvent: "SvcDial", Call: "X" })));
  s.handle(
    event({ Event: "Newchannel", Channel: "PJSIP/carol-01", Uniqueid: "L1", Linkedid: "L1" }),
  );
  s.handle(spy("ChanSpyStart", "L1"));
  s.handle(spy("ChanSpyStart", "L1")); // told once
  s.handle(spy("ChanSpyStop", "L1"));
  assert.ok(s.handle(event({ Event: "Hangup", Uniqueid: "L1", Linkedid: "L1" })));
  assert.deepEqual(events, [
    { kind: "listen", started: true, ...FIELDS, linkedId: "L1" },
    { kind: "listen", started: false, ...FIELDS, linkedId: "L1" },
  ]);
  assert.ok(!s.has("L1"), "forgotten once its channel is gone");
});

Deno.test("the supervisor hangs up without a ChanSpyStop: stopped at its Hangup", () => {
  const { spies: s, events } = spies();
  s.add("L2", FIELDS, "PJSIP/carol");
  s.handle(
    event({ Event: "Newchannel", Channel: "PJSIP/carol-02", Uniqueid: "L2", Linkedid: "L2" }),
  );
  s.handle(spy("ChanSpyStart", "L2"));
  s.handle(event({ Event: "Hangup", Uniqueid: "L2", Linkedid: "L2" }));
  assert.deepEqual(events.map((e) => e.kind === "listen" && e.started), [true, false]);
});

Deno.test("the supervisor's phone never reached: the failed Originate forgets it, with no event", () => {
  const { spies: s, events } = spies();
  s.add("L3", FIELDS, "PJSIP/carol");
  assert.ok(
    !s.handle(
      event({
        Event: "OriginateResponse",
        Response: "Failure",
        Context: "default",
        Channel: "PJSIP/carol",
      }),
    ),
  );
  assert.ok(s.has("L3"), "another context's failure is not its");
  assert.ok(
    s.handle(
      event({
        Event: "OriginateResponse",
        Response: "Failure",
        Context: "svc-listen",
        Channel: "PJSIP/carol",
      }),
    ),
  );
  assert.ok(!s.has("L3"));
  assert.deepEqual(events, []);
  // a refused Originate: forgotten by the command
  s.add("L4", FIELDS, "PJSIP/carol");
  s.forget("L4");
  assert.ok(!s.has("L4"));
});

Deno.test("after a reconnection: a listening whose channel is gone stopped meanwhile", () => {
  const { spies: s, events } = spies();
  s.add("L5", FIELDS, "PJSIP/carol");
  s.add("L6", FIELDS, "PJSIP/carol"); // no channel yet: its Originate may still ring
  s.handle(
    event({ Event: "Newchannel", Channel: "PJSIP/carol-05", Uniqueid: "L5", Linkedid: "L5" }),
  );
  s.handle(spy("ChanSpyStart", "L5"));
  s.resync(new Set(["other"]));
  assert.deepEqual(events.map((e) => e.kind === "listen" && [e.linkedId, e.started]), [
    ["L5", true],
    ["L5", false],
  ]);
  assert.ok(!s.has("L5") && s.has("L6"));
});

/**
 * Every scenario of `scenarios.ts` on both adapters: the simulator, and the Asterisk adapter on a
 * replay of the recorded session; both must give exactly the scenario's events and history.
 */
import assert from "node:assert/strict";
import type { RecordLine } from "../../peers/ami_replay.ts";
import { check, onAsterisk, onSimulator } from "./scenario_runner.ts";
import { SCENARIOS } from "./scenarios.ts";

for (const scenario of SCENARIOS) {
  Deno.test(`simulator: ${scenario.name}`, async () => {
    check(scenario, await onSimulator(scenario));
  });
  if (scenario.transcript === null) continue;
  Deno.test(`Asterisk (replay of ${scenario.transcript}): ${scenario.name}`, async () => {
    check(scenario, await onAsterisk(scenario));
  });
}

Deno.test("Asterisk (replay of 27-conference, bob's hang-up before alice's): the same events", async () => {
  // The host leaving ends the conference: Asterisk then hangs up the host's channel and kicks
  // the members on threads of their own, in either order (seen live). Released in joining order.
  const scenario = SCENARIOS.find((one) => one.transcript === "27-conference")!;
  const hangupOf = (name: string) => (record: RecordLine) =>
    record.dir === "recv" && record.data.startsWith("Event: Hangup\r\n") &&
    record.data.includes(`Channel: PJSIP/${name}-`);
  const rewrite = (records: RecordLine[]) => {
    const bob = records.findLastIndex(hangupOf("bob"));
    const alice = records.findLastIndex(hangupOf("alice"));
    assert.ok(alice !== -1 && bob > alice, "the recording has alice's hang-up first");
    const [moved] = records.splice(bob, 1);
    records.splice(alice, 0, moved!);
    return records;
  };
  check(scenario, await onAsterisk(scenario, { rewrite }));
});

Deno.test("Asterisk (replay of 37-voicemail, bob's hang-up after the voicemail answered): the same events", async () => {
  // Dial's ring timeout hangs bob's phone up on a thread of its own: its Hangup may come after
  // alice's dialplan reached the voicemail (seen live). bob is released at the DialEnd.
  const scenario = SCENARIOS.find((one) => one.transcript === "37-voicemail")!;
  const rewrite = (records: RecordLine[]) => {
    const bob = records.findIndex((record) =>
      record.dir === "recv" && record.data.startsWith("Event: Hangup\r\n") &&
      record.data.includes("Channel: PJSIP/bob-")
    );
    const voicemail = records.findIndex((record) =>
      record.dir === "recv" && record.data.includes("Application: VoiceMail\r\n")
    );
    assert.ok(bob !== -1 && voicemail > bob, "the recording has bob's hang-up first");
    const [moved] = records.splice(bob, 1);
    records.splice(voicemail, 0, moved!);
    return records;
  };
  check(scenario, await onAsterisk(scenario, { rewrite }));
});

/**
 * The scenario table (`tests/lib/platform/scenarios.ts`) on a REAL Asterisk with real SIP phones,
 * where both are installed (as `asterisk_live_test.ts` finds them, skipped with a one-line notice
 * otherwise): every scenario whose session was recorded from svc itself (`recordedBySvc`: call
 * control, the outside route) runs live, the Asterisk adapter in this process driving the
 * project's throw-away PBX (`tests/peers/asterisk_pbx.ts`) while baresip phones
 * (`tests/peers/baresip_phone.ts`) do what the scenario's phones do, and must give the scenario's
 * events and history, as the simulator and the replay of the recording do.
 *
 * With `SVC_RECORD_TRANSCRIPTS=<dir>` the AMI session of each scenario (svc's side of it, through
 * `tests/peers/ami_recorder.ts`) is written there as `<transcript>.jsonl`: that is how the sessions
 * the replay tests play in CI were recorded (`tests/peers/asterisk_transcripts/`).
 * `SVC_TEST_SCENARIO=<part of a transcript name>` plays only those.
 */
import assert from "node:assert/strict";
import type { PlatformEvent } from "../../lib/platform/port.ts";
import type { AmiRecorder } from "../peers/ami_recorder.ts";
import { OUTSIDE_ROUTE, type Pbx, quietManager } from "../peers/asterisk_pbx.ts";
import { startRecordedPbx, svcOnPbx } from "./recorded_pbx.ts";
import { livePeers } from "../peers/live_peers.ts";
import type { Phone } from "../peers/baresip_phone.ts";
import { parseWav, toneLevel } from "../peers/wav.ts";
import {
  count,
  heardSince,
  MUSIC_HZ,
  recordingSince,
  timeline,
  TONES,
  windows,
  windowsWithBoth,
} from "./live_audio.ts";
import { scenarioWorld } from "../lib/platform/fixtures.ts";
import { capture, check } from "../lib/platform/scenario_runner.ts";
import { SCENARIOS } from "../lib/platform/scenarios.ts";
import { livePhones, PEOPLE, playSteps } from "./live_phones.ts";
import { sleep, until } from "./svc_http.ts";
import type { Store } from "../../lib/store/store.ts";
import { voicemails } from "../../lib/store/voicemails.ts";

const { prefix: PREFIX, missing } = livePeers("asterisk_live_scenarios_test");

const RECORD_TO = Deno.env.get("SVC_RECORD_TRANSCRIPTS");
/** Only the scenarios whose transcript name holds this (to record one again). */
const ONLY = Deno.env.get("SVC_TEST_SCENARIO") ?? "";

Deno.test({
  name: "on a real Asterisk: the scenarios of call control give the table's events and history",
  ignore: missing,
  // the phones' and Asterisk's pipes close asynchronously; everything is reaped in `finally`
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const { pbx, recorder, phones, stop } = await startRecordedPbx({
      prefix: PREFIX!,
      config: {
        "extensions.conf": (ours) => `${ours}\n${OUTSIDE_ROUTE}\n`,
        "manager.conf": quietManager,
      },
      svc: world,
      file: "pjsip_svc.conf",
      phones: Object.fromEntries(
        Object.values(PEOPLE).map((user) => [
          user,
          { user, answerMode: "manual", toneHz: TONES[user], record: true },
        ]),
      ),
      registerMs: 20_000,
    });
    try {
      const chosen = SCENARIOS.filter((one) =>
        one.recordedBySvc && (one.transcript ?? "").includes(ONLY)
      );
      for (const scenario of chosen) {
        const ok = await t.step(scenario.name, async () => {
          const w = await world(recorder.port, pbx);
          try {
            await scenario.prepare?.(w.w);
            const events: PlatformEvent[] = capture(w.ctx);
            w.platform.start();
            await w.platform.firstSync();
            await mailboxesLoaded(w.ctx.services.store, pbx);
            const settle = async () => {
              await sleep(400);
              await w.platform.settled();
            };
            const sim = livePhones(phones, settle);
            const started = await playSteps(scenario.steps, w.w, sim, settle);
            // the last hang-ups reach every channel
            await until(() => w.platform.calls().length === 0, 10_000, "no call left");
            await settle();
            check(scenario, { events, started, w: w.w });
          } finally {
            await w.close();
            for (const phone of Object.values(phones)) await phone.ctrl.hangup().catch(() => {});
            await sleep(300);
            // written even when the scenario failed: what Asterisk said is the first thing to read
            if (RECORD_TO && scenario.transcript) {
              await Deno.mkdir(RECORD_TO, { recursive: true });
              await Deno.writeTextFile(
                `${RECORD_TO}/${scenario.transcript}.jsonl`,
                recorder.text(),
              );
            }
          }
        });
        if (!ok) console.log(`asterisk_live_scenarios_test: ${scenario.name} failed`);
      }
      if (QUEUE_RESYNC.includes(ONLY)) {
        await t.step(
          "svc started while a call waits in a queue: shown, gone once it leaves",
          async () => {
            await queueResync(recorder, pbx, phones);
          },
        );
      }
      await t.step("what they hear: music on hold, the recording, the DTMF", async () => {
        await whatTheyHear(recorder.port, pbx, phones);
      });
      await t.step("what a supervisor hears (ChanSpy), what a voicemail keeps", async () => {
        await whatTheSupervisorHears(recorder.port, pbx, phones);
      });
    } finally {
      await stop();
    }
  },
});

/** Every voicemail of the store is a mailbox of the PBX (svc wrote its file, Asterisk reloaded it). */
async function mailboxesLoaded(store: Store, pbx: Pbx): Promise<void> {
  for (const box of await voicemails.all(store)) {
    await until(
      async () =>
        new RegExp(`\\b${box.number}\\b`).test(
          await pbx.cli(`voicemail show users for ${box.context}`),
        ),
      10_000,
      `mailbox ${box.number}@${box.context}`,
    );
  }
}

/** svc in this process on the Asterisk adapter (through `amiPort`), its people built through `/1.1`. */
const world = (amiPort: number, pbx: Pbx) => svcOnPbx(amiPort, pbx, scenarioWorld);

/** The transcript of {@link queueResync}. */
const QUEUE_RESYNC = "31-queue-resync";

/**
 * alice's phone dials the queue (no agent: she waits); svc starts then, and shows her waiting from
 * `QueueStatus` (it saw no join: a stray, never counted); she hangs up and the queue is empty.
 */
async function queueResync(
  recorder: AmiRecorder,
  pbx: Pbx,
  phones: Record<string, Phone>,
) {
  const alice = phones.alice!.ctrl;
  await alice.dial("3001");
  await sleep(3000);
  const w = await world(recorder.port, pbx);
  try {
    w.platform.start();
    await w.platform.firstSync();
    const [waiting, ...others] = await w.platform.queueCalls();
    assert.deepEqual(others, []);
    assert.equal(waiting?.queueId, w.w.queue.id);
    assert.equal(waiting?.callerNumber, "1001");
    assert.equal(waiting?.position, 1);
    const waited = w.ctx.clock.now() - waiting!.sinceMs; // Asterisk's Wait, in s
    assert.ok(waited >= 2000 && waited < 15_000, `waiting for ${waited} ms`);
    await sleep(1500); // in the recording too: the replay's reader sees her waiting first
    await alice.hangup();
    await until(async () => (await w.platform.queueCalls()).length === 0, 10_000, "she left");
    await sleep(300);
  } finally {
    await w.close();
    await alice.hangup().catch(() => {});
    if (RECORD_TO) {
      await Deno.mkdir(RECORD_TO, { recursive: true });
      await Deno.writeTextFile(`${RECORD_TO}/${QUEUE_RESYNC}.jsonl`, recorder.text());
    }
  }
}

/**
 * What the phones hear and what Asterisk records, beyond the events: alice calls bob and holds
 * (bob hears the music, not alice), takes the call back, records it (both tones in the file,
 * silence while paused) and sends a digit bob's phone receives.
 */
async function whatTheyHear(amiPort: number, pbx: Pbx, phones: Record<string, Phone>) {
  const w = await world(amiPort, pbx);
  try {
    w.platform.start();
    await w.platform.firstSync();
    const [alice, bob] = [phones.alice!.ctrl, phones.bob!.ctrl];
    const before = new Set(await phones.bob!.recordings());
    const since = bob.mark();
    await w.platform.dialNumber(w.w.alice, "1002", {});
    await alice.waitEvent("CALL_INCOMING", alice.mark() - 1);
    await alice.accept();
    await bob.waitEvent("CALL_INCOMING", since);
    await bob.accept();
    await sleep(1500);
    const aliceCall = (await w.platform.liveCalls()).find((call) => call.userId === w.w.alice.id)!;
    const command = (run: Parameters<typeof w.platform.callCommand>[1]) =>
      w.platform.callCommand(aliceCall.callId, run);
    await command({ kind: "hold" });
    await sleep(2500);
    await command({ kind: "resume" });
    await sleep(1000);
    await command({ kind: "record", action: "start" });
    await sleep(1500);
    await command({ kind: "record", action: "pause" });
    await sleep(1500);
    await command({ kind: "record", action: "resume" });
    const dtmf = bob.mark();
    await command({ kind: "dtmf", digits: "5" });
    await bob.waitEvent("CALL_DTMF_START", dtmf, 5_000);
    await sleep(1500);
    await command({ kind: "record", action: "stop" });
    await command({ kind: "hangup" });
    await until(() => w.platform.calls().length === 0, 10_000, "the call ended");
    await sleep(500);

    const tones = { ...TONES, music: MUSIC_HZ };
    const heard = (await phones.bob!.recordings()).filter((file) =>
      !before.has(file) && file.endsWith("-dec.wav")
    );
    assert.equal(heard.length, 1, `bob's recording of the call: ${heard}`);
    const bobHeard = timeline(parseWav(await Deno.readFile(heard[0]!)), tones);
    assert.ok(count(bobHeard, "music") >= 15, `bob heard the music on hold: ${bobHeard}`);
    assert.ok(count(bobHeard, "alice") >= 20, `bob heard alice: ${bobHeard}`);
    const firstMusic = bobHeard.indexOf("music");
    const lastMusic = bobHeard.lastIndexOf("music");
    assert.equal(count(bobHeard.slice(firstMusic, lastMusic), "alice"), 0, "not alice meanwhile");

    const monitor = `${pbx.workDir}/spool/monitor`;
    const files = [...Deno.readDirSync(monitor)].map((entry) => entry.name)
      .filter((name) => name.startsWith(`${aliceCall.linkedId}-${aliceCall.callId}-`));
    assert.equal(files.length, 1, `one recording of the call: ${files}`);
    const recorded = timeline(parseWav(await Deno.readFile(`${monitor}/${files[0]}`)), TONES);
    assert.ok(recorded.length >= 35, `the file holds the call's time: ${recorded.length} windows`);
    assert.ok(count(recorded, "silence") >= 10, `the pause is silence: ${recorded}`);
    // both parties mixed: windows hold each tone, the other's riding along (window by window: a
    // whole file's tone is not one coherent sine once a busy machine let packets slip)
    const audio = parseWav(await Deno.readFile(`${monitor}/${files[0]}`));
    const mixed = windows(audio).filter((part) =>
      toneLevel(part, TONES.alice!) > 0.1 && toneLevel(part, TONES.bob!) > 0.1
    ).length;
    assert.ok(mixed >= 10, `both tones in ${mixed} windows of 100 ms`);
  } finally {
    await w.close();
  }
}

/**
 * Listening and voicemail as the phones hear them: carol, a supervisor, listens to agent 8001's
 * call on bob's phone with alice (her phone hears both tones, nobody hears hers); then bob does not
 * answer alice and his voicemail keeps her tone.
 */
async function whatTheSupervisorHears(amiPort: number, pbx: Pbx, phones: Record<string, Phone>) {
  const w = await world(amiPort, pbx);
  try {
    const box = await w.w.api.create("/voicemails", {
      name: "bob",
      number: "1002",
      context: "default",
    });
    assert.equal((await w.w.api.put(`/users/${w.w.bob.id}/voicemails/${box.id}`)).status, 204);
    assert.equal((await w.w.api.put(`/users/${w.w.bob.id}`, { ring_seconds: 4 })).status, 204);
    w.platform.start();
    await w.platform.firstSync();
    await mailboxesLoaded(w.ctx.services.store, pbx);
    const [alice, bob, carol] = [phones.alice!.ctrl, phones.bob!.ctrl, phones.carol!.ctrl];
    const before = {
      bob: new Set(await phones.bob!.recordings()),
      carol: new Set(await phones.carol!.recordings()),
    };
    await w.platform.agentLogin(w.w.agent, "1002", "default");
    let [aliceSince, bobSince, carolSince] = [alice.mark(), bob.mark(), carol.mark()];
    await w.platform.dialNumber(w.w.alice, "1002", {});
    await alice.waitEvent("CALL_INCOMING", aliceSince);
    await alice.accept();
    await bob.waitEvent("CALL_INCOMING", bobSince);
    await bob.accept();
    await sleep(1000);
    const listening = capture(w.ctx);
    await w.platform.listen(w.w.carol, w.w.agent.id);
    await carol.waitEvent("CALL_INCOMING", carolSince);
    await carol.accept();
    await sleep(3000);
    // the agent's call ends: so does the listening
    await alice.hangup();
    await until(() => w.platform.calls().length === 0, 10_000, "the call ended");
    await until(
      () => listening.filter((event) => event.kind === "listen").length === 2,
      10_000,
      "listening started and stopped",
    );
    await sleep(500);
    const carolAudio = await recordingSince(phones.carol!, before.carol);
    const carolHeard = timeline(carolAudio, TONES);
    assert.ok(count(carolHeard, "alice") + count(carolHeard, "bob") >= 20, `carol: ${carolHeard}`);
    const both = windowsWithBoth(carolAudio, "alice", "bob");
    assert.ok(both >= 10, `carol hears both sides: ${both} windows of 100 ms`);
    const bobHeard = await heardSince(phones.bob!, before.bob);
    assert.equal(count(bobHeard, "carol"), 0, `nobody hears carol: ${bobHeard}`);
    await w.platform.agentLogout(w.w.agent.id);

    // bob does not answer (4 s): the voicemail keeps 3 s of alice's tone, in a box emptied of
    // what the scenarios left there
    await Deno.remove(`${pbx.voicemailDir}/default/1002`, { recursive: true }).catch(() => {});
    [aliceSince, bobSince] = [alice.mark(), bob.mark()];
    await w.platform.dialNumber(w.w.alice, "1002", {});
    await alice.waitEvent("CALL_INCOMING", aliceSince);
    await alice.accept();
    await bob.waitEvent("CALL_INCOMING", bobSince);
    await sleep(4000 + 3000);
    await alice.hangup();
    await until(
      () => w.platform.calls().length === 0,
      10_000,
      "the call ended",
    );
    const message = `${pbx.voicemailDir}/default/1002/INBOX/msg0000.wav`;
    await until(() => Deno.stat(message).then(() => true, () => false), 10_000, "bob's message");
    const kept = timeline(parseWav(await Deno.readFile(message)), TONES);
    assert.ok(count(kept, "alice") >= 15, `alice's tone in bob's message: ${kept}`);
    assert.deepEqual(await w.platform.voicemailCounts(box.id), { newMessages: 1, oldMessages: 0 });
  } finally {
    await w.close();
  }
}

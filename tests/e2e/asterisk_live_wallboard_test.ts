/**
 * The wallboard scenario of issue 26 (`tests/supervision/wallboard_scenario.ts`: 2 queues, 6
 * agents, 10 callers) on a REAL Asterisk with 16 real SIP phones, where both are installed (as
 * `asterisk_live_test.ts` finds them, skipped with a one-line notice otherwise): the Asterisk
 * adapter in this process drives the project's throw-away PBX (`tests/peers/asterisk_pbx.ts`)
 * through a recording proxy (`tests/peers/ami_recorder.ts`), baresip phones
 * (`tests/peers/baresip_phone.ts`) do what the scenario's phones do (the agents' answer by hand,
 * the callers' by themselves), and after each step the supervision routes must answer the
 * table's figures, with the agent and queue events the simulator gives for the step.
 *
 * With `SVC_RECORD_TRANSCRIPTS=<dir>` the AMI session is written there as `32-wallboard.jsonl`:
 * the session `tests/supervision/wallboard_scenario_test.ts` replays in CI
 * (`tests/peers/asterisk_transcripts/`).
 */
import assert from "node:assert/strict";
import type { TestContext } from "../helpers.ts";
import { type Pbx, quietManager } from "../peers/asterisk_pbx.ts";
import { startRecordedPbx, svcOnPbx } from "./recorded_pbx.ts";
import type { Phone } from "../peers/baresip_phone.ts";
import { livePeers } from "../peers/live_peers.ts";
import {
  captureEvents,
  eventLines,
  figureLines,
  isCaller,
  normalized,
  PHONES,
  runWallboardScenario,
  supervisionReader,
  WALLBOARD_SETTINGS,
  WALLBOARD_TRANSCRIPT,
  wallboardOnSimulator,
  type WallboardPhones,
  type WallboardWorld,
  wallboardWorld,
} from "../supervision/wallboard_scenario.ts";
import { sleep, until } from "./svc_http.ts";

const { prefix: PREFIX, missing } = livePeers("asterisk_live_wallboard_test");

const RECORD_TO = Deno.env.get("SVC_RECORD_TRANSCRIPTS");

/** How long the figures may take to show a step on the real PBX. */
const FIGURES_WITHIN_MS = 15_000;

/** svc in this process on the Asterisk adapter (through `amiPort`), the scenario's people built. */
const liveWorld = (amiPort: number, pbx: Pbx) =>
  svcOnPbx(amiPort, pbx, wallboardWorld, WALLBOARD_SETTINGS);

/**
 * The scenario's phones played on real ones: an agent's phone answers or rejects what rings
 * (waiting for it), a caller's answered by itself (its call is then in a queue), a phone hangs
 * up; time passes for real, then on svc's clock.
 */
function livePhones(
  ctx: TestContext,
  w: WallboardWorld,
  phones: Record<string, Phone>,
  settle: () => Promise<void>,
): WallboardPhones {
  /** Where each phone's events were read up to: what rang before is not the act's. */
  const seen = new Map(Object.entries(phones).map(([extension, p]) => [extension, p.ctrl.mark()]));
  return {
    async act(extension, action) {
      const ctrl = phones[extension]!.ctrl;
      if (action === "answer" && isCaller(extension)) {
        await until(
          async () =>
            (await w.services.platform.queueCalls()).some((call) =>
              call.callerNumber === extension
            ),
          FIGURES_WITHIN_MS,
          `${extension}'s call in a queue`,
        );
      } else if (action === "answer" || action === "reject") {
        await ctrl.waitEvent("CALL_INCOMING", seen.get(extension) ?? 0);
        seen.set(extension, ctrl.mark());
        if (action === "answer") await ctrl.accept();
        else await ctrl.hangup();
      } else await ctrl.hangup();
      await settle();
    },
    async advance(ms) {
      await sleep(ms);
      await ctx.clock.advance(ms);
      await settle();
    },
  };
}

Deno.test({
  name: "on a real Asterisk: the wallboard scenario gives the table's figures at each step",
  ignore: missing,
  // the phones' and Asterisk's pipes close asynchronously; everything is reaped in `finally`
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const simulated = await wallboardOnSimulator();
    const { pbx, recorder, phones, stop } = await startRecordedPbx({
      prefix: PREFIX!,
      config: { "manager.conf": quietManager },
      svc: liveWorld,
      file: "queues_svc.conf",
      phones: Object.fromEntries(
        Object.entries(PHONES).map(([extension, user]) => [
          extension,
          { user, answerMode: isCaller(extension) ? "auto" : "manual" },
        ]),
      ),
      registerMs: 30_000,
    });
    let live: Awaited<ReturnType<typeof liveWorld>> | null = null;
    try {
      // the recorded session: svc connects again, as in CI on the replay
      live = await liveWorld(recorder.port, pbx);
      const { ctx, w, platform } = live;
      const events = captureEvents(ctx);
      platform.start();
      await platform.firstSync();
      const reader = await supervisionReader(ctx, w);
      const settle = async () => {
        await sleep(300);
        await platform.settled();
      };
      await runWallboardScenario({
        w,
        phones: livePhones(ctx, w, phones, settle),
        afterCommand: settle,
        async afterStep(index, _expected, step) {
          const what = `step ${index + 1}: ${step.name}`;
          const expected = normalized(step.figures);
          let shown: string[] = [];
          await until(
            async () => {
              shown = figureLines(await reader.figures());
              return JSON.stringify(shown) === JSON.stringify(expected);
            },
            FIGURES_WITHIN_MS,
            what,
          ).catch(() => {});
          // and they stay so: nothing late changes them before the next step
          await sleep(500);
          await platform.settled();
          assert.deepEqual(figureLines(await reader.figures()), expected, what);
          // the events of a step in any order: those of different channels are not causal
          assert.deepEqual(
            eventLines(w, events.splice(0)).sort(),
            [...simulated[index]!].sort(),
            `events of ${what}`,
          );
        },
      });
    } finally {
      // written even when the scenario failed: what Asterisk said is the first thing to read
      if (RECORD_TO && live) {
        await Deno.mkdir(RECORD_TO, { recursive: true });
        await Deno.writeTextFile(`${RECORD_TO}/${WALLBOARD_TRANSCRIPT}.jsonl`, recorder.text());
      }
      await live?.close();
      await stop();
    }
  },
});

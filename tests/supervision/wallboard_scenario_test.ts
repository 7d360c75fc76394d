/**
 * The wallboard scenario (`wallboard_scenario.ts`, issue 26's "done when") through the real app:
 * on the simulator in virtual time, and on the Asterisk adapter against the replay of the session
 * recorded on a real Asterisk (`tests/e2e/asterisk_live_wallboard_test.ts` records it). After each
 * step the supervision routes must answer the table's figures, and each queue's day in intervals
 * (the day's curve) must add up to its day; both platforms must also give the same agent and queue
 * events, step by step.
 */
import assert from "node:assert/strict";
import type { AsteriskPlatform } from "../../lib/platform/asterisk/mod.ts";
import { setup } from "../helpers.ts";
import { startAmiReplay, SVC_DRIVEN } from "../peers/ami_replay.ts";
import {
  captureEvents,
  eventLines,
  figureLines,
  normalized,
  parseFigures,
  replayPhones,
  runWallboardScenario,
  supervisionReader,
  WALLBOARD_SETTINGS,
  WALLBOARD_STEPS,
  WALLBOARD_TRANSCRIPT,
  wallboardOnSimulator,
  wallboardWorld,
} from "./wallboard_scenario.ts";

Deno.test("the wallboard table reads as it is written", () => {
  for (const step of WALLBOARD_STEPS) {
    assert.deepEqual(figureLines(parseFigures(step.figures)), normalized(step.figures), step.name);
  }
  const last = parseFigures(WALLBOARD_STEPS.at(-1)!.figures);
  assert.deepEqual(last.queues.sales.waiting, ["1109", "1110"]);
  assert.deepEqual(last.agents["8003"], {
    state: "paused",
    call: null,
    paused: true,
    pausedReason: "break",
    answered: 1,
    missed: 0,
  });
  assert.deepEqual(parseFigures(WALLBOARD_STEPS[16]!.figures).agents["8004"], {
    state: "wrapup",
    call: null,
    paused: true,
    pausedReason: "meeting",
    answered: 1,
    missed: 0,
  });
});

Deno.test("the wallboard scenario on the simulator: the table's figures at each step", async () => {
  const steps = await wallboardOnSimulator();
  assert.equal(steps.length, WALLBOARD_STEPS.length);
});

Deno.test(
  `the wallboard scenario on Asterisk (replay of ${WALLBOARD_TRANSCRIPT}): the same figures and events`,
  async () => {
    const simulated = await wallboardOnSimulator();
    const replay = await startAmiReplay({
      connections: [WALLBOARD_TRANSCRIPT],
      // recorded from svc itself: every action svc sends for a command is the client's to send
      auto: (action) => !SVC_DRIVEN.has((action.get("Action") ?? "").toLowerCase()),
    });
    const configDir = await Deno.makeTempDir({ prefix: "svc-asterisk-" });
    const ctx = await setup({
      SVC_PLATFORM: "asterisk",
      SVC_AMI_PORT: String(replay.port),
      SVC_AMI_USERNAME: "admin",
      SVC_AMI_SECRET: "admin",
      SVC_ASTERISK_CONFIG_DIR: configDir,
      ...WALLBOARD_SETTINGS,
    });
    const platform = ctx.services.platform as AsteriskPlatform;
    try {
      const w = await wallboardWorld(ctx);
      const reader = await supervisionReader(ctx, w);
      const events = captureEvents(ctx);
      platform.start();
      await platform.firstSync();
      await replay.waiting();
      await runWallboardScenario({
        w,
        phones: replayPhones(ctx),
        // what the phones did after the command is played with it
        async afterCommand() {
          await replay.waiting();
          await platform.settled();
        },
        settle: () => platform.settled(),
        async afterStep(index, _expected, step) {
          const what = `step ${index + 1}: ${step.name}`;
          assert.deepEqual(eventLines(w, events.splice(0)), simulated[index], `events of ${what}`);
          assert.deepEqual(figureLines(await reader.figures()), normalized(step.figures), what);
          await reader.curvesAddUp();
        },
      });
      assert.equal(await replay.waiting(), "end", "the whole recording was played");
    } finally {
      await platform.close();
      ctx.services.store.close();
      await replay.close();
      await Deno.remove(configDir, { recursive: true });
    }
  },
);

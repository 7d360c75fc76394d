/**
 * Two agents answer one call of a `ringall` queue at once (`queue_race.ts`), on the Asterisk
 * adapter against the replay of two real sessions recorded by
 * `tests/e2e/asterisk_live_queue_race_test.ts`: in `33-queue-race` carol's phone answered first
 * and bob's was connected; in `33b-queue-race-late-answer` bob's answer reached Asterisk after
 * it had connected carol.
 */
import assert from "node:assert/strict";
import { startAmiReplay, SVC_DRIVEN, TRANSCRIPTS } from "../../../peers/ami_replay.ts";
import { capture } from "../scenario_runner.ts";
import { asteriskContext } from "./fixtures.ts";
import {
  checkRace,
  dialQueue,
  logInBoth,
  logOutBoth,
  QUEUE_RACE_TRANSCRIPT,
  raced,
  raceWorld,
} from "./queue_race.ts";

const SESSIONS = [
  { transcript: QUEUE_RACE_TRANSCRIPT, winner: "bob" },
  { transcript: "33b-queue-race-late-answer", winner: "carol" },
];

for (const { transcript, winner } of SESSIONS) {
  Deno.test(`on Asterisk (replay of ${transcript}): two agents answer, ${winner} is connected`, async () => {
    const recorded = await Deno.readTextFile(new URL(`${transcript}.jsonl`, TRANSCRIPTS));
    assert.ok(raced(recorded), "both agents' phones answered in the recording");
    const replay = await startAmiReplay({
      connections: [transcript],
      // recorded from svc itself: every action svc sends for a command is the client's to send
      auto: (action) => !SVC_DRIVEN.has((action.get("Action") ?? "").toLowerCase()),
    });
    const a = await asteriskContext(replay.port);
    try {
      const w = await raceWorld(a.ctx, a.w);
      const events = capture(a.ctx);
      a.platform.start();
      await a.platform.firstSync();
      await replay.waiting();
      for (const command of [logInBoth, dialQueue, logOutBoth]) {
        await command(w);
        await replay.waiting();
        await a.platform.settled();
      }
      assert.equal(await replay.waiting(), "end", "the whole recording was played");
      assert.deepEqual(checkRace(events, w), { winner });
      assert.deepEqual(a.platform.calls(), [], "no call left");
    } finally {
      await a.close();
      await replay.close();
    }
  });
}

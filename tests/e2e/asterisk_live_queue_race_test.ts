/**
 * Two agents answer one call of a `ringall` queue at the same moment, on a REAL Asterisk with
 * three baresip phones, where both are installed (as `asterisk_live_test.ts` finds them; skipped
 * with a one-line notice otherwise): the scenario and checks of
 * `tests/lib/platform/asterisk/queue_race.ts`. Whether both phones' answers reach Asterisk
 * before it hangs the slower one up is up to timing: the checks hold either way, and the test
 * prints whether the race happened.
 *
 * With `SVC_RECORD_TRANSCRIPTS=<dir>` the AMI session is written there as `33-queue-race.jsonl`
 * (`tests/peers/asterisk_transcripts/`; record until the printed line says both answered:
 * `queue_race_test.ts` replays it in CI and requires the race in it).
 */
import { type Pbx, quietManager } from "../peers/asterisk_pbx.ts";
import { startRecordedPbx, svcOnPbx } from "./recorded_pbx.ts";
import type { Phone } from "../peers/baresip_phone.ts";
import { livePeers } from "../peers/live_peers.ts";
import { scenarioWorld } from "../lib/platform/fixtures.ts";
import { capture } from "../lib/platform/scenario_runner.ts";
import {
  checkRace,
  dialQueue,
  logInBoth,
  logOutBoth,
  QUEUE_RACE_TRANSCRIPT,
  raced,
  raceWorld,
} from "../lib/platform/asterisk/queue_race.ts";
import { sleep, until } from "./svc_http.ts";

const TEST = "asterisk_live_queue_race_test";
const { prefix: PREFIX, missing } = livePeers(TEST);
const RECORD_TO = Deno.env.get("SVC_RECORD_TRANSCRIPTS");
const PEOPLE = ["alice", "bob", "carol"];

/** svc in this process on the Asterisk adapter (through `amiPort`), the race's people built. */
const liveWorld = (amiPort: number, pbx: Pbx) =>
  svcOnPbx(amiPort, pbx, async (ctx) => raceWorld(ctx, await scenarioWorld(ctx)));

Deno.test({
  name: "on a real Asterisk: two agents answer one queue call at once, the queue connects one",
  ignore: missing,
  // the phones' and Asterisk's pipes close asynchronously; everything is reaped in `finally`
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { pbx, recorder, phones, stop } = await startRecordedPbx({
      prefix: PREFIX!,
      config: { "manager.conf": quietManager },
      svc: liveWorld,
      file: "queues_svc.conf",
      phones: Object.fromEntries(PEOPLE.map((user) => [user, { user, answerMode: "manual" }])),
      registerMs: 20_000,
    });
    let live: Awaited<ReturnType<typeof liveWorld>> | null = null;
    try {
      // the recorded session: svc connects again, as in CI on the replay
      live = await liveWorld(recorder.port, pbx);
      const { ctx, w, platform } = live;
      const events = capture(ctx);
      platform.start();
      await platform.firstSync();
      const settle = async () => {
        await sleep(400);
        await platform.settled();
      };
      const [alice, bob, carol] = PEOPLE.map((user) => phones[user]!.ctrl) as [
        Phone["ctrl"],
        Phone["ctrl"],
        Phone["ctrl"],
      ];
      await logInBoth(w);
      await settle();
      const marks = [alice.mark(), bob.mark(), carol.mark()];
      await dialQueue(w);
      await alice.waitEvent("CALL_INCOMING", marks[0]!);
      await alice.accept();
      await bob.waitEvent("CALL_INCOMING", marks[1]!);
      await carol.waitEvent("CALL_INCOMING", marks[2]!);
      await Promise.all([bob.accept(), carol.accept()]);
      await sleep(2000);
      await platform.settled();
      await alice.hangup();
      await until(() => platform.calls().length === 0, 10_000, "the call ended");
      await settle();
      await logOutBoth(w);
      await settle();
      const { winner } = checkRace(events, w);
      console.log(
        `${TEST}: ${winner} connected; both phones answered: ${raced(recorder.text())}`,
      );
    } finally {
      // written even when the scenario failed: what Asterisk said is the first thing to read
      if (RECORD_TO && live) {
        await Deno.mkdir(RECORD_TO, { recursive: true });
        await Deno.writeTextFile(`${RECORD_TO}/${QUEUE_RACE_TRANSCRIPT}.jsonl`, recorder.text());
      }
      await live?.close();
      await stop();
    }
  },
});

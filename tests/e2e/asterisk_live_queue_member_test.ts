/**
 * A queue member that is no agent of svc's answers a queue call, on a REAL Asterisk with a baresip
 * phone, where both are installed (as `asterisk_live_test.ts` finds them; skipped with a one-line
 * notice otherwise): the scenario and checks of
 * `tests/lib/platform/asterisk/queue_outside_member.ts`.
 *
 * With `SVC_RECORD_TRANSCRIPTS=<dir>` the AMI session is written there as
 * `34-queue-outside-member.jsonl` (`tests/peers/asterisk_transcripts/`;
 * `queue_outside_member_test.ts` replays it in CI).
 */
import assert from "node:assert/strict";
import { OUTSIDE_ROUTE, type Pbx, quietManager } from "../peers/asterisk_pbx.ts";
import { startRecordedPbx, svcOnPbx } from "./recorded_pbx.ts";
import { livePeers } from "../peers/live_peers.ts";
import { scenarioWorld } from "../lib/platform/fixtures.ts";
import { capture } from "../lib/platform/scenario_runner.ts";
import {
  checkOutsideMember,
  dialQueue,
  OUTSIDE_MEMBER,
  QUEUE_MEMBER_TRANSCRIPT,
} from "../lib/platform/asterisk/queue_outside_member.ts";
import { sleep, until } from "./svc_http.ts";

const TEST = "asterisk_live_queue_member_test";
const { prefix: PREFIX, missing } = livePeers(TEST);
const RECORD_TO = Deno.env.get("SVC_RECORD_TRANSCRIPTS");

/** svc in this process on the Asterisk adapter (through `amiPort`), the table's people built. */
const liveWorld = (amiPort: number, pbx: Pbx) => svcOnPbx(amiPort, pbx, scenarioWorld);

Deno.test({
  name: "on a real Asterisk: a queue member svc does not know answers, the caller is established",
  ignore: missing,
  // the phones' and Asterisk's pipes close asynchronously; everything is reaped in `finally`
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { pbx, recorder, phones, stop } = await startRecordedPbx({
      prefix: PREFIX!,
      config: {
        "manager.conf": quietManager,
        "extensions.conf": (ours) => `${ours}\n${OUTSIDE_ROUTE}\n`,
      },
      svc: liveWorld,
      file: "queues_svc.conf",
      phones: { alice: { user: "alice", answerMode: "manual" } },
      registerMs: 20_000,
    });
    let live: Awaited<ReturnType<typeof liveWorld>> | null = null;
    try {
      const added = await pbx.cli(`queue add member ${OUTSIDE_MEMBER} to support`);
      assert.match(added, /Added interface/, added);
      // the recorded session: svc connects again, as in CI on the replay
      live = await liveWorld(recorder.port, pbx);
      const { ctx, w, platform } = live;
      const events = capture(ctx);
      platform.start();
      await platform.firstSync();
      await sleep(400);
      await platform.settled();
      const alice = phones.alice!.ctrl;
      const mark = alice.mark();
      await dialQueue(w);
      await alice.waitEvent("CALL_INCOMING", mark);
      await alice.accept();
      await until(
        () =>
          events.some((event) => event.kind === "phone" && event.eventType === "EventEstablished"),
        10_000,
        "alice's call established",
      );
      await sleep(1500);
      await alice.hangup();
      await until(() => platform.calls().length === 0, 10_000, "the call ended");
      await sleep(400);
      await platform.settled();
      checkOutsideMember(events, w);
    } finally {
      // written even when the scenario failed: what Asterisk said is the first thing to read
      if (RECORD_TO && live) {
        await Deno.mkdir(RECORD_TO, { recursive: true });
        await Deno.writeTextFile(`${RECORD_TO}/${QUEUE_MEMBER_TRANSCRIPT}.jsonl`, recorder.text());
      }
      await live?.close();
      await stop();
    }
  },
});

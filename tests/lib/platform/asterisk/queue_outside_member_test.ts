/**
 * A queue member that is no agent of svc's answers a queue call (`queue_outside_member.ts`), on
 * the Asterisk adapter against the replay of the real session recorded by
 * `tests/e2e/asterisk_live_queue_member_test.ts`: Asterisk says the call left the queue
 * (`QueueCallerLeave`) before it says whom it connected (`AgentConnect`), which is the answer, not
 * a timeout.
 */
import assert from "node:assert/strict";
import { startAmiReplay, SVC_DRIVEN } from "../../../peers/ami_replay.ts";
import { capture } from "../scenario_runner.ts";
import { asteriskContext } from "./fixtures.ts";
import { checkOutsideMember, dialQueue, QUEUE_MEMBER_TRANSCRIPT } from "./queue_outside_member.ts";

Deno.test(`on Asterisk (replay of ${QUEUE_MEMBER_TRANSCRIPT}): a member svc does not know answers a queue call`, async () => {
  const replay = await startAmiReplay({
    connections: [QUEUE_MEMBER_TRANSCRIPT],
    // recorded from svc itself: every action svc sends for a command is the client's to send
    auto: (action) => !SVC_DRIVEN.has((action.get("Action") ?? "").toLowerCase()),
  });
  const a = await asteriskContext(replay.port);
  try {
    const events = capture(a.ctx);
    a.platform.start();
    await a.platform.firstSync();
    await replay.waiting();
    await dialQueue(a.w);
    await replay.waiting();
    await a.platform.settled();
    assert.equal(await replay.waiting(), "end", "the whole recording was played");
    checkOutsideMember(events, a.w);
    assert.deepEqual(a.platform.calls(), [], "no call left");
  } finally {
    await a.close();
    await replay.close();
  }
});

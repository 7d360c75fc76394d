/**
 * A queue member that is no agent of svc's (added by hand on the PBX, as an operator may: here a
 * `Local` channel that answers, standing for a number outside) answers a queue call on Asterisk:
 * the queue connects it (`AgentConnect` naming a member svc does not know), and the caller's call
 * is established with nobody of svc's on the other end. The simulator has no members but svc's
 * agents, so this is not a row of the shared scenario table: it is played live
 * (`tests/e2e/asterisk_live_queue_member_test.ts`, which records `34-queue-outside-member`) and on
 * the replay of that recording (`queue_outside_member_test.ts`), with the same checks.
 *
 * The people are the scenario table's (alice 1001, queue `support` 3001 whose agent 8001 is not
 * logged in); the member is `Local/0611223344@acc-outside` (`OUTSIDE_ROUTE`'s context, which
 * answers). alice dials the queue through svc, the member answers, alice hangs up.
 */
import assert from "node:assert/strict";
import type { PlatformEvent } from "../../../../lib/platform/port.ts";
import type { World } from "../scenarios.ts";

export const QUEUE_MEMBER_TRANSCRIPT = "34-queue-outside-member";

/** The member added on the PBX, svc knowing nothing of it. */
export const OUTSIDE_MEMBER = "Local/0611223344@acc-outside";

export const dialQueue = (w: World) => w.services.platform.dialNumber(w.alice, "3001", {});

/**
 * alice's call is dialled, established and released (with the queue's number), her history has
 * it answered; the queue counts it joined then answered, by no agent of svc's.
 */
export function checkOutsideMember(events: PlatformEvent[], w: World): void {
  const phone = events.flatMap((event) =>
    event.kind === "phone" ? [`${event.username} ${event.eventType} ${event.otherDN}`] : []
  );
  assert.deepEqual(phone, [
    "alice EventDialing 3001",
    "alice EventEstablished 3001",
    "alice EventReleased 3001",
  ]);
  assert.deepEqual(events.filter((event) => event.kind === "agent"), [], "no agent moved");
  const queue = events.flatMap((event) =>
    event.kind === "queue_call"
      ? [`${event.event} ${event.callerNumber} ${event.agentId ?? "-"}`]
      : []
  );
  assert.deepEqual(queue.slice(0, 2), ["joined 1001 -", "answered 1001 -"]);
  const history = events.flatMap((event) =>
    event.kind === "call_ended"
      ? event.records.map((record) =>
        `${record.userId === w.alice.id ? "alice" : record.userId} ${record.status} ` +
        `${record.dstNum} ${record.answeredMs !== null}`
      )
      : []
  );
  assert.deepEqual(history, ["alice emitted 3001 true"]);
}

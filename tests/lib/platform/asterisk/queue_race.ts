/**
 * Two agents answer one call of a `ringall` queue at the same moment, on Asterisk (found by the
 * live burst test of issue 27 §2): the queue connects one (`AgentConnect`) and hangs the other up.
 * The other took no call: it rang, was released and missed it, and the caller's call goes on with
 * the one connected. The simulator offers a waiting call to one agent at a time, so this is not a
 * row of the shared scenario table: it is played live (`tests/e2e/asterisk_live_queue_race_test.ts`,
 * which records `33-queue-race`) and on the replay of that recording
 * (`queue_race_test.ts`), with the same checks.
 *
 * The people are the scenario table's (alice 1001, bob 1002, carol 1003, queue `support` 3001
 * with agent 8001) and agent 8002 in the same queue. Agent 8001 logs in on bob's phone, 8002 on
 * carol's; alice dials the queue through svc; bob and carol answer together; alice hangs up; both
 * agents log out.
 */
import assert from "node:assert/strict";
import type { PlatformEvent } from "../../../../lib/platform/port.ts";
import type { AgentRecord } from "../../../../lib/store/agents.ts";
import { confd, type TestContext } from "../../../helpers.ts";
import { addAgent } from "../fixtures.ts";
import type { World } from "../scenarios.ts";

export const QUEUE_RACE_TRANSCRIPT = "33-queue-race";

export interface RaceWorld extends World {
  /** Agent 8002, in queue `support` too. */
  second: AgentRecord;
}

/** The scenario table's world `w` (built on `ctx`), with agent 8002 added to its queue. */
export async function raceWorld(ctx: TestContext, w: World): Promise<RaceWorld> {
  const second = await addAgent({ ctx, api: await confd(ctx) }, "8002", w.queue.id);
  return { ...w, second };
}

/** Agent 8001 on bob's phone, 8002 on carol's. */
export async function logInBoth(w: RaceWorld): Promise<void> {
  await w.services.platform.agentLogin(w.agent, "1002", "default");
  await w.services.platform.agentLogin(w.second, "1003", "default");
}

export const dialQueue = (w: RaceWorld) =>
  w.services.platform.dialNumber(w.alice, "3001", { crm: "42" });

export async function logOutBoth(w: RaceWorld): Promise<void> {
  await w.services.platform.agentLogout(w.agent.id);
  await w.services.platform.agentLogout(w.second.id);
}

/** Each user's phone events (`type otherDN`) and each agent's states, in the order they came. */
function byParty(events: PlatformEvent[]) {
  const parties: Record<string, string[]> = {};
  const add = (party: string, line: string) => (parties[party] ??= []).push(line);
  for (const event of events) {
    if (event.kind === "phone") add(event.username, `${event.eventType} ${event.otherDN}`);
    if (event.kind === "agent") add(event.agentNumber, event.name);
  }
  return parties;
}

/**
 * The events of the scenario: one agent connected and established once (the winner, either),
 * the other rung, released, ready again and with a missed call; one `answered` queue event.
 */
export function checkRace(events: PlatformEvent[], w: RaceWorld): { winner: string } {
  const parties = byParty(events);
  const established = ["bob", "carol"].filter((user) =>
    parties[user]?.some((line) => line.startsWith("EventEstablished"))
  );
  assert.equal(established.length, 1, `one agent connected: ${JSON.stringify(parties)}`);
  const winner = established[0]!;
  const loser = winner === "bob" ? "carol" : "bob";
  const agentOf = (user: string) => user === "bob" ? w.agent.number : w.second.number;
  assert.deepEqual(parties, {
    alice: ["EventDialing 3001", "EventEstablished 3001", "EventReleased 3001"],
    [winner]: ["EventRinging 1001", "EventEstablished 1001", "EventReleased 1001"],
    [loser]: ["EventRinging 1001", "EventReleased 1001"],
    [agentOf(winner)]: [
      "AgentReady",
      "AgentRinging",
      "AgentOnCall",
      "AgentOnWrapup",
      "AgentReady",
      "AgentLoggedOut",
    ],
    [agentOf(loser)]: ["AgentReady", "AgentRinging", "AgentReady", "AgentLoggedOut"],
  });
  const ids = new Map([[w.agent.id, w.agent.number], [w.second.id, w.second.number]]);
  const queue = events.flatMap((event) =>
    event.kind === "queue_call"
      ? [`${event.event} ${event.callerNumber} ${ids.get(event.agentId ?? -1) ?? ""}`.trim()]
      : []
  );
  assert.deepEqual(queue, [
    "joined 1001",
    `answered 1001 ${agentOf(winner)}`,
    `completed 1001 ${agentOf(winner)}`,
  ]);
  const names = new Map([w.alice, w.bob, w.carol].map((user) => [user.id, user.username!]));
  const history = events.flatMap((event) =>
    event.kind === "call_ended"
      ? event.records.map((record) =>
        [
          names.get(record.userId),
          record.status,
          record.srcUsername,
          record.dstUsername,
          record.dstNum,
          record.answeredMs !== null,
        ].join(" ")
      )
      : []
  );
  assert.deepEqual(
    history.sort(),
    [
      `alice emitted alice ${winner} 3001 true`,
      `${winner} answered alice ${winner} 3001 true`,
      `${loser} missed alice ${loser} 3001 false`,
    ].sort(),
  );
  return { winner };
}

/**
 * The recorded session `text` (`ami_recorder.ts`'s lines) holds the race: both agents' phones
 * answered (their channels went up), though the queue connects only one.
 */
export function raced(text: string): boolean {
  const up = new Set<string>();
  for (const line of text.split("\n").filter(Boolean)) {
    const { dir, data } = JSON.parse(line) as { dir: string; data?: string };
    if (dir !== "recv" || !data) continue;
    for (const block of data.split("\r\n\r\n")) {
      const phone = /^Channel: PJSIP\/(bob|carol)-/m.exec(block)?.[1];
      if (phone && block.startsWith("Event: Newstate") && /^ChannelStateDesc: Up$/m.test(block)) {
        up.add(phone);
      }
    }
  }
  return up.size === 2;
}

/**
 * Plays a scenario of `scenarios.ts` on either adapter: on the simulator in virtual time, or on
 * the Asterisk adapter connected to a replay of the recorded AMI session; and checks that it gave
 * exactly the scenario's events (phone and agent, interleaved, in order) and history records.
 */
import assert from "node:assert/strict";
import type { AmiMessage } from "../../../lib/platform/asterisk/ami_message.ts";
import type {
  AgentPresence,
  CallStarted,
  Platform,
  PlatformEvent,
} from "../../../lib/platform/port.ts";
import { setup, type TestContext } from "../../helpers.ts";
import {
  type AmiReplayOptions,
  CLIENT_DRIVEN,
  startAmiReplay,
  SVC_DRIVEN,
} from "../../peers/ami_replay.ts";
import { asteriskContext } from "./asterisk/fixtures.ts";
import { scenarioWorld } from "./fixtures.ts";
import {
  type AgentLine,
  type HistoryLine,
  type ListenLine,
  type PhoneLine,
  type QueueLine,
  type RoomLine,
  type Scenario,
  type VoicemailLine,
  type World,
} from "./scenarios.ts";

interface Outcome {
  events: PlatformEvent[];
  /** What each dial command answered, in order. */
  started: CallStarted[];
}

/** Every event handed to the platform's listeners, in order. */
export function capture(ctx: TestContext): PlatformEvent[] {
  const events: PlatformEvent[] = [];
  ctx.services.platform.onEvents((batch) => {
    events.push(...batch);
    return Promise.resolve();
  });
  return events;
}

/**
 * Checks `agentPresenceVersion`'s promise whenever called: while it reads as it did at the last
 * call, the agent's presence is the one read then. Called after each step and with each batch of
 * events, on both adapters; `versions` counts the distinct versions seen.
 */
function presenceVersionWatch(platform: Platform, agentId: number) {
  let last: { version: number; presence: AgentPresence } | null = null;
  const versions = new Set<number>();
  return {
    versions,
    async check(when: string): Promise<void> {
      const version = platform.agentPresenceVersion();
      const [presence] = await platform.agentPresences([agentId]);
      if (version === null) return;
      if (last?.version === version) {
        assert.deepEqual(presence, last.presence, `${when}: a presence changed, not its version`);
      }
      last = { version, presence: presence! };
      versions.add(version);
    },
  };
}

/** The scenario's agent events, and what the version watch saw of them. */
function checkVersions(events: PlatformEvent[], watch: ReturnType<typeof presenceVersionWatch>) {
  if (events.some((event) => event.kind === "agent")) {
    assert.ok(watch.versions.size > 1, "agent events, and the presence version never changed");
  }
}

const isStarted = (value: unknown): value is CallStarted =>
  typeof value === "object" && value !== null && "linkedId" in value;

export async function onSimulator(scenario: Scenario): Promise<Outcome & { w: World }> {
  const ctx = await setup();
  const w = await scenarioWorld(ctx);
  await scenario.prepare?.(w);
  const sim = ctx.services.sim!;
  for (const extension of ["1001", "1002", "1003"]) {
    await sim.setPolicy(extension, { policy: "manual" });
  }
  for (const [extension, policy] of Object.entries(scenario.policies ?? {})) {
    await sim.setPolicy(extension, { policy });
  }
  const events = capture(ctx);
  const watch = presenceVersionWatch(sim, w.agent.id);
  sim.onEvents(() => watch.check("an event"));
  const started: CallStarted[] = [];
  const phones = {
    act: (extension: string, action: Parameters<typeof sim.act>[1]) => sim.act(extension, action),
    policy: async (extension: string, policy: "auto" | "manual" | "busy" | "unavailable") => {
      await sim.setPolicy(extension, { policy });
    },
    advance: (ms: number) => ctx.clock.advance(ms),
    keys: (extension: string, digits: string) => sim.pressKeys(extension, digits),
  };
  for (const [i, step] of scenario.steps.entries()) {
    await watch.check(`before step ${i}`);
    const result = await step.command(w);
    if (isStarted(result)) started.push(result);
    await watch.check(`after step ${i}`);
    await step.phones?.(phones);
    await watch.check(`after step ${i}'s phones`);
  }
  await sim.close();
  checkVersions(events, watch);
  return { events, started, w };
}

export async function onAsterisk(
  scenario: Scenario,
  faults: Partial<AmiReplayOptions> = {},
): Promise<Outcome & { w: World; actions: AmiMessage[] }> {
  const replay = await startAmiReplay({
    connections: [scenario.transcript!],
    auto: (action, index) =>
      !scenario.clientSends?.includes(index) &&
      (scenario.autoSends?.includes(index) ||
        !(scenario.recordedBySvc ? SVC_DRIVEN : CLIENT_DRIVEN).has(
          (action.get("Action") ?? "").toLowerCase(),
        )),
    ...faults,
  });
  const t = await asteriskContext(replay.port);
  try {
    await scenario.prepare?.(t.w);
    const events = capture(t.ctx);
    const watch = presenceVersionWatch(t.platform, t.w.agent.id);
    t.platform.onEvents(() => watch.check("an event"));
    t.platform.start();
    await t.platform.firstSync();
    await replay.waiting();
    const started: CallStarted[] = [];
    for (const [i, step] of scenario.steps.entries()) {
      await watch.check(`before step ${i}`);
      const result = await step.command(t.w);
      if (isStarted(result)) started.push(result);
      await replay.waiting();
      await t.platform.settled();
      await watch.check(`after step ${i}`);
    }
    checkVersions(events, watch);
    return { events, started, w: t.w, actions: replay.actions };
  } finally {
    await t.close();
    await replay.close();
  }
}

/** The people's names (`otherDName`) by their extensions. */
const PEOPLE: Record<string, string> = { "1001": "alice", "1002": "bob", "1003": "carol" };

/** The events as the table writes them: calls and legs numbered by order of appearance. */
function lines(
  events: PlatformEvent[],
): (PhoneLine | AgentLine | ListenLine | VoicemailLine | RoomLine)[] {
  const calls = new Map<string, number>();
  const legs = new Map<string, number>();
  const muted = new Map<string, boolean>();
  const number = (map: Map<string, number>, id: string) => {
    if (!map.has(id)) map.set(id, map.size + 1);
    return map.get(id)!;
  };
  return events.flatMap((
    event,
  ): (PhoneLine | AgentLine | ListenLine | VoicemailLine | RoomLine)[] => {
    if (event.kind === "phone") {
      return [[
        event.username,
        event.eventType,
        event.DN,
        event.otherDN,
        number(calls, event.linkedId),
        number(legs, event.uniqueId),
      ]];
    }
    if (event.kind === "agent") {
      return [["agent", event.name, event.agentNumber, event.phoneNb, event.username]];
    }
    if (event.kind === "listen") {
      const state = event.started ? "started" : "stopped";
      return [["listen", state, event.agentNumber, event.phoneNb, event.supervisorUsername]];
    }
    if (event.kind === "voicemail") {
      return [["voicemail", event.newMessages, event.oldMessages]];
    }
    if (event.kind === "room") {
      // talking comes from Asterisk's talk detection only (the simulator has no sound): an update
      // is a line when it mutes or unmutes
      const concerned = event.participant;
      if (event.event === "update" && concerned) {
        if ((muted.get(concerned.callId) ?? false) === concerned.muted) return [];
      }
      if (concerned) muted.set(concerned.callId, concerned.muted);
      const members = event.event === "recording"
        ? event.recording ? "on" : "off"
        : event.participants.map((p) => `${p.username}${p.muted ? "*" : ""}`).join(" ");
      return [["room", event.event, event.participant?.username ?? "", members]];
    }
    return [];
  });
}

function historyLines(events: PlatformEvent[], w: World): HistoryLine[] {
  const names = new Map([w.alice, w.bob, w.carol].map((user) => [user.id, user.username!]));
  return events.flatMap((event) =>
    event.kind === "call_ended"
      ? event.records.map((record): HistoryLine => [
        names.get(record.userId) ?? String(record.userId),
        record.status,
        record.srcUsername,
        record.dstUsername,
        record.srcNum,
        record.dstNum,
        record.answeredMs !== null,
      ])
      : []
  );
}

/** The queue events as the table writes them: event, caller number, position or agent number. */
function queueLines(events: PlatformEvent[], w: World): QueueLine[] {
  return events.flatMap((event): QueueLine[] =>
    event.kind === "queue_call"
      ? [[
        event.event,
        event.queueId === w.queue.id ? "support" : String(event.queueId),
        event.callerNumber,
        event.event === "joined"
          ? String(event.position)
          : event.agentId === w.agent.id
          ? w.agent.number
          : "",
      ]]
      : []
  );
}

/**
 * `actual` is `expected`; else the error names the first line that differs and lists both in
 * full, one line each, so that the end of a long test output (all a CI log may keep) has them.
 */
function same(what: string, actual: unknown[], expected: unknown[]): void {
  const first = actual.findIndex((line, i) => JSON.stringify(line) !== JSON.stringify(expected[i]));
  const at = first === -1 && actual.length === expected.length
    ? -1
    : first === -1
    ? Math.min(actual.length, expected.length)
    : first;
  if (at === -1) return;
  const list = (rows: unknown[]) => rows.map((row, i) => `  ${i}: ${JSON.stringify(row)}`);
  throw new assert.AssertionError({
    message: [
      `${what} differ from line ${at}`,
      "expected:",
      ...list(expected),
      "actual:",
      ...list(actual),
      `${what}: line ${at} expected ${JSON.stringify(expected[at])}, ` +
      `came ${JSON.stringify(actual[at])}`,
    ].join("\n"),
    actual,
    expected,
  });
}

/** The scenario's events and history, the variables on every phone event, the dials' linkedIds. */
export function check(scenario: Scenario, { events, started, w }: Outcome & { w: World }): void {
  same("events", lines(events), scenario.events);
  same("queue events", queueLines(events, w), scenario.queue ?? []);
  same("history", historyLines(events, w), scenario.history);
  const usr = Object.fromEntries(
    Object.entries(scenario.variables ?? {}).map(([key, value]) => [`USR_${key}`, value]),
  );
  const linkedIds = new Set<string>();
  const names: Record<string, string> = { ...PEOPLE, ...scenario.names };
  const phone = events.filter((event) => event.kind === "phone");
  const attached = Object.fromEntries(
    Object.entries(scenario.attached?.variables ?? {}).map(([key, value]) => [`USR_${key}`, value]),
  );
  for (const [i, event] of phone.entries()) {
    linkedIds.add(event.linkedId);
    const more = scenario.attached && i >= scenario.attached.from ? attached : {};
    assert.deepEqual(
      event.userData,
      { PLATFORM_USERID: String(event.userId), ...usr, ...more },
      `userData of phone event ${i}`,
    );
    const name = names[event.otherDN] ?? "";
    assert.equal(event.otherDName, name, `otherDName of ${event.username}'s ${event.eventType}`);
  }
  if (scenario.recordStates) {
    same("record states", phone.map((event) => event.recordState), scenario.recordStates);
  }
  if (scenario.monitorStates) {
    const agents = events.filter((event) => event.kind === "agent");
    same("monitor states", agents.map((event) => event.monitorState), scenario.monitorStates);
  }
  for (const { linkedId } of started) {
    // a dial whose events all went to nobody (none here) would not show: every one does
    assert.ok(linkedIds.has(linkedId), `events of the call ${linkedId}`);
  }
}

/**
 * The scenario's rows cut into streams that come from one server each: each user's phone events,
 * then the agent, listening, voicemail and room events. Calls and legs are numbered afresh within
 * each stream; `links` says which streams' calls are one call of the whole (the same `linkedId`).
 */
function streams(rows: ReturnType<typeof lines>) {
  const byStream = new Map<string, unknown[][]>();
  /** A call of the whole (its number in `rows`) → the stream calls it is. */
  const calls = new Map<number, Set<string>>();
  const numbering = new Map<string, { calls: Map<number, number>; legs: Map<number, number> }>();
  for (const row of rows) {
    const stream = String(row[0]);
    const out = byStream.get(stream) ?? [];
    byStream.set(stream, out);
    if (row.length !== 6 || typeof row[4] !== "number") {
      out.push([...row]);
      continue;
    }
    const own = numbering.get(stream) ?? { calls: new Map(), legs: new Map() };
    numbering.set(stream, own);
    const local = (map: Map<number, number>, n: number) => {
      if (!map.has(n)) map.set(n, map.size + 1);
      return map.get(n)!;
    };
    const call = local(own.calls, row[4]);
    out.push([row[0], row[1], row[2], row[3], call, local(own.legs, row[5] as number)]);
    calls.set(row[4], (calls.get(row[4]) ?? new Set()).add(`${stream}#${call}`));
  }
  const links = [...calls.values()].map((set) => [...set].sort().join(" ")).sort();
  return { byStream, links };
}

/**
 * {@link check} for a scenario played with its people on several PBX servers
 * (docs/asterisk.md, "Several servers"): two servers' events have no order between them, so each
 * stream of one server (a user's phone events, the agents', …) must be the table's, in order;
 * the calls the streams share must be the table's (one `linkedId` across servers); the history
 * the table's records, in any order; the rest as {@link check} has it.
 */
export function checkAcross(
  scenario: Scenario,
  { events, started, w }: Outcome & { w: World },
): void {
  const actual = streams(lines(events));
  const expected = streams(scenario.events);
  const streamNames = [...new Set([...expected.byStream.keys(), ...actual.byStream.keys()])];
  for (const name of streamNames.sort()) {
    same(`${name}'s events`, actual.byStream.get(name) ?? [], expected.byStream.get(name) ?? []);
  }
  same("calls shared by the streams", actual.links, expected.links);
  same("queue events", queueLines(events, w), scenario.queue ?? []);
  const sorted = (rows: HistoryLine[]) => rows.map((row) => JSON.stringify(row)).sort();
  same("history", sorted(historyLines(events, w)), sorted(scenario.history));
  const phone = events.filter((event) => event.kind === "phone");
  const usr = Object.fromEntries(
    Object.entries(scenario.variables ?? {}).map(([key, value]) => [`USR_${key}`, value]),
  );
  const attached = Object.fromEntries(
    Object.entries(scenario.attached?.variables ?? {}).map(([key, value]) => [`USR_${key}`, value]),
  );
  const names: Record<string, string> = { ...PEOPLE, ...scenario.names };
  for (const [i, event] of phone.entries()) {
    const base = { PLATFORM_USERID: String(event.userId), ...usr };
    // which of a user's events follow the data attached is the table's order, not the servers'
    const withData = scenario.attached &&
      Object.keys(attached).every((key) => key in event.userData);
    assert.deepEqual(event.userData, withData ? { ...base, ...attached } : base, `userData ${i}`);
    const name = names[event.otherDN] ?? "";
    assert.equal(event.otherDName, name, `otherDName of ${event.username}'s ${event.eventType}`);
  }
  if (scenario.recordStates) {
    // each user's record states in order (the table's phone rows say whose each one is)
    const expectedRows = scenario.events.filter((row) => row.length === 6 && row[0] !== "room");
    for (const user of new Set(phone.map((event) => event.username))) {
      same(
        `${user}'s record states`,
        phone.filter((event) => event.username === user).map((event) => event.recordState),
        scenario.recordStates.filter((_, i) => expectedRows[i]?.[0] === user),
      );
    }
  }
  if (scenario.monitorStates) {
    const agents = events.filter((event) => event.kind === "agent");
    same("monitor states", agents.map((event) => event.monitorState), scenario.monitorStates);
  }
  const linkedIds = new Set(phone.map((event) => event.linkedId));
  for (const { linkedId } of started) {
    assert.ok(linkedIds.has(linkedId), `events of the call ${linkedId}`);
  }
}

/**
 * The scenario table both platform adapters are tested with (DESIGN.md: the same scenario gives
 * the same events on both). Each scenario is one of the real sessions recorded on Asterisk 22
 * (`tests/peers/asterisk_transcripts/`): the commands svc sends, and what the phones did — played
 * by the simulated phones on the simulator, by the recording on the Asterisk adapter. The
 * expected events are written once and must come out of both, in order.
 *
 * Everybody is built through `/1.1` alike: alice 1001, bob 1002, carol 1003 (SIP endpoints of the
 * same names, context `default`), queue `support` 3001 holding agent 8001, and the recorded
 * phones answer or not as each scenario says.
 */
import assert from "node:assert/strict";
import type { LiveCall } from "../../../lib/platform/call_control.ts";
import type { Services } from "../../../lib/services.ts";
import { type PhoneEventType, PlatformRefusal } from "../../../lib/platform/port.ts";
import type { AgentRecord } from "../../../lib/store/agents.ts";
import type { QueueRecord } from "../../../lib/store/queues.ts";
import type { UserRecord } from "../../../lib/store/users.ts";
import type { Confd } from "../../helpers.ts";
import { setDnd, setForward } from "../../../lib/user_services.ts";
import { meetingRecord } from "../../../lib/meetingrooms/rooms.ts";
import { meetings } from "../../../lib/store/meetings.ts";
import { transact } from "../../../lib/store/records.ts";
import { meetingRoomId } from "../../../lib/platform/rooms.ts";

/** What a scenario works with, on either adapter. */
export interface World {
  services: Services;
  alice: UserRecord;
  bob: UserRecord;
  carol: UserRecord;
  agent: AgentRecord;
  queue: QueueRecord;
  /** The configuration daemon's `/1.1`, holding its every ACL. */
  api: Confd;
}

/** The simulated phones, for the simulator's half of a step. */
export interface SimPhones {
  act(extension: string, action: "answer" | "reject" | "hangup" | "hold" | "resume"): Promise<void>;
  policy(extension: string, policy: "auto" | "manual" | "busy" | "unavailable"): Promise<void>;
  /** Moves virtual time on (a phone ringing out). */
  advance(ms: number): Promise<void>;
  /** The phone's user presses keys on its call (a meeting room's PIN, then `#`). */
  keys(extension: string, digits: string): Promise<void>;
}

export interface Step {
  /** What svc is asked, as its routes ask it; a dial answers its `CallStarted`. */
  command(w: World): Promise<unknown>;
  /** What the phones did next in the recording, played on the simulated phones. */
  phones?(sim: SimPhones): Promise<void>;
}

/** A phone event: username, type, DN, otherDN, then its call and its leg by order of appearance. */
export type PhoneLine = [string, PhoneEventType, string, string, number, number];
/** An agent event: its name, the agent's number, phoneNb, username. */
export type AgentLine = ["agent", string, string, string, string];
/** A listening event: started or stopped, the agent's number, its phoneNb, the supervisor. */
export type ListenLine = ["listen", "started" | "stopped", string, string, string];
/** A voicemail event (bob's box, the only one of the table): its new and old messages. */
export type VoicemailLine = ["voicemail", number, number];
/**
 * A queue event (supervision): what happened, the queue, who waits, and its position (`joined`)
 * or the agent's number (`answered`, `completed`).
 */
export type QueueLine = [string, string, string, string];
/**
 * A meeting room's event: what happened, the participant concerned ("" for none: a recording),
 * then the room's members after it, each its username, `*` when muted (a recording: `on`, `off`).
 */
export type RoomLine = ["room", "joined" | "left" | "update" | "recording", string, string];
/** A history record: whose, status, src and dst username, src and dst number, answered. */
export type HistoryLine = [string, string, string, string, string, string, boolean];

export interface Scenario {
  name: string;
  /**
   * The recorded session (`tests/peers/asterisk_transcripts/<name>.jsonl`); null while none is
   * recorded (the scenario runs on the simulator only).
   */
  transcript: string | null;
  /**
   * The session was recorded from svc itself (`tests/e2e/asterisk_live_scenarios_test.ts`): every
   * recorded action svc sends for a command is the client's to send (`SVC_DRIVEN`).
   */
  recordedBySvc?: boolean;
  /** Recorded sends the replay plays by itself beyond the usual ones (index among sends). */
  autoSends?: number[];
  /** Recorded sends svc sends itself beyond the usual ones, e.g. a `Hangup` (index among sends). */
  clientSends?: number[];
  /** Phones whose policy is not `manual` on the simulator. */
  policies?: Record<string, "auto" | "manual" | "busy" | "unavailable">;
  /** Dial variables, reported as `USR_`. */
  variables?: Record<string, string>;
  /**
   * The `otherDName` of a phone event by its `otherDN`, beyond the people's extensions (each
   * shows its user's name) and the numbers no name goes with ("").
   */
  names?: Record<string, string>;
  /** The `recordState` of each phone event, in order, when the scenario checks them. */
  recordStates?: string[];
  /** The `monitorState` of each agent event, in order, when the scenario checks them. */
  monitorStates?: string[];
  /**
   * Variables attached to the call (`setData`) that the phone events carry from the `from`th on
   * (counted among phone events from 0), beyond the dial's.
   */
  attached?: { from: number; variables: Record<string, string> };
  /** Configuration the scenario needs beyond the people's, made before the platform starts. */
  prepare?(w: World): Promise<void>;
  steps: Step[];
  events: (PhoneLine | AgentLine | ListenLine | VoicemailLine | RoomLine)[];
  /** The queue events, in order (none when left out). */
  queue?: QueueLine[];
  history: HistoryLine[];
}

const crm = { crm: "42", ticket: "T-1001" };

/** Variables as phone events carry them (`USR_<key>`). */
const usr = (variables: Record<string, string>) =>
  Object.fromEntries(Object.entries(variables).map(([key, value]) => [`USR_${key}`, value]));

/** A dial from alice to `number`. */
const aliceDials = (number: string, variables = crm): Step["command"] => (w) =>
  w.services.platform.dialNumber(w.alice, number, variables);

const logIn = (extension: string): Step => ({
  command: (w) => w.services.platform.agentLogin(w.agent, extension, "default"),
});
const logOut: Step = { command: (w) => w.services.platform.agentLogout(w.agent.id) };

/** alice calls bob, whose phone rings and stops; the call goes on to carol, who answers. */
const FORWARDED_AFTER_RINGING: Pick<Scenario, "events" | "history"> = {
  events: [
    ["alice", "EventDialing", "1001", "1002", 1, 1],
    ["bob", "EventRinging", "1002", "1001", 1, 2],
    ["bob", "EventReleased", "1002", "1001", 1, 2],
    ["carol", "EventRinging", "1003", "1001", 1, 3],
    ["alice", "EventEstablished", "1001", "1002", 1, 1],
    ["carol", "EventEstablished", "1003", "1001", 1, 3],
    ["alice", "EventReleased", "1001", "1002", 1, 1],
    ["carol", "EventReleased", "1003", "1001", 1, 3],
  ],
  history: [
    ["alice", "emitted", "alice", "carol", "1001", "1002", true],
    ["bob", "missed", "alice", "bob", "1001", "1002", false],
    ["carol", "answered", "alice", "carol", "1001", "1003", true],
  ],
};

/** alice calls an outside number, which answers; alice hangs up. */
const OUTSIDE_NUMBER_ANSWERED: Pick<Scenario, "events" | "history"> = {
  events: [
    ["alice", "EventDialing", "1001", "0612345678", 1, 1],
    ["alice", "EventEstablished", "1001", "0612345678", 1, 1],
    ["alice", "EventReleased", "1001", "0612345678", 1, 1],
  ],
  history: [["alice", "emitted", "alice", "", "1001", "0612345678", true]],
};

/** alice calls bob, both answer; alice holds and resumes, then hangs up. */
const HELD_AND_RESUMED: Pick<Scenario, "events" | "history"> = {
  events: [
    ["alice", "EventDialing", "1001", "1002", 1, 1],
    ["bob", "EventRinging", "1002", "1001", 1, 2],
    ["alice", "EventEstablished", "1001", "1002", 1, 1],
    ["bob", "EventEstablished", "1002", "1001", 1, 2],
    ["alice", "EventOnHold", "1001", "1002", 1, 1],
    ["alice", "EventEstablished", "1001", "1002", 1, 1],
    ["alice", "EventReleased", "1001", "1002", 1, 1],
    ["bob", "EventReleased", "1002", "1001", 1, 2],
  ],
  history: [
    ["alice", "emitted", "alice", "bob", "1001", "1002", true],
    ["bob", "answered", "alice", "bob", "1001", "1002", true],
  ],
};

/** The party of `user`'s phone in a call now (the newest when there are several). */
async function callOf(w: World, user: UserRecord): Promise<LiveCall> {
  const calls = (await w.services.platform.liveCalls()).filter((call) => call.userId === user.id);
  assert.ok(calls.length, `${user.username} is in a call`);
  return calls.at(-1)!;
}

/** A call command on `user`'s party. */
const onCallOf =
  (user: (w: World) => UserRecord, command: Parameters<Services["platform"]["callCommand"]>[1]) =>
  async (w: World) => w.services.platform.callCommand((await callOf(w, user(w))).callId, command);

const ALICE = (w: World) => w.alice;
const BOB = (w: World) => w.bob;

/** A transfer by alice of bob (her peer) to carol, 1003. */
const aliceTransfersBob =
  (flow: "blind" | "attended", timeoutMs: number | null = null) => async (w: World) =>
    w.services.platform.startTransfer({
      flow,
      initiatorCallId: (await callOf(w, w.alice)).callId,
      transferredCallId: (await callOf(w, w.bob)).callId,
      exten: "1003",
      context: "default",
      timeoutMs,
    });

/** alice's transfer in progress. */
async function aliceTransfer(w: World) {
  const alice = (await callOf(w, w.alice)).callId;
  const transfer = (await w.services.platform.transfers()).find((t) => t.id === alice);
  assert.ok(transfer, "alice transfers");
  return transfer;
}

/** alice calls bob; both answer. */
const ALICE_CALLS_BOB: Step = {
  command: aliceDials("1002"),
  phones: async (sim) => {
    await sim.act("1001", "answer");
    await sim.act("1002", "answer");
  },
};

/** The events of {@link ALICE_CALLS_BOB}. */
const ALICE_BOB_TALK: PhoneLine[] = [
  ["alice", "EventDialing", "1001", "1002", 1, 1],
  ["bob", "EventRinging", "1002", "1001", 1, 2],
  ["alice", "EventEstablished", "1001", "1002", 1, 1],
  ["bob", "EventEstablished", "1002", "1001", 1, 2],
];

/** alice starts an attended transfer of bob to carol, who answers. */
const CONSULTATION: Pick<Scenario, "steps" | "events"> = {
  steps: [ALICE_CALLS_BOB, {
    command: aliceTransfersBob("attended"),
    phones: (sim) => sim.act("1003", "answer"),
  }],
  events: [
    ...ALICE_BOB_TALK,
    ["alice", "EventDialing", "1001", "1003", 1, 1],
    ["carol", "EventRinging", "1003", "1001", 1, 3],
    ["alice", "EventEstablished", "1001", "1003", 1, 1],
    ["carol", "EventEstablished", "1003", "1001", 1, 3],
  ],
};

/** alice's call to bob ends, alice's leg released first, as any call's. */
const ALICE_BOB_RELEASED: PhoneLine[] = [
  ["alice", "EventReleased", "1001", "1002", 1, 1],
  ["bob", "EventReleased", "1002", "1001", 1, 2],
];

/** The history of alice's call to bob, both answering. */
const ALICE_BOB_HISTORY: HistoryLine[] = [
  ["alice", "emitted", "alice", "bob", "1001", "1002", true],
  ["bob", "answered", "alice", "bob", "1001", "1002", true],
];

/** The history of alice's call to bob that alice transferred to carol, who answered. */
const TRANSFERRED_HISTORY: HistoryLine[] = [
  ...ALICE_BOB_HISTORY,
  ["carol", "answered", "bob", "carol", "1002", "1003", true],
];

/** `run` is refused by the platform for `reason`. */
const refused = (run: (w: World) => Promise<unknown>, reason: string) => async (w: World) => {
  await assert.rejects(
    () => run(w),
    (error) => error instanceof PlatformRefusal && error.reason === reason,
    `refused: ${reason}`,
  );
};

/** carol, a supervisor, listens to agent 8001's call (answers nothing: no call of the table's). */
const carolListens = async (w: World) => {
  await w.services.platform.listen(w.carol, w.agent.id);
};

/** bob's voicemail box holds `newMessages` and `oldMessages`. */
const bobsBox = (newMessages: number, oldMessages: number) => async (w: World) => {
  const bob = await (await w.api.get(`/users/${w.bob.id}`)).json();
  assert.deepEqual(
    await w.services.platform.voicemailCounts(bob.voicemail_id ?? bob.voicemail?.id),
    { newMessages, oldMessages },
  );
};

/** alice, talking with bob, sends him to carol (blind), who answers and hangs up. */
const BLIND_TRANSFER: { step: Step; events: PhoneLine[] } = {
  step: {
    command: aliceTransfersBob("blind"),
    phones: async (sim) => {
      await sim.act("1003", "answer");
      await sim.act("1003", "hangup");
    },
  },
  events: [
    ...ALICE_BOB_TALK,
    ["alice", "EventReleased", "1001", "1002", 1, 1],
    ["carol", "EventRinging", "1003", "1002", 1, 3],
    ["bob", "EventEstablished", "1002", "1003", 1, 2],
    ["carol", "EventEstablished", "1003", "1002", 1, 3],
    ["bob", "EventReleased", "1002", "1003", 1, 2],
    ["carol", "EventReleased", "1003", "1002", 1, 3],
  ],
};

/** The parties of calls in progress, asserted of `user`'s. */
const expectCall =
  (user: (w: World) => UserRecord, expected: Partial<LiveCall>) => async (w: World) => {
    const call = await callOf(w, user(w));
    assert.deepEqual(
      Object.fromEntries(Object.keys(expected).map((key) => [key, call[key as keyof LiveCall]])),
      expected,
    );
  };

export const SCENARIOS: Scenario[] = [
  {
    name: "dial user: both answer, the callee hangs up",
    transcript: "02-dial-answered",
    variables: crm,
    steps: [{
      command: (w) => w.services.platform.dialUser(w.alice, w.bob, crm),
      phones: async (sim) => {
        await sim.act("1001", "answer");
        await sim.act("1002", "answer");
        await sim.act("1002", "hangup");
      },
    }],
    events: [
      ["alice", "EventDialing", "1001", "1002", 1, 1],
      ["bob", "EventRinging", "1002", "1001", 1, 2],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ["bob", "EventEstablished", "1002", "1001", 1, 2],
      ["alice", "EventReleased", "1001", "1002", 1, 1],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
    ],
    history: [
      ["alice", "emitted", "alice", "bob", "1001", "1002", true],
      ["bob", "answered", "alice", "bob", "1001", "1002", true],
    ],
  },
  {
    name: "dial number: an outside number answers, the caller hangs up",
    transcript: "03-dial-outside-number",
    variables: crm,
    policies: { external: "manual" },
    steps: [{
      command: aliceDials("0612345678"),
      phones: async (sim) => {
        await sim.act("1001", "answer");
        await sim.act("external", "answer");
        await sim.act("1001", "hangup");
      },
    }],
    ...OUTSIDE_NUMBER_ANSWERED,
  },
  {
    name: "dial number: an outside number answers, the caller hangs up through svc",
    transcript: "03-dial-outside-number",
    clientSends: [2], // the recorded Hangup of alice's channel
    variables: crm,
    policies: { external: "manual" },
    steps: [
      {
        command: aliceDials("0612345678"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("external", "answer");
        },
      },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
    ],
    ...OUTSIDE_NUMBER_ANSWERED,
  },
  {
    name: "the caller's own phone does not answer, then rejects: EventFailure, no history",
    transcript: "04-caller-no-answer",
    variables: crm,
    steps: [
      { command: aliceDials("1002"), phones: (sim) => sim.advance(30_000) },
      { command: aliceDials("1002"), phones: (sim) => sim.act("1001", "reject") },
    ],
    events: [
      ["alice", "EventFailure", "1001", "1002", 1, 1],
      ["alice", "EventFailure", "1001", "1002", 2, 2],
    ],
    history: [],
  },
  {
    name: "unregistered phones: the caller's fails; a callee's never rings",
    transcript: "05-caller-unregistered",
    autoSends: [2], // the recorder's synchronous Originate: svc always sends them asynchronous
    variables: crm,
    policies: { "1003": "unavailable" },
    steps: [
      { command: (w) => w.services.platform.dialNumber(w.carol, "1001", crm) },
      { command: aliceDials("1003"), phones: (sim) => sim.act("1001", "answer") },
    ],
    events: [
      ["carol", "EventFailure", "1003", "1001", 1, 1],
      ["alice", "EventDialing", "1001", "1003", 2, 2],
      ["alice", "EventReleased", "1001", "1003", 2, 2],
    ],
    history: [["alice", "emitted", "alice", "carol", "1001", "1003", false]],
  },
  {
    name: "the callee rejects: released, then the caller fails",
    transcript: "06-callee-busy",
    variables: crm,
    steps: [{
      command: aliceDials("1002"),
      phones: async (sim) => {
        await sim.act("1001", "answer");
        await sim.act("1002", "reject");
      },
    }],
    events: [
      ["alice", "EventDialing", "1001", "1002", 1, 1],
      ["bob", "EventRinging", "1002", "1001", 1, 2],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
      ["alice", "EventFailure", "1001", "1002", 1, 1],
    ],
    history: [
      ["alice", "emitted", "alice", "bob", "1001", "1002", false],
      ["bob", "missed", "alice", "bob", "1001", "1002", false],
    ],
  },
  {
    name: "the callee does not answer: a missed call",
    transcript: "07-callee-no-answer",
    variables: crm,
    steps: [{
      command: aliceDials("1002"),
      phones: async (sim) => {
        await sim.act("1001", "answer");
        await sim.advance(30_000);
      },
    }],
    events: [
      ["alice", "EventDialing", "1001", "1002", 1, 1],
      ["bob", "EventRinging", "1002", "1001", 1, 2],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
      ["alice", "EventReleased", "1001", "1002", 1, 1],
    ],
    history: [
      ["alice", "emitted", "alice", "bob", "1001", "1002", false],
      ["bob", "missed", "alice", "bob", "1001", "1002", false],
    ],
  },
  {
    name: "DND: the caller fails, the callee's phone never rings",
    transcript: "08-dnd",
    variables: crm,
    steps: [
      { command: (w) => setDnd(w.services, w.bob.id, true) },
      { command: aliceDials("1002"), phones: (sim) => sim.act("1001", "answer") },
    ],
    events: [
      ["alice", "EventDialing", "1001", "1002", 1, 1],
      ["alice", "EventFailure", "1001", "1002", 1, 1],
    ],
    history: [["alice", "emitted", "alice", "bob", "1001", "1002", false]],
  },
  {
    name: "unconditional forward: the call goes to the destination",
    transcript: "09-forward-unconditional",
    variables: crm,
    steps: [
      {
        command: (w) =>
          setForward(w.services, w.bob.id, "unconditional", {
            enabled: true,
            destination: "1003",
          }),
      },
      {
        command: aliceDials("1002"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("1003", "answer");
          await sim.act("1003", "hangup");
        },
      },
    ],
    events: [
      ["alice", "EventDialing", "1001", "1002", 1, 1],
      ["carol", "EventRinging", "1003", "1001", 1, 2],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ["carol", "EventEstablished", "1003", "1001", 1, 2],
      ["alice", "EventReleased", "1001", "1002", 1, 1],
      ["carol", "EventReleased", "1003", "1001", 1, 2],
    ],
    history: [
      ["alice", "emitted", "alice", "carol", "1001", "1002", true],
      ["carol", "answered", "alice", "carol", "1001", "1003", true],
    ],
  },
  {
    name: "busy forward: the callee rejects, the call goes on to the destination",
    transcript: "10-forward-busy",
    variables: crm,
    steps: [
      {
        command: (w) =>
          setForward(w.services, w.bob.id, "busy", { enabled: true, destination: "1003" }),
      },
      {
        command: aliceDials("1002"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("1002", "reject");
          await sim.act("1003", "answer");
          await sim.act("1001", "hangup");
        },
      },
    ],
    ...FORWARDED_AFTER_RINGING,
  },
  {
    name: "no-answer forward: the callee rings out, the call goes on to the destination",
    transcript: "11-forward-noanswer",
    variables: crm,
    steps: [
      {
        command: (w) =>
          setForward(w.services, w.bob.id, "noanswer", { enabled: true, destination: "1003" }),
      },
      {
        command: aliceDials("1002"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.advance(30_000);
          await sim.act("1003", "answer");
          await sim.act("1003", "hangup");
        },
      },
    ],
    ...FORWARDED_AFTER_RINGING,
  },
  {
    name: "agent: login, a queue call, pause, a call waiting for the unpause, logout",
    transcript: "12-queue-agent",
    variables: crm,
    steps: [
      logIn("1002"),
      {
        command: aliceDials("3001"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("1002", "answer");
          await sim.act("1002", "hangup");
        },
      },
      { command: (w) => w.services.platform.agentPause(w.agent.id, "lunch") },
      { command: aliceDials("3001"), phones: (sim) => sim.act("1001", "answer") },
      {
        command: (w) => w.services.platform.agentUnpause(w.agent.id),
        phones: async (sim) => {
          await sim.act("1002", "answer");
          await sim.act("1001", "hangup");
        },
      },
      logOut,
    ],
    events: [
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["alice", "EventDialing", "1001", "3001", 1, 1],
      ["agent", "AgentRinging", "8001", "1002", "bob"],
      ["bob", "EventRinging", "1002", "1001", 1, 2],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["alice", "EventEstablished", "1001", "3001", 1, 1],
      ["bob", "EventEstablished", "1002", "1001", 1, 2],
      ["alice", "EventReleased", "1001", "3001", 1, 1],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
      ["agent", "AgentOnWrapup", "8001", "1002", "bob"],
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentOnPause", "8001", "1002", "bob"],
      ["alice", "EventDialing", "1001", "3001", 2, 3],
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentRinging", "8001", "1002", "bob"],
      ["bob", "EventRinging", "1002", "1001", 2, 4],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["alice", "EventEstablished", "1001", "3001", 2, 3],
      ["bob", "EventEstablished", "1002", "1001", 2, 4],
      ["alice", "EventReleased", "1001", "3001", 2, 3],
      ["bob", "EventReleased", "1002", "1001", 2, 4],
      ["agent", "AgentOnWrapup", "8001", "1002", "bob"],
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentLoggedOut", "8001", "1002", "bob"],
    ],
    queue: [
      ["joined", "support", "1001", "1"],
      ["answered", "support", "1001", "8001"],
      ["completed", "support", "1001", "8001"],
      ["joined", "support", "1001", "1"],
      ["answered", "support", "1001", "8001"],
      ["completed", "support", "1001", "8001"],
    ],
    history: [
      ["alice", "emitted", "alice", "bob", "1001", "3001", true],
      ["bob", "answered", "alice", "bob", "1001", "3001", true],
      ["alice", "emitted", "alice", "bob", "1001", "3001", true],
      ["bob", "answered", "alice", "bob", "1001", "3001", true],
    ],
  },
  {
    // with several servers: the caller's phone on one server, the queue and its agent's phone on
    // the other (the caller is in when the agent answers, not when the queue answers)
    name: "bob calls the queue: gives up while agent 8001 (carol's phone) is paused, then is taken",
    transcript: "12b-queue-call-by-bob",
    recordedBySvc: true,
    variables: crm,
    steps: [
      logIn("1003"),
      { command: (w) => w.services.platform.agentPause(w.agent.id, "lunch") },
      {
        command: (w) => w.services.platform.dialNumber(w.bob, "3001", crm),
        phones: async (sim) => {
          await sim.act("1002", "answer");
          await sim.advance(2000);
          await sim.act("1002", "hangup");
        },
      },
      { command: (w) => w.services.platform.agentUnpause(w.agent.id) },
      {
        command: (w) => w.services.platform.dialNumber(w.bob, "3001", crm),
        phones: async (sim) => {
          await sim.act("1002", "answer");
          await sim.act("1003", "answer");
          await sim.act("1003", "hangup");
        },
      },
      logOut,
    ],
    events: [
      ["agent", "AgentReady", "8001", "1003", "carol"],
      ["agent", "AgentOnPause", "8001", "1003", "carol"],
      ["bob", "EventDialing", "1002", "3001", 1, 1],
      ["bob", "EventReleased", "1002", "3001", 1, 1],
      ["agent", "AgentReady", "8001", "1003", "carol"],
      ["bob", "EventDialing", "1002", "3001", 2, 2],
      ["agent", "AgentRinging", "8001", "1003", "carol"],
      ["carol", "EventRinging", "1003", "1002", 2, 3],
      ["agent", "AgentOnCall", "8001", "1003", "carol"],
      ["bob", "EventEstablished", "1002", "3001", 2, 2],
      ["carol", "EventEstablished", "1003", "1002", 2, 3],
      ["bob", "EventReleased", "1002", "3001", 2, 2],
      ["carol", "EventReleased", "1003", "1002", 2, 3],
      ["agent", "AgentOnWrapup", "8001", "1003", "carol"],
      ["agent", "AgentReady", "8001", "1003", "carol"],
      ["agent", "AgentLoggedOut", "8001", "1003", "carol"],
    ],
    queue: [
      ["joined", "support", "1002", "1"],
      ["abandoned", "support", "1002", ""],
      ["joined", "support", "1002", "1"],
      ["answered", "support", "1002", "8001"],
      ["completed", "support", "1002", "8001"],
    ],
    history: [
      ["bob", "emitted", "bob", "", "1002", "3001", false],
      ["bob", "emitted", "bob", "carol", "1002", "3001", true],
      ["carol", "answered", "bob", "carol", "1002", "3001", true],
    ],
  },
  {
    name: "dial to queue: the destination answers, then waits for the agent",
    transcript: "13-dial-to-queue",
    variables: crm,
    steps: [
      logIn("1002"),
      {
        command: (w) => w.services.platform.dialToQueue(w.queue, "1003", "3001", crm),
        phones: async (sim) => {
          await sim.act("1003", "answer");
          await sim.act("1002", "answer");
          await sim.act("1003", "hangup");
        },
      },
      logOut,
    ],
    events: [
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["carol", "EventRinging", "1003", "3001", 1, 1],
      ["carol", "EventEstablished", "1003", "3001", 1, 1],
      ["agent", "AgentRinging", "8001", "1002", "bob"],
      ["bob", "EventRinging", "1002", "1003", 1, 2],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["bob", "EventEstablished", "1002", "1003", 1, 2],
      ["carol", "EventReleased", "1003", "3001", 1, 1],
      ["bob", "EventReleased", "1002", "1003", 1, 2],
      ["agent", "AgentOnWrapup", "8001", "1002", "bob"],
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentLoggedOut", "8001", "1002", "bob"],
    ],
    queue: [
      ["joined", "support", "1003", "1"],
      ["answered", "support", "1003", "8001"],
      ["completed", "support", "1003", "8001"],
    ],
    history: [
      ["carol", "answered", "", "carol", "3001", "1003", true],
      ["bob", "answered", "", "bob", "3001", "3001", true],
    ],
  },
  {
    name: "dial from queue: the agent answers, then the destination is called",
    transcript: "14-dial-from-queue",
    variables: crm,
    // carol sees the queue calling, by its name
    names: { "3001": "support" },
    steps: [
      logIn("1002"),
      {
        command: (w) =>
          w.services.platform.dialFromQueue(w.alice, w.queue, "1003", crm, {
            name: null,
            number: null,
          }),
        phones: async (sim) => {
          await sim.act("1002", "answer");
          await sim.act("1003", "answer");
          await sim.act("1003", "hangup");
        },
      },
      logOut,
    ],
    events: [
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentRinging", "8001", "1002", "bob"],
      ["bob", "EventRinging", "1002", "1003", 1, 1],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["bob", "EventDialing", "1002", "1003", 1, 1],
      ["carol", "EventRinging", "1003", "3001", 1, 2],
      ["bob", "EventEstablished", "1002", "1003", 1, 1],
      ["carol", "EventEstablished", "1003", "3001", 1, 2],
      ["bob", "EventReleased", "1002", "1003", 1, 1],
      ["carol", "EventReleased", "1003", "3001", 1, 2],
      ["agent", "AgentOnWrapup", "8001", "1002", "bob"],
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentLoggedOut", "8001", "1002", "bob"],
    ],
    queue: [
      ["joined", "support", "1003", "1"],
      ["answered", "support", "1003", "8001"],
      ["completed", "support", "1003", "8001"],
    ],
    history: [
      ["bob", "emitted", "bob", "carol", "1002", "1003", true],
      ["carol", "answered", "bob", "carol", "1002", "1003", true],
    ],
  },
  {
    name: "hold and resume by the caller",
    transcript: "16-hold",
    variables: crm,
    steps: [{
      command: aliceDials("1002"),
      phones: async (sim) => {
        await sim.act("1001", "answer");
        await sim.act("1002", "answer");
        await sim.act("1001", "hold");
        await sim.act("1001", "resume");
        await sim.act("1001", "hangup");
      },
    }],
    ...HELD_AND_RESUMED,
  },
  {
    name: "hold and resume by the caller, who then hangs up through svc",
    transcript: "16-hold",
    clientSends: [2], // the recorded Hangup of alice's channel (bob's phone is left alone)
    variables: crm,
    steps: [
      {
        command: aliceDials("1002"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("1002", "answer");
          await sim.act("1001", "hold");
          await sim.act("1001", "resume");
        },
      },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
    ],
    ...HELD_AND_RESUMED,
  },
  {
    name: "dial number: an outside route dials a second channel, which answers",
    transcript: "29-dial-outside-route",
    recordedBySvc: true,
    variables: crm,
    policies: { external: "manual" },
    steps: [{
      command: aliceDials("0612345678"),
      phones: async (sim) => {
        await sim.act("1001", "answer");
        await sim.act("external", "answer");
      },
    }, { command: onCallOf(ALICE, { kind: "hangup" }) }],
    ...OUTSIDE_NUMBER_ANSWERED,
  },
  {
    name: "svc holds and resumes the caller's call, then hangs it up",
    transcript: "21-svc-hold-resume",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ALICE_CALLS_BOB,
      {
        command: async (w) => {
          const alice = await callOf(w, w.alice);
          assert.ok(alice.answeredMs !== null, "alice's own phone answered");
        },
      },
      { command: onCallOf(ALICE, { kind: "hold" }) },
      { command: expectCall(ALICE, { onHold: true, talkingTo: [] }) },
      { command: onCallOf(ALICE, { kind: "resume" }) },
      { command: expectCall(ALICE, { onHold: false, state: "up" }) },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
    ],
    events: [
      ...ALICE_BOB_TALK,
      ["alice", "EventOnHold", "1001", "1002", 1, 1],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ...ALICE_BOB_RELEASED,
    ],
    history: ALICE_BOB_HISTORY,
  },
  {
    name: "svc holds the callee's call; the party on hold hangs up: the call ends",
    transcript: "22-svc-hold-held-hangs-up",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ALICE_CALLS_BOB,
      { command: onCallOf(BOB, { kind: "hold" }), phones: (sim) => sim.act("1001", "hangup") },
    ],
    events: [
      ...ALICE_BOB_TALK,
      ["bob", "EventOnHold", "1002", "1001", 1, 2],
      ...ALICE_BOB_RELEASED,
    ],
    history: ALICE_BOB_HISTORY,
  },
  {
    name: "blind transfer: alice sends bob to carol, who answers and hangs up",
    transcript: "23-blind-transfer",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ALICE_CALLS_BOB,
      BLIND_TRANSFER.step,
    ],
    events: BLIND_TRANSFER.events,
    history: TRANSFERRED_HISTORY,
  },
  {
    name: "attended transfer completed: bob and carol talk, alice is free",
    transcript: "24-attended-transfer-complete",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ...CONSULTATION.steps,
      { command: expectCall(BOB, { talkingTo: [] }) },
      {
        command: async (w) => w.services.platform.completeTransfer((await aliceTransfer(w)).id),
        phones: (sim) => sim.act("1003", "hangup"),
      },
    ],
    events: [
      ...CONSULTATION.events,
      ["alice", "EventReleased", "1001", "1003", 1, 1],
      ["bob", "EventEstablished", "1002", "1003", 1, 2],
      ["carol", "EventEstablished", "1003", "1002", 1, 3],
      ["bob", "EventReleased", "1002", "1003", 1, 2],
      ["carol", "EventReleased", "1003", "1002", 1, 3],
    ],
    history: TRANSFERRED_HISTORY,
  },
  {
    name: "attended transfer cancelled: carol is released, alice talks with bob again",
    transcript: "25-attended-transfer-cancel",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ...CONSULTATION.steps,
      {
        command: async (w) => w.services.platform.cancelTransfer((await aliceTransfer(w)).id),
        phones: (sim) => sim.act("1001", "hangup"),
      },
    ],
    events: [
      ...CONSULTATION.events,
      ["carol", "EventReleased", "1003", "1001", 1, 3],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ...ALICE_BOB_RELEASED,
    ],
    history: [
      ...ALICE_BOB_HISTORY,
      ["carol", "answered", "alice", "carol", "1001", "1003", true],
    ],
  },
  {
    name: "attended transfer not answered in its time: alice talks with bob again",
    transcript: "26-attended-transfer-timeout",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ALICE_CALLS_BOB,
      { command: aliceTransfersBob("attended", 8000), phones: (sim) => sim.advance(8000) },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
    ],
    events: [
      ...ALICE_BOB_TALK,
      ["alice", "EventDialing", "1001", "1003", 1, 1],
      ["carol", "EventRinging", "1003", "1001", 1, 3],
      ["carol", "EventReleased", "1003", "1001", 1, 3],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ...ALICE_BOB_RELEASED,
    ],
    history: [
      ...ALICE_BOB_HISTORY,
      ["carol", "missed", "alice", "carol", "1001", "1003", false],
    ],
  },
  {
    name: "conference of three: bob muted, carol removed, the host leaving ends it",
    transcript: "27-conference",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ...CONSULTATION.steps,
      {
        command: async (w) =>
          w.services.platform.startConference((await callOf(w, w.alice)).callId, [
            (await callOf(w, w.bob)).callId,
            (await callOf(w, w.carol)).callId,
          ]),
      },
      {
        command: async (w) => {
          const alice = (await callOf(w, w.alice)).callId;
          const bob = (await callOf(w, w.bob)).callId;
          const carol = (await callOf(w, w.carol)).callId;
          await expectCall(BOB, { conferenceId: alice, talkingTo: [alice, carol] })(w);
          const [conference] = await w.services.platform.conferences();
          assert.deepEqual(conference?.members.map((member) => member.callId), [alice, bob, carol]);
        },
      },
      { command: onCallOf(BOB, { kind: "mute", on: true }) },
      { command: expectCall(BOB, { muted: true }) },
      {
        command: async (w) => {
          const alice = (await callOf(w, w.alice)).callId;
          await w.services.platform.removeFromConference(alice, (await callOf(w, w.carol)).callId);
        },
      },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
    ],
    events: [
      ...CONSULTATION.events,
      ["carol", "EventReleased", "1003", "1001", 1, 3],
      ["alice", "EventReleased", "1001", "1003", 1, 1],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
    ],
    history: [
      ...ALICE_BOB_HISTORY,
      ["carol", "answered", "alice", "carol", "1001", "1003", true],
    ],
  },
  {
    // issue 43: the host's two calls of its own merged (the host's call with bob, the participant
    // carol's own call, as wazo-calld takes them), then the conference ended by svc
    name: "conference of the host's two calls: bob comes with the host, carol's partner ends",
    transcript: "35-conference-two-calls",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ALICE_CALLS_BOB,
      // alice's phone holds bob to take another call, as a phone does
      { command: () => Promise.resolve(), phones: (sim) => sim.act("1001", "hold") },
      {
        command: aliceDials("1003"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("1003", "answer");
        },
      },
      {
        command: async (w) => {
          const calls = await w.services.platform.liveCalls();
          const withBob = calls.find((call) =>
            call.userId === w.alice.id && call.peerNumber === "1002"
          );
          assert.ok(withBob, "alice's call with bob");
          await w.services.platform.startConference(withBob.callId, [
            (await callOf(w, w.carol)).callId,
          ]);
        },
        // alice's phone takes bob back once its call with carol is gone, as a phone does
        phones: (sim) => sim.act("1001", "resume"),
      },
      {
        command: async (w) => {
          const [conference] = await w.services.platform.conferences();
          assert.ok(conference, "one conference");
          const members = conference.members.map((member) => member.callId);
          const bob = (await callOf(w, w.bob)).callId;
          const carol = (await callOf(w, w.carol)).callId;
          assert.deepEqual(members, [conference.hostCallId, bob, carol]);
          await expectCall(BOB, {
            conferenceId: conference.id,
            talkingTo: [conference.hostCallId, carol],
          })(w);
          await w.services.platform.endConference(conference.id);
        },
      },
      {
        command: async (w) => {
          assert.deepEqual(await w.services.platform.conferences(), []);
          assert.deepEqual(await w.services.platform.liveCalls(), []);
        },
      },
    ],
    events: [
      ...ALICE_BOB_TALK,
      ["alice", "EventOnHold", "1001", "1002", 1, 1],
      ["alice", "EventDialing", "1001", "1003", 2, 3],
      ["carol", "EventRinging", "1003", "1001", 2, 4],
      ["alice", "EventEstablished", "1001", "1003", 2, 3],
      ["carol", "EventEstablished", "1003", "1001", 2, 4],
      ["alice", "EventReleased", "1001", "1003", 2, 3],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ["alice", "EventReleased", "1001", "1002", 1, 1],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
      ["carol", "EventReleased", "1003", "1001", 2, 4],
    ],
    history: [
      ...ALICE_BOB_HISTORY,
      ["alice", "emitted", "alice", "carol", "1001", "1003", true],
      ["carol", "answered", "alice", "carol", "1001", "1003", true],
    ],
  },
  {
    name: "recording, mute and DTMF on a call: its state in alice's events, nothing else changes",
    transcript: "28-record-mute-dtmf",
    recordedBySvc: true,
    variables: crm,
    steps: [
      ALICE_CALLS_BOB,
      { command: onCallOf(ALICE, { kind: "record", action: "start" }) },
      { command: expectCall(ALICE, { record: "active" }) },
      { command: onCallOf(ALICE, { kind: "record", action: "pause" }) },
      { command: expectCall(ALICE, { record: "paused" }) },
      { command: onCallOf(ALICE, { kind: "record", action: "resume" }) },
      { command: onCallOf(ALICE, { kind: "mute", on: true }) },
      { command: expectCall(ALICE, { record: "active", muted: true }) },
      { command: onCallOf(ALICE, { kind: "dtmf", digits: "12#" }) },
      { command: onCallOf(ALICE, { kind: "mute", on: false }) },
      { command: onCallOf(ALICE, { kind: "record", action: "stop" }) },
      { command: expectCall(ALICE, { record: "inactive", muted: false }) },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
    ],
    events: [
      ...ALICE_BOB_TALK,
      // each change of the recording: alice's EventEstablished again, with its recordState
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      ...ALICE_BOB_RELEASED,
    ],
    recordStates: [
      ...ALICE_BOB_TALK.map(() => "inactive"),
      "active",
      "paused",
      "active",
      "inactive",
      "inactive",
      "inactive",
    ],
    history: ALICE_BOB_HISTORY,
  },
  {
    name: "queue figures: a ring missed then answered, an abandon, a timeout",
    transcript: "30-queue-statistics",
    recordedBySvc: true,
    variables: crm,
    steps: [
      logIn("1002"),
      {
        // bob's phone refuses the first ring, takes the second
        command: aliceDials("3001"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("1002", "reject");
          await sim.act("1002", "answer");
          await sim.advance(2000);
          await sim.act("1001", "hangup");
        },
      },
      { command: (w) => w.services.platform.agentPause(w.agent.id, "lunch") },
      {
        // nobody to take it: carol gives up after 3 s
        command: (w) => w.services.platform.dialNumber(w.carol, "3001", crm),
        phones: async (sim) => {
          await sim.act("1003", "answer");
          await sim.advance(3000);
          await sim.act("1003", "hangup");
        },
      },
      {
        // alice waits until the queue lets her go (30 s)
        command: aliceDials("3001"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.advance(31_000);
        },
      },
      logOut,
    ],
    events: [
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["alice", "EventDialing", "1001", "3001", 1, 1],
      ["agent", "AgentRinging", "8001", "1002", "bob"],
      ["bob", "EventRinging", "1002", "1001", 1, 2],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentRinging", "8001", "1002", "bob"],
      ["bob", "EventRinging", "1002", "1001", 1, 3],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["alice", "EventEstablished", "1001", "3001", 1, 1],
      ["bob", "EventEstablished", "1002", "1001", 1, 3],
      ["alice", "EventReleased", "1001", "3001", 1, 1],
      ["bob", "EventReleased", "1002", "1001", 1, 3],
      ["agent", "AgentOnWrapup", "8001", "1002", "bob"],
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentOnPause", "8001", "1002", "bob"],
      ["carol", "EventDialing", "1003", "3001", 2, 4],
      ["carol", "EventReleased", "1003", "3001", 2, 4],
      ["alice", "EventDialing", "1001", "3001", 3, 5],
      ["alice", "EventReleased", "1001", "3001", 3, 5],
      ["agent", "AgentLoggedOut", "8001", "1002", "bob"],
    ],
    queue: [
      ["joined", "support", "1001", "1"],
      ["answered", "support", "1001", "8001"],
      ["completed", "support", "1001", "8001"],
      ["joined", "support", "1003", "1"],
      ["abandoned", "support", "1003", ""],
      ["joined", "support", "1001", "1"],
      ["timeout", "support", "1001", ""],
    ],
    history: [
      ["alice", "emitted", "alice", "bob", "1001", "3001", true],
      ["bob", "answered", "alice", "bob", "1001", "3001", true],
      ["carol", "emitted", "carol", "", "1003", "3001", false],
      ["alice", "emitted", "alice", "", "1001", "3001", false],
    ],
  },
  {
    name: "listening: refused while agent 8001 is out or on no call; carol listens, then hangs up",
    transcript: "36-listen",
    recordedBySvc: true,
    variables: crm,
    steps: [
      { command: refused(carolListens, "not_logged") },
      logIn("1002"),
      { command: refused(carolListens, "not_on_call") },
      ALICE_CALLS_BOB,
      {
        // a supervisor without a phone
        command: refused(async (w) => {
          const dave = await w.api.create("/users", { firstname: "dave", username: "dave" });
          await w.services.platform.listen(dave, w.agent.id);
        }, "no_line"),
      },
      { command: carolListens, phones: (sim) => sim.act("1003", "answer") },
      {
        // the listening call is nobody's call: only alice and bob talk
        command: async (w) => {
          const calls = await w.services.platform.liveCalls();
          assert.deepEqual(calls.map((call) => call.userId), [w.alice.id, w.bob.id]);
        },
        phones: (sim) => sim.act("1003", "hangup"),
      },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
      logOut,
    ],
    events: [
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ...ALICE_BOB_TALK,
      ["listen", "started", "8001", "1002", "carol"],
      ["listen", "stopped", "8001", "1002", "carol"],
      ...ALICE_BOB_RELEASED,
      ["agent", "AgentLoggedOut", "8001", "1002", "bob"],
    ],
    history: ALICE_BOB_HISTORY,
  },
  {
    // with several servers: the supervisor's phone and the agent's are on different ones
    name: "listening by bob: agent 8001 on carol's phone talks with alice; bob listens, hangs up",
    transcript: "36b-listen-by-bob",
    recordedBySvc: true,
    variables: crm,
    steps: [
      logIn("1003"),
      {
        command: aliceDials("1003"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("1003", "answer");
        },
      },
      {
        command: (w) => w.services.platform.listen(w.bob, w.agent.id).then(() => {}),
        phones: (sim) => sim.act("1002", "answer"),
      },
      {
        command: async (w) => {
          const calls = await w.services.platform.liveCalls();
          assert.deepEqual(calls.map((call) => call.userId), [w.alice.id, w.carol.id]);
        },
        phones: (sim) => sim.act("1002", "hangup"),
      },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
      logOut,
    ],
    events: [
      ["agent", "AgentReady", "8001", "1003", "carol"],
      ["alice", "EventDialing", "1001", "1003", 1, 1],
      ["carol", "EventRinging", "1003", "1001", 1, 2],
      ["alice", "EventEstablished", "1001", "1003", 1, 1],
      ["carol", "EventEstablished", "1003", "1001", 1, 2],
      ["listen", "started", "8001", "1003", "bob"],
      ["listen", "stopped", "8001", "1003", "bob"],
      ["alice", "EventReleased", "1001", "1003", 1, 1],
      ["carol", "EventReleased", "1003", "1001", 1, 2],
      ["agent", "AgentLoggedOut", "8001", "1003", "carol"],
    ],
    history: [
      ["alice", "emitted", "alice", "carol", "1001", "1003", true],
      ["carol", "answered", "alice", "carol", "1001", "1003", true],
    ],
  },
  {
    name: "voicemail: bob does not answer, his voicemail takes alice's message",
    transcript: "37-voicemail",
    recordedBySvc: true,
    variables: crm,
    prepare: async (w) => {
      const box = await w.api.create("/voicemails", {
        name: "bob",
        number: "1002",
        context: "default",
        password: "1234",
      });
      const linked = await w.api.put(`/users/${w.bob.id}/voicemails/${box.id}`);
      assert.equal(linked.status, 204);
      const changed = await w.api.put(`/users/${w.bob.id}`, { ring_seconds: 5 });
      assert.equal(changed.status, 204);
    },
    steps: [
      { command: bobsBox(0, 0) },
      { command: refused((w) => w.services.platform.voicemailCounts(9999), "no_voicemail") },
      {
        command: aliceDials("1002"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.advance(5000); // bob's phone rings out: the voicemail answers
          await sim.advance(3000); // alice talks to it
          await sim.act("1001", "hangup");
        },
      },
      { command: bobsBox(1, 0) },
    ],
    events: [
      ["alice", "EventDialing", "1001", "1002", 1, 1],
      ["bob", "EventRinging", "1002", "1001", 1, 2],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
      ["alice", "EventEstablished", "1001", "1002", 1, 1],
      // the message is left as alice hangs up, before her channel is gone
      ["voicemail", 1, 0],
      ["alice", "EventReleased", "1001", "1002", 1, 1],
    ],
    history: [
      ["alice", "emitted", "alice", "bob", "1001", "1002", true],
      ["bob", "missed", "alice", "bob", "1001", "1002", false],
    ],
  },
  {
    name: "data attached to alice's call (setData) goes with bob to carol, who gets the call next",
    transcript: "38-set-data",
    recordedBySvc: true,
    variables: crm,
    attached: { from: 4, variables: { folderNumber: "F-42" } },
    steps: [
      ALICE_CALLS_BOB,
      { command: onCallOf(ALICE, { kind: "attach", variables: { folderNumber: "F-42" } }) },
      { command: expectCall(BOB, { userData: { ...usr(crm), USR_folderNumber: "F-42" } }) },
      BLIND_TRANSFER.step,
    ],
    events: BLIND_TRANSFER.events,
    history: TRANSFERRED_HISTORY,
  },
  {
    name: "an agent's queue call recorded, paused and resumed: its monitorState and recordState",
    transcript: "39-monitor",
    recordedBySvc: true,
    variables: crm,
    steps: [
      logIn("1002"),
      {
        command: aliceDials("3001"),
        phones: async (sim) => {
          await sim.act("1001", "answer");
          await sim.act("1002", "answer");
        },
      },
      { command: onCallOf(BOB, { kind: "record", action: "start" }) },
      { command: onCallOf(BOB, { kind: "record", action: "pause" }) },
      { command: expectCall(BOB, { record: "paused" }) },
      { command: onCallOf(BOB, { kind: "record", action: "resume" }) },
      { command: onCallOf(ALICE, { kind: "hangup" }) },
      logOut,
    ],
    events: [
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["alice", "EventDialing", "1001", "3001", 1, 1],
      ["agent", "AgentRinging", "8001", "1002", "bob"],
      ["bob", "EventRinging", "1002", "1001", 1, 2],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["alice", "EventEstablished", "1001", "3001", 1, 1],
      ["bob", "EventEstablished", "1002", "1001", 1, 2],
      ["bob", "EventEstablished", "1002", "1001", 1, 2],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["bob", "EventEstablished", "1002", "1001", 1, 2],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["bob", "EventEstablished", "1002", "1001", 1, 2],
      ["agent", "AgentOnCall", "8001", "1002", "bob"],
      ["alice", "EventReleased", "1001", "3001", 1, 1],
      ["bob", "EventReleased", "1002", "1001", 1, 2],
      ["agent", "AgentOnWrapup", "8001", "1002", "bob"],
      ["agent", "AgentReady", "8001", "1002", "bob"],
      ["agent", "AgentLoggedOut", "8001", "1002", "bob"],
    ],
    recordStates: [
      "inactive",
      "inactive",
      "inactive",
      "inactive",
      "active",
      "paused",
      "active",
      "inactive",
      "active",
    ],
    monitorStates: [
      "DISABLED",
      "DISABLED",
      "DISABLED",
      "ACTIVE",
      "PAUSED",
      "ACTIVE",
      "DISABLED",
      "DISABLED",
      "DISABLED",
    ],
    queue: [
      ["joined", "support", "1001", "1"],
      ["answered", "support", "1001", "8001"],
      ["completed", "support", "1001", "8001"],
    ],
    history: [
      ["alice", "emitted", "alice", "bob", "1001", "3001", true],
      ["bob", "answered", "alice", "bob", "1001", "3001", true],
    ],
  },
];

/** alice's personal room 4100, PIN 1234. */
/** Its id is fixed: the recordings name its ConfBridge conference by it. */
const ALICES_ROOM_ID = "00000000-0000-4000-8000-000000004100";
const ALICES_ROOM: Pick<Scenario, "prepare"> = {
  prepare: async (w) => {
    await transact(w.services.store, async (tx) => {
      tx.put(
        meetings,
        await meetingRecord(tx, w.services, {
          kind: "personal",
          name: "Weekly",
          ownerIds: [w.alice.id],
          number: "4100",
          pin: "1234",
          persistent: true,
          requireAuthorization: false,
          expiresMs: null,
        }, ALICES_ROOM_ID),
      );
    });
  },
};

/** `user`'s phone (`extension`) dials alice's room, answers, and types `pin` then `#`. */
const joinsRoom = (user: "alice" | "bob", extension: string, pins: string[]): Step => ({
  command: (w) => w.services.platform.dialNumber(w[user], "4100", {}),
  phones: async (sim) => {
    await sim.act(extension, "answer");
    for (const pin of pins) await sim.keys(extension, `${pin}#`);
  },
});

/** svc's command on bob in alice's room. */
const onBobInRoom = (command: { kind: "mute"; on: boolean } | { kind: "kick" }): Step => ({
  command: async (w) => {
    const [room] = await w.services.platform.rooms();
    const bob = room?.participants.find((participant) => participant.userId === w.bob.id);
    assert.ok(room && bob, "bob in alice's room");
    await w.services.platform.roomCommand(room.roomId, bob.callId, command);
  },
});

const recordRoom = (on: boolean): Step => ({
  command: (w) => w.services.platform.recordRoom(meetingRoomId(ALICES_ROOM_ID), on),
});

SCENARIOS.push(
  {
    name:
      "meeting room: alice and bob join by number and PIN; recorded; bob muted, kicked; alice leaves",
    transcript: "40-room-join-mute-kick",
    recordedBySvc: true,
    ...ALICES_ROOM,
    steps: [
      joinsRoom("alice", "1001", ["1234"]),
      joinsRoom("bob", "1002", ["1234"]),
      recordRoom(true),
      recordRoom(false),
      onBobInRoom({ kind: "mute", on: true }),
      onBobInRoom({ kind: "mute", on: false }),
      onBobInRoom({ kind: "kick" }),
      { command: () => Promise.resolve(), phones: (sim) => sim.act("1001", "hangup") },
    ],
    events: [
      ["alice", "EventDialing", "1001", "4100", 1, 1],
      ["alice", "EventEstablished", "1001", "4100", 1, 1],
      ["room", "joined", "alice", "alice"],
      ["bob", "EventDialing", "1002", "4100", 2, 2],
      ["bob", "EventEstablished", "1002", "4100", 2, 2],
      ["room", "joined", "bob", "alice bob"],
      ["room", "recording", "", "on"],
      ["room", "recording", "", "off"],
      ["room", "update", "bob", "alice bob*"],
      ["room", "update", "bob", "alice bob"],
      ["room", "left", "bob", "alice"],
      ["bob", "EventReleased", "1002", "4100", 2, 2],
      ["room", "left", "alice", ""],
      ["alice", "EventReleased", "1001", "4100", 1, 1],
    ],
    history: [
      ["bob", "emitted", "bob", "", "1002", "4100", true],
      ["alice", "emitted", "alice", "", "1001", "4100", true],
    ],
  },
  {
    name: "meeting room: alice joins by number; svc invites bob, who answers (no PIN); both leave",
    transcript: "42-room-invite",
    recordedBySvc: true,
    ...ALICES_ROOM,
    steps: [
      joinsRoom("alice", "1001", ["1234"]),
      {
        command: (w) =>
          w.services.platform.inviteToRoom(w.bob, meetingRoomId(ALICES_ROOM_ID)).then(() => {}),
        phones: (sim) => sim.act("1002", "answer"),
      },
      { command: () => Promise.resolve(), phones: (sim) => sim.act("1001", "hangup") },
      { command: () => Promise.resolve(), phones: (sim) => sim.act("1002", "hangup") },
    ],
    events: [
      ["alice", "EventDialing", "1001", "4100", 1, 1],
      ["alice", "EventEstablished", "1001", "4100", 1, 1],
      ["room", "joined", "alice", "alice"],
      ["bob", "EventDialing", "1002", "4100", 2, 2],
      ["bob", "EventEstablished", "1002", "4100", 2, 2],
      ["room", "joined", "bob", "alice bob"],
      ["room", "left", "alice", "bob"],
      ["alice", "EventReleased", "1001", "4100", 1, 1],
      ["room", "left", "bob", ""],
      ["bob", "EventReleased", "1002", "4100", 2, 2],
    ],
    history: [
      ["alice", "emitted", "alice", "", "1001", "4100", true],
      ["bob", "emitted", "bob", "", "1002", "4100", true],
    ],
  },
  {
    name: "meeting room: a wrong PIN three times, the room hangs up",
    transcript: "41-room-wrong-pin",
    recordedBySvc: true,
    ...ALICES_ROOM,
    steps: [joinsRoom("bob", "1002", ["1111", "2222", "3333"])],
    events: [
      ["bob", "EventDialing", "1002", "4100", 1, 1],
      ["bob", "EventReleased", "1002", "4100", 1, 1],
    ],
    history: [["bob", "emitted", "bob", "", "1002", "4100", false]],
  },
);

/**
 * The wallboard scenario of issue 26 ("done when"): 2 queues, 6 agents, 10 callers, played step
 * by step on the simulator, on a replay of the AMI session recorded from a real Asterisk
 * (`tests/peers/asterisk_transcripts/32-wallboard.jsonl`) and live on Asterisk with baresip
 * phones; after each step `GET /svc/api/2.0/supervision/queues`, `…/queues/{id}/calls` and
 * `…/agents` must answer the figures of the step's table, the same on all three.
 *
 * The people, built through `/1.1` as an administrator would (as `tests/lib/platform/fixtures.ts`
 * does), everybody in context `default`, each user with a SIP endpoint of its username (secret
 * `<username>-sip`):
 *
 * - queue `sales` (3010, no wrap-up): agents 8001 anna, 8002 ben, 8003 chloe;
 * - queue `support` (3001, 5 s of wrap-up, a service level of 10 s: {@link WALLBOARD_SETTINGS}):
 *   agents 8004 david, 8005 emma, 8006 felix;
 * - each agent logs in on its own user's phone, 1001 to 1006 (same order);
 * - 10 callers, 1101 to 1110 (hugo … quentin), call a queue's number through svc (`dialNumber`:
 *   their phone rings first and answers, then the queue takes the call).
 *
 * Each step is what svc is asked through the platform port (`command`: a login, a pause, a dial…)
 * then what the phones do (`phones`: answer, reject, hang up) and the time that passes after them
 * (`advance`, always last: on the replay every recorded event of a step comes first). So that the
 * simulator (which offers a waiting call to one agent at a time, the longest idle) and Asterisk
 * (`strategy = ringall`: every free agent rings) give the same events, a queue never has more than
 * one free agent when a call is offered, and no call waits in a queue whose agent comes out of a
 * wrap-up (Asterisk frees it after the wrap-up in real time, svc when its clock says so). Live,
 * every call leaves its queue well within Asterisk's 30 s and every ring within its 15 s.
 *
 * How the table reads (figures compared, durations not):
 *
 * - a queue: `<name> <callers waiting, in order, or -> agents <logged> <ready> <ringing> <onCall>
 *   <wrapup> <paused> today <entered> <answered> <answeredWithinServiceLevel> <abandoned>
 *   <abandonedShort> <timeout>`;
 * - an agent: `<number> <state>`, `:<reason>` after `paused`, `+paused:<reason>` when paused in
 *   another state (it shows once that ends), ` (<call>)` for a call outside the queues (none
 *   here), then ` <answered>/<missed>` today when not both 0.
 *
 * {@link runWallboardScenario} plays it on any of the three, and hands each step's figures to a
 * caller's check (a page test checks its page there).
 */
import assert from "node:assert/strict";
import type { Services } from "../../lib/services.ts";
import { type AgentRecord, getAgent } from "../../lib/store/agents.ts";
import { getQueue, type QueueRecord } from "../../lib/store/queues.ts";
import type { UserRecord } from "../../lib/store/users.ts";
import type { AgentFigures, QueueFigures } from "../../lib/supervision/mod.ts";
import type { QueueIntervals } from "../../lib/supervision/schemas.ts";
import type { PlatformEvent } from "../../lib/platform/port.ts";
import { phoneUser } from "../lib/platform/fixtures.ts";
import { bearer, confd, login, setup, type TestContext, webServiceUser } from "../helpers.ts";

/** The settings the scenario runs with: support answers within 10 s, sales within 20 s. */
export const WALLBOARD_SETTINGS: Record<string, string> = {
  SVC_SUPERVISION_SERVICE_LEVEL: "20,support=10",
};

/** The transcript of the recorded session (`tests/peers/asterisk_transcripts/`). */
export const WALLBOARD_TRANSCRIPT = "32-wallboard";

export type QueueName = "sales" | "support";

/** The queues: name, number, display name, wrap-up seconds, agents (by number). */
export const QUEUES: Record<QueueName, {
  number: string;
  display: string;
  wrapup: number;
  agents: string[];
}> = {
  sales: { number: "3010", display: "Sales", wrapup: 0, agents: ["8001", "8002", "8003"] },
  support: { number: "3001", display: "Support", wrapup: 5, agents: ["8004", "8005", "8006"] },
};

/** The agents: number → the username and extension of the phone it logs in on. */
export const AGENTS: Record<string, { username: string; extension: string }> = {
  "8001": { username: "anna", extension: "1001" },
  "8002": { username: "ben", extension: "1002" },
  "8003": { username: "chloe", extension: "1003" },
  "8004": { username: "david", extension: "1004" },
  "8005": { username: "emma", extension: "1005" },
  "8006": { username: "felix", extension: "1006" },
};

/** The callers: extension → username. */
export const CALLERS: Record<string, string> = {
  "1101": "hugo",
  "1102": "iris",
  "1103": "jules",
  "1104": "karim",
  "1105": "lea",
  "1106": "malo",
  "1107": "nina",
  "1108": "oscar",
  "1109": "paula",
  "1110": "quentin",
};

/** Every phone: extension → SIP user (its password is `<user>-sip`). */
export const PHONES: Record<string, string> = {
  ...Object.fromEntries(Object.values(AGENTS).map((agent) => [agent.extension, agent.username])),
  ...CALLERS,
};

/** The agents' phones answer by hand; the callers' phones answer by themselves. */
export const isCaller = (extension: string): boolean => extension in CALLERS;

/** What the scenario works with, on any platform. */
export interface WallboardWorld {
  services: Services;
  queues: Record<QueueName, QueueRecord>;
  /** By agent number. */
  agents: Record<string, AgentRecord>;
  /** By extension. */
  users: Record<string, UserRecord>;
}

const capitalized = (name: string) => name[0]!.toUpperCase() + name.slice(1);

/**
 * The people of the scenario, built through `/1.1` in a fixed order (the same ids on every run:
 * the replay's recorded session names them): the agents' users, the callers, the queues, the
 * agents and their memberships.
 */
export async function wallboardWorld(ctx: TestContext): Promise<WallboardWorld> {
  const api = await confd(ctx);
  const t = { ctx, api };
  const users: Record<string, UserRecord> = {};
  for (const [extension, username] of Object.entries(PHONES)) {
    users[extension] = await phoneUser(t, username, extension, {
      firstname: capitalized(username),
      password: `${username}-pw`,
    }, { username, secret: `${username}-sip` });
  }
  const store = ctx.services.store;
  const queues = {} as Record<QueueName, QueueRecord>;
  const agents: Record<string, AgentRecord> = {};
  for (const [name, queue] of Object.entries(QUEUES) as [QueueName, typeof QUEUES.sales][]) {
    const made: { id: number } = await api.create("/queues", {
      name,
      number: queue.number,
      display_name: queue.display,
      wrapup_seconds: queue.wrapup,
    });
    for (const number of queue.agents) {
      const { username } = AGENTS[number]!;
      const agent: { id: number } = await api.create("/agents", {
        number,
        firstname: capitalized(username),
      });
      const response = await api.put(`/queues/${made.id}/members/agents/${agent.id}`, {
        penalty: 0,
      });
      assert.equal(response.status, 204, await response.text());
      agents[number] = (await getAgent(store, agent.id))!;
    }
    queues[name] = (await getQueue(store, made.id))!;
  }
  return { services: ctx.services, queues, agents, users };
}

/** The phones as a step plays them: on the simulator, on the replay, or real ones. */
export interface WallboardPhones {
  /** A person's hand on the phone of `extension`: answer or reject what rings, hang up. */
  act(extension: string, action: "answer" | "reject" | "hangup"): Promise<void>;
  /** Time passes (svc's clock moves on; live, it also passes for real first). */
  advance(ms: number): Promise<void>;
}

/** One step: svc's command, the phones, and the figures after them. */
export interface WallboardStep {
  name: string;
  command(w: WallboardWorld): Promise<unknown>;
  phones?(phones: WallboardPhones): Promise<void>;
  /** The table: the two queues' lines, then the sales agents' and the support agents' lines. */
  figures: [sales: string, support: string, salesAgents: string, supportAgents: string];
}

// --- the commands --------------------------------------------------------------------------------

const logIn = (number: string) => (w: WallboardWorld) =>
  w.services.platform.agentLogin(w.agents[number]!, AGENTS[number]!.extension, "default");
const logOut = (number: string) => (w: WallboardWorld) =>
  w.services.platform.agentLogout(w.agents[number]!.id);
const pause = (number: string, reason: string) => (w: WallboardWorld) =>
  w.services.platform.agentPause(w.agents[number]!.id, reason);
const unpause = (number: string) => (w: WallboardWorld) =>
  w.services.platform.agentUnpause(w.agents[number]!.id);
/** The caller of `extension` calls the queue `queue` through svc. */
const calls = (extension: string, queue: QueueName) => (w: WallboardWorld) =>
  w.services.platform.dialNumber(w.users[extension]!, QUEUES[queue].number, {});

/** The phones' acts, in order (`[extension, action]`), then the time that passes (ms). */
function phones(
  ...acts: ([string, "answer" | "reject" | "hangup"] | number)[]
): WallboardStep["phones"] {
  return async (p) => {
    for (const act of acts) {
      if (typeof act === "number") await p.advance(act);
      else await p.act(...act);
    }
  };
}

// --- the table -----------------------------------------------------------------------------------

/*
 * queue   waiting    agents: logged ready ringing onCall wrapup paused
 *                    today: entered answered inSL abandoned short timeout
 */
export const WALLBOARD_STEPS: WallboardStep[] = [
  {
    name: "8001 logs in on 1001",
    command: logIn("8001"),
    figures: [
      "sales    -  agents 1 1 0 0 0 0  today 0 0 0 0 0 0",
      "support  -  agents 0 0 0 0 0 0  today 0 0 0 0 0 0",
      "8001 ready  8002 logged_out  8003 logged_out",
      "8004 logged_out  8005 logged_out  8006 logged_out",
    ],
  },
  {
    name: "8002 logs in on 1002",
    command: logIn("8002"),
    figures: [
      "sales    -  agents 2 2 0 0 0 0  today 0 0 0 0 0 0",
      "support  -  agents 0 0 0 0 0 0  today 0 0 0 0 0 0",
      "8001 ready  8002 ready  8003 logged_out",
      "8004 logged_out  8005 logged_out  8006 logged_out",
    ],
  },
  {
    name: "8002 pauses for training",
    command: pause("8002", "training"),
    figures: [
      "sales    -  agents 2 1 0 0 0 1  today 0 0 0 0 0 0",
      "support  -  agents 0 0 0 0 0 0  today 0 0 0 0 0 0",
      "8001 ready  8002 paused:training  8003 logged_out",
      "8004 logged_out  8005 logged_out  8006 logged_out",
    ],
  },
  {
    name: "8004 logs in on 1004",
    command: logIn("8004"),
    figures: [
      "sales    -  agents 2 1 0 0 0 1  today 0 0 0 0 0 0",
      "support  -  agents 1 1 0 0 0 0  today 0 0 0 0 0 0",
      "8001 ready  8002 paused:training  8003 logged_out",
      "8004 ready  8005 logged_out  8006 logged_out",
    ],
  },
  {
    name: "8005 logs in on 1005",
    command: logIn("8005"),
    figures: [
      "sales    -  agents 2 1 0 0 0 1  today 0 0 0 0 0 0",
      "support  -  agents 2 2 0 0 0 0  today 0 0 0 0 0 0",
      "8001 ready  8002 paused:training  8003 logged_out",
      "8004 ready  8005 ready  8006 logged_out",
    ],
  },
  {
    name: "8005 pauses for lunch",
    command: pause("8005", "lunch"),
    figures: [
      "sales    -  agents 2 1 0 0 0 1  today 0 0 0 0 0 0",
      "support  -  agents 2 1 0 0 0 1  today 0 0 0 0 0 0",
      "8001 ready  8002 paused:training  8003 logged_out",
      "8004 ready  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "1101 calls sales: 8001 refuses the first ring, answers the second",
    command: calls("1101", "sales"),
    phones: phones(["1101", "answer"], ["1001", "reject"], ["1001", "answer"]),
    figures: [
      "sales    -  agents 2 0 0 1 0 1  today 1 1 1 0 0 0",
      "support  -  agents 2 1 0 0 0 1  today 0 0 0 0 0 0",
      "8001 on_call 1/1  8002 paused:training  8003 logged_out",
      "8004 ready  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "1102 calls support: 8004 answers",
    command: calls("1102", "support"),
    phones: phones(["1102", "answer"], ["1004", "answer"]),
    figures: [
      "sales    -  agents 2 0 0 1 0 1  today 1 1 1 0 0 0",
      "support  -  agents 2 0 0 1 0 1  today 1 1 1 0 0 0",
      "8001 on_call 1/1  8002 paused:training  8003 logged_out",
      "8004 on_call 1/0  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "1103 calls sales: nobody free, it waits",
    command: calls("1103", "sales"),
    phones: phones(["1103", "answer"]),
    figures: [
      "sales    1103  agents 2 0 0 1 0 1  today 2 1 1 0 0 0",
      "support  -     agents 2 0 0 1 0 1  today 1 1 1 0 0 0",
      "8001 on_call 1/1  8002 paused:training  8003 logged_out",
      "8004 on_call 1/0  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "1104 calls sales: second in line",
    command: calls("1104", "sales"),
    phones: phones(["1104", "answer"]),
    figures: [
      "sales    1103 1104  agents 2 0 0 1 0 1  today 3 1 1 0 0 0",
      "support  -          agents 2 0 0 1 0 1  today 1 1 1 0 0 0",
      "8001 on_call 1/1  8002 paused:training  8003 logged_out",
      "8004 on_call 1/0  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "1105 calls support: nobody free, it waits; 6 s pass",
    command: calls("1105", "support"),
    phones: phones(["1105", "answer"], 6000),
    figures: [
      "sales    1103 1104  agents 2 0 0 1 0 1  today 3 1 1 0 0 0",
      "support  1105       agents 2 0 0 1 0 1  today 2 1 1 0 0 0",
      "8001 on_call 1/1  8002 paused:training  8003 logged_out",
      "8004 on_call 1/0  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "1106 calls support and hangs up at once: a short abandon",
    command: calls("1106", "support"),
    phones: phones(["1106", "answer"], ["1106", "hangup"]),
    figures: [
      "sales    1103 1104  agents 2 0 0 1 0 1  today 3 1 1 0 0 0",
      "support  1105       agents 2 0 0 1 0 1  today 3 1 1 1 1 0",
      "8001 on_call 1/1  8002 paused:training  8003 logged_out",
      "8004 on_call 1/0  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "8002 unpauses: the first caller waiting, 1103, rings it",
    command: unpause("8002"),
    figures: [
      "sales    1103 1104  agents 2 0 1 1 0 0  today 3 1 1 0 0 0",
      "support  1105       agents 2 0 0 1 0 1  today 3 1 1 1 1 0",
      "8001 on_call 1/1  8002 ringing  8003 logged_out",
      "8004 on_call 1/0  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "1107 calls sales; 8002 answers 1103; 1104 gives up after 6 s: an abandon",
    command: calls("1107", "sales"),
    phones: phones(["1107", "answer"], ["1002", "answer"], ["1104", "hangup"]),
    figures: [
      "sales    1107  agents 2 0 0 2 0 0  today 4 2 2 1 0 0",
      "support  1105  agents 2 0 0 1 0 1  today 3 1 1 1 1 0",
      "8001 on_call 1/1  8002 on_call 1/0  8003 logged_out",
      "8004 on_call 1/0  8005 paused:lunch  8006 logged_out",
    ],
  },
  {
    name: "8005 unpauses and answers 1105; 8004 hangs up: its wrap-up",
    command: unpause("8005"),
    phones: phones(["1005", "answer"], ["1004", "hangup"]),
    figures: [
      "sales    1107  agents 2 0 0 2 0 0  today 4 2 2 1 0 0",
      "support  -     agents 2 0 0 1 1 0  today 3 2 2 1 1 0",
      "8001 on_call 1/1  8002 on_call 1/0  8003 logged_out",
      "8004 wrapup 1/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "8003 logs in on 1003 and answers 1107",
    command: logIn("8003"),
    phones: phones(["1003", "answer"]),
    figures: [
      "sales    -  agents 3 0 0 3 0 0  today 4 3 3 1 0 0",
      "support  -  agents 2 0 0 1 1 0  today 3 2 2 1 1 0",
      "8001 on_call 1/1  8002 on_call 1/0  8003 on_call 1/0",
      "8004 wrapup 1/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "8004 pauses for a meeting during its wrap-up",
    command: pause("8004", "meeting"),
    figures: [
      "sales    -  agents 3 0 0 3 0 0  today 4 3 3 1 0 0",
      "support  -  agents 2 0 0 1 1 0  today 3 2 2 1 1 0",
      "8001 on_call 1/1  8002 on_call 1/0  8003 on_call 1/0",
      "8004 wrapup+paused:meeting 1/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "1108 calls support: nobody free; 5 s on, 8004's wrap-up is over: on pause",
    command: calls("1108", "support"),
    phones: phones(["1108", "answer"], 5000),
    figures: [
      "sales    -     agents 3 0 0 3 0 0  today 4 3 3 1 0 0",
      "support  1108  agents 2 0 0 1 0 1  today 4 2 2 1 1 0",
      "8001 on_call 1/1  8002 on_call 1/0  8003 on_call 1/0",
      "8004 paused:meeting 1/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "8001 logs out at the end of its shift, still on its call; 6 s pass",
    command: logOut("8001"),
    phones: phones(6000),
    figures: [
      "sales    -     agents 2 0 0 2 0 0  today 4 3 3 1 0 0",
      "support  1108  agents 2 0 0 1 0 1  today 4 2 2 1 1 0",
      "8001 logged_out 1/1  8002 on_call 1/0  8003 on_call 1/0",
      "8004 paused:meeting 1/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "8004 unpauses and answers 1108, who waited 11 s: past support's service level",
    command: unpause("8004"),
    phones: phones(["1004", "answer"]),
    figures: [
      "sales    -  agents 2 0 0 2 0 0  today 4 3 3 1 0 0",
      "support  -  agents 2 0 0 2 0 0  today 4 3 2 1 1 0",
      "8001 logged_out 1/1  8002 on_call 1/0  8003 on_call 1/0",
      "8004 on_call 2/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "1109 calls sales: every agent busy, it waits; 8001 ends its last call",
    command: calls("1109", "sales"),
    phones: phones(["1109", "answer"], ["1001", "hangup"]),
    figures: [
      "sales    1109  agents 2 0 0 2 0 0  today 5 3 3 1 0 0",
      "support  -     agents 2 0 0 2 0 0  today 4 3 2 1 1 0",
      "8001 logged_out 1/1  8002 on_call 1/0  8003 on_call 1/0",
      "8004 on_call 2/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "8003 pauses for a break while on its call",
    command: pause("8003", "break"),
    figures: [
      "sales    1109  agents 2 0 0 2 0 0  today 5 3 3 1 0 0",
      "support  -     agents 2 0 0 2 0 0  today 4 3 2 1 1 0",
      "8001 logged_out 1/1  8002 on_call 1/0  8003 on_call+paused:break 1/0",
      "8004 on_call 2/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "1110 calls sales: it waits; 8003 hangs up: its break starts",
    command: calls("1110", "sales"),
    phones: phones(["1110", "answer"], ["1003", "hangup"]),
    figures: [
      "sales    1109 1110  agents 2 0 0 1 0 1  today 6 3 3 1 0 0",
      "support  -          agents 2 0 0 2 0 0  today 4 3 2 1 1 0",
      "8001 logged_out 1/1  8002 on_call 1/0  8003 paused:break 1/0",
      "8004 on_call 2/0  8005 on_call 1/0  8006 logged_out",
    ],
  },
  {
    name: "8006 logs in on 1006; 8005 hangs up: its wrap-up",
    command: logIn("8006"),
    phones: phones(["1005", "hangup"]),
    figures: [
      "sales    1109 1110  agents 2 0 0 1 0 1  today 6 3 3 1 0 0",
      "support  -          agents 3 1 0 1 1 0  today 4 3 2 1 1 0",
      "8001 logged_out 1/1  8002 on_call 1/0  8003 paused:break 1/0",
      "8004 on_call 2/0  8005 wrapup 1/0  8006 ready",
    ],
  },
];

// --- figures -------------------------------------------------------------------------------------

/** A queue's figures the table compares. */
export interface QueueRow {
  /** The callers waiting, in order. */
  waiting: string[];
  agents: Pick<
    QueueFigures["agents"],
    "logged" | "ready" | "ringing" | "onCall" | "wrapup" | "paused"
  >;
  today: Pick<
    QueueFigures["today"],
    | "entered"
    | "answered"
    | "answeredWithinServiceLevel"
    | "abandoned"
    | "abandonedShort"
    | "timeout"
  >;
}

/** An agent's figures the table compares. */
export interface AgentRow {
  state: AgentFigures["state"];
  call: AgentFigures["call"];
  paused: boolean;
  pausedReason: string | null;
  answered: number;
  missed: number;
}

/** What the REST routes must answer after a step, as the table writes it. */
export interface WallboardFigures {
  queues: Record<QueueName, QueueRow>;
  /** By agent number. */
  agents: Record<string, AgentRow>;
}

const AGENT_COUNTS = ["logged", "ready", "ringing", "onCall", "wrapup", "paused"] as const;
const TODAY_COUNTS = [
  "entered",
  "answered",
  "answeredWithinServiceLevel",
  "abandoned",
  "abandonedShort",
  "timeout",
] as const;

/** The table's lines with single spaces. */
export const normalized = (lines: readonly string[]): string[] =>
  lines.map((line) => line.trim().split(/\s+/).join(" "));

const QUEUE_LINE = /^(\w+) (-|\d+(?: \d+)*) agents((?: \d+){6}) today((?: \d+){6})$/;
const AGENT_TOKEN =
  /(\d+) ([a-z_]+)(?::([^\s+]+))?(?:\+paused:(\S+))?(?: \((\w+)\))?(?: (\d+)\/(\d+))?(?= \d+ |$)/g;

/** The figures a step's table lines say. */
export function parseFigures(lines: readonly string[]): WallboardFigures {
  const [sales, support, ...agentLines] = normalized(lines);
  const queue = (line: string | undefined): [QueueName, QueueRow] => {
    const match = QUEUE_LINE.exec(line ?? "");
    assert.ok(match, `a queue line: ${line}`);
    const numbers = (text: string) => text.trim().split(" ").map(Number);
    const agents = numbers(match[3]!);
    const today = numbers(match[4]!);
    return [match[1] as QueueName, {
      waiting: match[2] === "-" ? [] : match[2]!.split(" "),
      agents: Object.fromEntries(AGENT_COUNTS.map((key, i) => [key, agents[i]!])) as QueueRow[
        "agents"
      ],
      today: Object.fromEntries(TODAY_COUNTS.map((key, i) => [key, today[i]!])) as QueueRow[
        "today"
      ],
    }];
  };
  const agents: Record<string, AgentRow> = {};
  for (const line of agentLines) {
    for (const match of line.matchAll(AGENT_TOKEN)) {
      const [, number, state, reason, alsoPaused, call, answered, missed] = match;
      const paused = state === "paused" || alsoPaused !== undefined;
      agents[number!] = {
        state: state as AgentRow["state"],
        call: (call as AgentRow["call"]) ??
          (state === "ringing" || state === "on_call" ? "queue" : null),
        paused,
        pausedReason: paused ? reason ?? alsoPaused ?? null : null,
        answered: Number(answered ?? 0),
        missed: Number(missed ?? 0),
      };
    }
  }
  return { queues: Object.fromEntries([queue(sales), queue(support)]) as never, agents };
}

/** Figures as the table writes them (the inverse of {@link parseFigures}). */
export function figureLines(figures: WallboardFigures): string[] {
  const queue = (name: QueueName) => {
    const row = figures.queues[name];
    return [
      name,
      row.waiting.length ? row.waiting.join(" ") : "-",
      "agents",
      ...AGENT_COUNTS.map((key) => row.agents[key]),
      "today",
      ...TODAY_COUNTS.map((key) => row.today[key]),
    ].join(" ");
  };
  const agent = (number: string) => {
    const row = figures.agents[number];
    if (!row) return `${number} missing`;
    let text = `${number} ${row.state}`;
    if (row.state === "paused") text += `:${row.pausedReason ?? ""}`;
    else if (row.paused) text += `+paused:${row.pausedReason ?? ""}`;
    const queueCall = row.state === "ringing" || row.state === "on_call" ? "queue" : null;
    if (row.call !== queueCall) text += ` (${row.call})`;
    if (row.answered || row.missed) text += ` ${row.answered}/${row.missed}`;
    return text;
  };
  return [
    queue("sales"),
    queue("support"),
    QUEUES.sales.agents.map(agent).join(" "),
    QUEUES.support.agents.map(agent).join(" "),
  ];
}

/** A client of the supervision routes, as a supervisor's web service user. */
export interface SupervisionReader {
  /** What the routes answer now, as the table writes it. */
  figures(): Promise<WallboardFigures>;
  /**
   * Asserts that each queue's day in intervals (`…/queues/{id}/intervals`) adds up to its counts
   * of the day, and that the calls waiting now show in the interval now in.
   */
  curvesAddUp(): Promise<void>;
}

/** Reads the figures through `app.request()` with a web service user holding the supervision ACLs. */
export async function supervisionReader(
  ctx: TestContext,
  w: WallboardWorld,
): Promise<SupervisionReader> {
  const user = await webServiceUser(ctx, ["svc.rest.supervision.#"]);
  const token = await login(ctx, "webservice", user.login);
  const get = async <T>(path: string): Promise<T> => {
    const response = await ctx.app.request(`/svc/api/2.0${path}`, { headers: bearer(token) });
    const text = await response.text();
    assert.equal(response.status, 200, `${path}: ${text}`);
    return JSON.parse(text);
  };
  const numbers = new Map(Object.entries(w.agents).map(([number, agent]) => [agent.id, number]));
  return {
    async figures() {
      const queues = await get<QueueFigures[]>("/supervision/queues");
      const agents = await get<AgentFigures[]>("/supervision/agents");
      const figures: WallboardFigures = { queues: {} as WallboardFigures["queues"], agents: {} };
      for (const name of Object.keys(QUEUES) as QueueName[]) {
        const queue = queues.find((each) => each.name === name);
        assert.ok(queue, `queue ${name} in ${JSON.stringify(queues)}`);
        const calls = await get<{ position: number; callerNumber: string }[]>(
          `/supervision/queues/${queue.id}/calls`,
        );
        assert.deepEqual(calls.map((call) => call.position), calls.map((_, i) => i + 1));
        assert.equal(queue.waitingCalls, calls.length, "waitingCalls is the calls listed");
        figures.queues[name] = {
          waiting: calls.map((call) => call.callerNumber),
          agents: Object.fromEntries(AGENT_COUNTS.map((key) => [key, queue.agents[key]])) as never,
          today: Object.fromEntries(TODAY_COUNTS.map((key) => [key, queue.today[key]])) as never,
        };
      }
      for (const agent of agents) {
        const number = numbers.get(agent.id);
        if (number === undefined) continue;
        figures.agents[number] = {
          state: agent.state,
          call: agent.call,
          paused: agent.paused,
          pausedReason: agent.pausedReason,
          answered: agent.today.answered,
          missed: agent.today.missed,
        };
      }
      return figures;
    },
    async curvesAddUp() {
      for (const queue of await get<QueueFigures[]>("/supervision/queues")) {
        const curve = await get<QueueIntervals>(`/supervision/queues/${queue.id}/intervals`);
        const sum = (field: "entered" | "answered" | "answeredWithinServiceLevel" | "abandoned") =>
          curve.intervals.reduce((total, each) => total + each[field], 0);
        assert.deepEqual(
          [sum("entered"), sum("answered"), sum("answeredWithinServiceLevel"), sum("abandoned")],
          [
            queue.today.entered,
            queue.today.answered,
            queue.today.answeredWithinServiceLevel,
            queue.today.abandoned,
          ],
          `the intervals of ${queue.name} add up to its day`,
        );
        assert.ok(
          curve.intervals.at(-1)!.waitingMax >= queue.waitingCalls,
          `${queue.name}: ${queue.waitingCalls} waiting now, ${
            JSON.stringify(curve.intervals.at(-1))
          }`,
        );
      }
    },
  };
}

// --- events --------------------------------------------------------------------------------------

/**
 * The agent and queue events of a batch as compared between platforms: `agent <state> <number>`,
 * `<queue event> <queue> <caller> <agent number or position>`.
 */
export function eventLines(w: WallboardWorld, events: PlatformEvent[]): string[] {
  const agentNumbers = new Map(Object.entries(w.agents).map(([number, a]) => [a.id, number]));
  const queueNames = new Map(Object.entries(w.queues).map(([name, q]) => [q.id, name]));
  return events.flatMap((event) => {
    if (event.kind === "agent") return [`agent ${event.name} ${event.agentNumber}`];
    if (event.kind !== "queue_call") return [];
    const who = event.event === "joined"
      ? `#${event.position}`
      : event.agentId === undefined
      ? ""
      : agentNumbers.get(event.agentId) ?? String(event.agentId);
    return [
      `${event.event} ${
        queueNames.get(event.queueId) ?? event.queueId
      } ${event.callerNumber} ${who}`
        .trim(),
    ];
  });
}

// --- the runner ----------------------------------------------------------------------------------

export interface WallboardRun {
  w: WallboardWorld;
  phones: WallboardPhones;
  /** After a step's command, before its phones (the replay: its recorded events played). */
  afterCommand?(index: number): Promise<void>;
  /** After a step's phones, before `afterStep`: what must be over first (the replay: settled). */
  settle?(index: number): Promise<void>;
  /** After a step's phones: check what must show, `expected` being the table's figures. */
  afterStep(index: number, expected: WallboardFigures, step: WallboardStep): Promise<void>;
  /** The steps to play (all by default). */
  steps?: WallboardStep[];
}

/**
 * Plays the scenario: for each step its command, `afterCommand`, its phones, `settle`, then
 * `afterStep` with the figures the table says. A page test runs it on the simulator with the app
 * served (`Deno.serve({ port: 0 }, ctx.app.fetch)`) and checks its page in `afterStep`.
 *
 * @example
 * await runWallboardScenario({
 *   w, phones: await simulatorPhones(ctx),
 *   afterStep: async (_, expected) => assert.deepEqual(await reader.figures(), expected),
 * });
 */
export async function runWallboardScenario(run: WallboardRun): Promise<void> {
  const steps = run.steps ?? WALLBOARD_STEPS;
  for (const [index, step] of steps.entries()) {
    await step.command(run.w);
    await run.afterCommand?.(index);
    await step.phones?.(run.phones);
    await run.settle?.(index);
    await run.afterStep(index, parseFigures(step.figures), step);
  }
}

/** The simulated phones: every phone answers by hand (its policy `manual`), in virtual time. */
export async function simulatorPhones(ctx: TestContext): Promise<WallboardPhones> {
  const sim = ctx.services.sim!;
  for (const extension of Object.keys(PHONES)) await sim.setPolicy(extension, { policy: "manual" });
  return {
    act: (extension, action) => sim.act(extension, action),
    advance: (ms) => ctx.clock.advance(ms),
  };
}

/** Every event handed to the platform's listeners from now on (taken out by the caller). */
export function captureEvents(ctx: TestContext): PlatformEvent[] {
  const events: PlatformEvent[] = [];
  ctx.services.platform.onEvents((batch) => {
    events.push(...batch);
    return Promise.resolve();
  });
  return events;
}

/**
 * The scenario on the simulator through the real app (settings {@link WALLBOARD_SETTINGS}),
 * asserting the table's figures after each step; answers each step's {@link eventLines}: what
 * the other platforms must give.
 */
export async function wallboardOnSimulator(): Promise<string[][]> {
  const ctx = await setup(WALLBOARD_SETTINGS);
  try {
    const w = await wallboardWorld(ctx);
    const reader = await supervisionReader(ctx, w);
    const events = captureEvents(ctx);
    const steps: string[][] = [];
    await runWallboardScenario({
      w,
      phones: await simulatorPhones(ctx),
      async afterStep(index, _expected, step) {
        steps.push(eventLines(w, events.splice(0)));
        assert.deepEqual(
          figureLines(await reader.figures()),
          normalized(step.figures),
          `after step ${index + 1}: ${step.name}`,
        );
        await reader.curvesAddUp();
      },
    });
    return steps;
  } finally {
    await ctx.services.sim!.close();
    ctx.services.store.close();
  }
}

/**
 * The phones of a replay: what they did is in the recording (played before `afterCommand`
 * returns); time passes on svc's clock only.
 */
export function replayPhones(ctx: TestContext): WallboardPhones {
  return {
    act: () => Promise.resolve(),
    advance: (ms) => ctx.clock.advance(ms),
  };
}

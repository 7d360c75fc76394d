// The supervisor's wallboard (docs/supervision.md, "The page"): what the page knows, built from
// the CTI channel's messages, and what it shows of it. No DOM here: app.js draws it, and
// tests/web/supervision_model_test.ts runs these functions as they are.

/**
 * @typedef {{ statName: string, value: number }} Counter
 * @typedef {{ position: number, name: string, number: string, queueTime: string }} QueueCall
 * @typedef {{ id: number, name: string, displayName: string, number: string,
 *   stats: Record<string, number>, calls: QueueCall[] | null }} Queue
 * @typedef {{ id: number, number: string, firstName: string, lastName: string,
 *   stats: Record<string, string | number | boolean>, statsAt: number }} Agent
 * @typedef {{ queues: Map<number, Queue>, agents: Map<number, Agent>,
 *   members: Map<string, number> }} Board
 * @typedef {{ warn: number, alert: number }} Limit
 * @typedef {{ waiting: Limit, longestWait: Limit, serviceLevel: Limit, abandoned: Limit }}
 *   Thresholds
 */

/** An empty board. @returns {Board} */
export function createBoard() {
  return { queues: new Map(), agents: new Map(), members: new Map() };
}

/** @param {Board} board @param {number} id @returns {Queue} */
function queueOf(board, id) {
  let queue = board.queues.get(id);
  if (!queue) {
    queue = { id, name: `#${id}`, displayName: `#${id}`, number: "", stats: {}, calls: null };
    board.queues.set(id, queue);
  }
  return queue;
}

/** @param {Board} board @param {number} id @returns {Agent} */
function agentOf(board, id) {
  let agent = board.agents.get(id);
  if (!agent) {
    agent = { id, number: String(id), firstName: "", lastName: "", stats: {}, statsAt: 0 };
    board.agents.set(id, agent);
  }
  return agent;
}

/**
 * @param {Board} board
 * @param {{ id: number, name: string, displayName?: string, number?: string }} config
 */
function setQueue(board, config) {
  const queue = queueOf(board, config.id);
  queue.name = config.name;
  queue.displayName = config.displayName || config.name;
  queue.number = config.number ?? "";
}

/**
 * @param {Board} board
 * @param {{ id: number, number: string, firstName?: string, lastName?: string }} config
 */
function setAgent(board, config) {
  const agent = agentOf(board, config.id);
  agent.number = config.number;
  agent.firstName = config.firstName ?? "";
  agent.lastName = config.lastName ?? "";
}

/**
 * Takes one message of the CTI channel into `board`; answers what it changed ("queues",
 * "agents", "calls", "members"), or null for a message the board does not use.
 *
 * @param {Board} board
 * @param {{ msgType: string, ctiMessage: any }} message
 * @param {number} now when it came (ms, the page's clock)
 * @returns {string | null}
 */
export function apply(board, message, now) {
  const body = message.ctiMessage;
  switch (message.msgType) {
    case "QueueList": {
      const ids = new Set(body.map((/** @type {{id: number}} */ queue) => queue.id));
      for (const id of board.queues.keys()) if (!ids.has(id)) board.queues.delete(id);
      for (const queue of body) setQueue(board, queue);
      return "queues";
    }
    case "QueueConfig":
      setQueue(board, body);
      return "queues";
    case "AgentList": {
      const ids = new Set(body.map((/** @type {{id: number}} */ agent) => agent.id));
      for (const id of board.agents.keys()) if (!ids.has(id)) board.agents.delete(id);
      for (const agent of body) setAgent(board, agent);
      return "agents";
    }
    case "AgentConfig":
      setAgent(board, body);
      return "agents";
    case "QueueMemberList":
      board.members.clear();
      for (const member of body) {
        board.members.set(`${member.agentId}/${member.queueId}`, member.penalty);
      }
      return "members";
    case "QueueMember": {
      const key = `${body.agentId}/${body.queueId}`;
      if (body.penalty < 0) board.members.delete(key);
      else board.members.set(key, body.penalty);
      return "members";
    }
    case "QueueStatistics": {
      // xuc's messages may hold some counters only: merged into what the queue had
      const stats = queueOf(board, body.queueId).stats;
      for (const counter of body.counters) stats[counter.statName] = counter.value;
      return "queues";
    }
    case "AgentStatistics": {
      const agent = agentOf(board, body.id);
      for (const stat of body.statistics) agent.stats[stat.name] = stat.value;
      agent.statsAt = now;
      return "agents";
    }
    case "QueueCalls":
      queueOf(board, body.queueId).calls = body.calls;
      return "calls";
    default:
      return null;
  }
}

/** What a wallboard starts with; a supervisor changes them on the page. @type {Thresholds} */
export const DEFAULT_THRESHOLDS = Object.freeze({
  waiting: Object.freeze({ warn: 3, alert: 6 }),
  longestWait: Object.freeze({ warn: 30, alert: 60 }),
  serviceLevel: Object.freeze({ warn: 80, alert: 60 }),
  abandoned: Object.freeze({ warn: 5, alert: 10 }),
});

/** Which thresholds grow worse as their figure goes down. */
const LOWER_IS_WORSE = new Set(["serviceLevel"]);

/**
 * Thresholds as stored (localStorage), each field checked; what is missing or wrong is the
 * default's.
 *
 * @param {string | null} text
 * @returns {Thresholds}
 */
export function readThresholds(text) {
  /** @type {any} */
  let stored = {};
  try {
    stored = JSON.parse(text ?? "{}") ?? {};
  } catch {
    stored = {};
  }
  /** @type {any} */
  const thresholds = {};
  for (const [name, limit] of Object.entries(DEFAULT_THRESHOLDS)) {
    const given = stored[name] ?? {};
    const valid = (/** @type {unknown} */ value) =>
      typeof value === "number" && Number.isFinite(value) && value >= 0;
    thresholds[name] = {
      warn: valid(given.warn) ? given.warn : limit.warn,
      alert: valid(given.alert) ? given.alert : limit.alert,
    };
  }
  return thresholds;
}

/**
 * "ok", "warn" or "alert": how `value` stands against the threshold `name`; "ok" for no value.
 *
 * @param {keyof Thresholds} name
 * @param {number | null} value
 * @param {Thresholds} thresholds
 */
export function level(name, value, thresholds) {
  if (value === null || Number.isNaN(value)) return "ok";
  const { warn, alert } = thresholds[name];
  if (LOWER_IS_WORSE.has(name)) return value <= alert ? "alert" : value <= warn ? "warn" : "ok";
  return value >= alert ? "alert" : value >= warn ? "warn" : "ok";
}

const LEVELS = ["ok", "warn", "alert"];

/** The worst of `levels`. @param {string[]} levels */
export const worst = (levels) =>
  LEVELS[Math.max(0, ...levels.map((each) => LEVELS.indexOf(each)))] ?? "ok";

/** @param {Record<string, unknown>} stats @param {string} name */
const count = (stats, name) =>
  typeof stats[name] === "number" ? /** @type {number} */ (stats[name]) : 0;

/**
 * A queue's tile: its figures now (`now` on the server's clock: the page's corrected by the
 * offset it measured), each with its level.
 *
 * @param {Queue} queue
 * @param {number} now
 * @param {Thresholds} thresholds
 */
export function queueTile(queue, now, thresholds) {
  const { stats } = queue;
  const waiting = queue.calls ? queue.calls.length : count(stats, "WaitingCalls");
  const entered = count(stats, "TotalNumberCallsEntered");
  const abandoned = count(stats, "TotalNumberCallsAbandonned");
  const logged = count(stats, "LoggedAgents");
  const ready = count(stats, "AvailableAgents");
  const paused = count(stats, "PausedAgents");
  const oldest = queue.calls?.length
    ? Math.min(...queue.calls.map((call) => Date.parse(call.queueTime)))
    : null;
  const longestWait = queue.calls
    ? (oldest === null ? 0 : Math.max(0, Math.floor((now - oldest) / 1000)))
    : count(stats, "LongestWaitTime");
  const serviceLevel = entered ? count(stats, "PercentageAnsweredBefore15") : null;
  const abandonedPercent = entered ? Math.round((abandoned / entered) * 1000) / 10 : null;
  const levels = {
    waiting: level("waiting", waiting, thresholds),
    longestWait: level("longestWait", longestWait, thresholds),
    serviceLevel: level("serviceLevel", serviceLevel, thresholds),
    abandoned: level("abandoned", abandonedPercent, thresholds),
  };
  return {
    waiting,
    longestWait,
    serviceLevel,
    entered,
    answered: count(stats, "TotalNumberCallsAnswered"),
    abandoned,
    abandonedPercent,
    logged,
    ready,
    paused,
    // on a call, ringing or in wrap-up: logged in, neither ready nor paused
    busy: Math.max(0, logged - ready - paused),
    levels,
    level: worst(Object.values(levels)),
  };
}

/** State names as the page shows them. */
export const STATE_LABELS = Object.freeze({
  logged_out: "Logged out",
  ready: "Ready",
  ringing: "Ringing",
  on_call: "On call",
  wrapup: "Wrap-up",
  paused: "Paused",
});

/**
 * An agent's row: its state, for how long, its call and its day (durations counted on from the
 * last figures while they grow).
 *
 * @param {Agent} agent
 * @param {number} now the page's clock
 * @param {number} offset the server's clock less the page's (ms)
 */
export function agentRow(agent, now, offset = 0) {
  const { stats } = agent;
  const state = typeof stats.State === "string" ? stats.State : "logged_out";
  const since = typeof stats.StateSince === "string" && stats.StateSince
    ? Date.parse(stats.StateSince)
    : null;
  const elapsed = agent.statsAt ? Math.max(0, Math.floor((now - agent.statsAt) / 1000)) : 0;
  const onQueueCall = state === "on_call" && stats.Call === "queue";
  const label = /** @type {Record<string, string>} */ (STATE_LABELS)[state] ?? state;
  const reason = typeof stats.PausedReason === "string" ? stats.PausedReason : "";
  const paused = stats.Paused === true;
  // paused during a call or a wrap-up: it shows that, and the pause it goes to after
  const pause = reason ? `paused: ${reason}` : "paused";
  return {
    state,
    label: state === "paused"
      ? (reason ? `${label}: ${reason}` : label)
      : paused && state !== "logged_out"
      ? `${label}, ${pause}`
      : label,
    paused,
    pausedReason: reason,
    inState: since === null ? null : Math.max(0, Math.floor((now + offset - since) / 1000)),
    call: typeof stats.Call === "string" ? stats.Call : "",
    callNumber: typeof stats.CallNumber === "string" ? stats.CallNumber : "",
    answered: count(stats, "AnsweredCalls"),
    missed: count(stats, "MissedCalls"),
    talk: count(stats, "TalkTime") + (onQueueCall ? elapsed : 0),
    logged: state !== "logged_out",
  };
}

/** The queues of an agent, by queue id → penalty. @param {Board} board @param {number} agentId */
export function agentQueues(board, agentId) {
  const queues = new Map();
  for (const [key, penalty] of board.members) {
    const [agent, queue] = key.split("/").map(Number);
    if (agent === agentId) queues.set(queue, penalty);
  }
  return queues;
}

/**
 * The commands that take an agent's queues from `before` to `after` (queue id → penalty).
 *
 * @param {number} agentId
 * @param {Map<number, number>} before
 * @param {Map<number, number>} after
 */
export function membershipCommands(agentId, before, after) {
  const commands = [];
  for (const [queueId, penalty] of after) {
    if (before.get(queueId) !== penalty) {
      commands.push({ claz: "web", command: "setAgentQueue", agentId, queueId, penalty });
    }
  }
  for (const queueId of before.keys()) {
    if (!after.has(queueId)) {
      commands.push({ claz: "web", command: "removeAgentFromQueue", agentId, queueId });
    }
  }
  return commands;
}

/** Seconds as `m:ss`, or `h:mm:ss` from an hour; "–" for none. @param {number | null} seconds */
export function duration(seconds) {
  if (seconds === null || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, Math.floor(seconds));
  const pad = (/** @type {number} */ n) => String(n).padStart(2, "0");
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h ? `${h}:${pad(m)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
}

/** The wait before the next reconnection: 1, 2, 4 … 30 s, less up to a fifth at random. */
export function backoff(/** @type {number} */ attempt, random = Math.random) {
  const base = Math.min(30_000, 1000 * 2 ** Math.max(0, attempt));
  return Math.round(base * (1 - random() * 0.2));
}

/**
 * When to renew a token of `ttl` seconds got at `at` (ms): at three quarters of its life, at
 * least 5 s on.
 *
 * @param {number} at
 * @param {number} ttl
 */
export const renewalAt = (at, ttl) => at + Math.max(5_000, ttl * 750);

/**
 * The offset of the server's clock to the page's, from a response's `Date` header (whole
 * seconds) read at `now`: 0 unless they differ by more than 2 s (the header's rounding).
 *
 * @param {string | null} header
 * @param {number} now
 */
export function clockOffset(header, now) {
  const server = header ? Date.parse(header) : NaN;
  if (Number.isNaN(server)) return 0;
  const offset = server + 500 - now;
  return Math.abs(offset) > 2_000 ? offset : 0;
}

/**
 * The page's address without a CAS `ticket` (the `service` CAS was given), and the ticket.
 *
 * @param {string} href
 */
export function casReturn(href) {
  const url = new URL(href);
  const ticket = url.searchParams.get("ticket");
  url.searchParams.delete("ticket");
  url.hash = "";
  return { service: url.toString(), ticket };
}

/** Where the page sends the browser to sign in with CAS. @param {string} casUrl @param {string} service */
export const casLoginUrl = (casUrl, service) =>
  `${casUrl.replace(/\/+$/, "")}/login?service=${encodeURIComponent(service)}`;

// --- the day's curve -----------------------------------------------------------------------

/**
 * @typedef {{ start: string, time: string, entered: number, answered: number,
 *   answeredWithinServiceLevel: number, abandoned: number, timeout: number, waitingMax: number,
 *   serviceLevelPercent: number | null }} Interval
 *   an interval of a queue's day, as `GET /supervision/queues/{id}/intervals` answers it
 */

/** Intervals an hour holds (of 15 minutes), and the fewest a curve shows (4 hours). */
const PER_HOUR = 4;
const FEWEST = 4 * PER_HOUR;

/** @param {Interval} each */
const active = (each) =>
  each.entered + each.answered + each.abandoned + each.timeout + each.waitingMax > 0;

/**
 * The intervals a curve shows, by index (`to` excluded): from the hour of the day's first call to
 * the end of the hour now is in, at least 4 hours (earlier ones first, else hours to come).
 *
 * @param {Interval[]} intervals the day's, from its start to now
 */
export function curveWindow(intervals) {
  const first = intervals.findIndex(active);
  const start = first < 0 ? Math.max(0, intervals.length - 1) : first;
  let to = Math.ceil(intervals.length / PER_HOUR) * PER_HOUR;
  let from = Math.floor(start / PER_HOUR) * PER_HOUR;
  if (to - from < FEWEST) from = Math.max(0, to - FEWEST);
  if (to - from < FEWEST) to = from + FEWEST;
  return { from, to };
}

/** `HH:MM` `minutes` after `time` (`HH:MM`), round the clock. */
const later = (/** @type {string} */ time, /** @type {number} */ minutes) => {
  const [h = 0, m = 0] = time.split(":").map(Number);
  const total = (((h * 60 + m + minutes) % 1440) + 1440) % 1440;
  const pad = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${pad(Math.floor(total / 60))}:${pad(total % 60)}`;
};

/** The smallest of 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200… that is at least `value`. */
export function niceCeiling(/** @type {number} */ value) {
  for (let scale = 1;; scale *= 10) {
    for (const step of [2, 4, 6, 8, 10]) if (step * scale >= value) return step * scale;
  }
}

/**
 * What a queue's curve draws in a box of `width` × `height` px with text of `font` px: a bar per
 * interval for the most calls waiting (scale on the left), the service level of each interval as
 * a line (0 to 100 % on the right; broken where no call entered), the amber threshold of the
 * service level dashed, the hours below.
 *
 * @param {Interval[]} intervals the day's, from its start to now
 * @param {{ width: number, height: number, font: number, warn: number }} box
 */
export function curvePlan(intervals, { width, height, font, warn }) {
  const { from, to } = curveWindow(intervals);
  const left = font * 2.4;
  const right = font * 3.4;
  const top = font * 0.7;
  const bottom = font * 1.7;
  const plotWidth = Math.max(1, width - left - right);
  const plotHeight = Math.max(1, height - top - bottom);
  const slot = plotWidth / (to - from);
  const shown = intervals.slice(from, to);
  const most = niceCeiling(Math.max(1, ...shown.map((each) => each.waitingMax)));
  const yOf = (/** @type {number} */ share) => top + plotHeight * (1 - share);
  const bars = shown.map((each, k) => ({
    start: each.start,
    waiting: each.waitingMax,
    serviceLevel: each.serviceLevelPercent,
    x: left + (k + 0.15) * slot,
    width: slot * 0.7,
    y: yOf(each.waitingMax / most),
    height: plotHeight * (each.waitingMax / most),
    centre: left + (k + 0.5) * slot,
    level: each.serviceLevelPercent === null ? null : yOf(each.serviceLevelPercent / 100),
  }));
  /** @type {{ x: number, y: number }[][]} runs of intervals with a service level, each a line */
  const lines = [];
  let run = null;
  for (const bar of bars) {
    if (bar.level === null) {
      run = null;
      continue;
    }
    if (!run) lines.push(run = []);
    run.push({ x: bar.centre, y: bar.level });
  }
  // an hour mark at least 4 characters' room apart: every 1, 2, 3, 4 or 6 hours
  const every = [1, 2, 3, 4, 6].find((hours) => hours * PER_HOUR * slot >= font * 4) ?? 12;
  const last = intervals.at(-1);
  const hours = [];
  for (let k = from; k <= to; k += PER_HOUR) {
    if ((k / PER_HOUR) % every) continue;
    const time = intervals[k]?.time ??
      (last ? later(last.time, (k - intervals.length + 1) * 15) : "");
    hours.push({ x: left + (k - from) * slot, label: time });
  }
  return {
    from: intervals[from]?.start ?? null,
    width,
    height,
    plot: { left, top, width: plotWidth, height: plotHeight, bottom: top + plotHeight },
    bars,
    lines,
    hours,
    waitingTicks: [0, most / 2, most].map((value) => ({ value, y: yOf(value / most) })),
    levelTicks: [0, 50, 100].map((value) => ({ value, y: yOf(value / 100) })),
    warn: { value: warn, y: yOf(Math.min(100, Math.max(0, warn)) / 100) },
    empty: !shown.some(active),
  };
}

/**
 * "The page shows a change within 1 s" (issue 26), measured on the call centre of
 * [supervision.ts](supervision.ts): a socket opens the CTI WebSocket (`GET /svc/api/2.0/cti`) as
 * a supervisor's page does (`web/supervision/app.js`: `getList` of queues, agents and queue
 * members, `subscribeToQueueStats`, `subscribeToAgentStats`) and waits for the whole board (every
 * queue's `QueueStatistics`, every agent's `AgentStatistics`). Each change is an agent paused or
 * unpaused through `POST /svc/api/2.0/supervision/agents/{id}/pause` (`…/unpause`), timed from the
 * request to the last of what the page needs to show it:
 *
 * - the agent's `AgentStatistics` with its new `State` (`paused`, `ready`): its row in the table;
 * - the `QueueStatistics` of both its queues with the new `PausedAgents`: the queues' tiles.
 *
 * Two series: changes 250 ms apart (a refresh of the socket's figures runs
 * `REFRESH_DELAY_MS` after the change), and unpauses 100 ms after the same agent's pause (at most
 * one refresh every `REFRESH_INTERVAL_MS`: the unpause waits for it), lib/cti/supervision.ts.
 *
 * Baseline: `bench/ws_server.ts`, a bare `Deno.serve` WebSocket server: `POST /broadcast` to its
 * message on one socket, a message of the size of what a change sends the page.
 */
import { BenchError, bounded, freePort, pause, startDeno, waitReady } from "./processes.ts";
import type { Row } from "./rows.ts";
import { AGENTS, type CallCentre, figures, QUEUES } from "./supervision_centre.ts";

/** What the supervisor's page sends once its socket is open (`web/supervision/app.js`). */
const PAGE_COMMANDS: Record<string, unknown>[] = [
  { command: "getList", objectType: "queue" },
  { command: "getList", objectType: "agent" },
  { command: "getList", objectType: "queuemember" },
  { command: "subscribeToQueueStats" },
  { command: "subscribeToAgentStats" },
];

/** Changes measured per series, after `WARMUP` not measured; the gap between two. */
const CHANGES = 50;
const WARMUP = 3;
const GAP_MS = 250;
/** The second series: a change this long after the same agent's previous one. */
const AGAIN_MS = 100;
const TIMEOUT_MS = 10_000;
/** The target: every change shown within this. */
const TARGET_MS = 1000;

type Message = Record<string, unknown>;

/** Messages of one socket, and waiters for the next one matching a predicate. */
class Inbox {
  readonly #waiters: {
    match: (message: Message, size: number) => boolean;
    resolve: (at: number) => void;
  }[] = [];

  take(at: number, message: Message, size: number): void {
    for (const waiter of [...this.#waiters]) {
      if (!waiter.match(message, size)) continue;
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      waiter.resolve(at);
    }
  }

  /** When the first message matching `match` from now on comes; fails after `TIMEOUT_MS`. */
  next(what: string, match: (message: Message, size: number) => boolean): Promise<number> {
    const { promise, resolve, reject } = Promise.withResolvers<number>();
    const waiter = { match, resolve };
    this.#waiters.push(waiter);
    const timer = setTimeout(() => {
      this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
      reject(new BenchError(`supervision: no ${what} within ${TIMEOUT_MS / 1000} s`));
    }, TIMEOUT_MS);
    return promise.finally(() => clearTimeout(timer));
  }
}

/** Opens a WebSocket; answers it once open, its messages going to `inbox`. */
async function openSocket(url: string, inbox: Inbox): Promise<WebSocket> {
  const socket = new WebSocket(url);
  socket.onmessage = (event) => {
    const at = performance.now();
    const text = event.data as string;
    inbox.take(at, JSON.parse(text), text.length);
  };
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = () => reject(new BenchError(`cannot open ${url.replace(/\?.*/, "")}`));
  });
  return socket;
}

/** p50, p99 and max of `samples` (ms). */
function quantiles(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1)! };
}

const spelled = ({ p50, p99, max }: ReturnType<typeof quantiles>) =>
  `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms`;

/** The paused count of a `QueueStatistics` message of queue `id`, else null. */
function pausedOf(message: Message, id: number): number | null {
  if (message.msgType !== "QueueStatistics") return null;
  const cti = message.ctiMessage as {
    queueId: number;
    counters: { statName: string; value: number }[];
  };
  if (cti.queueId !== id) return null;
  return cti.counters.find((counter) => counter.statName === "PausedAgents")?.value ?? null;
}

/** The `State` of an `AgentStatistics` message of agent `id`, else null. */
function stateOf(message: Message, id: number): string | null {
  if (message.msgType !== "AgentStatistics") return null;
  const cti = message.ctiMessage as { id: number; statistics: { name: string; value: unknown }[] };
  if (cti.id !== id) return null;
  const state = cti.statistics.find((stat) => stat.name === "State")?.value;
  return typeof state === "string" ? state : null;
}

/** The bare baseline: `POST /broadcast` to its message on one socket of `bench/ws_server.ts`. */
async function bareBroadcast(stack: AsyncDisposableStack, size: number): Promise<number[]> {
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = startDeno(stack, ["run", "--allow-net", "bench/ws_server.ts", `${port}`]);
  await waitReady(`${base}/`, server);
  const inbox = new Inbox();
  const socket = new WebSocket(`ws://127.0.0.1:${port}/ws?group=page`);
  socket.onmessage = (event) => inbox.take(performance.now(), { text: event.data }, 0);
  await new Promise((resolve) => socket.onopen = resolve);
  await pause(100); // the server adds it to the group once open on its side
  const samples: number[] = [];
  try {
    for (let n = 0; n < WARMUP + CHANGES; n++) {
      const body = JSON.stringify({ round: n, pad: "".padEnd(Math.max(0, size - 30), "x") });
      const arrived = inbox.next("broadcast", (message) => message.text === body);
      const started = performance.now();
      const response = await fetch(`${base}/broadcast?group=page`, {
        method: "POST",
        body,
        signal: bounded(TIMEOUT_MS),
      });
      await response.body?.cancel();
      const at = await arrived;
      if (n >= WARMUP) samples.push(at - started);
      await pause(GAP_MS);
    }
  } finally {
    socket.close();
  }
  return samples;
}

/**
 * The delays from a change to the supervisor's page, each series beside the bare broadcast.
 */
export async function changeLatencies(
  stack: AsyncDisposableStack,
  centre: CallCentre,
): Promise<Row[]> {
  const { svc, adminToken, supervisorToken } = centre;
  const inbox = new Inbox();
  // the whole board: every queue's figures and every agent's, once each
  const queuesSeen = new Set<number>();
  const agentsSeen = new Set<number>();
  const board = inbox.next("whole board", (message) => {
    const cti = message.ctiMessage as { queueId?: number; id?: number };
    if (message.msgType === "QueueStatistics") queuesSeen.add(cti.queueId!);
    if (message.msgType === "AgentStatistics") agentsSeen.add(cti.id!);
    return queuesSeen.size === QUEUES && agentsSeen.size === AGENTS;
  });
  const opened = performance.now();
  const ws = svc.replace(/^http/, "ws");
  const socket = await openSocket(`${ws}/svc/api/2.0/cti?token=${supervisorToken}`, inbox);
  stack.defer(() => socket.close());
  inbox.next("an error", (message) => message.msgType === "Error").then(
    () => console.error("  the socket answered an Error"),
    () => {},
  );
  for (const command of PAGE_COMMANDS) socket.send(JSON.stringify({ claz: "web", ...command }));
  const boardAt = await board;
  console.log(
    `  the supervisor's socket: the whole board (${QUEUES} QueueStatistics, ${AGENTS} ` +
      `AgentStatistics) ${(boardAt - opened).toFixed(0)} ms after opening`,
  );
  await pause(1500); // the refreshes after the subscriptions are over

  // ready agents not on a call, in number order: consecutive ones share no queue
  const agents = (await figures(svc, adminToken, "agents"))
    .filter((agent) => agent.state === "ready")
    .sort((a, b) => a.id - b.id);
  const paused = new Map(
    (await figures(svc, adminToken, "queues")).map((queue) => [queue.id, queue.agents.paused]),
  );
  if (agents.length < 2 * (WARMUP + CHANGES)) {
    throw new BenchError(`supervision: ${agents.length} ready agents, too few to change`);
  }
  /** The bytes a change sends the page (its agent's and its queues' figures), largest seen. */
  let changeBytes = 0;
  /**
   * Pauses (or unpauses) `agent`; answers the delays to its row's and its queues' figures on
   * the page's socket.
   */
  const change = async (agent: (typeof agents)[number], action: "pause" | "unpause") => {
    const state = action === "pause" ? "paused" : "ready";
    const queueIds = agent.queues.map((queue) => queue.id);
    for (const id of queueIds) paused.set(id, paused.get(id)! + (action === "pause" ? 1 : -1));
    let bytes = 0;
    const row = inbox.next(`AgentStatistics of agent ${agent.id} ${state}`, (message, size) => {
      const match = stateOf(message, agent.id) === state;
      if (match) bytes += size;
      return match;
    });
    const tiles = Promise.all(
      queueIds.map((id) =>
        inbox.next(`QueueStatistics of queue ${id}`, (message, size) => {
          const match = pausedOf(message, id) === paused.get(id);
          if (match) bytes += size;
          return match;
        })
      ),
    );
    const started = performance.now();
    const response = await fetch(`${svc}/svc/api/2.0/supervision/agents/${agent.id}/${action}`, {
      method: "POST",
      headers: { Authorization: `Bearer ${adminToken}` },
      signal: bounded(TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.status !== 204) throw new BenchError(`${action}: ${response.status}`);
    const [rowAt, tileTimes] = await Promise.all([row, tiles]);
    changeBytes = Math.max(changeBytes, bytes);
    return {
      row: rowAt - started,
      tiles: Math.max(...tileTimes) - started,
      page: Math.max(rowAt, ...tileTimes) - started,
    };
  };

  const load = Deno.loadavg()[0]!.toFixed(2);
  console.log(
    `  ${CHANGES} pauses, ${GAP_MS} ms apart, then ${CHANGES} pauses each followed ` +
      `${AGAIN_MS} ms later by its unpause (load average ${load})`,
  );
  const first = { row: [] as number[], tiles: [] as number[], page: [] as number[] };
  const again = { row: [] as number[], tiles: [] as number[], page: [] as number[] };
  const keep = (series: typeof first, delays: Awaited<ReturnType<typeof change>>) => {
    series.row.push(delays.row);
    series.tiles.push(delays.tiles);
    series.page.push(delays.page);
  };
  for (let n = 0; n < WARMUP + CHANGES; n++) {
    const delays = await change(agents[n]!, "pause");
    if (n >= WARMUP) keep(first, delays);
    await pause(GAP_MS);
  }
  for (let n = 0; n < WARMUP + CHANGES; n++) {
    const agent = agents[WARMUP + CHANGES + n]!;
    await change(agent, "pause");
    await pause(AGAIN_MS);
    const delays = await change(agent, "unpause");
    if (n >= WARMUP) keep(again, delays);
    await pause(GAP_MS);
  }
  const bare = quantiles(await bareBroadcast(stack, changeBytes));
  const row = (name: string, samples: number[], detail = ""): Row => {
    const q = quantiles(samples);
    return {
      name,
      value: q.p99,
      unit: "ms",
      baseline: {
        name: `bare WebSocket POST /broadcast → its message (${changeBytes} B), p99`,
        value: bare.p99,
      },
      target: { text: `every change < ${TARGET_MS} ms`, met: q.max < TARGET_MS },
      detail: `${spelled(q)}; bare ${spelled(bare)}; ${CHANGES} changes${detail}`,
    };
  };
  const parts = (series: typeof first) => {
    const [r, t] = [quantiles(series.row), quantiles(series.tiles)];
    return `; its AgentStatistics alone p50 ${r.p50.toFixed(1)}, p99 ${r.p99.toFixed(1)} ms, ` +
      `its QueueStatistics p50 ${t.p50.toFixed(1)}, p99 ${t.p99.toFixed(1)} ms`;
  };
  return [
    row(
      "POST /supervision/agents/{id}/pause → the page's socket has the agent's AgentStatistics " +
        `and both its queues' QueueStatistics (changes ${GAP_MS} ms apart)`,
      first.page,
      parts(first),
    ),
    row(
      `the same for an unpause ${AGAIN_MS} ms after the agent's pause`,
      again.page,
      parts(again),
    ),
  ];
}

/**
 * Supervision's Prometheus metrics (docs/metrics.md, docs/supervision.md), in the registry of
 * `lib/metrics.ts`:
 *
 * - read when scraped, from the platform and the store (the same in every process following the
 *   PBX): `svc_queue_calls_waiting` and `svc_queue_longest_wait_seconds` per queue,
 *   `svc_agents` per state (what `GET /supervision/agents` calls `state`);
 * - counted as things happen, in the process that handles the platform's events (the lease
 *   holder on Asterisk): `svc_queue_calls_total` per queue and outcome (`entered`, `answered`,
 *   `abandoned`, `timeout`). Like every counter, it starts again from 0 with the process; sum it
 *   over the processes.
 *
 * A CTI user with a rights profile reads these series alone, of what its profile covers
 * ({@link coveredExposition}): its queues' series, and `svc_agents` over its agents.
 */
import type { CoreServices } from "../core_services.ts";
import type { QueueCallEvent } from "../platform/port.ts";
import { Counter, Gauge, Registry } from "../prom_client.ts";
import { type Coverage, covers } from "../rights/rights.ts";
import { listAgents } from "../store/agents.ts";
import { listQueues } from "../store/queues.ts";
import { ACTIVITIES } from "./activities.ts";
import { agentsLive } from "./agents.ts";

/** The outcomes counted by `svc_queue_calls_total`, by queue call event. */
const OUTCOMES: Partial<Record<QueueCallEvent["event"], string>> = {
  joined: "entered",
  answered: "answered",
  abandoned: "abandoned",
  timeout: "timeout",
};

/** What one scrape reads, once for every gauge. */
interface Snapshot {
  queues: { id: number; name: string; waiting: number; longestWaitSeconds: number }[];
  /** Agents by state; null when they could not be read. */
  agents: Map<string, number> | null;
}

/** Counts queue calls as their events come; see {@link registerSupervisionMetrics}. */
export type QueueCallCounter = (event: QueueCallEvent, queueName: string) => void;

/**
 * Adds supervision's metrics to `registry`; answers the function the counting calls with each
 * queue call event.
 *
 * @example
 * const countCall = registerSupervisionMetrics(metrics.registry, services);
 */
export function registerSupervisionMetrics(
  registry: Registry,
  services: CoreServices,
): QueueCallCounter {
  const registers = [registry];
  let scrape: Promise<Snapshot> | null = null;
  // every gauge's collect() starts in the same turn of a scrape: they share one read; one the
  // store or the platform fails leaves the gauges empty ("unknown"), the scrape still answers
  const snapshot = () => {
    scrape ??= read(services).catch((): Snapshot => ({ queues: [], agents: null }))
      .finally(() => scrape = null);
    return scrape;
  };
  new Gauge({
    name: "svc_queue_calls_waiting",
    help: "Calls waiting in each queue now.",
    labelNames: ["queue"],
    registers,
    async collect() {
      const { queues } = await snapshot();
      this.reset();
      for (const queue of queues) this.set({ queue: queue.name }, queue.waiting);
    },
  });
  new Gauge({
    name: "svc_queue_longest_wait_seconds",
    help: "How long the longest waiting call of each queue has waited; 0 when none waits.",
    labelNames: ["queue"],
    registers,
    async collect() {
      const { queues } = await snapshot();
      this.reset();
      for (const queue of queues) this.set({ queue: queue.name }, queue.longestWaitSeconds);
    },
  });
  new Gauge({
    name: "svc_agents",
    help:
      "Agents by what they are doing now (logged_out, ready, ringing, on_call, wrapup, paused).",
    labelNames: ["state"],
    registers,
    async collect() {
      const { agents } = await snapshot();
      this.reset();
      if (agents === null) return;
      for (const state of ACTIVITIES) this.set({ state }, agents.get(state) ?? 0);
    },
  });
  const calls = new Counter({
    name: "svc_queue_calls_total",
    help: "Queue calls by queue and outcome (entered, answered, abandoned, timeout), counted by " +
      "the process handling the platform's events.",
    labelNames: ["queue", "outcome"],
    registers,
  });
  return (event, queueName) => {
    const outcome = OUTCOMES[event.event];
    if (outcome) calls.inc({ queue: queueName, outcome });
  };
}

/**
 * The supervision series as `coverage` sees them, in the text format: each queue gauge and
 * `svc_queue_calls_total` (from `registry`'s counter) of the covered queues, `svc_agents` counted
 * over the covered agents.
 */
export async function coveredExposition(
  registry: Registry,
  services: CoreServices,
  coverage: Coverage,
): Promise<string> {
  const snapshot = await read(services, (id) => covers(coverage.agents, id))
    .catch((): Snapshot => ({ queues: [], agents: null }));
  const queues = snapshot.queues.filter((queue) => covers(coverage.queues, queue.id));
  const names = new Set(queues.map((queue) => queue.name));
  const own = new Registry();
  const registers = [own];
  const gauge = (name: string, labelNames: string[]) => {
    const help = (registry.getSingleMetric(name) as unknown as { help: string }).help;
    return new Gauge({ name, help, labelNames, registers });
  };
  const waiting = gauge("svc_queue_calls_waiting", ["queue"]);
  const longest = gauge("svc_queue_longest_wait_seconds", ["queue"]);
  for (const queue of queues) {
    waiting.set({ queue: queue.name }, queue.waiting);
    longest.set({ queue: queue.name }, queue.longestWaitSeconds);
  }
  const agents = gauge("svc_agents", ["state"]);
  for (const state of ACTIVITIES) {
    if (snapshot.agents) agents.set({ state }, snapshot.agents.get(state) ?? 0);
  }
  const total = registry.getSingleMetric("svc_queue_calls_total")!;
  const calls = new Counter({
    name: "svc_queue_calls_total",
    help: (total as unknown as { help: string }).help,
    labelNames: ["queue", "outcome"],
    registers,
  });
  for (const { labels, value } of (await total.get()).values) {
    if (names.has(String(labels.queue))) calls.inc(labels, value);
  }
  return await own.metrics();
}

async function read(
  services: CoreServices,
  agentCovered: (id: number) => boolean = () => true,
): Promise<Snapshot> {
  const { store, platform, clock } = services;
  const [queueList, waiting, agentList] = await Promise.all([
    listQueues(store),
    platform.queueCalls(),
    listAgents(store),
  ]);
  const now = clock.now();
  const queues = queueList.map((queue) => {
    const since = waiting.filter((call) => call.queueId === queue.id).map((call) => call.sinceMs);
    return {
      id: queue.id,
      name: queue.name,
      waiting: since.length,
      longestWaitSeconds: since.length ? Math.max(0, (now - Math.min(...since)) / 1000) : 0,
    };
  });
  const agents = new Map<string, number>();
  const counted = agentList.filter((agent) => agentCovered(agent.id));
  for (const live of (await agentsLive(services, counted)).values()) {
    agents.set(live.activity, (agents.get(live.activity) ?? 0) + 1);
  }
  return { queues, agents };
}

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
 */
import type { CoreServices } from "../core_services.ts";
import type { QueueCallEvent } from "../platform/port.ts";
import { Counter, Gauge, type Registry } from "../prom_client.ts";
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
  queues: { name: string; waiting: number; longestWaitSeconds: number }[];
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

async function read(services: CoreServices): Promise<Snapshot> {
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
      name: queue.name,
      waiting: since.length,
      longestWaitSeconds: since.length ? Math.max(0, (now - Math.min(...since)) / 1000) : 0,
    };
  });
  const agents = new Map<string, number>();
  for (const live of (await agentsLive(services, agentList)).values()) {
    agents.set(live.activity, (agents.get(live.activity) ?? 0) + 1);
  }
  return { queues, agents };
}

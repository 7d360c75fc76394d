/**
 * Supervision (docs/supervision.md): live queue and agent statistics, the day counters behind
 * them, the `QueueStatistics` events and the supervisor's commands.
 *
 * - {@link Supervision} is built once per process (`lib/services.ts`): its `handle` is a platform
 *   listener that turns queue call and agent state events into day counters in the store (in the
 *   one process that hands platform events on) and, in the same commits, the queue call history
 *   (`lib/call_history/queue_calls.ts`), counts them for `/metrics`, and has the changed queues'
 *   `QueueStatistics` sent once `start()`ed; `prune()` deletes days past the retention.
 * - What any process answers, from the platform and the store, through `CoreServices`:
 *   {@link queueFigures}, {@link waitingCalls}, {@link agentFigures}, {@link supervisionHistory},
 *   {@link queueIntervals};
 *   and the commands {@link pauseAgent}, {@link unpauseAgent}, {@link logoutAgent},
 *   {@link addToQueue}, {@link removeFromQueue}.
 */
import { queueCallMutations } from "../call_history/queue_calls.ts";
import type { CoreServices } from "../core_services.ts";
import type { AgentStateEvent, PlatformEvent, QueueCallEvent } from "../platform/port.ts";
import type { Registry } from "../prom_client.ts";
import { listQueues } from "../store/queues.ts";
import {
  addCountersOnce,
  getAgentMark,
  getAgentMarkFor,
  markAgent,
  pruneDaysBefore,
} from "../store/supervision.ts";
import { agentStateChanges, agentZone, queueCallChanges, supervisionSettings } from "./counting.ts";
import { addDays, dayOf } from "./days.ts";
import { type QueueCallCounter, registerSupervisionMetrics } from "./metrics.ts";
import { queueFigures } from "./queues.ts";
import type { SupervisionSettings } from "./settings.ts";
import { StatisticsPublisher } from "./statistics.ts";

export { agentFigures, type AgentLive, agentsLive } from "./agents.ts";
export {
  addToQueue,
  logoutAgent,
  pauseAgent,
  removeFromQueue,
  SupervisionRefusal,
  unpauseAgent,
} from "./control.ts";
export { historyCsv, historyRangeProblem, supervisionHistory } from "./history.ts";
export { queueIntervals } from "./intervals.ts";
export { queueFigures, waitingCalls } from "./queues.ts";
export type { AgentFigures, QueueFigures } from "./schemas.ts";
export { queueStatistics, STATISTICS_INTERVAL_MS } from "./statistics.ts";

const DAY_MS = 86_400_000;

/** How many times an agent's state change is tried against a mark that moved meanwhile. */
const MARK_ATTEMPTS = 5;

/**
 * The counting, the `QueueStatistics` sent, the metrics, and the pruning of old days.
 *
 * @example
 * const supervision = new Supervision(services, metrics.registry);
 * platform.onEvents((events) => supervision.handle(events));
 * supervision.start(); // QueueStatistics from now on
 */
export class Supervision {
  readonly settings: SupervisionSettings;
  readonly #publisher: StatisticsPublisher;
  readonly #countCall: QueueCallCounter;
  /** Queue names by id (a name never changes), for their settings and metric labels. */
  readonly #queueNames = new Map<number, string>();
  /** The last day this process counted on: a new one prunes the days past the retention. */
  #lastDay: string | null = null;

  constructor(readonly services: CoreServices, registry: Registry) {
    this.settings = supervisionSettings(services.config);
    this.#countCall = registerSupervisionMetrics(registry, services);
    this.#publisher = new StatisticsPublisher({
      clock: services.clock,
      logger: services.logger,
      figures: (ids) => queueFigures(services, ids),
      publish: (messages) => services.events.publish(messages),
    });
  }

  /** Sends the changed queues' `QueueStatistics` from now on. */
  start(): void {
    this.#publisher.start();
  }

  /** Stops sending them (cancels the timer, if any). */
  close(): void {
    this.#publisher.close();
  }

  /**
   * The platform listener: counts the queue call and agent events of a batch, then has the
   * queues they touch sent their figures.
   */
  async handle(events: PlatformEvent[]): Promise<void> {
    const now = this.services.clock.now();
    const calls = events.filter((event): event is QueueCallEvent => event.kind === "queue_call");
    const agents = events.filter((event): event is AgentStateEvent => event.kind === "agent");
    if (!calls.length && !agents.length) return;
    if (calls.length) {
      const names = await this.#names(calls.map((event) => event.queueId));
      // each event once, whatever the number of processes handing it over (its id); the queue
      // call history in the same commit (lib/call_history/queue_calls.ts)
      const keepMs = this.services.config.callHistoryRetentionDays * DAY_MS;
      const counted = await addCountersOnce(
        this.services.store,
        calls,
        (event) => queueCallChanges(event, now, this.settings, names.get(event.queueId)),
        (op, chunk) => queueCallMutations(op, chunk, now, keepMs),
      );
      for (const event of counted) this.#countCall(event, names.get(event.queueId) ?? "");
    }
    for (const event of agents) await this.#agentState(event, now);
    await this.#pruneOnNewDay(now);
    await this.#publisher.changed([
      ...calls.map((event) => event.queueId),
      ...agents.flatMap((event) => event.queues),
    ]);
  }

  /**
   * A queue's membership changed outside the platform's events (`addToQueue`, `removeFromQueue`):
   * its figures may have (its agents).
   */
  queuesChanged(ids: number[]): Promise<void> {
    return this.#publisher.changed(ids);
  }

  /**
   * Deletes the counters of the days past the retention (older than the default time zone's
   * today less the retention); answers how many counters went.
   */
  prune(): Promise<number> {
    const today = dayOf(this.services.clock.now(), agentZone(this.settings));
    return pruneDaysBefore(this.services.store, addDays(today, 1 - this.settings.retentionDays));
  }

  /**
   * Closes the agent's previous state and marks its new one, with their counters, in one commit;
   * an event with an id already counted (handed over again by another process) is skipped.
   */
  async #agentState(event: AgentStateEvent, now: number): Promise<void> {
    const { store, platform } = this.services;
    const presence = await platform.agentPresence(event.agentId);
    for (let attempt = 1; attempt <= MARK_ATTEMPTS; attempt++) {
      const { mark, versionstamp, counted } = event.id === undefined
        ? { ...await getAgentMark(store, event.agentId), counted: false }
        : await getAgentMarkFor(store, event.agentId, event.id);
      if (counted) return;
      const next = agentStateChanges(mark, event, presence, now, this.settings);
      if (
        await markAgent(store, event.agentId, versionstamp, next.mark, next.changes, event.id)
      ) return;
    }
    this.services.logger.warn("agent state not counted: its mark kept moving", {
      agentId: event.agentId,
    });
  }

  /** The names of the queues `ids`, read again when one is not known yet. */
  async #names(ids: number[]): Promise<Map<number, string>> {
    if (ids.some((id) => !this.#queueNames.has(id))) {
      for (const queue of await listQueues(this.services.store)) {
        this.#queueNames.set(queue.id, queue.name);
      }
    }
    return this.#queueNames;
  }

  async #pruneOnNewDay(now: number): Promise<void> {
    const today = dayOf(now, agentZone(this.settings));
    if (today === this.#lastDay) return;
    this.#lastDay = today;
    const pruned = await this.prune();
    if (pruned) this.services.logger.info("supervision days pruned", { counters: pruned });
  }
}

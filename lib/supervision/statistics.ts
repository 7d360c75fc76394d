/**
 * The `QueueStatistics` events (docs/supervision.md, "Events"): a queue's figures in xuc's shape,
 * posted to `eventUrl` and the SSE stream (username "", see `SupervisionMessage`) when a platform
 * event changed them, at most once a second per queue.
 *
 * {@link StatisticsPublisher} sends a queue's figures at once when it sent none in the last
 * second, else once that second is over (a clock timer: the latest figures then); figures equal
 * to those it sent last are not sent again. Nothing is sent until `start()` (main.ts calls it;
 * tests that look at these events do too), so the figures are read only where someone wants them.
 */
import type { Clock } from "../clock.ts";
import type { QueueStatisticsMessage, SupervisionMessage } from "../events/messages.ts";
import type { Logger } from "../log.ts";
import type { QueueFigures } from "./schemas.ts";

/** At most one `QueueStatistics` per queue this often. */
export const STATISTICS_INTERVAL_MS = 1_000;

/**
 * The `QueueStatistics` message of a queue's figures: xuc's stat names (`…Abandonned…` sic; the
 * "15" ones are svc's short-abandon seconds and the queue's service level), svc's own for the
 * means, the longest answered wait and paused agents. Times in seconds; a mean or a percentage
 * of no call is 0.
 *
 * @example
 * queueStatistics((await queueFigures(services, [1]))[0]!);
 */
export function queueStatistics(queue: QueueFigures): QueueStatisticsMessage {
  const { today, agents } = queue;
  const counters: [string, number][] = [
    ["WaitingCalls", queue.waitingCalls],
    ["LongestWaitTime", queue.longestWaitSeconds],
    ["AvailableAgents", agents.ready],
    ["TalkingAgents", agents.onCall],
    ["LoggedAgents", agents.logged],
    ["PausedAgents", agents.paused],
    ["TotalNumberCallsEntered", today.entered],
    ["TotalNumberCallsAnswered", today.answered],
    ["TotalNumberCallsAbandonned", today.abandoned],
    ["TotalNumberCallsAbandonnedAfter15", today.abandoned - today.abandonedShort],
    ["TotalNumberCallsAnsweredBefore15", today.answeredWithinServiceLevel],
    ["PercentageAnsweredBefore15", today.serviceLevelPercent ?? 0],
    ["PercentageAbandonnedAfter15", today.abandonedAfterShortPercent ?? 0],
    ["TotalNumberCallsTimeout", today.timeout],
    ["MeanWaitTime", today.meanWaitSeconds ?? 0],
    ["MaxWaitTime", today.maxWaitSeconds],
    ["MeanTalkTime", today.meanTalkSeconds ?? 0],
  ];
  return {
    msgType: "QueueStatistics",
    ctiMessage: {
      queueId: queue.id,
      counters: counters.map(([statName, value]) => ({ statName, value })),
    },
  };
}

export interface StatisticsPublisherOptions {
  clock: Clock;
  logger: Logger;
  /** The figures of the queues `ids` that exist. */
  figures(ids: number[]): Promise<QueueFigures[]>;
  /** Publishes the events (`EventExport.publish`). */
  publish(messages: SupervisionMessage[]): Promise<void>;
}

/** Sends each changed queue's `QueueStatistics`, at most once a second per queue. */
export class StatisticsPublisher {
  #started = false;
  /** When each queue's figures were last sent, and what they were. */
  readonly #sent = new Map<number, { at: number; text: string }>();
  /** Queues changed since their last sending, waiting for their second to be over. */
  readonly #waiting = new Set<number>();
  #timer: { at: number; cancel: () => void } | null = null;

  constructor(readonly options: StatisticsPublisherOptions) {}

  /** From now on, changed queues have their figures sent. */
  start(): void {
    this.#started = true;
  }

  /** Nothing is sent any more; the timer, if any, is cancelled. */
  close(): void {
    this.#started = false;
    this.#timer?.cancel();
    this.#timer = null;
    this.#waiting.clear();
  }

  /**
   * The figures of the queues `ids` may have changed: those not sent in the last second are sent
   * now (resolves once published), the others when their second is over.
   */
  async changed(ids: Iterable<number>): Promise<void> {
    if (!this.#started) return;
    const now = this.options.clock.now();
    const due: number[] = [];
    for (const id of new Set(ids)) {
      const last = this.#sent.get(id);
      if (!this.#waiting.has(id) && (!last || now - last.at >= STATISTICS_INTERVAL_MS)) {
        due.push(id);
      } else {
        this.#waiting.add(id);
      }
    }
    this.#schedule();
    if (due.length) await this.#send(due);
  }

  /** Keeps one timer, at the end of the earliest second a waiting queue waits for. */
  #schedule(): void {
    if (!this.#started || this.#waiting.size === 0) return;
    let at = Infinity;
    for (const id of this.#waiting) {
      at = Math.min(at, (this.#sent.get(id)?.at ?? 0) + STATISTICS_INTERVAL_MS);
    }
    if (this.#timer && this.#timer.at <= at) return;
    this.#timer?.cancel();
    const { clock } = this.options;
    const cancel = clock.after(Math.max(0, at - clock.now()), async () => {
      this.#timer = null;
      const now = clock.now();
      const due = [...this.#waiting].filter((id) =>
        now - (this.#sent.get(id)?.at ?? 0) >= STATISTICS_INTERVAL_MS
      );
      for (const id of due) this.#waiting.delete(id);
      this.#schedule();
      try {
        await this.#send(due);
      } catch (error) {
        this.options.logger.warn("queue statistics not sent", { error: String(error) });
      }
    });
    this.#timer = { at, cancel };
  }

  /** Sends the figures of `ids` that differ from those sent last. */
  async #send(ids: number[]): Promise<void> {
    const now = this.options.clock.now();
    const sending: { id: number; text: string; message: SupervisionMessage }[] = [];
    for (const queue of await this.options.figures(ids)) {
      const message = queueStatistics(queue);
      const text = JSON.stringify(message);
      if (this.#sent.get(queue.id)?.text === text) continue;
      sending.push({ id: queue.id, text, message: { username: "", message } });
    }
    if (!sending.length || !this.#started) return;
    // taken before the write, so that a change meanwhile waits its second
    for (const { id, text } of sending) this.#sent.set(id, { at: now, text });
    try {
      await this.options.publish(sending.map((each) => each.message));
    } catch (error) {
      for (const { id } of sending) this.#sent.delete(id); // not sent: the next change sends
      throw error;
    }
  }
}

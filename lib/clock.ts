/** Where time comes from, so tests can run in virtual time. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Runs `task` once `ms` have passed on this clock; answers a function that cancels it. A task's
   * failure is the task's own business: it must catch what it wants reported.
   */
  after(ms: number, task: () => void | Promise<void>): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  after(ms, task) {
    const timer = setTimeout(task, Math.max(0, ms));
    return () => clearTimeout(timer);
  },
};

interface Timer {
  at: number;
  order: number;
  task: () => void | Promise<void>;
}

/**
 * A clock that moves only when told to. Its timers run inside {@link ManualClock.advance}, in
 * time order, each awaited, so a test sees every consequence of a step once the step's promise
 * settles.
 */
export class ManualClock implements Clock {
  #timers: Timer[] = [];
  #order = 0;

  constructor(private time = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.time;
  }

  after(ms: number, task: () => void | Promise<void>): () => void {
    const timer = { at: this.time + Math.max(0, ms), order: this.#order++, task };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((other) => other !== timer);
    };
  }

  /**
   * Moves time forward by `ms`, running every timer that falls due on the way (also those the
   * running tasks set), then settles. `advance(0)` runs what is due now.
   */
  async advance(ms: number): Promise<void> {
    const target = this.time + ms;
    for (;;) {
      const next = this.#nextDue(target);
      if (!next) break;
      this.#timers = this.#timers.filter((timer) => timer !== next);
      this.time = Math.max(this.time, next.at);
      await next.task();
    }
    this.time = target;
  }

  /** Timers not yet run (for tests that check nothing is left behind). */
  get pending(): number {
    return this.#timers.length;
  }

  #nextDue(target: number): Timer | undefined {
    let best: Timer | undefined;
    for (const timer of this.#timers) {
      if (timer.at > target) continue;
      if (!best || timer.at < best.at || (timer.at === best.at && timer.order < best.order)) {
        best = timer;
      }
    }
    return best;
  }
}

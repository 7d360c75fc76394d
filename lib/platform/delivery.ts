/**
 * Platform events on their way to the listeners (the outbox, the history, supervision), shared by
 * both adapters. Events are handed over in the order they were pushed, one handing at a time; what
 * was pushed while the listeners were busy goes to them together, so that a burst costs a few
 * store commits of many events rather than one per event (50 dials at once, a day of traffic). A
 * push's own events always keep their kinds' order: its phone and agent events, then its finished
 * calls' history, so that a listener failing on one kind (logged by `tell`) does not lose the other.
 */
import type { PlatformEvent } from "./port.ts";

const isHistory = (event: PlatformEvent) => event.kind === "call_ended";

export class EventDelivery {
  #pending: { events: PlatformEvent[]; done: () => void }[] = [];
  #running: Promise<void> | null = null;

  /**
   * `tell` hands one batch to the listeners and answers false when nothing more may go (what
   * waits is then dropped); `most` caps the events handed at once.
   */
  constructor(
    private readonly tell: (batch: PlatformEvent[]) => Promise<boolean>,
    private readonly most = Infinity,
  ) {}

  /** Queues `events` after those pushed before; resolves once told (or dropped). Never throws. */
  push(events: PlatformEvent[]): Promise<void> {
    const done = Promise.withResolvers<void>();
    this.#pending.push({
      events: [...events.filter((event) => !isHistory(event)), ...events.filter(isHistory)],
      done: done.resolve,
    });
    this.#running ??= this.#run();
    return done.promise;
  }

  /** Resolves once everything pushed so far is told or dropped. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Drops what waits to be told (its pushes resolve). */
  clear(): void {
    for (const { done } of this.#pending.splice(0)) done();
  }

  async #run(): Promise<void> {
    // `#running` is set before this goes on, and cleared in the same turn as the last check of
    // `#pending`: a push in between starts a new run
    await Promise.resolve();
    try {
      while (this.#pending.length) {
        const taken = this.#take();
        const events = taken.flatMap((push) => push.events);
        let go = true;
        for (let at = 0; go && at < events.length;) {
          const run = runAt(events, at, this.most);
          go = await this.tell(run);
          at += run.length;
        }
        for (const { done } of taken) done();
        if (!go) this.clear();
      }
    } finally {
      this.#running = null;
    }
  }

  /** The pushes waiting, as many as make `most` events (one at least). */
  #take(): { events: PlatformEvent[]; done: () => void }[] {
    let count = 0;
    let n = 0;
    while (
      n < this.#pending.length && (n === 0 || count + this.#pending[n]!.events.length <= this.most)
    ) {
      count += this.#pending[n]!.events.length;
      n++;
    }
    return this.#pending.splice(0, n);
  }
}

/** The events from `at` of one kind (history or not), `most` at most. */
function runAt(events: PlatformEvent[], at: number, most: number): PlatformEvent[] {
  const kind = isHistory(events[at]!);
  let end = at + 1;
  while (end < events.length && end - at < most && isHistory(events[end]!) === kind) end++;
  return events.slice(at, end);
}

/**
 * Hands each item to `expire` once the clock reaches its expiry, with one timer for all of them:
 * the CTI hub's token expiries (a timer per socket would cost each socket a few hundred bytes).
 *
 * The items are kept sorted by expiry: adding one (mostly at the end, tokens living alike) and
 * deleting one (a socket that closes) each find their place by binary search.
 */
import type { Clock } from "../clock.ts";

/** The longest wait of the timer: a longer one would overflow `setTimeout` (24.8 days). */
export const MAX_WAIT_MS = 86_400_000;

export class ExpiryQueue<T> {
  readonly #items: T[] = [];
  #cancelTimer: (() => void) | null = null;

  constructor(
    readonly clock: Clock,
    readonly expiresAt: (item: T) => number,
    /** What happens to an item due; the timer's task waits for what it returns (tests' clock). */
    readonly expire: (item: T) => unknown,
  ) {}

  get size(): number {
    return this.#items.length;
  }

  add(item: T): void {
    const at = this.#indexOf(this.expiresAt(item) + 1); // after those expiring with it
    this.#items.splice(at, 0, item);
    if (at === 0) this.#arm();
  }

  /** Forgets `item` (the timer set for it finds nothing to do, and waits for the next). */
  delete(item: T): void {
    const items = this.#items;
    const expiresAt = this.expiresAt(item);
    const end = this.#indexOf(expiresAt + 1);
    for (let i = this.#indexOf(expiresAt); i < end; i++) {
      if (items[i] !== item) continue;
      items.splice(i, 1);
      if (items.length === 0) this.#stop();
      return;
    }
  }

  /** The first position whose item expires at `at` or later. */
  #indexOf(at: number): number {
    const items = this.#items;
    let low = 0;
    let high = items.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.expiresAt(items[middle]!) < at) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  #stop(): void {
    this.#cancelTimer?.();
    this.#cancelTimer = null;
  }

  /** Sets the timer for the first item. */
  #arm(): void {
    this.#stop();
    const first = this.#items[0];
    if (first === undefined) return;
    const wait = Math.min(this.expiresAt(first) - this.clock.now(), MAX_WAIT_MS);
    this.#cancelTimer = this.clock.after(wait, async () => {
      this.#cancelTimer = null;
      const expired = this.#indexOf(this.clock.now() + 1);
      const done = this.#items.splice(0, expired).map((item) => this.expire(item));
      this.#arm();
      await Promise.all(done);
    });
  }
}

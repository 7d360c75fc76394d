/**
 * Login throttling (decisions §2): 10 failed attempts for one login within 5 minutes answer 429
 * `TooManyAttempts` with `Retry-After` until the window passes. Failures live in the store, so every
 * process sharing it counts the same attempts.
 */
import type { Clock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import type { Store } from "../store/store.ts";

export const MAX_FAILURES = 10;
export const WINDOW_MS = 5 * 60 * 1000;

const failuresKey = (kind: string, login: string) => ["login_failures", kind, login];

export class LoginThrottle {
  constructor(private readonly store: Store, private readonly clock: Clock) {}

  /** Throws 429 while `login` has had {@link MAX_FAILURES} failures within the window. */
  async check(kind: string, login: string): Promise<void> {
    const recent = this.#recent((await this.store.get<number[]>(failuresKey(kind, login))).value);
    if (recent.length < MAX_FAILURES) return;
    const retryAfterMs = recent[recent.length - MAX_FAILURES]! + WINDOW_MS - this.clock.now();
    const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
    throw new ApiError(
      429,
      "TooManyAttempts",
      `too many failed attempts for this login, retry in ${retryAfter} s`,
      { "Retry-After": String(retryAfter) },
    );
  }

  async recordFailure(kind: string, login: string): Promise<void> {
    const key = failuresKey(kind, login);
    for (let attempt = 0; attempt < 5; attempt++) {
      const entry = await this.store.get<number[]>(key);
      const failures = [...this.#recent(entry.value), this.clock.now()].slice(-MAX_FAILURES);
      const result = await this.store.commit((op) =>
        op.check(entry).set(key, failures, { expireIn: WINDOW_MS })
      );
      if (result.ok) return;
    }
  }

  async reset(kind: string, login: string): Promise<void> {
    await this.store.delete(failuresKey(kind, login));
  }

  #recent(failures: number[] | null): number[] {
    const since = this.clock.now() - WINDOW_MS;
    return (failures ?? []).filter((time) => time > since);
  }
}

import { StoreUnavailable } from "../errors.ts";

/**
 * The one door to Deno KV. Every operation that fails turns into {@link StoreUnavailable} (503
 * `Unreachable`); a handle that was lost is reopened on the next operation, so the service recovers
 * by itself when the store is back.
 */
export class Store {
  #kv: Deno.Kv | null;
  #reopening: Promise<Deno.Kv> | null = null;
  #closed = false;

  /** `null` is the platform's default store (Deno Deploy's managed KV). */
  private constructor(readonly location: string | null, kv: Deno.Kv) {
    this.#kv = kv;
  }

  /**
   * Opens the store at `location`: a file path (its folder is created), `:memory:`, an
   * `http(s)://` KV Connect URL, or `null` for the platform's default (Deno Deploy's managed KV).
   *
   * @example
   * const store = await Store.open(":memory:");
   */
  static async open(location: string | null): Promise<Store> {
    return new Store(location, await openKv(location));
  }

  /** Runs `op` against the KV handle; a failure becomes {@link StoreUnavailable}. */
  async run<T>(op: (kv: Deno.Kv) => Promise<T>): Promise<T> {
    const kv = await this.#handle();
    try {
      return await op(kv);
    } catch (error) {
      if (error instanceof Deno.errors.BadResource && this.location !== ":memory:") {
        this.#kv = null; // the handle is gone: the next operation opens a new one
      }
      throw new StoreUnavailable(error);
    }
  }

  get<T>(key: Deno.KvKey): Promise<Deno.KvEntryMaybe<T>> {
    return this.run((kv) => kv.get<T>(key));
  }

  /** Reads several keys at once (at most 10, a Deno KV limit). */
  getMany<T>(keys: readonly Deno.KvKey[]): Promise<Deno.KvEntryMaybe<T>[]> {
    return this.run((kv) => kv.getMany<T[]>(keys as Deno.KvKey[]));
  }

  /** Reads a whole key range into memory; callers bound it with `limit`. */
  list<T>(selector: Deno.KvListSelector, options?: Deno.KvListOptions): Promise<Deno.KvEntry<T>[]> {
    return this.run((kv) => Array.fromAsync(kv.list<T>(selector, options)));
  }

  set(
    key: Deno.KvKey,
    value: unknown,
    options?: { expireIn?: number },
  ): Promise<Deno.KvCommitResult> {
    return this.run((kv) => kv.set(key, value, options));
  }

  delete(key: Deno.KvKey): Promise<void> {
    return this.run((kv) => kv.delete(key));
  }

  /** Builds and commits one atomic operation; `ok: false` means a `check` failed. */
  commit(build: (op: Deno.AtomicOperation) => Deno.AtomicOperation) {
    return this.run((kv) => build(kv.atomic()).commit());
  }

  /** True when a read succeeds; used by `GET /ready`. */
  async ping(): Promise<boolean> {
    try {
      await this.get(["meta", "ping"]);
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    this.#closed = true;
    this.#kv?.close();
    this.#kv = null;
  }

  async #handle(): Promise<Deno.Kv> {
    if (this.#kv) return this.#kv;
    if (this.#closed || this.location === ":memory:") {
      throw new StoreUnavailable(new Error("the store was closed"));
    }
    this.#reopening ??= openKv(this.location).finally(() => (this.#reopening = null));
    try {
      this.#kv = await this.#reopening;
    } catch (error) {
      throw new StoreUnavailable(error);
    }
    return this.#kv;
  }
}

async function openKv(location: string | null): Promise<Deno.Kv> {
  if (location === null) return await Deno.openKv();
  const remote = /^https?:\/\//i.test(location);
  if (!remote && location !== ":memory:") {
    const slash = location.lastIndexOf("/");
    if (slash > 0) await Deno.mkdir(location.slice(0, slash), { recursive: true });
  }
  return await Deno.openKv(location);
}

/**
 * Keeps the generated Asterisk files (`config_files.ts`) in step with the store: follows the
 * collections' version keys, waits for a burst of changes to settle (a bulk import is one change,
 * made by its last commit: lib/store/bulk.ts), writes the files whose content changed, atomically,
 * then reloads only the Asterisk modules concerned.
 * A failed write or reload is logged and tried again with a growing delay; modules still to reload
 * are kept until a reload succeeds. A module is reloaded at most once a second (decisions §12): the
 * first reload after a quiet second goes at once, a following one waits for the second to pass.
 * The files are written even while Asterisk cannot be reached (the reload then fails and is
 * retried), so the operator's `#include`s never point at a missing file. Only the lease holder
 * writes (several processes may share the store, each with its own AMI connection).
 */
import { type Clock, systemClock } from "../../clock.ts";
import type { Logger } from "../../log.ts";
import { localWriteCount } from "../../store/records.ts";
import type { Store } from "../../store/store.ts";
import {
  type AsteriskConfig,
  asteriskConfig,
  readConfigSnapshot,
  ROOM_COLLECTIONS,
  type ServerPlacement,
  SNAPSHOT_COLLECTIONS,
} from "./config_files.ts";

/** The generated files, in reload order, with the module that reads each. */
export const ASTERISK_FILES: readonly {
  key: keyof AsteriskConfig;
  name: string;
  module: string;
}[] = [
  { key: "pjsip", name: "pjsip_svc.conf", module: "res_pjsip.so" },
  { key: "extensions", name: "extensions_svc.conf", module: "pbx_config.so" },
  { key: "queues", name: "queues_svc.conf", module: "app_queue.so" },
  { key: "voicemail", name: "voicemail_svc.conf", module: "app_voicemail.so" },
  { key: "confbridge", name: "confbridge_svc.conf", module: "app_confbridge.so" },
];

export interface ConfigWriterOptions {
  store: Store;
  /** Where the files go (`SVC_ASTERISK_CONFIG_DIR`); created when missing. */
  dir: string;
  logger: Logger;
  /** Reloads these Asterisk modules (AMI `Reload`); throws when Asterisk cannot be reached. */
  reload(modules: string[]): Promise<void>;
  /** True while this process holds the lease: only then are files written and modules reloaded. */
  isLeader(): boolean;
  /** How often the version keys are read when this process writes nothing (default 250 ms). */
  pollMs?: number;
  /** A burst of changes is written once nothing changed for this long (default 300 ms)… */
  quietMs?: number;
  /** …or once this long passed since its first change (default 1500 ms). */
  maxDelayMs?: number;
  /** Timers' clock (default: the system's; the writer needs one that moves by itself). */
  clock?: Clock;
  /**
   * With several servers, where this one's files go (read at each sync: a server added to the
   * servers file changes every server's trunks); absent with one server.
   */
  placement?: () => ServerPlacement | undefined;
}

/** What one sync did. */
export interface SyncResult {
  /** Files written, by name (`pjsip_svc.conf`…). */
  written: string[];
  /** Modules reloaded (`res_pjsip.so`…). */
  reloaded: string[];
  /** Modules whose file changed but whose reload failed: they are tried again. */
  pending: string[];
}

/** Retry delays after a failure: 0.5 s, doubling up to 30 s. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 30_000;
/** How often a change made by this process is looked for (reading a counter, no I/O). */
const TICK_MS = 50;
/** Two reloads of the same module are at least this far apart (calls to `reload`, failed too). */
export const RELOAD_INTERVAL_MS = 1000;

/**
 * Writes the Asterisk files and reloads Asterisk as the configuration changes.
 *
 * @example
 * const writer = new ConfigWriter({ store, dir, logger, reload, isLeader: () => lease.held });
 * writer.start();
 * // after an AMI reconnection: write what changed meanwhile, retry a failed reload
 * await writer.sync();
 * await writer.close();
 */
export class ConfigWriter {
  readonly #store: Store;
  readonly #dir: string;
  readonly #logger: Logger;
  readonly #reload: (modules: string[]) => Promise<void>;
  readonly #isLeader: () => boolean;
  readonly #clock: Clock;
  readonly #pollMs: number;
  readonly #quietMs: number;
  readonly #maxDelayMs: number;
  readonly #placement: () => ServerPlacement | undefined;

  /** Versions last read from the store, and those the files on disk were generated from. */
  #seen: string | null = null;
  #synced: string | null = null;
  /** The first and the last change of the burst not yet written. */
  #firstChangeAt: number | null = null;
  #lastChangeAt = 0;
  #polledAt = -Infinity;
  #localWrites = -1;
  /** Set at start and on becoming leader: compare the files with the store whatever the versions. */
  #checkFiles = true;
  #wasLeader = false;
  readonly #pending = new Set<string>();
  /** When each module was last handed to `reload` (clock time). */
  readonly #reloadedAt = new Map<string, number>();
  /** Failed reloads in a row, and when to try again; the same for writes, apart. */
  #failures = 0;
  #retryAt = 0;
  #writeFailures = 0;
  #writeRetryAt = 0;

  #cancelTimer: (() => void) | null = null;
  #ticking: Promise<void> | null = null;
  /** Syncs run one at a time (the timer's and the lead's after an AMI reconnection). */
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(options: ConfigWriterOptions) {
    this.#store = options.store;
    this.#dir = options.dir;
    this.#logger = options.logger;
    this.#reload = options.reload;
    this.#isLeader = options.isLeader;
    this.#clock = options.clock ?? systemClock;
    this.#pollMs = options.pollMs ?? 250;
    this.#quietMs = options.quietMs ?? 300;
    this.#maxDelayMs = options.maxDelayMs ?? 1500;
    this.#placement = options.placement ?? (() => undefined);
  }

  /** Writes the files at once if they differ from the store, then follows the changes. */
  start(): void {
    if (this.#closed || this.#cancelTimer || this.#ticking) return;
    this.#schedule(0);
  }

  /** Stops following changes; resolves once no timer and no sync is left. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelTimer?.();
    this.#cancelTimer = null;
    await this.#ticking;
    await this.#queue;
  }

  /**
   * Writes now the files whose content differs from what the store gives, and reloads the modules
   * still to reload, waiting first if one of them was reloaded less than a second ago; a failure
   * is logged and left to the retries (never thrown). Does nothing when this process does not
   * hold the lease.
   */
  sync(): Promise<SyncResult> {
    return this.#exclusive(() => this.#sync(true, true));
  }

  #schedule(ms: number): void {
    if (this.#closed) return;
    this.#cancelTimer = this.#clock.after(ms, () => {
      this.#cancelTimer = null;
      this.#ticking = this.#tick().finally(() => {
        this.#ticking = null;
        this.#schedule(Math.min(TICK_MS, this.#pollMs));
      });
      return this.#ticking;
    });
  }

  async #tick(): Promise<void> {
    try {
      const now = this.#clock.now();
      const writes = localWriteCount();
      if (writes !== this.#localWrites || now - this.#polledAt >= this.#pollMs) {
        this.#localWrites = writes;
        this.#polledAt = now;
        this.#noteVersions(await this.#versions(), now);
      }
      if (!this.#isLeader()) {
        this.#wasLeader = false;
        return;
      }
      if (!this.#wasLeader) {
        // another process wrote until now, or nobody did: what is on disk is unknown
        this.#wasLeader = true;
        this.#checkFiles = true;
      }
      if (this.#closed) return;
      // a failed reload (Asterisk down) must not hold back the files: it starts with them
      const writable = now >= this.#writeRetryAt;
      if (this.#checkFiles && writable) {
        await this.#exclusive(() => this.#sync(true, false));
      } else if (this.#seen !== this.#synced && writable) {
        const settled = now - this.#lastChangeAt >= this.#quietMs ||
          now - (this.#firstChangeAt ?? now) >= this.#maxDelayMs;
        // a bulk import changes the collections once, in its last commit (lib/store/bulk.ts)
        if (!settled) return;
        await this.#exclusive(() => this.#sync(false, false));
      } else if (this.#pending.size && now >= Math.max(this.#reloadDueAt(), this.#retryAt)) {
        await this.#exclusive(() => this.#sync(false, false));
      }
    } catch (error) {
      // the store did not answer: the next tick reads again
      this.#logger.warn("asterisk config: store read failed", { error: String(error) });
    }
  }

  #noteVersions(versions: string, now: number): void {
    if (versions === this.#seen) return;
    this.#seen = versions;
    this.#lastChangeAt = now;
    this.#firstChangeAt ??= now;
  }

  /** The collections' version keys (two reads: ten keys at most at once), as one string. */
  async #versions(): Promise<string> {
    const read = (collections: readonly { versionKey: Deno.KvKey }[]) =>
      this.#store.getMany(collections.map((collection) => collection.versionKey));
    const entries = [...await read(SNAPSHOT_COLLECTIONS), ...await read(ROOM_COLLECTIONS)];
    const versions = entries.map((entry) => entry.versionstamp ?? "-").join(",");
    const placement = this.#placement();
    return placement ? `${versions};${JSON.stringify(placement)}` : versions;
  }

  #exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task);
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Writes what changed, then reloads the pending modules: once they may be (`waitForReload`,
   * sleeping until then), or only if they may be now (the timer's: the next ticks reload them
   * when they may, see `#tick`).
   */
  async #sync(force: boolean, waitForReload: boolean): Promise<SyncResult> {
    const written: string[] = [];
    const result = (reloaded: string[] = []) => ({
      written,
      reloaded,
      pending: this.#ordered(this.#pending),
    });
    if (!this.#isLeader()) return result();
    try {
      const versions = await this.#versions();
      if (force || this.#checkFiles || versions !== this.#synced) {
        const config = asteriskConfig(await readConfigSnapshot(this.#store), this.#placement());
        await Deno.mkdir(this.#dir, { recursive: true });
        for (const file of ASTERISK_FILES) {
          const path = `${this.#dir}/${file.name}`;
          if (await readIfExists(path) === config[file.key]) continue;
          await writeAtomically(this.#dir, file.name, config[file.key]);
          written.push(file.name);
          this.#pending.add(file.module);
        }
        if (written.length) this.#logger.info("asterisk config written", { files: written });
        this.#synced = versions;
        this.#noteVersions(versions, this.#clock.now());
        this.#firstChangeAt = null;
        this.#checkFiles = false;
      }
    } catch (error) {
      this.#failed("asterisk config: files not written", error);
      return result();
    }
    this.#writeFailures = 0;
    this.#writeRetryAt = 0;
    if (!this.#pending.size) return this.#succeeded(result());
    // while reloads fail, the timer retries them on their own backoff; sync() tries at once
    if (!waitForReload && this.#clock.now() < this.#retryAt) return result();
    const wait = this.#reloadDueAt() - this.#clock.now();
    if (wait > 0) {
      if (!waitForReload || this.#closed) return result();
      await new Promise<void>((resolve) => this.#clock.after(wait, resolve));
      if (!this.#isLeader()) return result();
    }
    const modules = this.#ordered(this.#pending);
    const now = this.#clock.now();
    for (const module of modules) this.#reloadedAt.set(module, now);
    try {
      await this.#reload(modules);
    } catch (error) {
      this.#failed("asterisk config: reload failed", error, modules);
      return result();
    }
    for (const module of modules) this.#pending.delete(module);
    this.#logger.info("asterisk modules reloaded", { modules });
    return this.#succeeded(result(modules));
  }

  /**
   * When the pending modules may all be reloaded (in one call, keeping the files' order): a
   * second after the latest reload of one of them.
   */
  #reloadDueAt(): number {
    let due = -Infinity;
    for (const module of this.#pending) {
      due = Math.max(due, (this.#reloadedAt.get(module) ?? -Infinity) + RELOAD_INTERVAL_MS);
    }
    return due;
  }

  #ordered(modules: Set<string>): string[] {
    return ASTERISK_FILES.map((file) => file.module).filter((module) => modules.has(module));
  }

  #succeeded(result: SyncResult): SyncResult {
    this.#failures = 0;
    this.#retryAt = 0;
    return result;
  }

  /** A failed write (no `modules`) or reload is tried again later, each on its own backoff. */
  #failed(msg: string, error: unknown, modules?: string[]): void {
    const failures = modules ? ++this.#failures : ++this.#writeFailures;
    const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (failures - 1));
    if (modules) this.#retryAt = this.#clock.now() + delay;
    else this.#writeRetryAt = this.#clock.now() + delay;
    this.#logger.error(msg, { error: String(error), modules, retry_ms: delay });
  }
}

async function readIfExists(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * Writes `name` in `dir` through a temporary file in the same directory and a rename, so that
 * Asterisk never reads half a file. The files hold SIP secrets: readable by the owner and the
 * group only (put Asterisk's user in svc's group).
 */
async function writeAtomically(dir: string, name: string, content: string): Promise<void> {
  const temporary = `${dir}/.${name}.${crypto.randomUUID()}.tmp`;
  try {
    const file = await Deno.open(temporary, { write: true, createNew: true, mode: 0o640 });
    try {
      const bytes = new TextEncoder().encode(content);
      for (let done = 0; done < bytes.length;) done += await file.write(bytes.subarray(done));
      await file.syncData();
    } finally {
      file.close();
    }
    await Deno.rename(temporary, `${dir}/${name}`);
  } catch (error) {
    await Deno.remove(temporary).catch(() => {});
    throw error;
  }
}

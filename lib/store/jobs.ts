/**
 * Jobs: work a request started and answered `202 Accepted` for (`Prefer: respond-async`), read
 * back by any process sharing the store (docs/confd.md, "Imports as jobs").
 *
 * Keys:
 * - `["jobs", id]` → {@link JobRecord}. Written with `expireIn`; the stored `expires_at` (on the
 *   injected clock) is what decides, as Deno KV deletes lazily.
 * - `["job_parts", id, outcome, n]` → one slice of the outcome's body (UTF-8 JSON; Deno KV values
 *   are at most 64 KiB). The parts are written first, then the record names them, so a reader
 *   never assembles a half-written body.
 *
 * The process running a job ({@link JobRun}) rewrites its record every {@link JOB_HEARTBEAT_MS}
 * with its progress, each write checked against the versionstamp of its own previous one. A record
 * of a job not ended and not rewritten for {@link JOB_STALE_MS} belongs to a process that died or
 * stalled: a reader marks it failed, checked against the versionstamp it read (a live job is never
 * taken), and from then on every write of the old owner fails, its last one included, which for an
 * import is the bulk write's last commit (`lib/store/bulk.ts`): a job is `succeeded` exactly when
 * its import committed.
 */
import type { Clock } from "../clock.ts";
import type { Store } from "./store.ts";

export type JobState = "pending" | "running" | "succeeded" | "failed";

/** What a job ended with: the status and body the same request would have answered at once. */
export interface JobOutcome {
  status: number;
  body: unknown;
}

export interface JobRecord {
  id: string;
  /** The request that started it, e.g. `POST /1.1/users/import`. */
  request: string;
  /** Who started it (a web service user's id). */
  owner: string;
  state: JobState;
  /** Rows done and rows in all (null until the file is read). */
  rows: { done: number; total: number | null };
  created_at: number;
  touched_at: number;
  finished_at: number | null;
  expires_at: number;
  /** Once ended: the status, and where the body is. */
  outcome: { status: number; key: string; parts: number } | null;
}

/** How often a running job rewrites its record. */
export const JOB_HEARTBEAT_MS = 2_000;
/** A job not ended whose record was not rewritten for this long was abandoned. */
export const JOB_STALE_MS = 10_000;
/** How long a job is kept after its last write. */
export const JOB_TTL_MS = 24 * 60 * 60 * 1000;

/** The outcome given to a job its process abandoned. */
export const ABANDONED: JobOutcome = {
  status: 503,
  body: [
    "Unreachable - the job stopped before it ended (its process stopped or stalled): " +
    "nothing was written, send the request again",
  ],
};

const jobKey = (id: string): Deno.KvKey => ["jobs", id];
const partKey = (id: string, outcome: string, n: number): Deno.KvKey => [
  "job_parts",
  id,
  outcome,
  n,
];
/** Bytes of one part, and parts per commit (Deno KV: 64 KiB per value, 800 KiB per commit). */
const PART_BYTES = 60 * 1024;
const PARTS_PER_COMMIT = 10;
/** Parts outlive their record a little, so a record read just before its expiry finds them. */
const PART_MARGIN_MS = 60_000;

/** The record a job's owner lost: a reader took it for abandoned. */
export class JobLost extends Error {
  constructor(id: string) {
    super(`job ${id} was taken for abandoned`);
    this.name = "JobLost";
  }
}

/** Writes `outcome`'s body in parts under a new outcome key; answers the record's `outcome`. */
async function writeParts(
  store: Store,
  id: string,
  outcome: JobOutcome,
): Promise<NonNullable<JobRecord["outcome"]>> {
  const key = crypto.randomUUID();
  const bytes = new TextEncoder().encode(JSON.stringify(outcome.body));
  const parts = Math.max(1, Math.ceil(bytes.length / PART_BYTES));
  for (let first = 0; first < parts; first += PARTS_PER_COMMIT) {
    await store.commit((op) => {
      for (let n = first; n < Math.min(parts, first + PARTS_PER_COMMIT); n++) {
        op.set(partKey(id, key, n), bytes.subarray(n * PART_BYTES, (n + 1) * PART_BYTES), {
          expireIn: JOB_TTL_MS + PART_MARGIN_MS,
        });
      }
      return op;
    });
  }
  return { status: outcome.status, key, parts };
}

/**
 * A job of this process: create it with {@link JobRun.create}, report with `running` and
 * `progress`, end it with `finish` (or with `lastCommit`, inside another write's last commit).
 */
export class JobRun {
  #versionstamp: string;
  #writing: Promise<unknown> = Promise.resolve();
  #cancelBeat: (() => void) | null = null;
  #beating = true;
  #ended = false;
  /** Rows done, stored with the next write. */
  #done = 0;

  private constructor(
    readonly store: Store,
    readonly clock: Clock,
    public record: JobRecord,
    versionstamp: string,
  ) {
    this.#versionstamp = versionstamp;
  }

  /**
   * Stores a new job, `pending`, and starts its heartbeat.
   *
   * @example
   * const job = await JobRun.create(store, clock, { request: "POST /1.1/users/import", owner: "3" });
   */
  static async create(
    store: Store,
    clock: Clock,
    { request, owner }: { request: string; owner: string },
  ): Promise<JobRun> {
    const now = clock.now();
    const record: JobRecord = {
      id: crypto.randomUUID(),
      request,
      owner,
      state: "pending",
      rows: { done: 0, total: null },
      created_at: now,
      touched_at: now,
      finished_at: null,
      expires_at: now + JOB_TTL_MS,
      outcome: null,
    };
    const key = jobKey(record.id);
    const result = await store.commit((op) =>
      op.check({ key, versionstamp: null }).set(key, record, { expireIn: JOB_TTL_MS })
    );
    if (!result.ok) throw new Error("a new job id was taken"); // a random UUID: never
    const job = new JobRun(store, clock, record, result.versionstamp);
    job.#arm();
    return job;
  }

  get id(): string {
    return this.record.id;
  }

  /** The job started its work on `total` rows. */
  running(total: number): Promise<void> {
    this.#done = 0;
    return this.#write({ state: "running", rows: { done: 0, total } });
  }

  /** Rows done so far; stored with the next heartbeat. */
  progress(done: number): void {
    this.#done = done;
  }

  /** Ends the job with `outcome`, unless it already ended; throws {@link JobLost}. */
  async finish(outcome: JobOutcome): Promise<void> {
    if (this.#ended) return;
    this.#stopBeating();
    await this.#writing.catch(() => {});
    const stored = await writeParts(this.store, this.id, outcome);
    await this.#write(this.#ending(stored));
    this.#ended = true;
  }

  /**
   * Ends the job with `outcome` inside another write's last commit (an import's): `prepare` stops
   * the heartbeat and stores the body, `add` puts the ended record in the commit, checked against
   * the job's own last write. The write must throw when that check fails (the job was taken for
   * abandoned meanwhile), and call `committed` once it committed.
   */
  lastCommit(outcome: JobOutcome) {
    let ended: JobRecord | null = null;
    return {
      prepare: async () => {
        this.#stopBeating();
        await this.#writing.catch(() => {});
        ended = this.#ending(await writeParts(this.store, this.id, outcome));
      },
      add: (op: Deno.AtomicOperation) => {
        const key = jobKey(this.id);
        return op.check({ key, versionstamp: this.#versionstamp })
          .set(key, ended, { expireIn: JOB_TTL_MS });
      },
      committed: () => {
        this.record = ended!;
        this.#ended = true;
      },
    };
  }

  #ending(outcome: NonNullable<JobRecord["outcome"]>): JobRecord {
    const now = this.clock.now();
    const { total } = this.record.rows;
    const rows = { done: outcome.status < 300 ? total ?? this.#done : this.#done, total };
    return {
      ...this.record,
      state: outcome.status < 300 ? "succeeded" : "failed",
      rows,
      touched_at: now,
      finished_at: now,
      expires_at: now + JOB_TTL_MS,
      outcome,
    };
  }

  /** Writes `changes` after the job's previous write, checked against it. */
  #write(changes: Partial<JobRecord>): Promise<void> {
    const next = this.#writing.then(async () => {
      const key = jobKey(this.id);
      const now = this.clock.now();
      const rows = { ...this.record.rows, done: this.#done };
      const record = {
        ...this.record,
        rows,
        ...changes,
        touched_at: now,
        expires_at: now + JOB_TTL_MS,
      };
      const result = await this.store.commit((op) =>
        op.check({ key, versionstamp: this.#versionstamp }).set(key, record, {
          expireIn: JOB_TTL_MS,
        })
      );
      if (!result.ok) {
        this.#stopBeating();
        throw new JobLost(this.id);
      }
      this.record = record;
      this.#versionstamp = result.versionstamp;
    });
    this.#writing = next.catch(() => {});
    return next;
  }

  #arm(): void {
    this.#cancelBeat = this.clock.after(JOB_HEARTBEAT_MS, async () => {
      this.#cancelBeat = null;
      try {
        await this.#write({});
      } catch (error) {
        if (error instanceof JobLost) return; // taken for abandoned: nothing more to say
        // the store failed this once: beat again (the job's work reports what it cannot do)
      }
      if (this.#beating) this.#arm();
    });
  }

  #stopBeating(): void {
    this.#beating = false;
    this.#cancelBeat?.();
    this.#cancelBeat = null;
  }
}

/**
 * The job `id` as stored, or null when unknown or expired. A job its process abandoned (not ended,
 * its record not rewritten for {@link JOB_STALE_MS}) is marked failed with {@link ABANDONED} first.
 */
export async function readJob(store: Store, clock: Clock, id: string): Promise<JobRecord | null> {
  for (;;) {
    const entry = await store.get<JobRecord>(jobKey(id));
    const job = entry.value;
    const now = clock.now();
    if (!job || job.expires_at <= now) return null;
    const ended = job.state === "succeeded" || job.state === "failed";
    if (ended || now - job.touched_at <= JOB_STALE_MS) return job;
    // abandoned: failed, unless its owner wrote meanwhile (then it lives: read again)
    const outcome = await writeParts(store, id, ABANDONED);
    const failed: JobRecord = {
      ...job,
      state: "failed",
      touched_at: now,
      finished_at: now,
      expires_at: now + JOB_TTL_MS,
      outcome,
    };
    const result = await store.commit((op) =>
      op.check(entry).set(jobKey(id), failed, { expireIn: JOB_TTL_MS })
    );
    if (result.ok) return failed;
  }
}

/** The body of an ended job's outcome; null when it has none. */
export async function readOutcomeBody(store: Store, job: JobRecord): Promise<unknown> {
  if (!job.outcome) return null;
  const { key, parts } = job.outcome;
  const chunks: Uint8Array[] = [];
  for (let first = 0; first < parts; first += 10) {
    const keys = [];
    for (let n = first; n < Math.min(parts, first + 10); n++) keys.push(partKey(job.id, key, n));
    for (const part of await store.getMany<Uint8Array>(keys)) {
      if (!(part.value instanceof Uint8Array)) throw new Error(`job ${job.id} lost a part`);
      chunks.push(part.value);
    }
  }
  const bytes = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return JSON.parse(new TextDecoder().decode(bytes));
}

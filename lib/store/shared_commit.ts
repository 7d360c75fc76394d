/**
 * Atomic operations of independent writers committed together: while one commit runs, the
 * operations asked for meanwhile wait, then go as one atomic operation (a group commit), so that
 * many writers at once cost one store round trip per group instead of one each. Deno KV commits
 * one operation at a time, and most of a small commit's cost is per commit: measured on `:memory:`,
 * a DND change alone in its commit cost 40–65 µs of the main thread and as much of the store's
 * thread, nine changes in one commit 16 µs each.
 *
 * Merging keeps each operation's meaning: operations join a group only while none checks a key
 * another writes, none writes a key another checks (with another versionstamp, for a check both
 * make) or writes, except the same marker value (`true`, such as a collection's version key or an
 * outbox signal) that several may set. A group that fails (a check, a limit, the store) is
 * committed again one operation at a time, each answering its own outcome: a caller gets what
 * committing its operation alone would have answered.
 */
import type { Store } from "./store.ts";

type Outcome = Deno.KvCommitResult | Deno.KvCommitError;

/** The checks and mutations an operation was built with (see {@link Recorder}). */
interface Recorded {
  checks: Map<string, Deno.AtomicCheck>;
  writes: Map<string, Write>;
  /** Something that cannot be merged was asked for (sum, enqueue…): committed alone. */
  alone: boolean;
  /** Replays the operation on `op`. */
  replay: (op: Deno.AtomicOperation) => Deno.AtomicOperation;
}

type Write =
  | { kind: "set"; key: Deno.KvKey; value: unknown; expireIn?: number }
  | { kind: "delete"; key: Deno.KvKey };

interface Waiting {
  recorded: Recorded;
  outcome: PromiseWithResolvers<Outcome>;
}

/** At most this many checks per commit: the Deno KV limit. */
const MAX_CHECKS = 10;
/** At most this many mutations per group (the Deno KV limit is 1,000; groups stay far under it). */
const MAX_MUTATIONS = 200;
/** At most this many operations per group. */
const MAX_MEMBERS = 16;

const keyText = (key: Deno.KvKey) => JSON.stringify(key);

/** An `AtomicOperation` stand-in that records what is asked of it. */
class Recorder {
  readonly checks = new Map<string, Deno.AtomicCheck>();
  readonly writes = new Map<string, Write>();
  readonly steps: ((op: Deno.AtomicOperation) => Deno.AtomicOperation)[] = [];
  /** A key written twice, or a method that cannot be merged: the operation goes alone. */
  alone = false;

  check(...checks: Deno.AtomicCheck[]): this {
    for (const check of checks) {
      const text = keyText(check.key);
      if (this.checks.has(text)) this.alone = true;
      this.checks.set(text, check);
    }
    this.steps.push((op) => op.check(...checks));
    return this;
  }

  set(key: Deno.KvKey, value: unknown, options?: { expireIn?: number }): this {
    this.#write({ kind: "set", key, value, expireIn: options?.expireIn });
    this.steps.push((op) => op.set(key, value, options));
    return this;
  }

  delete(key: Deno.KvKey): this {
    this.#write({ kind: "delete", key });
    this.steps.push((op) => op.delete(key));
    return this;
  }

  #write(write: Write): void {
    const text = keyText(write.key);
    if (this.writes.has(text)) this.alone = true;
    this.writes.set(text, write);
  }

  #opaque(name: string) {
    return (...args: unknown[]) => {
      this.alone = true;
      // deno-lint-ignore no-explicit-any
      this.steps.push((op) => (op as any)[name](...args));
      return this;
    };
  }

  sum = this.#opaque("sum");
  min = this.#opaque("min");
  max = this.#opaque("max");
  mutate = this.#opaque("mutate");
  enqueue = this.#opaque("enqueue");
}

function record(build: (op: Deno.AtomicOperation) => Deno.AtomicOperation): Recorded {
  const recorder = new Recorder();
  build(recorder as unknown as Deno.AtomicOperation);
  const { checks, writes, alone, steps } = recorder;
  return {
    checks,
    writes,
    alone,
    replay: (op) => {
      for (const step of steps) op = step(op);
      return op;
    },
  };
}

/** A marker several operations may set in one group: `true`, with the same expiry. */
const sameMarker = (a: Write, b: Write) =>
  a.kind === "set" && b.kind === "set" && a.value === true && b.value === true &&
  a.expireIn === b.expireIn;

/** A group being formed: the union of its members' checks and writes. */
class Group {
  readonly members: Waiting[] = [];
  readonly checks = new Map<string, Deno.AtomicCheck>();
  readonly writes = new Map<string, Write>();
  mutations = 0;

  /** Adds `waiting` when it fits and touches nothing another member touches; answers whether. */
  join(waiting: Waiting): boolean {
    const { recorded } = waiting;
    if (this.members.length > 0) {
      // an operation that goes alone neither joins a group nor lets others join its own
      if (recorded.alone || this.members[0]!.recorded.alone) return false;
      if (this.members.length >= MAX_MEMBERS) return false;
      if (this.mutations + recorded.writes.size > MAX_MUTATIONS) return false;
      let checks = this.checks.size;
      for (const [text, check] of recorded.checks) {
        if (this.writes.has(text)) return false;
        const same = this.checks.get(text);
        if (same === undefined) checks++;
        else if (same.versionstamp !== check.versionstamp) return false;
      }
      if (checks > MAX_CHECKS) return false;
      for (const [text, write] of recorded.writes) {
        if (this.checks.has(text)) return false;
        const other = this.writes.get(text);
        if (other !== undefined && !sameMarker(other, write)) return false;
      }
    }
    this.members.push(waiting);
    for (const [text, check] of recorded.checks) this.checks.set(text, check);
    for (const [text, write] of recorded.writes) {
      if (!this.writes.has(text)) this.mutations++;
      this.writes.set(text, write);
    }
    return true;
  }

  /** The members' checks and writes as one operation (each key once). */
  build(op: Deno.AtomicOperation): Deno.AtomicOperation {
    if (this.members.length === 1) return this.members[0]!.recorded.replay(op);
    op.check(...this.checks.values());
    for (const write of this.writes.values()) {
      if (write.kind === "delete") op.delete(write.key);
      else {
        const options = write.expireIn === undefined ? undefined : { expireIn: write.expireIn };
        op.set(write.key, write.value, options);
      }
    }
    return op;
  }
}

/** Per store, the operations waiting for the running commit. */
const queues = new WeakMap<Store, { waiting: Waiting[]; running: boolean }>();

/**
 * Commits the operation `build` makes, with the operations of other callers asked for while a
 * commit runs (see the module's description); answers what `store.commit(build)` would. `build`
 * may use `check`, `set` and `delete`; any other method makes the operation go alone.
 *
 * @example
 * const result = await commitShared(store, (op) => op.check(read).set(key, value));
 */
export function commitShared(
  store: Store,
  build: (op: Deno.AtomicOperation) => Deno.AtomicOperation,
): Promise<Outcome> {
  let queue = queues.get(store);
  if (!queue) queues.set(store, queue = { waiting: [], running: false });
  let recorded: Recorded;
  try {
    recorded = record(build);
  } catch {
    // as `store.commit` answers a failing build: through the store's own error mapping
    return store.commit(build);
  }
  const outcome = Promise.withResolvers<Outcome>();
  queue.waiting.push({ recorded, outcome });
  if (!queue.running) {
    queue.running = true;
    drain(store, queue);
  }
  return outcome.promise;
}

async function drain(store: Store, queue: { waiting: Waiting[]; running: boolean }) {
  try {
    while (queue.waiting.length) {
      const group = new Group();
      // in the order asked: the first that does not fit starts the next group
      let taken = 0;
      while (taken < queue.waiting.length && group.join(queue.waiting[taken]!)) taken++;
      queue.waiting.splice(0, taken);
      await commitGroup(store, group);
    }
  } finally {
    queue.running = false;
  }
}

async function commitGroup(store: Store, group: Group): Promise<void> {
  const { members } = group;
  try {
    const result = await store.commit((op) => group.build(op));
    if (result.ok || members.length === 1) {
      for (const { outcome } of members) outcome.resolve(result);
      return;
    }
  } catch (error) {
    if (members.length === 1) {
      members[0]!.outcome.reject(error);
      return;
    }
  }
  // which check or limit failed is not told: each member alone gets its own answer
  await Promise.all(members.map(async ({ recorded, outcome }) => {
    try {
      outcome.resolve(await store.commit((op) => recorded.replay(op)));
    } catch (error) {
      outcome.reject(error);
    }
  }));
}

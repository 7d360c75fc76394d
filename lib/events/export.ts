/**
 * The export of events to `eventUrl` (decisions §7): a durable outbox in the store, delivered at
 * least once and in order per user.
 *
 * - `publish` writes the events (outbox + event log) before anyone else sees them.
 * - A delivery pass holds a lease in the store (so two processes never post the same event in one
 *   attempt), reads the outbox in id order in batches, posts users in parallel (bounded) and each
 *   user's events one after the other; a user whose earlier event is not delivered gets nothing
 *   more in that pass. Delivered events are removed and failures rescheduled in atomic batches.
 * - Once started, passes run at once, after every publish, when the next retry falls due, and —
 *   on a store other processes can share (not `:memory:`) — when a poll of one key each second
 *   shows that another process published or requeued events. The `Deno.cron` job of main.ts runs
 *   a pass each minute too, which picks up what a process that died left behind. A pass asked for
 *   is a timer at "now" on the clock, so in tests `await clock.advance(0)` runs it to its end.
 * - A pass after a publication reads only the newest events when this process's last pass still
 *   tells the rest (nobody else took the lease since, no retry has fallen due): a backlog waiting
 *   for a receiver that is down is not reread after every publication.
 * - A failed post is retried after 1 s, 5 s, 30 s, 2 min, 10 min, then every 10 min. A post that
 *   fails 24 h or more after the event's publication moves it to the dead letters, and the same
 *   user's events as old go with it without a post of their own.
 *
 * Every timer goes through the clock (virtual time in tests), except the 5 s timeout of a post:
 * the HTTP is real, so its timeout is real time too.
 */
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import { writeOnce } from "../store/platform_done.ts";
import type { Store } from "../store/store.ts";
import {
  type CtiNotice,
  type EventMessage,
  type ExportedMessage,
  isExported,
  type RoomMessage,
  type SupervisionMessage,
} from "./messages.ts";
import {
  addEvents,
  applyPassWrites,
  countDeadLetters,
  countOutbox,
  deadLetters,
  EventIds,
  type EventTargets,
  idFrom,
  idTime,
  type LastError,
  lastError,
  lastLoggedId,
  type LogEntry,
  loggedEvents,
  oldestPending,
  outboxBatch,
  type OutboxEntry,
  outboxSignal,
  type PassWrites,
  releaseLease,
  requeueDeadLetters,
  takeLease,
  writeEvents,
} from "./outbox.ts";

export interface EventExportOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  /** `SVC_EVENT_URL`; null: events are kept in the event log only, never posted. */
  url: string | null;
  /** `SVC_EVENT_SECRET`; when set each post carries `X-Svc-Signature: sha256=<hex>`. */
  secret: string | null;
  /** `SVC_EVENT_RETENTION` in ms: how long the event log keeps an event for the 1.0 handshake. */
  retentionMs: number;
}

/** What one delivery pass did. */
export interface DeliveryReport {
  /** Events posted and acknowledged (2xx). */
  delivered: number;
  /** Posts that failed (non-2xx, timeout, refused connection). */
  failed: number;
  /** Events moved to the dead letters. */
  deadLettered: number;
}

/** What one batch of a delivery pass did, once written to the store (the metrics count it). */
export interface DeliveryCounts {
  /** Events posted and acknowledged, removed from the outbox. */
  delivered: number;
  /** Events whose post failed, rescheduled for a retry. */
  retried: number;
  /** Events moved to the dead letters. */
  deadLettered: number;
}

export type DeliveryListener = (counts: DeliveryCounts) => void;

/** The outbox as the metrics show it (see {@link EventExport.backlog}). */
export interface Backlog {
  pending: number;
  deadLetters: number;
  /** When the oldest pending event was published (ms), null when none is pending. */
  oldestPendingAt: number | null;
}

/** A dead letter as `GET /events/deliveries` shows it. */
export interface DeadLetterView {
  id: string;
  username: string;
  /** ISO time of the publication. */
  createdAt: string;
  attempts: number;
  lastError: string | null;
  message: ExportedMessage["message"];
}

/** The answer of `GET /svc/api/2.0/events/deliveries`. */
export interface Deliveries {
  pending: number;
  deadLetters: number;
  lastError: LastError | null;
  /** The oldest {@link MAX_DEAD_LETTERS_SHOWN} dead letters; `deadLetters` counts them all. */
  deadLetterEvents: DeadLetterView[];
}

/**
 * The event log keeps each event at least this long whatever the retention: the live feed of
 * other processes (`lib/events/feed.ts`) reads new events from it.
 */
export const MIN_LOG_MS = 60_000;

/** Told of events as soon as this process has made them durable, in publish order. */
export type WrittenListener = (entries: LogEntry<ExportedMessage>[]) => void;

/**
 * Events given their ids for the atomic operation of the change causing them ({@link
 * EventExport.stage}): `add` puts their writes in that operation.
 */
export interface StagedEvents {
  entries: OutboxEntry[];
  add(op: Deno.AtomicOperation): void;
}

/** A publication waiting for the write running before it. */
interface QueuedWrite {
  messages: ExportedMessage[];
  to: Omit<EventTargets, "writer">;
  done: PromiseWithResolvers<void>;
  /**
   * {@link EventExport.publishOnce}'s: the platform event id of each message (undefined: none);
   * written alone, each id once. `written` counts what was.
   */
  once?: { ids: (string | undefined)[]; written: number };
}

/** A platform event's message, with the event's id (see {@link EventExport.publishOnce}). */
export interface IdentifiedMessage {
  /** The platform event's id; undefined: published as {@link EventExport.publish} does. */
  id: string | undefined;
  message: ExportedMessage;
}

/** Delays before the 1st, 2nd, … retry; the last one repeats. */
export const RETRY_DELAYS_MS = [1_000, 5_000, 30_000, 120_000, 600_000];
/** An event still failing this long after its publication goes to the dead letters. */
export const GIVE_UP_AFTER_MS = 24 * 3600_000;
/**
 * How long a lease lasts without renewal: short, so that the lease of a process that was killed
 * frees itself quickly; a pass renews it every third of it.
 */
export const LEASE_MS = 10_000;
/** How often a started export looks for events published by other processes. */
export const POLL_MS = 1_000;
/** Timeout of one post. */
export const POST_TIMEOUT_MS = 5_000;
/**
 * A pass that only follows up on new events rereads this much before the last id it read, so that
 * an event another process published a little earlier (ids are time first) is not passed over.
 */
const RESCAN_MS = 5_000;
/**
 * A retry falling due this soon after a pass starts goes out in that pass: the retries of events
 * that failed a few ms apart take one pass over the outbox, not one each.
 */
const DUE_SLACK_MS = 250;
/**
 * How long a pass goes on reading the events published while it runs, before it ends (and lets
 * the retries falling due meanwhile come in the next pass).
 */
const CONTINUE_MS = 1_000;
/** Outbox entries read per store round trip in a pass. */
const BATCH = 500;
/** Users posted at the same time. */
const PARALLEL_USERS = 32;
/** After a pass failed on the store, the next one is tried this much later. */
const STORE_RETRY_MS = 5_000;
/** `GET /events/deliveries` lists at most this many dead letters (the oldest). */
export const MAX_DEAD_LETTERS_SHOWN = 100;

interface PassOutcome {
  report: DeliveryReport;
  /** False: another process holds the lease (or this one lost it during the pass). */
  complete: boolean;
  /** When the earliest rescheduled event falls due, null if none waits. */
  nextDueAt: number | null;
}

/**
 * What this process's last complete pass learnt, so that the next one, when nothing else changed,
 * reads only the newest events instead of the whole outbox (a backlog waiting for a receiver that
 * is down would otherwise be reread after every publication).
 */
interface PassMemo {
  /** Users whose next event waits, with when it falls due. */
  blocked: Map<string, number>;
  /** The last outbox id the pass read; null if it read none. */
  lastId: string | null;
  /** The lease as the pass gave it back (see `takeLease`). */
  releasedAs: string | null;
}

const noReport = (): DeliveryReport => ({ delivered: 0, failed: 0, deadLettered: 0 });

function earliest(blocked: Map<string, number>): number | null {
  let soonest: number | null = null;
  for (const at of blocked.values()) if (soonest === null || at < soonest) soonest = at;
  return soonest;
}

/**
 * The outbox of events posted to `eventUrl`. Nothing runs in the background until `start()`.
 *
 * @example
 * const events = new EventExport({ store, clock, logger, url, secret: null, retentionMs: 3600_000 });
 * events.start();
 * await events.publish([userConfigMessage(user)]);
 * await events.close();
 */
export class EventExport {
  readonly #ids: EventIds;
  /** This process's name on the lease. */
  readonly #owner = crypto.randomUUID();
  #started = false;
  #closed = false;
  #client: Deno.HttpClient | null = null;
  #signingKey: Promise<CryptoKey> | null = null;
  readonly #timeouts = new PostTimeouts();
  /**
   * Publications waiting for the write that runs (`#writing`): the next write takes them all at
   * once (a group commit), so that ids become durable in their order and concurrent publications
   * share commits.
   */
  readonly #queued: QueuedWrite[] = [];
  #writing: Promise<void> | null = null;
  /** Passes of this process, one after the other (the lease is per process). */
  #passes: Promise<unknown> = Promise.resolve();
  /** The running background loop, if any; `#again` asks it for one more pass. */
  #looping: Promise<void> | null = null;
  #again = false;
  /** The one pending wake-up of the background loop. */
  #wake: { at: number; cancel: () => void } | null = null;
  #cancelPoll: (() => void) | null = null;
  /** The outbox signal as the last complete pass saw it at its start. */
  #signalSeen: string | null = null;
  /** The last pass did not get through the outbox (lease held elsewhere, store failure). */
  #behind = true;
  #memo: PassMemo | null = null;
  /** Counts requeues of dead letters: a pass running across one must not leave a memo. */
  #requeues = 0;
  readonly #written: WrittenListener[] = [];
  readonly #delivered: DeliveryListener[] = [];

  constructor(readonly options: EventExportOptions) {
    this.#ids = new EventIds(() => options.clock.now());
  }

  /**
   * Writes `messages` to the outbox (when a URL is set) and to the event log (for the retention,
   * {@link MIN_LOG_MS} at least), in atomic commits one after the other (499 events each at most
   * when both are written), each event with a new id sorting in publish order; resolves once they
   * are durable, after the written listeners were told, then wakes up delivery. Publications made
   * while a write runs are written together by the next one.
   */
  async publish(messages: ExportedMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.#write(messages, this.#targets());
  }

  /**
   * Writes CTI notices to the event log only ({@link MIN_LOG_MS}), never to the outbox: every
   * process's live feed hands them to its sockets; resolves once they are durable and this
   * process's listeners were told.
   */
  async notify(notices: CtiNotice[]): Promise<void> {
    if (notices.length === 0) return;
    await this.#write(notices, { toOutbox: false, retentionMs: MIN_LOG_MS });
  }

  /**
   * As {@link notify}, each notice derived from a platform event (a screen pop, a listening, a
   * voicemail's messages) written once whatever the number of times and processes handing that
   * event over: `id` is the event's id and what the notice is of it (`<event id>:sheet`).
   */
  async notifyOnce(notices: { id: string | undefined; notice: CtiNotice }[]): Promise<number> {
    if (notices.length === 0) return 0;
    const once = { ids: notices.map((n) => n.id), written: 0 };
    await this.#write(
      notices.map((n) => n.notice),
      { toOutbox: false, retentionMs: MIN_LOG_MS },
      once,
    );
    return once.written;
  }

  /**
   * As {@link publish}, each message of a platform event published once whatever the number of
   * times and processes publishing it (docs/asterisk.md, "Several svc processes"): a message whose
   * `id` is marked as published (`lib/store/platform_done.ts`) is skipped, the others are written
   * with their mark, in commits of at most 10, in order. Answers how many were written.
   */
  async publishOnce(messages: IdentifiedMessage[]): Promise<number> {
    if (messages.length === 0) return 0;
    const once = { ids: messages.map((m) => m.id), written: 0 };
    await this.#write(messages.map((m) => m.message), this.#targets(), once);
    return once.written;
  }

  /**
   * Gives `messages` their ids for the atomic operation of the change causing them (decisions §7:
   * the change and its events are durable together, or not at all): the answer's `add(op)` puts
   * their writes in that operation. Once it is committed, call {@link committed}; a staged set
   * never committed (its transaction ran again, with a new one) is simply dropped. `above`: the
   * id of the last event the changed record caused, as read in the change's checked transaction;
   * the new ids sort after it, so one record's events keep the order of its changes even when
   * several processes change it (see {@link EventIds.next}).
   *
   * @example
   * const staged = events.stage([userConfigMessage(user)]);
   * await store.commit((op) => { staged.add(op); return op.set(key, user); });
   * events.committed(staged);
   */
  stage(messages: ExportedMessage[], above: string | null = null): StagedEvents {
    const targets = { ...this.#targets(), writer: this.#ids.suffix };
    const entries = messages.map((event) => this.#entry(event, above));
    return { entries, add: (op) => addEvents(op, entries, targets) };
  }

  /** Tells the listeners of events {@link stage}d and committed, and wakes up delivery. */
  committed(staged: StagedEvents): void {
    this.#tellWritten(staged.entries);
    this.#kick();
  }

  /** Tells `listener` of every event this process publishes, once durable (the live feed). */
  onWritten(listener: WrittenListener): void {
    this.#written.push(listener);
  }

  /** Tells `listener` what each batch of this process's delivery passes did, once written. */
  onDelivered(listener: DeliveryListener): void {
    this.#delivered.push(listener);
  }

  /** The part of this process's event ids that tells them from other processes' ones. */
  get writer(): string {
    return this.#ids.suffix;
  }

  /** Where published events go: the outbox with a URL, the log for the retention. */
  #targets(): Omit<EventTargets, "writer"> {
    return {
      toOutbox: this.options.url !== null,
      retentionMs: Math.max(this.options.retentionMs, MIN_LOG_MS),
    };
  }

  /** A new outbox entry for `event`, under a new id (greater than `above` too, when given). */
  #entry(event: ExportedMessage, above: string | null = null): OutboxEntry {
    const { id, ms } = this.#ids.next(above);
    return { id, createdAt: ms, attempts: 0, dueAt: ms, lastError: null, event };
  }

  /** Writes `messages` under new ids, with the publications queued meanwhile, then wakes up delivery. */
  async #write(
    messages: ExportedMessage[],
    to: Omit<EventTargets, "writer">,
    once?: QueuedWrite["once"],
  ): Promise<void> {
    const done = Promise.withResolvers<void>();
    this.#queued.push({ messages, to, done, once });
    this.#writing ??= this.#drain();
    await done.promise;
    this.#kick();
  }

  /** Writes the queued publications, those of the same targets together, until none is left. */
  async #drain(): Promise<void> {
    while (this.#queued.length) {
      const { to, once } = this.#queued[0]!;
      if (once) {
        await this.#writeOnce(this.#queued.shift()!);
        continue;
      }
      let count = 1;
      while (
        count < this.#queued.length && this.#queued[count]!.to.toOutbox === to.toOutbox &&
        this.#queued[count]!.to.retentionMs === to.retentionMs && !this.#queued[count]!.once
      ) count++;
      const batch = this.#queued.splice(0, count);
      try {
        const entries = batch.flatMap(({ messages }) => messages.map((m) => this.#entry(m)));
        await writeEvents(this.options.store, entries, { ...to, writer: this.#ids.suffix });
        if (to.retentionMs > 0) this.#tellWritten(entries);
        for (const { done } of batch) done.resolve();
      } catch (error) {
        for (const { done } of batch) done.reject(error);
      }
    }
    this.#writing = null;
  }

  /** Writes a {@link publishOnce} publication: each id once, 10 per commit at most. */
  async #writeOnce({ messages, to, done, once }: QueuedWrite): Promise<void> {
    try {
      const targets = { ...to, writer: this.#ids.suffix };
      const items = messages.map((message, i) => ({ id: once!.ids[i], message }));
      const commits = await writeOnce(
        this.options.store,
        "outbox",
        items,
        (op, chunk) => {
          const entries = chunk.map(({ message }) => this.#entry(message));
          addEvents(op, entries, targets);
          return entries;
        },
        // another process published some of them (a takeover): the rest, and what follows, get
        // ids after the last it published, whatever the two clocks say (each user's order)
        async () => {
          const last = await lastLoggedId(this.options.store);
          if (last !== null) this.#ids.next(last);
        },
      );
      const entries = commits.flatMap(({ result }) => result);
      once!.written = entries.length;
      if (to.retentionMs > 0) this.#tellWritten(entries);
      done.resolve();
    } catch (error) {
      done.reject(error);
    }
  }

  /** Hands newly logged events to the written listeners; one throwing does not stop the others. */
  #tellWritten(entries: OutboxEntry[]): void {
    if (this.#written.length === 0) return;
    const logged = entries.map(({ id, createdAt, event }) => ({ id, createdAt, event }));
    for (const listener of this.#written) {
      try {
        listener(logged);
      } catch (error) {
        this.options.logger.error("event listener failed", { error: String(error) });
      }
    }
  }

  #tellDelivered(counts: DeliveryCounts): void {
    for (const listener of this.#delivered) {
      try {
        listener(counts);
      } catch (error) {
        this.options.logger.error("delivery listener failed", { error: String(error) });
      }
    }
  }

  /** Starts background delivery (see the module comment); does nothing without a URL. */
  start(): void {
    if (this.#started || this.#closed || this.options.url === null) return;
    this.#started = true;
    this.#kick();
    if (this.options.store.location !== ":memory:") this.#poll();
  }

  /** Stops background delivery and waits for a running pass; posts in flight end first. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#wake?.cancel();
    this.#wake = null;
    this.#cancelPoll?.();
    this.#cancelPoll = null;
    await this.#looping;
    await this.#passes;
    this.#client?.close();
    this.#client = null;
  }

  /**
   * One delivery pass now (the cron job and tests call it): under the lease, every due event in
   * id order, in order per user. Answers zeros when another process holds the lease.
   */
  async deliverDue(): Promise<DeliveryReport> {
    const outcome = await this.#exclusivePass({ full: true });
    this.#afterPass(outcome);
    return outcome.report;
  }

  /** Counts of pending events and dead letters, the last failure and the oldest dead letters. */
  async deliveries(): Promise<Deliveries> {
    const { store } = this.options;
    const [pending, dead, last] = await Promise.all([
      countOutbox(store),
      deadLetters(store),
      lastError(store),
    ]);
    return {
      pending,
      deadLetters: dead.length,
      lastError: last,
      deadLetterEvents: dead.slice(0, MAX_DEAD_LETTERS_SHOWN).map((entry) => ({
        id: entry.id,
        username: entry.event.username,
        createdAt: new Date(entry.createdAt).toISOString(),
        attempts: entry.attempts,
        lastError: entry.lastError,
        message: entry.event.message,
      })),
    };
  }

  /**
   * Pending events and dead letters of every process sharing the store, each counted up to `limit`
   * (a count reads every entry: the limit bounds what a backlog costs), and the oldest pending
   * event's publication time.
   */
  async backlog(limit: number): Promise<Backlog> {
    const { store } = this.options;
    const [pending, deadLetters, oldestPendingAt] = await Promise.all([
      countOutbox(store, limit),
      countDeadLetters(store, limit),
      oldestPending(store),
    ]);
    return { pending, deadLetters, oldestPendingAt };
  }

  /** Moves every dead letter back to the outbox, due now (attempts from 0); answers how many. */
  async retryDeadLetters(): Promise<number> {
    // they come back with their old ids, before what a follow-up pass would read
    this.#requeues++;
    this.#memo = null;
    const requeued = await requeueDeadLetters(this.options.store, this.options.clock.now());
    if (requeued > 0) this.#kick();
    return requeued;
  }

  /** The events of the event log still within the retention, oldest first (1.0 handshake). */
  async retained(): Promise<(EventMessage | SupervisionMessage | RoomMessage)[]> {
    const { store, clock, retentionMs } = this.options;
    if (retentionMs <= 0) return [];
    const logged = await loggedEvents(store, clock.now() - retentionMs);
    return logged.map((entry) => entry.event).filter(isExported);
  }

  /**
   * Reposts the retained events (1.0 handshake): each goes to the outbox again under a new id,
   * oldest first, without being logged again (a second handshake reposts the same events, not
   * twice as many). Answers how many; none without a URL.
   */
  async repostRetained(): Promise<number> {
    const retained = await this.retained();
    if (this.options.url === null || retained.length === 0) return 0;
    await this.#write(retained, { toOutbox: true, retentionMs: 0 });
    return retained.length;
  }

  // --- background loop ---------------------------------------------------------------------

  /** Asks for a pass as soon as possible (through the clock: `advance(0)` runs it in tests). */
  #kick(): void {
    if (this.#looping && this.#started && !this.#closed) {
      // what the wake-up would do, without a timer per publication: the running loop goes on
      this.#again = true;
      return;
    }
    this.#wakeAt(this.options.clock.now());
  }

  /** Keeps one wake-up, the earliest asked for. */
  #wakeAt(at: number): void {
    if (!this.#started || this.#closed) return;
    if (this.#wake && this.#wake.at <= at) return;
    this.#wake?.cancel();
    const { clock } = this.options;
    const cancel = clock.after(Math.max(0, at - clock.now()), () => {
      this.#wake = null;
      return this.#run();
    });
    this.#wake = { at, cancel };
  }

  /**
   * Runs passes until nobody asked for another; answers the running loop, so a test advancing the
   * clock sees the pass's effects once the timer's promise settles.
   */
  #run(): Promise<void> {
    this.#again = true;
    this.#looping ??= (async () => {
      try {
        while (this.#again && !this.#closed) {
          this.#again = false;
          this.#afterPass(await this.#exclusivePass({ full: false }));
        }
      } finally {
        this.#looping = null;
      }
    })();
    return this.#looping;
  }

  /** Schedules what a pass left to do: the next retry, or a new try after a failure. */
  #afterPass(outcome: PassOutcome): void {
    if (outcome.nextDueAt !== null) this.#wakeAt(outcome.nextDueAt);
  }

  /** Watches the outbox signal so that events other processes publish go out within a second. */
  #poll(): void {
    if (this.#closed) return;
    this.#cancelPoll = this.options.clock.after(POLL_MS, async () => {
      try {
        const signal = await outboxSignal(this.options.store);
        if (this.#behind || signal !== this.#signalSeen) this.#kick();
      } catch (error) {
        this.options.logger.debug("event outbox poll failed", { error: String(error) });
      }
      this.#poll();
    });
  }

  // --- one pass ----------------------------------------------------------------------------

  /**
   * A pass that never throws: a store failure is logged and retried later. `full: false` lets it
   * read only the newest events when this process's last pass still tells the rest.
   */
  #exclusivePass({ full }: { full: boolean }): Promise<PassOutcome> {
    const pass = this.#passes.then(async (): Promise<PassOutcome> => {
      if (this.#closed || this.options.url === null) {
        return { report: noReport(), complete: true, nextDueAt: null };
      }
      const memo = full ? null : this.#memo;
      this.#memo = null; // stale once this pass starts, until it completes
      try {
        return await this.#pass(this.options.url, memo);
      } catch (error) {
        this.#behind = true;
        this.options.logger.warn("event delivery pass failed", {
          error: String(error),
          cause: String((error as Error).cause ?? ""),
          retryInMs: STORE_RETRY_MS,
        });
        return {
          report: noReport(),
          complete: false,
          nextDueAt: this.options.clock.now() + STORE_RETRY_MS,
        };
      }
    });
    this.#passes = pass;
    return pass;
  }

  async #pass(url: string, memo: PassMemo | null): Promise<PassOutcome> {
    const { store, clock, logger } = this.options;
    const report = noReport();
    const requeues = this.#requeues;
    const started = clock.now();
    const lease = await takeLease(store, this.#owner, started, LEASE_MS, memo?.releasedAs ?? null);
    if (!lease.held) {
      this.#behind = true;
      return { report, complete: false, nextDueAt: started + POLL_MS };
    }
    // read before the outbox: whatever is published after this makes the poll ask for a pass
    const signal = await outboxSignal(store);
    let leaseLost = false;
    let renewing: Promise<void> | null = null;
    let cancelRenewal = () => {};
    const renew = () => {
      cancelRenewal = clock.after(LEASE_MS / 3, () => {
        renewing = takeLease(store, this.#owner, clock.now(), LEASE_MS).then(
          (taken) => void (leaseLost ||= !taken.held),
          () => void (leaseLost = true), // the store failed: stop posting, the lease may lapse
        );
        if (!leaseLost) renew();
        return renewing;
      });
    };
    renew();
    const stopped = () => leaseLost || this.#closed;
    let learnt: PassMemo | null = null;

    try {
      // follow up from the memo only if no other process ran a pass since and no event it left
      // waiting has fallen due; otherwise read the whole outbox
      const dueSoonest = memo ? earliest(memo.blocked) : null;
      const followUp = memo !== null && lease.untouched &&
        (dueSoonest === null || dueSoonest > started + DUE_SLACK_MS);
      /** Users whose next event must wait (not due, or just failed): nothing more for them. */
      const blocked = followUp ? new Map(memo!.blocked) : new Map<string, number>();
      /** Users whose event was just given up on: their other events as old go with it. */
      const givenUp = new Map<string, string>();
      let start: { after: string } | { from: string } | null = followUp && memo!.lastId !== null
        ? { from: idFrom(idTime(memo!.lastId) - RESCAN_MS) }
        : null;
      let lastId = followUp ? memo!.lastId : null;
      // events published during the pass are read by the same pass, under the same lease, for up
      // to `CONTINUE_MS`: a steady stream of events costs no lease commits per event
      const more = () => {
        if (!this.#again || clock.now() - started > CONTINUE_MS || stopped()) return false;
        this.#again = false;
        if (lastId !== null) start = { from: idFrom(idTime(lastId) - RESCAN_MS) };
        return true;
      };
      while (!stopped()) {
        const batch = await outboxBatch(store, start, BATCH);
        if (batch.length === 0) {
          if (more()) continue;
          break;
        }
        lastId = batch.at(-1)!.id;
        start = { after: lastId };
        const now = clock.now();
        const queues = new Map<string, OutboxEntry[]>();
        for (const entry of batch) {
          const user = entry.event.username;
          if (blocked.has(user)) continue;
          if (entry.dueAt > now + DUE_SLACK_MS) {
            blocked.set(user, entry.dueAt);
            continue;
          }
          const queue = queues.get(user);
          if (queue) queue.push(entry);
          else queues.set(user, [entry]);
        }

        const writes: PassWrites = {
          delivered: [],
          retried: [],
          deadLettered: [],
          lastError: null,
        };
        await eachLimited([...queues], PARALLEL_USERS, async ([user, entries]) => {
          for (const entry of entries) {
            if (stopped()) return;
            const given = givenUp.get(user);
            if (given !== undefined && clock.now() - entry.createdAt >= GIVE_UP_AFTER_MS) {
              writes.deadLettered.push({ ...entry, lastError: given });
              continue;
            }
            const error = await this.#post(url, entry);
            if (error === null) {
              writes.delivered.push(entry.id);
              continue;
            }
            report.failed++;
            const at = clock.now();
            const attempts = entry.attempts + 1;
            writes.lastError = { at: new Date(at).toISOString(), message: `${entry.id}: ${error}` };
            if (at - entry.createdAt >= GIVE_UP_AFTER_MS) {
              logger.warn("event delivery failed, given up", {
                id: entry.id,
                username: user,
                attempts,
                error,
              });
              writes.deadLettered.push({ ...entry, attempts, dueAt: at, lastError: error });
              givenUp.set(user, error);
              continue;
            }
            const delay = RETRY_DELAYS_MS[Math.min(attempts, RETRY_DELAYS_MS.length) - 1]!;
            logger.warn("event delivery failed", {
              id: entry.id,
              username: user,
              attempts,
              error,
              retryInMs: delay,
            });
            writes.retried.push({ ...entry, attempts, dueAt: at + delay, lastError: error });
            blocked.set(user, at + delay);
            return;
          }
        });
        await applyPassWrites(store, writes);
        report.delivered += writes.delivered.length;
        report.deadLettered += writes.deadLettered.length;
        this.#tellDelivered({
          delivered: writes.delivered.length,
          retried: writes.retried.length,
          deadLettered: writes.deadLettered.length,
        });
        if (batch.length < BATCH && !more()) break;
      }
      const complete = !stopped();
      this.#behind = !complete;
      if (complete) {
        this.#signalSeen = signal;
        if (requeues === this.#requeues) learnt = { blocked, lastId, releasedAs: null };
      }
      return { report, complete, nextDueAt: earliest(blocked) };
    } finally {
      cancelRenewal();
      await renewing; // a renewal landing after the release would keep the lease for nothing
      const releasedAs = await releaseLease(store, this.#owner).catch(() => null); // else it lapses
      if (learnt) this.#memo = { ...learnt, releasedAs };
    }
  }

  /** Posts one event; answers null on a 2xx, else why it failed. */
  async #post(url: string, entry: OutboxEntry): Promise<string | null> {
    const body = JSON.stringify(entry.event);
    const headers: Record<string, string> = {
      "Content-Type": "application/json",
      "X-Svc-Event-Id": entry.id,
    };
    if (this.options.secret !== null) {
      headers["X-Svc-Signature"] = `sha256=${await this.#sign(body)}`;
    }
    // real time on purpose: the post is real I/O, and a virtual clock stands still during it
    const timeout = this.#timeouts.take();
    try {
      this.#client ??= Deno.createHttpClient({});
      const response = await fetch(url, {
        method: "POST",
        headers,
        body,
        signal: timeout.signal,
        client: this.#client,
      });
      await response.arrayBuffer(); // read to the end so the connection is reused
      return response.ok ? null : `HTTP ${response.status}`;
    } catch (error) {
      if (timeout.signal.aborted) return `no answer within ${POST_TIMEOUT_MS / 1000} s`;
      // fetch's own message is "fetch failed"; the cause tells what happened (refused, reset…)
      const cause = (error as Error).cause;
      return cause instanceof Error ? cause.message : String((error as Error).message ?? error);
    } finally {
      timeout.done();
    }
  }

  /** Hex HMAC-SHA256 of `body` with the secret (the key is imported once). */
  async #sign(body: string): Promise<string> {
    this.#signingKey ??= crypto.subtle.importKey(
      "raw",
      new TextEncoder().encode(this.options.secret ?? ""),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"],
    );
    const mac = await crypto.subtle.sign("HMAC", await this.#signingKey, encoder.encode(body));
    return Array.from(new Uint8Array(mac), (byte) => byte.toString(16).padStart(2, "0")).join("");
  }
}

const encoder = new TextEncoder();

/** Posts started within this long of each other share one timeout timer. */
const TIMEOUT_SLOT_MS = 250;

/** The posts started within one {@link TIMEOUT_SLOT_MS} and their shared timer. */
interface TimeoutSlot {
  closesAt: number;
  abort: AbortController;
  timer: ReturnType<typeof setTimeout>;
  /** Posts of the slot not ended yet. */
  running: number;
}

/**
 * The timeouts of posts: those started within {@link TIMEOUT_SLOT_MS} of each other share one
 * timer (a timer and an `AbortController` per post cost a tenth of the post), which aborts them
 * {@link POST_TIMEOUT_MS} after the slot ends, so each post gets at least `POST_TIMEOUT_MS` and at
 * most `TIMEOUT_SLOT_MS` more. The timer is cleared once the last post of its slot has ended.
 */
class PostTimeouts {
  #slot: TimeoutSlot | null = null;

  /** A signal for a post starting now; call `done` once the post has ended. */
  take(): { signal: AbortSignal; done: () => void } {
    const now = performance.now();
    let taken = this.#slot;
    if (taken === null || now >= taken.closesAt) {
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(), TIMEOUT_SLOT_MS + POST_TIMEOUT_MS);
      taken = this.#slot = { closesAt: now + TIMEOUT_SLOT_MS, abort, timer, running: 0 };
    }
    const slot = taken;
    slot.running++;
    return {
      signal: slot.abort.signal,
      done: () => {
        if (--slot.running > 0) return;
        clearTimeout(slot.timer);
        if (this.#slot === slot) this.#slot = null;
      },
    };
  }
}

/** Runs `task` over `items` with at most `limit` at a time. */
async function eachLimited<T>(
  items: T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

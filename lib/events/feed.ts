/**
 * The live feed of events (docs/cti.md): what goes to `eventUrl`, handed as it happens to the CTI
 * sockets and the SSE streams of this process, whichever process published it.
 *
 * - Events this process publishes come straight from the event export once durable.
 * - Events of other processes sharing the store come from the event log: every `POLL_MS` the feed
 *   reads the writers' signals (one list), and only when another writer's signal moved does it
 *   read the log after what it read last, less `RESCAN_MS` (ids are time first and two processes'
 *   clocks and commits interleave), skipping what it handed on already.
 * - A client resuming (SSE `Last-Event-ID`) reads the log after its last id: the events still
 *   retained (the retention, one minute at least).
 * - `subscribe` hands on the events of users and agents only (what a CTI socket is sent, by
 *   username); `subscribeAll` hands on supervision events too (`QueueStatistics`, username "",
 *   docs/supervision.md): the SSE stream, and a supervisor's socket once it asks for them.
 */
import type { Clock } from "../clock.ts";
import type { Logger } from "../log.ts";
import type { Store } from "../store/store.ts";
import type { EventExport } from "./export.ts";
import { type EventMessage, type ExportedMessage, isUserEvent } from "./messages.ts";
import { idFrom, idTime, idWriter, logAfter, type LogEntry, logSignals } from "./outbox.ts";

/** Told of the users' and agents' events (see {@link EventFeed.subscribe}). */
export type FeedListener = (entries: LogEntry<EventMessage>[]) => void;
/** Told of every event, supervision events included (see {@link EventFeed.subscribeAll}). */
export type FullFeedListener = (entries: LogEntry<ExportedMessage>[]) => void;

/** How often the signals of other writers are read while someone listens. */
export const POLL_MS = 100;
/** How far back a read of other writers' events starts before the newest one seen. */
const RESCAN_MS = 2_000;
/** Log entries read per store round trip. */
const BATCH = 500;

export class EventFeed {
  readonly #listeners = new Set<FullFeedListener>();
  /** Other writers' signals as last read. */
  #signals = new Map<string, string>();
  /** Other writers' events handed on, by id, with their time: forgotten after `RESCAN_MS`. */
  readonly #seen = new Map<string, number>();
  /** The newest id of another writer handed on. */
  #cursor: string | null = null;
  #cancelPoll: (() => void) | null = null;
  #closed = false;

  constructor(
    readonly options: { store: Store; clock: Clock; logger: Logger; events: EventExport },
  ) {
    options.events.onWritten((entries) => this.#hand(entries));
  }

  /**
   * Adds `listener` until the answered function is called: it is told of the events of users
   * and agents (`PhoneEvent`, `AgentStateEvent`, `UserConfigUpdate`), not of supervision events.
   */
  subscribe(listener: FeedListener): () => void {
    return this.subscribeAll((entries) => {
      const users = entries.filter((entry): entry is LogEntry<EventMessage> =>
        isUserEvent(entry.event)
      );
      if (users.length) listener(users);
    });
  }

  /**
   * Adds `listener` until the answered function is called: it is told of every event, the
   * supervision events (`QueueStatistics`, username "") included.
   */
  subscribeAll(listener: FullFeedListener): () => void {
    this.#listeners.add(listener);
    if (!this.#cancelPoll && this.options.store.location !== ":memory:") {
      // what others wrote before the first listener came is not news: start from now
      this.#cursor ??= idFrom(this.options.clock.now());
      this.#poll();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#stopPolling();
    };
  }

  /** The retained events after the id `after`, oldest first, up to `limit`. */
  async after(after: string, limit: number): Promise<LogEntry<ExportedMessage>[]> {
    const now = this.options.clock.now();
    const entries = await logAfter(this.options.store, after, limit);
    // expireIn removes keys lazily: an event older than its minute or retention is gone
    const oldest = now - Math.max(this.options.events.options.retentionMs, 60_000);
    return entries.filter((entry) => entry.createdAt >= oldest);
  }

  close(): void {
    this.#closed = true;
    this.#stopPolling();
    this.#listeners.clear();
  }

  #stopPolling(): void {
    this.#cancelPoll?.();
    this.#cancelPoll = null;
  }

  #hand(entries: LogEntry<ExportedMessage>[]): void {
    for (const listener of this.#listeners) {
      try {
        listener(entries);
      } catch (error) {
        this.options.logger.error("event feed listener failed", { error: String(error) });
      }
    }
  }

  #poll(): void {
    if (this.#closed) return;
    this.#cancelPoll = this.options.clock.after(POLL_MS, async () => {
      try {
        await this.#readOthers();
      } catch (error) {
        this.options.logger.debug("event feed poll failed", { error: String(error) });
      }
      if (this.#cancelPoll) this.#poll();
    });
  }

  /** Hands on what other writers logged since the last read, if any signal moved. */
  async #readOthers(): Promise<void> {
    const { store, events } = this.options;
    const own = events.writer;
    const signals = await logSignals(store);
    let moved = false;
    for (const [writer, stamp] of signals) {
      if (writer !== own && this.#signals.get(writer) !== stamp) moved = true;
    }
    if (!moved) return;
    const from = this.#cursor === null ? null : idFrom(idTime(this.#cursor) - RESCAN_MS);
    let after = from;
    const fresh: LogEntry<ExportedMessage>[] = [];
    for (;;) {
      const batch = await logAfter(store, after, BATCH);
      for (const entry of batch) {
        if (idWriter(entry.id) === own || this.#seen.has(entry.id)) continue;
        fresh.push(entry);
      }
      if (batch.length < BATCH) break;
      after = batch.at(-1)!.id;
    }
    // the signals are taken once the read is done: a write landing meanwhile moves them again
    this.#signals = signals;
    if (fresh.length === 0) return;
    fresh.sort((a, b) => a.id < b.id ? -1 : 1);
    for (const entry of fresh) this.#seen.set(entry.id, idTime(entry.id));
    const newest = fresh.at(-1)!.id;
    if (this.#cursor === null || newest > this.#cursor) this.#cursor = newest;
    const forgetBefore = idTime(this.#cursor) - RESCAN_MS;
    for (const [id, ms] of this.#seen) if (ms < forgetBefore) this.#seen.delete(id);
    this.#hand(fresh);
  }
}

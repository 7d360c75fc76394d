/**
 * The Prometheus metrics of one process, served by `GET /metrics` (docs/metrics.md), kept with
 * prom-client in a registry of their own (one per `createServices`: tests build many apps in one
 * process).
 *
 * - Counted as things happen: requests and their latency (by method, route template, status),
 *   logins by outcome, event deliveries, retries and dead letters, store failures.
 * - Read when scraped: the event outbox (pending events, dead letters, the oldest pending event's
 *   age: one bounded read of the store per scrape), the platform's connection state, the
 *   process's CPU time and memory.
 */
import type { Context } from "hono";
import { matchedRoutes } from "hono/route";
import { Counter, Gauge, Registry } from "./prom_client.ts";
import { RequestHistogram } from "./request_histogram.ts";
import type { Clock } from "./clock.ts";
import type { Backlog, EventExport } from "./events/export.ts";
import { type Platform, PLATFORM_STATES } from "./platform/port.ts";
import type { Store } from "./store/store.ts";
import { buildInfo } from "./version.ts";

export type LoginUserType = "cti" | "webservice";
/** How a login was tried: a password (`/auth/login`, `/auth/webservice`, 1.0, `/0.1/token`), SSO. */
export type LoginMethod = "password" | "oidc" | "cas" | "kerberos";
/** `refused`: wrong credentials or a single sign-on proof not accepted; `throttled`: 429. */
export type LoginOutcome = "success" | "refused" | "throttled";

/** The methods kept as a label; anything else a client sends is `other` (labels stay few). */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** The route label of a request no route answered: 404s, and CORS preflights. */
export const UNMATCHED = "unmatched";

/** Latency buckets in seconds: most answers take from a fraction of a millisecond to tens of ms. */
const LATENCY_BUCKETS = [
  0.0005,
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
];

/**
 * Pending events and dead letters are counted up to this many per scrape: Deno KV has no count, so
 * each is read, and a backlog must not make every scrape slower. Past it the gauges stay at it and
 * the oldest pending event's age tells how far behind delivery is.
 */
export const BACKLOG_COUNT_LIMIT = 10_000;

/** What the metrics read and listen to. */
export interface MetricsSources {
  store: Store;
  events: EventExport;
  platform: Platform;
  clock: Clock;
}

/**
 * The metrics of one set of services.
 *
 * @example
 * const metrics = new Metrics({ store, events, platform, clock });
 * metrics.login("cti", "password", "success");
 * const text = await metrics.exposition();
 */
export class Metrics {
  readonly registry = new Registry();
  readonly #requests: RequestHistogram;
  readonly #logins: Counter<"user_type" | "method" | "outcome">;
  /** The backlog read of the scrape under way, shared by the three gauges that show it. */
  #scrape: Promise<Backlog | null> | null = null;

  constructor(readonly sources: MetricsSources) {
    const registers = [this.registry];
    // no counter beside it: the histogram's _count is the number of requests
    this.#requests = new RequestHistogram(
      "svc_http_request_duration_seconds",
      "HTTP requests by method, route template and status: time to the response headers.",
      LATENCY_BUCKETS,
      registers,
    );
    this.#logins = new Counter({
      name: "svc_logins_total",
      help: "Login attempts, by user type, method and outcome.",
      labelNames: ["user_type", "method", "outcome"],
      registers,
    });
    // the series of password logins exist from the start, so that rate() sees the first one
    for (const userType of ["cti", "webservice"] as const) {
      for (const outcome of ["success", "refused", "throttled"] as const) {
        this.#logins.inc({ user_type: userType, method: "password", outcome }, 0);
      }
    }
    this.#storeMetrics(registers);
    this.#eventMetrics(registers);
    this.#platformMetrics(registers);
    this.#processMetrics(registers);
  }

  /** Counts one answered request; `route` is its template (see {@link routeTemplate}). */
  request(method: string, route: string, status: number, seconds: number): void {
    this.#requests.observe(METHODS.has(method) ? method : "other", route, status, seconds);
  }

  /** Counts one login attempt. */
  login(userType: LoginUserType, method: LoginMethod, outcome: LoginOutcome): void {
    this.#logins.inc({ user_type: userType, method, outcome });
  }

  /** The Prometheus text exposition of every metric; the store is read once for the backlog. */
  async exposition(): Promise<string> {
    this.#scrape = this.#readBacklog();
    try {
      return await this.registry.metrics();
    } finally {
      this.#scrape = null;
    }
  }

  /** The exposition's media type (text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The outbox backlog, or null when the store cannot tell (then the gauges show NaN). */
  #readBacklog(): Promise<Backlog | null> {
    return this.sources.events.backlog(BACKLOG_COUNT_LIMIT).catch(() => null);
  }

  #storeMetrics(registers: Registry[]): void {
    const failures = new Counter({
      name: "svc_store_errors_total",
      help: "Failed store operations: unavailable (answered 503), or the kind Deno KV refused.",
      labelNames: ["kind"],
      registers,
    });
    failures.inc({ kind: "unavailable" }, 0);
    this.sources.store.onFailure((kind) => failures.inc({ kind }));
  }

  #eventMetrics(registers: Registry[]): void {
    const delivered = new Counter({
      name: "svc_events_delivered_total",
      help: "Events this process posted to SVC_EVENT_URL and saw acknowledged (2xx).",
      registers,
    });
    const retried = new Counter({
      name: "svc_event_retries_total",
      help: "Event posts of this process that failed and were rescheduled for a retry.",
      registers,
    });
    const deadLettered = new Counter({
      name: "svc_events_dead_lettered_total",
      help: "Events this process moved to the dead letters (failing for 24 h).",
      registers,
    });
    this.sources.events.onDelivered((counts) => {
      delivered.inc(counts.delivered);
      retried.inc(counts.retried);
      deadLettered.inc(counts.deadLettered);
    });
    const backlog = () => this.#scrape ?? this.#readBacklog();
    const backlogGauge = (name: string, help: string, value: (backlog: Backlog) => number) =>
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          const read = await backlog();
          this.set(read ? value(read) : NaN); // NaN, not 0: "unknown" is not "none"
        },
      });
    // not toLocaleString: its first call loads ICU's locale data, megabytes at start for a comma
    const limit = String(BACKLOG_COUNT_LIMIT).replace(/\B(?=(\d{3})+$)/g, ",");
    backlogGauge(
      "svc_event_outbox_pending",
      `Events waiting in the outbox (all processes sharing the store), counted up to ${limit}.`,
      (backlog) => backlog.pending,
    );
    backlogGauge(
      "svc_event_dead_letters",
      `Events in the dead letters (all processes sharing the store), counted up to ${limit}.`,
      (backlog) => backlog.deadLetters,
    );
    backlogGauge(
      "svc_event_outbox_oldest_age_seconds",
      "Age of the oldest event waiting in the outbox; 0 when none waits.",
      ({ oldestPendingAt }) =>
        oldestPendingAt === null
          ? 0
          : Math.max(0, (this.sources.clock.now() - oldestPendingAt) / 1000),
    );
  }

  #platformMetrics(registers: Registry[]): void {
    const { platform } = this.sources;
    new Gauge({
      name: "svc_platform_state",
      help: "The telephony platform's connection: 1 for the current state, 0 for the others.",
      labelNames: ["adapter", "state"],
      registers,
      collect() {
        const { adapter, state } = platform.connection();
        this.reset();
        for (const each of PLATFORM_STATES) this.set({ adapter, state: each }, +(each === state));
      },
    });
    // several PBX servers (docs/asterisk.md, "Several servers"): each one's connection
    if (!platform.servers) return;
    const servers = platform.servers.bind(platform);
    new Gauge({
      name: "svc_platform_server_state",
      help: "Each PBX server's connection: 1 for the current state, 0 for the others.",
      labelNames: ["server", "state"],
      registers,
      collect() {
        this.reset();
        for (const { name, state } of servers()) {
          for (const each of PLATFORM_STATES) {
            this.set({ server: name, state: each }, +(each === state));
          }
        }
      },
    });
  }

  /**
   * The process's own figures, read from Deno: prom-client's default collectors read `/proc`,
   * which Deno allows only with `--allow-all`, and half of their `nodejs_` figures are not
   * measured under Deno.
   */
  #processMetrics(registers: Registry[]): void {
    const { version, revision } = buildInfo();
    new Gauge({
      name: "svc_build_info",
      help: "svc's version and the git revision it was built from; always 1.",
      labelNames: ["version", "revision"],
      registers,
    }).set({ version, revision }, 1);
    new Counter({
      name: "process_cpu_seconds_total",
      help: "User and system CPU time spent by the process, seconds.",
      registers,
      // node:process when first scraped: loaded at start it cost about 4 ms of every start
      async collect() {
        const { cpuUsage } = await import("node:process");
        const { user, system } = cpuUsage();
        this.reset();
        this.inc((user + system) / 1e6);
      },
    });
    new Gauge({
      name: "process_resident_memory_bytes",
      help: "Resident memory size of the process, bytes.",
      registers,
      collect() {
        this.set(Deno.memoryUsage().rss);
      },
    });
    new Gauge({
      name: "process_start_time_seconds",
      help: "When the process started, seconds since the Unix epoch.",
      registers,
    }).set(Math.round((Date.now() - performance.now()) / 1000));
  }
}

/**
 * The route template a request matched, e.g. `/svc/api/2.0/dnd/:username` (never the raw path:
 * one series per user would be without end): the first matched route that is not a middleware or
 * a catch-all (their paths end with `*`); {@link UNMATCHED} when there is none.
 */
export function routeTemplate(c: Context): string {
  for (const { path } of matchedRoutes(c)) if (!path.endsWith("*")) return path;
  return UNMATCHED;
}

/**
 * Counts an answered request by method, route template and status, with its time (the request
 * log tells it: `requestLog(logger, countRequest(metrics))`).
 */
export const countRequest = (metrics: Metrics) => (c: Context, seconds: number) =>
  metrics.request(c.req.method, routeTemplate(c), c.res.status, seconds);

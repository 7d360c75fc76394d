/**
 * The services every area shares below the CTI hub: the hub (`lib/cti/hub.ts`) and what it reads
 * (`lib/agent_control.ts`) take these, so that none of them imports `lib/services.ts`, which builds
 * the hub on top of them.
 */
import type { LoginThrottle } from "./auth/throttle.ts";
import type { Tokens } from "./auth/tokens.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import type { EventExport } from "./events/export.ts";
import type { EventFeed } from "./events/feed.ts";
import type { Logger } from "./log.ts";
import type { Metrics } from "./metrics.ts";
import type { Platform } from "./platform/port.ts";
import type { SimPlatform } from "./platform/sim/mod.ts";
import type { Store } from "./store/store.ts";

/** What the areas share but the CTI hub (`Services` of `lib/services.ts` adds it). */
export interface CoreServices {
  config: Config;
  store: Store;
  tokens: Tokens;
  throttle: LoginThrottle;
  clock: Clock;
  logger: Logger;
  /** The telephony platform every area calls. */
  platform: Platform;
  /** The embedded simulated PBX behind `platform` (`SVC_PLATFORM=sim`), for its control API. */
  sim: SimPlatform | null;
  /** The outbox of events posted to `eventUrl`. */
  events: EventExport;
  /** The same events, live, for the CTI sockets and SSE streams of this process. */
  feed: EventFeed;
  /** This process's Prometheus metrics (`GET /metrics`). */
  metrics: Metrics;
}

import { configurePasswordHashing } from "./auth/passwords.ts";
import { LoginThrottle } from "./auth/throttle.ts";
import { loadJwtSecret, Tokens } from "./auth/tokens.ts";
import { type Clock, systemClock } from "./clock.ts";
import { type Config, ConfigError } from "./config.ts";
import type { CoreServices } from "./core_services.ts";
import { EventExport } from "./events/export.ts";
import { EventFeed } from "./events/feed.ts";
import { CtiHub } from "./cti/hub.ts";
import { platformMessage } from "./events/messages.ts";
import { createLogger, type Logger, toConsole, toStderr } from "./log.ts";
import { Metrics } from "./metrics.ts";
import type { Platform, PlatformEvent } from "./platform/port.ts";
import { SimPlatform } from "./platform/sim/mod.ts";
import { recordCallsOnce } from "./store/call_history.ts";
import { Store } from "./store/store.ts";
import { Supervision } from "./supervision/mod.ts";

/** What the areas share, built once per process and handed to every route module. */
export interface Services extends CoreServices {
  /** The CTI sockets of this process. */
  cti: CtiHub;
  /**
   * Supervision's counting of platform events, its `QueueStatistics` (sent once `start()`ed:
   * main.ts does it) and its pruning (docs/supervision.md).
   */
  supervision: Supervision;
}

/**
 * Opens the store, prepares the token key, and builds the platform and the event export. Nothing
 * runs in the background until `events.start()` (main.ts does it; tests drive delivery).
 *
 * @example
 * const services = await createServices(loadConfig({ SVC_KV: ":memory:" }));
 */
export async function createServices(
  config: Config,
  options: { clock?: Clock; logger?: Logger; store?: Store } = {},
): Promise<Services> {
  // one pool of password hashes per process: the last services built set it
  configurePasswordHashing({
    concurrency: config.hashConcurrency,
    iterations: config.hashIterations,
  });
  const clock = options.clock ?? systemClock;
  const logger = options.logger ??
    createLogger(config.logLevel, config.logToConsole ? toConsole : toStderr);
  const store = options.store ?? await Store.open(config.kv);
  const tokens = await Tokens.create(
    await loadJwtSecret(store, config.jwtSecret),
    config.tokenTtl,
    clock,
  );
  const events = new EventExport({
    store,
    clock,
    logger,
    url: config.eventUrl,
    secret: config.eventSecret,
    retentionMs: config.eventRetention * 1000,
  });
  const sim = config.platform === "sim"
    ? new SimPlatform({
      store,
      clock,
      logger,
      answerMs: config.simAnswerMs,
      talkMs: config.simTalkMs,
    })
    : null;
  const platform = sim ?? await asterisk(config, store, clock, logger);
  connectPlatform(platform, events, store);
  const services: Services = {
    config,
    store,
    tokens,
    throttle: new LoginThrottle(store, clock),
    clock,
    logger,
    platform,
    sim,
    events,
    feed: new EventFeed({ store, clock, logger, events }),
    cti: null as unknown as CtiHub, // the hub needs the services: set right below
    metrics: new Metrics({ store, events, platform, clock }),
    supervision: null as unknown as Supervision, // so does supervision
  };
  services.cti = new CtiHub(services);
  services.supervision = new Supervision(services, services.metrics.registry);
  // after the outbox and the history (connectPlatform): the day counters of supervision
  platform.onEvents((batch) => services.supervision.handle(batch));
  // the CTI notices of screen pops, listening, voicemail: their code loaded by the first event
  // that causes one, not by a start (docs/performance.md)
  platform.onEvents(async (batch) => {
    if (!batch.some(causesNotice)) return;
    const { pbxNotices } = await import("./cti/pbx_notices.ts");
    await pbxNotices(services, batch);
  });
  // the meeting rooms' events: exported, and the conference messages of the rooms' members
  platform.onEvents(async (batch) => {
    if (!batch.some((event) => event.kind === "room")) return;
    const { roomEvents } = await import("./meetingrooms/events.ts");
    await roomEvents(services, batch);
  });
  return services;
}

/** A platform event some CTI socket gets a notice of (lib/cti/pbx_notices.ts). */
const causesNotice = (event: PlatformEvent) =>
  event.kind === "listen" || event.kind === "voicemail" ||
  (event.kind === "phone" && event.eventType === "EventRinging");

/**
 * The Asterisk adapter of the settings (loadConfig made sure they are all there), loaded by
 * `import()`: a start on the simulator neither reads nor compiles it (in the bundle it is a file of
 * its own, which V8's code cache holds like the others, docs/performance.md).
 */
async function asterisk(
  config: Config,
  store: Store,
  clock: Clock,
  logger: Logger,
): Promise<Platform> {
  if (config.asteriskServers !== null) {
    const path = config.asteriskServers;
    const { AsteriskServers } = await import("./platform/asterisk/several.ts");
    const { ServersFileError } = await import("./platform/asterisk/servers.ts");
    try {
      return await AsteriskServers.open({
        store,
        clock,
        logger,
        path,
        keepaliveMs: config.amiKeepaliveMs,
        timeoutMs: config.amiTimeoutMs,
      });
    } catch (error) {
      if (!(error instanceof ServersFileError)) throw error;
      throw new ConfigError("SVC_ASTERISK_SERVERS", `${JSON.stringify(path)} ${error.message}`);
    }
  }
  const { AsteriskPlatform } = await import("./platform/asterisk/mod.ts");
  return new AsteriskPlatform({
    store,
    clock,
    logger,
    ami: {
      host: config.amiHost,
      port: config.amiPort,
      username: config.amiUsername ?? "",
      secret: config.amiSecret ?? "",
      keepaliveMs: config.amiKeepaliveMs,
      timeoutMs: config.amiTimeoutMs,
    },
    configDir: config.asteriskConfigDir ?? "",
    recordingsDir: config.asteriskRecordingsDir ?? "",
  });
}

/**
 * Platform events go to the outbox first (decisions §7: durable before anything else sees them),
 * finished calls to the call history; each event once (its id: a process taking the platform over
 * hands over again what it saw, docs/asterisk.md).
 */
function connectPlatform(platform: Platform, events: EventExport, store: Store): void {
  platform.onEvents(async (platformEvents) => {
    const messages = platformEvents.flatMap((event) =>
      event.kind === "phone" || event.kind === "agent"
        ? [{ id: event.id, message: platformMessage(event) }]
        : []
    );
    if (messages.length) await events.publishOnce(messages);
    const ended = platformEvents.filter((event) => event.kind === "call_ended");
    if (ended.length) await recordCallsOnce(store, ended);
  });
}

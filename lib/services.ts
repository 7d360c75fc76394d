import { LoginThrottle } from "./auth/throttle.ts";
import { loadJwtSecret, Tokens } from "./auth/tokens.ts";
import { type Clock, systemClock } from "./clock.ts";
import type { Config } from "./config.ts";
import { createLogger, type Logger } from "./log.ts";
import { Store } from "./store/store.ts";

/** What the areas share, built once per process and handed to every route module. */
export interface Services {
  config: Config;
  store: Store;
  tokens: Tokens;
  throttle: LoginThrottle;
  clock: Clock;
  logger: Logger;
}

/**
 * Opens the store and prepares the token key.
 *
 * @example
 * const services = await createServices(loadConfig({ SVC_KV: ":memory:" }));
 */
export async function createServices(
  config: Config,
  options: { clock?: Clock; logger?: Logger; store?: Store } = {},
): Promise<Services> {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const store = options.store ?? await Store.open(config.kv);
  const tokens = await Tokens.create(
    await loadJwtSecret(store, config.jwtSecret),
    config.tokenTtl,
    clock,
  );
  return { config, store, tokens, throttle: new LoginThrottle(store, clock), clock, logger };
}

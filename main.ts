/**
 * Entry point: reads the configuration, opens the store, prepares the admin and demo records,
 * builds the app and serves it until SIGINT or SIGTERM.
 */
import { type Config, ConfigError, loadConfig } from "./lib/config.ts";
import { prepareStore } from "./lib/bootstrap.ts";
import { demoBanner } from "./lib/demo.ts";
import { recoverBulkWrites } from "./lib/store/bulk.ts";
import { createServices, type Services } from "./lib/services.ts";
import { createApp } from "./routes/mod.ts";

/** Stops the process with one line naming what is wrong. */
function fail(message: string): never {
  console.error(`svc: ${message}`);
  Deno.exit(1);
}

export async function main(env: Record<string, string> = Deno.env.toObject()): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid configuration: ${error.message}`);
    throw error;
  }
  let services: Services;
  try {
    services = await createServices(config);
  } catch (error) {
    fail(`cannot open the store SVC_KV=${config.kv}: ${(error as Error).message}`);
  }
  await prepareStore(services);
  // events: delivered in the background from now on; the cron pass each minute (under the lease in
  // the store) also picks up what another process left behind, e.g. one that was killed
  services.events.start();
  Deno.cron("redeliver events", "* * * * *", async () => {
    await services.events.deliverDue();
  });
  // a process that died in the middle of an import leaves a journal: undo it once it is stale
  Deno.cron("undo unfinished imports", "* * * * *", async () => {
    await recoverBulkWrites(services.store, services.clock.now());
  });
  const app = createApp(services);
  // The signal handlers come first: a SIGTERM right after "listening" still closes the store.
  // They run from the event loop, so `server` is always set by the time one does.
  const stop = async () => {
    await server.shutdown();
    await services.events.close(); // posts in flight end, the lease is given back
    services.store.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const server = Deno.serve({
    port: config.port,
    hostname: config.hostname,
    onListen: ({ hostname, port }) => {
      services.logger.info("listening", { hostname, port, kv: config.kv });
      if (config.demo) console.log(demoBanner(`http://localhost:${port}`));
    },
  }, app.fetch);
  await server.finished;
}

if (import.meta.main) await main();

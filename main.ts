/**
 * Entry point: reads the configuration, opens the store, prepares the admin and demo records,
 * builds the app and serves it until SIGINT or SIGTERM.
 */
import { type Config, ConfigError, loadConfig } from "./lib/config.ts";
import { prepareStore, startBackground } from "./lib/bootstrap.ts";
import { createServices, type Services } from "./lib/services.ts";
import { collectWhenIdle } from "./lib/idle_gc.ts";
import { serverApp } from "./routes/app.ts";

/** Stops the process with one line naming what is wrong. */
function fail(message: string): never {
  console.error(`svc: ${message}`);
  Deno.exit(1);
}

/** Reads the file a setting names; one that cannot be read stops the process naming it. */
function readSettingFile(setting: string, path: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch (error) {
    const reason = (error as Error).message;
    fail(`invalid configuration: ${setting}: cannot read ${JSON.stringify(path)}: ${reason}`);
  }
}

/** Reads a PEM file a setting names; one holding no `block` stops the process naming it. */
function readPem(setting: string, path: string, block: RegExp, what: string): string {
  const pem = readSettingFile(setting, path);
  if (!block.test(pem)) {
    fail(`invalid configuration: ${setting}: ${JSON.stringify(path)} holds no PEM ${what}`);
  }
  return pem;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----/;
/** PKCS #8 (`PRIVATE KEY`), or `RSA PRIVATE KEY`, `EC PRIVATE KEY`. */
const PEM_KEY = /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/;

/**
 * The PEM certificate (chain) and private key of `SVC_TLS_CERT`/`SVC_TLS_KEY`, read once before
 * anything else starts; null for plain HTTP.
 */
function readTls(config: Config): { cert: string; key: string } | null {
  if (config.tlsCert === null || config.tlsKey === null) return null;
  return {
    cert: readPem("SVC_TLS_CERT", config.tlsCert, PEM_CERTIFICATE, "certificate"),
    key: readPem("SVC_TLS_KEY", config.tlsKey, PEM_KEY, "private key"),
  };
}

/** An address the app listens on, and the setting that names it. */
interface ListenAddress {
  hostname: string;
  port: number;
  setting: string;
}

/** `host:port`, an IPv6 address in brackets. */
const hostPort = ({ hostname, port }: { hostname: string; port: number }) =>
  `${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`;

/**
 * Serves `handler` on `address`, over HTTPS when `tls` is set. An address that cannot be taken (in
 * use, not this machine's, not allowed) stops the process with a line naming its setting; so does
 * a certificate or key that Deno refuses (not PEM, or a key of another certificate: Deno reads
 * them only here). The main address logs `listening` (and `banner`, the demo's logins), the
 * extra one `also listening`.
 */
function serve(
  config: Config,
  services: Services,
  tls: { cert: string; key: string } | null,
  handler: Deno.ServeHandler,
  address: ListenAddress,
  main: boolean,
  banner: ((baseUrl: string) => string) | null = null,
): Deno.HttpServer {
  const scheme = tls ? "https" : "http";
  try {
    return Deno.serve({
      port: address.port,
      hostname: address.hostname,
      ...tls,
      onListen: ({ hostname, port }) => {
        if (!main) {
          services.logger.info("also listening", {
            hostname,
            port,
            scheme,
            setting: address.setting,
          });
          return;
        }
        services.logger.info("listening", { hostname, port, scheme, kv: config.kv });
        if (banner) console.log(banner(`${scheme}://localhost:${port}`));
      },
    }, handler);
  } catch (error) {
    const addressError = error instanceof Deno.errors.AddrInUse ||
      error instanceof Deno.errors.AddrNotAvailable ||
      error instanceof Deno.errors.PermissionDenied ||
      error instanceof Deno.errors.NotCapable;
    if (addressError) {
      fail(
        `cannot listen on ${hostPort(address)} (${address.setting}): ${(error as Error).message}`,
      );
    }
    if (tls) fail(`invalid configuration: SVC_TLS_CERT/SVC_TLS_KEY: ${(error as Error).message}`);
    throw error;
  }
}

export async function main(env: Record<string, string> = Deno.env.toObject()): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid configuration: ${error.message}`);
    throw error;
  }
  const tls = readTls(config);
  // outside the repository (the bundle) nothing turns the unstable APIs on but the command line
  if (typeof Deno.openKv !== "function" || typeof Deno.cron !== "function") {
    fail(
      "Deno KV and Deno.cron are off: run with --unstable-kv --unstable-cron, " +
        "e.g. deno run -A --unstable-kv --unstable-cron dist/svc.js",
    );
  }
  let services: Services;
  try {
    services = await createServices(config);
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid configuration: ${error.message}`);
    fail(`cannot open the store SVC_KV=${config.kv}: ${(error as Error).message}`);
  }
  await prepareStore(services);
  startBackground(services);
  // the API areas loaded and declared at their first request: a start answers sooner
  // (docs/performance.md)
  const app = serverApp(services);
  // The signal handlers come first: a SIGTERM right after "listening" still closes the store.
  // They run from the event loop, so `server` is always set by the time one does.
  const stop = async () => {
    idle.stop();
    services.cti.close(); // open sockets would hold the shutdown
    services.feed.close();
    services.supervision.close();
    await Promise.all([server.shutdown(), extra?.shutdown()]);
    await services.platform.close();
    await services.events.close(); // posts in flight end, the lease is given back
    services.store.close();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const { hostname, port } = config;
  const idle = collectWhenIdle(app.fetch);
  // the demo's data and logins: a file of their own in the bundle, read in demo mode only
  const banner = config.demo ? (await import("./lib/demo.ts")).demoBanner : null;
  const server = serve(
    config,
    services,
    tls,
    idle.handler,
    {
      hostname,
      port,
      setting: "SVC_HOSTNAME/SVC_PORT",
    },
    true,
    banner,
  );
  // the same app on a second address, e.g. xivo-auth's port 9497 for its clients
  const extra = config.extraListen
    ? serve(config, services, tls, idle.handler, {
      ...config.extraListen,
      setting: "SVC_EXTRA_LISTEN",
    }, false)
    : null;
  await server.finished;
}

if (import.meta.main) await main();

/**
 * Service settings (decisions §1): environment variables, optionally a JSON file named by
 * `SVC_CONFIG` (the environment wins). Every setting is parsed and validated here, once.
 */
import { canonicalAddress } from "./ip_address.ts";
import { type PerQueue, perQueueSetting, timeZone } from "./supervision/settings.ts";

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface Config {
  port: number;
  hostname: string;
  kv: string;
  adminLogin: string | null;
  adminPassword: string | null;
  tokenTtl: number;
  jwtSecret: string | null;
  eventUrl: string | null;
  eventSecret: string | null;
  eventRetention: number;
  /** The screen pop's URL template (docs/cti.md, "Screen pops"), null for none. */
  sheetUrl: string | null;
  /** Days a call's history records are kept (from when the call started). */
  callHistoryRetentionDays: number;
  deprecatedApiHosts: string[];
  trustProxy: boolean;
  platform: "sim" | "asterisk";
  simAnswerMs: number;
  simTalkMs: number;
  demo: boolean;
  logLevel: LogLevel;
  /**
   * Log lines through the console rather than straight to stderr: Deno's OpenTelemetry export is on
   * (`OTEL_DENO=true`), and it collects what the console writes (lib/log.ts).
   */
  logToConsole: boolean;
  maxContacts: number;
  oidcIssuer: string | null;
  oidcAudience: string | null;
  oidcLoginClaim: string;
  casUrl: string | null;
  krb5Keytab: string | null;
  tlsCert: string | null;
  tlsKey: string | null;
  amiHost: string;
  amiPort: number;
  amiUsername: string | null;
  amiSecret: string | null;
  /** Milliseconds without a byte from the AMI before svc sends a Ping (docs/asterisk.md). */
  amiKeepaliveMs: number;
  /** Milliseconds an AMI response may take: an unanswered Ping drops the connection. */
  amiTimeoutMs: number;
  asteriskConfigDir: string | null;
  /** Where Asterisk writes call recordings (MixMonitor); null for its own monitor directory. */
  asteriskRecordingsDir: string | null;
  /**
   * The JSON file listing several Asterisk servers (docs/asterisk.md, "Several servers"); null: one
   * server, the `SVC_AMI_*` and `SVC_ASTERISK_*` settings'.
   */
  asteriskServers: string | null;
  /** Origins allowed by CORS (`scheme://host[:port]`), `["*"]` for any, empty for none. */
  corsOrigins: string[];
  /** Whether the 2.0 API and the CTI socket are also served below xuc's `/xuc/api/2.0`. */
  xucPaths: boolean;
  /** A second address the same app listens on (e.g. xivo-auth's port 9497), or null. */
  extraListen: { hostname: string; port: number } | null;
  /** CTI sockets one user may hold open at once in one process (docs/cti.md). */
  ctiMaxPerUser: number;
  /** Bytes a CTI socket or SSE stream may have waiting to be sent before it is closed. */
  ctiSendBuffer: number;
  /** A static bearer token that may read `/metrics` (a scrape job's), or null. */
  metricsToken: string | null;
  /** Password hashes computed at once by this process (docs/performance.md): cores by default. */
  hashConcurrency: number;
  /** PBKDF2-SHA256 iterations of a new password hash. */
  hashIterations: number;
  /** Supervision (docs/supervision.md): the time zone whose midnight starts a queue's day. */
  supervisionTimeZone: PerQueue<string>;
  /** Supervision: a queue's service level, seconds of waiting. */
  supervisionServiceLevel: PerQueue<number>;
  /** Supervision: a call abandoned within this many seconds is a short abandon. */
  supervisionShortAbandon: number;
  /** Supervision: days of counters kept. */
  supervisionRetentionDays: number;
  /** Meeting rooms (docs/meetingrooms.md): the context personal and temporary rooms are dialled in. */
  meetingRoomContext: string;
  /** The numbers personal rooms take. */
  personalRoomRange: NumberRangeSetting;
  /** The numbers temporary rooms take. */
  temporaryRoomRange: NumberRangeSetting;
  /** The video meetings' (Jitsi's) domain, app id and key; null: no video token. */
  jitsiDomain: string | null;
  jitsiAppId: string | null;
  jitsiSecret: string | null;
  /** Seconds a video token is valid. */
  jitsiTokenTtl: number;
}

/** A range of numbers, `start` to `end`, both of the same length. */
export interface NumberRangeSetting {
  start: string;
  end: string;
}

/** A setting with a bad value; the message names the setting and says what is wrong. */
export class ConfigError extends Error {
  constructor(readonly setting: string, reason: string) {
    super(`${setting}: ${reason}`);
    this.name = "ConfigError";
  }
}

type Parser<T> = (raw: string) => T;

const text: Parser<string> = (raw) => raw;
const optional: Parser<string | null> = (raw) => raw === "" ? null : raw;

function integer(min: number, max: number): Parser<number> {
  return (raw) => {
    const n = Number(raw);
    if (!/^-?\d+$/.test(raw.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new Error(`must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
    }
    return n;
  };
}

const boolean: Parser<boolean> = (raw) => {
  const value = raw.trim().toLowerCase();
  if (["true", "1", "yes"].includes(value)) return true;
  if (["false", "0", "no", ""].includes(value)) return false;
  throw new Error(`must be true or false, got ${JSON.stringify(raw)}`);
};

function oneOf<T extends string>(...values: T[]): Parser<T> {
  return (raw) => {
    if ((values as string[]).includes(raw)) return raw as T;
    throw new Error(`must be one of ${values.join(", ")}, got ${JSON.stringify(raw)}`);
  };
}

const httpUrl: Parser<string | null> = (raw) => {
  if (raw === "") return null;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`must be an http(s) URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`must be an http(s) URL, got ${JSON.stringify(raw)}`);
  }
  return raw;
};

const kvLocation: Parser<string> = (raw) => {
  if (raw.trim() === "") throw new Error("must be a file path, :memory: or an http(s) URL");
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) httpUrl(raw);
  return raw;
};

/** A secret is never echoed back in an error message. */
const jwtSecret: Parser<string | null> = (raw) => {
  if (raw === "") return null;
  if (new TextEncoder().encode(raw).length < 32) {
    throw new Error("must be at least 32 bytes long (HS256 needs a 256-bit key)");
  }
  return raw;
};

/** A host name or an IP address to connect to. */
const hostName: Parser<string> = (raw) => {
  const host = raw.trim();
  if (!/^[A-Za-z0-9.:_-]+$/.test(host) && !/^\[[0-9A-Fa-f:.]+\]$/.test(host)) {
    throw new Error(`must be a host name or an IP address, got ${JSON.stringify(raw)}`);
  }
  return host.replace(/^\[(.*)\]$/, "$1");
};

/** A secret: never echoed back in an error message; empty means unset. */
const secret: Parser<string | null> = (raw) => {
  if (/[\r\n]/.test(raw)) throw new Error("must be one line");
  return raw === "" ? null : raw;
};

/**
 * A static bearer token: at least 32 characters (it never expires: it must not be guessable), all
 * visible ASCII (it travels in `Authorization: Bearer <token>`); never echoed back. Empty: unset.
 */
const bearerSecret: Parser<string | null> = (raw) => {
  if (raw === "") return null;
  if (!/^[\x21-\x7e]+$/.test(raw)) throw new Error("must be visible ASCII characters, no space");
  if (raw.length < 32) throw new Error("must be at least 32 characters long");
  return raw;
};

/** Origins separated by commas (`https://crm.example.com`, `http://localhost:3000`), or `*`. */
const originList: Parser<string[]> = (raw) => {
  const origins = raw.split(",").map((origin) => origin.trim()).filter((origin) => origin);
  if (origins.includes("*")) {
    if (origins.length > 1) throw new Error("must be * alone or a list of origins");
    return ["*"];
  }
  for (const origin of origins) {
    let url: URL | null = null;
    try {
      url = new URL(origin);
    } catch { /* refused below */ }
    if (
      !url || (url.protocol !== "http:" && url.protocol !== "https:") || url.origin !== origin
    ) {
      throw new Error(
        `must list origins like https://crm.example.com separated by commas, got ${
          JSON.stringify(origin)
        }`,
      );
    }
  }
  return origins;
};

/** `host:port` or `:port` (all addresses), e.g. `127.0.0.1:9497`; empty means none. */
const listenAddress: Parser<{ hostname: string; port: number } | null> = (raw) => {
  if (raw.trim() === "") return null;
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\[\]]*)):(\d+)$/.exec(raw.trim());
  const port = Number(match?.[3]);
  if (!match || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`must be host:port or :port, got ${JSON.stringify(raw)}`);
  }
  return { hostname: match[1] ?? (match[2] || "0.0.0.0"), port };
};

/** IP addresses separated by commas (no host names: a client address never matches one). */
const addressList: Parser<string[]> = (raw) => {
  const addresses = raw.split(",").map((address) => address.trim()).filter((address) => address);
  const bad = addresses.find((address) => canonicalAddress(address) === null);
  if (bad !== undefined) {
    throw new Error(`must list IP addresses separated by commas, got ${JSON.stringify(bad)}`);
  }
  return addresses;
};

/** `<start>-<end>`: digits of the same length, `start` not above `end` (e.g. `4100-4199`). */
const numberRange: Parser<NumberRangeSetting> = (raw) => {
  const match = /^\s*(\d{1,16})\s*-\s*(\d{1,16})\s*$/.exec(raw);
  if (!match || match[1]!.length !== match[2]!.length || Number(match[1]) > Number(match[2])) {
    throw new Error(
      `must be <start>-<end>, digits of the same length, start not above end, got ${
        JSON.stringify(raw)
      }`,
    );
  }
  return { start: match[1]!, end: match[2]! };
};

/** A context's name (as `/1.1/contexts` takes it). */
const contextName: Parser<string> = (raw) => {
  if (!/^[a-zA-Z0-9_-]{1,39}$/.test(raw)) {
    throw new Error(`must be a context name (letters, digits, - or _), got ${JSON.stringify(raw)}`);
  }
  return raw;
};

/** A host name, as a Jitsi domain (no scheme, no path); empty means none. */
const domainName: Parser<string | null> = (raw) => {
  if (raw === "") return null;
  if (!/^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$/.test(raw)) {
    throw new Error(`must be a host name, without scheme nor path, got ${JSON.stringify(raw)}`);
  }
  return raw;
};

/** An integer, or the number of cores this process may use when empty. */
function integerOrCores(min: number, max: number): Parser<number> {
  const parse = integer(min, max);
  return (raw) =>
    raw.trim() === "" ? Math.min(max, Math.max(min, navigator.hardwareConcurrency)) : parse(raw);
}

/** `default[,queue=value…]` (see `perQueueSetting`), each value read by `parse`. */
const perQueue = <T>(fallback: string, parse: Parser<T>): Parser<PerQueue<T>> => (raw) =>
  perQueueSetting(raw, fallback, parse);

export const DEMO_KV = "./data/demo.kv";

const settings = {
  SVC_PORT: { default: "8090", parse: integer(0, 65535), key: "port" },
  SVC_HOSTNAME: { default: "0.0.0.0", parse: text, key: "hostname" },
  SVC_KV: { default: "./data/svc.kv", parse: kvLocation, key: "kv" },
  SVC_ADMIN_LOGIN: { default: "", parse: optional, key: "adminLogin" },
  SVC_ADMIN_PASSWORD: { default: "", parse: optional, key: "adminPassword" },
  SVC_TOKEN_TTL: { default: "7200", parse: integer(1, 31_536_000), key: "tokenTtl" },
  SVC_JWT_SECRET: { default: "", parse: jwtSecret, key: "jwtSecret" },
  SVC_EVENT_URL: { default: "", parse: httpUrl, key: "eventUrl" },
  SVC_EVENT_SECRET: { default: "", parse: optional, key: "eventSecret" },
  SVC_EVENT_RETENTION: { default: "3600", parse: integer(0, 604_800), key: "eventRetention" },
  SVC_SHEET_URL: { default: "", parse: optional, key: "sheetUrl" },
  SVC_CALL_HISTORY_RETENTION_DAYS: {
    default: "365",
    parse: integer(1, 36_500),
    key: "callHistoryRetentionDays",
  },
  SVC_DEPRECATED_API_HOST: { default: "", parse: addressList, key: "deprecatedApiHosts" },
  SVC_TRUST_PROXY: { default: "false", parse: boolean, key: "trustProxy" },
  SVC_PLATFORM: { default: "sim", parse: oneOf("sim", "asterisk"), key: "platform" },
  SVC_SIM_ANSWER_MS: { default: "1000", parse: integer(0, 3_600_000), key: "simAnswerMs" },
  SVC_SIM_TALK_MS: { default: "5000", parse: integer(0, 86_400_000), key: "simTalkMs" },
  SVC_DEMO: { default: "false", parse: boolean, key: "demo" },
  SVC_LOG_LEVEL: {
    default: "info",
    parse: oneOf<LogLevel>("debug", "info", "warn", "error"),
    key: "logLevel",
  },
  SVC_MAX_CONTACTS: { default: "10000", parse: integer(1, 1_000_000), key: "maxContacts" },
  SVC_OIDC_ISSUER: { default: "", parse: httpUrl, key: "oidcIssuer" },
  SVC_OIDC_AUDIENCE: { default: "", parse: optional, key: "oidcAudience" },
  SVC_OIDC_LOGIN_CLAIM: { default: "preferred_username", parse: text, key: "oidcLoginClaim" },
  SVC_CAS_URL: { default: "", parse: httpUrl, key: "casUrl" },
  SVC_KRB5_KEYTAB: { default: "", parse: optional, key: "krb5Keytab" },
  SVC_TLS_CERT: { default: "", parse: optional, key: "tlsCert" },
  SVC_TLS_KEY: { default: "", parse: optional, key: "tlsKey" },
  SVC_AMI_HOST: { default: "127.0.0.1", parse: hostName, key: "amiHost" },
  SVC_AMI_PORT: { default: "5038", parse: integer(1, 65535), key: "amiPort" },
  SVC_AMI_USERNAME: { default: "", parse: optional, key: "amiUsername" },
  SVC_AMI_SECRET: { default: "", parse: secret, key: "amiSecret" },
  SVC_AMI_KEEPALIVE_MS: { default: "4000", parse: integer(100, 600_000), key: "amiKeepaliveMs" },
  SVC_AMI_TIMEOUT_MS: { default: "5000", parse: integer(100, 600_000), key: "amiTimeoutMs" },
  SVC_ASTERISK_CONFIG_DIR: { default: "", parse: optional, key: "asteriskConfigDir" },
  SVC_ASTERISK_RECORDINGS_DIR: { default: "", parse: optional, key: "asteriskRecordingsDir" },
  SVC_ASTERISK_SERVERS: { default: "", parse: optional, key: "asteriskServers" },
  SVC_CORS_ORIGINS: { default: "", parse: originList, key: "corsOrigins" },
  SVC_XUC_PATHS: { default: "false", parse: boolean, key: "xucPaths" },
  SVC_EXTRA_LISTEN: { default: "", parse: listenAddress, key: "extraListen" },
  SVC_CTI_MAX_PER_USER: { default: "10", parse: integer(1, 10_000), key: "ctiMaxPerUser" },
  SVC_CTI_SEND_BUFFER: {
    default: "1048576",
    parse: integer(1024, 1_073_741_824),
    key: "ctiSendBuffer",
  },
  SVC_METRICS_TOKEN: { default: "", parse: bearerSecret, key: "metricsToken" },
  SVC_HASH_CONCURRENCY: { default: "", parse: integerOrCores(1, 256), key: "hashConcurrency" },
  SVC_HASH_ITERATIONS: {
    default: "600000",
    parse: integer(100_000, 100_000_000),
    key: "hashIterations",
  },
  SVC_SUPERVISION_TIMEZONE: {
    default: "UTC",
    parse: perQueue("UTC", timeZone),
    key: "supervisionTimeZone",
  },
  SVC_SUPERVISION_SERVICE_LEVEL: {
    default: "20",
    parse: perQueue("20", integer(1, 3600)),
    key: "supervisionServiceLevel",
  },
  SVC_SUPERVISION_SHORT_ABANDON: {
    default: "5",
    parse: integer(0, 3600),
    key: "supervisionShortAbandon",
  },
  SVC_SUPERVISION_RETENTION_DAYS: {
    default: "35",
    parse: integer(1, 3660),
    key: "supervisionRetentionDays",
  },
  SVC_MEETINGROOM_CONTEXT: { default: "default", parse: contextName, key: "meetingRoomContext" },
  SVC_MEETINGROOM_PERSONAL_RANGE: {
    default: "4100-4199",
    parse: numberRange,
    key: "personalRoomRange",
  },
  SVC_MEETINGROOM_TEMPORARY_RANGE: {
    default: "4200-4299",
    parse: numberRange,
    key: "temporaryRoomRange",
  },
  SVC_JITSI_DOMAIN: { default: "", parse: domainName, key: "jitsiDomain" },
  SVC_JITSI_APP_ID: { default: "", parse: optional, key: "jitsiAppId" },
  SVC_JITSI_SECRET: { default: "", parse: secret, key: "jitsiSecret" },
  SVC_JITSI_TOKEN_TTL: { default: "3600", parse: integer(60, 604_800), key: "jitsiTokenTtl" },
} as const satisfies Record<string, { default: string; parse: Parser<unknown>; key: keyof Config }>;

/** The names of every setting, in the order of the README's table. */
export const settingNames = Object.keys(settings) as (keyof typeof settings)[];

/** Reads the JSON file named by `SVC_CONFIG`: an object whose keys are setting names. */
function readConfigFile(path: string, readTextFile: (path: string) => string) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readTextFile(path));
  } catch (error) {
    const reason = error instanceof SyntaxError ? "is not valid JSON" : "cannot be read";
    throw new ConfigError("SVC_CONFIG", `${JSON.stringify(path)} ${reason}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new ConfigError("SVC_CONFIG", `${JSON.stringify(path)} must hold a JSON object`);
  }
  const values: Record<string, string> = {};
  for (const [name, value] of Object.entries(parsed)) {
    if (!(name in settings)) {
      throw new ConfigError("SVC_CONFIG", `unknown setting ${JSON.stringify(name)} in ${path}`);
    }
    if (Array.isArray(value) && value.every((item) => typeof item === "string")) {
      values[name] = value.join(",");
    } else if (["string", "number", "boolean"].includes(typeof value)) {
      values[name] = String(value);
    } else {
      throw new ConfigError(name, `must be a string, number or boolean in ${path}`);
    }
  }
  return values;
}

/** The demo keeps its records apart from a real store unless told otherwise. */
function defaultValue(name: keyof typeof settings, demoSetting: string | undefined): string {
  if (name !== "SVC_KV") return settings[name].default;
  try {
    return boolean(demoSetting ?? "false") ? DEMO_KV : settings.SVC_KV.default;
  } catch {
    return settings.SVC_KV.default; // SVC_DEMO itself is reported when its turn comes
  }
}

/**
 * Builds the configuration from an environment, throwing a {@link ConfigError} for the first bad
 * value.
 *
 * @example
 * const config = loadConfig({ SVC_KV: ":memory:" });
 */
export function loadConfig(
  env: Record<string, string | undefined>,
  readTextFile: (path: string) => string = Deno.readTextFileSync,
): Config {
  const file = env.SVC_CONFIG ? readConfigFile(env.SVC_CONFIG, readTextFile) : {};
  const config: Record<string, unknown> = {};
  for (const name of settingNames) {
    const setting = settings[name];
    const raw = env[name] ?? file[name] ?? defaultValue(name, env.SVC_DEMO ?? file.SVC_DEMO);
    try {
      config[setting.key] = setting.parse(raw);
    } catch (error) {
      throw new ConfigError(name, (error as Error).message);
    }
  }
  const result = config as unknown as Config;
  result.logToConsole = env.OTEL_DENO === "true";
  if ((result.adminLogin === null) !== (result.adminPassword === null)) {
    throw new ConfigError(
      result.adminLogin === null ? "SVC_ADMIN_LOGIN" : "SVC_ADMIN_PASSWORD",
      "SVC_ADMIN_LOGIN and SVC_ADMIN_PASSWORD must be set together",
    );
  }
  if ((result.tlsCert === null) !== (result.tlsKey === null)) {
    throw new ConfigError(
      result.tlsCert === null ? "SVC_TLS_CERT" : "SVC_TLS_KEY",
      "SVC_TLS_CERT and SVC_TLS_KEY must be set together",
    );
  }
  const jitsi = [result.jitsiDomain, result.jitsiAppId, result.jitsiSecret];
  if (jitsi.some((value) => value !== null) && jitsi.some((value) => value === null)) {
    throw new ConfigError(
      result.jitsiDomain === null
        ? "SVC_JITSI_DOMAIN"
        : result.jitsiAppId === null
        ? "SVC_JITSI_APP_ID"
        : "SVC_JITSI_SECRET",
      "SVC_JITSI_DOMAIN, SVC_JITSI_APP_ID and SVC_JITSI_SECRET must be set together",
    );
  }
  if (result.jitsiSecret !== null && new TextEncoder().encode(result.jitsiSecret).length < 32) {
    throw new ConfigError("SVC_JITSI_SECRET", "must be at least 32 bytes long (HS256)");
  }
  const { personalRoomRange: personal, temporaryRoomRange: temporary } = result;
  if (
    personal.start.length === temporary.start.length &&
    Number(personal.start) <= Number(temporary.end) &&
    Number(temporary.start) <= Number(personal.end)
  ) {
    throw new ConfigError(
      "SVC_MEETINGROOM_TEMPORARY_RANGE",
      "must not overlap SVC_MEETINGROOM_PERSONAL_RANGE",
    );
  }
  if (result.asteriskServers !== null && result.platform !== "asterisk") {
    throw new ConfigError("SVC_ASTERISK_SERVERS", "needs SVC_PLATFORM=asterisk");
  }
  if (result.platform === "asterisk" && result.asteriskServers === null) {
    for (
      const [setting, value] of [
        ["SVC_AMI_USERNAME", result.amiUsername],
        ["SVC_AMI_SECRET", result.amiSecret],
        ["SVC_ASTERISK_CONFIG_DIR", result.asteriskConfigDir],
      ] as const
    ) {
      if (value === null) throw new ConfigError(setting, "must be set with SVC_PLATFORM=asterisk");
    }
  }
  return result;
}

/**
 * Several Asterisk servers behind one svc (docs/asterisk.md, "Several servers"): the file named by
 * `SVC_ASTERISK_SERVERS`, a JSON array of servers, each with its AMI account, the directory its
 * files go to and the SIP address the other servers' trunks reach it at. The first server is the
 * main one: lines placed nowhere else, queues and meeting rooms are there.
 */

/** One Asterisk server of the file. */
export interface AsteriskServer {
  /** Its name: lines name it (`registrar`), /ready and the metrics show it. */
  name: string;
  amiHost: string;
  amiPort: number;
  amiUser: string;
  amiSecret: string;
  /** Where svc writes its files (as `SVC_ASTERISK_CONFIG_DIR`). */
  configDir: string;
  /** Where its MixMonitor writes ("" for Asterisk's own directory). */
  recordingsDir: string;
  /** Where the other servers' trunks send SIP (default: the AMI host, port 5060). */
  sipHost: string;
  sipPort: number;
}

/** The name the single-server settings' server has (`SVC_AMI_*` without a servers file). */
export const MAIN_SERVER = "main";

/** A server name: a PJSIP section and a metrics label part (`svc-trunk-<name>`). */
const SERVER_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;
const HOST = /^[A-Za-z0-9.:\[\]-]{1,255}$/;

const FIELDS = new Set([
  "name",
  "amiHost",
  "amiPort",
  "amiUser",
  "amiSecret",
  "configDir",
  "recordingsDir",
  "sipHost",
  "sipPort",
]);

/** A servers file that cannot be used; the message names the server and the field, no secret. */
export class ServersFileError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "ServersFileError";
  }
}

/**
 * The servers a file's text lists, checked: names unique, every field of the right type (the
 * secret is never in a message).
 *
 * @example
 * parseServers('[{"name":"main","amiHost":"127.0.0.1","amiPort":5038,"amiUser":"svc",' +
 *   '"amiSecret":"s","configDir":"/var/lib/svc/main"}]');
 */
export function parseServers(text: string): AsteriskServer[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ServersFileError("is not valid JSON");
  }
  if (!Array.isArray(parsed) || parsed.length === 0) {
    throw new ServersFileError("must hold a non-empty JSON array of servers");
  }
  const names = new Set<string>();
  return parsed.map((item, i) => {
    const at = `server ${i + 1}`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) {
      throw new ServersFileError(`${at} must be an object`);
    }
    const record = item as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (!FIELDS.has(key)) {
        throw new ServersFileError(`${at}: unknown field ${JSON.stringify(key)}`);
      }
    }
    const text = (key: string, optional = false): string => {
      const value = record[key];
      if (value === undefined && optional) return "";
      if (typeof value !== "string" || value === "") {
        throw new ServersFileError(`${at}: ${key} must be a non-empty string`);
      }
      return value;
    };
    const port = (key: string, fallback: number): number => {
      const value = record[key] ?? fallback;
      if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 65535) {
        throw new ServersFileError(`${at}: ${key} must be an integer from 1 to 65535`);
      }
      return value as number;
    };
    const name = text("name");
    if (!SERVER_NAME.test(name)) {
      throw new ServersFileError(
        `${at}: name must be 1 to 32 lowercase letters, digits, - or _, starting with a letter or digit`,
      );
    }
    if (names.has(name)) throw new ServersFileError(`${at}: name ${name} is used twice`);
    names.add(name);
    const amiHost = text("amiHost");
    const sipHost = text("sipHost", true) || amiHost;
    for (const [key, host] of [["amiHost", amiHost], ["sipHost", sipHost]]) {
      if (!HOST.test(host!)) throw new ServersFileError(`${at} (${name}): ${key} is not a host`);
    }
    return {
      name,
      amiHost,
      amiPort: port("amiPort", 5038),
      amiUser: text("amiUser"),
      amiSecret: text("amiSecret"),
      configDir: text("configDir"),
      recordingsDir: text("recordingsDir", true),
      sipHost,
      sipPort: port("sipPort", 5060),
    };
  });
}

/** The servers of the file at `path`; a file that cannot be read says so. */
export async function readServers(path: string): Promise<AsteriskServer[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new ServersFileError(`cannot be read (${(error as Error).name})`);
  }
  return parseServers(text);
}

/**
 * The secret of the trunk between two servers: both files hold it, svc never stores nor logs it.
 * Derived from both servers' AMI secrets (HMAC-SHA256), so each process computes the same one and
 * a new AMI secret gives a new trunk secret.
 */
export async function trunkSecret(a: AsteriskServer, b: AsteriskServer): Promise<string> {
  const [first, second] = a.name < b.name ? [a, b] : [b, a];
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(`${first.amiSecret}\n${second.amiSecret}`),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign(
    "HMAC",
    key,
    encoder.encode(`svc-trunk:${first.name}:${second.name}`),
  );
  return [...new Uint8Array(mac)].map((byte) => byte.toString(16).padStart(2, "0")).join("")
    .slice(0, 40);
}

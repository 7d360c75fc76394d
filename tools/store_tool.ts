/**
 * What `deno task backup` and `deno task restore` share: their arguments, the store location read
 * from the same settings as the server (`SVC_KV`, `SVC_CONFIG`, `SVC_DEMO`), and how they end.
 */
import { resolve } from "node:path";
import { ConfigError, loadConfig } from "../lib/config.ts";
import { BackupError } from "../lib/store/backup.ts";

export interface ToolArguments {
  /** The backup file, absolute: a relative one is taken from where `deno task` was started. */
  file: string;
  force: boolean;
  /** `SVC_KV` as the server reads it (relative to the repository root, as the server's is). */
  location: string;
}

/** Reads `FILE [--force]` and the settings; a mistake stops the tool with its usage. */
export function toolArguments(name: string, args: string[]): ToolArguments {
  const force = args.includes("--force");
  const rest = args.filter((arg) => arg !== "--force");
  if (rest.length !== 1 || rest[0]!.startsWith("-")) {
    console.error(`usage: deno task ${name} FILE [--force]`);
    Deno.exit(2);
  }
  let location: string;
  try {
    location = loadConfig(Deno.env.toObject()).kv;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    stop(name, `invalid configuration: ${error.message}`);
  }
  // `deno task` runs in the repository root; INIT_CWD is where the person typed the command
  const base = Deno.env.get("INIT_CWD") ?? Deno.cwd();
  return { file: resolve(base, rest[0]!), force, location };
}

/** Prints `svc <name>: <message>` on stderr and exits 1. */
export function stop(name: string, message: string): never {
  console.error(`svc ${name}: ${message}`);
  Deno.exit(1);
}

/** Runs `work`, prints its summary as one JSON line, and exits 0; a {@link BackupError} exits 1. */
export async function runTool(name: string, work: () => Promise<unknown>): Promise<void> {
  try {
    console.log(JSON.stringify(await work()));
  } catch (error) {
    if (error instanceof BackupError) stop(name, error.message);
    throw error;
  }
}

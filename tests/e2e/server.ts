/**
 * Starts the real server process (`deno run -A main.ts`) for end-to-end tests. The child gets the
 * caller's environment without any inherited `SVC_*` setting, plus the given settings, and always
 * listens on 127.0.0.1 on a free port (`SVC_PORT=0`); the port is read from the `listening` log
 * line on stderr.
 */

import { readLines } from "../peers/process.ts";

/** The repository root, where `deno.json` and `main.ts` live. */
export const repoRoot = new URL("../../", import.meta.url);

export interface RunningServer {
  /** E.g. `http://127.0.0.1:41234`. */
  baseUrl: string;
  port: number;
  /** Every stderr line so far (JSON log lines); complete once `stop()` resolved. */
  stderrLines: string[];
  /** Every stdout line so far (the demo banner); complete once `stop()` resolved. */
  stdoutLines: string[];
  /** Waits for a line of `stream` matching `predicate` (lines already read count) and answers it. */
  waitForLine(
    stream: "stdout" | "stderr",
    predicate: (line: string) => boolean,
    timeoutMs?: number,
  ): Promise<string>;
  /**
   * Sends SIGTERM (once; SIGKILL after 10 s), waits for the exit and for both streams to be read to
   * their end.
   */
  stop(): Promise<Deno.CommandStatus>;
  /** Sends SIGKILL (a crash: nothing runs on the way out) and waits as `stop()` does. */
  kill(): Promise<Deno.CommandStatus>;
}

export interface ExitedServer {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `fn` with a fresh temporary folder (store files, certificates), removed afterwards. */
export async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "svc-e2e-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The child's environment: ours without `SVC_*`, then `env`. */
function childEnv(env: Record<string, string>): Record<string, string> {
  const inherited = Object.entries(Deno.env.toObject()).filter(([name]) =>
    !name.startsWith("SVC_")
  );
  return { ...Object.fromEntries(inherited), ...env };
}

/** How the server is started by default: the sources, with the repository's deno.json. */
const SOURCES = ["run", "--quiet", "-A", "main.ts"];

function command(env: Record<string, string>, args = SOURCES, cwd: string | URL = repoRoot) {
  return new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    env: childEnv(env),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
}

/** The port of a `{"msg":"listening","port":N}` log line, else null. */
function listeningPort(line: string): number | null {
  try {
    const entry = JSON.parse(line);
    return entry?.msg === "listening" && Number.isInteger(entry.port) ? entry.port : null;
  } catch {
    return null;
  }
}

/**
 * Starts the server with `env` (plus `SVC_HOSTNAME=127.0.0.1` and `SVC_PORT=0`) and resolves once
 * it listens. Rejects, after reaping the process, when it exits first or does not listen within
 * `timeoutMs`.
 *
 * @example
 * const server = await startServer({ SVC_KV: `${dir}/svc.kv` });
 * try { await fetch(`${server.baseUrl}/health`).then((r) => r.body?.cancel()); }
 * finally { await server.stop(); }
 */
export async function startServer(
  env: Record<string, string>,
  { timeoutMs = 15_000, args = SOURCES, cwd = repoRoot }: {
    timeoutMs?: number;
    /** The deno arguments that run the server, from `cwd`. */
    args?: string[];
    /** The folder it runs in; the repository root by default. */
    cwd?: string | URL;
  } = {},
): Promise<RunningServer> {
  const child = command({ ...env, SVC_HOSTNAME: "127.0.0.1", SVC_PORT: "0" }, args, cwd).spawn();
  const lines = { stdout: [] as string[], stderr: [] as string[] };
  const watchers = new Set<{ stream: "stdout" | "stderr"; test: (line: string) => void }>();
  const onLine = (stream: "stdout" | "stderr") => (line: string) => {
    lines[stream].push(line);
    for (const watcher of watchers) if (watcher.stream === stream) watcher.test(line);
  };
  const reading = Promise.all([
    readLines(child.stdout, onLine("stdout")),
    readLines(child.stderr, onLine("stderr")),
  ]);
  let exited = false;
  const status = child.status.finally(() => (exited = true));
  const kill = (signal: Deno.Signal) => {
    if (exited) return;
    try {
      child.kill(signal);
    } catch {
      // it exited meanwhile
    }
  };

  function waitForLine(
    stream: "stdout" | "stderr",
    predicate: (line: string) => boolean,
    timeoutMs = 5_000,
  ): Promise<string> {
    const seen = lines[stream].find(predicate);
    if (seen !== undefined) return Promise.resolve(seen);
    const { promise, resolve, reject } = Promise.withResolvers<string>();
    const watcher = {
      stream,
      test: (line: string) => {
        if (predicate(line)) resolve(line);
      },
    };
    watchers.add(watcher);
    const timer = setTimeout(
      () => reject(new Error(`no matching ${stream} line within ${timeoutMs} ms`)),
      timeoutMs,
    );
    reading.then(
      () => reject(new Error(`${stream} ended without a matching line`)),
      (error) => reject(error),
    );
    return promise.finally(() => {
      clearTimeout(timer);
      watchers.delete(watcher);
    });
  }

  let stopping: Promise<Deno.CommandStatus> | null = null;
  function stop(): Promise<Deno.CommandStatus> {
    stopping ??= (async () => {
      kill("SIGTERM");
      const stubborn = setTimeout(() => kill("SIGKILL"), 10_000); // a shutdown that hangs
      try {
        const result = await status;
        await reading;
        return result;
      } finally {
        clearTimeout(stubborn);
      }
    })();
    return stopping;
  }

  async function crash(): Promise<Deno.CommandStatus> {
    kill("SIGKILL");
    const result = await status;
    await reading;
    return result;
  }

  let port: number;
  try {
    port = await waitForLine(
      "stderr",
      (line) => listeningPort(line) !== null,
      timeoutMs,
    ).then((line) => listeningPort(line)!);
  } catch (error) {
    kill("SIGKILL");
    const { code } = await status;
    await reading;
    throw new Error(
      `the server did not start (${(error as Error).message}, exit code ${code}):\n` +
        lines.stderr.join("\n"),
    );
  }
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    port,
    stderrLines: lines.stderr,
    stdoutLines: lines.stdout,
    waitForLine,
    stop,
    kill: crash,
  };
}

/**
 * Runs the server with `env` expecting it to exit by itself (e.g. on a bad configuration); kills it
 * after `timeoutMs` if it does not. `SVC_HOSTNAME=127.0.0.1` and `SVC_PORT=0` are defaults `env`
 * may override.
 */
export async function runServerToExit(
  env: Record<string, string>,
  { timeoutMs = 15_000, args = SOURCES }: { timeoutMs?: number; args?: string[] } = {},
): Promise<ExitedServer> {
  const child = command({ SVC_HOSTNAME: "127.0.0.1", SVC_PORT: "0", ...env }, args).spawn();
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }, timeoutMs);
  try {
    const output = await child.output();
    const decoder = new TextDecoder();
    return {
      code: output.code,
      stdout: decoder.decode(output.stdout),
      stderr: decoder.decode(output.stderr),
    };
  } finally {
    clearTimeout(timer);
  }
}

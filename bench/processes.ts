/**
 * What every part of `deno task bench` uses to run processes: the error that stops the bench,
 * the interrupt (SIGINT, SIGTERM), free ports, `deno` children stopped with their stack, readiness
 * polls, the real server with an administrator's token, and a process's resident set size.
 */
import { fileURLToPath } from "node:url";

/** A failure that stops the bench with its message alone. */
export class BenchError extends Error {}

/** Aborted on SIGINT or SIGTERM: what runs stops, and every server is stopped on the way out. */
export const interrupt = new AbortController();
/** A signal aborted after `ms`, or on an interrupt. */
export const bounded = (ms: number) => AbortSignal.any([AbortSignal.timeout(ms), interrupt.signal]);

/** The repository root, where every child runs. */
export const root = fileURLToPath(new URL("..", import.meta.url));

export const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs a command to its end within `timeoutMs`; a failure or a timeout throws. */
export async function run(
  cmd: string,
  args: string[],
  timeoutMs: number,
  options: { env?: Record<string, string>; capture?: boolean } = {},
): Promise<string> {
  const signal = bounded(timeoutMs);
  const output = await new Deno.Command(cmd, {
    args,
    env: options.env,
    cwd: root,
    stdin: "null",
    stdout: options.capture ? "piped" : "inherit",
    stderr: "inherit",
    signal,
  }).output();
  const line = [cmd, ...args].join(" ");
  if (interrupt.signal.aborted) throw new BenchError("interrupted");
  if (signal.aborted) throw new BenchError(`${line}: no answer within ${timeoutMs / 1000}s`);
  if (!output.success) throw new BenchError(`${line}: exited with ${output.code}`);
  return options.capture ? new TextDecoder().decode(output.stdout) : "";
}

export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

/** A `deno` child started by {@link startDeno}. */
export interface DenoChild {
  hasExited(): boolean;
  pid: number;
  child: Deno.ChildProcess;
  /** `performance.now()` just before the spawn. */
  spawnedAt: number;
}

/**
 * Starts `deno <args>` in the repository; `stack` stops it (SIGTERM, then SIGKILL after 5s). With
 * `manyFiles`, through bash raising its open files limit to the hard limit first (`ulimit -n`), for
 * a process holding thousands of sockets; with `pipes`, its stdin and stdout are piped; with
 * `quiet`, what it writes to stderr (its log) is dropped.
 */
export function startDeno(
  stack: AsyncDisposableStack,
  args: string[],
  env: Record<string, string> = {},
  options: { manyFiles?: boolean; pipes?: boolean; quiet?: boolean } = {},
): DenoChild {
  const [cmd, cmdArgs] = options.manyFiles
    ? ["bash", ["-c", 'ulimit -n "$(ulimit -Hn)" && exec "$@"', "bash", Deno.execPath(), ...args]]
    : [Deno.execPath(), args];
  const spawnedAt = performance.now();
  const child = new Deno.Command(cmd, {
    args: cmdArgs,
    cwd: root,
    env,
    stdin: options.pipes ? "piped" : "null",
    stdout: options.pipes ? "piped" : "null",
    stderr: options.quiet ? "null" : "inherit",
  }).spawn();
  let exited = false;
  child.status.then(() => (exited = true));
  const kill = (signal: Deno.Signal) => {
    try {
      child.kill(signal);
    } catch {
      // it has already stopped
    }
  };
  stack.defer(async () => {
    kill("SIGTERM");
    const timer = setTimeout(() => kill("SIGKILL"), 5000);
    await child.status;
    clearTimeout(timer);
  });
  return { hasExited: () => exited, pid: child.pid, child, spawnedAt };
}

/**
 * Waits until `url` answers 2xx, at most 30s, asking every `everyMs`; fails early if the server
 * has stopped. Answers `performance.now()` when the 2xx came.
 */
export async function waitReady(
  url: string,
  server: { hasExited(): boolean },
  everyMs = 100,
): Promise<number> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (interrupt.signal.aborted) throw new BenchError("interrupted");
    if (server.hasExited()) throw new BenchError(`the server behind ${url} stopped`);
    try {
      const response = await fetch(url, { signal: bounded(1000) });
      await response.body?.cancel();
      if (response.ok) return performance.now();
    } catch {
      // not listening yet
    }
    await pause(everyMs);
  }
  throw new BenchError(`${url} did not answer within 30s`);
}

/** The resident set size of process `pid` (`VmRSS` of `/proc/<pid>/status`), in KiB. */
export async function rssKb(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = status.match(/^VmRSS:\s+(\d+) kB$/m)?.[1];
  if (!kb) throw new BenchError(`no VmRSS in /proc/${pid}/status`);
  return Number(kb);
}

/** The administrator every bench server is started with. */
export const admin = { login: "bench-admin", password: "bench-admin-password" };

/** A real server started by {@link startSvcProcess}. */
export interface SvcProcess {
  /** Its base URL. */
  svc: string;
  /** A token of the administrator web service user. */
  adminToken: string;
  pid: number;
}

/**
 * Starts the real server (`main.ts`, or the `args` given) with `env` on a free port, and answers
 * it once `readyPath` answers, with an administrator's token. With `inspector`, `main.ts` runs with
 * its inspector on that port (`bench/profile.ts`).
 */
export async function startSvcProcess(
  stack: AsyncDisposableStack,
  env: Record<string, string>,
  { readyPath = "/health", manyFiles = false, args = null as string[] | null, inspector = 0 } = {},
): Promise<SvcProcess> {
  const port = freePort();
  const svc = `http://127.0.0.1:${port}`;
  const inspect = inspector ? [`--inspect=127.0.0.1:${inspector}`] : [];
  // V8's `gc` as `deno task start` and deploy/svc.service give it: the collection once idle
  // (lib/idle_gc.ts) is part of what the server's memory is
  // (BENCH_V8 adds flags to it, e.g. `,--min-semi-space-size=16`: bench/README.md)
  const v8 = `--v8-flags=--expose-gc${Deno.env.get("BENCH_V8") ?? ""}`;
  const run = ["run", "--allow-all", v8, ...inspect, "main.ts"];
  const server = startDeno(stack, args ?? run, {
    SVC_PORT: `${port}`,
    SVC_HOSTNAME: "127.0.0.1",
    SVC_LOG_LEVEL: "warn",
    SVC_ADMIN_LOGIN: admin.login,
    SVC_ADMIN_PASSWORD: admin.password,
    ...env,
  }, { manyFiles });
  await waitReady(`${svc}${readyPath}`, server);
  const response = await fetch(`${svc}/svc/api/2.0/auth/webservice`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(admin),
    signal: bounded(10_000),
  });
  if (!response.ok) {
    throw new BenchError(`admin login: ${response.status} ${await response.text()}`);
  }
  const { token } = await response.json();
  return { svc, adminToken: token, pid: server.pid };
}

/** Calls `svc` with `token`; a non-2xx answer stops the bench. Answers the body's text. */
export async function callSvc(
  svc: string,
  token: string,
  method: string,
  path: string,
  body?: string,
  type = "application/json",
): Promise<string> {
  const response = await fetch(`${svc}${path}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, "Content-Type": type },
    body,
    signal: bounded(300_000),
  });
  const text = await response.text();
  if (!response.ok) {
    throw new BenchError(`${method} ${path}: ${response.status} ${text.slice(0, 500)}`);
  }
  return text;
}

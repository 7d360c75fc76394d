/**
 * What the long-running test peers started as child processes share (the Asterisk PBX, the baresip
 * phones): a process whose output is kept and which is stopped by its PID, runs of free ports, and
 * finding a program on PATH.
 */
import { freePort, readLines } from "./process.ts";

/** A process of ours: its last output lines, and a stop that always reaps it. */
export interface PeerProcess {
  name: string;
  pid: number;
  /** Its last 300 lines of stdout and stderr, interleaved. */
  output: string[];
  status: Promise<Deno.CommandStatus>;
  /** True once it exited. */
  readonly exited: boolean;
  /**
   * SIGTERM to its PID, a second one after 3 s (baresip then stops without waiting for its
   * un-registration to be answered), SIGKILL after 6 s; resolves once it exited and its output was
   * read to the end. Calling it again answers the same promise.
   */
  stop(): Promise<void>;
}

/**
 * Starts `program` with `args` in `cwd`, stdin closed, both output streams read (a full pipe would
 * block it). `cwd` should be the peer's own directory: a peer that dumps core must not leave the
 * core file in the repository.
 */
export function spawnPeer(
  name: string,
  program: string,
  args: string[],
  { cwd, env = {} }: { cwd: string; env?: Record<string, string> },
): PeerProcess {
  const child = new Deno.Command(program, {
    args,
    cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output: string[] = [];
  const keep = (line: string) => {
    output.push(line);
    if (output.length > 300) output.shift();
  };
  const reading = Promise.all([readLines(child.stdout, keep), readLines(child.stderr, keep)]);
  let exited = false;
  const status = child.status.finally(() => (exited = true));
  const signal = (sig: Deno.Signal) => {
    if (exited) return;
    try {
      child.kill(sig);
    } catch {
      // gone meanwhile
    }
  };
  let stopping: Promise<void> | undefined;
  return {
    name,
    pid: child.pid,
    output,
    status,
    get exited() {
      return exited;
    },
    stop() {
      stopping ??= (async () => {
        signal("SIGTERM");
        const again = setTimeout(() => signal("SIGTERM"), 3_000);
        const stubborn = setTimeout(() => signal("SIGKILL"), 6_000);
        try {
          await status;
          await reading;
        } finally {
          clearTimeout(again);
          clearTimeout(stubborn);
        }
      })();
      return stopping;
    },
  };
}

/** The ports `reservePorts` handed out in this process: never twice. */
const handedOut = new Set<number>();

/**
 * The first of `count` consecutive TCP ports on 127.0.0.1 that were free a moment ago and that no
 * earlier call handed out (a peer that has not started yet does not hold its ports). UDP peers
 * (SIP) get them too: a port free in TCP is nearly always free in UDP.
 */
export function reservePorts(count = 1): number {
  for (;;) {
    const base = freePort();
    const run = Array.from({ length: count }, (_, i) => base + i);
    if (base + count > 65536 || run.some((port) => handedOut.has(port))) continue;
    const held: Deno.Listener[] = [];
    try {
      for (const port of run.slice(1)) held.push(Deno.listen({ hostname: "127.0.0.1", port }));
    } catch {
      continue; // one is taken: another run
    } finally {
      for (const listener of held) listener.close();
    }
    for (const port of run) handedOut.add(port);
    return base;
  }
}

/** True when `path` is a file (following links). */
export function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/** An executable `name` in a PATH directory, or null. */
export function onPath(name: string): string | null {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (!dir) continue;
    const path = `${dir}/${name}`;
    try {
      const info = Deno.statSync(path);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return path;
    } catch {
      // not there
    }
  }
  return null;
}

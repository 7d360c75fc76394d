/**
 * CPU profiles of a server under load, through the V8 inspector of a process started with
 * `--inspect=127.0.0.1:<port>`: `BENCH_PROFILE=1 deno task bench http` profiles the real server
 * during each wrk scenario and prints where its time went (the flame summary of bench/README.md).
 *
 * The summary gives, for the busiest functions, the share of samples spent in the function itself
 * (self) and in it or anything it called (total), and the self time per source (a package of
 * node_modules, a file of the repository, or V8's `(garbage collector)`, `(program)` — native
 * work such as Deno's HTTP server — and `(idle)`).
 */
import { BenchError, bounded, pause } from "./processes.ts";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The `Profiler.stop` answer of the inspector protocol. */
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
}

/** A connection to a process's inspector, one command at a time. */
class Inspector {
  #next = 1;
  readonly #pending = new Map<number, PromiseWithResolvers<Record<string, unknown>>>();

  private constructor(private readonly socket: WebSocket) {
    socket.onmessage = (event) => {
      const message = JSON.parse(event.data as string);
      const waiting = this.#pending.get(message.id);
      if (!waiting) return; // an event, not an answer
      this.#pending.delete(message.id);
      if (message.error) waiting.reject(new BenchError(JSON.stringify(message.error)));
      else waiting.resolve(message.result);
    };
  }

  /** Connects to the first target of the inspector at `port` (waits for it, 10 s at most). */
  static async connect(port: number): Promise<Inspector> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/json/list`, {
          signal: bounded(1000),
        });
        const [target] = await response.json();
        const socket = new WebSocket(target.webSocketDebuggerUrl);
        await new Promise((resolve, reject) => {
          socket.onopen = resolve;
          socket.onerror = () => reject(new BenchError("cannot open the inspector's socket"));
        });
        return new Inspector(socket);
      } catch (error) {
        if (Date.now() > deadline) throw new BenchError(`no inspector on ${port}: ${error}`);
        await pause(50);
      }
    }
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const id = this.#next++;
    const answer = Promise.withResolvers<Record<string, unknown>>();
    this.#pending.set(id, answer);
    this.socket.send(JSON.stringify({ id, method, params }));
    return answer.promise;
  }

  close(): void {
    this.socket.close();
  }
}

/**
 * Starts profiling the process whose inspector listens on `port` (samples every 100 µs); the
 * answered function stops it and answers the summary.
 */
export async function startProfile(port: number): Promise<() => Promise<string>> {
  const inspector = await Inspector.connect(port);
  await inspector.send("Profiler.enable");
  await inspector.send("Profiler.setSamplingInterval", { interval: 100 });
  await inspector.send("Profiler.start");
  // a process started with --inspect-wait waits for this; any other ignores it
  await inspector.send("Runtime.runIfWaitingForDebugger");
  return async () => {
    const { profile } = await inspector.send("Profiler.stop");
    await inspector.send("Profiler.disable");
    inspector.close();
    return summarise(profile as unknown as CpuProfile);
  };
}

/** Where a frame's code comes from: an npm package, a repository file, or V8's own name. */
function source({ url, functionName }: CallFrame): string {
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  const npm = url.match(/node_modules\/(?:\.deno\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/);
  if (npm) return `npm:${npm[1]}`;
  const repo = url.match(/\/((?:lib|routes|daemons|legacy)\/.+|main\.ts)$/);
  if (repo) return repo[1]!;
  if (url.startsWith("ext:")) return "deno runtime (ext:)";
  return url.replace(/^.*\//, "");
}

const frameName = (frame: CallFrame) =>
  `${frame.functionName || "(anonymous)"} ${source(frame)}:${frame.lineNumber + 1}`;

/** The top functions by self and total share, then the self share per source. */
export function summarise(profile: CpuProfile, top = 15): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parent.set(child, node.id);
  }
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  const sources = new Map<string, number>();
  let busy = 0;
  for (const sample of profile.samples) {
    const node = byId.get(sample)!;
    const name = frameName(node.callFrame);
    self.set(name, (self.get(name) ?? 0) + 1);
    const from = source(node.callFrame);
    sources.set(from, (sources.get(from) ?? 0) + 1);
    if (node.callFrame.functionName !== "(idle)") busy++;
    const seen = new Set<string>();
    for (let id: number | undefined = sample; id !== undefined; id = parent.get(id)) {
      const frame = byId.get(id)!.callFrame;
      if (frame.functionName === "(root)") continue;
      seen.add(frameName(frame));
    }
    for (const name of seen) total.set(name, (total.get(name) ?? 0) + 1);
  }
  const count = profile.samples.length || 1;
  const share = (n: number) => `${(n / count * 100).toFixed(1).padStart(5)} %`;
  const rank = (map: Map<string, number>) => [...map].sort(([, a], [, b]) => b - a).slice(0, top);
  const lines = [
    `  ${profile.samples.length} samples, ${share(busy).trim()} busy`,
    "  self:",
    ...rank(self).map(([name, n]) => `    ${share(n)}  ${name}`),
    "  total (the function and what it called):",
    ...rank(total).map(([name, n]) => `    ${share(n)}  ${name}`),
    "  self per source:",
    ...rank(sources).map(([name, n]) => `    ${share(n)}  ${name}`),
  ];
  return lines.join("\n");
}

/**
 * Cold start and idle memory (`deno task bench startup`): the bundle of `deno task bundle`, copied
 * to a file name never run before, is started `BENCH_STARTS` + 1 times (the first start compiles
 * it with no V8 code cache, the others use the cache the first one left), each timed from the
 * spawn to the first 200 of `GET /health` (asked every millisecond) and its RSS read 2 s later.
 * Next to it the bare baseline: `bench/hello_server.ts`, copied and started the same way.
 *
 * The server runs as the bundle's users run it: `--no-config`, its store a file (created by the
 * first start, reopened by the others), no administrator set (`SVC_ADMIN_*` hash a password at
 * every start), the default log level.
 */
import { fileURLToPath } from "node:url";
import { freePort, pause, root, rssKb, run, startDeno, waitReady } from "./processes.ts";
import { median, type Row, spread } from "./rows.ts";

/**
 * How the bundle runs (deploy/README.md): without the repository's deno.json, with V8's `gc` for
 * the collection once idle (`lib/idle_gc.ts`).
 */
export const BUNDLE_RUN = [
  "run",
  "--quiet",
  "-A",
  "--no-config",
  "--v8-flags=--expose-gc",
  "--unstable-kv",
  "--unstable-cron",
];

/**
 * Builds the bundle (`deno task bundle`) and copies it to a new file in `dir`: a file Deno has
 * never run, so its first start has no code cache.
 */
export async function freshBundle(dir: string): Promise<string> {
  await run(Deno.execPath(), ["task", "--quiet", "bundle"], 300_000);
  const file = `${dir}/svc-${crypto.randomUUID().slice(0, 8)}.js`;
  await Deno.copyFile(`${root}/dist/svc.js`, file);
  return file;
}

/** One start: ms from the spawn to the first 2xx of `path`, and the RSS (MB) 2 s later. */
async function start(
  args: string[],
  env: Record<string, string>,
  path: string,
): Promise<{ ms: number; rssMb: number }> {
  await using stack = new AsyncDisposableStack();
  const port = freePort();
  // the hello server takes its port as argument, svc from the environment
  // its log written as usual (the default level), but not into the bench's output
  const child = startDeno(stack, [...args, `${port}`], {
    ...env,
    SVC_PORT: `${port}`,
    SVC_HOSTNAME: "127.0.0.1",
  }, { quiet: true });
  const answered = await waitReady(`http://127.0.0.1:${port}${path}`, child, 1);
  await pause(2000);
  return { ms: answered - child.spawnedAt, rssMb: await rssKb(child.pid) * 1024 / 1e6 };
}

/** The first start and `count` more of one program. */
async function starts(count: number, args: string[], env: Record<string, string>, path: string) {
  const first = await start(args, env, path);
  const warm = [];
  for (let n = 0; n < count; n++) warm.push(await start(args, env, path));
  return { first, warm };
}

export async function startupBench(): Promise<Row[]> {
  const count = Number(Deno.env.get("BENCH_STARTS") ?? "5");
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-startup-" });
  try {
    const bundle = await freshBundle(dir);
    const hello = `${dir}/hello-${crypto.randomUUID().slice(0, 8)}.ts`;
    await Deno.copyFile(fileURLToPath(new URL("hello_server.ts", import.meta.url)), hello);
    const bare = await starts(count, [...BUNDLE_RUN, hello], {}, "/");
    const svc = await starts(
      count,
      [...BUNDLE_RUN, bundle],
      { SVC_KV: `${dir}/svc.kv` },
      "/health",
    );
    const helloName = "bare Deno.serve hello";
    const warmMs = svc.warm.map(({ ms }) => ms);
    const warmRss = svc.warm.map(({ rssMb }) => rssMb);
    return [
      {
        name: `bundle cold start to the first GET /health 200 (median of ${count})`,
        value: median(warmMs),
        unit: "ms",
        baseline: { name: helloName, value: median(bare.warm.map(({ ms }) => ms)) },
        target: { text: "< 100 ms", met: median(warmMs) < 100 },
        detail: `${spread(warmMs)} ms`,
      },
      {
        name: "first start of the freshly built bundle (no code cache)",
        value: svc.first.ms,
        unit: "ms",
        baseline: { name: `${helloName}, first start`, value: bare.first.ms },
        target: { text: "< 150 ms", met: svc.first.ms < 150 },
      },
      {
        name: `idle RSS 2 s after start (median of ${count})`,
        value: median(warmRss),
        unit: "MB",
        baseline: { name: helloName, value: median(bare.warm.map(({ rssMb }) => rssMb)) },
        target: { text: "< 60 MB", met: median(warmRss) < 60 },
        detail: `${spread(warmRss, 1)} MB`,
      },
      {
        name: "idle RSS 2 s after the first start",
        value: svc.first.rssMb,
        unit: "MB",
        baseline: { name: `${helloName}, first start`, value: bare.first.rssMb },
        target: { text: "< 60 MB", met: svc.first.rssMb < 60 },
      },
    ];
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

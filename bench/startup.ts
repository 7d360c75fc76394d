/**
 * Cold start and idle memory (`deno task bench startup`): the bundle of `deno task bundle` is
 * copied to {@link FIRST_STARTS} file names never run before and each copy started once (a first
 * start compiles it with no V8 code cache; their median is the row), then the last copy
 * `BENCH_STARTS` more times (using the cache its first start left), each timed from the spawn to
 * the first 200 of `GET /health` (asked every millisecond) and its RSS read 2 s later. Next to it
 * the bare baseline: `bench/hello_server.ts`, copied and started the same way, in turn with svc
 * ({@link startsInTurn}). Targets (issue 28):
 * the cold start ≤ 2.5 × the hello's, the first start ≤ 4 × the hello's first start, the idle RSS
 * ≤ the hello's + 25 MB.
 *
 * Each row's detail also gives the runtime's share ({@link runtimeFloor}): the hello holding the
 * bundle's text unrun, with Deno KV and a cron, started the same way; the first start's, the part
 * of it that is Deno's analysis of a file it has not run ({@link analysisMs}).
 *
 * The server runs as the bundle's users run it: `--no-config`, its store a file (each first start
 * creates one, the later starts reopen the last), no administrator set (`SVC_ADMIN_*` hash a
 * password at every start), the default log level.
 */
import { fileURLToPath } from "node:url";
import { freePort, pause, root, rssKb, run, startDeno, waitReady } from "./processes.ts";
import { median, type Row, spread } from "./rows.ts";
import { copyBundle } from "../tools/finish_bundle.ts";
import { type Node, parse } from "../tools/syntax.ts";

/** The targets of issue 28: the cold start (code cache warm), the first start, against the hello's. */
const WARM_START_RATIO = 2.5;
const FIRST_START_RATIO = 4;
/** The idle RSS may exceed the hello's by this much (MB). */
const RSS_MARGIN_MB = 25;

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
 * Builds the bundle (`deno task bundle`) and copies it to a new folder in `dir` (its entry is
 * returned): files Deno has never run, so its first start has no code cache.
 */
export async function freshBundle(dir: string): Promise<string> {
  await run(Deno.execPath(), ["task", "--quiet", "bundle"], 300_000);
  return await copyBundle(`${root}/dist/svc.js`, `${dir}/svc-${crypto.randomUUID().slice(0, 8)}`);
}

/**
 * The files a start of the bundle reads: its entry and those it imports, and so on (not those
 * it imports by `import()` at their first use, tools/finish_bundle.ts), each without its `import`
 * and `export` statements.
 */
async function filesReadAtStart(entry: string): Promise<string[]> {
  const bodies = new Map<string, string>();
  const pending = [entry];
  while (pending.length) {
    const file = pending.pop()!;
    if (bodies.has(file)) continue;
    const text = await Deno.readTextFile(file);
    let body = "";
    let copied = 0;
    for (const statement of parse(text).body as Node[]) {
      const source = statement.source as Node | null | undefined;
      if (source) pending.push(new URL(source.value as string, `file://${file}`).pathname);
      const declaration = statement.declaration as Node | null | undefined;
      if (statement.type.startsWith("Import") || statement.type.startsWith("Export")) {
        body += text.slice(copied, statement.start);
        copied = declaration ? declaration.start : statement.end;
      }
    }
    bodies.set(file, body + text.slice(copied));
  }
  return [...bodies.values()];
}

/**
 * The runtime's share of the bundle's start (the detail of each row): a hello world holding the
 * text of the bundle's files a start reads ({@link filesReadAtStart}) in functions it never calls,
 * that opens Deno KV on a file (one read) and registers a `Deno.cron` before serving, as svc must.
 * Deno parses every byte of a file it has not run before and V8 keeps the source, so this program
 * pays what svc's size and store cost before svc's own code runs; written next to the bundle.
 */
export async function runtimeFloor(bundle: string, dir: string): Promise<string> {
  const bodies = await filesReadAtStart(bundle);
  const file = `${dir}/floor-${crypto.randomUUID().slice(0, 8)}.js`;
  await Deno.writeTextFile(
    file,
    `const kv = await Deno.openKv(Deno.env.get("SVC_KV"));
await kv.get(["version"]);
Deno.cron("floor", "0 0 1 1 *", () => {});
Deno.serve({ hostname: "127.0.0.1", port: Number(Deno.args[0]), onListen() {} }, () =>
  new Response("Hello, world!"));
// never called: only parsed and held, as svc's code before it runs
${bodies.map((body, n) => `async function neverRun${n}() {\n${body}\n}\n`).join("")}`,
  );
  return file;
}

/**
 * Deno's analysis of the files a start reads (ms, median of `count`): before it runs a new file, Deno
 * parses all of its code (its module graph, kept afterwards in `DENO_DIR`), which a later start
 * reads from that cache. Timed as `deno info` of a fresh copy of `file` less a second `deno info`
 * of the same copy, which finds the analysis kept.
 */
async function analysisMs(entry: string, dir: string, count: number): Promise<number> {
  const timed = async (copy: string) => {
    const started = performance.now();
    await run(Deno.execPath(), ["info", "--quiet", "--no-config", copy], 60_000, { capture: true });
    return performance.now() - started;
  };
  const times = [];
  for (let n = 0; n < count; n++) {
    const copy = await copyBundle(entry, `${dir}/analysed-${crypto.randomUUID().slice(0, 8)}`);
    const fresh = await timed(copy);
    times.push(fresh - await timed(copy));
  }
  return median(times);
}

/** One start: ms from the spawn to the first 2xx of its path, and the RSS (MB) 2 s later. */
interface Started {
  ms: number;
  rssMb: number;
}

/** Starts the program of `args` and times it ({@link Started}). */
async function start(
  args: string[],
  env: Record<string, string>,
  path: string,
): Promise<Started> {
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

/** First starts of each program, each of a copy never run before: one start is too noisy. */
const FIRST_STARTS = 3;

/** A program of the start rows: its file, the store of its nth copy, the path asked until 200. */
interface Program {
  file: string;
  /** The store file of the nth copy (a program without a store ignores it). */
  store: (n: number) => string;
  path: string;
}

/** A program's starts: the first of each copy, their median, the later ones of the last copy. */
interface Run {
  firsts: Started[];
  first: Started;
  warm: Started[];
}

/** The `n`th copy of a program: its file, or the bundle's folder (its entry returned). */
async function copyProgram(file: string, n: number): Promise<string> {
  if (file.endsWith("/svc.js")) return await copyBundle(file, file.replace(/\/svc\.js$/, `-${n}`));
  const copy = file.replace(/(\.[jt]s)$/, `-${n}$1`);
  await Deno.copyFile(file, copy);
  return copy;
}

/**
 * {@link FIRST_STARTS} first starts of each program, each of a new copy with a store of its own,
 * then `count` more of its last copy on that store. The programs start in turn (one start of each,
 * then the next round), not each in a row: the machine drifts between runs (the hello's median
 * read 22.7 and 28.3 ms in two runs of the same commit), and a ratio of starts taken minutes apart
 * measures that drift too.
 */
async function startsInTurn(count: number, programs: Program[]): Promise<Run[]> {
  const runs = programs.map(() => ({
    firsts: [] as Started[],
    warm: [] as Started[],
    copy: "",
  }));
  for (let n = 0; n < FIRST_STARTS; n++) {
    for (const [i, { file, store, path }] of programs.entries()) {
      const copy = await copyProgram(file, n);
      runs[i]!.copy = copy;
      runs[i]!.firsts.push(await start([...BUNDLE_RUN, copy], { SVC_KV: store(n) }, path));
    }
  }
  for (let n = 0; n < count; n++) {
    for (const [i, { store, path }] of programs.entries()) {
      const { copy, warm } = runs[i]!;
      warm.push(await start([...BUNDLE_RUN, copy], { SVC_KV: store(FIRST_STARTS - 1) }, path));
    }
  }
  return runs.map(({ firsts, warm }) => ({
    firsts,
    warm,
    first: {
      ms: median(firsts.map(({ ms }) => ms)),
      rssMb: median(firsts.map(({ rssMb }) => rssMb)),
    },
  }));
}

export async function startupBench(): Promise<Row[]> {
  const count = Number(Deno.env.get("BENCH_STARTS") ?? "5");
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-startup-" });
  try {
    const bundle = await freshBundle(dir);
    const hello = `${dir}/hello-${crypto.randomUUID().slice(0, 8)}.ts`;
    await Deno.copyFile(fileURLToPath(new URL("hello_server.ts", import.meta.url)), hello);
    const floorFile = await runtimeFloor(bundle, dir);
    const [bare, floor, svc] = await startsInTurn(count, [
      { file: hello, store: () => "", path: "/" },
      { file: floorFile, store: (n) => `${dir}/floor-${n}.kv`, path: "/" },
      { file: bundle, store: (n) => `${dir}/svc-${n}.kv`, path: "/health" },
    ]) as [Run, Run, Run];
    const analysis = await analysisMs(bundle, dir, FIRST_STARTS);
    const helloName = "bare Deno.serve hello";
    const warmMs = svc.warm.map(({ ms }) => ms);
    const warmRss = svc.warm.map(({ rssMb }) => rssMb);
    const bareWarmMs = median(bare.warm.map(({ ms }) => ms));
    const bareWarmRss = median(bare.warm.map(({ rssMb }) => rssMb));
    const floorWarmMs = median(floor.warm.map(({ ms }) => ms));
    const floorWarmRss = median(floor.warm.map(({ rssMb }) => rssMb));
    const floorName = "the hello holding the bundle unrun, Deno KV and a cron";
    const share = (svcValue: number, floorValue: number, unit: string) =>
      `; ${floorName}: ${floorValue.toFixed(1)} ${unit} (svc: ${
        unit === "MB"
          ? `${svcValue - floorValue >= 0 ? "+" : ""}${
            (svcValue - floorValue).toFixed(1)
          } MB over it`
          : `${(svcValue / floorValue).toFixed(2)} × it`
      })`;
    // issue 28: the start against the bare hello's, the memory against the hello's plus a margin
    const rssTarget = (svcMb: number, bareMb: number) => ({
      text: `≤ the hello's + ${RSS_MARGIN_MB} MB`,
      met: svcMb <= bareMb + RSS_MARGIN_MB,
    });
    return [
      {
        name:
          `bundle cold start (code cache warm) to the first GET /health 200 (median of ${count})`,
        value: median(warmMs),
        unit: "ms",
        baseline: { name: `${helloName} (median of ${count})`, value: bareWarmMs },
        target: {
          text: `≤ ${WARM_START_RATIO} × the hello's`,
          met: median(warmMs) <= WARM_START_RATIO * bareWarmMs,
        },
        detail: `${spread(warmMs)} ms; the hello ${spread(bare.warm.map(({ ms }) => ms))} ms` +
          share(median(warmMs), floorWarmMs, "ms"),
      },
      {
        name:
          `first start of the freshly built bundle (no code cache; median of ${FIRST_STARTS} copies)`,
        value: svc.first.ms,
        unit: "ms",
        baseline: {
          name: `${helloName}, first start (median of ${FIRST_STARTS} copies)`,
          value: bare.first.ms,
        },
        target: {
          text: `≤ ${FIRST_START_RATIO} × the hello's first start`,
          met: svc.first.ms <= FIRST_START_RATIO * bare.first.ms,
        },
        detail: `${
          spread(svc.firsts.map(({ ms }) => ms))
        } ms; the hello ${spread(bare.firsts.map(({ ms }) => ms))} ms` +
          share(svc.first.ms, floor.first.ms, "ms") +
          `; of it Deno's analysis of the code of the files a start reads ` +
          `(\`deno info\` of a fresh copy less a second one, median of ${FIRST_STARTS}): ${
            analysis.toFixed(1)
          } ms; ` +
          `svc's first start without it: ` +
          `${(svc.first.ms - analysis).toFixed(1)} ms, ${
            ((svc.first.ms - analysis) / bare.first.ms).toFixed(2)
          } × the hello's first start`,
      },
      {
        name: `idle RSS 2 s after the first request (median of ${count})`,
        value: median(warmRss),
        unit: "MB",
        baseline: { name: `${helloName} (median of ${count})`, value: bareWarmRss },
        ratioAs: "+",
        target: rssTarget(median(warmRss), bareWarmRss),
        detail: `${spread(warmRss, 1)} MB` + share(median(warmRss), floorWarmRss, "MB"),
      },
      {
        name: `idle RSS 2 s after the first request, first start (median of ${FIRST_STARTS})`,
        value: svc.first.rssMb,
        unit: "MB",
        baseline: { name: `${helloName}, first start (median)`, value: bare.first.rssMb },
        ratioAs: "+",
        target: rssTarget(svc.first.rssMb, bare.first.rssMb),
        detail: share(svc.first.rssMb, floor.first.rssMb, "MB").slice(2),
      },
    ];
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

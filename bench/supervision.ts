/**
 * Supervision at the size of a contact centre (`deno task bench supervision`): the real server on
 * the simulator with 500 agents in 50 queues, built through `/1.1` and the agent daemon, most of
 * them logged in, some paused, some on queue calls, with the day's counters filled by real calls
 * (answered, completed, abandoned) and pauses; then
 *
 * - wrk on `GET /svc/api/2.0/supervision/agents` and `GET …/supervision/queues`, each next to
 *   `bench/hello_server.ts json <bytes>` answering a JSON body of the same size, in the same run,
 *   with one connection (one client asking back to back: the latency of an answer) and with ten
 *   (the target: `/agents` answers in p99 < 20 ms, held in both);
 * - the time from a change (an agent paused or unpaused through the supervision control route)
 *   to what a supervisor's page shows it ([supervision_changes.ts](supervision_changes.ts)).
 *
 * Settings: `BENCH_SECONDS` (wrk -d), `BENCH_SUPERVISION_CONNECTIONS` (wrk -c of the latency
 * runs, comma-separated, `1,10`: ten wallboards asking back to back is far more than ten
 * supervisors' pages do, which follow the CTI socket),
 * `BENCH_KV` (the server's store), `BENCH_PROFILE=1` (a CPU profile of the server under each wrk
 * run of the svc routes, `bench/profile.ts`).
 */
import { BenchError, freePort, startDeno, waitReady } from "./processes.ts";
import { startProfile } from "./profile.ts";
import type { Row } from "./rows.ts";
import { changeLatencies } from "./supervision_changes.ts";
import {
  AGENTS,
  buildCallCentre,
  QUEUES,
  type Wrk,
  type WrkFigures,
  wrkMs,
} from "./supervision_centre.ts";

async function startBareJson(stack: AsyncDisposableStack, bytes: number): Promise<string> {
  const port = freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = startDeno(stack, [
    "run",
    "--allow-net",
    "bench/hello_server.ts",
    `${port}`,
    "json",
    `${bytes}`,
  ]);
  await waitReady(`${base}/`, server);
  return `${base}/`;
}

/** The p99 target of `GET /supervision/agents` (issue 26), ms. */
const P99_TARGET_MS = 20;

/**
 * The part: the call centre, wrk on the two routes beside their bare baselines, then the delays
 * from a change to a supervisor's page.
 */
export async function supervisionBench(
  { kv, wrk, seconds }: { kv: string; wrk: Wrk; seconds: number },
): Promise<Row[]> {
  await using stack = new AsyncDisposableStack();
  const load = Deno.loadavg()[0]!.toFixed(2);
  console.log(
    `- supervision: ${AGENTS} agents in ${QUEUES} queues, SVC_KV=${kv} (load average ${load} ` +
      `before)`,
  );
  const centre = await buildCallCentre(stack, kv);
  const connectionCounts = (Deno.env.get("BENCH_SUPERVISION_CONNECTIONS") ?? "1,10").split(",")
    .map((count) => count.trim()).filter(Boolean);
  const auth = { Authorization: `Bearer ${centre.adminToken}` };
  const rows: Row[] = [];
  for (const route of ["agents", "queues"] as const) {
    const url = `${centre.svc}/svc/api/2.0/supervision/${route}`;
    const probe = await fetch(url, { headers: auth });
    const bytes = (await probe.arrayBuffer()).byteLength;
    if (!probe.ok) throw new BenchError(`GET ${url}: ${probe.status}`);
    const bare = await startBareJson(stack, bytes);
    const kb = (bytes / 1000).toFixed(1);
    for (const connections of connectionCounts) {
      console.log(`  wrk -c${connections} -d${seconds}s: bare ${kb} KB JSON answer, then ${url}`);
      const baseline = await wrk({ url: bare, headers: { Authorization: "Bearer x" } }, {
        connections,
      });
      const stopProfile = centre.inspector ? await startProfile(centre.inspector) : null;
      const figures = await wrk({ url, headers: auth }, { connections });
      if (stopProfile) console.log(await stopProfile());
      if (figures.errors || baseline.errors) {
        throw new BenchError(`supervision: errors during wrk on ${route}`);
      }
      const p99 = wrkMs(figures.p99);
      const spelled = (f: WrkFigures) =>
        `${Math.round(f.requestsPerSec).toLocaleString("en-US")} req/s, p50 ${
          wrkMs(f.p50).toFixed(2)
        } ms, p99 ${wrkMs(f.p99).toFixed(2)} ms`;
      rows.push({
        name: `GET /supervision/${route} (${AGENTS} agents, ${QUEUES} queues; ${kb} KB), p99 ` +
          `under wrk -c${connections}`,
        value: p99,
        unit: "ms",
        baseline: { name: `bare ${kb} KB JSON answer p99`, value: wrkMs(baseline.p99) },
        ...(route === "agents"
          ? { target: { text: `< ${P99_TARGET_MS} ms`, met: p99 < P99_TARGET_MS } }
          : {}),
        detail: `svc ${spelled(figures)}; bare ${spelled(baseline)}; p99 ${
          (p99 / wrkMs(baseline.p99)).toFixed(1)
        } × the bare p99, ${
          (figures.requestsPerSec / baseline.requestsPerSec * 100).toFixed(1)
        } % of the bare req/s`,
      });
    }
  }
  rows.push(...await changeLatencies(stack, centre));
  return rows;
}

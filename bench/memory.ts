/**
 * Memory after malformed requests (`deno task bench memory`, issue 27 §6, issue 43 §2): the server
 * of the freshly built bundle, after its start-up, the normal warm-up (`warmUp`) and 3 s idle, gets
 * the 10,000 malformed requests of `tests/e2e/abuse.ts` (every kind over every route: bodies just
 * over the route's limit, 10 MiB or 1 MiB, JSON and CSV just under it, wrong types, broken JSON and
 * CSV, cut bodies, odd headers, bad tokens), 12 at a time over raw connections, then 10 s without
 * any; its RSS then (MiB, 2^20 bytes) is compared with its RSS before them, and its peak is
 * sampled. Next to it, the bare baseline: `bench/hello_server.ts read`, a Deno.serve hello world
 * reading each body as a minimal app does, given the same requests.
 * `tests/e2e/memory_abuse_test.ts` checks the same bound on `deno task start`.
 */
import { BUNDLE_RUN, freshBundle } from "./startup.ts";
import {
  admin,
  freePort,
  pause,
  rssKb,
  startDeno,
  startSvcProcess,
  waitReady,
} from "./processes.ts";
import type { Row } from "./rows.ts";
import { burst, everyRoute, type Route, warmUp } from "../tests/e2e/abuse.ts";

const MALFORMED = 10_000;
const AT_ONCE = 12;
const IDLE_MS = 10_000;
const MiB = (kb: number) => kb / 1024;

/** RSS (MiB) of `pid` after 3 s idle, its peak during the abuse, then after `IDLE_MS` idle. */
async function around(pid: number, abuse: () => Promise<unknown>) {
  await pause(3000);
  const startMb = MiB(await rssKb(pid));
  let peakMb = startMb;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakMb = Math.max(peakMb, MiB(await rssKb(pid)));
      await pause(100);
    }
  })();
  await abuse();
  sampling = false;
  await sampler;
  await pause(IDLE_MS);
  return { startMb, peakMb, afterMb: MiB(await rssKb(pid)) };
}

export async function memoryBench(): Promise<Row[]> {
  await using stack = new AsyncDisposableStack();
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-memory-" });
  stack.defer(() => Deno.remove(dir, { recursive: true }));
  const bundle = await freshBundle(dir);
  const routes: Route[] = await everyRoute();
  const barePort = freePort();
  const bareServer = startDeno(stack, [
    "run",
    "--allow-net",
    "bench/hello_server.ts",
    `${barePort}`,
    "read",
  ]);
  await waitReady(`http://127.0.0.1:${barePort}/`, bareServer);
  const bare = await around(bareServer.pid, () => burst(barePort, routes, "", MALFORMED, AT_ONCE));
  const server = await startSvcProcess(stack, { SVC_KV: `${dir}/svc.kv` }, {
    args: [...BUNDLE_RUN, bundle],
  });
  await pause(2000);
  const startedMb = MiB(await rssKb(server.pid));
  const port = Number(new URL(server.svc).port);
  await warmUp(port, routes, server.adminToken, admin);
  const svc = await around(
    server.pid,
    () => burst(port, routes, server.adminToken, MALFORMED, AT_ONCE),
  );
  const grown = svc.afterMb - svc.startMb;
  const bareGrown = bare.afterMb - bare.startMb;
  const signed = (value: number) => `${value >= 0 ? "+" : ""}${value.toFixed(1)}`;
  return [{
    name: `RSS after ${MALFORMED.toLocaleString("en-US")} malformed requests over every route, ${
      IDLE_MS / 1000
    } s idle`,
    value: svc.afterMb,
    unit: "MiB",
    baseline: {
      name: `bare Deno.serve reading bodies, after the same (from ${
        bare.startMb.toFixed(1)
      } MiB, peak ${bare.peakMb.toFixed(1)}: ${signed(bareGrown)} MiB)`,
      value: bare.afterMb,
    },
    ratioAs: "+",
    target: { text: "within 20 MiB of the start", met: grown <= 20 },
    detail: `from ${svc.startMb.toFixed(1)} MiB after the warm-up (${
      startedMb.toFixed(1)
    } MiB just started), peak ${svc.peakMb.toFixed(1)}: ${signed(grown)} MiB, the bare server ${
      signed(bareGrown)
    } MiB`,
  }];
}

/**
 * Memory after malformed requests (`deno task bench memory`, issue 27 §6): the server of the
 * freshly built bundle, after a warm-up of normal requests and 3 s idle, gets the 10,000 malformed
 * requests of `tests/e2e/abuse.ts` (every kind over every route: bodies of 10 MiB + 1 byte, JSON
 * strings of 1 MiB, arrays nested 3,000 deep, cut bodies, bad tokens), 16 at a time over raw
 * connections, then 10 s without any; its RSS then is compared with its RSS before them. Next to
 * it, the bare baseline: `bench/hello_server.ts` given the same requests.
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
const AT_ONCE = 16;
const IDLE_MS = 10_000;

/** RSS (MB) of `pid` after 3 s idle, then after the abuse and `IDLE_MS` of idleness. */
async function around(pid: number, abuse: () => Promise<unknown>) {
  await pause(3000);
  const startMb = await rssKb(pid) * 1024 / 1e6;
  await abuse();
  await pause(IDLE_MS);
  return { startMb, afterMb: await rssKb(pid) * 1024 / 1e6 };
}

export async function memoryBench(): Promise<Row[]> {
  await using stack = new AsyncDisposableStack();
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-memory-" });
  stack.defer(() => Deno.remove(dir, { recursive: true }));
  const bundle = await freshBundle(dir);
  const routes: Route[] = await everyRoute();
  const helloPort = freePort();
  const hello = startDeno(stack, ["run", "--allow-net", "bench/hello_server.ts", `${helloPort}`]);
  await waitReady(`http://127.0.0.1:${helloPort}/`, hello);
  const bare = await around(hello.pid, () => burst(helloPort, routes, "", MALFORMED, AT_ONCE));
  const server = await startSvcProcess(stack, { SVC_KV: `${dir}/svc.kv` }, {
    args: [...BUNDLE_RUN, bundle],
  });
  const port = Number(new URL(server.svc).port);
  await warmUp(port, routes, server.adminToken, admin);
  const svc = await around(
    server.pid,
    () => burst(port, routes, server.adminToken, MALFORMED, AT_ONCE),
  );
  const grown = svc.afterMb - svc.startMb;
  return [{
    name: `RSS after ${MALFORMED.toLocaleString("en-US")} malformed requests over every route and ${
      IDLE_MS / 1000
    } s idle`,
    value: svc.afterMb,
    unit: "MB",
    baseline: {
      name: `bare Deno.serve hello after the same (from ${bare.startMb.toFixed(1)} MB)`,
      value: bare.afterMb,
    },
    ratioAs: "+",
    target: { text: "within 20 MB of the start", met: grown <= 20 },
    detail: `from ${svc.startMb.toFixed(1)} MB after the warm-up: ${grown >= 0 ? "+" : ""}${
      grown.toFixed(1)
    } MB`,
  }];
}

/**
 * Memory after malformed requests (`deno task bench memory`): the server of the freshly built
 * bundle gets `MALFORMED` requests that all fail (50 at a time), then 10 s without any; its RSS then
 * is compared with its RSS before them. Next to it, the bare baseline: `bench/hello_server.ts`
 * given the same requests.
 *
 * The mix, one kind after the other in turn, each request different from all others:
 * - an unknown path (`/svc/api/2.0/no/such/route/<n>`, `/1.1/users/<n>x`): 404;
 * - a token that is no token (`Bearer <random>`): 403 `InvalidToken`;
 * - a well-formed token signed with another key: 403 `InvalidToken`;
 * - a valid token on a contact that does not exist (`/contact/personal/<random uuid>`): 404;
 * - a body that is not JSON (`POST /dnd/{username}`, `Idempotency-Key: <random>`): 400;
 * - a JSON body of the wrong shape (`POST /auth/login`): 400;
 * - an unknown query parameter value (`GET /1.1/users?limit=<random text>`): 400.
 */
import { BUNDLE_RUN, freshBundle } from "./startup.ts";
import {
  BenchError,
  bounded,
  callSvc,
  freePort,
  pause,
  rssKb,
  startDeno,
  startSvcProcess,
  waitReady,
} from "./processes.ts";
import type { Row } from "./rows.ts";

const MALFORMED = 10_000;
const AT_ONCE = 50;
const IDLE_MS = 10_000;

/** A JWT of the right shape signed with a key svc does not have. */
const FOREIGN_TOKEN = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." +
  "eyJsb2dpbiI6ImJlbmNoIiwic3ViIjoiMSIsImV4cCI6NDEwMjQ0NDgwMH0." +
  "c2lnbmVkLXdpdGgtYW5vdGhlci1rZXktYWJjZGVmZ2hpamtsbW5vcA";

/** The `n`th malformed request of the mix. */
export function malformed(base: string, token: string, n: number): Request {
  const random = crypto.randomUUID();
  const auth = { Authorization: `Bearer ${token}` };
  switch (n % 7) {
    case 0:
      return new Request(`${base}/svc/api/2.0/no/such/route/${n}`);
    case 1:
      return new Request(`${base}/1.1/users/${n}x`, { headers: auth });
    case 2:
      return new Request(`${base}/svc/api/2.0/auth/check`, {
        headers: { Authorization: `Bearer ${random}` },
      });
    case 3:
      return new Request(`${base}/svc/api/2.0/auth/check`, {
        headers: { Authorization: `Bearer ${FOREIGN_TOKEN}${n}` },
      });
    case 4:
      return new Request(`${base}/svc/api/2.0/dnd/writer${n}`, {
        method: "POST",
        headers: { ...auth, "Idempotency-Key": random, "Content-Type": "application/json" },
        body: `{"state": tru${n}`,
      });
    case 5:
      return new Request(`${base}/svc/api/2.0/auth/login`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ login: [n], password: random }),
      });
    default:
      return new Request(`${base}/1.1/users?limit=${random}`, { headers: auth });
  }
}

/** Sends the mix to `base`; every answer must be a 4xx (the baseline answers 200 to all). */
export async function sendMix(
  base: string,
  token: string,
  expectErrors: boolean,
  count = MALFORMED,
  kinds: number[] = [0, 1, 2, 3, 4, 5, 6],
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: AT_ONCE }, async () => {
    while (next < count) {
      const i = next++;
      const n = i * 7 + kinds[i % kinds.length]!; // each request a new one of its kind
      const response = await fetch(malformed(base, token, n), { signal: bounded(30_000) });
      await response.body?.cancel();
      const fine = expectErrors ? response.status >= 400 && response.status < 500 : response.ok;
      if (!fine) throw new BenchError(`malformed request ${n % 7}: ${response.status}`);
    }
  }));
}

/** RSS (MB) of `pid` now, then after the mix and `IDLE_MS` of idleness. */
async function before(pid: number, send: () => Promise<void>) {
  await pause(2000);
  const startMb = await rssKb(pid) * 1024 / 1e6;
  await send();
  await pause(IDLE_MS);
  return { startMb, afterMb: await rssKb(pid) * 1024 / 1e6 };
}

export async function memoryBench(): Promise<Row[]> {
  await using stack = new AsyncDisposableStack();
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-memory-" });
  stack.defer(() => Deno.remove(dir, { recursive: true }));
  const bundle = await freshBundle(dir);
  const helloPort = freePort();
  const hello = startDeno(stack, ["run", "--allow-net", "bench/hello_server.ts", `${helloPort}`]);
  const helloBase = `http://127.0.0.1:${helloPort}`;
  await waitReady(`${helloBase}/`, hello);
  const bare = await before(hello.pid, () => sendMix(helloBase, "", false));
  const server = await startSvcProcess(stack, { SVC_KV: `${dir}/svc.kv` }, {
    args: [...BUNDLE_RUN, bundle],
  });
  const users = ["firstname,username", ...Array.from({ length: 10 }, (_, n) => `W,writer${n}`)];
  await callSvc(
    server.svc,
    server.adminToken,
    "POST",
    "/1.1/users/import",
    users.join("\n"),
    "text/csv",
  );
  const svc = await before(server.pid, () => sendMix(server.svc, server.adminToken, true));
  const grown = svc.afterMb - svc.startMb;
  return [{
    name: `RSS after ${MALFORMED.toLocaleString("en-US")} malformed requests and ${
      IDLE_MS / 1000
    } s idle`,
    value: svc.afterMb,
    unit: "MB",
    baseline: {
      name: `bare Deno.serve hello after the same (from ${bare.startMb.toFixed(1)} MB)`,
      value: bare.afterMb,
    },
    target: { text: "within 20 MB of the start", met: grown <= 20 },
    detail: `from ${svc.startMb.toFixed(1)} MB at start: ${grown >= 0 ? "+" : ""}${
      grown.toFixed(1)
    } MB`,
  }];
}

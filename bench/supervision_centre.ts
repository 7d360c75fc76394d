/**
 * The call centre of the supervision bench ([supervision.ts](supervision.ts)): 500 agents in 50
 * queues on the real server, built through `/1.1` and the agent daemon, and what both parts of the
 * bench read of it (the figures of the supervision routes, wrk's types).
 */
import { BenchError, callSvc, freePort, startSvcProcess } from "./processes.ts";

/** What wrk requests. */
export interface WrkTarget {
  url: string;
  headers?: Record<string, string>;
}

/** wrk's figures, latencies in its own spelling (`1.23ms`, `456.00us`, `1.02s`). */
export interface WrkFigures {
  requestsPerSec: number;
  avg: string;
  p50: string;
  p90: string;
  p99: string;
  errors: number;
}

/** Runs wrk on `target` (bench/run.ts), with another `-c` when given. */
export type Wrk = (target: WrkTarget, options?: { connections?: string }) => Promise<WrkFigures>;

/** The call centre's size and shape. */
export const AGENTS = 500;
export const QUEUES = 50;
/** Agents `n` with `n % 5 === 4` stay logged out: 400 of 500 log in. */
const loggedIn = (n: number) => n % 5 !== 4;
/** Paused among the logged in, of which `UNPAUSED` are unpaused again (their pause counted). */
const PAUSED = 80;
const UNPAUSED = 20;
/** Callers, each calling a queue (answered by a ready agent: on a call for an hour). */
const CALLERS = 140;
/** Of those calls, the ones hung up again (completed: talk time counted, agents in wrap-up). */
const HUNG_UP = 30;
/** Calls made to wait in the busiest queue; one of them is abandoned. */
const WAITING = 3;

/** Agent `n`'s phone, caller `c`'s phone (context `default`, users 1000–1999). */
const agentExten = (n: number) => `${1000 + n}`;
const callerExten = (c: number) => `${1000 + AGENTS + c}`;
const queueNumber = (q: number) => `${3000 + q}`;
/** Agent `n` is in two queues: `n % 50` (penalty 0) and `(n + 13) % 50` (penalty 1). */
const queuesOf = (n: number) => [n % QUEUES, (n + 13) % QUEUES];

/** Runs `fn` on each item, `concurrency` at a time, in order of start. */
export async function pool<T>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T, index: number) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        await fn(items[index]!, index);
      }
    }),
  );
}

/** A duration in wrk's spelling, in ms. */
export function wrkMs(text: string): number {
  const match = text.match(/^([\d.]+)(us|ms|s|m)$/);
  if (!match) throw new BenchError(`cannot read the duration ${text}`);
  const value = Number(match[1]);
  return value * ({ us: 0.001, ms: 1, s: 1000, m: 60_000 } as const)[match[2] as "us"];
}

/** Logs a CTI user in; answers its token. */
async function login(svc: string, username: string, password: string): Promise<string> {
  const response = await fetch(`${svc}/svc/api/2.0/auth/login`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ login: username, password }),
  });
  if (!response.ok) throw new BenchError(`${username} login: ${response.status}`);
  return (await response.json()).token as string;
}

/** One call centre on a real server, and what was built. */
export interface CallCentre {
  svc: string;
  adminToken: string;
  pid: number;
  inspector: number;
  /** A CTI user with an admin rights profile: its token. */
  supervisorToken: string;
  /** Agent ids by `n`, queue ids by `q`. */
  agentIds: number[];
  queueIds: number[];
}

/**
 * Starts the server and builds the call centre through the API; prints how long each step took
 * and the figures it ends with.
 */
export async function buildCallCentre(
  stack: AsyncDisposableStack,
  kv: string,
): Promise<CallCentre> {
  const inspector = Deno.env.get("BENCH_PROFILE") ? freePort() : 0;
  const { svc, adminToken, pid } = await startSvcProcess(stack, {
    SVC_KV: kv,
    // phones answer at once and talk for an hour: the calls made stay up during the bench
    SVC_SIM_ANSWER_MS: "0",
    SVC_SIM_TALK_MS: "3600000",
    // the callers' logins: the least hashing allowed (what is measured does not hash)
    SVC_HASH_ITERATIONS: "100000",
  }, { inspector });
  const call = (method: string, path: string, body?: unknown, type = "application/json") =>
    callSvc(
      svc,
      adminToken,
      method,
      path,
      body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      type,
    );
  const step = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const started = performance.now();
    const result = await fn();
    console.log(`  ${name}: ${((performance.now() - started) / 1000).toFixed(2)} s`);
    return result;
  };

  await step(`POST /1.1/users/import: ${AGENTS} agents' phones`, async () => {
    const rows = ["firstname,lastname,username,line_protocol,context,exten"];
    for (let n = 0; n < AGENTS; n++) rows.push(`Agent,${n},agent${n},sip,default,${agentExten(n)}`);
    await call("POST", "/1.1/users/import", rows.join("\n"), "text/csv");
  });
  // a user dials only while connected (logged in): the callers have passwords and log in
  const callers = CALLERS + WAITING;
  await step(`POST /1.1/users/import: ${callers} callers, with passwords`, async () => {
    const rows = ["firstname,lastname,username,password,line_protocol,context,exten"];
    for (let c = 0; c < callers; c++) {
      rows.push(`Caller,${c},caller${c},caller${c}-password,sip,default,${callerExten(c)}`);
    }
    await call("POST", "/1.1/users/import", rows.join("\n"), "text/csv");
  });
  await step(`POST /auth/login ×${callers}`, async () => {
    await pool([...Array(callers).keys()], 4, async (c) => {
      await login(svc, `caller${c}`, `caller${c}-password`);
    });
  });
  const supervisorToken = await step("a supervisor (CTI user, admin rights profile)", async () => {
    const password = "supervisor-password";
    const { id } = JSON.parse(
      await call("POST", "/1.1/users", {
        firstname: "Super",
        lastname: "Visor",
        username: "supervisor",
        password,
      }),
    );
    await call("PUT", `/svc/api/2.0/rights/profiles/${id}`, { profile: "admin" });
    return await login(svc, "supervisor", password);
  });
  const queueIds: number[] = [];
  await step(`POST /1.1/queues ×${QUEUES}`, async () => {
    for (let q = 0; q < QUEUES; q++) {
      const queue = JSON.parse(
        await call("POST", "/1.1/queues", {
          name: `queue${q}`,
          display_name: `Queue ${q}`,
          number: queueNumber(q),
          context: "default",
          wrapup_seconds: q % 2 ? 0 : 15,
        }),
      );
      queueIds.push(queue.id);
    }
  });
  const agentIds: number[] = new Array(AGENTS);
  await step(`POST /1.1/agents ×${AGENTS}`, async () => {
    await pool([...Array(AGENTS).keys()], 8, async (n) => {
      const agent = JSON.parse(
        await call("POST", "/1.1/agents", {
          number: `${8000 + n}`,
          firstname: "Agent",
          lastname: `${n}`,
        }),
      );
      agentIds[n] = agent.id;
    });
  });
  await step(`PUT /1.1/queues/{id}/members/agents/{agent_id} ×${AGENTS * 2}`, async () => {
    const memberships = [...Array(AGENTS).keys()].flatMap((n) =>
      queuesOf(n).map((q, penalty) => ({ n, q, penalty }))
    );
    await pool(
      memberships,
      8,
      ({ n, q, penalty }) =>
        call("PUT", `/1.1/queues/${queueIds[q]}/members/agents/${agentIds[n]}`, { penalty }),
    );
  });
  const logged = [...Array(AGENTS).keys()].filter(loggedIn);
  await step(`POST /agents/by-id/{id}/login ×${logged.length}`, async () => {
    await pool(logged, 8, (n) =>
      call("POST", `/agents/by-id/${agentIds[n]}/login`, {
        extension: agentExten(n),
        context: "default",
      }));
  });
  // paused: agents spread over the queues; some unpaused again, so that pauses are counted
  const paused = logged.filter((_, i) => i % 5 === 2).slice(0, PAUSED);
  await step(`pause ×${paused.length}, unpause ×${UNPAUSED} (/agents/by-id/{id}/…)`, async () => {
    await pool(
      paused,
      8,
      (n) =>
        call("POST", `/agents/by-id/${agentIds[n]}/pause`, {
          reason: n % 3 ? "lunch" : "training",
        }),
    );
    await pool(
      paused.slice(0, UNPAUSED),
      8,
      (n) => call("POST", `/agents/by-id/${agentIds[n]}/unpause`, ""),
    );
  });
  await step(`POST /dial/number: ${CALLERS} callers call the queues`, async () => {
    await pool(
      [...Array(CALLERS).keys()],
      8,
      (c) =>
        call("POST", `/svc/api/2.0/dial/number/caller${c}`, {
          destination: queueNumber((c * 7) % QUEUES),
        }),
    );
  });
  await waitFor("every call answered", async () => {
    const queues = await figures(svc, adminToken, "queues");
    return queues.reduce((sum, queue) => sum + queue.agents.onCall, 0) >= CALLERS;
  });
  await step(`${HUNG_UP} of those calls hung up (/sim/phones/{exten}/hangup)`, async () => {
    await pool(
      [...Array(HUNG_UP).keys()],
      8,
      (c) => call("POST", `/svc/api/2.0/sim/phones/${callerExten(c)}/hangup`, ""),
    );
  });
  await step(`${WAITING} calls waiting in the busiest queue, one abandoned`, async () => {
    // the queue with the fewest ready agents gets that many calls and WAITING more
    const queues = await figures(svc, adminToken, "queues");
    const busiest = queues.reduce((a, b) => a.agents.ready <= b.agents.ready ? a : b);
    const q = queueIds.indexOf(busiest.id);
    const extra = busiest.agents.ready + WAITING;
    for (let i = 0; i < extra; i++) {
      const caller = i < WAITING ? CALLERS + i : i - WAITING; // callers hung up above are free
      await call("POST", `/svc/api/2.0/dial/number/caller${caller}`, {
        destination: queueNumber(q),
      });
    }
    await waitFor("calls waiting", async () => {
      const [queue] = await figures(svc, adminToken, `queues?queue=${busiest.id}`);
      return (queue?.waitingCalls ?? 0) >= 1;
    });
    const [queue] = await figures(svc, adminToken, `queues?queue=${busiest.id}`);
    // the caller who hangs up is one still waiting
    const calls = JSON.parse(
      await call("GET", `/svc/api/2.0/supervision/queues/${busiest.id}/calls`),
    ) as { callerNumber: string }[];
    const leaving = calls.at(-1)?.callerNumber;
    if (!leaving || !queue?.waitingCalls) throw new BenchError("no call waits");
    await call("POST", `/svc/api/2.0/sim/phones/${leaving}/hangup`, "");
  });
  await printCentre(svc, adminToken);
  return { svc, adminToken, pid, inspector, supervisorToken, agentIds, queueIds };
}

interface QueueShape {
  id: number;
  waitingCalls: number;
  agents: Record<
    "members" | "logged" | "ready" | "ringing" | "onCall" | "wrapup" | "paused",
    number
  >;
  today: Record<"entered" | "answered" | "abandoned" | "timeout", number>;
}

interface AgentShape {
  id: number;
  state: string;
  paused: boolean;
  queues: { id: number }[];
  today: Record<"answered" | "missed" | "talkSeconds" | "pauseSeconds" | "loginSeconds", number>;
}

/** `GET /svc/api/2.0/supervision/<path>` as the administrator. */
export async function figures(svc: string, token: string, path: `queues${string}`): Promise<
  QueueShape[]
>;
export async function figures(svc: string, token: string, path: "agents"): Promise<AgentShape[]>;
export async function figures(svc: string, token: string, path: string): Promise<unknown[]> {
  return JSON.parse(await callSvc(svc, token, "GET", `/svc/api/2.0/supervision/${path}`));
}

/** Polls `done` every 100 ms, 30 s at most. */
async function waitFor(what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!await done()) {
    if (Date.now() > deadline) throw new BenchError(`supervision: ${what}: not within 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One line on what the centre looks like now: agents by state, the day's counts. */
async function printCentre(svc: string, token: string): Promise<void> {
  const agents = await figures(svc, token, "agents");
  const queues = await figures(svc, token, "queues");
  const byState = new Map<string, number>();
  for (const agent of agents) byState.set(agent.state, (byState.get(agent.state) ?? 0) + 1);
  const sum = (of: (queue: QueueShape) => number) => queues.reduce((s, q) => s + of(q), 0);
  const agentSum = (of: (agent: AgentShape) => number) => agents.reduce((s, a) => s + of(a), 0);
  console.log(
    `  ${agents.length} agents (${[...byState].map(([state, n]) => `${n} ${state}`).join(", ")})` +
      `, ${queues.length} queues, ${sum((q) => q.waitingCalls)} calls waiting; today: ` +
      `${sum((q) => q.today.entered)} calls entered, ${sum((q) => q.today.answered)} answered, ` +
      `${sum((q) => q.today.abandoned)} abandoned; agents: ${
        agentSum((a) => a.today.answered)
      } answered, ${agentSum((a) => a.today.talkSeconds)} s talk, ${
        agentSum((a) => a.today.pauseSeconds)
      } s pause, ${agentSum((a) => a.today.loginSeconds)} s logged in`,
  );
}

/** Starts `bench/hello_server.ts json <bytes>`; answers its URL. */

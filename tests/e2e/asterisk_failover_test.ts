/**
 * End-to-end: three real svc processes on one store file and one PBX (an AMI peer that sends
 * every event to every connection, as Asterisk does: `tests/peers/ami_broadcast.ts`), calls set up,
 * answered and hung up round after round (the recorded sessions 02 and 12: alice calls bob; an
 * agent logs in, takes queue calls, pauses, logs out), and the lease holder killed (SIGKILL) in
 * the middle. Another process takes over within 5 s, and every phone event, agent state and
 * history record reaches `eventUrl` and the history exactly once, each user's in order
 * (docs/asterisk.md, "Several svc processes").
 */
import assert from "node:assert/strict";
import { recordedRound, startAmiBroadcast } from "../peers/ami_broadcast.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";
import { call, expectStatus, login, phoneUser, sleep, until, V2 } from "./svc_http.ts";

const ADMIN = { login: "admin", password: "failover-admin" };
const PEOPLE = ["alice", "bob", "carol"].map((username, i) => ({
  username,
  password: `${username}-pw`,
  exten: `100${i + 1}`,
  secret: `${username}-sip`,
}));

/** A receiver of `SVC_EVENT_URL` keeping each event once by its id (posts may be repeated). */
function receiver() {
  const events = new Map<string, { username: string; line: string }>();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const { username, message } = await request.json();
    const id = request.headers.get("X-Svc-Event-Id")!;
    let line: string | null = null;
    if (message.msgType === "PhoneEvent") {
      const { eventType, linkedId, uniqueId } = message.ctiMessage;
      line = `${roundOf(linkedId)} ${eventType} ${uniqueId.split(".")[1]}`;
    } else if (message.msgType === "AgentStateEvent") line = `agent ${message.name}`;
    if (line !== null && !events.has(id)) events.set(id, { username, line });
    return new Response(null, { status: 200 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/e2e/dropbox/`,
    /** Each user's events, in the order received. */
    perUser() {
      const perUser = new Map<string, string[]>();
      for (const { username, line } of events.values()) {
        perUser.set(username, [...perUser.get(username) ?? [], line]);
      }
      return perUser;
    },
    count: () => events.size,
    close: () => server.shutdown(),
  };
}

/** The round of an id made by `recordedRound` (`2000000000 + round * 10 + salt`). */
const roundOf = (id: string) => Math.floor((Number(id.split(".")[0]) - 2_000_000_000) / 10);

/** Plays rounds of the recorded calls to every process, `gapMs` between events. */
async function play(
  peer: ReturnType<typeof startAmiBroadcast>,
  rounds: number[],
  gapMs: number,
  onRound: (round: number) => Promise<void> | void = () => {},
) {
  for (const round of rounds) {
    await onRound(round);
    for (const [salt, name] of ["02-dial-answered", "12-queue-agent"].entries()) {
      for (const event of await recordedRound(name, round, salt)) {
        peer.broadcast(event);
        await sleep(gapMs);
      }
    }
  }
}

/** The owner of the platform lease, read from the store file as any process would. */
async function leaseOwner(file: string): Promise<{ owner: string; strength?: number } | null> {
  const kv = await Deno.openKv(file);
  try {
    return (await kv.get<{ owner: string; strength?: number }>(["platform_lease"])).value;
  } finally {
    kv.close();
  }
}

/** The server whose log says it took the lease as `owner`. */
function serverOf(servers: RunningServer[], owner: string): RunningServer | undefined {
  return servers.find((server) =>
    server.stderrLines.some((line) => line.includes("platform lease taken") && line.includes(owner))
  );
}

Deno.test({
  name:
    "three svc processes, the lease holder killed mid-calls: another takes over, every event once",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const peer = startAmiBroadcast();
    const events = receiver();
    await withTempDir(async (dir) => {
      const file = `${dir}/svc.kv`;
      const env = (n: number) => ({
        SVC_KV: file,
        SVC_ADMIN_LOGIN: ADMIN.login,
        SVC_ADMIN_PASSWORD: ADMIN.password,
        SVC_EVENT_URL: events.url,
        SVC_PLATFORM: "asterisk",
        SVC_AMI_PORT: String(peer.port),
        SVC_AMI_USERNAME: "admin",
        SVC_AMI_SECRET: "admin",
        SVC_ASTERISK_CONFIG_DIR: `${dir}/asterisk-${n}`,
      });
      const servers: RunningServer[] = [];
      try {
        servers.push(await startServer(env(1)));
        const admin = await login(servers[0]!, "webservice", ADMIN.login, ADMIN.password);
        const api = (method: string, path: string, body: unknown, status: number) =>
          expectStatus(status, servers[0]!, method, path, { token: admin, body });
        for (const person of PEOPLE) await phoneUser(servers[0]!, admin, person);
        const agent = (await api("POST", "/1.1/agents", { number: "8001" }, 201)).body.id;
        const queue = (await api("POST", "/1.1/queues", { name: "support", number: "3001" }, 201))
          .body.id;
        await api("PUT", `/1.1/queues/${queue}/members/agents/${agent}`, { penalty: 0 }, 204);
        servers.push(await startServer(env(2)), await startServer(env(3)));
        for (const server of servers) {
          await until(
            async () => (await call(server, "GET", "/ready")).status === 200,
            10_000,
            "connected to the PBX",
          );
        }
        await until(() => peer.marks().length === 3, 5_000, "each process's mark");
        await until(
          async () => (await leaseOwner(file))?.strength === 1,
          5_000,
          "a connected process holds the lease",
        );

        // round 0: the holder hands everything over; what each round must give
        await play(peer, [0], 1);
        await sleep(1500);
        const first = events.perUser();
        const perRound = events.count();
        assert.ok(perRound > 20, `round 0 gave ${perRound} events`);
        const historyOf = async (server: RunningServer, user: string) =>
          (await expectStatus(200, server, "GET", `${V2}/history/${user}?size=1000`, {
            token: admin,
          })).body.data.entries.length as number;
        const firstHistory = new Map<string, number>();
        for (const { username } of PEOPLE) {
          firstHistory.set(username, await historyOf(servers[0]!, username));
        }

        // rounds 1 to 8, the holder killed as round 3 starts
        const rounds = 9;
        const holder = serverOf(servers, (await leaseOwner(file))!.owner)!;
        assert.ok(holder, "the holder found");
        let killedAt = 0;
        const playing = play(peer, [1, 2, 3, 4, 5, 6, 7, 8], 2, async (round) => {
          if (round !== 3) return;
          await holder.kill();
          killedAt = performance.now();
        });
        const others = servers.filter((server) => server !== holder);
        await until(() => killedAt > 0, 30_000, "the holder killed");
        await until(
          async () => {
            const lease = await leaseOwner(file);
            return lease !== null && others.some((server) => serverOf([server], lease.owner));
          },
          5_000,
          "another process took over (issue 27: within 5 s)",
        );
        await playing;
        await until(
          () => events.count() >= perRound * rounds,
          30_000,
          `every round's events (${events.count()} of ${perRound * rounds})`,
        );
        await sleep(2000); // nothing more comes
        assert.equal(events.count(), perRound * rounds, "no event twice");
        const got = events.perUser();
        for (const [user, lines] of first) {
          const phone = lines.filter((line) => !line.startsWith("agent"));
          const agentStates = lines.filter((line) => line.startsWith("agent"));
          const all = got.get(user) ?? [];
          assert.deepEqual(
            all.filter((line) => !line.startsWith("agent")),
            Array.from(
              { length: rounds },
              (_, round) => phone.map((line) => line.replace(/^\d+ /, `${round} `)),
            ).flat(),
            `${user}'s phone events, each once, in order`,
          );
          assert.deepEqual(
            all.filter((line) => line.startsWith("agent")),
            Array.from({ length: rounds }, () => agentStates).flat(),
            `${user}'s agent states`,
          );
        }
        for (const { username } of PEOPLE) {
          assert.equal(
            await historyOf(others[0]!, username),
            firstHistory.get(username)! * rounds,
            `${username}'s history: each call once`,
          );
        }
      } finally {
        for (const server of servers) await server.stop();
        await events.close();
        await peer.close();
      }
    });
  },
});

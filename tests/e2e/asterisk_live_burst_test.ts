/**
 * A burst of calls on a REAL Asterisk 22 with 75 real SIP phones (baresip), when both are installed
 * (as `asterisk_live_test.ts` finds them; skipped with a one-line notice otherwise), issue 27 §2:
 * 50 calls set up within one second through the REST API of the real svc server process — 20
 * callers dialling a queue served by 10 agents (the callers' phones answer svc's originate and wait
 * in the queue, the agents' phones answer by themselves, ten callers wait for an agent to be free),
 * 15 `dial/user` calls between pairs of phones and 15 `dial/number` calls to an outside number (the
 * PBX's outside route of transcript 20: a second channel that answers). Each call ends normally a
 * few seconds after it was answered: hung up by a phone, or through the call daemon's hang-up route
 * by the caller, the callee or the agent.
 *
 * Then: every party's phone events at `eventUrl` are complete and in order, none twice; every
 * agent went through whole queue calls and is ready again (its states and the agent daemon's
 * status); every call is in the history of each party once, with the right parties; no call is
 * left (the call daemon's list, the queue's waiting calls, Asterisk's channels). The `dial` routes'
 * answer times are printed (p50, p99), not asserted: the figure goes into the notes.
 *
 * The queue rings all its free agents (`ringall`) and their phones answer at once, so several may
 * answer one call: Asterisk connects one and hangs the others up. Those others took no call: each
 * is expected to show `EventRinging`, `EventReleased` and a missed call, the caller's call going on
 * with the one agent connected (the caller established once).
 *
 * `SVC_BURST_AMI_LOG=<file>` records the AMI session there (`tests/peers/ami_recorder.ts`).
 */
import assert from "node:assert/strict";
import { OUTSIDE_ROUTE, preparePbx } from "../peers/asterisk_pbx.ts";
import { startAmiRecorder } from "../peers/ami_recorder.ts";
import { type Phone, startPhone } from "../peers/baresip_phone.ts";
import { livePeers } from "../peers/live_peers.ts";
import { type RunningServer, startServer } from "./server.ts";
import {
  call,
  expectStatus,
  login,
  type Received as Posted,
  sleep,
  until,
  V2,
} from "./svc_http.ts";

const TEST = "asterisk_live_burst_test";
const { prefix: PREFIX, baresip: BARESIP, missing } = livePeers(TEST);

const ADMIN = { login: "admin", password: "asterisk-burst-admin" };
/** With a file name, the AMI session goes through a recorder and is written there. */
const AMI_LOG = Deno.env.get("SVC_BURST_AMI_LOG");

/** The queue the callers dial, and its agents. */
const QUEUE = { name: "burst", number: "3001" };
/** How long each call talks once answered, before a party hangs up. */
const TALK_MS = 3_000;
/** The dials are sent evenly over this time. */
const BURST_MS = 950;

interface Person {
  username: string;
  exten: string;
}

/** `count` people named `<prefix>NN`, extensions from `first` on. */
const people = (prefix: string, count: number, first: number): Person[] =>
  Array.from({ length: count }, (_, i) => ({
    username: `${prefix}${String(i + 1).padStart(2, "0")}`,
    exten: String(first + i),
  }));

const AGENTS = people("ag", 10, 1101).map((person, i) => ({ ...person, agent: String(8001 + i) }));
const QUEUE_CALLERS = people("qc", 20, 1201);
const USER_CALLERS = people("uc", 15, 1301);
const CALLEES = people("ue", 15, 1401);
const NUMBER_CALLERS = people("nc", 15, 1501);
const EVERYONE = [...AGENTS, ...QUEUE_CALLERS, ...USER_CALLERS, ...CALLEES, ...NUMBER_CALLERS];

const password = (username: string) => `${username}-pw`;
const secret = (username: string) => `${username}-sip`;

/** Who hangs up a call, and how. */
type Hangup = "caller phone" | "callee phone" | "caller via svc" | "callee via svc";

/** One call of the burst. */
interface Dial {
  kind: "queue" | "user" | "number";
  caller: Person;
  /** The callee of a `dial/user`; an agent's call is found from the events. */
  callee: Person | null;
  /** What the caller's `EventDialing` names (`otherDN`) and the history's `dstNum`. */
  dialled: string;
  hangup: Hangup;
}

/** The 50 calls, the three kinds interleaved, each with its way of ending. */
function burst(): Dial[] {
  const queue: Dial[] = QUEUE_CALLERS.map((caller, i) => ({
    kind: "queue",
    caller,
    callee: null,
    dialled: QUEUE.number,
    hangup: (["caller phone", "caller via svc", "callee via svc"] as const)[i % 3]!,
  }));
  const user: Dial[] = USER_CALLERS.map((caller, i) => ({
    kind: "user",
    caller,
    callee: CALLEES[i]!,
    dialled: CALLEES[i]!.exten,
    hangup: (["caller phone", "callee phone", "callee via svc"] as const)[i % 3]!,
  }));
  const number: Dial[] = NUMBER_CALLERS.map((caller, i) => ({
    kind: "number",
    caller,
    callee: null,
    dialled: `06000000${String(i + 1).padStart(2, "0")}`,
    hangup: (["caller phone", "caller via svc"] as const)[i % 2]!,
  }));
  const dials: Dial[] = [];
  for (let i = 0; dials.length < 50; i++) {
    for (const list of [queue, user, number]) if (list[i]) dials.push(list[i]!);
  }
  return dials;
}

/** An event posted to `eventUrl` with its id (`X-Svc-Event-Id`). */
type Received = Posted & { id: string };

/** A receiver of `SVC_EVENT_URL` keeping each event once by its id (a post may be repeated). */
function receiver() {
  const events: Received[] = [];
  const ids = new Set<string>();
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const { username, message } = await request.json();
    const id = request.headers.get("X-Svc-Event-Id") ?? crypto.randomUUID();
    if (!ids.has(id)) {
      ids.add(id);
      const fields = "ctiMessage" in message ? message.ctiMessage : message;
      events.push({ ...fields, id, username, msgType: message.msgType });
    }
    return new Response(null, { status: 200 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/e2e/dropbox/`,
    events,
    mark: () => events.length,
    /** `username`'s phone events since `since`. */
    phone: (username: string, since = 0) =>
      events.slice(since).filter((e) => e.msgType === "PhoneEvent" && e.username === username),
    /** Agent `number`'s state names since `since`. */
    agent: (number: string, since = 0) =>
      events.slice(since).filter((e) => e.msgType === "AgentStateEvent" && e.agentNumber === number)
        .map((e) => e.name!),
    close: () => server.shutdown(),
  };
}

/** Phone events as event types grouped by linkedId (first seen first). */
function byCall(events: Received[]): Map<string, string[]> {
  const calls = new Map<string, string[]>();
  for (const event of events) {
    calls.set(event.linkedId!, [...calls.get(event.linkedId!) ?? [], event.eventType!]);
  }
  return calls;
}

/** The `q` quantile of `values` (nearest rank). */
function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}

/** Runs `fn` on each item, `width` at a time. */
async function inBatches<T>(items: T[], width: number, fn: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += width) {
    await Promise.all(items.slice(i, i + width).map(fn));
  }
}

Deno.test({
  name:
    "on a real Asterisk: 50 calls within a second (queue, dial user, dial number), each complete",
  ignore: missing,
  // the phones' and Asterisk's pipes close asynchronously; everything is reaped in `finally`
  sanitizeOps: false,
  sanitizeResources: false,
  async fn(t) {
    const started = performance.now();
    const asterisk = await preparePbx({
      prefix: PREFIX!,
      config: { "extensions.conf": (ours) => ours + OUTSIDE_ROUTE + "\n" },
    });
    const { configDir, workDir } = asterisk;
    const recorder = AMI_LOG ? startAmiRecorder(asterisk.amiPort) : null;
    const events = receiver();
    const phones: Record<string, Phone> = {};
    let server: RunningServer | undefined;
    const step = async (name: string, fn: () => Promise<void>) => {
      if (!await t.step(name, fn)) throw new Error(`step failed: ${name}`);
    };
    try {
      server = await startServer({
        SVC_KV: `${workDir}/svc.kv`,
        SVC_ADMIN_LOGIN: ADMIN.login,
        SVC_ADMIN_PASSWORD: ADMIN.password,
        SVC_EVENT_URL: events.url,
        SVC_PLATFORM: "asterisk",
        SVC_AMI_PORT: String(recorder?.port ?? asterisk.amiPort),
        SVC_AMI_USERNAME: asterisk.ami.username,
        SVC_AMI_SECRET: asterisk.ami.secret,
        SVC_ASTERISK_CONFIG_DIR: configDir,
      });
      const svc = server;
      // svc first: it writes its files before Asterisk boots (as in the other live tests)
      await until(
        () => Deno.stat(`${configDir}/queues_svc.conf`).then(() => true, () => false),
        10_000,
        "svc's files written",
      );
      await asterisk.start();
      await until(
        async () => (await call(svc, "GET", "/ready")).status === 200,
        15_000,
        "svc connected to Asterisk",
      );
      const admin = await login(svc, "webservice", ADMIN.login, ADMIN.password);
      const api = (method: string, path: string, body?: unknown, status = 200) =>
        expectStatus(status, svc, method, path, { token: admin, body });
      const tokens: Record<string, string> = {};
      let queueId = 0;
      let calldToken = "";

      await step("75 users (CSV import), 10 agents in a queue, reach Asterisk", async () => {
        const csv = [
          "firstname,lastname,username,password,line_protocol,context,exten,sip_username,sip_secret",
          ...EVERYONE.map(({ username, exten }) =>
            [
              username,
              "Burst",
              username,
              password(username),
              "sip",
              "default",
              exten,
              username,
              secret(username),
            ].join(",")
          ),
        ].join("\n");
        const imported = await fetch(`${svc.baseUrl}/1.1/users/import`, {
          method: "POST",
          headers: { Authorization: `Bearer ${admin}`, "Content-Type": "text/csv" },
          body: csv,
          signal: AbortSignal.timeout(60_000),
        });
        const answer = await imported.text();
        assert.equal(imported.status, 201, answer);
        queueId = (await api("POST", "/1.1/queues", QUEUE, 201)).body.id;
        for (const { agent } of AGENTS) {
          const id = (await api("POST", "/1.1/agents", { number: agent }, 201)).body.id;
          await api("PUT", `/1.1/queues/${queueId}/members/agents/${id}`, { penalty: 0 }, 204);
        }
        await api("POST", "/1.1/webservice_users", {
          login: "burst-supervisor",
          password: "burst-supervisor-pw",
          acls: ["calld.#", "svc.rest.supervision.#"],
        }, 201);
        calldToken = await login(svc, "webservice", "burst-supervisor", "burst-supervisor-pw");
        await until(
          async () => {
            const [endpoints, dialplan, queue] = await Promise.all([
              asterisk.cli("pjsip show endpoints"),
              asterisk.cli(`dialplan show ${QUEUE.number}@default`),
              asterisk.cli(`queue show ${QUEUE.name}`),
            ]);
            return EVERYONE.every(({ username }) =>
              new RegExp(`Endpoint:\\s+${username}\\b`).test(endpoints)
            ) && /Queue\(burst/.test(dialplan) && /^burst has/m.test(queue);
          },
          20_000,
          "Asterisk has the 75 endpoints and the queue",
        );
      });

      await step("75 phones register, the agents log in, everyone is connected", async () => {
        await inBatches(EVERYONE, 8, async ({ username }) => {
          // a port handed out free may be taken meanwhile (an outgoing connection's): again
          for (let attempt = 1;; attempt++) {
            try {
              phones[username] = await startPhone({
                pbx: asterisk,
                user: username,
                password: secret(username),
                baresip: BARESIP!,
              });
              return;
            } catch (error) {
              if (attempt === 3 || !/Address already in use/.test(String(error))) throw error;
            }
          }
        });
        await until(
          () => asterisk.registered(EVERYONE.map((p) => p.username)),
          60_000,
          "the 75 phones registered and reachable",
        );
        const since = events.mark();
        for (const { agent, exten } of AGENTS) {
          await api("POST", `/agents/by-number/${agent}/login`, {
            extension: exten,
            context: "default",
          }, 204);
        }
        await until(
          () => AGENTS.every(({ agent }) => events.agent(agent, since).at(-1) === "AgentReady"),
          20_000,
          "every agent ready",
        );
        await until(
          async () => {
            const shown = await asterisk.cli(`queue show ${QUEUE.name}`);
            return AGENTS.every(({ agent }) => new RegExp(`\\b${agent} \\(`).test(shown));
          },
          10_000,
          "the 10 agents members of the queue on Asterisk",
        );
        // a dial needs its user connected; the hang-up route needs the party's token
        await inBatches(EVERYONE, 10, async ({ username }) => {
          tokens[username] = await login(svc, "login", username, password(username));
        });
      });

      const dials = burst();
      const answerMs: number[] = [];
      /** Each dial's call: the caller's linkedId, and the agent who took a queue call. */
      const linkedIds = new Map<Dial, string>();
      const agentOf = new Map<Dial, Person>();
      const since = events.mark();
      const agentSince = since;

      await step("50 dials within a second; each call answered, talks, then hangs up", async () => {
        const sent = performance.now();
        await Promise.all(dials.map(async (dial, i) => {
          await sleep(sent + (i * BURST_MS) / dials.length - performance.now());
          const path = dial.kind === "user"
            ? `${V2}/dial/user/${dial.caller.username}`
            : `${V2}/dial/number/${dial.caller.username}`;
          const body = dial.kind === "user"
            ? { username: dial.callee!.username }
            : { destination: dial.dialled };
          const before = performance.now();
          const answer = await call(svc, "POST", path, { token: admin, body });
          answerMs.push(performance.now() - before);
          assert.equal(answer.status, 200, `${path}: ${JSON.stringify(answer.body)}`);
        }));
        const spread = performance.now() - sent;
        console.log(
          `${TEST}: 50 dials answered within ${Math.round(spread)} ms, answer p50 ${
            quantile(answerMs, 0.5).toFixed(1)
          } ms, p99 ${quantile(answerMs, 0.99).toFixed(1)} ms, max ${
            Math.max(...answerMs).toFixed(1)
          } ms`,
        );

        /** The first phone event of `username` matching `test` since the burst, waiting for it. */
        const phoneEvent = async (
          username: string,
          test: (event: Received) => boolean,
          what: string,
          ms: number,
        ) => {
          await until(() => events.phone(username, since).some(test), ms, what);
          return events.phone(username, since).find(test)!;
        };
        /** Hangs up the call of `username` (whose leg is `callId`) through the call daemon. */
        const hangupViaSvc = async (username: string, callId: string, linkedId: string) => {
          const options = { token: tokens[username], tokenHeader: "x-auth-token" } as const;
          const answer = await call(svc, "DELETE", `/1.0/users/me/calls/${callId}`, options);
          if (answer.status === 204) return;
          const calls = await call(svc, "GET", "/1.0/users/me/calls", options);
          assert.fail(
            `${username} hangs up ${callId}: ${answer.status} ${JSON.stringify(answer.body)}; ` +
              `their calls: ${JSON.stringify(calls.body)}; the call's events: ${told(linkedId)}`,
          );
        };

        /** The events of call `linkedId` so far, to tell what went wrong. */
        const told = (linkedId: string) =>
          events.events.filter((e) => e.linkedId === linkedId)
            .map((e) => `${e.username} ${e.eventType} ${e.uniqueId}`).join(", ");
        const outcomes = await Promise.allSettled(dials.map(async (dial) => {
          const { caller } = dial;
          const dialing = await phoneEvent(
            caller.username,
            (e) => e.eventType === "EventDialing",
            `${caller.username}'s EventDialing`,
            30_000,
          );
          const linkedId = dialing.linkedId!;
          linkedIds.set(dial, linkedId);
          // who talks with the caller: the callee, an agent, or the outside route
          let talking: { person: Person; established: Received } | null = null;
          if (dial.kind === "user") {
            const established = await phoneEvent(
              dial.callee!.username,
              (e) => e.eventType === "EventEstablished" && e.linkedId === linkedId,
              `${dial.callee!.username} talks with ${caller.username}`,
              30_000,
            );
            talking = { person: dial.callee!, established };
          } else if (dial.kind === "queue") {
            // the second half waits for an agent: up to two calls' time
            const isAgents = (e: Received) =>
              e.msgType === "PhoneEvent" && e.eventType === "EventEstablished" &&
              e.linkedId === linkedId && AGENTS.some((a) => a.username === e.username);
            await until(
              () => events.events.slice(since).some(isAgents),
              90_000,
              `an agent talks with ${caller.username}`,
            );
            const established = events.events.slice(since).find(isAgents)!;
            const person = AGENTS.find((a) => a.username === established.username)!;
            agentOf.set(dial, person);
            talking = { person, established };
          } else {
            await phoneEvent(
              caller.username,
              (e) => e.eventType === "EventEstablished" && e.linkedId === linkedId,
              `the outside number answers ${caller.username}`,
              30_000,
            );
          }
          await sleep(TALK_MS);
          // Asterisk still has the call up: nobody may have been released yet
          assert.ok(
            !events.phone(caller.username, since).some((e) => e.eventType === "EventReleased"),
            `released before anyone hung up: ${told(linkedId)}`,
          );
          switch (dial.hangup) {
            case "caller phone":
              await phones[caller.username]!.ctrl.hangup();
              break;
            case "callee phone":
              await phones[talking!.person.username]!.ctrl.hangup();
              break;
            case "caller via svc":
              await hangupViaSvc(caller.username, dialing.uniqueId!, linkedId);
              break;
            case "callee via svc":
              await hangupViaSvc(
                talking!.person.username,
                talking!.established.uniqueId!,
                linkedId,
              );
              break;
          }
        }));
        const failures = outcomes.flatMap((outcome, i) =>
          outcome.status === "rejected"
            ? [`${dials[i]!.kind} call of ${dials[i]!.caller.username}: ${outcome.reason}`]
            : []
        );
        assert.deepEqual(failures, [], `${failures.length} of the 50 calls went wrong`);
        await until(
          async () => /^0 active channels/m.test(await asterisk.cli("core show channels count")),
          30_000,
          "no channel left on Asterisk",
        );
      });

      await step("every call's phone events complete, in order, once", async () => {
        const expected = new Map<string, Map<string, string[]>>();
        const expect = (username: string, linkedId: string, types: string[]) => {
          const calls = expected.get(username) ?? new Map<string, string[]>();
          calls.set(linkedId, types);
          expected.set(username, calls);
        };
        for (const dial of dials) {
          const linkedId = linkedIds.get(dial)!;
          expect(dial.caller.username, linkedId, [
            "EventDialing",
            "EventEstablished",
            "EventReleased",
          ]);
          const callee = dial.callee ?? agentOf.get(dial);
          if (callee) {
            expect(callee.username, linkedId, [
              "EventRinging",
              "EventEstablished",
              "EventReleased",
            ]);
          }
        }
        const complete = () =>
          [...expected].every(([username, calls]) =>
            [...calls].every(([linkedId, types]) =>
              events.phone(username, since).filter((e) => e.linkedId === linkedId).length >=
                types.length
            )
          );
        await until(complete, 30_000, "every expected phone event");
        await sleep(2_000); // nothing more comes
        const queueCalls = new Set(
          dials.filter((d) => d.kind === "queue").map((d) => linkedIds.get(d)!),
        );
        for (const { username } of EVERYONE) {
          const got = byCall(events.phone(username, since));
          const mine = expected.get(username) ?? new Map<string, string[]>();
          if (AGENTS.some((a) => a.username === username)) {
            // an agent may also have been rung for a queue call another agent took (ringall)
            for (const [linkedId, types] of got) {
              if (mine.has(linkedId)) continue;
              assert.ok(queueCalls.has(linkedId), `${username}: a call not of the queue`);
              assert.deepEqual(types, ["EventRinging", "EventReleased"], `${username}'s ring`);
            }
            for (const [linkedId, types] of mine) {
              assert.deepEqual(got.get(linkedId), types, `${username}'s call ${linkedId}`);
            }
          } else {
            assert.deepEqual(got, mine, `${username}'s phone events`);
          }
        }
        for (const dial of dials) {
          const dialing = events.phone(dial.caller.username, since)[0]!;
          assert.deepEqual(
            [dialing.DN, dialing.otherDN],
            [dial.caller.exten, dial.dialled],
            `${dial.caller.username}'s EventDialing`,
          );
        }
        const taken = AGENTS.map((a) => [...agentOf.values()].filter((p) => p === a).length);
        assert.equal(taken.reduce((a, b) => a + b, 0), 20, "the 20 queue calls answered");
        console.log(`${TEST}: queue calls taken per agent ${taken.join(" ")}`);
      });

      await step("every agent took whole calls and is ready, not on a call", async () => {
        for (const person of AGENTS) {
          const states = events.agent(person.agent, agentSince);
          const answered = [...agentOf.values()].filter((p) => p === person).length;
          const count = (name: string) => states.filter((s) => s === name).length;
          assert.equal(count("AgentOnCall"), answered, `${person.agent}: ${states.join(", ")}`);
          assert.equal(count("AgentOnWrapup"), answered, `${person.agent}: ${states.join(", ")}`);
          assert.equal(states.at(-1), "AgentReady", `${person.agent}: ${states.join(", ")}`);
          // each call: rung, then on it, wrap-up, ready; or rung and ready again. A queue may
          // ring an agent for a second call before its phone shows busy: after the first call's
          // wrap-up it still rings for that one.
          for (const [i, state] of states.entries()) {
            const next = states[i + 1];
            const allowed: Record<string, (string | undefined)[]> = {
              AgentReady: ["AgentRinging", undefined],
              AgentRinging: ["AgentOnCall", "AgentReady"],
              AgentOnCall: ["AgentOnWrapup"],
              AgentOnWrapup: ["AgentReady", "AgentRinging"],
            };
            assert.ok(
              allowed[state]?.includes(next),
              `${person.agent}: ${state} then ${next}: ${states.join(", ")}`,
            );
          }
          const status = (await api("GET", `/agents/by-number/${person.agent}`)).body;
          assert.deepEqual(
            [status.logged, status.paused, status.extension, status.state],
            [true, false, person.exten, "AgentReady"],
            `agent ${person.agent}'s status`,
          );
        }
      });

      await step("every call in each party's history once; no call left", async () => {
        const history = async (username: string) =>
          (await api("GET", `${V2}/history/${username}?size=100`)).body.data.entries as {
            srcUsername: string;
            dstUsername: string;
            srcNum: string;
            dstNum: string;
            status: string;
          }[];
        const row = (e: Awaited<ReturnType<typeof history>>[number]) =>
          [e.status, e.srcUsername, e.srcNum, e.dstUsername, e.dstNum].join(" ");
        /** Each user's expected rows, sorted. */
        const expected = new Map<string, string[]>(
          EVERYONE.map(({ username }) => [username, []]),
        );
        for (const dial of dials) {
          const { caller } = dial;
          const callee = dial.callee ?? agentOf.get(dial) ?? null;
          expected.get(caller.username)!.push(
            ["emitted", caller.username, caller.exten, callee?.username ?? "", dial.dialled].join(
              " ",
            ),
          );
          if (callee) {
            expected.get(callee.username)!.push(
              ["answered", caller.username, caller.exten, callee.username, dial.dialled].join(" "),
            );
          }
        }
        // an agent rung for a call another took missed it
        for (const person of AGENTS) {
          for (const [linkedId, types] of byCall(events.phone(person.username, since))) {
            if (types.includes("EventEstablished")) continue;
            const dial = dials.find((d) => linkedIds.get(d) === linkedId)!;
            expected.get(person.username)!.push(
              ["missed", dial.caller.username, dial.caller.exten, person.username, QUEUE.number]
                .join(" "),
            );
          }
        }
        await until(
          async () => {
            for (const { username } of EVERYONE) {
              if ((await history(username)).length < expected.get(username)!.length) return false;
            }
            return true;
          },
          20_000,
          "every call in the history",
        );
        for (const { username } of EVERYONE) {
          assert.deepEqual(
            (await history(username)).map(row).sort(),
            expected.get(username)!.sort(),
            `${username}'s history`,
          );
        }
        const calls = await expectStatus(200, svc, "GET", "/1.0/calls", {
          token: calldToken,
          tokenHeader: "x-auth-token",
        });
        assert.deepEqual(calls.body.items, [], "no call left in the call daemon");
        const waiting = await expectStatus(
          200,
          svc,
          "GET",
          `${V2}/supervision/queues/${queueId}/calls`,
          { token: calldToken },
        );
        assert.deepEqual(waiting.body, [], "no call left waiting in the queue");
      });
      console.log(`${TEST}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    } catch (error) {
      console.error(`--- asterisk\n${asterisk.output.slice(-40).join("\n")}`);
      const lines = server?.stderrLines.filter((line) => !line.includes('"msg":"request"'));
      if (lines) console.error(`--- svc (request lines left out)\n${lines.slice(-40).join("\n")}`);
      throw error;
    } finally {
      if (AMI_LOG && recorder) await Deno.writeTextFile(AMI_LOG, recorder.text());
      await inBatches(Object.values(phones), 25, (phone) => phone.stop());
      if (server) await server.stop();
      await recorder?.close();
      await asterisk.stop();
      await events.close();
    }
  },
});

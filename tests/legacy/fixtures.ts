/**
 * Fixtures of the 1.0 API tests: requests from a given client address (the `remoteAddr` that
 * `Deno.serve` hands to Hono as its env), the table of every 1.0 route with a valid body, and a
 * simulated PBX with two phones, two agents and a queue.
 */
import assert from "node:assert/strict";
import type { TestContext } from "../helpers.ts";
import { addAgent, agentAndQueue, phoneUser, simSetup } from "../lib/platform/fixtures.ts";

export const V1 = "/svc/api/1.0";
export const ALLOWED_V4 = "192.0.2.10";
export const ALLOWED_V6 = "2001:db8::10";
export const OTHER_V4 = "192.0.2.99";
export const OTHER_V6 = "2001:db8::99";
/** `SVC_DEPRECATED_API_HOST` of most tests. */
export const ALLOWED_HOSTS = `${ALLOWED_V4}, ${ALLOWED_V6}`;

/** The env `Deno.serve` passes for a TCP peer `hostname`. */
export const peer = (hostname: string) => ({
  remoteAddr: { transport: "tcp" as const, hostname, port: 40_000 },
});

export interface From {
  /** The TCP peer; {@link ALLOWED_V4} unless given, none at all with `null`. */
  address?: string | null;
  headers?: Record<string, string> | Headers;
}

/** Sends `method` `V1 + path` from `from.address`, with a JSON body when `body` is given. */
export function v1(
  ctx: TestContext,
  method: string,
  path: string,
  body?: unknown,
  from: From = {},
): Promise<Response> {
  const headers = new Headers(from.headers);
  if (body !== undefined) headers.set("Content-Type", "application/json");
  const address = from.address === undefined ? ALLOWED_V4 : from.address;
  return Promise.resolve(ctx.app.request(
    `${V1}${path}`,
    {
      method,
      headers,
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    },
    address === null ? undefined : peer(address),
  ));
}

/** Asserts 200 with a JSON body and answers it. */
export async function expectOk(response: Response): Promise<unknown> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  return JSON.parse(text);
}

/** Asserts 200 `{"res":"success"}`. */
export async function expectSuccess(response: Response): Promise<void> {
  assert.deepEqual(await expectOk(response), { res: "success" });
}

/** Asserts the 403 of a refused client address, naming `address`. */
export async function expectRefused(response: Response, address: string): Promise<void> {
  const text = await response.text();
  assert.equal(response.status, 403, text);
  const body = JSON.parse(text);
  assert.equal(body.error, "Forbidden");
  assert.ok(
    body.message.startsWith(`client address ${address} `) && body.message.includes("1.0 API"),
    text,
  );
}

/** A 1.0 route with a valid body and a check of its answer. */
export interface LegacyRoute {
  method: "GET" | "POST";
  path: string;
  body?: unknown;
  /** What a 200 answer's JSON must be. */
  answer: (body: unknown) => void;
}

const success = (body: unknown) => assert.deepEqual(body, { res: "success" });
const list = (body: unknown) => assert.ok(Array.isArray(body), JSON.stringify(body));

/**
 * Every 1.0 route, for `username` (alice unless given; a phone, password `<name>-pw`), callee bob,
 * the queue `queueId` and agent 8001 on 1001, in an order that succeeds from start to end:
 * `agentLogin` before `togglePause` before `agentLogout`. `domain` fills the domain segment,
 * `slash` ends each path.
 */
export function routeTable(
  queueId: number,
  { domain = "example.com", slash = "/", username = "alice" } = {},
): LegacyRoute[] {
  const user = (method: string) => `/${method}/${domain}/${username}${slash}`;
  return [
    {
      method: "POST",
      path: user("connect"),
      body: { password: `${username}-pw` },
      answer: success,
    },
    { method: "POST", path: user("dnd"), body: { state: false }, answer: success },
    { method: "POST", path: user("dial"), body: { number: "06 12 34 56 78" }, answer: success },
    { method: "POST", path: user("dialByUsername"), body: { username: "bob" }, answer: success },
    {
      method: "POST",
      path: user("dialFromQueue"),
      body: { destination: "0612345678", queueId, callerIdName: "Sales", callerIdNumber: "3000" },
      answer: success,
    },
    ...["uncForward", "naForward", "busyForward"].map((method): LegacyRoute => ({
      method: "POST",
      path: user(method),
      body: { state: false, destination: "1002" },
      answer: success,
    })),
    { method: "GET", path: `${user("historyByUsername")}?size=5`, answer: list },
    { method: "GET", path: `${user("historyByUsername")}?days=2`, answer: list },
    {
      method: "POST",
      path: `/agentLogin${slash}`,
      body: { agentphonenumber: "1001", agentnumber: "8001" },
      answer: success,
    },
    {
      method: "POST",
      path: `/togglePause${slash}`,
      body: { phoneNumber: "1001" },
      answer: success,
    },
    {
      method: "POST",
      path: `/agentLogout${slash}`,
      body: { phoneNumber: "1001" },
      answer: success,
    },
    {
      method: "POST",
      path: `/handshake/${domain}${slash}`,
      answer: (body) => assert.deepEqual(body, { reposted: 0 }),
    },
  ];
}

/**
 * The 1.0 API enabled for {@link ALLOWED_HOSTS} on a simulated PBX: alice (1001) and bob (1002)
 * with phones (CTI users, password `<name>-pw`), agent 8001 in the queue `sales` (3000, wrap-up
 * `wrapupSeconds`) and agent 8002 in the same queue. `env` adds settings.
 */
export async function legacySim(env: Record<string, string> = {}, wrapupSeconds = 0) {
  const t = await simSetup({ SVC_DEPRECATED_API_HOST: ALLOWED_HOSTS, ...env });
  const alice = await phoneUser(t, "alice", "1001", { password: "alice-pw" });
  const bob = await phoneUser(t, "bob", "1002", { password: "bob-pw" });
  const { agent, queue } = await agentAndQueue(t, "8001", {
    name: "sales",
    number: "3000",
    wrapup_seconds: wrapupSeconds,
  });
  const other = await addAgent(t, "8002", queue.id);
  return {
    t,
    ctx: t.ctx,
    alice,
    bob,
    agent,
    other,
    queue,
    /** {@link v1} on this app. */
    call: (method: string, path: string, body?: unknown, from?: From) =>
      v1(t.ctx, method, path, body, from),
  };
}

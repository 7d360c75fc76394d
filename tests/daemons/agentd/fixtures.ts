/**
 * Fixtures of the agent daemon's tests: a call center built through `/1.1` (alice 1001 and bob
 * 1002 on SIP lines, agent 8001 in queue sales 3000), tokens signed directly, a `/agents` client
 * and the daemon's answers.
 */
import assert from "node:assert/strict";
import { type AgentStatus, DEFAULT_TENANT_UUID } from "../../../lib/agent_control.ts";
import type { UserType } from "../../../lib/auth/tokens.ts";
import type { AgentRecord } from "../../../lib/store/agents.ts";
import type { QueueRecord } from "../../../lib/store/queues.ts";
import type { UserRecord } from "../../../lib/store/users.ts";
import { serverUuid } from "../../../lib/store/server_identity.ts";
import { bearer, type TestContext } from "../../helpers.ts";
import {
  agentAndQueue,
  phoneUser,
  type SimContext,
  simSetup,
} from "../../lib/platform/fixtures.ts";

/** A token holding `acls`, signed directly (no password hash per token). */
export async function tokenHolding(
  ctx: TestContext,
  acls: string[],
  userType: UserType = "webservice",
): Promise<string> {
  const identity = { userId: "0", login: "agentd-test", userType, acls };
  return (await ctx.services.tokens.issue(identity)).token;
}

/** A CTI user's token, as a login gives it (`alias.ctiuser`), signed directly. */
export async function ctiToken(ctx: TestContext, user: UserRecord): Promise<string> {
  const identity = {
    userId: String(user.id),
    login: user.username ?? "",
    userType: "cti" as const,
    acls: ["alias.ctiuser"],
  };
  return (await ctx.services.tokens.issue(identity)).token;
}

/** Calls `/agents` with `headers` (a token's by default); a body that is a string is sent as is. */
export function agentdClient(ctx: TestContext, headers: Record<string, string>) {
  const call = (method: string, path: string, body?: unknown) =>
    Promise.resolve(ctx.app.request(`/agents${path}`, {
      method,
      headers: body === undefined ? headers : { ...headers, "Content-Type": "application/json" },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
  return {
    call,
    get: (path: string) => call("GET", path),
    post: (path: string, body?: unknown) => call("POST", path, body),
    /** GETs `path` (a status or the list), asserting 200 JSON. */
    async status<T = AgentStatus>(path: string): Promise<T> {
      const response = await call("GET", path);
      const text = await response.text();
      assert.equal(response.status, 200, `GET /agents${path}: ${text}`);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      return JSON.parse(text);
    },
    /** POSTs a command, asserting 204 and no body. */
    async command(path: string, body?: unknown): Promise<void> {
      const response = await call("POST", path, body);
      const text = await response.text();
      assert.equal(response.status, 204, `POST /agents${path}: ${text}`);
      assert.equal(text, "");
    },
  };
}

export type Agentd = ReturnType<typeof agentdClient>;

export interface CallCenter {
  t: SimContext;
  agent: AgentRecord;
  queue: QueueRecord;
  /** A client holding `agentd.#`. */
  api: Agentd;
  /** The server's uuid: every status's `origin_uuid`. */
  origin: string;
}

/** alice 1001 and bob 1002 with SIP lines; agent 8001 in queue sales (3000, `wrapup_seconds`). */
export async function callCenter(wrapupSeconds = 0): Promise<CallCenter> {
  const t = await simSetup();
  await phoneUser(t, "alice", "1001");
  await phoneUser(t, "bob", "1002");
  const { agent, queue } = await agentAndQueue(t, "8001", {
    name: "sales",
    number: "3000",
    wrapup_seconds: wrapupSeconds,
  });
  const api = agentdClient(t.ctx, bearer(await tokenHolding(t.ctx, ["agentd.#"])));
  return { t, agent, queue, api, origin: await serverUuid(t.ctx.services.store) };
}

/** The status of `agent` (in `queue`) while logged out, on the server of uuid `origin`. */
export const loggedOut = (
  agent: AgentRecord,
  queue: QueueRecord,
  origin: string,
): AgentStatus => ({
  id: agent.id,
  tenant_uuid: DEFAULT_TENANT_UUID,
  origin_uuid: origin,
  number: agent.number,
  logged: false,
  paused: false,
  paused_reason: null,
  extension: null,
  context: null,
  state_interface: null,
  state: "AgentLoggedOut",
  queues: [{ id: queue.id, name: queue.name }],
});

/** Asserts the daemon's error: `status`, JSON, and exactly `{"error": message}`. */
export async function expectAgentdError(response: Response, status: number, message: string) {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  assert.deepEqual(JSON.parse(text), { error: message });
}

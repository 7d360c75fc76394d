/**
 * The call centre of the supervision tests (docs/supervision.md): on the simulator, alice 1001
 * (agent 8001 of queue sales 3000 logs in on her phone), bob 1002 and carol 1003 who call, every
 * phone answering by hand; a web service user holding `svc.rest.supervision.#`; tokens that
 * outlive the virtual days the tests run through.
 */
import assert from "node:assert/strict";
import { agentAndQueue, phoneUser, simSetup } from "../lib/platform/fixtures.ts";
import { bearer, login, type TestContext, webServiceUser } from "../helpers.ts";
import type { AgentFigures, QueueFigures } from "../../lib/supervision/mod.ts";

export const V2 = "/svc/api/2.0";

/** A year: virtual time runs for days in these tests. */
export const LONG_TTL = { SVC_TOKEN_TTL: "31536000" };

/** Calls `/svc/api/2.0` with `token`. */
export function supervisionApi(ctx: TestContext, token: string) {
  const request = (method: string, path: string, body?: unknown, headers = {}) =>
    Promise.resolve(ctx.app.request(`${V2}${path}`, {
      method,
      headers: { ...bearer(token), "Content-Type": "application/json", ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
  return {
    request,
    /** GETs `path`, asserts 200, answers the JSON body. */
    async json(path: string) {
      const response = await request("GET", path);
      const text = await response.text();
      assert.equal(response.status, 200, `${path}: ${text}`);
      return JSON.parse(text);
    },
    /** The figures of queue `id` (when not given: the first queue's). */
    async queue(id?: number): Promise<QueueFigures> {
      const query = id === undefined ? "" : `?queue=${id}`;
      const queues: QueueFigures[] = await this.json(`/supervision/queues${query}`);
      return queues[0]!;
    },
    /** The figures of agent `id`. */
    async agent(id: number): Promise<AgentFigures> {
      const agents: AgentFigures[] = await this.json("/supervision/agents");
      return agents.find((agent) => agent.id === id)!;
    },
    /** POSTs and asserts 204. */
    async command(path: string, body?: unknown) {
      const response = await request("POST", path, body);
      assert.equal(response.status, 204, `${path}: ${await response.text()}`);
    },
  };
}

/** A fresh app with the call centre; `env` adds settings. */
export async function callCenter(env: Record<string, string> = {}) {
  const t = await simSetup({ ...LONG_TTL, ...env });
  const alice = await phoneUser(t, "alice", "1001");
  const bob = await phoneUser(t, "bob", "1002");
  const carol = await phoneUser(t, "carol", "1003");
  const { agent, queue } = await agentAndQueue(t, "8001", { name: "sales", number: "3000" });
  for (const extension of ["1001", "1002", "1003"]) {
    await t.sim.setPolicy(extension, { policy: "manual" });
  }
  const supervisor = await webServiceUser(t.ctx, ["svc.rest.supervision.#"]);
  const api = supervisionApi(t.ctx, await login(t.ctx, "webservice", supervisor.login));
  return { t, ctx: t.ctx, alice, bob, carol, agent, queue, api };
}

/** `ms` of virtual time as ISO 8601 text. */
export const at = (ms: number) => new Date(ms).toISOString();

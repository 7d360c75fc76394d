/**
 * The two ways the agent daemon names an agent in a path: `by-id/{id}` and `by-number/{number}`.
 * A value that cannot name an agent is unknown without a store read.
 */
import type { Context } from "hono";
import type { Services } from "../../lib/services.ts";
import { type AgentRecord, findAgentByNumber, getAgent } from "../../lib/store/agents.ts";
import { noSuchAgent } from "./errors.ts";

/** A way to name an agent: the path word, the path value's name, and the look-up. */
export interface AgentKey {
  kind: "by-id" | "by-number";
  param: "id" | "number";
  find(services: Services, value: string): Promise<AgentRecord | null>;
}

/** Ids as the API writes them (no leading zero), so that an agent has one path and one ACL. */
const canonicalId = /^(0|[1-9]\d{0,14})$/;
/** Agent numbers as the configuration daemon allows them. */
const agentNumber = /^\d{1,40}$/;

export const AGENT_KEYS: readonly AgentKey[] = [
  {
    kind: "by-id",
    param: "id",
    find: async ({ store }, value) =>
      canonicalId.test(value) ? await getAgent(store, Number(value)) : null,
  },
  {
    kind: "by-number",
    param: "number",
    find: async ({ store }, value) =>
      agentNumber.test(value) ? await findAgentByNumber(store, value) : null,
  },
];

/**
 * The agent the path names through `key`; 404 `no such agent` when none.
 *
 * @example
 * const agent = await pathAgent(services, c, AGENT_KEYS[0]!);
 */
export async function pathAgent(
  services: Services,
  c: Context,
  key: AgentKey,
): Promise<AgentRecord> {
  const agent = await key.find(services, c.req.param(key.param) ?? "");
  if (!agent) throw noSuchAgent();
  return agent;
}

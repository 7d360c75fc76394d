/**
 * Each user's own agent, for the agent daemon's `/users/me/agents` routes: at most one agent per
 * user (several users may share one), under `["user_agents", userId]`. The daemon svc follows keeps
 * this link on the user record; svc keeps it beside the user and agent records, which stay as they
 * are. A link whose agent is gone is no link: readers check the agent exists.
 */
import type { Store } from "./store.ts";

const userAgentKey = (userId: number): Deno.KvKey => ["user_agents", userId];

/**
 * The id of the agent linked to `userId`, or null.
 *
 * @example
 * const agentId = await linkedAgentId(store, user.id);
 */
export async function linkedAgentId(store: Store, userId: number): Promise<number | null> {
  return (await store.get<number>(userAgentKey(userId))).value;
}

/**
 * Links `agentId` to `userId` as the user's own agent (replacing any other); null unlinks.
 *
 * @example
 * await linkUserAgent(store, user.id, agent.id);
 */
export async function linkUserAgent(
  store: Store,
  userId: number,
  agentId: number | null,
): Promise<void> {
  if (agentId === null) await store.delete(userAgentKey(userId));
  else await store.set(userAgentKey(userId), agentId);
}

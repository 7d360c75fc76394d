/**
 * What the agent daemon (`/agents`), the 1.0 API, the callback workflow and the configuration
 * daemon share about agents: their status (decisions §9), who is logged on a phone, the user whose
 * line an agent is logged on, and a change of an agent's queue memberships (written to the store,
 * then followed live by the platform). Commands (login, logout, pause, unpause) go straight to the
 * platform port; its refusals (`PlatformRefusal`: `no_extension`, `already_logged`,
 * `extension_in_use`, `not_logged`) are for each area to answer in its own form.
 */
import type { CoreServices } from "./core_services.ts";
import { type AgentPresence, type AgentStateName, PlatformRefusal } from "./platform/port.ts";
import { type AgentRecord, agents, getAgent, listAgents } from "./store/agents.ts";
import { findExtension } from "./store/extensions.ts";
import { getLine, lineInterface } from "./store/lines.ts";
import { listQueues, membershipsByAgent, type QueueRecord, queues } from "./store/queues.ts";
import { transact, type Transaction } from "./store/records.ts";
import { serverUuid } from "./store/server_identity.ts";
import { linkedAgentId } from "./store/user_agents.ts";
import { getUser, type UserRecord } from "./store/users.ts";

/**
 * The tenant of every agent: svc serves one tenant, and the daemon it follows names each agent's
 * tenant, so every status carries this constant (docs/agentd.md).
 */
export const DEFAULT_TENANT_UUID = "f5787e47-0aee-42bb-8a61-52e9d28a193a";

/** An agent's status as the agent daemon answers it (decisions §9). */
export interface AgentStatus {
  id: number;
  /** Always {@link DEFAULT_TENANT_UUID}. */
  tenant_uuid: string;
  /** This server's uuid, the same from every process on one store (`lib/store/server_identity.ts`). */
  origin_uuid: string;
  number: string;
  logged: boolean;
  paused: boolean;
  paused_reason: string | null;
  extension: string | null;
  context: string | null;
  /** The protocol and name of the line holding the login extension, e.g. `SIP/abcdef`. */
  state_interface: string | null;
  /** The agent state name of decisions §7 (`AgentLoggedOut` when not logged). */
  state: AgentStateName;
  queues: { id: number; name: string }[];
}

/**
 * The status of each agent, in the order given. Not logged: `logged: false` and the four login
 * fields null. For every agent at once, `agentListJson` (`agent_list.ts`) answers the same
 * without a read per agent.
 *
 * @example
 * const [status] = await agentStatuses(services, [agent]);
 */
export async function agentStatuses(
  services: CoreServices,
  agentList: AgentRecord[],
): Promise<AgentStatus[]> {
  const [queueList, origin] = await Promise.all([
    listQueues(services.store),
    serverUuid(services.store),
  ]);
  const memberships = membershipsByAgent(queueList);
  return await Promise.all(agentList.map(async (agent) => {
    const presence = await services.platform.agentPresence(agent.id);
    const line = isLoggedOnLine(presence)
      ? await stateInterface(services, presence.extension, presence.context)
      : null;
    return statusOf(agent, presence, { origin, memberships, stateInterface: line });
  }));
}

/** A presence logged on a line: logged, with its extension and context. */
export function isLoggedOnLine(
  presence: AgentPresence,
): presence is AgentPresence & { extension: string; context: string } {
  return presence.logged && presence.extension !== null && presence.context !== null;
}

/**
 * The status of `agent` at `presence`: `origin` is the server's uuid, `memberships` every agent's
 * queues, `stateInterface` the interface of the line a logged agent is on (else ignored).
 */
export function statusOf(
  agent: AgentRecord,
  presence: AgentPresence,
  { origin, memberships, stateInterface }: {
    origin: string;
    memberships: ReadonlyMap<number, readonly { id: number; name: string }[]>;
    stateInterface: string | null;
  },
): AgentStatus {
  const logged = isLoggedOnLine(presence);
  return {
    id: agent.id,
    tenant_uuid: DEFAULT_TENANT_UUID,
    origin_uuid: origin,
    number: agent.number,
    logged,
    paused: logged && presence.paused,
    paused_reason: logged ? presence.pausedReason : null,
    extension: logged ? presence.extension : null,
    context: logged ? presence.context : null,
    state_interface: logged ? stateInterface : null,
    state: logged ? presence.state : "AgentLoggedOut",
    queues: (memberships.get(agent.id) ?? []).map(({ id, name }) => ({ id, name })),
  };
}

/** The status of one agent. */
export async function agentStatus(
  services: CoreServices,
  agent: AgentRecord,
): Promise<AgentStatus> {
  return (await agentStatuses(services, [agent]))[0]!;
}

/** The interface of the line holding `extension` in `context` (`SIP/…`, `SCCP/…`, custom), or null. */
export async function stateInterface(
  services: CoreServices,
  extension: string,
  context: string,
): Promise<string | null> {
  const line = await lineOfExtension(services, extension, context);
  return line ? await lineInterface(services.store, line) : null;
}

/**
 * The agent logged on `extension` (in `context`, or in any context when it is not given), or
 * null: the 1.0 API names agents by the phone they are logged on.
 */
export async function agentLoggedOn(
  services: CoreServices,
  extension: string,
  context?: string,
): Promise<{ agent: AgentRecord; status: AgentStatus } | null> {
  // presences are in the platform's memory: build the one full status only for the agent found
  for (const agent of await listAgents(services.store)) {
    const presence = await services.platform.agentPresence(agent.id);
    if (
      presence.logged && presence.extension === extension &&
      (context === undefined || presence.context === context)
    ) {
      return { agent, status: await agentStatus(services, agent) };
    }
  }
  return null;
}

/**
 * The main user of the line `status` is logged on (the one a dial from the agent's phone starts
 * from), or null when the agent is not logged or the line has no user.
 */
export async function userOfAgentLine(
  services: CoreServices,
  status: AgentStatus,
): Promise<UserRecord | null> {
  if (!status.logged) return null;
  const line = await lineOfExtension(services, status.extension!, status.context!);
  const userId = line?.user_ids[0];
  return userId === undefined ? null : await getUser(services.store, userId);
}

/**
 * The user's own agent (the agent daemon's `/users/me/agents`): the agent linked to the user
 * (`lib/store/user_agents.ts`), else the agent logged on one of the user's lines; null when none.
 *
 * @example
 * const agent = await agentOfUser(services, user);
 */
export async function agentOfUser(
  services: CoreServices,
  user: Pick<UserRecord, "id" | "line_ids">,
): Promise<AgentRecord | null> {
  const { store, platform } = services;
  const linked = await linkedAgentId(store, user.id);
  const agent = linked === null ? null : await getAgent(store, linked);
  if (agent) return agent;
  if (!user.line_ids.length) return null;
  for (const candidate of await listAgents(store)) {
    const presence = await platform.agentPresence(candidate.id);
    if (!presence.logged || presence.extension === null || presence.context === null) continue;
    const line = await lineOfExtension(services, presence.extension, presence.context);
    if (line && user.line_ids.includes(line.id)) return candidate;
  }
  return null;
}

async function lineOfExtension(services: CoreServices, extension: string, context: string) {
  const found = await findExtension(services.store, extension, context);
  return found?.line_id == null ? null : await getLine(services.store, found.line_id);
}

/**
 * Changes an agent's membership of a queue in the store, then has the platform apply it live (a
 * logged-in agent joins or leaves the queue, or takes its new penalty). `load` reads the queue and
 * the agent in the transaction (refusing in the caller's words when one is missing); `change` gives
 * the queue as it must be (or refuses). The agent is written back unchanged, so that a concurrent
 * delete of it runs again and sees the membership. The configuration daemon's
 * `/1.1/queues/{id}/members/agents/{agent_id}` and the agent daemon's `add`/`remove` both go here.
 *
 * @example
 * await changeMembership(services, load, (queue, agent) => withMember(queue, agent.id, 0));
 */
export async function changeMembership(
  services: CoreServices,
  load: (tx: Transaction) => Promise<{ queue: QueueRecord; agent: AgentRecord }>,
  change: (queue: QueueRecord, agent: AgentRecord) => QueueRecord,
): Promise<void> {
  const agentId = await transact(services.store, async (tx) => {
    const { queue, agent } = await load(tx);
    tx.put(queues, change(queue, agent));
    tx.put(agents, agent);
    return agent.id;
  });
  try {
    await services.platform.agentQueuesChanged(agentId);
  } catch (error) {
    // the configuration is saved: the PBX refusing to follow it live is for the log (each
    // reconnection brings a logged-in agent's queues in line again), not an error of the change
    if (!(error instanceof PlatformRefusal)) throw error;
    services.logger.warn("agent's queues not followed live", { agentId, reason: error.message });
  }
}

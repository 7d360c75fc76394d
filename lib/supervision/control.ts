/**
 * What a supervisor does to agents (docs/supervision.md, "Control"), through the agent daemon's
 * own code paths: pause (with a reason), unpause and log out go to the platform port as
 * `/agents/…` commands do; a queue membership (with a penalty) changes in the configuration and
 * live through `changeMembership` (`lib/agent_control.ts`), as `/agents/by-id/{id}/add` and
 * `/1.1/queues/{id}/members/agents/{agent_id}` do. Refusals are {@link SupervisionRefusal}s for
 * each caller (the REST routes, the CTI channel) to answer in its own form.
 */
import { changeMembership } from "../agent_control.ts";
import type { CoreServices } from "../core_services.ts";
import { PlatformRefusal } from "../platform/port.ts";
import { type AgentRecord, agents, getAgent } from "../store/agents.ts";
import { queues, withMember, withoutMember } from "../store/queues.ts";
import type { Transaction } from "../store/records.ts";

export type SupervisionRefusalReason =
  | "agent_not_found"
  | "queue_not_found"
  | "not_logged"
  | "not_in_queue";

/** A supervision command refused: no such agent or queue, an agent not logged in, no member. */
export class SupervisionRefusal extends Error {
  constructor(readonly reason: SupervisionRefusalReason, message: string) {
    super(message);
    this.name = "SupervisionRefusal";
  }
}

const agentNotFound = (agentId: number) =>
  new SupervisionRefusal("agent_not_found", `agent ${agentId} does not exist`);
const queueNotFound = (queueId: number) =>
  new SupervisionRefusal("queue_not_found", `queue ${queueId} does not exist`);

async function knownAgent(services: CoreServices, agentId: number): Promise<AgentRecord> {
  const agent = await getAgent(services.store, agentId);
  if (!agent) throw agentNotFound(agentId);
  return agent;
}

/** Runs an agent command on the platform; its `not_logged` refusal is the supervision's. */
async function agentCommand(agent: AgentRecord, command: () => Promise<void>): Promise<void> {
  try {
    await command();
  } catch (error) {
    if (error instanceof PlatformRefusal && error.reason === "not_logged") {
      throw new SupervisionRefusal("not_logged", `agent ${agent.number} is not logged in`);
    }
    throw error;
  }
}

/**
 * Pauses the agent, with a reason (or none).
 *
 * @example
 * await pauseAgent(services, 1, "lunch");
 */
export async function pauseAgent(
  services: CoreServices,
  agentId: number,
  reason: string | null,
): Promise<void> {
  const agent = await knownAgent(services, agentId);
  await agentCommand(agent, () => services.platform.agentPause(agent.id, reason));
}

/** Unpauses the agent. */
export async function unpauseAgent(services: CoreServices, agentId: number): Promise<void> {
  const agent = await knownAgent(services, agentId);
  await agentCommand(agent, () => services.platform.agentUnpause(agent.id));
}

/** Logs the agent out. */
export async function logoutAgent(services: CoreServices, agentId: number): Promise<void> {
  const agent = await knownAgent(services, agentId);
  await agentCommand(agent, () => services.platform.agentLogout(agent.id));
}

/** The queue and the agent read in the membership's transaction, each refused when missing. */
const load = (queueId: number, agentId: number) => async (tx: Transaction) => {
  const queue = await tx.get(queues, queueId);
  if (!queue) throw queueNotFound(queueId);
  const agent = await tx.get(agents, agentId);
  if (!agent) throw agentNotFound(agentId);
  return { queue, agent };
};

/**
 * Makes the agent a member of the queue with `penalty` (0 is the highest priority), or gives a
 * member that penalty; a logged-in agent follows at once.
 *
 * @example
 * await addToQueue(services, 1, 2, 0);
 */
export async function addToQueue(
  services: CoreServices,
  queueId: number,
  agentId: number,
  penalty: number,
): Promise<void> {
  await changeMembership(
    services,
    load(queueId, agentId),
    (queue, agent) => withMember(queue, agent.id, penalty),
  );
}

/** Takes the agent out of the queue; `not_in_queue` when it is no member. */
export async function removeFromQueue(
  services: CoreServices,
  queueId: number,
  agentId: number,
): Promise<void> {
  await changeMembership(services, load(queueId, agentId), (queue, agent) => {
    if (!queue.members.some((member) => member.agent_id === agent.id)) {
      throw new SupervisionRefusal(
        "not_in_queue",
        `agent ${agent.number} is not in queue ${queue.name}`,
      );
    }
    return withoutMember(queue, agent.id);
  });
}

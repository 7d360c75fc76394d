/**
 * What supervisors do with agent groups (docs/supervision.md, "Agent groups"), as xuc's `cti.js`
 * commands do it: put an agent in a group, and change the queues of a group's agents at once.
 *
 * A group's queue change is planned first ({@link planGroupMove}: which agent joins or leaves
 * which queue, with which penalty), so the caller can check its rights on every change before any
 * is made, then made one membership at a time ({@link applyMemberships}) through the code of
 * `setAgentQueue` and `removeAgentFromQueue` (`addToQueue`, `removeFromQueue`: the store, then a
 * logged-in agent follows on the platform). Each membership is atomic; the whole is not: an agent
 * changed meanwhile by someone else is left as that change left it.
 */
import type { CoreServices } from "../core_services.ts";
import { ApiError } from "../errors.ts";
import { agents } from "../store/agents.ts";
import { listQueues, type QueueRecord } from "../store/queues.ts";
import { transact } from "../store/records.ts";
import { addToQueue, removeFromQueue, SupervisionRefusal } from "../supervision/mod.ts";
import { agentGroups, getAgentGroup, placeAgentIn } from "./store.ts";

export const agentGroupNotFound = (groupId: number) =>
  new ApiError(404, "AgentGroupNotFound", `agent group ${groupId} does not exist`);
const queueNotFound = (queueId: number) =>
  new ApiError(404, "QueueNotFound", `queue ${queueId} does not exist`);
const agentNotFound = (agentId: number) =>
  new ApiError(404, "AgentNotFound", `agent ${agentId} does not exist`);

/**
 * Puts the agent in the group `groupId` (null: in none), taking it out of the group it was in;
 * 404 `AgentNotFound`, `AgentGroupNotFound`.
 *
 * @example
 * await setAgentGroup(services, 3, 1);
 */
export async function setAgentGroup(
  services: CoreServices,
  agentId: number,
  groupId: number | null,
): Promise<void> {
  await transact(services.store, async (tx) => {
    if (!await tx.get(agents, agentId)) throw agentNotFound(agentId);
    if (groupId !== null && !await tx.get(agentGroups, groupId)) throw agentGroupNotFound(groupId);
    await placeAgentIn(tx, agentId, groupId);
  });
}

/** One membership to change: the agent joins the queue with `penalty` (or takes it), or leaves. */
export interface MembershipChange {
  agentId: number;
  queueId: number;
  /** The penalty to join with; null: leave the queue. */
  penalty: number | null;
}

/** A queue and a penalty, as the group commands name them. */
export interface QueueAt {
  queueId: number;
  penalty: number;
}

/**
 * What the group commands of `cti.js` do, for the agents of the group `groupId`:
 * - `add`: those in `from` (its queue, with its penalty) join `to` (or take its penalty there);
 * - `move`: the same, then leave `from`'s queue (unless it is `to`'s: only the penalty changes);
 * - `remove`: those in `from` leave its queue;
 * - `fill`: those in no way members of `to`'s queue join it.
 */
export type GroupMove =
  | { kind: "add" | "move"; from: QueueAt; to: QueueAt }
  | { kind: "remove"; from: QueueAt }
  | { kind: "fill"; to: QueueAt };

/**
 * The membership changes of `move` for the group's agents as the store holds them now, in agent
 * order; 404 `AgentGroupNotFound`, `QueueNotFound` (every queue named must exist).
 *
 * @example
 * const changes = await planGroupMove(services, 1, { kind: "fill", to: { queueId: 2, penalty: 0 } });
 */
export async function planGroupMove(
  services: CoreServices,
  groupId: number,
  move: GroupMove,
): Promise<MembershipChange[]> {
  const { store } = services;
  const group = await getAgentGroup(store, groupId);
  if (!group) throw agentGroupNotFound(groupId);
  const queueList = await listQueues(store);
  const queue = (queueId: number): QueueRecord => {
    const found = queueList.find((queue) => queue.id === queueId);
    if (!found) throw queueNotFound(queueId);
    return found;
  };
  const penaltyIn = (queueRecord: QueueRecord, agentId: number) =>
    queueRecord.members.find((member) => member.agent_id === agentId)?.penalty ?? null;
  /** The group's agents in `at`'s queue with `at`'s penalty. */
  const agentsAt = (at: QueueAt) => {
    const inQueue = queue(at.queueId);
    return group.agent_ids.filter((agentId) => penaltyIn(inQueue, agentId) === at.penalty);
  };
  switch (move.kind) {
    case "add":
    case "move": {
      queue(move.to.queueId);
      const moving = agentsAt(move.from);
      const leaves = move.kind === "move" && move.from.queueId !== move.to.queueId;
      return moving.flatMap((agentId) => [
        { agentId, queueId: move.to.queueId, penalty: move.to.penalty },
        ...(leaves ? [{ agentId, queueId: move.from.queueId, penalty: null }] : []),
      ]);
    }
    case "remove":
      return agentsAt(move.from).map((agentId) => ({
        agentId,
        queueId: move.from.queueId,
        penalty: null,
      }));
    case "fill": {
      const target = queue(move.to.queueId);
      return group.agent_ids
        .filter((agentId) => penaltyIn(target, agentId) === null)
        .map((agentId) => ({ agentId, queueId: target.id, penalty: move.to.penalty }));
    }
  }
}

/**
 * Makes `changes`, one after the other; an agent deleted, or taken out of the queue meanwhile, is
 * skipped. Answers the queues whose members changed.
 */
export async function applyMemberships(
  services: CoreServices,
  changes: MembershipChange[],
): Promise<number[]> {
  const touched = new Set<number>();
  for (const { agentId, queueId, penalty } of changes) {
    try {
      if (penalty === null) await removeFromQueue(services, queueId, agentId);
      else await addToQueue(services, queueId, agentId, penalty);
      touched.add(queueId);
    } catch (error) {
      const gone = error instanceof SupervisionRefusal &&
        (error.reason === "agent_not_found" || error.reason === "not_in_queue");
      if (!gone) throw error;
    }
  }
  return [...touched];
}

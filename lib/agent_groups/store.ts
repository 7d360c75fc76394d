/**
 * Agent groups (docs/supervision.md, "Agent groups"): XiVO CC's teams of agents, each with a name
 * and a display name; an agent belongs to at most one group. A group keeps its agents
 * (`agent_ids`), as a queue keeps its members: moving an agent reads and writes the groups in one
 * transaction, so two moves at once cannot leave it in two groups. Administered through
 * `/1.1/agentgroups` (daemons/confd/agent_groups.ts); supervisors move agents between groups and
 * change the queues of a group's agents (`lib/agent_groups/moves.ts`).
 */
import { Collection, type Transaction } from "../store/records.ts";
import type { Store } from "../store/store.ts";

export interface AgentGroupRecord {
  id: number;
  /** Letters, digits, `-` and `_`; unique; it never changes once created. */
  name: string;
  display_name: string | null;
  /** The group's agents, in the order they joined it. */
  agent_ids: number[];
}

export const agentGroups = new Collection<AgentGroupRecord>("agent_groups", {
  name: (group) => group.name,
});

/** The fields a new group may be given; the others take their defaults (no display name). */
export type NewAgentGroup = Pick<AgentGroupRecord, "name"> & Partial<Omit<AgentGroupRecord, "id">>;

/** A complete group record: no display name, no agent. */
export function buildAgentGroup(id: number, input: NewAgentGroup): AgentGroupRecord {
  return { id, display_name: null, agent_ids: [], ...input };
}

/**
 * Creates a group; throws `UniqueConflict` when its name is taken. The agents are not checked.
 *
 * @example
 * const group = await createAgentGroup(store, { name: "team_a", display_name: "Team A" });
 */
export async function createAgentGroup(
  store: Store,
  input: NewAgentGroup,
): Promise<AgentGroupRecord> {
  return await agentGroups.put(store, buildAgentGroup(await agentGroups.nextId(store), input));
}

export const getAgentGroup = (store: Store, id: number) => agentGroups.get(store, id);
/** Every group, in id order (read-only: the collection's cached list). */
export const listAgentGroups = (store: Store) => agentGroups.all(store);

/** Each agent's group id, per list of groups (a collection's cached list is one array). */
const groupIndexes = new WeakMap<readonly AgentGroupRecord[], Map<number, number>>();

/**
 * The group id of every agent in a group among `groups`, by agent id: built once per list, so a
 * list of every agent costs one pass over the groups. An agent in no group is absent.
 *
 * @example
 * const groupOf = groupsByAgent(await listAgentGroups(store));
 * const groupId = groupOf.get(agent.id) ?? null;
 */
export function groupsByAgent(groups: readonly AgentGroupRecord[]): ReadonlyMap<number, number> {
  let index = groupIndexes.get(groups);
  if (!index) {
    index = new Map();
    for (const group of groups) for (const agentId of group.agent_ids) index.set(agentId, group.id);
    groupIndexes.set(groups, index);
  }
  return index;
}

/** The group of `agentId`, or null. */
export async function groupOfAgent(store: Store, agentId: number): Promise<number | null> {
  return groupsByAgent(await listAgentGroups(store)).get(agentId) ?? null;
}

/**
 * In `tx`, puts `agentId` in the group `groupId` (null: in none), taking it out of any other: the
 * groups are read in `tx` (their version key with them), so a concurrent move runs again. The
 * caller checked that the agent and the group exist.
 */
export async function placeAgentIn(
  tx: Transaction,
  agentId: number,
  groupId: number | null,
): Promise<void> {
  for (const group of await tx.all(agentGroups)) {
    const member = group.agent_ids.includes(agentId);
    if (group.id === groupId && !member) {
      tx.put(agentGroups, { ...group, agent_ids: [...group.agent_ids, agentId] });
    } else if (group.id !== groupId && member) {
      tx.put(agentGroups, {
        ...group,
        agent_ids: group.agent_ids.filter((id) => id !== agentId),
      });
    }
  }
}

/**
 * What a caller may see and do in supervision (docs/supervision.md, "Who is a supervisor"): a web
 * service user whose token holds the route's ACL, or an `admin` profile, sees every queue, agent
 * and agent group; a `supervisor` profile covers the queues and agent groups it lists, and the
 * agents that are members of those queues or in those groups. Anything else asked for by id is
 * 403 `Forbidden` (never a partial answer); lists are filtered.
 *
 * Rights are read when a request (or a CTI command) needs them, never taken from the token: a
 * profile changed shows at the next request (lib/rights/profiles.ts).
 */
import { type AgentGroupRecord, listAgentGroups } from "../agent_groups/store.ts";
import { ApiError } from "../errors.ts";
import { listQueues, type QueueRecord } from "../store/queues.ts";
import type { Store } from "../store/store.ts";
import { profileOf, type RightsProfileRecord } from "./profiles.ts";

/** Ids covered; null: every id. */
export type Covered = ReadonlySet<number> | null;

/** What a holder of rights covers; `key` tells two coverages apart (equal keys, equal sets). */
export interface Coverage {
  queues: Covered;
  groups: Covered;
  agents: Covered;
  key: string;
}

/** Every queue, group and agent. */
export const EVERYTHING: Coverage = { queues: null, groups: null, agents: null, key: "all" };
/** Nothing: a CTI user without a profile. */
export const NOTHING: Coverage = {
  queues: new Set(),
  groups: new Set(),
  agents: new Set(),
  key: "none",
};

export const covers = (covered: Covered, id: number): boolean =>
  covered === null || covered.has(id);

/** The coverage of each profile, for the lists it was computed from. */
const coverages = new WeakMap<
  RightsProfileRecord,
  { queues: readonly QueueRecord[]; groups: readonly AgentGroupRecord[]; coverage: Coverage }
>();

/**
 * What `profile` covers, given every queue and agent group: an admin everything; a supervisor its
 * queues and groups (those that still exist), and their agents. Kept per profile and lists.
 */
export function coverageOf(
  profile: RightsProfileRecord | null,
  queueList: readonly QueueRecord[],
  groupList: readonly AgentGroupRecord[],
): Coverage {
  if (profile === null) return NOTHING;
  if (profile.profile === "admin") return EVERYTHING;
  const kept = coverages.get(profile);
  if (kept?.queues === queueList && kept.groups === groupList) return kept.coverage;
  const queues = new Set(
    queueList.filter((q) => profile.queue_ids.includes(q.id)).map((q) => q.id),
  );
  const groups = new Set(
    groupList.filter((g) => profile.group_ids.includes(g.id)).map((g) => g.id),
  );
  const agents = new Set<number>();
  for (const queue of queueList) {
    if (queues.has(queue.id)) { for (const member of queue.members) agents.add(member.agent_id); }
  }
  for (const group of groupList) {
    if (groups.has(group.id)) { for (const id of group.agent_ids) agents.add(id); }
  }
  const sorted = (ids: Set<number>) => [...ids].sort((a, b) => a - b).join(",");
  const coverage = {
    queues,
    groups,
    agents,
    key: `q${sorted(queues)};g${sorted(groups)};a${sorted(agents)}`,
  };
  coverages.set(profile, { queues: queueList, groups: groupList, coverage });
  return coverage;
}

const refused = (message: string) => new ApiError(403, "Forbidden", message);

/** The rights of one caller, as read for one request or command. */
export class Rights {
  constructor(
    /** The CTI user's profile; null for a web service user (the route checked its ACL). */
    readonly profile: RightsProfileRecord | null,
    readonly coverage: Coverage,
  ) {}

  /** Every queue, agent and group, and every right. */
  get everything(): boolean {
    return this.coverage === EVERYTHING;
  }

  coversQueue = (id: number): boolean => covers(this.coverage.queues, id);
  coversAgent = (id: number): boolean => covers(this.coverage.agents, id);
  coversGroup = (id: number): boolean => covers(this.coverage.groups, id);

  /** 403 `Forbidden` unless the queue is covered. */
  requireQueue(id: number): void {
    if (!this.coversQueue(id)) throw refused(`queue ${id} is not in the user's rights profile`);
  }

  /** 403 `Forbidden` unless the agent is covered (a member of a covered queue, or of a group). */
  requireAgent(id: number): void {
    if (!this.coversAgent(id)) throw refused(`agent ${id} is not in the user's rights profile`);
  }

  /** 403 `Forbidden` unless the agent group is covered. */
  requireGroup(id: number): void {
    if (!this.coversGroup(id)) {
      throw refused(`agent group ${id} is not in the user's rights profile`);
    }
  }

  /** 403 `Forbidden` unless the profile may change agents' queues. */
  requireChangeQueues(): void {
    if (this.profile !== null && !this.profile.change_queues) {
      throw refused("the user's rights profile does not allow changing agents' queues");
    }
  }

  /** The items of `list` (queues, by `id`) that are covered. */
  queuesIn<T extends { id: number }>(list: readonly T[]): T[] {
    return this.everything ? [...list] : list.filter((queue) => this.coversQueue(queue.id));
  }

  /** The agents of `list` that are covered, each with its covered `queues` only. */
  agentsIn<T extends { id: number; queues: { id: number }[] }>(list: readonly T[]): T[] {
    if (this.everything) return [...list];
    return list.filter((agent) => this.coversAgent(agent.id)).map((agent) => ({
      ...agent,
      queues: agent.queues.filter((queue) => this.coversQueue(queue.id)),
    }));
  }

  /** A membership change: the right to change queues, the queue and the agent covered. */
  requireMembership(queueId: number, agentId: number): void {
    this.requireChangeQueues();
    this.requireQueue(queueId);
    this.requireAgent(agentId);
  }
}

/** A web service user's rights on a route whose ACL its token holds: everything. */
export const ALL_RIGHTS = new Rights(null, EVERYTHING);

/** The rights of the CTI user `userId` as the store says now; null without a profile. */
export async function rightsOf(store: Store, userId: number): Promise<Rights | null> {
  const profile = await profileOf(store, userId);
  if (!profile) return null;
  if (profile.profile === "admin") return new Rights(profile, EVERYTHING);
  const [queueList, groupList] = await Promise.all([listQueues(store), listAgentGroups(store)]);
  return new Rights(profile, coverageOf(profile, queueList, groupList));
}

/** The message of a CTI user refused supervision: it has no profile. */
export const NO_PROFILE = "the user has no supervisor rights profile";

/** {@link rightsOf}, or 403 `Forbidden` for a user without a profile. */
export async function requireProfile(store: Store, userId: number): Promise<Rights> {
  const rights = await rightsOf(store, userId);
  if (!rights) throw refused(NO_PROFILE);
  return rights;
}

/**
 * Whether these rights may listen to the agent `agentId`'s calls: an admin, or a supervisor whose
 * profile has `listen` and covers the agent. The one place that decides it (`listenAgent`).
 *
 * @example
 * const rights = await rightsOf(services.store, user.id);
 * if (!rights || !mayListen(rights, agentId)) throw new ApiError(403, "Forbidden", "…");
 */
export function mayListen(rights: Rights, agentId: number): boolean {
  if (rights.profile === null) return true; // a web service user holding the route's ACL
  return rights.profile.listen && rights.coversAgent(agentId);
}

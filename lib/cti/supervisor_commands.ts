/**
 * The supervisors' commands of the CTI channel (docs/cti.md, "Supervision"), as xuc's `cti.js`
 * sends them: subscriptions to queue and agent statistics and to a queue's waiting calls, a
 * queue's statistics once, an agent's queue membership (the lists of queues, agents and queue
 * members are `getList`'s, lib/config_lists/cti.ts); and (`runAgentControl`) pause, unpause and
 * log out of another agent than the user's own. Each runs through the code of the REST route doing
 * the same (`routes/supervision.ts`, `lib/supervision`), under the user's rights profile read as
 * it runs (lib/rights/): a user without one is refused `Forbidden`, and so is a queue or agent
 * its profile does not cover; what the subscriptions send is filtered by it
 * (lib/cti/supervision.ts).
 */
import type { CoreServices } from "../core_services.ts";
import { ApiError } from "../errors.ts";
import { checkBody } from "../http.ts";
import {
  addToQueue,
  logoutAgent,
  pauseAgent,
  queueFigures,
  queueStatistics,
  removeFromQueue,
  unpauseAgent,
} from "../supervision/mod.ts";
import { type Rights } from "../rights/rights.ts";
import { getQueue } from "../store/queues.ts";
import { type Command, commandSchema, type SupervisorCommandName } from "./commands.ts";
import { type CtiMessage } from "./messages.ts";
import type { SupervisionFeed, Watcher } from "./supervision.ts";

/** What a supervisor command runs with. */
export interface SupervisorCommandContext {
  services: CoreServices;
  /** The hub's supervision subscriptions. */
  feed: SupervisionFeed;
  /** The socket. */
  watcher: Watcher;
  /** Has the queues' `QueueStatistics` events sent (`Supervision.queuesChanged`). */
  queuesChanged(ids: number[]): Promise<void>;
  /** The user's rights as its profile says now; 403 `Forbidden` without one. */
  rights(): Promise<Rights>;
  /** Sends a message to this socket only. */
  reply(message: CtiMessage): void;
}

const queueNotFound = (queueId: number) =>
  new ApiError(404, "QueueNotFound", `queue ${queueId} does not exist`);

/** Runs the supervisor command `name` with the fields the client sent. */
export async function runSupervisorCommand(
  c: SupervisorCommandContext,
  name: SupervisorCommandName,
  raw: Record<string, unknown>,
): Promise<void> {
  const fields = <N extends SupervisorCommandName>(command: N): Command<N> =>
    checkBody(commandSchema(command), raw, "BadRequest") as Command<N>;
  const { services, feed, watcher } = c;
  const rights = await c.rights();
  switch (name) {
    case "subscribeToQueueStats":
      return await feed.followQueueStats(watcher);
    case "subscribeToAgentStats":
      return await feed.followAgentStats(watcher);
    case "subscribeToQueueCalls": {
      const { queueId } = fields(name);
      rights.requireQueue(queueId);
      if (!await getQueue(services.store, queueId)) throw queueNotFound(queueId);
      return await feed.followQueueCalls(watcher, queueId);
    }
    case "unSubscribeToQueueCalls":
      return feed.unfollowQueueCalls(watcher, fields(name).queueId);
    case "getQueueStatistics": {
      const { queueId } = fields(name);
      rights.requireQueue(queueId);
      const [queue] = await queueFigures(services, [queueId]);
      if (!queue) throw queueNotFound(queueId);
      return c.reply(queueStatistics(queue));
    }
    case "setAgentQueue": {
      const { agentId, queueId, penalty } = fields(name);
      rights.requireMembership(queueId, agentId);
      await addToQueue(services, queueId, agentId, penalty ?? 0);
      return await membershipChanged(c, queueId);
    }
    case "removeAgentFromQueue": {
      const { agentId, queueId } = fields(name);
      rights.requireMembership(queueId, agentId);
      await removeFromQueue(services, queueId, agentId);
      return await membershipChanged(c, queueId);
    }
  }
}

/** A membership changed outside the platform's events: the figures are sent again. */
async function membershipChanged(c: SupervisorCommandContext, queueId: number): Promise<void> {
  c.feed.changed();
  await c.queuesChanged([queueId]);
}

/** What a supervisor does to another agent. */
export type AgentControl = "pause" | "unpause" | "logout";

/**
 * Pauses (with `reason`), unpauses or logs out the agent `agentId`, one the user's rights profile
 * covers.
 */
export async function runAgentControl(
  c: Pick<SupervisorCommandContext, "services" | "rights">,
  action: AgentControl,
  agentId: number,
  reason: string | null = null,
): Promise<void> {
  (await c.rights()).requireAgent(agentId);
  if (action === "pause") await pauseAgent(c.services, agentId, reason);
  else if (action === "unpause") await unpauseAgent(c.services, agentId);
  else await logoutAgent(c.services, agentId);
}

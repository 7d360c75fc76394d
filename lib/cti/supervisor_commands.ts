/**
 * The supervisors' commands of the CTI channel (docs/cti.md, "Supervision"), as xuc's `cti.js`
 * sends them: subscriptions to queue and agent statistics and to a queue's waiting calls, a
 * queue's statistics once, an agent's queue membership (the lists of queues, agents and queue
 * members are `getList`'s, lib/config_lists/cti.ts); and (`runAgentControl`) pause, unpause and
 * log out of another agent than the user's own. Each checks the ACL of the REST route doing the same (`routes/supervision.ts`), filled with
 * the ids it names, and runs through the same code (`lib/supervision`). A supervisor (a CTI user
 * whose record has `supervision_enabled`) holds them all through `alias.supervisor`; a plain CTI
 * user is refused `Forbidden`.
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
import { getQueue } from "../store/queues.ts";
import { type Command, commandSchema, type SupervisorCommandName } from "./commands.ts";
import { type CtiMessage } from "./messages.ts";
import type { SupervisionFeed, Watcher } from "./supervision.ts";

/** The ACL of each supervisor command: the REST route's doing the same. */
export const SUPERVISOR_COMMAND_ACLS = {
  queues: "svc.rest.supervision.queues.read",
  agents: "svc.rest.supervision.agents.read",
  queueCalls: "svc.rest.supervision.queues.{queueId}.calls.read",
  join: "svc.rest.supervision.queues.{queueId}.agents.{agentId}.create",
  leave: "svc.rest.supervision.queues.{queueId}.agents.{agentId}.delete",
  pause: "svc.rest.supervision.agents.{agentId}.pause.create",
  unpause: "svc.rest.supervision.agents.{agentId}.unpause.create",
  logout: "svc.rest.supervision.agents.{agentId}.logout.create",
} as const;

/** What a supervisor command runs with. */
export interface SupervisorCommandContext {
  services: CoreServices;
  /** The hub's supervision subscriptions. */
  feed: SupervisionFeed;
  /** The socket. */
  watcher: Watcher;
  /** Has the queues' `QueueStatistics` events sent (`Supervision.queuesChanged`). */
  queuesChanged(ids: number[]): Promise<void>;
  /** Refuses (`Forbidden`, naming the ACL) unless the socket holds `template` filled with `values`. */
  authorize(template: string, values?: Record<string, string>): void;
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
  switch (name) {
    case "subscribeToQueueStats":
      c.authorize(SUPERVISOR_COMMAND_ACLS.queues);
      return await feed.followQueueStats(watcher);
    case "subscribeToAgentStats":
      c.authorize(SUPERVISOR_COMMAND_ACLS.agents);
      return await feed.followAgentStats(watcher);
    case "subscribeToQueueCalls": {
      const { queueId } = fields(name);
      c.authorize(SUPERVISOR_COMMAND_ACLS.queueCalls, { queueId: String(queueId) });
      if (!await getQueue(services.store, queueId)) throw queueNotFound(queueId);
      return await feed.followQueueCalls(watcher, queueId);
    }
    case "unSubscribeToQueueCalls":
      return feed.unfollowQueueCalls(watcher, fields(name).queueId);
    case "getQueueStatistics": {
      const { queueId } = fields(name);
      c.authorize(SUPERVISOR_COMMAND_ACLS.queues);
      const [queue] = await queueFigures(services, [queueId]);
      if (!queue) throw queueNotFound(queueId);
      return c.reply(queueStatistics(queue));
    }
    case "setAgentQueue": {
      const { agentId, queueId, penalty } = fields(name);
      c.authorize(SUPERVISOR_COMMAND_ACLS.join, ids(queueId, agentId));
      await addToQueue(services, queueId, agentId, penalty ?? 0);
      return await membershipChanged(c, queueId);
    }
    case "removeAgentFromQueue": {
      const { agentId, queueId } = fields(name);
      c.authorize(SUPERVISOR_COMMAND_ACLS.leave, ids(queueId, agentId));
      await removeFromQueue(services, queueId, agentId);
      return await membershipChanged(c, queueId);
    }
  }
}

const ids = (queueId: number, agentId: number) => ({
  queueId: String(queueId),
  agentId: String(agentId),
});

/** A membership changed outside the platform's events: the figures are sent again. */
async function membershipChanged(c: SupervisorCommandContext, queueId: number): Promise<void> {
  c.feed.changed();
  await c.queuesChanged([queueId]);
}

/** What a supervisor does to another agent. */
export type AgentControl = "pause" | "unpause" | "logout";

/**
 * Pauses (with `reason`), unpauses or logs out the agent `agentId`, under the REST route's ACL
 * (`svc.rest.supervision.agents.{agentId}.pause.create`, …).
 */
export async function runAgentControl(
  c: Pick<SupervisorCommandContext, "services" | "authorize">,
  action: AgentControl,
  agentId: number,
  reason: string | null = null,
): Promise<void> {
  c.authorize(SUPERVISOR_COMMAND_ACLS[action], { agentId: String(agentId) });
  if (action === "pause") await pauseAgent(c.services, agentId, reason);
  else if (action === "unpause") await unpauseAgent(c.services, agentId);
  else await logoutAgent(c.services, agentId);
}

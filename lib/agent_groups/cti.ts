/**
 * The agent group commands of the CTI channel (docs/cti.md, "Agent groups"), as xuc's `cti.js`
 * sends them, for supervisors only (`alias.ctiuser` grants none of them; `alias.supervisor` holds
 * them through `svc.rest.supervision.#`):
 *
 * - `setAgentGroup {agentId, groupId}`: the agent's group, under the ACL of
 *   `PUT /supervision/agents/{agentId}/group`.
 * - `addAgentsInGroup`, `moveAgentsInGroup {groupId, fromQueueId, fromPenalty, toQueueId,
 *   toPenalty}`, `removeAgentGroupFromQueueGroup`, `addAgentsNotInQueueFromGroupTo {groupId,
 *   queueId, penalty}`: the queues of a group's agents at once (`lib/agent_groups/control.ts`),
 *   under `svc.rest.supervision.agentgroups.{groupId}.update` and then, for every membership they
 *   change, the ACL of `setAgentQueue` / `removeAgentFromQueue` (checked before any change).
 *
 * Nothing is answered: the changes come as `AgentConfig` and `QueueMember` to the sockets that
 * follow the lists (`getList`).
 */
import * as z from "zod";
import { ctiCommand, type CtiCommandContext, type CtiFamily } from "../cti/command_set.ts";
import { SUPERVISOR_COMMAND_ACLS } from "../cti/supervisor_commands.ts";
import { applyMemberships, type GroupMove, planGroupMove, setAgentGroup } from "./control.ts";

/** The ACL of `setAgentGroup`: the REST route's doing the same. */
export const AGENT_GROUP_ACL = "svc.rest.supervision.agents.{agentId}.group.update";
/** The ACL of the commands changing the queues of a group's agents (no REST route). */
export const GROUP_QUEUES_ACL = "svc.rest.supervision.agentgroups.{groupId}.update";

const id = () => z.number().int();
const penalty = () => z.number().int().min(0).max(2147483647);

/** Plans `move` for the group, checks every change's ACL, then makes them. */
async function moveGroup(c: CtiCommandContext, groupId: number, move: GroupMove): Promise<void> {
  c.authorize(GROUP_QUEUES_ACL, { groupId: String(groupId) });
  const changes = await planGroupMove(c.services, groupId, move);
  for (const { agentId, queueId, penalty } of changes) {
    c.authorize(penalty === null ? SUPERVISOR_COMMAND_ACLS.leave : SUPERVISOR_COMMAND_ACLS.join, {
      queueId: String(queueId),
      agentId: String(agentId),
    });
  }
  const queues = await applyMemberships(c.services, changes);
  c.services.cti.supervision.changed();
  await c.services.supervision.queuesChanged(queues);
}

const fromTo = () =>
  z.object({
    groupId: id(),
    fromQueueId: id(),
    fromPenalty: penalty(),
    toQueueId: id(),
    toPenalty: penalty(),
  });
const inQueue = () => z.object({ groupId: id(), queueId: id(), penalty: penalty() });

type FromTo = z.infer<ReturnType<typeof fromTo>>;
const between = (kind: "add" | "move", f: FromTo): GroupMove => ({
  kind,
  from: { queueId: f.fromQueueId, penalty: f.fromPenalty },
  to: { queueId: f.toQueueId, penalty: f.toPenalty },
});

export const agentGroupFamily: CtiFamily = {
  commands: {
    setAgentGroup: ctiCommand({
      fields: () => z.object({ agentId: id(), groupId: id().nullable() }),
      acl: null, // the agent's, checked as it runs
      ctiUser: false,
      async run(c, { agentId, groupId }) {
        c.authorize(AGENT_GROUP_ACL, { agentId: String(agentId) });
        await setAgentGroup(c.services, agentId, groupId);
        c.services.cti.supervision.changed();
      },
    }),
    addAgentsInGroup: ctiCommand({
      fields: fromTo,
      acl: null,
      ctiUser: false,
      run: (c, fields) => moveGroup(c, fields.groupId, between("add", fields)),
    }),
    moveAgentsInGroup: ctiCommand({
      fields: fromTo,
      acl: null,
      ctiUser: false,
      run: (c, fields) => moveGroup(c, fields.groupId, between("move", fields)),
    }),
    removeAgentGroupFromQueueGroup: ctiCommand({
      fields: inQueue,
      acl: null,
      ctiUser: false,
      run: (c, { groupId, queueId, penalty }) =>
        moveGroup(c, groupId, { kind: "remove", from: { queueId, penalty } }),
    }),
    addAgentsNotInQueueFromGroupTo: ctiCommand({
      fields: inQueue,
      acl: null,
      ctiUser: false,
      run: (c, { groupId, queueId, penalty }) =>
        moveGroup(c, groupId, { kind: "fill", to: { queueId, penalty } }),
    }),
  },
};

/**
 * The agent group commands of the CTI channel (docs/cti.md, "Agent groups"), as xuc's `cti.js`
 * sends them, for supervisors only, under their rights profile (lib/rights/):
 *
 * - `setAgentGroup {agentId, groupId}`: the agent's group, as
 *   `PUT /supervision/agents/{agentId}/group` (the agent covered, and the group unless null).
 * - `addAgentsInGroup`, `moveAgentsInGroup {groupId, fromQueueId, fromPenalty, toQueueId,
 *   toPenalty}`, `removeAgentGroupFromQueueGroup`, `addAgentsNotInQueueFromGroupTo {groupId,
 *   queueId, penalty}`: the queues of a group's agents at once (`lib/agent_groups/control.ts`):
 *   the group covered, the right to change agents' queues, the queues they name and every
 *   membership they change covered (its queue and agent), checked before any change.
 *
 * Nothing is answered: the changes come as `AgentConfig` and `QueueMember` to the sockets that
 * follow the lists (`getList`).
 */
import * as z from "zod";
import { ctiCommand, type CtiCommandContext, type CtiFamily } from "../cti/command_set.ts";
import { applyMemberships, type GroupMove, planGroupMove, setAgentGroup } from "./control.ts";

const id = () => z.number().int();
const penalty = () => z.number().int().min(0).max(2147483647);

/** Plans `move` for the group, checks every change against the rights, then makes them. */
async function moveGroup(c: CtiCommandContext, groupId: number, move: GroupMove): Promise<void> {
  const rights = await c.rights();
  rights.requireGroup(groupId);
  rights.requireChangeQueues();
  // both queues it names, even the one it only reads (an `add` reads who is in `from`)
  if ("from" in move) rights.requireQueue(move.from.queueId);
  if ("to" in move) rights.requireQueue(move.to.queueId);
  const changes = await planGroupMove(c.services, groupId, move);
  for (const { agentId, queueId } of changes) rights.requireMembership(queueId, agentId);
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
      acl: null, // the rights profile's, checked as it runs
      async run(c, { agentId, groupId }) {
        const rights = await c.rights();
        rights.requireAgent(agentId);
        if (groupId !== null) rights.requireGroup(groupId);
        await setAgentGroup(c.services, agentId, groupId);
        c.services.cti.supervision.changed();
      },
    }),
    addAgentsInGroup: ctiCommand({
      fields: fromTo,
      acl: null,
      run: (c, fields) => moveGroup(c, fields.groupId, between("add", fields)),
    }),
    moveAgentsInGroup: ctiCommand({
      fields: fromTo,
      acl: null,
      run: (c, fields) => moveGroup(c, fields.groupId, between("move", fields)),
    }),
    removeAgentGroupFromQueueGroup: ctiCommand({
      fields: inQueue,
      acl: null,
      run: (c, { groupId, queueId, penalty }) =>
        moveGroup(c, groupId, { kind: "remove", from: { queueId, penalty } }),
    }),
    addAgentsNotInQueueFromGroupTo: ctiCommand({
      fields: inQueue,
      acl: null,
      run: (c, { groupId, queueId, penalty }) =>
        moveGroup(c, groupId, { kind: "fill", to: { queueId, penalty } }),
    }),
  },
};

/**
 * The configuration of the CTI channel (docs/cti.md, "Configuration"), as xuc's clients ask for
 * it:
 *
 * - `getConfig {objectType}`: once, one message per object: `user` (or none) `UserConfigUpdate`,
 *   `line` `LineConfig` (anyone's own); `queue` one `QueueConfig` per queue, `agent` one
 *   `AgentConfig` per agent, `queuemember` one `QueueMember` per membership (a supervisor's).
 * - `getList {objectType}`: `queue`, `agent`, `queuemember`, `agentgroup` (a supervisor's): the
 *   list (`QueueList`, `AgentList`, `QueueMemberList`, `AgentGroupList`), then its changes
 *   (lib/cti/supervision.ts); `meetme` (anyone, `cti.js`'s `getConferenceRooms`): the conference
 *   rooms once (`ConferenceList`).
 * - `getAgentDirectory` (a supervisor's): `AgentDirectory`, every agent with its state.
 *
 * A supervisor's list needs a rights profile (lib/rights/), and holds what it covers: the queues,
 * the agents, the memberships of those, the agent groups.
 */
import * as z from "zod";
import { agentStatuses } from "../agent_control.ts";
import { groupsByAgent, listAgentGroups } from "../agent_groups/store.ts";
import { ctiCommand, type CtiFamily } from "../cti/command_set.ts";
import { agentStateEvent, userConfig } from "../cti/messages.ts";
import { agentConfig, LIST_TYPES, type ListType, queueConfig } from "../cti/supervision.ts";
import type { Rights } from "../rights/rights.ts";
import { ApiError } from "../errors.ts";
import { listAgents } from "../store/agents.ts";
import { listQueues, type QueueRecord } from "../store/queues.ts";
import type { Store } from "../store/store.ts";
import { conferenceRooms } from "./conference_rooms.ts";
import { lineConfigMessage, lineConfigOf } from "../cti_session/line_config.ts";

const isListType = (type: string): type is ListType =>
  (LIST_TYPES as readonly string[]).includes(type);

const unknownType = (objectType: string, known: readonly string[]) =>
  new ApiError(
    400,
    "BadRequest",
    `unknown objectType ${JSON.stringify(objectType)} (${known.join(", ")})`,
  );

const CONFIG_TYPES = ["user", "line", "queue", "agent", "queuemember"] as const;
const GET_LIST_TYPES = [...LIST_TYPES, "meetme"] as const;

/** A queue record as `QueueConfig` shows it. */
const queueConfigOf = (queue: QueueRecord) =>
  queueConfig({ ...queue, displayName: queue.display_name });

/** The agents `rights` cover, and each as `AgentConfig` shows it (with its group), in id order. */
async function agentConfigs(store: Store, rights: Rights) {
  const [all, groups] = await Promise.all([listAgents(store), listAgentGroups(store)]);
  const agents = all.filter((agent) => rights.coversAgent(agent.id));
  const groupOf = groupsByAgent(groups);
  return {
    agents,
    configs: agents.map((agent) => agentConfig(agent, groupOf.get(agent.id) ?? null)),
  };
}

export const configFamily: CtiFamily = {
  commands: {
    getConfig: ctiCommand({
      fields: () => z.object({ objectType: z.string().optional() }),
      acl: null, // none for the user's own; a rights profile for the others, checked as it runs
      async run(c, { objectType = "user" }) {
        const { store } = c.services;
        switch (objectType) {
          case "user":
            return c.reply(userConfig(c.user));
          case "line":
            return c.reply(lineConfigMessage(await lineConfigOf(store, c.user)));
          case "queue": {
            const rights = await c.rights();
            for (const queue of rights.queuesIn(await listQueues(store))) {
              c.reply({ msgType: "QueueConfig", ctiMessage: queueConfigOf(queue) });
            }
            return;
          }
          case "agent":
            for (const agent of (await agentConfigs(store, await c.rights())).configs) {
              c.reply({ msgType: "AgentConfig", ctiMessage: agent });
            }
            return;
          case "queuemember": {
            const rights = await c.rights();
            for (const queue of rights.queuesIn(await listQueues(store))) {
              for (const member of queue.members) {
                if (!rights.coversAgent(member.agent_id)) continue;
                c.reply({
                  msgType: "QueueMember",
                  ctiMessage: {
                    agentId: member.agent_id,
                    queueId: queue.id,
                    penalty: member.penalty,
                  },
                });
              }
            }
            return;
          }
          default:
            throw unknownType(objectType, CONFIG_TYPES);
        }
      },
    }),
    getList: ctiCommand({
      fields: () => z.object({ objectType: z.string() }),
      acl: null, // a supervisor's rights profile for the lists it follows, checked as it runs
      async run(c, { objectType }) {
        if (objectType === "meetme") {
          const rooms = await conferenceRooms(c.services, c.user);
          return c.reply({ msgType: "ConferenceList", ctiMessage: rooms });
        }
        if (!isListType(objectType)) throw unknownType(objectType, GET_LIST_TYPES);
        await c.rights(); // a supervisor's: the feed sends what its profile covers
        await c.services.cti.supervision.followList(c.session, objectType);
      },
    }),
    getAgentDirectory: ctiCommand({
      fields: () => z.object({}),
      acl: null, // a rights profile: the agents it covers
      async run(c) {
        const { agents, configs } = await agentConfigs(c.services.store, await c.rights());
        const statuses = await agentStatuses(c.services, agents);
        c.reply({
          msgType: "AgentDirectory",
          ctiMessage: {
            directory: configs.map((agent, i) => ({
              agent,
              agentState: agentStateEvent(statuses[i]!).ctiMessage,
            })),
          },
        });
      },
    }),
  },
};

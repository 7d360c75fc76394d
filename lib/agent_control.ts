/**
 * What the agent daemon (`/agents`), the 1.0 API and the callback workflow share about agents:
 * their status (decisions §9), who is logged on a phone, and the user whose line an agent is
 * logged on. Commands (login, logout, pause, unpause) go straight to the platform port; its
 * refusals (`PlatformRefusal`: `no_extension`, `already_logged`, `extension_in_use`,
 * `not_logged`) are for each area to answer in its own form.
 */
import type { AgentStateName } from "./platform/port.ts";
import type { Services } from "./services.ts";
import { type AgentRecord, listAgents } from "./store/agents.ts";
import { findExtension } from "./store/extensions.ts";
import { getLine, lineInterface } from "./store/lines.ts";
import { listQueues, membershipsOf } from "./store/queues.ts";
import { getUser, type UserRecord } from "./store/users.ts";

/** An agent's status as the agent daemon answers it (decisions §9). */
export interface AgentStatus {
  id: number;
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
 * fields null.
 *
 * @example
 * const [status] = await agentStatuses(services, [agent]);
 */
export async function agentStatuses(
  services: Services,
  agents: AgentRecord[],
): Promise<AgentStatus[]> {
  const queueList = await listQueues(services.store);
  return await Promise.all(agents.map(async (agent) => {
    const presence = await services.platform.agentPresence(agent.id);
    const logged = presence.logged && presence.extension !== null && presence.context !== null;
    return {
      id: agent.id,
      number: agent.number,
      logged,
      paused: logged && presence.paused,
      paused_reason: logged ? presence.pausedReason : null,
      extension: logged ? presence.extension : null,
      context: logged ? presence.context : null,
      state_interface: logged
        ? await stateInterface(services, presence.extension!, presence.context!)
        : null,
      state: logged ? presence.state : "AgentLoggedOut",
      queues: membershipsOf(queueList, agent.id).map(({ id, name }) => ({ id, name })),
    };
  }));
}

/** The status of one agent. */
export async function agentStatus(services: Services, agent: AgentRecord): Promise<AgentStatus> {
  return (await agentStatuses(services, [agent]))[0]!;
}

/** The interface of the line holding `extension` in `context` (`SIP/…`, `SCCP/…`, custom), or null. */
export async function stateInterface(
  services: Services,
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
  services: Services,
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
  services: Services,
  status: AgentStatus,
): Promise<UserRecord | null> {
  if (!status.logged) return null;
  const line = await lineOfExtension(services, status.extension!, status.context!);
  const userId = line?.user_ids[0];
  return userId === undefined ? null : await getUser(services.store, userId);
}

async function lineOfExtension(services: Services, extension: string, context: string) {
  const found = await findExtension(services.store, extension, context);
  return found?.line_id == null ? null : await getLine(services.store, found.line_id);
}

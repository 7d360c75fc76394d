/**
 * A CTI user's presence (docs/cti.md, "Presence and phone hints"): choosing one of the statuses
 * (lib/presence/statuses.ts) runs its actions, stores it (lib/presence/store.ts) and tells every
 * socket of the user, in every process sharing the store, `UserStatusUpdate`.
 */
import { agentOfUser } from "../agent_control.ts";
import { changeDnd } from "../control.ts";
import type { CtiCommandContext } from "../cti/command_set.ts";
import type { CtiMessage } from "../cti/messages.ts";
import { ApiError } from "../errors.ts";
import type { Services } from "../services.ts";
import type { UserRecord } from "../store/users.ts";
import { type PresenceActionName, type UserStatus } from "./statuses.ts";
import { readStatuses, writePresence } from "./store.ts";

/** `UsersStatuses`: the statuses the user may choose, as `cti.js`'s clients read them. */
export const usersStatuses = (statuses: readonly UserStatus[]): CtiMessage => ({
  msgType: "UsersStatuses",
  ctiMessage: statuses,
});

/** `UserStatusUpdate`: the status the user shows now. */
export const userStatusUpdate = (status: string): CtiMessage => ({
  msgType: "UserStatusUpdate",
  ctiMessage: { status },
});

/**
 * The ACL a socket needs for each action of the status it chooses: that of the command doing the
 * same (`dnd`, `agentLogout`, `pauseAgent`, `unpauseAgent`), so that a token denying one cannot
 * have it done through a presence.
 */
const ACTION_ACLS: Record<PresenceActionName, string> = {
  enablednd: "svc.rest.dnd.{username}.create",
  agentlogoff: "agentd.users.me.agents.logoff.create",
  queuepause_all: "agentd.users.me.agents.pause.create",
  queueunpause_all: "agentd.users.me.agents.unpause.create",
};

/**
 * The socket's user chooses the status `name`: an unknown one, or an action the socket may not
 * do, is refused with nothing changed; else its actions run, it is stored, and every socket of the
 * user is sent `UserStatusUpdate`.
 */
export async function choosePresence(c: CtiCommandContext, name: string): Promise<void> {
  const { services, user } = c;
  const status = (await readStatuses(services.store)).find((status) => status.name === name);
  if (!status) throw new ApiError(400, "BadRequest", `unknown status ${JSON.stringify(name)}`);
  for (const action of status.actions) c.authorize(ACTION_ACLS[action.name]);
  await runActions(services, user, status);
  await writePresence(services.store, user.id, status.name, services.clock.now());
  await services.events.notify([{
    username: user.username ?? "",
    notice: true,
    message: userStatusUpdate(status.name),
  }]);
}

/**
 * What XiVO's CTI server does on a presence change: DND set as the status says (when it differs),
 * and the user's agent, when logged in, logged off, paused (the status's name as reason) or
 * unpaused.
 */
async function runActions(services: Services, user: UserRecord, status: UserStatus) {
  for (const action of status.actions) {
    if (action.name === "enablednd") {
      const enabled = action.parameters === "true";
      if (user.services.dnd.enabled !== enabled) await changeDnd(services, user, enabled);
      continue;
    }
    const agent = await agentOfUser(services, user);
    const presence = agent && await services.platform.agentPresence(agent.id);
    if (!agent || !presence?.logged) continue;
    if (action.name === "agentlogoff") {
      await services.platform.agentLogout(agent.id);
    } else if (action.name === "queuepause_all" && !presence.paused) {
      await services.platform.agentPause(agent.id, status.name);
    } else if (action.name === "queueunpause_all" && presence.paused) {
      await services.platform.agentUnpause(agent.id);
    }
  }
}

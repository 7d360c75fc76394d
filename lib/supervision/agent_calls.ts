/**
 * What the CTI channel does with an agent's call (docs/cti.md, "Listening and recordings"):
 * `listenAgent`, a supervisor listening to it (the supervisor's phone rings and, answered, hears it
 * without being heard: the platform's `listen`), and `monitorPause` / `monitorUnpause`, pausing and
 * resuming its recording (the platform's `record` pause and resume on the agent's party).
 *
 * Who may: listening is a rights profile's (lib/rights/): an admin, or a supervisor whose profile
 * has `listen` and covers the agent; pausing the recording of the user's own agent's call is the
 * user's (the call daemon's `calld.users.me.calls.{call_id}.record.pause.update`, as on `/1.0`),
 * another agent's a profile's that covers the agent and has `recording` (an admin's).
 *
 * `AgentListen` `{started, phoneNumber, agentId}` goes to the agent's user (xuc's agent client
 * reads it) and to the supervisor listening, when listening starts and when it stops
 * (lib/supervision/listen_notices.ts).
 */
import * as z from "zod";
import { agentOfUser } from "../agent_control.ts";
import { ctiCommand, type CtiCommandContext, type CtiFamily } from "../cti/command_set.ts";
import type { CoreServices } from "../core_services.ts";
import { ApiError } from "../errors.ts";
import type { LiveCall } from "../platform/call_control.ts";
import { PlatformRefusal } from "../platform/port.ts";
import { mayListen } from "../rights/rights.ts";
import { getAgent } from "../store/agents.ts";
import { findExtension } from "../store/extensions.ts";

/** The ACLs of the commands on the user's own agent's call. */
export const AGENT_CALL_ACLS = {
  ownPause: "calld.users.me.calls.{call_id}.record.pause.update",
  ownResume: "calld.users.me.calls.{call_id}.record.resume.update",
} as const;

/** The platform's refusals, in the CTI channel's words. */
const REFUSALS: Record<string, [400 | 409, string]> = {
  no_line: [400, "NoLine"],
  not_logged: [409, "NotLogged"],
  not_on_call: [409, "NoCall"],
  no_call: [409, "NoCall"],
  not_talking: [409, "NoCall"],
  recording_not_started: [409, "RecordingNotStarted"],
};

/** Runs `run`, a platform refusal answered in the channel's words (others as they come). */
async function refusing<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    const known = error instanceof PlatformRefusal ? REFUSALS[error.reason] : undefined;
    if (!known) throw error;
    throw new ApiError(known[0], known[1], (error as Error).message);
  }
}

/** The agent `agentId`; `AgentNotFound` when there is none. */
async function agentOf(services: CoreServices, agentId: number) {
  const agent = await getAgent(services.store, agentId);
  if (!agent) throw new ApiError(404, "AgentNotFound", `agent ${agentId} does not exist`);
  return agent;
}

/**
 * The party of the call the agent's phone talks on (its newest; a recorded one first): refused
 * `NotLogged` when the agent is out, `NoCall` when its phone talks on none.
 */
async function agentCall(services: CoreServices, agentId: number): Promise<LiveCall> {
  const presence = await services.platform.agentPresence(agentId);
  if (!presence.logged || presence.extension === null || presence.context === null) {
    throw new ApiError(409, "NotLogged", `agent ${agentId} is not logged in`);
  }
  const extension = await findExtension(services.store, presence.extension, presence.context);
  const calls = (await services.platform.liveCalls()).filter((call) =>
    call.lineId !== null && call.lineId === extension?.line_id && call.state === "up"
  );
  const call = calls.findLast((one) => one.record !== "inactive") ?? calls.at(-1);
  if (!call) throw new ApiError(409, "NoCall", `agent ${agentId} is on no call`);
  return call;
}

/** `agentid` as `cti.js` sends it: the agent's id (a number); left out, the user's own agent. */
const agentFields = () => z.object({ agentid: z.number().int().positive().optional() });

/**
 * Pauses (`pause`) or resumes the recording of the call of `agentid`, the user's own agent when
 * left out or its own.
 */
async function monitor(
  c: CtiCommandContext,
  agentid: number | undefined,
  pause: boolean,
): Promise<void> {
  const { services } = c;
  const own = await agentOfUser(services, c.user);
  const agentId = agentid ?? own?.id;
  if (agentId === undefined) {
    throw new ApiError(404, "AgentNotFound", `user ${c.user.username} has no agent`);
  }
  if (agentId !== own?.id) {
    const rights = await c.rights();
    rights.requireAgent(agentId);
    if (rights.profile !== null && !rights.profile.recording) {
      throw new ApiError(403, "Forbidden", "the user's rights profile does not allow recordings");
    }
    await agentOf(services, agentId);
  }
  const call = await agentCall(services, agentId);
  if (agentId === own?.id) {
    c.authorize(pause ? AGENT_CALL_ACLS.ownPause : AGENT_CALL_ACLS.ownResume, {
      call_id: call.callId,
    });
  }
  await refusing(() =>
    services.platform.callCommand(call.callId, {
      kind: "record",
      action: pause ? "pause" : "resume",
    })
  );
}

/** `listenAgent`, `monitorPause`, `monitorUnpause`. */
export const AGENT_CALL_FAMILY: CtiFamily = {
  commands: {
    listenAgent: ctiCommand({
      fields: () => z.object({ agentid: z.number().int().positive() }),
      acl: null, // a rights profile's, checked with the agent's id
      async run(c, { agentid }) {
        if (!mayListen(await c.rights(), agentid)) {
          throw new ApiError(
            403,
            "Forbidden",
            `the user's rights profile may not listen to agent ${agentid}`,
          );
        }
        await agentOf(c.services, agentid);
        await refusing(() => c.services.platform.listen(c.user, agentid));
      },
    }),
    monitorPause: ctiCommand({
      fields: agentFields,
      acl: null, // the own agent's call's, or a supervisor's, once known
      run: (c, { agentid }) => monitor(c, agentid, true),
    }),
    monitorUnpause: ctiCommand({
      fields: agentFields,
      acl: null,
      run: (c, { agentid }) => monitor(c, agentid, false),
    }),
  },
};

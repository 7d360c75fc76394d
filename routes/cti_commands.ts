/**
 * The commands a client sends on the CTI socket (docs/cti.md), each through the same code and the
 * same ACL as its REST route, for the socket's own user: `dial` is `POST /dial/number/{me}`
 * (ACL `svc.rest.dial.number.{me}.create`), `dnd` is `POST /dnd/{me}`, the forwards are
 * `POST /forward/{kind}/{me}`, the agent commands are the agent daemon's `/users/me/agents/…`, the
 * commands on the user's calls the call daemon's `/users/me/calls|transfers|conferences/…`
 * (lib/cti/call_commands.ts). What `alias.ctiuser` grants a CTI user on the socket is
 * {@link ctiChannelAcls}; a token may still deny any of it (`!svc.rest.dnd.#`).
 *
 * A command that fails answers one `Error` message naming it; the socket stays open.
 */
import { agentOfUser, agentStatuses } from "../lib/agent_control.ts";
import { agentGroupFamily } from "../lib/agent_groups/cti.ts";
import { CTI_USER_ALIAS, isAllowed } from "../lib/auth/acl.ts";
import { requireProfile, type Rights, rightsOf } from "../lib/rights/rights.ts";
import { fillAcl } from "../lib/auth/guard.ts";
import { CTI_CALLD_ACLS } from "../lib/calls/acls.ts";
import { chat } from "../lib/chat/mod.ts";
import { changeDnd, changeForward } from "../lib/control.ts";
import { historyFamily } from "../lib/call_history/cti.ts";
import { DIRECTORY } from "../lib/directory/mod.ts";
import { runCallCommand } from "../lib/cti/call_commands.ts";
import { configFamily } from "../lib/config_lists/cti.ts";
import {
  type AgentControl,
  runAgentControl,
  runSupervisorCommand,
} from "../lib/cti/supervisor_commands.ts";
import type { CtiCommandSpec, CtiFamily } from "../lib/cti/command_set.ts";
import { PBX_COMMAND_FAMILY } from "../lib/cti/pbx_commands.ts";
import { AGENT_CALL_FAMILY } from "../lib/supervision/agent_calls.ts";
import { VOICEMAIL_FAMILY } from "../lib/voicemail/mwi.ts";
import { meetingRoomFamily } from "../lib/meetingrooms/cti.ts";
import type { CtiSession } from "../lib/cti/hub.ts";
import {
  type CallCommandName,
  type Command,
  type CommandName,
  commandSchema,
  envelopeSchema,
  isCallCommand,
  isCommandName,
  isSupervisorCommand,
  type SupervisorCommandName,
} from "../lib/cti/commands.ts";
import { agentStateEvent, ctiError, type CtiMessage, PONG } from "../lib/cti/messages.ts";
import { agentErrorOr } from "../lib/cti_session/agent_error.ts";
import { sessionFamily } from "../lib/cti_session/mod.ts";
import { dialOf, readyToDial } from "../lib/dial.ts";
import { ApiError, Unreachable } from "../lib/errors.ts";
import { checkBody } from "../lib/http.ts";
import { PlatformRefusal } from "../lib/platform/port.ts";
import { presenceFamily } from "../lib/presence/commands.ts";
import type { Services } from "../lib/services.ts";
import { SupervisionRefusal } from "../lib/supervision/mod.ts";
import { listAgents } from "../lib/store/agents.ts";
import { getExtension } from "../lib/store/extensions.ts";
import { getLine } from "../lib/store/lines.ts";
import { getUser, type UserRecord } from "../lib/store/users.ts";

/** The longest message a client may send (characters). */
export const MAX_MESSAGE = 65_536;

/**
 * The ACL each command needs, `{username}` being the socket's user; null: none. The commands on
 * the user's calls check theirs as they run (lib/cti/call_commands.ts `CALL_ACLS`); the
 * supervisors' check the user's rights profile (lib/rights/) as they run, and so do the agent
 * commands below naming another agent than the user's own ({@link OWN_AGENT_COMMANDS}).
 */
const COMMAND_ACLS: Record<
  Exclude<CommandName, CallCommandName | SupervisorCommandName>,
  string | null
> = {
  dial: "svc.rest.dial.number.{username}.create",
  dialFromMobile: "svc.rest.dial.number.{username}.create",
  dialFromQueue: "svc.rest.dial.fromqueue.create",
  dnd: "svc.rest.dnd.{username}.create",
  uncFwd: "svc.rest.forward.unconditional.{username}.create",
  naFwd: "svc.rest.forward.noanswer.{username}.create",
  busyFwd: "svc.rest.forward.busy.{username}.create",
  agentLogin: "agentd.users.me.agents.login.create",
  agentLogout: "agentd.users.me.agents.logoff.create",
  pauseAgent: "agentd.users.me.agents.pause.create",
  unpauseAgent: "agentd.users.me.agents.unpause.create",
  getAgentStates: null,
  subscribeToAgentEvents: null,
};

/**
 * The agent commands that act on the user's own agent under the ACL above, or, naming another
 * agent in `agentid`, on that one as a supervisor (its rights profile must cover it): checked
 * once the agent is known.
 */
const OWN_AGENT_COMMANDS: ReadonlySet<CommandName> = new Set([
  "agentLogout",
  "pauseAgent",
  "unpauseAgent",
]);

/**
 * The commands of the concerns with a folder of their own (lib/cti/command_set.ts), in the order
 * their greetings are sent.
 */
const FAMILIES: CtiFamily[] = [
  sessionFamily,
  presenceFamily,
  VOICEMAIL_FAMILY,
  DIRECTORY,
  chat,
  configFamily,
  historyFamily,
  agentGroupFamily,
  AGENT_CALL_FAMILY,
  PBX_COMMAND_FAMILY,
  meetingRoomFamily,
];

/** Each family's command by name. */
const FAMILY_COMMANDS = new Map(
  FAMILIES.flatMap((family) => Object.entries(family.commands)),
);

/**
 * What `alias.ctiuser` grants on the socket: the commands on the user's own services, agent and
 * calls (the call daemon's `calld.users.me.#`, as on `/1.0`), and the families' commands (the
 * supervisors' need none: their rights profile decides).
 */
export function ctiChannelAcls(username: string): string[] {
  return [
    ...Object.entries(COMMAND_ACLS)
      .filter(([name, acl]) => acl !== null && name !== "dialFromQueue")
      .map(([, acl]) => fillAcl(acl!, { username })),
    ...CTI_CALLD_ACLS,
    ...[...FAMILY_COMMANDS.values()]
      .filter((spec) => spec.acl !== null)
      .map((spec) => fillAcl(spec.acl!, { username })),
  ];
}

/** Hands each family's notices to this process's sockets its own way (`CtiFamily.notices`). */
export function handleNotices(services: Services): void {
  for (const family of FAMILIES) {
    for (const [msgType, handle] of Object.entries(family.notices ?? {})) {
      services.cti.handleNotices(msgType, (sessions, notice) => handle(services, sessions, notice));
    }
  }
}

/** Sends what each family sends a socket that opened (after the hub's greeting). */
export async function greet(services: Services, session: CtiSession): Promise<void> {
  if (!FAMILIES.some((family) => family.greet)) return;
  const user = await getUser(services.store, session.user.id);
  if (!user) return;
  const reply = (message: CtiMessage) => session.send(message);
  for (const family of FAMILIES) {
    if (session.closed || !family.greet) continue;
    try {
      await family.greet({ services, session, user, reply });
    } catch (error) {
      services.logger.error("CTI greeting failed", { error: String(error) });
    }
  }
}

/** The socket user's grants: the token's, plus the channel's for a CTI user. */
function grantsOf(session: CtiSession): readonly string[] {
  const { acls } = session.identity;
  return acls.includes(CTI_USER_ALIAS) ? [...acls, ...ctiChannelAcls(session.username)] : acls;
}

/** Reads one message of the client and runs it; everything that goes wrong is an `Error` message. */
export async function handleMessage(
  services: Services,
  session: CtiSession,
  data: unknown,
): Promise<void> {
  let command: string | undefined;
  try {
    if (typeof data !== "string") throw new ApiError(400, "BadRequest", "messages are JSON text");
    if (data.length > MAX_MESSAGE) {
      throw new ApiError(400, "BadRequest", `message longer than ${MAX_MESSAGE} characters`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      throw new ApiError(400, "BadRequest", "the message is not valid JSON");
    }
    const envelope = envelopeSchema.safeParse(parsed);
    if (!envelope.success) {
      throw new ApiError(400, "BadRequest", "a message is a JSON object with a string claz");
    }
    const { claz, command: name, ...fields } = envelope.data;
    command = name;
    if (claz === "ping") return session.send(PONG);
    if (claz !== "web") {
      throw new ApiError(400, "BadRequest", `unknown claz ${JSON.stringify(claz)}`);
    }
    if (name === undefined) throw new ApiError(400, "BadRequest", "a web message names a command");
    const family = FAMILY_COMMANDS.get(name);
    if (family) return await runFamilyCommand(services, session, family, fields);
    if (!isCommandName(name)) {
      throw new ApiError(400, "UnknownCommand", `unknown command ${JSON.stringify(name)}`);
    }
    const acl = isCallCommand(name) || isSupervisorCommand(name) || OWN_AGENT_COMMANDS.has(name)
      ? null
      : COMMAND_ACLS[name];
    if (acl !== null) authorize(session, acl);
    await run(services, session, await currentUser(services, session), name, fields);
  } catch (error) {
    session.send(agentErrorOr(errorMessage(services, error, command)));
  }
}

/** Runs a command of a family (lib/cti/command_set.ts) for the user as it is now. */
async function runFamilyCommand(
  services: Services,
  session: CtiSession,
  spec: CtiCommandSpec,
  raw: Record<string, unknown>,
): Promise<void> {
  if (spec.acl !== null) authorize(session, spec.acl);
  const user = await currentUser(services, session);
  const fields = checkBody(spec.fields(), raw, "BadRequest");
  await spec.run({
    services,
    session,
    user,
    authorize: (template, values) => authorize(session, template, values),
    rights: () => sessionRights(services, session),
    reply: (message) => session.send(message),
  }, fields);
}

/**
 * The socket's user as it is now (services, lines and agent may have changed since it opened),
 * shown so by every socket of the user from now on.
 */
async function currentUser(services: Services, session: CtiSession): Promise<UserRecord> {
  const user = await getUser(services.store, session.user.id);
  if (!user) throw new ApiError(400, "UserNotFound", "the socket's user no longer exists");
  services.cti.refresh(session, user);
  return user;
}

/** The socket user's supervision rights as its profile says now; 403 `Forbidden` without one. */
const sessionRights = (services: Services, session: CtiSession): Promise<Rights> =>
  requireProfile(services.store, session.user.id);

/** Refuses (`Forbidden`) unless the socket holds `template` filled with its user and `values`. */
function authorize(session: CtiSession, template: string, values: Record<string, string> = {}) {
  const required = fillAcl(template, { username: session.username, ...values });
  if (!isAllowed(grantsOf(session), required, session.identity.userId)) {
    throw new ApiError(403, "Forbidden", `missing ACL ${required}`);
  }
}

function errorMessage(services: Services, error: unknown, command?: string): CtiMessage {
  if (error instanceof ApiError) return ctiError(error.code, error.message, command);
  if (error instanceof PlatformRefusal) return ctiError(refusalCode(error), error.message, command);
  if (error instanceof SupervisionRefusal) {
    return ctiError(SUPERVISION_CODES[error.reason], error.message, command);
  }
  if (error instanceof Unreachable) return ctiError("Unreachable", error.message, command);
  services.logger.error("CTI command failed", { command, error: String(error) });
  return ctiError("NotHandledError", "unexpected error", command);
}

/** The `error` of each refusal of the platform or of `lib/calls/` (others are `BadRequest`). */
const REFUSAL_CODES: Record<string, string> = {
  no_call: "NoCall",
  no_line: "NoLine",
  not_supported: "NotSupported",
  already_logged: "AlreadyLogged",
  not_logged: "NotLogged",
  not_yours: "Forbidden",
  not_ringing: "NotRinging",
  not_talking: "NotTalking",
  not_held: "NotHeld",
  held_by_phone: "HeldByPhone",
  recording_not_started: "RecordingNotStarted",
  no_transfer: "NoTransfer",
  transfer_exists: "TransferInProgress",
  in_transfer: "TransferInProgress",
  no_conference: "NoConference",
  in_conference: "InConference",
  not_peer: "NotPeer",
};

const refusalCode = (refusal: PlatformRefusal) => REFUSAL_CODES[refusal.reason] ?? "BadRequest";

/** The `error` of each refusal of a supervisor's command (lib/supervision). */
const SUPERVISION_CODES: Record<SupervisionRefusal["reason"], string> = {
  agent_not_found: "AgentNotFound",
  queue_not_found: "QueueNotFound",
  not_logged: "NotLogged",
  not_in_queue: "AgentNotInQueue",
};

/** Runs one checked command. */
async function run(
  services: Services,
  session: CtiSession,
  user: UserRecord,
  name: CommandName,
  raw: Record<string, unknown>,
): Promise<void> {
  if (isCallCommand(name)) {
    return await runCallCommand(
      {
        services,
        user,
        authorize: (template, values) => authorize(session, template, values),
        reply: (message) => session.send(message),
      },
      name,
      raw,
    );
  }
  if (isSupervisorCommand(name)) {
    return await runSupervisorCommand(
      {
        services,
        feed: services.cti.supervision,
        watcher: session,
        queuesChanged: (ids) => services.supervision.queuesChanged(ids),
        rights: () => sessionRights(services, session),
        reply: (message) => session.send(message),
      },
      name,
      raw,
    );
  }
  const fields = <N extends CommandName>(command: N): Command<N> =>
    checkBody(commandSchema(command), raw, "BadRequest") as Command<N>;
  /** The user's own agent under the own ACL, else (null) `agentid` done as a supervisor. */
  const agentFor = async (
    command: "agentLogout" | "pauseAgent" | "unpauseAgent",
    agentid: number | undefined,
    control: AgentControl,
    reason: string | null = null,
  ) => {
    const own = await agentOfUser(services, user);
    if (agentid !== undefined && agentid !== own?.id) {
      const c = { services, rights: () => sessionRights(services, session) };
      await runAgentControl(c, control, agentid, reason);
      return null;
    }
    authorize(session, COMMAND_ACLS[command]!);
    if (!own) throw new ApiError(404, "AgentNotFound", `user ${user.username} has no agent`);
    return own;
  };
  switch (name) {
    case "dial": {
      const dial = dialOf.number(raw);
      await readyToDial(services, user);
      await dial(services, user);
      return;
    }
    case "dialFromMobile": {
      const dial = dialOf.fromMobile(raw);
      await readyToDial(services, user);
      await dial(services, user);
      return;
    }
    case "dialFromQueue": {
      const dial = dialOf.fromQueue(raw);
      await readyToDial(services, user);
      await dial(services, user);
      return;
    }
    case "dnd":
      return await changeDnd(services, user, fields("dnd").state);
    case "uncFwd":
    case "naFwd":
    case "busyFwd": {
      const { state, destination } = fields(name);
      const kind = ({ uncFwd: "unconditional", naFwd: "noanswer", busyFwd: "busy" } as const)[name];
      return await changeForward(services, user, kind, { enabled: state, destination });
    }
    case "agentLogin": {
      const { agentphonenumber, agentid } = fields("agentLogin");
      const agent = await ownAgent(services, user, agentid);
      if ((await services.platform.agentPresence(agent.id)).logged) {
        throw new ApiError(409, "AlreadyLogged", `agent ${agent.number} is already logged`);
      }
      const { exten, context } = await loginExtension(services, user, agentphonenumber);
      await services.platform.agentLogin(agent, exten, context);
      session.user.agentId = agent.id;
      return;
    }
    case "agentLogout": {
      const agent = await agentFor(name, fields(name).agentid, "logout");
      if (agent) await services.platform.agentLogout(agent.id);
      return;
    }
    case "pauseAgent": {
      const { agentid, reason } = fields(name);
      const agent = await agentFor(name, agentid, "pause", reason?.trim() || null);
      if (agent) await services.platform.agentPause(agent.id, reason?.trim() || null);
      return;
    }
    case "unpauseAgent": {
      const agent = await agentFor(name, fields(name).agentid, "unpause");
      if (agent) await services.platform.agentUnpause(agent.id);
      return;
    }
    case "getAgentStates":
      return await sendAgentStates(services, session, user);
    case "subscribeToAgentEvents":
      // a supervisor's: the agents its profile covers; anyone else's own agent only, as before
      if (await rightsOf(services.store, user.id)) await services.cti.followAllAgents(session);
      return;
  }
}

/**
 * One `AgentStateEvent` per agent the user may see: its own, and those its rights profile
 * covers.
 */
async function sendAgentStates(
  services: Services,
  session: CtiSession,
  user: UserRecord,
): Promise<void> {
  const [rights, own] = await Promise.all([
    rightsOf(services.store, session.user.id),
    agentOfUser(services, user),
  ]);
  const agents = rights
    ? (await listAgents(services.store)).filter((a) => rights.coversAgent(a.id) || a.id === own?.id)
    : [own].filter((agent) => agent !== null);
  for (const status of await agentStatuses(services, agents)) session.send(agentStateEvent(status));
}

/** The user's own agent; another agent's id is refused. */
async function ownAgent(services: Services, user: UserRecord, agentId: number | undefined) {
  const agent = await agentOfUser(services, user);
  if (!agent) throw new ApiError(404, "AgentNotFound", `user ${user.username} has no agent`);
  if (agentId !== undefined && agentId !== agent.id) {
    throw new ApiError(403, "Forbidden", `agent ${agentId} is not the user's agent`);
  }
  return agent;
}

/**
 * Where the agent logs in: the extension `number` of one of the user's lines, or the main line's
 * first extension when none is given. A number that is none of the user's lines is refused.
 */
async function loginExtension(services: Services, user: UserRecord, number: string | undefined) {
  for (const lineId of user.line_ids) {
    const line = await getLine(services.store, lineId);
    for (const extensionId of line?.extension_ids ?? []) {
      const extension = await getExtension(services.store, extensionId);
      if (extension && (number === undefined || extension.exten === number)) return extension;
    }
    if (number === undefined) break;
  }
  throw new ApiError(
    400,
    "BadRequest",
    number === undefined
      ? `user ${user.username} has no line`
      : `${number} is not a line of user ${user.username}`,
  );
}

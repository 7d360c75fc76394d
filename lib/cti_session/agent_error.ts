/**
 * `AgentError` (docs/cti.md): how xuc answers an agent command its agent's state refuses, rather
 * than `Error`; xuc's agent clients wait for it (`Cti.MessageType.AGENTERROR`).
 */
import type { CtiMessage } from "../cti/messages.ts";

/** The agent commands of `cti.js` (`loginAgent`, `logoutAgent`, `pauseAgent`, `unpauseAgent`). */
const AGENT_COMMANDS: ReadonlySet<string> = new Set([
  "agentLogin",
  "agentLogout",
  "pauseAgent",
  "unpauseAgent",
]);

/**
 * The refusals that are the agent's: the user has no agent or no line to log it on, it is logged
 * in already, or it is not. A message that is not understood (`BadRequest`), a missing ACL
 * (`Forbidden`), an unreachable PBX stay `Error`s.
 */
const AGENT_REFUSALS: ReadonlySet<string> = new Set([
  "AgentNotFound",
  "AlreadyLogged",
  "NotLogged",
  "NoLine",
]);

/**
 * `error` (an `Error` message) as the socket sends it: an agent command's refusal of
 * {@link AGENT_REFUSALS} becomes `AgentError` `{Error, message, command}`, any other stays as it is.
 */
export function agentErrorOr(error: CtiMessage): CtiMessage {
  const fields = error.ctiMessage as { error: string; message: string; command?: string };
  if (
    error.msgType !== "Error" || fields.command === undefined ||
    !AGENT_COMMANDS.has(fields.command) || !AGENT_REFUSALS.has(fields.error)
  ) return error;
  return {
    msgType: "AgentError",
    ctiMessage: { Error: fields.error, message: fields.message, command: fields.command },
  };
}

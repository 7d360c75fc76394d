/**
 * What the client of the CTI socket sends (docs/cti.md), in the shape the xuc JavaScript API
 * (`cti.js`) sends it: `{claz: "web", command, …}` or `{claz: "ping"}`. Read by the socket's
 * route (routes/cti_commands.ts), not by the hub the start builds (docs/performance.md).
 */
import * as z from "zod";
import { MAX_DESTINATION_LENGTH } from "../dial.ts";

/** Every message is an object naming its class (`web` or `ping`). */
export const envelopeSchema = z.lazy(() =>
  z.object({
    claz: z.string(),
    command: z.string().optional(),
  }).passthrough()
);

const agentId = () => z.number().int().optional();
/** A call of the user, by the `uniqueId` of its `PhoneEvent`s; left out: the current one. */
const uniqueId = () => z.string().min(1).max(256).optional();
/** A number to transfer to, as sent (sanitized as a dial's destination). */
const destination = () =>
  z.string().max(
    MAX_DESTINATION_LENGTH,
    `longer than ${MAX_DESTINATION_LENGTH} characters`,
  );
/** A conference, by the `conferenceNumber` of its `ConferenceEvent`. */
export const numConf = () => z.string().min(1).max(256);
/** A member of the conference, by its `index` in its `ConferenceEvent`. */
export const conferenceIndex = () => z.number().int().min(0);

/**
 * The fields of the commands on a conference's members (lib/meetingrooms/cti.ts runs them: on a
 * meeting room, else on an ad-hoc conference, lib/cti/call_commands.ts).
 */
export const conferenceMemberFields = {
  conferenceMuteMe: () => z.object({ numConf: numConf() }),
  conferenceUnmuteMe: () => z.object({ numConf: numConf() }),
  conferenceMute: () => z.object({ numConf: numConf(), index: conferenceIndex() }),
  conferenceUnmute: () => z.object({ numConf: numConf(), index: conferenceIndex() }),
  conferenceKick: () => z.object({ numConf: numConf(), index: conferenceIndex() }),
  conferenceMuteAll: () => z.object({ numConf: numConf() }),
  conferenceUnmuteAll: () => z.object({ numConf: numConf() }),
} as const;

export type ConferenceMemberCommand = keyof typeof conferenceMemberFields;

// each command's schema is built on its first use ({@link commandSchema}), not at every start
// (docs/performance.md)

/** The fields of the commands on the user's calls (lib/cti/call_commands.ts). */
const callCommandFields = {
  hangup: () => z.object({ uniqueId: uniqueId() }),
  answer: () => z.object({ uniqueId: uniqueId() }),
  hold: () => z.object({ uniqueId: uniqueId() }),
  directTransfer: () => z.object({ destination: destination() }),
  /** `device` (a phone of the user's, in xuc) is accepted and ignored. */
  attendedTransfer: () => z.object({ destination: destination(), device: z.unknown().optional() }),
  completeTransfer: () => z.object({}),
  cancelTransfer: () => z.object({}),
  conference: () => z.object({}),
  getCurrentCallsPhoneEvents: () => z.object({}),
  sendDtmf: () =>
    z.object({
      key: z.string().regex(/^[0-9*#]{1,64}$/, "1 to 64 of the keys 0-9, * and #"),
    }),
} as const;

/** A queue's or an agent's id, as `cti.js` sends it (a number). */
const id = () => z.number().int();

/**
 * The fields of the supervisors' commands (lib/cti/supervisor_commands.ts), as `cti.js` sends
 * them: `agentId` and `queueId` in camel case here (the agent commands' `agentid` is lowercase).
 */
const supervisorCommandFields = {
  subscribeToQueueStats: () => z.object({}),
  subscribeToAgentStats: () => z.object({}),
  subscribeToQueueCalls: () => z.object({ queueId: id() }),
  unSubscribeToQueueCalls: () => z.object({ queueId: id() }),
  /** `window` and `xqos` are accepted and ignored: the figures are the day's (docs/cti.md). */
  getQueueStatistics: () =>
    z.object({
      queueId: id(),
      window: z.unknown().optional(),
      xqos: z.unknown().optional(),
    }),
  setAgentQueue: () =>
    z.object({
      agentId: id(),
      queueId: id(),
      penalty: z.number().int().min(0).max(2147483647).optional(),
    }),
  removeAgentFromQueue: () => z.object({ agentId: id(), queueId: id() }),
} as const;

/** The fields of each supported `web` command (others are ignored, as `cti.js` sends extras). */
const commandFields = {
  // checked as the 2.0 dial routes check their bodies (lib/dial.ts `dialOf`)
  dial: () => z.object({}).passthrough(),
  dialFromMobile: () => z.object({}).passthrough(),
  dialFromQueue: () => z.object({}).passthrough(),
  dnd: () => z.object({ state: z.boolean() }),
  uncFwd: () => z.object({ state: z.boolean(), destination: z.string().nullable().optional() }),
  naFwd: () => z.object({ state: z.boolean(), destination: z.string().nullable().optional() }),
  busyFwd: () => z.object({ state: z.boolean(), destination: z.string().nullable().optional() }),
  agentLogin: () => z.object({ agentphonenumber: z.string().optional(), agentid: agentId() }),
  agentLogout: () => z.object({ agentid: agentId() }),
  pauseAgent: () => z.object({ agentid: agentId(), reason: z.string().nullable().optional() }),
  unpauseAgent: () => z.object({ agentid: agentId() }),
  getAgentStates: () => z.object({}),
  subscribeToAgentEvents: () => z.object({}),
  ...callCommandFields,
  ...supervisorCommandFields,
} as const;

export type CommandName = keyof typeof commandFields;
export type CallCommandName = keyof typeof callCommandFields;
export type SupervisorCommandName = keyof typeof supervisorCommandFields;
/** The schema of command `N`'s fields. */
type CommandSchema<N extends CommandName> = ReturnType<(typeof commandFields)[N]>;
export type Command<N extends CommandName> = z.infer<CommandSchema<N>>;

const builtSchemas = new Map<CommandName, z.ZodType>();

/** The schema of a command's fields, built at its first use. */
export function commandSchema<N extends CommandName>(name: N): CommandSchema<N> {
  let schema = builtSchemas.get(name);
  if (!schema) builtSchemas.set(name, schema = commandFields[name]());
  return schema as CommandSchema<N>;
}

export const isCommandName = (name: string): name is CommandName =>
  Object.hasOwn(commandFields, name);

export const isCallCommand = (name: CommandName): name is CallCommandName =>
  Object.hasOwn(callCommandFields, name);

export const isSupervisorCommand = (name: CommandName): name is SupervisorCommandName =>
  Object.hasOwn(supervisorCommandFields, name);

/**
 * The messages of the CTI socket (docs/cti.md), in the shape the xuc JavaScript API (`cti.js`)
 * reads and sends: svc sends `{msgType, ctiMessage}`, the client sends `{claz: "web", command, …}`
 * or `{claz: "ping"}`.
 */
import * as z from "zod";
import { type EventMessage, serviceFields } from "../events/messages.ts";
import type { PhoneStatus } from "../platform/port.ts";
import type { UserRecord } from "../store/users.ts";

/** One message from svc to the client. */
export interface CtiMessage {
  msgType: string;
  ctiMessage: unknown;
}

/** A message of the event feed as the socket sends it (the flat ones get their `ctiMessage`). */
export function eventToCti(event: EventMessage): CtiMessage {
  const message = event.message;
  if (message.msgType === "PhoneEvent") return message;
  const { msgType, ...rest } = message;
  return { msgType, ctiMessage: rest };
}

/** The `ctiMessage` of `UserConfigUpdate`: the user's names, mobile number, lines, DND, forwards. */
export interface UserConfig {
  userId: number;
  firstName: string;
  lastName: string;
  fullName: string;
  mobileNumber: string;
  lineIds: number[];
  dndEnabled: boolean;
  uncFwdEnabled: boolean;
  uncFwdDestination: string;
  naFwdEnabled: boolean;
  naFwdDestination: string;
  busyFwdEnabled: boolean;
  busyFwdDestination: string;
}

export function userConfigOf(user: UserRecord): UserConfig {
  return {
    userId: user.id,
    firstName: user.firstname,
    lastName: user.lastname ?? "",
    fullName: [user.firstname, user.lastname].filter((part) => part).join(" "),
    mobileNumber: user.mobile_phone_number ?? "",
    lineIds: user.line_ids,
    ...serviceFields(user),
  };
}

/** `UserConfigUpdate` with the user's names, as the socket sends it on open and on `getConfig`. */
export const userConfig = (user: UserRecord): CtiMessage => ({
  msgType: "UserConfigUpdate",
  ctiMessage: userConfigOf(user),
});

export const loggedOn = (
  user: { id: number; username: string },
  phoneNumber: string | null,
): CtiMessage => ({
  msgType: "LoggedOn",
  ctiMessage: { userId: user.id, username: user.username, phoneNumber: phoneNumber ?? "" },
});

/** The status of the user's own phone. */
export const phoneStatusUpdate = (status: PhoneStatus): CtiMessage => ({
  msgType: "PhoneStatusUpdate",
  ctiMessage: { status },
});

/** The status of a number of the user's personal contacts. */
export const phoneHintStatus = (number: string, status: PhoneStatus): CtiMessage => ({
  msgType: "PhoneHintStatusEvent",
  ctiMessage: { number, status },
});

/** The answer to `{claz: "ping"}`: any message keeps `cti.js`'s heartbeat alive. */
export const PONG: CtiMessage = { msgType: "Pong", ctiMessage: {} };

/** A command that failed; the socket stays open. */
export const ctiError = (error: string, message: string, command?: string): CtiMessage => ({
  msgType: "Error",
  ctiMessage: command === undefined ? { error, message } : { error, message, command },
});

// --- what the client sends ---------------------------------------------------------------------

/** Every message is an object naming its class (`web` or `ping`). */
export const envelopeSchema = z.object({
  claz: z.string(),
  command: z.string().optional(),
}).passthrough();

const agentId = z.number().int().optional();

/** The fields of each supported `web` command (others are ignored, as `cti.js` sends extras). */
export const commandSchemas = {
  // checked as the 2.0 dial routes check their bodies (lib/dial.ts `dialOf`)
  dial: z.object({}).passthrough(),
  dialFromMobile: z.object({}).passthrough(),
  dialFromQueue: z.object({}).passthrough(),
  hangup: z.object({}),
  answer: z.object({}),
  hold: z.object({}),
  dnd: z.object({ state: z.boolean() }),
  uncFwd: z.object({ state: z.boolean(), destination: z.string().nullable().optional() }),
  naFwd: z.object({ state: z.boolean(), destination: z.string().nullable().optional() }),
  busyFwd: z.object({ state: z.boolean(), destination: z.string().nullable().optional() }),
  agentLogin: z.object({ agentphonenumber: z.string().optional(), agentid: agentId }),
  agentLogout: z.object({ agentid: agentId }),
  pauseAgent: z.object({ agentid: agentId, reason: z.string().nullable().optional() }),
  unpauseAgent: z.object({ agentid: agentId }),
  getConfig: z.object({ objectType: z.string().optional() }),
  getAgentStates: z.object({}),
  subscribeToAgentEvents: z.object({}),
} as const;

export type CommandName = keyof typeof commandSchemas;
export type Command<N extends CommandName> = z.infer<(typeof commandSchemas)[N]>;

export const isCommandName = (name: string): name is CommandName =>
  Object.hasOwn(commandSchemas, name);

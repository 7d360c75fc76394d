/**
 * The messages of the CTI socket (docs/cti.md) svc sends, `{msgType, ctiMessage}`, in the shape
 * the xuc JavaScript API (`cti.js`) reads; what the client sends is in lib/cti/commands.ts.
 */
import type { AgentStatus } from "../agent_control.ts";
import { type EventMessage, type PhoneEventMessage, serviceFields } from "../events/messages.ts";
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

/** An agent's `AgentStateEvent`, as `getAgentStates` and `getAgentDirectory` send it. */
export const agentStateEvent = (status: AgentStatus): CtiMessage => ({
  msgType: "AgentStateEvent",
  ctiMessage: {
    name: status.state,
    agentId: status.id,
    agentNumber: status.number,
    phoneNb: status.extension ?? "",
    queues: status.queues.map((queue) => queue.id),
  },
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

/** One member of a conference as `ConferenceEvent` shows it. */
export interface ConferenceParticipant {
  /** Its place among the members, the host 0, then in the order they joined. */
  index: number;
  callerIdName: string;
  callerIdNum: string;
  /** Seconds since it joined. */
  since: number;
  isTalking: boolean;
  role: "Organizer" | "User";
  isMuted: boolean;
  /** The member is the socket's own user. */
  isMe: boolean;
  /** Its user's username, "" for a party on no user's phone. */
  username: string;
}

/** The answer to `conference`: the conference the user now hosts, and its members. */
export const conferenceJoined = (
  hostCallId: string,
  conferenceId: string,
  participants: ConferenceParticipant[],
): CtiMessage => ({
  msgType: "ConferenceEvent",
  ctiMessage: {
    eventType: "Join",
    uniqueId: hostCallId,
    conferenceNumber: conferenceId,
    conferenceName: conferenceId,
    since: 0,
    participants,
  },
});

/** The answer to `getCurrentCallsPhoneEvents`: one `PhoneEvent`'s `ctiMessage` per call. */
export const currentCallsPhoneEvents = (
  events: PhoneEventMessage["ctiMessage"][],
): CtiMessage => ({ msgType: "CurrentCallsPhoneEvents", ctiMessage: { events } });

/** A command that failed; the socket stays open. */
export const ctiError = (error: string, message: string, command?: string): CtiMessage => ({
  msgType: "Error",
  ctiMessage: command === undefined ? { error, message } : { error, message, command },
});

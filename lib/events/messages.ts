/**
 * The messages posted to `eventUrl` (decisions §7): every one is `{username, message}` with a
 * `msgType` of `PhoneEvent`, `AgentStateEvent` or `UserConfigUpdate`.
 */
import type { AgentStateEvent, PhoneEvent } from "../platform/port.ts";
import type { UserRecord } from "../store/users.ts";

export interface PhoneEventMessage {
  msgType: "PhoneEvent";
  ctiMessage: Pick<
    PhoneEvent,
    "eventType" | "DN" | "otherDN" | "linkedId" | "uniqueId" | "userData"
  >;
}

export interface AgentStateMessage {
  msgType: "AgentStateEvent";
  name: AgentStateEvent["name"];
  agentId: number;
  agentNumber: string;
  phoneNb: string;
  queues: number[];
}

export interface UserConfigMessage {
  msgType: "UserConfigUpdate";
  userId: number;
  dndEnabled: boolean;
  uncFwdEnabled: boolean;
  uncFwdDestination: string;
  naFwdEnabled: boolean;
  naFwdDestination: string;
  busyFwdEnabled: boolean;
  busyFwdDestination: string;
}

/** One exported event, as posted. */
export interface EventMessage {
  username: string;
  message: PhoneEventMessage | AgentStateMessage | UserConfigMessage;
}

/** The message of a platform phone or agent event. */
export function platformMessage(event: PhoneEvent | AgentStateEvent): EventMessage {
  if (event.kind === "phone") {
    const { eventType, DN, otherDN, linkedId, uniqueId, userData } = event;
    return {
      username: event.username,
      message: {
        msgType: "PhoneEvent",
        ctiMessage: { eventType, DN, otherDN, linkedId, uniqueId, userData },
      },
    };
  }
  const { name, agentId, agentNumber, phoneNb, queues } = event;
  return {
    username: event.username,
    message: { msgType: "AgentStateEvent", name, agentId, agentNumber, phoneNb, queues },
  };
}

/** The user's DND and forwards in the fields of `UserConfigUpdate` (event and CTI socket). */
export function serviceFields(user: UserRecord) {
  const { busy, noanswer, unconditional } = user.forwards;
  return {
    dndEnabled: user.services.dnd.enabled,
    uncFwdEnabled: unconditional.enabled,
    uncFwdDestination: unconditional.destination ?? "",
    naFwdEnabled: noanswer.enabled,
    naFwdDestination: noanswer.destination ?? "",
    busyFwdEnabled: busy.enabled,
    busyFwdDestination: busy.destination ?? "",
  };
}

/** The `UserConfigUpdate` telling the user's DND and forwards as they now are. */
export function userConfigMessage(user: UserRecord): EventMessage {
  return {
    username: user.username ?? "",
    message: { msgType: "UserConfigUpdate", userId: user.id, ...serviceFields(user) },
  };
}

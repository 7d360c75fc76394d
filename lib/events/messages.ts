/**
 * The messages posted to `eventUrl` (decisions §7): every one is `{username, message}` with a
 * `msgType` of `PhoneEvent`, `AgentStateEvent` or `UserConfigUpdate` (an {@link EventMessage}:
 * one user's, or one agent's), `QueueStatistics` (a {@link SupervisionMessage}: a queue's
 * figures, for no user in particular: `username` "", docs/supervision.md), or
 * `RoomParticipantEvent` (a {@link RoomMessage}: someone joined or left a meeting room,
 * docs/meetingrooms.md).
 */
import type { AgentStateEvent, PhoneEvent } from "../platform/port.ts";
import type { UserRecord } from "../store/users.ts";

/**
 * A user's phone event. `otherDName` (the other party's name) and `recordState` (the party's
 * recording: `inactive`, `active`, `paused`) were added to the fields of decisions §7 for xuc's
 * clients (docs/cti.md).
 */
export interface PhoneEventMessage {
  msgType: "PhoneEvent";
  ctiMessage: Pick<
    PhoneEvent,
    | "eventType"
    | "DN"
    | "otherDN"
    | "otherDName"
    | "linkedId"
    | "uniqueId"
    | "userData"
    | "recordState"
  >;
}

/** An agent's state; `monitorState` (xuc's, docs/cti.md) was added to those of decisions §7. */
export interface AgentStateMessage {
  msgType: "AgentStateEvent";
  name: AgentStateEvent["name"];
  agentId: number;
  agentNumber: string;
  phoneNb: string;
  queues: number[];
  monitorState: AgentStateEvent["monitorState"];
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

/**
 * A queue's live and daily figures (docs/supervision.md), in xuc's shape: `counters` of
 * `{statName, value}` (`WaitingCalls`, `LongestWaitTime`, `TotalNumberCallsEntered`, …).
 */
export interface QueueStatisticsMessage {
  msgType: "QueueStatistics";
  ctiMessage: {
    queueId: number;
    counters: { statName: string; value: number }[];
  };
}

/** One exported event of a user (or of an agent, under its line's user), as posted. */
export interface EventMessage {
  username: string;
  message: PhoneEventMessage | AgentStateMessage | UserConfigMessage;
}

/**
 * One exported supervision event, as posted: for every supervisor, not one user, hence the empty
 * `username` (no user has it). The live feed hands these only to who asks for them
 * (`EventFeed.subscribeAll`): a CTI socket's user events stay as they were.
 */
export interface SupervisionMessage {
  username: "";
  message: QueueStatisticsMessage;
}

/**
 * Someone joined or left a meeting room (docs/meetingrooms.md): the room (its kind, id, number and
 * name) and the participant (its call, caller id, user), and how many are in it now.
 */
export interface RoomParticipantMessage {
  msgType: "RoomParticipantEvent";
  ctiMessage: {
    eventType: "Join" | "Leave";
    roomType: "static" | "personal" | "temporary";
    /** As the APIs name the room: a conference's id (static), else the meeting's uuid. */
    roomId: number | string;
    roomNumber: string | null;
    roomName: string;
    /** The participant's call: the call daemon's participant id. */
    uniqueId: string;
    linkedId: string;
    callerIdName: string;
    callerIdNum: string;
    /** The participant's user, "" for none. */
    username: string;
    /** Participants in the room after the change. */
    participants: number;
  };
}

/**
 * A meeting room's event, as posted: under the participant's username ("" for a party on no
 * user's phone). Not a user's event the CTI sockets get as it is: the members of a room get
 * xuc's `ConferenceEvent` / `ConferenceParticipantEvent` notices instead (lib/meetingrooms/).
 */
export interface RoomMessage {
  username: string;
  message: RoomParticipantMessage;
}

/**
 * A message for CTI sockets only (a chat message, a presence, a favourite…: docs/cti.md), through
 * the event log so that the sockets of every process sharing the store get it: never posted to
 * `eventUrl`, streamed or reposted. `username` is the user whose sockets get it; "" is every
 * socket.
 */
export interface CtiNotice {
  username: string;
  notice: true;
  message: { msgType: string; ctiMessage: unknown };
}

/** Every event of the event log: a user's, a supervision or room event, or a CTI notice. */
export type ExportedMessage = EventMessage | SupervisionMessage | RoomMessage | CtiNotice;

/** True for a CTI notice (not exported: see {@link CtiNotice}). */
export const isNotice = (event: ExportedMessage): event is CtiNotice => "notice" in event;

/**
 * True for the events of a user or an agent (`PhoneEvent`, `AgentStateEvent`,
 * `UserConfigUpdate`), false for a supervision or room event or a CTI notice.
 */
export const isUserEvent = (event: ExportedMessage): event is EventMessage =>
  !isNotice(event) && event.message.msgType !== "QueueStatistics" &&
  event.message.msgType !== "RoomParticipantEvent";

/** True for what is exported (posted to `eventUrl`, streamed): all but CTI notices. */
export const isExported = (
  event: ExportedMessage,
): event is EventMessage | SupervisionMessage | RoomMessage => !isNotice(event);

/** The message of a platform phone or agent event. */
export function platformMessage(event: PhoneEvent | AgentStateEvent): EventMessage {
  if (event.kind === "phone") {
    const { eventType, DN, otherDN, otherDName, linkedId, uniqueId, userData, recordState } = event;
    return {
      username: event.username,
      message: {
        msgType: "PhoneEvent",
        ctiMessage: {
          eventType,
          DN,
          otherDN,
          otherDName,
          linkedId,
          uniqueId,
          userData,
          recordState,
        },
      },
    };
  }
  const { name, agentId, agentNumber, phoneNb, queues, monitorState } = event;
  return {
    username: event.username,
    message: {
      msgType: "AgentStateEvent",
      name,
      agentId,
      agentNumber,
      phoneNb,
      queues,
      monitorState,
    },
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

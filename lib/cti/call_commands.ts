/**
 * The CTI channel's commands on the user's own calls (docs/cti.md): each does what the call
 * daemon's `/1.0/users/me/…` route does, through the same code (`lib/calls/user_calls.ts` and the
 * platform's call control), under that route's ACL. An ACL naming a call, transfer or conference
 * is filled with the one the command acts on (a `.` in its id written `_`), so it is checked once
 * that is known. A command names a call by the `uniqueId` of its `PhoneEvent`s or acts on the
 * user's current one; another user's call is refused (`not_yours`), and a command that finds no
 * call to act on is refused `no_call`.
 */
import {
  callsOf,
  conferenceParties,
  ownConference,
  ownMember,
  transferPeer,
  transfersOf,
  userCall,
  userTransfer,
} from "../calls/user_calls.ts";
import type { CoreServices } from "../core_services.ts";
import { dialledNumber } from "../dial.ts";
import type { PhoneEventMessage } from "../events/messages.ts";
import { checkBody } from "../http.ts";
import type { CallCommand, Conference, LiveCall } from "../platform/call_control.ts";
import { PlatformRefusal } from "../platform/port.ts";
import { getUser, type UserRecord } from "../store/users.ts";
import {
  type CallCommandName,
  type Command,
  commandSchema,
  type ConferenceMemberCommand,
} from "./commands.ts";
import {
  conferenceJoined,
  type ConferenceParticipant,
  type CtiMessage,
  currentCallsPhoneEvents,
} from "./messages.ts";

/** The ACLs of the call commands: those of the call daemon's `/1.0/users/me/…` routes. */
export const CALL_ACLS = {
  holdStart: "calld.users.me.calls.{call_id}.hold.start.update",
  holdStop: "calld.users.me.calls.{call_id}.hold.stop.update",
  answer: "calld.users.me.calls.{call_id}.answer.update",
  hangup: "calld.users.me.calls.{call_id}.delete",
  muteStart: "calld.users.me.calls.{call_id}.mute.start.update",
  muteStop: "calld.users.me.calls.{call_id}.mute.stop.update",
  dtmf: "calld.users.me.calls.{call_id}.dtmf.update",
  readCalls: "calld.users.me.calls.read",
  transfer: "calld.users.me.transfers.create",
  completeTransfer: "calld.users.me.transfers.{transfer_id}.complete.update",
  cancelTransfer: "calld.users.me.transfers.{transfer_id}.delete",
  conference: "calld.users.me.conferences.adhoc.create",
  participants: "calld.users.me.conferences.adhoc.participants.update",
  kick: "calld.users.me.conferences.adhoc.participants.delete",
} as const;

/** What a call command runs with: the socket's user, its ACL check and its answers. */
export interface CallCommandContext {
  services: Pick<CoreServices, "platform" | "store" | "clock">;
  user: UserRecord;
  /** Refuses (`Forbidden`, naming the ACL) unless the socket holds `template` filled with `values`. */
  authorize(template: string, values?: Record<string, string>): void;
  /** Sends a message to this socket only. */
  reply(message: CtiMessage): void;
}

/** Runs the call command `name` with the fields the client sent. */
export async function runCallCommand(
  c: CallCommandContext,
  name: CallCommandName,
  raw: Record<string, unknown>,
): Promise<void> {
  const { platform, store } = c.services;
  const fields = <N extends CallCommandName>(command: N): Command<N> =>
    checkBody(commandSchema(command), raw, "BadRequest") as Command<N>;
  const userId = c.user.id;
  /** `command` on the user's party `call`, under the call's `acl`. */
  const onCall = async (call: LiveCall, acl: string, command: CallCommand) => {
    c.authorize(acl, { call_id: call.callId });
    await platform.callCommand(call.callId, command);
  };
  switch (name) {
    case "hold": {
      // a toggle: the call svc holds is taken back (one its phone holds is refused)
      const call = await userCall(platform, userId, fields(name).uniqueId, ["talking", "held"]);
      return call.onHold
        ? await onCall(call, CALL_ACLS.holdStop, { kind: "resume" })
        : await onCall(call, CALL_ACLS.holdStart, { kind: "hold" });
    }
    case "answer": {
      const call = await userCall(platform, userId, fields(name).uniqueId, ["ringing"]);
      return await onCall(call, CALL_ACLS.answer, { kind: "answer" });
    }
    case "hangup": {
      const { uniqueId } = fields(name);
      const call = await userCall(platform, userId, uniqueId, ["talking", "held", "ringing"]);
      return await onCall(call, CALL_ACLS.hangup, { kind: "hangup" });
    }
    case "sendDtmf": {
      const { key } = fields(name);
      const call = await userCall(platform, userId, undefined, ["talking", "held"]);
      return await onCall(call, CALL_ACLS.dtmf, { kind: "dtmf", digits: key });
    }
    case "directTransfer":
    case "attendedTransfer": {
      c.authorize(CALL_ACLS.transfer);
      const exten = dialledNumber(fields(name).destination);
      const initiator = await userCall(platform, userId, undefined, ["talking", "held"]);
      await transferPeer(platform, store, c.user, {
        initiatorCallId: initiator.callId,
        exten,
        flow: name === "directTransfer" ? "blind" : "attended",
        timeoutMs: null,
      });
      return;
    }
    case "completeTransfer": {
      fields(name);
      const { id } = await userTransfer(platform, userId);
      c.authorize(CALL_ACLS.completeTransfer, { transfer_id: id });
      return await platform.completeTransfer(id);
    }
    case "cancelTransfer": {
      fields(name);
      const { id } = await userTransfer(platform, userId);
      c.authorize(CALL_ACLS.cancelTransfer, { transfer_id: id });
      return await platform.cancelTransfer(id);
    }
    case "conference": {
      c.authorize(CALL_ACLS.conference);
      fields(name);
      const { host, participants } = await conferenceParties(platform, userId);
      const conference = await platform.startConference(host, participants);
      return c.reply(await conferenceEvent(c, conference));
    }
    case "getCurrentCallsPhoneEvents": {
      c.authorize(CALL_ACLS.readCalls);
      fields(name);
      return c.reply(currentCallsPhoneEvents(await currentEvents(c)));
    }
  }
}

/** The fields of a command on a conference's members. */
export interface ConferenceMemberFields {
  numConf: string;
  index?: number;
}

/**
 * A command on the members of the ad-hoc conference `numConf` (lib/meetingrooms/cti.ts hands over
 * those naming no meeting room): the user mutes itself in it, or the host mutes, unmutes or
 * kicks a member, or mutes every one.
 */
export async function runAdhocConferenceCommand(
  c: CallCommandContext,
  name: ConferenceMemberCommand,
  { numConf, index = 0 }: ConferenceMemberFields,
): Promise<void> {
  const { platform } = c.services;
  const userId = c.user.id;
  switch (name) {
    case "conferenceMuteMe":
    case "conferenceUnmuteMe": {
      const member = await ownMember(platform, userId, numConf);
      const on = name === "conferenceMuteMe";
      c.authorize(on ? CALL_ACLS.muteStart : CALL_ACLS.muteStop, { call_id: member.callId });
      return await platform.callCommand(member.callId, { kind: "mute", on });
    }
    case "conferenceMute":
    case "conferenceUnmute":
    case "conferenceKick": {
      c.authorize(name === "conferenceKick" ? CALL_ACLS.kick : CALL_ACLS.participants);
      const conference = await ownConference(platform, userId, numConf);
      const member = conference.members[index];
      if (!member) {
        throw new PlatformRefusal("no_call", `conference ${numConf} has no member ${index}`);
      }
      if (name === "conferenceKick") {
        return await platform.removeFromConference(conference.id, member.callId);
      }
      return await platform.callCommand(member.callId, {
        kind: "mute",
        on: name === "conferenceMute",
      });
    }
    case "conferenceMuteAll":
    case "conferenceUnmuteAll": {
      c.authorize(CALL_ACLS.participants);
      const conference = await ownConference(platform, userId, numConf);
      const on = name === "conferenceMuteAll";
      for (const member of conference.members) {
        if (member.callId !== conference.hostCallId) {
          await platform.callCommand(member.callId, { kind: "mute", on });
        }
      }
      return;
    }
  }
}

/** `ConferenceEvent` `Join` of `conference` as its host, the socket's user, sees it. */
async function conferenceEvent(c: CallCommandContext, conference: Conference) {
  const { platform, store, clock } = c.services;
  const calls = new Map((await platform.liveCalls()).map((call) => [call.callId, call]));
  const now = clock.now();
  const participants = await Promise.all(
    conference.members.map(async (member, index): Promise<ConferenceParticipant> => {
      const call = calls.get(member.callId);
      const userId = call?.userId ?? null;
      const username = userId === null
        ? ""
        : userId === c.user.id
        ? c.user.username
        : (await getUser(store, userId))?.username;
      return {
        index,
        callerIdName: call?.name ?? "",
        callerIdNum: call?.number ?? "",
        since: Math.max(0, Math.floor((now - member.joinedMs) / 1000)),
        isTalking: false,
        role: member.callId === conference.hostCallId ? "Organizer" : "User",
        isMuted: member.muted,
        isMe: userId === c.user.id,
        username: username ?? "",
      };
    }),
  );
  return conferenceJoined(conference.hostCallId, conference.id, participants);
}

/**
 * The user's calls as the `PhoneEvent`s that would tell their state now: a ringing call is
 * `EventRinging` (`EventDialing` on the caller's own phone), a held one `EventOnHold`, the
 * caller's call whose callee still rings and a transfer's call to its recipient still ringing
 * `EventDialing`, any other `EventEstablished`.
 */
async function currentEvents(c: CallCommandContext): Promise<PhoneEventMessage["ctiMessage"][]> {
  const { platform } = c.services;
  const calls = await callsOf(platform, c.user.id);
  const ringback = new Set(
    (await transfersOf(platform, c.user.id))
      .filter((transfer) => transfer.status === "ringback")
      .map((transfer) => transfer.initiatorCallId),
  );
  return calls.map((call) => ({
    eventType: call.state === "ringing"
      ? call.isCaller ? "EventDialing" : "EventRinging"
      : call.onHold
      ? "EventOnHold"
      : ringback.has(call.callId) || waitsForCallee(call)
      ? "EventDialing"
      : "EventEstablished",
    DN: call.number,
    otherDN: call.peerNumber,
    otherDName: call.peerName,
    linkedId: call.linkedId,
    uniqueId: call.callId,
    userData: { PLATFORM_USERID: String(c.user.id), ...call.userData },
    recordState: call.record,
  }));
}

/** The caller's own party, up, whose callee has not answered yet: it hears nobody, has no peer. */
const waitsForCallee = (call: LiveCall) =>
  call.isCaller && call.peerCallId === null && call.conferenceId === null &&
  call.talkingTo.length === 0;

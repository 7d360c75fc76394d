/**
 * Control of the simulated PBX's calls in progress (docs/calls.md): the parties of the calls,
 * hold and resume, answer, hang-up, mute, DTMF, recording, blind and attended transfers and ad-hoc
 * conferences, and what a party hanging up does to them (`partyHangsUp`). The events are those
 * the Asterisk adapter gives for the same commands (the scenario table of `tests/lib/platform/`).
 */
import {
  type CallCommand,
  type Conference as ConferenceView,
  type LiveCall,
  startedTransfer,
  type Transfer as TransferView,
  type TransferRequest,
} from "../call_control.ts";
import type { Directory } from "../directory.ts";
import { PlatformRefusal, usrVariables } from "../port.ts";
import { agentEvent } from "./agents.ts";
import { leaveRoom, setMuted, typePin } from "./rooms.ts";
import { dialFrom, numberOf } from "./calls.ts";
import {
  answerLeg,
  bridgeLegs,
  endCall,
  endIfIdle,
  endLeg,
  leftQueue,
  legContext,
  peersOf,
  phoneEvent,
  rejectLeg,
  release,
  unbridge,
} from "./legs.ts";
import {
  type Conference,
  EXTERNAL,
  type Leg,
  type SimState,
  type Step,
  type Transfer,
} from "./state.ts";

// --- what the calls look like --------------------------------------------------------------------

/** Every party of the calls in progress (the queues' own legs left out), oldest call first. */
export function liveCalls(sim: SimState, dir: Directory): LiveCall[] {
  const nameOf = (leg: Leg) => {
    const user = leg.userId === null ? undefined : dir.users.get(leg.userId);
    return user ? [user.firstname, user.lastname].filter(Boolean).join(" ") : "";
  };
  // a queue's leg and a supervisor's listening leg are no party of a call
  const legs = [...sim.activeLegs()].filter((leg) => leg.role !== "queue" && leg.role !== "spy");
  // the parties a leg hears in the order of the calls, as on every platform
  const rank = new Map(legs.map((leg, i) => [leg, i]));
  return legs.map((leg) => {
    const peers = peersOf(leg).sort((a, b) => (rank.get(a) ?? 0) - (rank.get(b) ?? 0));
    const peer = peerOf(leg);
    const outbound = leg.call.legs.some((other) =>
      other.name === EXTERNAL && other.role === "callee"
    );
    return {
      callId: leg.uniqueId,
      linkedId: leg.call.linkedId,
      userId: leg.userId,
      lineId: leg.lineId,
      state: leg.state === "ringing" ? "ringing" : "up",
      onHold: leg.heldBy !== null,
      muted: leg.muted,
      record: leg.record,
      userData: { ...leg.call.userData },
      talkingTo: peers.map((other) => other.uniqueId),
      peerCallId: peerOf(leg)?.uniqueId ?? null,
      conferenceId: leg.bridge?.conference?.id ?? null,
      name: nameOf(leg),
      number: numberOf(leg),
      // as its phone events name the other party (`otherDName`), else the peer's user
      peerName: dir.nameOf(leg.otherDN, legContext(dir, leg), {
        number: leg.call.shownNumber,
        name: leg.call.shownName,
      }) || (peer ? nameOf(peer) : ""),
      peerNumber: leg.otherDN,
      isCaller: leg === leg.call.origin,
      dialled: leg.call.dialled,
      direction: outbound ? "outbound" : "internal",
      createdMs: leg.createdMs,
      answeredMs: leg.answeredMs,
    };
  });
}

/** The attended transfers in progress. */
export function transferList(sim: SimState): TransferView[] {
  return [...sim.activeLegs()].flatMap((leg) => leg.transfer ? [transferView(leg.transfer)] : []);
}

function transferView(transfer: Transfer): TransferView {
  return {
    id: transfer.initiator.uniqueId,
    flow: "attended",
    initiatorCallId: transfer.initiator.uniqueId,
    initiatorUserId: transfer.initiator.userId!,
    transferredCallId: transfer.transferred.uniqueId,
    recipientCallId: transfer.recipient?.uniqueId ?? null,
    exten: transfer.exten,
    context: transfer.context,
    status: transfer.status,
  };
}

export function conferenceList(sim: SimState): ConferenceView[] {
  return [...sim.conferences.values()].map(conferenceView);
}

function conferenceView(conference: Conference): ConferenceView {
  return {
    id: conference.id,
    hostCallId: conference.host.uniqueId,
    hostUserId: conference.host.userId!,
    members: [...conference.joined].map(([leg, joinedMs]) => ({
      callId: leg.uniqueId,
      muted: leg.muted,
      joinedMs,
    })),
  };
}

// --- one party ---------------------------------------------------------------------------------

const refuse = (reason: string, message: string) => new PlatformRefusal(reason, message);

/** The party `callId` of a call in progress; `no_call` when there is none. */
function legOf(sim: SimState, callId: string): Leg {
  for (const leg of sim.activeLegs()) {
    if (leg.uniqueId === callId && leg.role !== "queue" && leg.role !== "spy") return leg;
  }
  throw refuse("no_call", `no call ${callId}`);
}

/** The one other party of `leg`: its peer of a two-party talk, or the one its svc hold is with. */
function peerOf(leg: Leg): Leg | null {
  if (leg.holdPeer) return leg.holdPeer;
  const peers = leg.bridge && !inGroup(leg) ? peersOf(leg) : [];
  return peers.length === 1 ? peers[0]! : null;
}

/** `leg` is in an ad-hoc conference or a meeting room: it has no one peer to hold or transfer. */
const inGroup = (leg: Leg) => Boolean(leg.bridge?.conference || leg.bridge?.room);

/** The transfer in progress `leg` is a party of (initiator, transferred or recipient). */
function transferOf(sim: SimState, leg: Leg): Transfer | null {
  if (leg.transfer) return leg.transfer;
  for (const other of sim.activeLegs()) {
    const transfer = other.transfer;
    if (transfer && (transfer.transferred === leg || transfer.recipient === leg)) return transfer;
  }
  return null;
}

const talking = (leg: Leg) => leg.state === "up" || leg.state === "on_hold";

/** Runs `command` on the party `callId`. */
export async function callCommand(step: Step, callId: string, command: CallCommand): Promise<void> {
  const leg = legOf(step.sim, callId);
  switch (command.kind) {
    case "hold":
      return hold(step, leg);
    case "resume":
      return resume(step, leg);
    case "answer":
      if (leg.state !== "ringing") throw refuse("not_ringing", `call ${callId} is not ringing`);
      return await answerLeg(step, leg, false);
    case "hangup":
      if (leg.state === "ringing") return await rejectLeg(step, leg);
      return await partyHangsUp(step, leg);
    case "mute":
      if (!talking(leg)) throw notTalking(leg);
      return setMuted(step, leg, command.on);
    case "dtmf": {
      // a meeting room asking the party its PIN reads them
      if (leg.state === "up" && await typePin(step, leg, command.digits)) return;
      const peers = peersOf(leg);
      if (leg.state !== "up" || !peers.length) throw notTalking(leg);
      for (const peer of peers) peer.heardDigits += command.digits;
      return;
    }
    case "record":
      return record(step, leg, command.action);
    case "attach":
      leg.call.userData = { ...leg.call.userData, ...usrVariables(command.variables) };
      return;
  }
}

const notTalking = (leg: Leg) => refuse("not_talking", `call ${leg.uniqueId} talks with nobody`);

/** svc holds `leg`'s call: its peer hears music, its user gets `EventOnHold`. */
function hold(step: Step, leg: Leg): void {
  if (transferOf(step.sim, leg)) {
    throw refuse("in_transfer", `call ${leg.uniqueId} is transferring`);
  }
  if (inGroup(leg)) throw refuse("in_conference", `call ${leg.uniqueId} is in a conference`);
  if (leg.heldBy) return; // already on hold
  const peer = peerOf(leg);
  if (leg.state !== "up" || !peer) throw notTalking(leg);
  unbridge(leg);
  unbridge(peer);
  leg.state = "on_hold";
  leg.heldBy = "svc";
  leg.holdPeer = peer;
  peer.holdPeer = leg;
  peer.music = true;
  phoneEvent(step, leg, "EventOnHold");
}

/** Takes back a call svc holds: both talk again, its user gets `EventEstablished`. */
function resume(step: Step, leg: Leg): void {
  if (leg.heldBy === "phone") {
    throw refuse("held_by_phone", `call ${leg.uniqueId} is held by its phone`);
  }
  const peer = leg.holdPeer;
  if (leg.heldBy !== "svc" || !peer) throw refuse("not_held", `call ${leg.uniqueId} is not held`);
  talkAgain(leg, peer);
  phoneEvent(step, leg, "EventEstablished");
}

/** `leg` and `peer` talk again after a hold or a transfer: no music, no hold. */
function talkAgain(leg: Leg, peer: Leg): void {
  bridgeLegs([leg, peer]);
  for (const party of [leg, peer]) {
    party.music = false;
    party.holdPeer = null;
    if (party.heldBy === "svc") party.heldBy = null;
    if (party.state === "on_hold" && !party.heldBy) party.state = "up";
  }
}

/**
 * Recording: start and stop do nothing when already so; pause and resume need a recording. A
 * change shows in the party's phone event (`recordState`) and its agent's `monitorState`.
 */
function record(step: Step, leg: Leg, action: "start" | "stop" | "pause" | "resume"): void {
  const before = leg.record;
  if (action === "start") {
    if (!talking(leg)) throw notTalking(leg);
    if (leg.record === "inactive") leg.record = "active";
  } else if (action === "stop") {
    leg.record = "inactive";
  } else if (leg.record === "inactive") {
    throw refuse("recording_not_started", `call ${leg.uniqueId} is not recorded`);
  } else leg.record = action === "pause" ? "paused" : "active";
  if (leg.record !== before) recordChanged(step, leg);
}

/**
 * The recording of `leg` changed: its user gets its current phone event again with the new
 * `recordState`, and its agent on that queue call `AgentOnCall` with the new `monitorState`.
 */
function recordChanged(step: Step, leg: Leg): void {
  if (leg.announced) {
    phoneEvent(step, leg, leg.state === "on_hold" ? "EventOnHold" : "EventEstablished");
  }
  const agent = leg.agentId === null ? undefined : step.sim.agents.get(leg.agentId);
  if (agent?.leg === leg && agent.state === "AgentOnCall") agentEvent(step, agent, "AgentOnCall");
}

// --- hanging up ----------------------------------------------------------------------------------

/**
 * A party that answered hangs up. A conference member leaves it (the host ends it); a transfer's
 * initiator hands the transferred party over: it calls the recipient anew (a PBX ends the
 * consultation with its initiator, whatever its state); its transferred party abandons it; its
 * recipient cancels it. Otherwise the call ends, unless others of it are in a conference: then
 * only this party and its peer end.
 */
export async function partyHangsUp(step: Step, leg: Leg): Promise<void> {
  const conference = leg.bridge?.conference;
  if (conference) return await leaveConference(step, conference, leg);
  const room = leg.bridge?.room;
  if (room) return await leaveRoom(step, room, leg);
  const transfer = transferOf(step.sim, leg);
  if (transfer?.initiator === leg) return await redial(step, transfer);
  if (transfer?.recipient === leg && transfer.status === "answered") {
    return await undoTransfer(step, transfer);
  }
  if (transfer?.transferred === leg) {
    // abandoned: the initiator and the recipient go on as a call of their own
    forget(transfer);
    release(step, leg);
    return await endIfIdle(step, leg.call);
  }
  const call = leg.call;
  if (call.legs.some((other) => !other.ended && other !== leg && other.bridge?.conference)) {
    const peer = peerOf(leg);
    release(step, leg);
    if (peer) release(step, peer);
    return await endIfIdle(step, call);
  }
  await endCall(step, call);
}

// --- transfers -----------------------------------------------------------------------------------

/**
 * Starts a transfer of `transferredCallId`, the peer of `initiatorCallId`, to `exten`: blind, the
 * initiator's leg ends and the transferred party calls `exten`; attended, the transferred party
 * hears music and the initiator's phone calls `exten` (`EventDialing`).
 */
export async function startTransfer(step: Step, request: TransferRequest): Promise<TransferView> {
  const initiator = legOf(step.sim, request.initiatorCallId);
  const transferred = legOf(step.sim, request.transferredCallId);
  if (initiator.userId === null) {
    throw refuse("no_user", `call ${initiator.uniqueId} is no user's`);
  }
  if (initiator.transfer) {
    throw refuse("transfer_exists", `call ${initiator.uniqueId} already transfers`);
  }
  if (transferOf(step.sim, initiator) || transferOf(step.sim, transferred)) {
    throw refuse("in_transfer", "a party of that call is already in a transfer");
  }
  if (inGroup(initiator)) {
    throw refuse("in_conference", `call ${initiator.uniqueId} is in a conference`);
  }
  if (!talking(initiator)) throw notTalking(initiator);
  if (peerOf(initiator) !== transferred) {
    throw refuse(
      "not_peer",
      `call ${transferred.uniqueId} is not the peer of ${initiator.uniqueId}`,
    );
  }
  const view = startedTransfer(request, initiator.userId);
  if (request.flow === "blind") {
    release(step, initiator);
    transferred.music = false;
    await dialFrom(step, transferred.call, transferred, request.exten, request.context);
    return view;
  }
  unbridge(initiator);
  unbridge(transferred);
  Object.assign(initiator, { state: "up", heldBy: null, holdPeer: transferred, music: false });
  Object.assign(transferred, { holdPeer: initiator, music: true });
  const transfer: Transfer = {
    initiator,
    transferred,
    recipient: null,
    exten: request.exten,
    context: request.context,
    status: "ringback",
    failed: (next) => undoTransfer(next, transfer),
  };
  initiator.transfer = transfer;
  initiator.otherDN = request.exten;
  phoneEvent(step, initiator, "EventDialing", request.exten);
  if (request.timeoutMs !== null) {
    step.later(initiator, request.timeoutMs, async (next) => {
      if (initiator.transfer === transfer && transfer.status === "ringback") {
        await undoTransfer(next, transfer);
      }
    });
  }
  await dialFrom(step, initiator.call, initiator, request.exten, request.context, transfer);
  return {
    ...view,
    recipientCallId: transfer.recipient?.uniqueId ?? null,
    status: transfer.status,
  };
}

/** The transfer whose initiator is `id`; `no_transfer` when there is none. */
export function transferOfId(sim: SimState, id: string): Transfer {
  for (const leg of sim.activeLegs()) {
    if (leg.uniqueId === id && leg.transfer) return leg.transfer;
  }
  throw refuse("no_transfer", `no transfer ${id}`);
}

/** The transfer is no longer in progress (its call's dials are its own again). */
function forget(transfer: Transfer): void {
  transfer.initiator.transfer = null;
  const call = transfer.initiator.call;
  if (call.transfer === transfer) {
    call.transfer = null;
    call.ringSrc = null;
  }
}

/**
 * Completes an attended transfer: the initiator's leg ends; answered, the transferred party and
 * the recipient talk (each gets `EventEstablished` naming the other); still ringing, the recipient
 * stops ringing and the transferred party calls it again.
 */
export async function completeTransfer(step: Step, transfer: Transfer): Promise<void> {
  const { initiator, transferred, recipient } = transfer;
  if (transfer.status !== "answered" || !recipient || recipient.ended) {
    return await redial(step, transfer);
  }
  forget(transfer);
  release(step, initiator);
  talkAgain(transferred, recipient);
  transferred.otherDN = numberOf(recipient);
  recipient.otherDN = numberOf(transferred);
  transferred.call.origin = transferred;
  if (recipient.userId !== null) {
    const rung = recipient.call.rung.get(recipient.userId);
    if (rung) rung.src = { username: transferred.username, number: numberOf(transferred) };
  }
  phoneEvent(step, transferred, "EventEstablished");
  phoneEvent(step, recipient, "EventEstablished");
}

/**
 * The initiator's leg and the consultation end, and the transferred party calls the transfer's
 * number itself (the recipient rings anew, seeing it).
 */
async function redial(step: Step, transfer: Transfer): Promise<void> {
  const { initiator, transferred } = transfer;
  forget(transfer);
  release(step, initiator);
  stopConsultation(step, transfer);
  transferred.music = false;
  transferred.holdPeer = null;
  await dialFrom(step, transferred.call, transferred, transfer.exten, transfer.context);
}

/** Cancels an attended transfer (or its dial failed): `undoTransfer`. */
export const cancelTransfer = (step: Step, transfer: Transfer) => undoTransfer(step, transfer);

/**
 * The recipient's leg ends (ringing or answered), and the initiator talks with the transferred
 * party again (`EventEstablished` naming it).
 */
async function undoTransfer(step: Step, transfer: Transfer): Promise<void> {
  const { initiator, transferred } = transfer;
  forget(transfer);
  stopConsultation(step, transfer);
  if (initiator.ended || transferred.ended) return await endIfIdle(step, initiator.call);
  talkAgain(initiator, transferred);
  initiator.otherDN = numberOf(transferred);
  phoneEvent(step, initiator, "EventEstablished");
}

/** The consultation's recipient (ringing or answered) and any queue it waits in end. */
function stopConsultation(step: Step, transfer: Transfer): void {
  if (transfer.recipient) release(step, transfer.recipient);
  const call = transfer.initiator.call;
  const wait = call.wait;
  if (wait && wait.party === transfer.initiator) {
    leftQueue(step, call, "abandoned");
    if (wait.offer) release(step, wait.offer);
    endLeg(step, wait.leg);
  }
}

// --- conferences ---------------------------------------------------------------------------------

/** The conference `id`; `no_conference` when there is none. */
export function conferenceOfId(sim: SimState, id: string): Conference {
  const conference = sim.conferences.get(id);
  if (!conference) throw refuse("no_conference", `no conference ${id}`);
  return conference;
}

/**
 * The host user's leg `party` is the peer of (its two-party peer, the one its hold is with, or a
 * transfer's initiator); `not_peer` otherwise.
 */
function hostLegOf(party: Leg, hostUserId: number): Leg {
  const partner = peerOf(party);
  if (!partner || partner.userId !== hostUserId) {
    throw refuse("not_peer", `call ${party.uniqueId} is not talking with the host`);
  }
  return partner;
}

/**
 * Merges the host's leg, its peer (as wazo-calld does: first, when the participants leave it out)
 * and the participants (peers of the host user's legs) into a conference, members in that order.
 */
export async function startConference(
  step: Step,
  hostCallId: string,
  participantCallIds: string[],
): Promise<ConferenceView> {
  const host = legOf(step.sim, hostCallId);
  if (host.userId === null) throw refuse("no_user", `call ${hostCallId} is no user's`);
  if (inGroup(host)) throw refuse("in_conference", `call ${hostCallId} is in a conference`);
  const hostPeer = peerOf(host);
  if (!talking(host) || !hostPeer) throw notTalking(host);
  const listed = participantCallIds.map((id) => legOf(step.sim, id));
  const participants = listed.includes(hostPeer) ? listed : [hostPeer, ...listed];
  const partners = participants.map((party) => {
    if (inGroup(party)) {
      throw refuse("in_conference", `call ${party.uniqueId} is in a conference`);
    }
    return hostLegOf(party, host.userId!);
  });
  const conference: Conference = {
    id: host.uniqueId,
    host,
    bridge: { legs: new Set(), conference: null },
    joined: new Map(),
  };
  conference.bridge.conference = conference;
  step.sim.conferences.set(conference.id, conference);
  if (host.transfer) forget(host.transfer);
  await join(step, conference, host, null);
  for (const [i, party] of participants.entries()) {
    await join(step, conference, party, partners[i]!);
  }
  return conferenceView(conference);
}

/** Adds a party (the peer of one of the host user's other legs) to the conference. */
export async function addToConference(step: Step, conference: Conference, callId: string) {
  const party = legOf(step.sim, callId);
  if (inGroup(party)) throw refuse("in_conference", `call ${party.uniqueId} is in a conference`);
  await join(step, conference, party, hostLegOf(party, conference.host.userId!));
}

/**
 * `party` joins: the host user's leg it talked with ends (unless it is the host's own), it stops
 * hearing music; a leg svc held talks again (`EventEstablished`).
 */
async function join(step: Step, conference: Conference, party: Leg, partner: Leg | null) {
  if (partner && partner !== conference.host) {
    release(step, partner);
    await endIfIdle(step, partner.call);
  }
  for (const other of [party, party.holdPeer]) {
    if (other?.holdPeer === party) other.holdPeer = null;
  }
  party.holdPeer = null;
  party.music = false;
  const wasHeld = party.heldBy === "svc";
  if (wasHeld) party.heldBy = null;
  if (party.state === "on_hold" && !party.heldBy) party.state = "up";
  bridgeLegs([party], conference);
  conference.joined.set(party, step.now);
  if (wasHeld) phoneEvent(step, party, "EventEstablished");
}

/** A member leaves (hung up): released; the host leaving ends the conference. */
async function leaveConference(step: Step, conference: Conference, leg: Leg): Promise<void> {
  if (leg === conference.host) return await endConference(step, conference);
  conference.joined.delete(leg);
  release(step, leg);
  await endIfIdle(step, leg.call);
}

/** Hangs up a member (the host: every member). */
export async function removeFromConference(step: Step, conference: Conference, callId: string) {
  const leg = legOf(step.sim, callId);
  if (leg.bridge?.conference !== conference) {
    throw refuse("no_call", `call ${callId} is not in conference ${conference.id}`);
  }
  await leaveConference(step, conference, leg);
}

/** Every member is hung up, in joining order; their calls end once nothing is left of them. */
export async function endConference(step: Step, conference: Conference): Promise<void> {
  step.sim.conferences.delete(conference.id);
  const members = [...conference.joined.keys()];
  conference.joined.clear();
  for (const leg of members) release(step, leg);
  for (const call of new Set(members.map((leg) => leg.call))) await endIfIdle(step, call);
}

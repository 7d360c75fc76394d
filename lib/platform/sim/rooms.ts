/**
 * The simulated PBX's meeting rooms (docs/meetingrooms.md), as Asterisk's ConfBridge runs them for
 * the Asterisk adapter: the party that dials a room's number (a user's phone, a transferred or
 * forwarded party) is answered by the room, asked its PIN when it has one (digits then `#`, three
 * tries, then the room hangs up), refused when the room is full (the room hangs up), else joins:
 * `EventEstablished` for its user, then the room's `joined`. Leaving (hanging up, kicked) gives the
 * room's `left`, then `EventReleased` and the call's history. The simulator has no sound: nobody
 * is ever `talking`.
 */
import { PlatformRefusal } from "../port.ts";
import type { RoomCommand, RoomConfig, RoomEvent, RoomParticipant, RoomState } from "../rooms.ts";
import { userName } from "../directory.ts";
import { endCall, endIfIdle, hangupLeg, phoneEvent, release, unbridge } from "./legs.ts";
import type { Leg, Room, SimState, Step } from "./state.ts";

/** How many wrong PINs a room takes before it hangs up (ConfBridge's three). */
const PIN_TRIES = 3;
/** How long a room waits for a PIN before it hangs up (ConfBridge: three prompts of ~10 s). */
const PIN_WAIT_MS = 30_000;

const refuse = (reason: string, message: string) => new PlatformRefusal(reason, message);

/** The rooms with someone in them. */
export function roomList(sim: SimState, dir: Step["dir"]): RoomState[] {
  return [...sim.rooms.values()].map((room) => ({
    roomId: room.config.id,
    participants: participantsOf(room, dir),
    recording: room.recording,
    startedMs: room.startedMs,
  }));
}

function participantsOf(room: Room, dir: Step["dir"]): RoomParticipant[] {
  return [...room.members].map(([leg, joinedMs]) => participant(leg, joinedMs, dir));
}

/** A member as the port shows it: its caller id is its user's name and its number. */
function participant(leg: Leg, joinedMs: number, dir: Step["dir"]): RoomParticipant {
  const user = leg.userId === null ? undefined : dir.users.get(leg.userId);
  return {
    callId: leg.uniqueId,
    linkedId: leg.call.linkedId,
    userId: leg.userId,
    username: leg.username,
    name: user ? userName(user) : "",
    number: leg.number ?? leg.dn ?? leg.name,
    muted: leg.muted,
    talking: false,
    joinedMs,
  };
}

function roomEvent(
  step: Step,
  room: Room,
  event: RoomEvent["event"],
  leg: Leg | null,
  joinedMs = 0,
): void {
  step.emit({
    kind: "room",
    event,
    roomId: room.config.id,
    roomType: room.config.type,
    roomNumber: room.config.number,
    roomName: room.config.name,
    participant: leg ? participant(leg, room.members.get(leg) ?? joinedMs, step.dir) : null,
    participants: participantsOf(room, step.dir),
    recording: room.recording,
  });
}

/**
 * The calling party of `call` (its `origin`, up) reaches `config`: asked its PIN, unless it has
 * none or svc invited it; then it joins.
 */
export async function reachRoom(
  step: Step,
  leg: Leg | null,
  config: RoomConfig,
  invited: boolean,
): Promise<void> {
  if (!leg || leg.ended) return;
  if (config.pin === null || invited) return await joinRoom(step, leg, config);
  leg.pinPrompt = { room: config, typed: "", tries: 0 };
  step.later(leg, PIN_WAIT_MS, async (next) => {
    if (leg.pinPrompt && !leg.ended) await roomHangsUp(next, leg);
  });
}

/**
 * Digits the party at a PIN prompt typed: `#` ends an attempt; the right PIN joins, a third wrong
 * one has the room hang up. Answers false when the party is at no prompt.
 */
export async function typePin(step: Step, leg: Leg, digits: string): Promise<boolean> {
  const prompt = leg.pinPrompt;
  if (!prompt) return false;
  for (const digit of digits) {
    if (digit !== "#") {
      prompt.typed += digit;
      continue;
    }
    const room = step.dir.rooms.get(prompt.room.id) ?? prompt.room;
    if (prompt.typed === room.pin) {
      leg.pinPrompt = null;
      await joinRoom(step, leg, room);
      return true;
    }
    prompt.typed = "";
    if (++prompt.tries >= PIN_TRIES) {
      await roomHangsUp(step, leg);
      return true;
    }
  }
  return true;
}

/** The room hangs the party up before it joined (a wrong PIN, a full room): its call ends. */
async function roomHangsUp(step: Step, leg: Leg): Promise<void> {
  leg.pinPrompt = null;
  await endCall(step, leg.call);
}

/** `leg` joins the room (refused when full): `EventEstablished`, then the room's `joined`. */
async function joinRoom(step: Step, leg: Leg, config: RoomConfig): Promise<void> {
  const known = step.sim.rooms.get(config.id);
  if (known && config.maxUsers > 0 && known.members.size >= config.maxUsers) {
    return await roomHangsUp(step, leg);
  }
  const room: Room = known ?? {
    config,
    bridge: { legs: new Set(), conference: null, room: null },
    members: new Map(),
    recording: config.record,
    startedMs: step.now,
  };
  room.bridge.room = room;
  step.sim.rooms.set(config.id, room);
  const call = leg.call;
  call.established = true;
  call.answeredMs ??= step.now;
  unbridge(leg);
  leg.music = false;
  leg.muted = false;
  room.bridge.legs.add(leg);
  leg.bridge = room.bridge;
  room.members.set(leg, step.now);
  phoneEvent(step, leg, "EventEstablished");
  roomEvent(step, room, "joined", leg);
  const talkMs = step.sim.policyOf(leg.name).talk_ms;
  if (leg.selfAnswered && talkMs > 0 && !leg.timers.size) {
    step.later(leg, talkMs, (next) => hangupLeg(next, leg));
  }
}

/** A member leaves (hung up, kicked): the room's `left`, then its release; its call ends. */
export async function leaveRoom(step: Step, room: Room, leg: Leg): Promise<void> {
  const joinedMs = room.members.get(leg) ?? step.now;
  room.members.delete(leg);
  unbridge(leg);
  if (room.members.size === 0) step.sim.rooms.delete(room.config.id);
  roomEvent(step, room, "left", leg, joinedMs);
  release(step, leg);
  await endIfIdle(step, leg.call);
}

/** The room `roomId` with someone in it; `no_room` otherwise. */
export function roomOfId(sim: SimState, roomId: string): Room {
  const room = sim.rooms.get(roomId);
  if (!room) throw refuse("no_room", `nobody is in room ${roomId}`);
  return room;
}

/** The member `callId` of `room`; `no_participant` otherwise. */
function memberOf(room: Room, callId: string): Leg {
  for (const leg of room.members.keys()) if (leg.uniqueId === callId) return leg;
  throw refuse("no_participant", `room ${room.config.id} has no participant ${callId}`);
}

/** Mutes, unmutes or kicks a member. */
export async function roomCommand(
  step: Step,
  room: Room,
  callId: string,
  command: RoomCommand,
): Promise<void> {
  const leg = memberOf(room, callId);
  if (command.kind === "kick") return await leaveRoom(step, room, leg);
  setMuted(step, leg, command.on);
}

/** A member muted or unmuted (by svc, or its own call's mute): the room's `update`. */
export function setMuted(step: Step, leg: Leg, on: boolean): void {
  const room = leg.bridge?.room;
  if (leg.muted === on) return;
  leg.muted = on;
  if (room) roomEvent(step, room, "update", leg);
}

/** Starts or stops the room's recording: the room's `recording`. */
export function recordRoom(step: Step, room: Room, on: boolean): void {
  if (on && room.recording) throw refuse("already_recorded", `room ${room.config.id} is recorded`);
  if (!on && !room.recording) {
    throw refuse("not_recorded", `room ${room.config.id} is not recorded`);
  }
  room.recording = on;
  roomEvent(step, room, "recording", null);
}

/** Every member is hung up, in joining order (the room was deleted). */
export async function endRoom(step: Step, room: Room): Promise<void> {
  for (const leg of [...room.members.keys()]) await leaveRoom(step, room, leg);
}

/** Refuses an invitation into a full room before any phone rings. */
export function checkRoomNotFull(sim: SimState, config: RoomConfig): void {
  const room = sim.rooms.get(config.id);
  if (room && config.maxUsers > 0 && room.members.size >= config.maxUsers) {
    throw refuse("room_full", `room ${config.id} is full`);
  }
}

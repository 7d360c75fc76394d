/**
 * The meeting rooms on Asterisk (docs/meetingrooms.md, docs/asterisk.md "Meeting rooms"): each
 * room is the ConfBridge conference `svc-room:<room id>` its number runs (config_files.ts). Who is
 * in it comes from ConfBridge's events (`ConfbridgeJoin`, `…Leave`, `…Mute`, `…Unmute`,
 * `…Talking`, `…Record`, `…StopRecord`), read again after each login (`ConfbridgeListRooms`,
 * `ConfbridgeList`): every process follows them alike, so the lease holder's room events are the
 * ones any other would give. svc mutes, kicks and records with `ConfbridgeMute`, `…Unmute`,
 * `…Kick`, `…StartRecord`, `…StopRecord`.
 */
import type { Directory, Phone } from "../directory.ts";
import { PlatformRefusal } from "../port.ts";
import type { RoomCommand, RoomConfig, RoomEvent, RoomParticipant, RoomState } from "../rooms.ts";
import { userName } from "../directory.ts";
import { pbxMessage } from "./agents.ts";
import type { AmiResponse } from "./ami_client.ts";
import type { AmiMessage } from "./ami_message.ts";
import { deviceOf } from "./call_model.ts";
import { TRUNK_DEVICE } from "./config_files.ts";

/** The ConfBridge conference of the room `roomId`. */
export const roomBridge = (roomId: string) => `svc-room:${roomId}`;

/** The room of a ConfBridge conference, null for none of svc's rooms. */
export const bridgeRoom = (conference: string | undefined) =>
  conference?.startsWith("svc-room:") ? conference.slice("svc-room:".length) : null;

export interface RoomBookContext {
  dir(): Directory;
  now(): number;
  emit(event: RoomEvent): void;
  /** An AMI action; unreachable: `PlatformUnavailable`. */
  action(action: string, fields: Record<string, string>): Promise<AmiResponse>;
  /** Where the recordings go (`SVC_ASTERISK_RECORDINGS_DIR`); "" for Asterisk's own. */
  recordingsDir: string;
  /** The phone whose party the channel `uniqueId` is in its call (the call tracker's), if any. */
  phoneOfChannel(uniqueId: string): Phone | null;
}

interface Member extends RoomParticipant {
  /** The channel's name, what ConfBridge's actions name. */
  channel: string;
}

interface Room {
  roomId: string;
  /** The room as configured when it filled (it may be deleted meanwhile). */
  config: Pick<RoomConfig, "type" | "number" | "name">;
  /** By uniqueId, in joining order. */
  members: Map<string, Member>;
  recording: boolean;
  startedMs: number;
}

const refuse = (reason: string, message: string) => new PlatformRefusal(reason, message);

export class RoomBook {
  readonly #rooms = new Map<string, Room>();
  /** A resync of this process has been done (the first one reports nothing: nothing was told). */
  #synced = false;

  constructor(private readonly ctx: RoomBookContext) {}

  /** The rooms with someone in them. */
  rooms(): RoomState[] {
    return [...this.#rooms.values()].map((room) => ({
      roomId: room.roomId,
      participants: participants(room),
      recording: room.recording,
      startedMs: room.startedMs,
    }));
  }

  /** The room `roomId` of a leg `uniqueId` is a member of, if any. */
  roomOf(uniqueId: string): string | null {
    for (const room of this.#rooms.values()) if (room.members.has(uniqueId)) return room.roomId;
    return null;
  }

  /** Refuses (`room_full`) an invitation into a full room before any phone rings. */
  checkNotFull(config: RoomConfig): void {
    const room = this.#rooms.get(config.id);
    if (room && config.maxUsers > 0 && room.members.size >= config.maxUsers) {
      throw refuse("room_full", `room ${config.id} is full`);
    }
  }

  /** ConfBridge's events of svc's rooms; answers whether it was one. */
  handle(event: AmiMessage): boolean {
    const roomId = bridgeRoom(event.get("Conference"));
    if (roomId === null) return false;
    const uniqueId = event.get("Uniqueid") ?? "";
    switch (event.event) {
      case "ConfbridgeJoin": {
        const room = this.#room(roomId);
        if (room.members.has(uniqueId)) return true;
        const member = this.#member(event, this.ctx.now());
        room.members.set(uniqueId, member);
        this.#emit(room, "joined", member);
        return true;
      }
      case "ConfbridgeLeave": {
        const room = this.#rooms.get(roomId);
        const member = room?.members.get(uniqueId);
        if (!room || !member) return true;
        this.#leave(room, member);
        return true;
      }
      case "ConfbridgeMute":
      case "ConfbridgeUnmute":
      case "ConfbridgeTalking": {
        const room = this.#rooms.get(roomId);
        const member = room?.members.get(uniqueId);
        if (!room || !member) return true;
        const muted = event.event === "ConfbridgeTalking"
          ? member.muted
          : event.event === "ConfbridgeMute";
        const talking = event.event === "ConfbridgeTalking"
          ? event.get("TalkingStatus") === "on"
          : member.talking;
        if (muted === member.muted && talking === member.talking) return true;
        Object.assign(member, { muted, talking });
        this.#emit(room, "update", member);
        return true;
      }
      case "ConfbridgeRecord":
      case "ConfbridgeStopRecord": {
        const room = this.#rooms.get(roomId);
        const recording = event.event === "ConfbridgeRecord";
        if (!room || room.recording === recording) return true;
        room.recording = recording;
        this.#emit(room, "recording", null);
        return true;
      }
      case "ConfbridgeEnd": {
        // every member left already (each its own Leave); nothing may stay behind
        const room = this.#rooms.get(roomId);
        if (room) { for (const member of [...room.members.values()]) this.#leave(room, member); }
        this.#rooms.delete(roomId);
        return true;
      }
      default:
        return true;
    }
  }

  /**
   * After each login, what ConfBridge holds now: members svc knew that are gone left while it was
   * away (Asterisk restarted: all of them), each `left`; members it did not know joined meanwhile,
   * each `joined` (not at this process's first login: it told nothing before).
   */
  async resync(): Promise<void> {
    const listed = await this.ctx.action("ConfbridgeListRooms", {});
    const names = listed.ok
      ? listed.items.map((item) => item.get("Conference") ?? "").filter((name) => bridgeRoom(name))
      : [];
    const now = this.ctx.now();
    const found = new Map<string, Map<string, AmiMessage>>();
    for (const name of names) {
      const list = await this.ctx.action("ConfbridgeList", { Conference: name });
      if (!list.ok) continue;
      found.set(
        bridgeRoom(name)!,
        new Map(list.items.map((item) => [item.get("Uniqueid") ?? "", item])),
      );
    }
    const report = this.#synced;
    this.#synced = true;
    for (const room of [...this.#rooms.values()]) {
      const present = found.get(room.roomId);
      for (const member of [...room.members.values()]) {
        if (present?.has(member.callId)) continue;
        if (report) this.#leave(room, member);
        else room.members.delete(member.callId);
      }
      if (room.members.size === 0) this.#rooms.delete(room.roomId);
    }
    for (const [roomId, items] of found) {
      const room = this.#room(roomId);
      for (const [uniqueId, item] of items) {
        if (room.members.has(uniqueId)) continue;
        // in the room for as long as its channel is up, at most (AnsweredTime: seconds up)
        const member = this.#member(item, now - 1000 * (Number(item.get("AnsweredTime")) || 0));
        member.muted = item.get("Muted") === "Yes";
        member.talking = item.get("Talking") === "Yes";
        room.members.set(uniqueId, member);
        if (report) this.#emit(room, "joined", member);
      }
      if (room.members.size === 0) this.#rooms.delete(roomId);
    }
  }

  /** Mutes, unmutes or kicks the member `callId` of the room. */
  async command(roomId: string, callId: string, command: RoomCommand): Promise<void> {
    const room = this.#roomOfId(roomId);
    const member = room.members.get(callId);
    if (!member) throw refuse("no_participant", `room ${roomId} has no participant ${callId}`);
    const action = command.kind === "kick"
      ? "ConfbridgeKick"
      : command.on
      ? "ConfbridgeMute"
      : "ConfbridgeUnmute";
    await this.#act(action, { Conference: roomBridge(roomId), Channel: member.channel });
  }

  /** Starts (into the recordings directory) or stops recording the room. */
  async record(roomId: string, on: boolean): Promise<void> {
    const room = this.#roomOfId(roomId);
    if (on && room.recording) throw refuse("already_recorded", `room ${roomId} is recorded`);
    if (!on && !room.recording) throw refuse("not_recorded", `room ${roomId} is not recorded`);
    const conference = roomBridge(roomId);
    if (!on) return void await this.#act("ConfbridgeStopRecord", { Conference: conference });
    const dir = this.ctx.recordingsDir.replace(/\/+$/, "");
    const file = `${roomId}-${this.ctx.now()}.wav`;
    await this.#act("ConfbridgeStartRecord", {
      Conference: conference,
      RecordFile: dir ? `${dir}/${file}` : file,
    });
  }

  /** Kicks every member (the room was deleted); nobody in it: nothing to do. */
  async end(roomId: string): Promise<void> {
    if (!this.#rooms.has(roomId)) return;
    await this.#act("ConfbridgeKick", { Conference: roomBridge(roomId), Channel: "all" });
  }

  #room(roomId: string): Room {
    let room = this.#rooms.get(roomId);
    if (!room) {
      const known = this.ctx.dir().rooms.get(roomId);
      room = {
        roomId,
        config: {
          type: known?.type ?? (roomId.startsWith("conference-") ? "static" : "personal"),
          number: known?.number ?? null,
          name: known?.name ?? "",
        },
        members: new Map(),
        recording: false,
        startedMs: this.ctx.now(),
      };
      this.#rooms.set(roomId, room);
    }
    return room;
  }

  #roomOfId(roomId: string): Room {
    const room = this.#rooms.get(roomId);
    if (!room) throw refuse("no_room", `nobody is in room ${roomId}`);
    return room;
  }

  /**
   * A member from a `ConfbridgeJoin` or a `ConfbridgeList` item: a user's phone shows its user's
   * name and its extension (as the simulator), a user's phone of another server (over its trunk)
   * too: the one svc invited, else the one whose caller id it comes with; another party its
   * caller id.
   */
  #member(event: AmiMessage, joinedMs: number): Member {
    const channel = event.get("Channel") ?? "";
    const device = deviceOf(channel);
    const dir = this.ctx.dir();
    const phone = !device
      ? null
      : device.startsWith(TRUNK_DEVICE)
      ? this.ctx.phoneOfChannel(event.get("Uniqueid") ?? "") ??
        dir.phoneNamed(event.get("CallerIDNum") ?? "")
      : dir.phoneOfInterface(device);
    const user = phone?.userId == null ? undefined : dir.users.get(phone.userId);
    const name = event.get("CallerIDName") ?? "";
    return {
      callId: event.get("Uniqueid") ?? "",
      linkedId: event.get("Linkedid") ?? "",
      userId: phone?.userId ?? null,
      username: phone?.username ?? "",
      name: user ? userName(user) : name === "<unknown>" ? "" : name,
      number: phone?.extension ?? event.get("CallerIDNum") ?? "",
      muted: event.get("Muted") === "Yes",
      talking: false,
      joinedMs,
      channel,
    };
  }

  #leave(room: Room, member: Member): void {
    room.members.delete(member.callId);
    if (room.members.size === 0) this.#rooms.delete(room.roomId);
    this.#emit(room, "left", member);
  }

  #emit(room: Room, event: RoomEvent["event"], member: Member | null): void {
    this.ctx.emit({
      kind: "room",
      event,
      roomId: room.roomId,
      roomType: room.config.type,
      roomNumber: room.config.number,
      roomName: room.config.name,
      participant: member && participant(member),
      participants: participants(room),
      recording: room.recording,
    });
  }

  async #act(action: string, fields: Record<string, string>): Promise<void> {
    const response = await this.ctx.action(action, fields);
    if (!response.ok) throw refuse("pbx_refused", pbxMessage(action, response));
  }
}

const participant = ({ channel: _, ...member }: Member): RoomParticipant => ({ ...member });

const participants = (room: Room) => [...room.members.values()].map(participant);

/**
 * The calls of an Asterisk PBX as svc follows them from AMI events (docs/asterisk.md): channels
 * grouped by `Linkedid` into calls, the legs on users' phones, and out of them the same phone
 * events, agent states and history records the simulator gives for the same scenario
 * (docs/platform.md). Local channels are plumbing (forwards, queue members) and give no event;
 * event order is not causal across channels, so state is keyed by `Uniqueid`/`Linkedid`.
 */
import { type CallSummary, historyOf } from "../call_records.ts";
import type { Directory, Phone, Target } from "../directory.ts";
import type { PhoneEventType, PlatformEvent } from "../port.ts";
import type { AgentBook } from "./agents.ts";
import type { AmiMessage } from "./ami_message.ts";

/** A phone's part in a call (or the caller's own phone rung first, `originate`). */
export interface Leg {
  uniqueId: string;
  call: Call;
  role: "originate" | "callee" | "agent";
  state: "ringing" | "up" | "on_hold";
  phone: Phone;
  /** The other party's number as this leg's user sees it. */
  otherDN: string;
  ended: boolean;
  /** A phone event was sent for this leg: its user gets `EventReleased` when it ends. */
  announced: boolean;
  answeredMs: number | null;
  /** The agent whose phone this is (agent legs), and the queue that rang it. */
  agentId: number | null;
  queueId: number | null;
}

/** How a call started: a dial command of svc (`user`, `from_queue`, `to_queue`) or not. */
export type CallKind = "user" | "from_queue" | "to_queue" | "phone" | "incoming";

/** Every channel sharing one Linkedid. */
export interface Call extends CallSummary {
  kind: CallKind;
  /** The `USR_` variables every phone event of the call carries. */
  userData: Record<string, string>;
  legs: Leg[];
  /** The calling party's leg: it gets `EventDialing` and `EventFailure`. */
  origin: Leg | null;
  /** The channel svc originated (the caller's phone, or a Local channel for queue dials). */
  originChannel: string | null;
  originUp: boolean;
  /** What svc asked in its Originate. */
  originate: { channel: string; exten: string; context: string } | null;
  /** The Originate's ActionID, to tell its `OriginateResponse` when no channel came. */
  originateId: string | null;
  context: string;
  /** The number an internal callee sees as the caller's. */
  shownNumber: string;
  /** What the number dialled reaches in the caller's context. */
  target: Target["kind"];
  established: boolean;
  /** The calling side's last Dial ended busy or congested: a hang-up then is a failure. */
  failed: boolean;
  /** The queue the call waits in: the number an agent sees and the one that reached it. */
  wait: { queueId: number; agentSees: string; number: string } | null;
  noHistory: boolean;
  ended: boolean;
  /** Uniqueids of its channels not yet hung up. */
  channels: Set<string>;
}

interface Channel {
  uniqueId: string;
  linkedId: string;
  /** `PJSIP/alice-0000000b`: what a Hangup action names. */
  name: string;
  /** `PJSIP/alice` for `PJSIP/alice-0000000b`; null for a Local channel. */
  device: string | null;
  leg: Leg | null;
}

/** What the tracker needs from the adapter. */
export interface TrackerContext {
  dir(): Directory;
  now(): number;
  emit(event: PlatformEvent): void;
  agents: AgentBook;
}

/** A new call: one svc is about to originate (before its first channel exists), or one it sees. */
export interface NewCall {
  linkedId: string;
  kind: CallKind;
  context: string;
  dialled: string;
  shownNumber: string;
  src: Call["src"];
  userData: Record<string, string>;
  /** What svc asks in its Originate; null for a call svc did not place. */
  originate: NonNullable<Call["originate"]> | null;
  /** The caller's phone: rung first by svc's Originate, or the phone that dialled. */
  callerPhone?: Phone;
  /** The queue a dial from queue waits in first. */
  queue?: { id: number; number: string };
}

const RINGING = 5;
const UP = 6;

/** `PJSIP/alice` of `PJSIP/alice-0000000b`, null for Local channels; custom names keep their path. */
export function deviceOf(channel: string): string | null {
  if (/^Local\//i.test(channel)) return null;
  return channel.replace(/-[0-9a-f]+(;\d+)?$/i, "");
}

export class CallTracker {
  readonly #channels = new Map<string, Channel>();
  readonly #calls = new Map<string, Call>();
  /** Agent legs ended while handling the current event: settled once it is handled. */
  #endedAgentLegs: Leg[] = [];

  constructor(private readonly ctx: TrackerContext) {}

  /**
   * Registers a call: one svc is about to originate (its linkedId is the ChannelId asked for), or
   * one whose first channel just appeared.
   */
  start(init: NewCall): Call {
    const dir = this.ctx.dir();
    const target = dir.resolve(init.dialled, init.context);
    const ours = init.originate !== null;
    const call: Call = {
      linkedId: init.linkedId,
      kind: init.kind,
      startMs: this.ctx.now(),
      userData: init.userData,
      legs: [],
      origin: null,
      originChannel: ours || init.callerPhone ? init.linkedId : null,
      originUp: !ours, // a call svc did not place is seen once its first channel dials
      originate: init.originate,
      originateId: null,
      context: init.context,
      dialled: init.dialled,
      dialledUsername: target.kind === "phone" ? target.phone.username : "",
      shownNumber: init.shownNumber,
      src: init.src,
      target: target.kind,
      established: false,
      failed: false,
      answeredMs: null,
      answeredBy: null,
      rung: new Map(),
      wait: init.queue
        ? { queueId: init.queue.id, agentSees: init.dialled, number: init.queue.number }
        : null,
      noHistory: false,
      ended: false,
      channels: new Set(),
    };
    if (init.callerPhone) {
      call.origin = this.#newLeg(call, init.linkedId, init.callerPhone, "originate", init.dialled);
      if (!ours) call.origin.state = "up";
    }
    this.#calls.set(call.linkedId, call);
    return call;
  }

  /** A call svc registered whose Originate was refused: forgotten without a trace. */
  forget(linkedId: string): void {
    const call = this.#calls.get(linkedId);
    if (call && call.channels.size === 0) this.#calls.delete(linkedId);
  }

  /** Linkedids of the calls in progress. */
  calls(): string[] {
    return [...this.#calls.values()].filter((call) => !call.ended).map((call) => call.linkedId);
  }

  /**
   * Handles one AMI event. Answers true when it may change a phone's status (so the adapter bumps
   * its status version).
   */
  handle(event: AmiMessage): boolean {
    const name = event.event;
    try {
      switch (name) {
        case "Newchannel":
          this.#newChannel(event);
          return true;
        case "Newstate":
          this.#newState(event);
          return true;
        case "Newexten":
          this.#newExten(event);
          return false;
        case "DialEnd":
          this.#dialEnd(event);
          return true;
        case "Hangup":
          this.#hangup(event);
          return true;
        case "Hold":
        case "Unhold":
          this.#hold(event, name === "Hold");
          return true;
        case "QueueCallerJoin":
          this.#queueJoin(event);
          return false;
        case "AgentCalled":
          this.#agentCalled(event);
          return true;
        case "AgentRingNoAnswer":
          this.#agentRingNoAnswer(event);
          return true;
        case "OriginateResponse":
          this.#originateResponse(event);
          return true;
        default:
          return false;
      }
    } finally {
      this.#settleAgents();
    }
  }

  /**
   * After a reconnection: the calls none of whose channels the PBX still has (it restarted, or
   * they ended while svc was away) end now, with their releases and history (a dial whose caller
   * never answered fails, without history).
   */
  resync(uniqueIds: Set<string>): void {
    for (const id of this.#channels.keys()) {
      if (!uniqueIds.has(id)) this.#channels.delete(id); // hung up while svc was away
    }
    for (const call of [...this.#calls.values()]) {
      const alive = [...call.channels].some((id) => uniqueIds.has(id));
      if (alive) continue;
      for (const id of call.channels) this.#channels.delete(id);
      call.channels.clear();
      if (call.originUp) this.#endCall(call);
      else {
        // the caller's own phone never answered: the dial failed, as when its channel hangs up
        call.noHistory = true;
        this.#failCall(call);
      }
      this.#calls.delete(call.linkedId);
    }
    this.#settleAgents();
  }

  /**
   * The channels of `phone` in a call in progress, oldest first, each with its leg (null while it
   * has none: a callee's channel takes one when it rings).
   */
  channelsOf(phone: Phone): { name: string; leg: Leg | null }[] {
    const dir = this.ctx.dir();
    return [...this.#channels.values()].filter((channel) => {
      const call = this.#calls.get(channel.linkedId);
      return call !== undefined && !call.ended && channel.device !== null &&
        dir.phoneOfInterface(channel.device)?.lineId === phone.lineId;
    }).map((channel) => ({ name: channel.name, leg: channel.leg?.ended ? null : channel.leg }));
  }

  // --- channels ---------------------------------------------------------------------------------

  #newChannel(event: AmiMessage): void {
    const uniqueId = event.get("Uniqueid");
    const linkedId = event.get("Linkedid");
    const name = event.get("Channel");
    if (!uniqueId || !linkedId || !name) return;
    const channel: Channel = { uniqueId, linkedId, name, device: deviceOf(name), leg: null };
    this.#channels.set(uniqueId, channel);
    let call = this.#calls.get(linkedId);
    if (!call && uniqueId === linkedId) call = this.#notOurs(channel, event);
    if (!call || call.ended) return;
    call.channels.add(uniqueId);
    if (uniqueId === call.originChannel && call.origin) channel.leg = call.origin;
  }

  /** A call svc did not place: from a phone (its user dials), or from elsewhere (a trunk). */
  #notOurs(channel: Channel, event: AmiMessage): Call {
    const phone = channel.device ? this.ctx.dir().phoneOfInterface(channel.device) : null;
    const number = phone?.extension ?? event.get("CallerIDNum") ?? "";
    return this.start({
      linkedId: channel.uniqueId,
      kind: phone ? "phone" : "incoming",
      context: event.get("Context") ?? "",
      dialled: "", // known at its first extension (see #newExten)
      shownNumber: number,
      src: { userId: phone?.userId ?? null, username: phone?.username ?? "", number },
      userData: {},
      originate: null,
      callerPhone: phone ?? undefined,
    });
  }

  #newState(event: AmiMessage): void {
    const channel = this.#channels.get(event.get("Uniqueid") ?? "");
    const call = channel && this.#calls.get(channel.linkedId);
    if (!channel || !call || call.ended) return;
    const state = Number(event.get("ChannelState"));
    if (channel.uniqueId === call.originChannel) {
      if (state === UP && !call.originUp) {
        call.originUp = true;
        if (call.origin?.uniqueId === channel.uniqueId) { // the caller's own phone answered
          call.origin.state = "up";
          this.#phoneEvent(call.origin, "EventDialing");
        }
      }
      return;
    }
    if (!channel.device) return;
    const leg = channel.leg ?? this.#phoneLeg(call, channel);
    if (!leg || leg.ended) return;
    if (state === RINGING && !leg.announced) this.#ringing(call, leg);
    else if (state === UP && leg.state === "ringing") this.#answered(call, leg);
  }

  /** The leg of a phone's channel in `call`: an agent's when the call waits for one there. */
  #phoneLeg(call: Call, channel: Channel): Leg | null {
    const phone = this.ctx.dir().phoneOfInterface(channel.device!);
    if (!phone) return null; // a trunk or an unknown device: the outside network
    const offered = call.legs.find((leg) =>
      !leg.ended && leg.uniqueId === "" && leg.phone.lineId === phone.lineId
    );
    if (offered) {
      offered.uniqueId = channel.uniqueId;
      channel.leg = offered;
      return offered;
    }
    const agent = call.wait ? this.ctx.agents.loggedOn(phone) : null;
    const wait = call.wait;
    const leg = agent && wait
      ? this.#newLeg(call, channel.uniqueId, phone, "agent", wait.agentSees, {
        agentId: agent.agentId,
        queueId: wait.queueId,
      })
      : this.#newLeg(call, channel.uniqueId, phone, "callee", call.shownNumber);
    channel.leg = leg;
    return leg;
  }

  #newLeg(
    call: Call,
    uniqueId: string,
    phone: Phone,
    role: Leg["role"],
    otherDN: string,
    extra: Partial<Leg> = {},
  ): Leg {
    const leg: Leg = {
      uniqueId,
      call,
      role,
      state: "ringing",
      phone,
      otherDN,
      ended: false,
      announced: false,
      answeredMs: null,
      agentId: null,
      queueId: null,
      ...extra,
    };
    call.legs.push(leg);
    return leg;
  }

  /** A phone rings: an agent's shows `AgentRinging` first; its user gets `EventRinging`. */
  #ringing(call: Call, leg: Leg): void {
    if (leg.agentId !== null) this.ctx.agents.ringing(leg.agentId, leg);
    if (leg.phone.userId !== null) {
      const number = leg.role === "agent" ? call.wait?.number ?? "" : leg.phone.extension;
      const known = call.rung.get(leg.phone.userId);
      call.rung.set(leg.phone.userId, {
        username: leg.phone.username,
        number,
        answeredMs: known?.answeredMs ?? null,
      });
    }
    this.#phoneEvent(leg, "EventRinging");
  }

  /**
   * A ringing phone answered: an agent goes on call (a dial from queue then calls its
   * destination from the agent's phone); a dial to queue's destination is established alone and
   * waits for an agent; otherwise the two parties are established.
   */
  #answered(call: Call, leg: Leg): void {
    const now = this.ctx.now();
    leg.state = "up";
    leg.answeredMs = now;
    const rung = leg.phone.userId === null ? undefined : call.rung.get(leg.phone.userId);
    if (rung) rung.answeredMs = now;
    if (leg.role === "agent") {
      call.wait = null;
      this.ctx.agents.answered(leg.agentId!, leg);
      if (call.kind === "from_queue") {
        call.origin = leg;
        leg.otherDN = call.dialled;
        call.src = {
          userId: leg.phone.userId,
          username: leg.phone.username,
          number: leg.phone.extension,
        };
        this.#phoneEvent(leg, "EventDialing");
        return;
      }
      const parties = call.kind === "to_queue" || !call.origin ? [leg] : [call.origin, leg];
      return this.#establish(call, leg, parties);
    }
    if (call.kind === "to_queue") return this.#phoneEvent(leg, "EventEstablished");
    this.#establish(call, leg, call.origin ? [call.origin, leg] : [leg]);
  }

  /** The parties talk: each of `announce` gets `EventEstablished`. */
  #establish(call: Call, answering: Leg | null, announce: Leg[]): void {
    call.established = true;
    call.answeredMs ??= this.ctx.now();
    call.answeredBy ??= answering && answering.phone.userId !== null
      ? answering.phone.username
      : null;
    for (const leg of announce) this.#phoneEvent(leg, "EventEstablished");
  }

  /**
   * The dialplan's applications on the calling channel: `Busy`/`Congestion` fail the call
   * (callee on DND, rejected, busy); `Answer` toward an outside number means the far side took
   * the call (a trunk answering; the recorded test PBX answers outside numbers itself). The
   * first extension a phone dials is the number its user dialled.
   */
  #newExten(event: AmiMessage): void {
    const uniqueId = event.get("Uniqueid") ?? "";
    const call = this.#callOf(uniqueId);
    if (!call || call.ended || uniqueId !== call.originChannel || !call.origin) return;
    const app = event.get("Application");
    const exten = event.get("Exten") ?? "";
    if (call.kind === "phone" && !call.dialled && exten && exten !== "s") {
      call.dialled = exten;
      call.context = event.get("Context") ?? call.context;
      call.target = this.ctx.dir().resolve(exten, call.context).kind;
      call.dialledUsername = this.ctx.dir().phoneAt(exten, call.context)?.username ?? "";
      call.origin.otherDN = exten;
      this.#phoneEvent(call.origin, "EventDialing");
    }
    if (call.established) return;
    if (app === "Busy" || app === "Congestion") this.#failCall(call);
    else if (app === "Answer" && call.target === "external" && call.originUp) {
      this.#establish(call, null, [call.origin]);
    }
  }

  /**
   * The calling side's Dial ended: a busy one fails the call when it hangs up. One answered by
   * anything but a user's phone (whose own answer establishes the call) is the far end taking the
   * call: a trunk (`PJSIP/<trunk>-…`), or a `Local/…` channel, which is only up once whatever it
   * dials answered (an outside route through a Local channel, a forward, a queue's agent).
   */
  #dialEnd(event: AmiMessage): void {
    const uniqueId = event.get("Uniqueid");
    if (!uniqueId) return; // the ringing of an originated channel has only Dest* fields
    const call = this.#callOf(uniqueId);
    if (!call || call.ended || uniqueId !== call.originChannel) return;
    const status = event.get("DialStatus");
    call.failed = status === "BUSY" || status === "CONGESTION";
    const dest = deviceOf(event.get("DestChannel") ?? "");
    const toPhone = dest !== null && this.ctx.dir().phoneOfInterface(dest) !== null;
    if (status === "ANSWER" && !toPhone && call.origin && !call.established) {
      this.#establish(call, null, [call.origin]);
    }
  }

  #hangup(event: AmiMessage): void {
    const uniqueId = event.get("Uniqueid") ?? "";
    const channel = this.#channels.get(uniqueId);
    if (!channel) return;
    this.#channels.delete(uniqueId);
    const call = this.#calls.get(channel.linkedId);
    if (!call) return;
    call.channels.delete(uniqueId);
    if (!call.ended) {
      if (uniqueId === call.originChannel) this.#originHangup(call);
      else if (channel.leg && !channel.leg.ended) this.#legHangup(call, channel.leg);
      // whatever is left: the last channel gone ends the call
      if (!call.ended && call.channels.size === 0) this.#endCall(call);
    }
    if (call.ended && call.channels.size === 0) this.#calls.delete(call.linkedId);
  }

  /**
   * The channel svc originated hung up. The caller's phone: never answered, the dial failed
   * (no history); answered, the call ends (a failure when its last Dial was busy). A Local
   * channel of a queue dial hangs up when Asterisk optimizes it away: the call goes on. So does
   * the Local channel of a dial from mobile once the call is established (the mobile and the
   * destination then talk without it): the call ends with its last channel, or when a talking
   * phone hangs up.
   */
  #originHangup(call: Call): void {
    if (!call.origin || call.origin.uniqueId !== call.originChannel) {
      if (!call.originUp && !call.legs.some((leg) => !leg.ended)) this.#endCall(call);
      return;
    }
    const local = call.originate !== null && deviceOf(call.originate.channel) === null;
    if (!call.originUp) {
      call.noHistory = true;
      this.#failCall(call);
    } else if (!call.established && call.failed) {
      this.#failCall(call);
    } else if (!(local && call.established && call.channels.size > 0)) {
      this.#endCall(call);
    }
  }

  /** A phone that rang without answering is released (the call goes on); one talking ends it. */
  #legHangup(call: Call, leg: Leg): void {
    if (leg.state === "ringing") {
      if (leg.announced) this.#phoneEvent(leg, "EventReleased");
      this.#endLeg(leg);
      return;
    }
    this.#endCall(call);
  }

  #hold(event: AmiMessage, held: boolean): void {
    const channel = this.#channels.get(event.get("Uniqueid") ?? "");
    const leg = channel?.leg;
    if (!leg || leg.ended || !leg.call.established) return;
    if (held && leg.state === "up") {
      leg.state = "on_hold";
      this.#phoneEvent(leg, "EventOnHold");
    } else if (!held && leg.state === "on_hold") {
      leg.state = "up";
      this.#phoneEvent(leg, "EventEstablished");
    }
  }

  #queueJoin(event: AmiMessage): void {
    const call = this.#callOf(event.get("Uniqueid") ?? "");
    const queue = this.ctx.dir().queueNamed(event.get("Queue") ?? "");
    if (!call || call.ended || !queue || call.wait) return;
    const calling = call.kind === "user" || call.kind === "phone";
    call.wait = {
      queueId: queue.id,
      agentSees: calling ? call.src.number : call.dialled,
      number: queue.number ?? queue.name,
    };
  }

  /**
   * The queue rings an agent: `AgentRinging` now, on a leg of the agent's phone that its channel
   * takes when it rings (which may also come first: then it is that leg already).
   */
  #agentCalled(event: AmiMessage): void {
    const call = this.#callOf(event.get("Uniqueid") ?? "");
    const record = this.ctx.dir().agentNumbered(event.get("MemberName") ?? "");
    if (!call || call.ended || !record || !call.wait) return;
    if (call.legs.some((leg) => leg.agentId === record.id && !leg.ended)) return;
    const presence = this.ctx.agents.presence(record.id);
    if (!presence.logged) return;
    const phone = this.ctx.dir().phoneAt(presence.extension!, presence.context!);
    if (!phone) return;
    const leg = this.#newLeg(call, "", phone, "agent", call.wait.agentSees, {
      agentId: record.id,
      queueId: call.wait.queueId,
    });
    this.ctx.agents.ringing(record.id, leg);
  }

  /** The queue gave up ringing an agent whose phone never rang: the agent is free again. */
  #agentRingNoAnswer(event: AmiMessage): void {
    const call = this.#callOf(event.get("Uniqueid") ?? "");
    const record = this.ctx.dir().agentNumbered(event.get("MemberName") ?? "");
    const leg = call?.legs.find((leg) =>
      leg.agentId === record?.id && !leg.ended && leg.uniqueId === ""
    );
    if (leg) this.#endLeg(leg);
  }

  /** An Originate that failed before any channel existed (no contact, unknown endpoint). */
  #originateResponse(event: AmiMessage): void {
    if (event.get("Response") !== "Failure") return;
    const id = event.actionId;
    const call = [...this.#calls.values()].find((call) => id && call.originateId === id);
    if (!call || call.ended || call.channels.size > 0 || call.originUp) return;
    call.noHistory = true;
    this.#failCall(call);
    this.#calls.delete(call.linkedId);
  }

  // --- endings ------------------------------------------------------------------------------------

  /** The calling party gets `EventFailure`; the call ends. */
  #failCall(call: Call): void {
    const origin = call.origin;
    if (origin && !origin.ended) {
      this.#phoneEvent(origin, "EventFailure");
      this.#endLeg(origin);
    }
    this.#endCall(call);
  }

  /** Every party that got an event gets `EventReleased` (in leg order); history is emitted. */
  #endCall(call: Call): void {
    if (call.ended) return;
    call.ended = true;
    call.wait = null;
    for (const leg of call.legs) {
      if (leg.ended) continue;
      if (leg.announced) this.#phoneEvent(leg, "EventReleased");
      this.#endLeg(leg);
    }
    const records = call.noHistory ? [] : historyOf(call, this.ctx.now());
    if (records.length) this.ctx.emit({ kind: "call_ended", linkedId: call.linkedId, records });
  }

  #endLeg(leg: Leg): void {
    leg.ended = true;
    if (leg.agentId !== null) this.#endedAgentLegs.push(leg);
  }

  /** Agents whose queue leg ended while handling the event: after its phone events. */
  #settleAgents(): void {
    const ended = this.#endedAgentLegs;
    this.#endedAgentLegs = [];
    for (const leg of ended) this.ctx.agents.legEnded(leg.agentId!, leg);
  }

  #callOf(uniqueId: string): Call | undefined {
    const channel = this.#channels.get(uniqueId);
    return channel && this.#calls.get(channel.linkedId);
  }

  #phoneEvent(leg: Leg, eventType: PhoneEventType): void {
    const userId = leg.phone.userId;
    if (userId === null) return;
    leg.announced = true;
    this.ctx.emit({
      kind: "phone",
      userId,
      username: leg.phone.username,
      eventType,
      DN: leg.phone.extension,
      otherDN: leg.otherDN,
      linkedId: leg.call.linkedId,
      uniqueId: leg.uniqueId,
      userData: { PLATFORM_USERID: String(userId), ...leg.call.userData },
    });
  }
}

/**
 * The calls of an Asterisk PBX as svc follows them from AMI events (docs/asterisk.md): channels
 * grouped by `Linkedid` into calls, the legs on users' phones and outside lines, and out of them
 * the same phone events, agent states and history records the simulator gives for the same
 * scenario (docs/platform.md). Local channels are plumbing (forwards, queue members) and give no
 * event; event order is not causal across channels, so state is keyed by `Uniqueid`/`Linkedid`.
 * What svc's call control adds (holds, transfers, conferences) is `call_control.ts`'s.
 */
import { historyOf } from "../call_records.ts";
import type { PhoneEventType, QueueCallEvent, WaitingCall } from "../port.ts";
import type { Phone } from "../directory.ts";
import type { AmiMessage } from "./ami_message.ts";
import { ControlState } from "./call_control.ts";
import { bridgeRoom } from "./rooms.ts";
import { TRUNK_DEVICE } from "./config_files.ts";
import {
  type Call,
  type Channel,
  CONFERENCE_CONTEXT,
  CONSULT_CONTEXT,
  deviceOf,
  HOLD_CONTEXT,
  type Leg,
  type NewCall,
  type QueueWait,
  type TrackerContext,
  type TrackerOps,
  WAIT_CONTEXT,
} from "./call_model.ts";

export { deviceOf } from "./call_model.ts";
export type { NewCall } from "./call_model.ts";

const RINGING = 5;
const UP = 6;

/**
 * The `UserEvent` svc sends before each Originate: every process registers the call as the one
 * dialling does (its kind, who dials what, its `USR_` variables), so every process gives the same
 * events for it (docs/asterisk.md, "Several svc processes").
 */
export const DIAL_EVENT = "SvcDial";
/** The `UserEvent` telling that the Originate of an announced call was refused: forgotten. */
export const DIAL_DROPPED_EVENT = "SvcDialDropped";

/** The fields of the `SvcDial` announcing `init` (a call svc is about to originate). */
export function dialAnnouncement(init: NewCall): Record<string, string | string[]> {
  const phone = init.callerPhone;
  return {
    UserEvent: DIAL_EVENT,
    Call: init.linkedId,
    Kind: init.kind,
    Context: init.context,
    Dialled: init.dialled,
    Shown: init.shownNumber,
    ShownName: init.shownName,
    SrcUser: init.src.userId === null ? "" : String(init.src.userId),
    SrcUsername: init.src.username,
    SrcNumber: init.src.number,
    ...(init.originate && {
      OriginateChannel: init.originate.channel,
      OriginateExten: init.originate.exten,
      OriginateContext: init.originate.context,
    }),
    ...(phone && {
      PhoneExtension: phone.extension,
      PhoneContext: phone.context,
      PhoneLine: String(phone.lineId),
      PhoneUser: phone.userId === null ? "" : String(phone.userId),
      PhoneUsername: phone.username,
      PhoneInterface: phone.interface ?? "",
    }),
    ...(init.callerNumber !== undefined && { CallerNumber: init.callerNumber }),
    ...(init.queue && { QueueId: String(init.queue.id), QueueNumber: init.queue.number }),
    // one header per variable (a value holds no line break: the Originate's would refuse it too)
    Var: Object.entries(init.userData).map(([key, value]) => `${key}=${value}`),
  };
}

/** The call a `SvcDial` announces; null when it lacks what a call needs. */
function announcedCall(event: AmiMessage): NewCall | null {
  const linkedId = event.get("Call");
  const kind = event.get("Kind") as NewCall["kind"] | undefined;
  if (!linkedId || !kind) return null;
  const id = (value: string | undefined) => value ? Number(value) : null;
  const channel = event.get("OriginateChannel");
  const extension = event.get("PhoneExtension");
  return {
    linkedId,
    kind,
    context: event.get("Context") ?? "",
    dialled: event.get("Dialled") ?? "",
    shownNumber: event.get("Shown") ?? "",
    shownName: event.get("ShownName") ?? "",
    src: {
      userId: id(event.get("SrcUser")),
      username: event.get("SrcUsername") ?? "",
      number: event.get("SrcNumber") ?? "",
    },
    userData: Object.fromEntries(
      event.all("Var").map((pair) => {
        const at = pair.indexOf("=");
        return [pair.slice(0, at), pair.slice(at + 1)];
      }),
    ),
    originate: channel === undefined ? null : {
      channel,
      exten: event.get("OriginateExten") ?? "",
      context: event.get("OriginateContext") ?? "",
    },
    ...(extension !== undefined && {
      callerPhone: {
        extension,
        context: event.get("PhoneContext") ?? "",
        lineId: Number(event.get("PhoneLine")),
        userId: id(event.get("PhoneUser")),
        username: event.get("PhoneUsername") ?? "",
        interface: event.get("PhoneInterface") || null,
      },
    }),
    ...(event.get("CallerNumber") !== undefined && { callerNumber: event.get("CallerNumber") }),
    ...(event.get("QueueId") !== undefined && {
      queue: { id: Number(event.get("QueueId")), number: event.get("QueueNumber") ?? "" },
    }),
  };
}

/** Where svc parks channels it holds or transfers: a call ending leaves none of them behind. */
const SVC_CONTEXTS = new Set([HOLD_CONTEXT, WAIT_CONTEXT, CONSULT_CONTEXT, CONFERENCE_CONTEXT]);

/** A caller id number Asterisk knows (not empty, not `<unknown>`). */
const knownNumber = (number: string) => number !== "" && number !== "<unknown>";

/** How many ended calls' variables are kept for a late part of theirs from another server. */
const ENDED_DATA_KEPT = 256;

export class CallTracker {
  readonly #channels = new Map<string, Channel>();
  /** The variables of the last ended calls, by linkedId (see `userData`). */
  readonly #endedData = new Map<string, Record<string, string>>();
  readonly #calls = new Map<string, Call>();
  /** Bridge id → the uniqueIds of the channels in it. */
  readonly #bridges = new Map<string, Set<string>>();
  /** Agent legs ended while handling the current event: settled once it is handled. */
  #endedAgentLegs: Leg[] = [];
  /**
   * Calls waiting in a queue that joined while svc was away (`QueueStatus` after a login), by
   * uniqueId: shown among the waiting calls until they leave, never counted (svc saw no join).
   */
  readonly #strayWaits = new Map<string, WaitingCall>();
  /** What svc's call control did to the calls (holds, transfers, conferences). */
  readonly control: ControlState;

  constructor(private readonly ctx: TrackerContext) {
    this.control = new ControlState(this.#ops());
  }

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
      shownName: init.shownName,
      src: init.src,
      target: target.kind,
      established: false,
      failed: false,
      answeredMs: null,
      answeredBy: null,
      rung: new Map(),
      wait: init.queue
        ? {
          queueId: init.queue.id,
          agentSees: init.dialled,
          number: init.queue.number,
          callerName: "",
          joinedMs: null,
          channel: "",
          callerHungUp: false,
          memberAnswered: false,
          leftMs: null,
        }
        : null,
      noHistory: false,
      ended: false,
      channels: new Set(),
      ringSrc: null,
      transfer: null,
      placedThere: null,
    };
    if (init.callerPhone) {
      call.origin = this.#newLeg(call, init.linkedId, init.callerPhone, "originate", init.dialled);
      if (init.callerNumber) call.origin.number = init.callerNumber;
      if (!ours) { // the phone that dialled is up already
        call.origin.state = "up";
        call.origin.answeredMs = call.startMs;
      }
    }
    this.#calls.set(call.linkedId, call);
    return call;
  }

  /**
   * Another process's dial, as it announced it before its Originate (`SvcDial`): registered as it
   * registered it; a refused Originate's (`SvcDialDropped`): forgotten. This process's own dials
   * are registered already.
   */
  #announced(event: AmiMessage): void {
    if (event.get("UserEvent") === DIAL_DROPPED_EVENT) {
      this.forget(event.get("Call") ?? "");
      return;
    }
    const init = announcedCall(event);
    if (init && !this.#calls.has(init.linkedId)) this.start(init);
  }

  /** A call svc registered whose Originate was refused: forgotten without a trace. */
  forget(linkedId: string): void {
    const call = this.#calls.get(linkedId);
    if (call && call.channels.size === 0) this.#calls.delete(linkedId);
  }

  /**
   * The `USR_` variables of call `linkedId`, in progress or among the last ended (another
   * server's AMI connection may tell of its part of the call late), null for none.
   */
  userData(linkedId: string): Record<string, string> | null {
    const call = this.#calls.get(linkedId);
    return call && !call.ended ? call.userData : this.#endedData.get(linkedId) ?? null;
  }

  /** Adds `data` to call `linkedId`'s variables (its next phone events carry them). */
  addUserData(linkedId: string, data: Record<string, string>): void {
    const call = this.#calls.get(linkedId);
    if (call && !call.ended) call.userData = { ...data, ...call.userData };
  }

  /**
   * A queue's call to an agent of another server leaves over a trunk (`SvcAgentTrunk`): that
   * trunk channel is the agent's phone here, the queue's side of the call (its ringing, answer and
   * history record as on one server; the phone's events are its own server's).
   */
  agentTrunk(uniqueId: string, lineId: number): void {
    const channel = this.#channels.get(uniqueId);
    const call = channel && this.#calls.get(channel.linkedId);
    const phone = this.ctx.dir().phoneOfLine(lineId);
    if (!channel || !call || call.ended || !phone?.interface) return;
    const outside = channel.leg;
    if (outside && (outside.role !== "outside" || outside.announced)) return;
    if (outside) call.legs = call.legs.filter((leg) => leg !== outside);
    channel.leg = null;
    channel.device = phone.interface;
  }

  /**
   * Call `linkedId` came over a trunk, placed by another server on behalf of a phone here to
   * `dialled` (a dial from queue for its agent, an invitation): the phone shows `dialled`, its
   * answer is its dialling.
   */
  placedThere(linkedId: string, dialled: string, asCaller: boolean): void {
    const call = this.#calls.get(linkedId);
    if (!call || call.ended || call.established) return;
    call.placedThere = { dialled, asCaller };
    // the caller id it came with is what the phone shows of what it dials (an invitation's room),
    // not a caller: the phone's party is named from the directory, as on one server
    if (asCaller) [call.shownNumber, call.shownName] = ["", ""];
  }

  /**
   * Call `linkedId`'s party on another server is established there (`ESTABLISHED_EVENT`): the
   * agent of a dial from queue talks to its destination, a caller to a room or a queue is in
   * (answered by user `answeredBy` there, a queue's agent).
   */
  establishedThere(linkedId: string, answeredBy: string | null): void {
    const call = this.#calls.get(linkedId);
    if (!call || call.ended || call.established) return;
    if (answeredBy) call.answeredBy = answeredBy;
    const parties = call.placedThere !== null
      ? call.legs.filter((leg) => leg.phone && leg.state === "up" && !leg.ended)
      : call.origin && !call.origin.ended
      ? [call.origin]
      : [];
    if (parties.length) this.#establish(call, null, parties);
  }

  /** The phone of the party on channel `uniqueId`, if any. */
  phoneOfChannel(uniqueId: string): Phone | null {
    return this.#channels.get(uniqueId)?.leg?.phone ?? null;
  }

  /** Linkedids of the calls in progress. */
  calls(): string[] {
    return [...this.#calls.values()].filter((call) => !call.ended).map((call) => call.linkedId);
  }

  /** Every party of the calls in progress, oldest call first. */
  liveLegs(): Leg[] {
    return [...this.#calls.values()].flatMap((call) =>
      call.ended ? [] : call.legs.filter((leg) => !leg.ended && leg.uniqueId !== "")
    );
  }

  /** The channel of `leg`, while it exists. */
  channelOf(leg: Leg): Channel | undefined {
    const channel = this.#channels.get(leg.uniqueId);
    return channel?.leg === leg ? channel : undefined;
  }

  /**
   * The parties `leg` hears: the others in its bridge, through the Local channels between bridges
   * (a forward, a queue's agent, a consultation before Asterisk optimizes them away).
   */
  peersOf(leg: Leg): Leg[] {
    const start = this.channelOf(leg);
    if (!start?.bridge) return [];
    const peers: Leg[] = [];
    const seenBridges = new Set<string>();
    const visit = (bridge: string) => {
      if (seenBridges.has(bridge)) return;
      seenBridges.add(bridge);
      for (const id of this.#bridges.get(bridge) ?? []) {
        const channel = this.#channels.get(id);
        if (!channel || channel === start) continue;
        if (channel.leg && !channel.leg.ended) peers.push(channel.leg);
        else if (channel.device === null && channel.localPeer) {
          const other = this.#channels.get(channel.localPeer)?.bridge;
          if (other) visit(other);
        }
      }
    };
    visit(start.bridge);
    return peers;
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
        case "BridgeEnter":
        case "BridgeLeave":
          this.#bridge(event, name === "BridgeEnter");
          return false;
        case "LocalBridge":
          this.#localBridge(event);
          return false;
        case "QueueCallerJoin":
          this.#queueJoin(event);
          return false;
        case "QueueCallerAbandon":
          this.#strayWaits.delete(event.get("Uniqueid") ?? "");
          this.#queueAbandon(event);
          return false;
        case "QueueCallerLeave":
          this.#strayWaits.delete(event.get("Uniqueid") ?? "");
          this.#queueLeave(event);
          return false;
        case "HangupRequest":
          this.#hangupRequest(event);
          return false;
        case "NewCallerid":
        case "NewConnectedLine":
          this.#acrossTrunk(event, name === "NewCallerid");
          return false;
        case "AgentCalled":
          this.#agentCalled(event);
          return true;
        case "AgentConnect":
          this.#agentConnect(event);
          return true;
        case "AgentRingNoAnswer":
          this.#agentRingNoAnswer(event);
          return true;
        case "OriginateResponse":
          this.#originateResponse(event);
          return true;
        case "ConfbridgeJoin":
          if (bridgeRoom(event.get("Conference")) !== null) return this.#roomJoined(event);
          return this.control.handle(event, (id) => this.#liveLeg(id));
        case "UserEvent":
          if (/^SvcDial/.test(event.get("UserEvent") ?? "")) {
            this.#announced(event);
            return false;
          }
          return this.control.handle(event, (id) => this.#liveLeg(id));
        default:
          return this.control.handle(event, (id) => this.#liveLeg(id));
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
   * After a reconnection, from `QueueStatus`'s `QueueEntry` items (`linkedIds`: uniqueId →
   * Linkedid, from `CoreShowChannels`): a call svc saw waiting that the queue no longer holds left
   * it while svc was away, uncounted (how, svc cannot tell); one svc never saw join waits as a
   * stray until it leaves.
   */
  resyncQueues(entries: AmiMessage[], linkedIds: Map<string, string>): void {
    const waiting = new Set(entries.map((entry) => entry.get("Uniqueid") ?? ""));
    const known = new Set<string>();
    for (const call of this.#calls.values()) {
      const wait = call.wait;
      if (call.ended || wait?.joinedMs == null) continue;
      if (waiting.has(wait.channel)) known.add(wait.channel);
      else call.wait = null;
    }
    this.#strayWaits.clear();
    const now = this.ctx.now();
    for (const entry of entries) {
      const uniqueId = entry.get("Uniqueid") ?? "";
      const queue = this.ctx.dir().queueNamed(entry.get("Queue") ?? "");
      if (!uniqueId || known.has(uniqueId) || !queue) continue;
      this.#strayWaits.set(uniqueId, {
        queueId: queue.id,
        linkedId: linkedIds.get(uniqueId) || uniqueId,
        callerNumber: entry.get("CallerIDNum") ?? "",
        callerName: entry.get("CallerIDName") ?? "",
        position: 0,
        sinceMs: now - 1000 * (Number(entry.get("Wait")) || 0),
      });
    }
  }

  /** What `call_control.ts` does to the calls through. */
  #ops(): TrackerOps {
    return {
      ctx: this.ctx,
      phoneEvent: (leg, type) => this.#phoneEvent(leg, type),
      release: (leg) => this.#release(leg),
      recordChanged: (leg) => this.#recordChanged(leg),
      endCall: (call) => this.#endCall(call),
      failCall: (call) => this.#failCall(call),
      channelOf: (leg) => this.channelOf(leg),
      peersOf: (leg) => this.peersOf(leg),
      liveLegs: () => this.liveLegs(),
    };
  }

  /** The live leg whose channel is `uniqueId`. */
  #liveLeg(uniqueId: string): Leg | null {
    const leg = this.#channels.get(uniqueId)?.leg;
    return leg && !leg.ended && !leg.call.ended ? leg : null;
  }

  // --- channels ---------------------------------------------------------------------------------

  #newChannel(event: AmiMessage): void {
    const uniqueId = event.get("Uniqueid");
    const linkedId = event.get("Linkedid");
    const name = event.get("Channel");
    if (!uniqueId || !linkedId || !name || this.ctx.ignored(linkedId)) return;
    // ConfBridge's own channels (its announcer, its recorder) are no party of any call
    if (/^CB(Ann|Rec)\//.test(name)) return;
    const channel: Channel = {
      uniqueId,
      linkedId,
      name,
      device: deviceOf(name),
      leg: null,
      context: event.get("Context") ?? "",
      priority: Number(event.get("Priority") ?? 1),
      app: "",
      bridge: null,
      localPeer: null,
    };
    this.#channels.set(uniqueId, channel);
    let call = this.#calls.get(linkedId);
    if (!call && uniqueId === linkedId) call = this.#notOurs(channel, event);
    if (!call || call.ended) return;
    call.channels.add(uniqueId);
    if (uniqueId === call.originChannel && call.origin) channel.leg = call.origin;
    else if (channel.device && !this.ctx.dir().phoneOfInterface(channel.device)) {
      // a trunk's channel: the outside party, a party of the call without events of its own
      channel.leg = this.#newLeg(call, uniqueId, null, "outside", "", {
        number: event.get("CallerIDNum") ?? "",
      });
      if (uniqueId === linkedId) call.origin ??= channel.leg;
    }
  }

  /**
   * A call across a trunk between svc's servers, whose party on the other server changed there (a
   * transfer there, Asterisk telling it over the trunk): the trunk's leg takes its number
   * (`NewCallerid`), and a phone talking over the trunk is told whom it talks with now
   * (`NewConnectedLine`: `EventEstablished` with the new `otherDN`). On one server svc tells
   * transfers itself: a trunk of another kind is left alone.
   */
  #acrossTrunk(event: AmiMessage, own: boolean): void {
    const leg = this.#liveLeg(event.get("Uniqueid") ?? "");
    if (!leg) return;
    if (own) {
      const number = event.get("CallerIDNum") ?? "";
      if (this.overTrunk(leg) && knownNumber(number)) leg.number = number;
      return;
    }
    const number = event.get("ConnectedLineNum") ?? "";
    if (!leg.phone || leg.state !== "up" || !leg.call.established) return;
    if (!knownNumber(number) || number === leg.otherDN) return;
    if (!this.peersOf(leg).some((peer) => this.overTrunk(peer))) return;
    // a queue or a room there connecting whom it gave the call to (told before or after svc's
    // ESTABLISHED_EVENT, as SIP and AMI go) is no new party: the phone shows what it dialled
    const call = leg.call;
    const answerer = this.ctx.dir().phoneNamed(number)?.username;
    const viaQueue = call.target === "queue" || call.target === "room";
    if (viaQueue && answerer !== undefined && answerer === call.answeredBy) return;
    leg.otherDN = number;
    this.#phoneEvent(leg, "EventEstablished");
  }

  /** A call svc did not place: from a phone (its user dials), or from elsewhere (a trunk). */
  #notOurs(channel: Channel, event: AmiMessage): Call {
    const phone = channel.device ? this.ctx.dir().phoneOfInterface(channel.device) : null;
    const number = phone?.extension ?? event.get("CallerIDNum") ?? "";
    const name = event.get("CallerIDName") ?? "";
    // a call from a user of another server of svc's: named as that server names it (its own
    // record is that server's, so no user id here)
    const across = !phone && channel.device?.startsWith(TRUNK_DEVICE)
      ? this.ctx.dir().phoneNamed(number)?.username ?? ""
      : "";
    return this.start({
      linkedId: channel.uniqueId,
      kind: phone ? "phone" : "incoming",
      context: event.get("Context") ?? "",
      dialled: "", // known at its first extension (see #newExten)
      shownNumber: number,
      // an outside caller's name as its trunk gave it (a phone's user is named by its number)
      shownName: phone || name === "<unknown>" || name === number ? "" : name,
      src: { userId: phone?.userId ?? null, username: phone?.username ?? across, number },
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
          call.origin.answeredMs = this.ctx.now();
          this.#phoneEvent(call.origin, "EventDialing");
        }
      }
      return;
    }
    if (!channel.device) return;
    if (channel.leg?.role === "outside") {
      if (state === UP && channel.leg.state === "ringing") {
        channel.leg.state = "up";
        channel.leg.answeredMs = this.ctx.now();
        // a trunk to another server of svc's: its caller id is the user who answered there (the
        // caller's, for a call that came over it)
        if (channel.device.startsWith(TRUNK_DEVICE) && channel.leg !== call.origin) {
          const number = event.get("CallerIDNum") ?? "";
          call.answeredBy ??= this.ctx.dir().phoneNamed(number)?.username ?? null;
          if (knownNumber(number)) channel.leg.number = number;
        }
      }
      return;
    }
    const leg = channel.leg ?? this.#phoneLeg(call, channel);
    if (!leg || leg.ended) return;
    // the caller's own phone rung for its call (an invitation placed on another server) is not
    // told ringing, as svc's dial from a phone
    if (state === RINGING && !leg.announced && !call.placedThere?.asCaller) {
      return this.#ringing(call, leg);
    }
    if (state !== UP || leg.state !== "ringing") return;
    // a queue's agent: several may answer, the queue says whom it connects (#agentConnect)
    if (leg.role === "agent" && leg.queued?.joinedMs != null) leg.pickedUpMs ??= this.ctx.now();
    else this.#answered(call, leg);
  }

  /** The leg of a phone's channel in `call`: an agent's when the call waits for one there. */
  #phoneLeg(call: Call, channel: Channel): Leg | null {
    const phone = this.ctx.dir().phoneOfInterface(channel.device!);
    if (!phone) return null;
    const offered = call.legs.find((leg) =>
      !leg.ended && leg.uniqueId === "" && leg.phone?.lineId === phone.lineId
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
        queued: wait,
      })
      : this.#newLeg(
        call,
        channel.uniqueId,
        phone,
        "callee",
        call.placedThere?.dialled ?? call.shownNumber,
      );
    channel.leg = leg;
    return leg;
  }

  #newLeg(
    call: Call,
    uniqueId: string,
    phone: Phone | null,
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
      number: phone?.extension ?? "",
      otherDN,
      ended: false,
      announced: false,
      createdMs: this.ctx.now(),
      answeredMs: null,
      pickedUpMs: null,
      agentId: null,
      queueId: null,
      queued: null,
      heldBy: null,
      holdPeer: null,
      music: false,
      muted: false,
      record: "inactive",
      recordShown: "inactive",
      transfer: null,
      ...extra,
    };
    call.legs.push(leg);
    // the party an attended transfer's consultation rings is its recipient (the last one rung)
    if (call.transfer && (role === "callee" || role === "agent")) call.transfer.recipient = leg;
    return leg;
  }

  /** A phone rings: an agent's shows `AgentRinging` first; its user gets `EventRinging`. */
  #ringing(call: Call, leg: Leg): void {
    if (leg.agentId !== null) this.ctx.agents.ringing(leg.agentId, leg);
    const phone = leg.phone!;
    if (phone.userId !== null) {
      const number = leg.role === "agent" ? leg.queued?.number ?? "" : phone.extension;
      const known = call.rung.get(phone.userId);
      call.rung.set(phone.userId, {
        username: phone.username,
        number,
        answeredMs: known?.answeredMs ?? null,
        ...(call.ringSrc && { src: call.ringSrc }),
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
    const userId = leg.phone?.userId ?? null;
    const rung = userId === null ? undefined : call.rung.get(userId);
    if (rung) rung.answeredMs = now;
    if (leg.role === "agent") {
      this.#leftQueue(call, "answered", leg.agentId!);
      this.ctx.agents.answered(leg.agentId!, leg);
      if (call.kind === "from_queue") {
        call.origin = leg;
        leg.otherDN = call.dialled;
        call.src = {
          userId: leg.phone!.userId,
          username: leg.phone!.username,
          number: leg.phone!.extension,
        };
        this.#phoneEvent(leg, "EventDialing");
        return;
      }
      const parties = call.kind === "to_queue" || !call.origin ? [leg] : [call.origin, leg];
      return this.#establish(call, leg, parties);
    }
    if (call.kind === "to_queue") return this.#phoneEvent(leg, "EventEstablished");
    // a phone whose call another server placed (dial from queue, invitation) dials from there
    if (call.placedThere !== null) return this.#phoneEvent(leg, "EventDialing");
    this.#establish(call, leg, call.origin ? [call.origin, leg] : [leg]);
  }

  /** The parties talk: each of `announce` gets `EventEstablished`. */
  #establish(call: Call, answering: Leg | null, announce: Leg[]): void {
    call.established = true;
    call.answeredMs ??= this.ctx.now();
    call.answeredBy ??= answering?.phone && answering.phone.userId !== null
      ? answering.phone.username
      : null;
    const transfer = call.transfer;
    if (transfer && answering && announce.includes(transfer.initiator)) {
      transfer.status = "answered";
      transfer.recipient = answering;
    }
    for (const leg of announce) this.#phoneEvent(leg, "EventEstablished");
    // a party on another server: the phone whose call this is (a dial from queue's agent, an
    // invitation's phone), or the caller over a trunk whose call the room or the queue took
    if (!this.ctx.establishedElsewhere || !call.origin || !announce.includes(call.origin)) return;
    const origin = call.origin;
    const phoneThere = origin.phone && this.ctx.elsewhere?.(origin.phone);
    const callerThere = this.overTrunk(origin) &&
      (answering === null || answering.role === "agent");
    if (phoneThere || callerThere) this.ctx.establishedElsewhere(origin);
  }

  /** Whether `leg` is the party beyond a trunk to another server of svc's. */
  overTrunk(leg: Leg): boolean {
    return leg.role === "outside" && !!this.channelOf(leg)?.device?.startsWith(TRUNK_DEVICE);
  }

  /**
   * A party joined a meeting room (rooms.ts): the room answered it, after its PIN, as the
   * simulator's does (`EventEstablished`).
   */
  #roomJoined(event: AmiMessage): boolean {
    const leg = this.#liveLeg(event.get("Uniqueid") ?? "");
    if (!leg || leg.call.established) return false;
    leg.state = "up";
    leg.answeredMs ??= this.ctx.now();
    this.#establish(leg.call, null, [leg]);
    return true;
  }

  /**
   * The dialplan's applications on the calling channel: `Busy`/`Congestion` fail the call
   * (callee on DND, rejected, busy); `Answer` toward an outside number means the far side took
   * the call (a trunk answering; the recorded test PBX answers outside numbers itself). The
   * first extension a phone dials is the number its user dialled.
   */
  #newExten(event: AmiMessage): void {
    const uniqueId = event.get("Uniqueid") ?? "";
    const channel = this.#channels.get(uniqueId);
    if (channel) {
      channel.context = event.get("Context") ?? channel.context;
      channel.priority = Number(event.get("Priority") ?? channel.priority);
      channel.app = event.get("Application") ?? "";
      this.control.dialplan(channel);
    }
    const call = this.#callOf(uniqueId);
    // the dialplan goes on after a Queue the call left unanswered: it timed out
    if (call?.wait?.leftMs != null && call.wait.channel === uniqueId) {
      this.#leftQueue(call, "timeout");
    }
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
    // the callee's voicemail answers the call (svc-user, not answered)
    if (app === "VoiceMail") return this.#establish(call, null, [call.origin]);
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
    if (call.wait?.joinedMs != null && call.wait.channel === uniqueId) {
      // a queue's member answered: AgentConnect says who is connected, and that is the answer
      if (status === "ANSWER") call.wait.memberAnswered = true;
      return;
    }
    call.failed = status === "BUSY" || status === "CONGESTION";
    if (status === "NOANSWER") {
      // the ring timeout: released now, not at its Hangup, which Asterisk may send after the
      // caller's dialplan went on (to a voicemail that answers)
      const leg = this.#channels.get(event.get("DestUniqueid") ?? "")?.leg;
      if (leg && !leg.ended && leg.state === "ringing") this.#release(leg);
    }
    const dest = deviceOf(event.get("DestChannel") ?? "");
    const toPhone = dest !== null && this.ctx.dir().phoneOfInterface(dest) !== null;
    // a room or a queue of another server answers before it takes the call: established when
    // that server's side is (ESTABLISHED_EVENT, establishedThere)
    const waitsThere = dest?.startsWith(TRUNK_DEVICE) &&
      (call.target === "room" || call.target === "queue");
    if (status === "ANSWER" && !toPhone && !waitsThere && call.origin && !call.established) {
      this.#establish(call, null, [call.origin]);
    }
  }

  #hangup(event: AmiMessage): void {
    const uniqueId = event.get("Uniqueid") ?? "";
    this.#strayWaits.delete(uniqueId);
    const channel = this.#channels.get(uniqueId);
    if (!channel) return;
    this.#channels.delete(uniqueId);
    this.#inBridge(channel, null);
    const call = this.#calls.get(channel.linkedId);
    if (!call) return;
    call.channels.delete(uniqueId);
    if (!call.ended) {
      const leg = channel.leg && !channel.leg.ended ? channel.leg : null;
      const talking = leg && leg.state !== "ringing";
      if (talking && this.control.partyHungUp(leg)) {
        // a transfer, a conference or an svc hold decided what it does to the others
      } else if (uniqueId === call.originChannel) this.#originHangup(call);
      else if (leg) this.#legHangup(call, leg);
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
    if (leg.state === "ringing") return this.#release(leg);
    this.#endCall(call);
  }

  #hold(event: AmiMessage, held: boolean): void {
    const channel = this.#channels.get(event.get("Uniqueid") ?? "");
    const leg = channel?.leg;
    if (!leg || leg.ended || !leg.call.established || leg.heldBy === "svc") return;
    if (held && leg.state === "up") {
      leg.state = "on_hold";
      leg.heldBy = "phone";
      this.#phoneEvent(leg, "EventOnHold");
    } else if (!held && leg.state === "on_hold") {
      leg.state = "up";
      leg.heldBy = null;
      this.#phoneEvent(leg, "EventEstablished");
    }
  }

  // --- bridges ----------------------------------------------------------------------------------

  #bridge(event: AmiMessage, entered: boolean): void {
    const channel = this.#channels.get(event.get("Uniqueid") ?? "");
    const bridge = event.get("BridgeUniqueid");
    if (!channel || !bridge) return;
    if (entered) this.#inBridge(channel, bridge);
    else if (channel.bridge === bridge) this.#inBridge(channel, null);
    if (entered) this.control.bridged(channel, (id) => this.#channels.get(id));
  }

  /** `channel` is in `bridge` now (null: in none). */
  #inBridge(channel: Channel, bridge: string | null): void {
    if (channel.bridge) {
      const members = this.#bridges.get(channel.bridge);
      members?.delete(channel.uniqueId);
      if (members?.size === 0) this.#bridges.delete(channel.bridge);
    }
    channel.bridge = bridge;
    if (bridge) {
      let members = this.#bridges.get(bridge);
      if (!members) this.#bridges.set(bridge, members = new Set());
      members.add(channel.uniqueId);
    }
  }

  /** The two halves of a Local channel, to find who hears whom across it. */
  #localBridge(event: AmiMessage): void {
    const one = this.#channels.get(event.get("LocalOneUniqueid") ?? "");
    const two = this.#channels.get(event.get("LocalTwoUniqueid") ?? "");
    if (!one || !two) return;
    one.localPeer = two.uniqueId;
    two.localPeer = one.uniqueId;
  }

  // --- queues -----------------------------------------------------------------------------------

  /** A call joins a queue (a dial from queue's was expected there): `joined`. */
  #queueJoin(event: AmiMessage): void {
    const call = this.#callOf(event.get("Uniqueid") ?? "");
    const queue = this.ctx.dir().queueNamed(event.get("Queue") ?? "");
    if (!call || call.ended || !queue || call.wait?.joinedMs != null) return;
    // a call over a trunk from a user of another server of svc's is that user's, as on one server
    const fromUser = call.kind === "incoming" && call.src.username !== "";
    const calling = call.kind === "user" || call.kind === "phone" || fromUser;
    const callerId = call.src.userId ??
      (fromUser ? this.ctx.dir().phoneNamed(call.shownNumber)?.userId ?? null : null);
    const caller = calling && callerId !== null ? this.ctx.dir().users.get(callerId) : undefined;
    call.wait ??= {
      queueId: queue.id,
      agentSees: calling ? call.shownNumber : call.dialled,
      number: queue.number ?? queue.name,
      callerName: caller ? [caller.firstname, caller.lastname].filter(Boolean).join(" ") : "",
      joinedMs: null,
      channel: "",
      callerHungUp: false,
      memberAnswered: false,
      leftMs: null,
    };
    call.wait.joinedMs = this.ctx.now();
    call.wait.channel = event.get("Uniqueid") ?? "";
    this.#queueEvent(call, "joined", call.wait, {
      position: Number(event.get("Position") ?? 1),
    });
  }

  /**
   * A call left its queue unanswered. Asterisk says so when the caller hangs up and on the queue's
   * timeout alike: `abandoned` if its phone hung up, else decided by what comes next.
   */
  #queueAbandon(event: AmiMessage): void {
    const call = this.#callOf(event.get("Uniqueid") ?? "");
    const wait = call?.wait;
    if (!call || call.ended || wait?.joinedMs == null) return;
    if (wait.callerHungUp) this.#leftQueue(call, "abandoned");
    else wait.leftMs ??= this.ctx.now();
  }

  /**
   * A call leaves its queue: unless answered or already left unanswered, on its timeout. A member
   * that answered (an agent's phone, or the caller's `Dial` to any member) is about to be connected
   * (`AgentConnect` follows): that is the answer.
   */
  #queueLeave(event: AmiMessage): void {
    const call = this.#callOf(event.get("Uniqueid") ?? "");
    if (!call || call.ended || call.wait?.leftMs != null) return;
    const connecting = call.wait?.memberAnswered ||
      call.legs.some((leg) => !leg.ended && leg.pickedUpMs !== null);
    if (!connecting) this.#leftQueue(call, "timeout");
  }

  /** The phone of a waiting call hung up: it abandons (now, or when the queue says it left). */
  #hangupRequest(event: AmiMessage): void {
    const uniqueId = event.get("Uniqueid") ?? "";
    const call = this.#callOf(uniqueId);
    const wait = call?.wait;
    if (!call || call.ended || !wait || wait.channel !== uniqueId) return;
    wait.callerHungUp = true;
    if (wait.leftMs != null) this.#leftQueue(call, "abandoned");
  }

  /**
   * `call` leaves the queue it waits in: answered (by `agentId`), abandoned, on its timeout. One
   * that left unanswered, its phone never having hung up, timed out.
   */
  #leftQueue(call: Call, event: "answered" | "abandoned" | "timeout", agentId?: number): void {
    const wait = call.wait;
    call.wait = null;
    if (wait?.joinedMs == null) return;
    if (wait.leftMs != null && !wait.callerHungUp) event = "timeout";
    const waitMs = (wait.leftMs ?? this.ctx.now()) - wait.joinedMs;
    this.#queueEvent(call, event, wait, agentId === undefined ? { waitMs } : { waitMs, agentId });
  }

  #queueEvent(
    call: Call,
    event: QueueCallEvent["event"],
    wait: QueueWait,
    fields: Pick<QueueCallEvent, "position" | "waitMs" | "agentId" | "talkMs">,
  ): void {
    this.ctx.emit({
      kind: "queue_call",
      event,
      queueId: wait.queueId,
      linkedId: call.linkedId,
      callerNumber: wait.agentSees,
      callerName: wait.callerName,
      ...fields,
    });
  }

  /** The calls waiting in the queues now, each queue's longest waiting first. */
  waitingCalls(): WaitingCall[] {
    const waiting: WaitingCall[] = [...this.#strayWaits.values()];
    for (const call of this.#calls.values()) {
      const wait = call.wait;
      if (call.ended || wait?.joinedMs == null || wait.leftMs != null) continue;
      waiting.push({
        queueId: wait.queueId,
        linkedId: call.linkedId,
        callerNumber: wait.agentSees,
        callerName: wait.callerName,
        position: 0,
        sinceMs: wait.joinedMs,
      });
    }
    waiting.sort((a, b) => a.sinceMs - b.sinceMs);
    const positions = new Map<number, number>();
    return waiting.map((call) => {
      const position = (positions.get(call.queueId) ?? 0) + 1;
      positions.set(call.queueId, position);
      return { ...call, position };
    });
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
      queued: call.wait,
    });
    this.ctx.agents.ringing(record.id, leg);
  }

  /**
   * The queue connects the caller to this agent (one of those whose phone answered): its answer.
   * The others the queue rang are hung up by Asterisk, their legs still ringing. A member that is
   * no agent of svc's (added by hand on the PBX) answered for a caller that is established alone.
   */
  #agentConnect(event: AmiMessage): void {
    const call = this.#callOf(event.get("Uniqueid") ?? "");
    if (!call || call.ended) return;
    const record = this.ctx.dir().agentNumbered(event.get("MemberName") ?? "");
    const leg = call.legs.find((leg) =>
      leg.agentId === record?.id && !leg.ended && leg.state === "ringing"
    );
    if (leg) return this.#answered(call, leg);
    this.#leftQueue(call, "answered");
    if (call.origin && !call.established) this.#establish(call, null, [call.origin]);
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

  /**
   * An Originate that failed before any channel existed (no contact, unknown endpoint): the call
   * of that ActionID, or (another process's dial) the oldest announced call of that Originate
   * still without channel.
   */
  #originateResponse(event: AmiMessage): void {
    if (event.get("Response") !== "Failure") return;
    const id = event.actionId;
    const calls = [...this.#calls.values()];
    const call = calls.find((call) => id && call.originateId === id) ??
      calls.find((call) =>
        call.originateId === null && call.originate !== null && call.channels.size === 0 &&
        call.originate.channel === event.get("Channel") &&
        call.originate.exten === event.get("Exten") &&
        call.originate.context === event.get("Context")
      );
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

  /**
   * Every party that got an event gets `EventReleased` (in leg order); history is emitted. Channels
   * svc parked (on hold, waiting, consulting) are hung up: nothing else would end them.
   */
  #endCall(call: Call): void {
    if (call.ended) return;
    this.#leftQueue(call, "abandoned");
    call.ended = true;
    this.#endedData.set(call.linkedId, call.userData);
    // the last ones only: a late part of a call comes seconds after, not hours
    if (this.#endedData.size > ENDED_DATA_KEPT) {
      this.#endedData.delete(this.#endedData.keys().next().value!);
    }
    for (const leg of call.legs) this.#release(leg);
    this.control.callEnded(call);
    for (const id of call.channels) {
      const channel = this.#channels.get(id);
      if (channel && SVC_CONTEXTS.has(channel.context)) {
        this.ctx.repair("Hangup", { Channel: channel.name });
      }
    }
    const records = call.noHistory ? [] : historyOf(call, this.ctx.now());
    if (records.length) this.ctx.emit({ kind: "call_ended", linkedId: call.linkedId, records });
  }

  /** `leg` ends: `EventReleased` when it had an event. */
  #release(leg: Leg): void {
    if (leg.ended) return;
    if (leg.announced) this.#phoneEvent(leg, "EventReleased");
    this.#endLeg(leg);
  }

  #endLeg(leg: Leg): void {
    leg.ended = true;
    if (leg.holdPeer?.holdPeer === leg) leg.holdPeer.holdPeer = null;
    leg.holdPeer = null;
    if (leg.agentId !== null) this.#endedAgentLegs.push(leg);
  }

  /**
   * Agents whose queue leg ended while handling the event, after its phone events: a call they
   * answered is `completed`.
   */
  #settleAgents(): void {
    const ended = this.#endedAgentLegs;
    this.#endedAgentLegs = [];
    for (const leg of ended) {
      if (leg.answeredMs !== null && leg.queued?.joinedMs != null) {
        const talkMs = this.ctx.now() - leg.answeredMs;
        this.#queueEvent(leg.call, "completed", leg.queued, { agentId: leg.agentId!, talkMs });
      }
      this.ctx.agents.legEnded(leg.agentId!, leg);
    }
  }

  #callOf(uniqueId: string): Call | undefined {
    const channel = this.#channels.get(uniqueId);
    return channel && this.#calls.get(channel.linkedId);
  }

  #phoneEvent(leg: Leg, eventType: PhoneEventType): void {
    const userId = leg.phone?.userId ?? null;
    if (userId === null) return;
    leg.announced = true;
    if (this.ctx.elsewhere?.(leg.phone!)) return;
    leg.recordShown = leg.record;
    const call = leg.call;
    this.ctx.emit({
      kind: "phone",
      userId,
      username: leg.phone!.username,
      eventType,
      DN: leg.phone!.extension,
      otherDN: leg.otherDN,
      otherDName: this.ctx.dir().nameOf(leg.otherDN, leg.phone!.context, {
        number: call.shownNumber,
        name: call.shownName,
      }),
      linkedId: call.linkedId,
      uniqueId: leg.uniqueId,
      userData: { PLATFORM_USERID: String(userId), ...call.userData },
      recordState: leg.record,
      ...(leg.queueId !== null && { queueId: leg.queueId }),
    });
  }

  /** See {@link TrackerOps.recordChanged}. */
  #recordChanged(leg: Leg): void {
    if (leg.ended || leg.call.ended) return;
    if (leg.announced && leg.record !== leg.recordShown) {
      this.#phoneEvent(leg, leg.state === "on_hold" ? "EventOnHold" : "EventEstablished");
    }
    if (leg.agentId !== null) this.ctx.agents.recordChanged(leg.agentId, leg);
  }
}

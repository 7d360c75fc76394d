/**
 * The port's call control on Asterisk (docs/asterisk.md, "Call control"): every command checks
 * the calls as the call tracker knows them (the same refusals as the simulator's), announces what
 * it does with a `UserEvent` when other svc processes must know it, then moves the channels with
 * AMI actions that work whatever the phone: `Redirect` into svc's contexts (`svc-hold`,
 * `svc-wait`, `svc-consult`, `svc-conference`) and `Bridge` back, `Hangup`, `MixMonitor`,
 * `MuteAudio`, `PlayDTMF`, `Confbridge*`. `answer` alone asks the phone (a `talk` NOTIFY).
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
import { pbxMessage } from "./agents.ts";
import type { AmiResponse } from "./ami_client.ts";
import {
  type Conference,
  CONFERENCE_CONTEXT,
  conferenceName,
  CONSULT_CONTEXT,
  HOLD_CONTEXT,
  type Leg,
  type Transfer,
  WAIT_CONTEXT,
} from "./call_model.ts";
import type { CallTracker } from "./calls.ts";
import { roomBridge } from "./rooms.ts";

type Fields = Record<string, string | string[] | undefined>;

export interface CommandsContext {
  tracker: CallTracker;
  dir(): Directory;
  now(): number;
  /** An AMI action; unreachable: `PlatformUnavailable`. */
  action(action: string, fields: Fields): Promise<AmiResponse>;
  /** Where MixMonitor writes (`SVC_ASTERISK_RECORDINGS_DIR`); "" for Asterisk's own. */
  recordingsDir: string;
  /** The meeting room the channel `uniqueId` is in, null for none. */
  roomOf(uniqueId: string): string | null;
}

/** How long a bridge with a channel still leaving its last one is tried again, and how often. */
const BRIDGE_RETRY_MS = 3_000;
const BRIDGE_RETRY_STEP_MS = 50;

const refuse = (reason: string, message: string) => new PlatformRefusal(reason, message);

export class CallCommands {
  constructor(private readonly ctx: CommandsContext) {}

  get #control() {
    return this.ctx.tracker.control;
  }

  /** Every party of the calls in progress. */
  liveCalls(): LiveCall[] {
    const dir = this.ctx.dir();
    const nameOf = (leg: Leg) => {
      const user = leg.phone?.userId == null ? undefined : dir.users.get(leg.phone.userId);
      return user ? [user.firstname, user.lastname].filter(Boolean).join(" ") : "";
    };
    const legs = this.ctx.tracker.liveLegs();
    // the parties a leg hears in the order of the calls (not of Asterisk's bridge events)
    const rank = new Map(legs.map((leg, i) => [leg, i]));
    return legs.map((leg): LiveCall => {
      const call = leg.call;
      const peer = this.#control.peerOf(leg);
      const direction = call.kind === "incoming"
        ? "inbound"
        : call.target === "external" || call.legs.some((other) => other.role === "outside")
        ? "outbound"
        : "internal";
      return {
        callId: leg.uniqueId,
        linkedId: call.linkedId,
        userId: leg.phone?.userId ?? null,
        // a dial from mobile's leg stands for the user's phone on a Local channel: no line
        lineId: this.ctx.tracker.channelOf(leg)?.device === null ? null : leg.phone?.lineId ?? null,
        state: leg.state === "ringing" ? "ringing" : "up",
        onHold: leg.heldBy !== null,
        muted: leg.muted,
        record: leg.record,
        userData: { ...call.userData },
        talkingTo: this.ctx.tracker.peersOf(leg)
          .sort((a, b) => (rank.get(a) ?? 0) - (rank.get(b) ?? 0))
          .map((other) => other.uniqueId),
        peerCallId: peer?.uniqueId ?? null,
        conferenceId: this.#control.conferenceOf(leg)?.id ?? null,
        name: nameOf(leg),
        number: leg.number,
        // as its phone events name the other party (`otherDName`), else the peer's user
        peerName: (leg.phone &&
          dir.nameOf(leg.otherDN, leg.phone.context, {
            number: call.shownNumber,
            name: call.shownName,
          })) || (peer ? nameOf(peer) : ""),
        peerNumber: leg.otherDN,
        isCaller: leg === call.origin,
        dialled: call.dialled,
        direction,
        createdMs: leg.createdMs,
        answeredMs: leg.answeredMs,
      };
    });
  }

  /** The live party `callId`; `no_call` when there is none. */
  #leg(callId: string): Leg {
    const leg = this.ctx.tracker.liveLegs().find((leg) => leg.uniqueId === callId);
    if (!leg) throw refuse("no_call", `no call ${callId}`);
    return leg;
  }

  /** The name of `leg`'s channel (what actions name); `no_call` when it is gone. */
  #channel(leg: Leg): string {
    const channel = this.ctx.tracker.channelOf(leg);
    if (!channel) throw refuse("no_call", `no call ${leg.uniqueId}`);
    return channel.name;
  }

  async #act(action: string, fields: Fields): Promise<AmiResponse> {
    const response = await this.ctx.action(action, fields);
    if (!response.ok) throw refuse("pbx_refused", pbxMessage(action, response));
    return response;
  }

  /** Tells every svc process on the PBX (its own included) what call control is doing. */
  #announce(name: string, fields: Record<string, string | string[]>): Promise<AmiResponse> {
    return this.#act("UserEvent", { UserEvent: name, ...fields });
  }

  async command(callId: string, command: CallCommand): Promise<void> {
    const leg = this.#leg(callId);
    switch (command.kind) {
      case "hold":
        return await this.#hold(leg);
      case "resume":
        return await this.#resume(leg);
      case "answer":
        return await this.#answer(leg);
      case "hangup":
        await this.#act("Hangup", { Channel: this.#channel(leg) });
        return;
      case "mute":
        return await this.#mute(leg, command.on);
      case "dtmf": {
        // a meeting room asking the calling party its PIN reads them (the Receive of PlayDTMF)
        const atPrompt = leg === leg.call.origin && leg.call.target === "room" &&
          !leg.call.established;
        if (leg.state !== "up" || (!atPrompt && !this.ctx.tracker.peersOf(leg).length)) {
          throw notTalking(leg);
        }
        for (const digit of command.digits) {
          await this.#act("PlayDTMF", {
            Channel: this.#channel(leg),
            Digit: digit,
            Duration: "120",
            Receive: "true",
          });
        }
        return;
      }
      case "record":
        return await this.#record(leg, command.action);
      case "attach":
        return await this.#attach(leg, usrVariables(command.variables));
    }
  }

  /**
   * `setData`: announced (every process adds the variables to the call's `userData`), then set on
   * the party's channel and its peers' as `__USR_<key>`, so that the channels they create next (a
   * transfer's, a forward's) inherit them.
   */
  async #attach(leg: Leg, variables: Record<string, string>): Promise<void> {
    const pairs = Object.entries(variables).map(([key, value]) => `${key}=${value}`);
    if (pairs.some((pair) => /[\r\n]/.test(pair))) {
      throw refuse("bad_variables", "variables must hold no line break");
    }
    const channels = [leg, ...this.ctx.tracker.peersOf(leg)].flatMap((party) => {
      const channel = this.ctx.tracker.channelOf(party);
      return channel ? [channel.name] : [];
    });
    if (!channels.length) throw refuse("no_call", `no call ${leg.uniqueId}`);
    await this.#announce("SvcData", { Uniqueid: leg.uniqueId, Var: pairs });
    for (const channel of channels) {
      for (const [key, value] of Object.entries(variables)) {
        await this.#act("Setvar", { Channel: channel, Variable: `__${key}`, Value: value });
      }
    }
  }

  // --- one party --------------------------------------------------------------------------------

  #notInTransferNorConference(leg: Leg): void {
    if (this.#control.transferOf(leg)) {
      throw refuse("in_transfer", `call ${leg.uniqueId} is transferring`);
    }
    if (this.#control.conferenceOf(leg) || this.ctx.roomOf(leg.uniqueId)) {
      throw refuse("in_conference", `call ${leg.uniqueId} is in a conference`);
    }
  }

  /** Both parties leave their bridge at once (one alone would end the other's Dial). */
  async #hold(leg: Leg): Promise<void> {
    this.#notInTransferNorConference(leg);
    if (leg.heldBy) return; // already on hold
    const peers = this.ctx.tracker.peersOf(leg);
    const peer = peers.length === 1 ? peers[0]! : null;
    if (leg.state !== "up" || !peer) throw notTalking(leg);
    const [holder, held] = [this.#channel(leg), this.#channel(peer)];
    await this.#announce("SvcHold", { Holder: leg.uniqueId, Held: peer.uniqueId });
    await this.#act("Redirect", {
      ...at("", held, HOLD_CONTEXT, "s"),
      ...at("Extra", holder, WAIT_CONTEXT, "s"),
    });
  }

  async #resume(leg: Leg): Promise<void> {
    if (leg.heldBy === "phone") {
      throw refuse("held_by_phone", `call ${leg.uniqueId} is held by its phone`);
    }
    const peer = leg.holdPeer;
    if (leg.heldBy !== "svc" || !peer) throw refuse("not_held", `call ${leg.uniqueId} is not held`);
    await this.#act("Bridge", { Channel1: this.#channel(leg), Channel2: this.#channel(peer) });
  }

  /**
   * The phone is asked to pick up (the remote-control NOTIFY `talk` that Snom, Yealink and Polycom
   * phones honour): only a PJSIP phone gets one, and Asterisk only says it was sent.
   */
  async #answer(leg: Leg): Promise<void> {
    if (leg.state !== "ringing") throw refuse("not_ringing", `call ${leg.uniqueId} is not ringing`);
    const iface = leg.phone?.interface ?? "";
    const endpoint = /^PJSIP\//i.test(iface) ? iface.slice(6) : null;
    const notSupported = (why: string) =>
      refuse("not_supported", `phone ${leg.number} cannot answer from svc: ${why}`);
    if (endpoint === null) throw notSupported(`${iface || "it"} takes no remote-control NOTIFY`);
    const response = await this.ctx.action("PJSIPNotify", {
      Endpoint: endpoint,
      Variable: "Event=talk",
    });
    if (!response.ok) throw notSupported(pbxMessage("PJSIPNotify", response));
  }

  /** In a conference, as a member; else the audio from the party is muted. */
  async #mute(leg: Leg, on: boolean): Promise<void> {
    if (leg.state === "ringing") throw notTalking(leg);
    const conference = this.#control.conferenceOf(leg);
    const room = this.ctx.roomOf(leg.uniqueId);
    if (conference || room !== null) {
      await this.#act(on ? "ConfbridgeMute" : "ConfbridgeUnmute", {
        Conference: conference ? conferenceName(conference.id) : roomBridge(room!),
        Channel: this.#channel(leg),
      });
    } else {
      await this.#act("MuteAudio", {
        Channel: this.#channel(leg),
        Direction: "in",
        State: on ? "on" : "off",
      });
      await this.#announce("SvcMute", { Uniqueid: leg.uniqueId, Muted: on ? "1" : "0" });
    }
    leg.muted = on;
  }

  /**
   * `MixMonitor` into `<linkedId>-<uniqueId>-<ms>.wav` of the recordings directory; a pause
   * records silence (`MixMonitorMute`). Start and stop do nothing when already so.
   */
  async #record(leg: Leg, action: "start" | "stop" | "pause" | "resume"): Promise<void> {
    const channel = () => this.#channel(leg);
    if (action === "start") {
      if (leg.state === "ringing") throw notTalking(leg);
      if (leg.record !== "inactive") return;
      const file = `${leg.call.linkedId}-${leg.uniqueId}-${this.ctx.now()}.wav`;
      const dir = this.ctx.recordingsDir.replace(/\/+$/, "");
      await this.#act("MixMonitor", { Channel: channel(), File: dir ? `${dir}/${file}` : file });
      leg.record = "active";
      return;
    }
    if (action === "stop") {
      if (leg.record === "inactive") return;
      await this.#act("StopMixMonitor", { Channel: channel() });
      leg.record = "inactive";
      return;
    }
    if (leg.record === "inactive") {
      throw refuse("recording_not_started", `call ${leg.uniqueId} is not recorded`);
    }
    const paused = action === "pause";
    if ((leg.record === "paused") === paused) return;
    await this.#act("MixMonitorMute", {
      Channel: channel(),
      Direction: "both",
      State: paused ? "1" : "0",
    });
    leg.record = paused ? "paused" : "active";
  }

  // --- transfers --------------------------------------------------------------------------------

  transfers(): TransferView[] {
    return this.#control.transfers().map(transferView);
  }

  #transfer(id: string): Transfer {
    const transfer = this.#control.transfers().find((t) => t.initiator.uniqueId === id);
    if (!transfer) throw refuse("no_transfer", `no transfer ${id}`);
    return transfer;
  }

  /**
   * Blind: the transferred party goes to the number while the initiator waits, then the initiator
   * is hung up. Attended: the transferred party hears music while the initiator's own channel
   * dials the number (`svc-consult`).
   */
  async startTransfer(request: TransferRequest): Promise<TransferView> {
    const initiator = this.#leg(request.initiatorCallId);
    const transferred = this.#leg(request.transferredCallId);
    if (initiator.phone?.userId == null) {
      throw refuse("no_user", `call ${initiator.uniqueId} is no user's`);
    }
    if (initiator.transfer) {
      throw refuse("transfer_exists", `call ${initiator.uniqueId} already transfers`);
    }
    if (this.#control.transferOf(initiator) || this.#control.transferOf(transferred)) {
      throw refuse("in_transfer", "a party of that call is already in a transfer");
    }
    if (this.#control.conferenceOf(initiator) || this.ctx.roomOf(initiator.uniqueId)) {
      throw refuse("in_conference", `call ${initiator.uniqueId} is in a conference`);
    }
    if (initiator.state === "ringing") throw notTalking(initiator);
    if (this.#control.peerOf(initiator) !== transferred) {
      throw refuse(
        "not_peer",
        `call ${transferred.uniqueId} is not the peer of ${initiator.uniqueId}`,
      );
    }
    const [from, to] = [this.#channel(initiator), this.#channel(transferred)];
    const held = initiator.heldBy === "svc";
    const announced = {
      Initiator: initiator.uniqueId,
      Transferred: transferred.uniqueId,
      Exten: request.exten,
      Context: request.context,
    };
    const view = startedTransfer(request, initiator.phone.userId);
    if (request.flow === "blind") {
      await this.#announce("SvcBlindTransfer", announced);
      await this.#act("Redirect", {
        ...at("", to, request.context, request.exten),
        ...(held ? {} : at("Extra", from, WAIT_CONTEXT, "s")),
      });
      await this.ctx.action("Hangup", { Channel: from }); // gone meanwhile: nothing to end
      return view;
    }
    const seconds = request.timeoutMs === null ? "" : String(Math.ceil(request.timeoutMs / 1000));
    for (
      const [name, value] of [["SVC_CONSULT_CONTEXT", request.context], [
        "SVC_CONSULT_TIMEOUT",
        seconds,
      ]]
    ) {
      await this.#act("Setvar", { Channel: from, Variable: name, Value: value });
    }
    await this.#announce("SvcTransfer", announced);
    const consult = at(held ? "" : "Extra", from, CONSULT_CONTEXT, request.exten);
    await this.#act("Redirect", held ? consult : { ...at("", to, HOLD_CONTEXT, "s"), ...consult });
    return view;
  }

  /**
   * Answered: the transferred party and the recipient are bridged, the initiator hung up. Still
   * ringing: the initiator is hung up (its consultation with it) and the transferred party dials
   * the number itself.
   */
  async completeTransfer(id: string): Promise<void> {
    const transfer = this.#transfer(id);
    const { initiator, transferred, recipient } = transfer;
    const from = this.#channel(initiator);
    const to = this.#channel(transferred);
    const answered = transfer.status === "answered" && recipient && !recipient.ended;
    await this.#announce("SvcTransferEnd", {
      Initiator: id,
      Outcome: answered ? "complete" : "redial",
    });
    if (answered) {
      await this.#act("Bridge", { Channel1: to, Channel2: this.#channel(recipient) });
      await this.ctx.action("Hangup", { Channel: from });
      return;
    }
    await this.ctx.action("Hangup", { Channel: from });
    await this.#act("Redirect", at("", to, transfer.context, transfer.exten));
  }

  /** The initiator leaves its consultation (the recipient is hung up) and is bridged back. */
  async cancelTransfer(id: string): Promise<void> {
    const transfer = this.#transfer(id);
    const from = this.#channel(transfer.initiator);
    const to = this.#channel(transfer.transferred);
    await this.#announce("SvcTransferEnd", { Initiator: id, Outcome: "cancel" });
    await this.#act("Redirect", at("", from, WAIT_CONTEXT, "s"));
    await this.#bridgeOnceLeft(from, to);
  }

  /**
   * Bridges `from` (just redirected out of a bridge) with `to`. Asterisk runs a Redirect
   * asynchronously and refuses to bridge a channel still leaving its bridge ("Unable to add
   * Channel1"), so that refusal is tried again for up to {@link BRIDGE_RETRY_MS}.
   */
  async #bridgeOnceLeft(from: string, to: string): Promise<void> {
    const fields = { Channel1: from, Channel2: to };
    for (let waited = 0;; waited += BRIDGE_RETRY_STEP_MS) {
      const response = await this.ctx.action("Bridge", fields);
      if (response.ok) return;
      const leaving = /Unable to add Channel1/i.test(response.message.get("Message") ?? "");
      if (!leaving || waited >= BRIDGE_RETRY_MS) {
        throw refuse("pbx_refused", pbxMessage("Bridge", response));
      }
      await new Promise((resolve) => setTimeout(resolve, BRIDGE_RETRY_STEP_MS));
    }
  }

  // --- conferences ------------------------------------------------------------------------------

  conferences(): ConferenceView[] {
    return [...this.#control.conferences.values()].map((conference) =>
      conferenceView(conference, this.ctx.now())
    );
  }

  #conference(id: string): Conference {
    const conference = this.#control.conferences.get(id);
    if (!conference) throw refuse("no_conference", `no conference ${id}`);
    return conference;
  }

  /** The host user's leg `party` is the peer of; `not_peer` otherwise. */
  #partnerOf(party: Leg, hostUserId: number): Leg {
    if (this.#control.conferenceOf(party) || this.ctx.roomOf(party.uniqueId)) {
      throw refuse("in_conference", `call ${party.uniqueId} is in a conference`);
    }
    const partner = this.#control.peerOf(party);
    if (!partner || partner.phone?.userId !== hostUserId) {
      throw refuse("not_peer", `call ${party.uniqueId} is not talking with the host`);
    }
    return partner;
  }

  async startConference(hostCallId: string, participantIds: string[]): Promise<ConferenceView> {
    const host = this.#leg(hostCallId);
    const hostUserId = host.phone?.userId;
    if (hostUserId == null) throw refuse("no_user", `call ${hostCallId} is no user's`);
    if (this.#control.conferenceOf(host) || this.ctx.roomOf(host.uniqueId)) {
      throw refuse("in_conference", `call ${hostCallId} is in a conference`);
    }
    const hostPeer = this.#control.peerOf(host);
    if (host.state === "ringing" || !hostPeer) throw notTalking(host);
    // the host's peer comes along (as wazo-calld does), first when the participants leave it out
    const ids = participantIds.includes(hostPeer.uniqueId)
      ? participantIds
      : [hostPeer.uniqueId, ...participantIds];
    const parties = ids.map((id) => {
      const party = this.#leg(id);
      return { party, partner: this.#partnerOf(party, hostUserId) };
    });
    await this.#announce("SvcConference", {
      Host: host.uniqueId,
      Members: [host, ...parties.map(({ party }) => party)].map((leg) => leg.uniqueId).join(","),
    });
    await this.#merge(host, parties, false);
    const now = this.ctx.now();
    return {
      id: host.uniqueId,
      hostCallId: host.uniqueId,
      hostUserId,
      members: [host, ...parties.map(({ party }) => party)].map((leg) => ({
        callId: leg.uniqueId,
        muted: leg.muted,
        joinedMs: now,
      })),
    };
  }

  async addToConference(id: string, callId: string): Promise<void> {
    const conference = this.#conference(id);
    const party = this.#leg(callId);
    const partner = this.#partnerOf(party, conference.host.phone!.userId!);
    await this.#announce("SvcConference", {
      Host: conference.host.uniqueId,
      Members: [...conference.order, party.uniqueId].join(","),
    });
    await this.#merge(conference.host, [{ party, partner }], true);
  }

  /**
   * The parties (and the host, unless `hostIn`) go into the host's conference, marked so that the
   * host leaving ends it. A party bridged with its partner (the host user's leg it talked with)
   * moves with it in one `Redirect` (a `Dial` would end otherwise): the partner into the
   * conference when it is the host, else to wait and be hung up.
   */
  async #merge(host: Leg, parties: { party: Leg; partner: Leg }[], hostIn: boolean) {
    const room = conferenceName(host.uniqueId);
    const mark = async (leg: Leg, marked: string) => {
      const channel = this.#channel(leg);
      await this.#act("Setvar", { Channel: channel, Variable: "SVC_CONFERENCE", Value: room });
      await this.#act("Setvar", { Channel: channel, Variable: "SVC_CONF_MARKED", Value: marked });
    };
    if (!hostIn) await mark(host, "1");
    for (const { party } of parties) await mark(party, "0");
    let hostMoved = hostIn;
    for (const { party, partner } of parties) {
      const into = at("", this.#channel(party), CONFERENCE_CONTEXT, "s");
      const bridged = this.ctx.tracker.peersOf(party).includes(partner);
      if (bridged && partner === host && !hostMoved) {
        await this.#act("Redirect", {
          ...into,
          ...at("Extra", this.#channel(host), CONFERENCE_CONTEXT, "s"),
        });
        hostMoved = true;
      } else if (bridged && partner !== host) {
        await this.#act("Redirect", {
          ...into,
          ...at("Extra", this.#channel(partner), WAIT_CONTEXT, "s"),
        });
      } else await this.#act("Redirect", into);
      if (partner !== host) await this.ctx.action("Hangup", { Channel: this.#channel(partner) });
    }
    if (!hostMoved) {
      await this.#act("Redirect", at("", this.#channel(host), CONFERENCE_CONTEXT, "s"));
    }
  }

  async removeFromConference(id: string, callId: string): Promise<void> {
    const conference = this.#conference(id);
    const member = this.#leg(callId);
    if (!conference.joined.has(member)) {
      throw refuse("no_call", `call ${callId} is not in conference ${id}`);
    }
    await this.#act("ConfbridgeKick", {
      Conference: conferenceName(id),
      Channel: this.#channel(member),
    });
  }

  /** The host is kicked: every member leaves with it. */
  async endConference(id: string): Promise<void> {
    const conference = this.#conference(id);
    await this.#act("ConfbridgeKick", {
      Conference: conferenceName(id),
      Channel: this.#channel(conference.host),
    });
  }
}

const notTalking = (leg: Leg) => refuse("not_talking", `call ${leg.uniqueId} talks with nobody`);

/** The fields of a `Redirect` (`prefix` "Extra" for its second channel) to `exten`@`context`. */
function at(prefix: "" | "Extra", channel: string, context: string, exten: string): Fields {
  return {
    [`${prefix}Channel`]: channel,
    [`${prefix}Context`]: context,
    [`${prefix}Exten`]: exten,
    [`${prefix}Priority`]: "1",
  };
}

function transferView(transfer: Transfer): TransferView {
  return {
    id: transfer.initiator.uniqueId,
    flow: "attended",
    initiatorCallId: transfer.initiator.uniqueId,
    initiatorUserId: transfer.initiator.phone!.userId!,
    transferredCallId: transfer.transferred.uniqueId,
    recipientCallId: transfer.recipient?.uniqueId ?? null,
    exten: transfer.exten,
    context: transfer.context,
    status: transfer.status,
  };
}

function conferenceView(conference: Conference, now: number): ConferenceView {
  const joined = new Map([...conference.joined].map(([leg, ms]) => [leg.uniqueId, ms]));
  return {
    id: conference.id,
    hostCallId: conference.host.uniqueId,
    hostUserId: conference.host.phone!.userId!,
    members: conference.order.map((callId) => {
      const leg = [...conference.joined.keys()].find((member) => member.uniqueId === callId);
      return { callId, muted: leg?.muted ?? false, joinedMs: joined.get(callId) ?? now };
    }),
  };
}

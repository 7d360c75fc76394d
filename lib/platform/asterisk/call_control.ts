/**
 * What svc's call control did to the calls on Asterisk (docs/asterisk.md, "Call control"), kept
 * from AMI events so that every svc process on the PBX agrees: svc announces its holds and
 * transfers with `UserEvent`s before acting (`SvcHold`, `SvcBlindTransfer`, `SvcTransfer`,
 * `SvcTransferEnd`, `SvcConference`, `SvcMute`), and the rest comes from Asterisk's own events
 * (bridges, the consultation's dialplan, `Confbridge*`, `MixMonitor*`). The phone events follow
 * the simulator's rules (`lib/platform/sim/call_control.ts`) step for step, so both adapters give
 * the same ones; what the PBX then needs done (a party left alone on hold hung up, a transferred
 * party sent on) the lease holder asks (`TrackerContext.repair`).
 */
import type { AmiMessage } from "./ami_message.ts";
import {
  type Call,
  type Channel,
  type Conference,
  CONSULT_CONTEXT,
  type Leg,
  type TrackerOps,
  type Transfer,
} from "./call_model.ts";
import { TRUNK_DEVICE } from "./config_files.ts";

/** The name of a ConfBridge conference → its id (svc's ones only). */
const conferenceId = (name: string) => name.startsWith("svc:") ? name.slice(4) : null;

export class ControlState {
  /** Conferences by id. */
  readonly conferences = new Map<string, Conference>();
  /**
   * Initiators whose recipient hung up, with the party to bridge them back with once their
   * consultation's `Dial` has ended.
   */
  readonly #rebridge = new Map<Leg, Leg>();

  constructor(private readonly ops: TrackerOps) {}

  /** The attended transfers in progress. */
  transfers(): Transfer[] {
    return this.ops.liveLegs().flatMap((leg) => leg.transfer ? [leg.transfer] : []);
  }

  /** The transfer `leg` is a party of (initiator, transferred or recipient). */
  transferOf(leg: Leg): Transfer | null {
    if (leg.transfer) return leg.transfer;
    return this.transfers().find((t) => t.transferred === leg || t.recipient === leg) ?? null;
  }

  /**
   * The conference `leg` is a member of: from svc's announcement on (`SvcConference`), before its
   * `ConfbridgeJoin`, so that its partner hung up meanwhile does not end its call.
   */
  conferenceOf(leg: Leg): Conference | null {
    for (const conference of this.conferences.values()) {
      if (conference.joined.has(leg)) return conference;
    }
    return null;
  }

  /** The one other party of `leg`: its svc hold's or transfer's, else its only peer. */
  peerOf(leg: Leg): Leg | null {
    if (leg.holdPeer) return leg.holdPeer;
    if (this.conferenceOf(leg) || this.ops.ctx.roomOf(leg.uniqueId)) return null;
    const peers = this.ops.peersOf(leg);
    return peers.length === 1 ? peers[0]! : null;
  }

  /**
   * The events of call control: svc's `UserEvent`s and Asterisk's conference and recording
   * events. `legOf` finds a live leg by its channel's uniqueId. Answers whether a phone's status
   * may have changed.
   */
  handle(event: AmiMessage, legOf: (uniqueId: string) => Leg | null): boolean {
    const leg = (field = "Uniqueid") => legOf(event.get(field) ?? "");
    switch (event.event) {
      case "UserEvent":
        return this.#userEvent(event, legOf);
      case "ConfbridgeJoin": {
        // the members svc announced joined at its announcement (SvcConference); another now
        const id = conferenceId(event.get("Conference") ?? "");
        const conference = id === null ? undefined : this.conferences.get(id);
        const member = leg();
        if (conference && member && !conference.joined.has(member)) this.#join(conference, member);
        return false;
      }
      case "ConfbridgeLeave": {
        // the host leaving ends the conference for every member (`end_marked`): each is released
        // now, in joining order, not as their hang-ups come (Asterisk's threads race them)
        const member = leg();
        const conference = member ? this.conferenceOf(member) : null;
        if (!conference || conference.host !== member) return false;
        this.endConference(conference);
        return true;
      }
      case "ConfbridgeMute":
      case "ConfbridgeUnmute": {
        const member = leg();
        if (member) member.muted = event.event === "ConfbridgeMute";
        return false;
      }
      case "MixMonitorStart":
      case "MixMonitorStop": {
        const recorded = leg();
        if (!recorded) return false;
        recorded.record = event.event === "MixMonitorStart" ? "active" : "inactive";
        this.ops.recordChanged(recorded);
        return false;
      }
      case "MixMonitorMute": {
        const recorded = leg();
        if (!recorded || recorded.record === "inactive") return false;
        recorded.record = event.get("State") === "1" ? "paused" : "active";
        this.ops.recordChanged(recorded);
        return false;
      }
      default:
        return false;
    }
  }

  #userEvent(event: AmiMessage, legOf: (uniqueId: string) => Leg | null): boolean {
    const leg = (field: string) => legOf(event.get(field) ?? "");
    switch (event.get("UserEvent")) {
      case "SvcHold": {
        const holder = leg("Holder");
        const held = leg("Held");
        if (holder && held) this.#hold(holder, held);
        return true;
      }
      case "SvcBlindTransfer": {
        const initiator = leg("Initiator");
        const transferred = leg("Transferred");
        if (!initiator || !transferred) return false;
        this.ops.release(initiator);
        this.#dialFrom(transferred, event.get("Exten") ?? "", event.get("Context") ?? "", null);
        return true;
      }
      case "SvcTransfer": {
        const initiator = leg("Initiator");
        const transferred = leg("Transferred");
        if (!initiator || !transferred || initiator.transfer) return false;
        this.#consult(initiator, transferred, event.get("Exten") ?? "", event.get("Context") ?? "");
        return true;
      }
      case "SvcTransferEnd": {
        const transfer = leg("Initiator")?.transfer;
        if (!transfer) return false;
        const outcome = event.get("Outcome");
        if (outcome === "complete") this.#complete(transfer);
        else if (outcome === "cancel") this.#undo(transfer, "no");
        else this.#redial(transfer, false);
        return true;
      }
      case "SvcConference": {
        const host = leg("Host");
        if (!host) return false;
        const members = (event.get("Members") ?? "").split(",").filter(Boolean);
        this.#conference(host, members, legOf);
        return true;
      }
      case "SvcMute": {
        const muted = leg("Uniqueid");
        if (muted) muted.muted = event.get("Muted") === "1";
        return false;
      }
      case "SvcData": {
        // `setData`: USR_ variables attached to the party's call, for its next phone events
        const party = leg("Uniqueid");
        if (!party) return false;
        const added = Object.fromEntries(
          event.all("Var").map((pair) => {
            const at = pair.indexOf("=");
            return [pair.slice(0, at), pair.slice(at + 1)];
          }),
        );
        party.call.userData = { ...party.call.userData, ...added };
        return false;
      }
      default:
        return false;
    }
  }

  /** The user of another server of svc's that `leg`, a trunk between them, is; "" for none. */
  #acrossUser(leg: Leg): string {
    if (!this.ops.channelOf(leg)?.device?.startsWith(TRUNK_DEVICE)) return "";
    return this.ops.ctx.dir().phoneNamed(leg.number)?.username ?? "";
  }

  // --- holds ------------------------------------------------------------------------------------

  /** svc holds `holder`'s call: `held` hears music, the holder's user gets `EventOnHold`. */
  #hold(holder: Leg, held: Leg): void {
    Object.assign(holder, { state: "on_hold", heldBy: "svc", holdPeer: held });
    Object.assign(held, { holdPeer: holder, music: true });
    this.ops.phoneEvent(holder, "EventOnHold");
  }

  /**
   * A channel entered a bridge: a holder and the party it holds in one bridge again is the resume
   * (`EventEstablished`).
   */
  bridged(channel: Channel, channelOf: (uniqueId: string) => Channel | undefined): void {
    const leg = channel.leg;
    if (!leg || leg.ended || !channel.bridge) return;
    for (const holder of [leg, leg.holdPeer]) {
      const held = holder?.holdPeer;
      if (!holder || holder.heldBy !== "svc" || !held) continue;
      if (channelOf(holder.uniqueId)?.bridge !== channelOf(held.uniqueId)?.bridge) continue;
      this.#talkAgain(holder, held);
      this.ops.phoneEvent(holder, "EventEstablished");
    }
  }

  /** `leg` and `peer` talk again: no music, no hold. */
  #talkAgain(leg: Leg, peer: Leg): void {
    for (const party of [leg, peer]) {
      party.music = false;
      party.holdPeer = null;
      if (party.heldBy === "svc") party.heldBy = null;
      if (party.state === "on_hold" && !party.heldBy) party.state = "up";
    }
  }

  // --- transfers --------------------------------------------------------------------------------

  /**
   * `from`, a party of its call, dials `exten` in `context` itself (a transfer): the call follows
   * its dial from now on, and what it rings sees it calling (or, with `transfer`, the dial is the
   * attended transfer's consultation).
   */
  #dialFrom(from: Leg, exten: string, context: string, transfer: Transfer | null): void {
    const call = from.call;
    const dir = this.ops.ctx.dir();
    Object.assign(call, {
      kind: "user",
      origin: from,
      originChannel: from.uniqueId,
      originUp: true,
      shownNumber: from.number,
      shownName: "", // the phone's user by its number, else nobody known
      ringSrc: { username: from.phone?.username ?? this.#acrossUser(from), number: from.number },
      target: dir.resolve(exten, context).kind,
      failed: false,
      transfer,
    });
    from.music = false;
    if (!transfer) {
      if (from.holdPeer?.holdPeer === from) from.holdPeer.holdPeer = null;
      from.holdPeer = null;
    }
    from.otherDN = exten;
  }

  /** The attended transfer starts: the transferred party hears music, the initiator dials. */
  #consult(initiator: Leg, transferred: Leg, exten: string, context: string): void {
    const transfer: Transfer = {
      initiator,
      transferred,
      recipient: null,
      exten,
      context,
      status: "ringback",
    };
    Object.assign(initiator, { state: "up", heldBy: null, holdPeer: transferred, transfer });
    Object.assign(transferred, { holdPeer: initiator, music: true });
    this.#dialFrom(initiator, exten, context, transfer);
    this.ops.phoneEvent(initiator, "EventDialing");
  }

  /** The transfer is no longer in progress (its call's dials are its own again). */
  #forget(transfer: Transfer): void {
    transfer.initiator.transfer = null;
    const call = transfer.initiator.call;
    if (call.transfer === transfer) {
      call.transfer = null;
      call.ringSrc = null;
    }
  }

  /**
   * The consultation was answered and svc completes: the initiator's leg ends, the transferred
   * party and the recipient talk (`EventEstablished` naming each other).
   */
  #complete(transfer: Transfer): void {
    const { initiator, transferred, recipient } = transfer;
    if (transfer.status !== "answered" || !recipient || recipient.ended) {
      return this.#redial(transfer, false);
    }
    this.#forget(transfer);
    this.ops.release(initiator);
    this.#talkAgain(transferred, recipient);
    transferred.otherDN = recipient.number;
    recipient.otherDN = transferred.number;
    Object.assign(transferred.call, { origin: transferred, originChannel: transferred.uniqueId });
    const userId = recipient.phone?.userId ?? null;
    const rung = userId === null ? undefined : recipient.call.rung.get(userId);
    if (rung) {
      rung.src = {
        username: transferred.phone?.username ?? this.#acrossUser(transferred),
        number: transferred.number,
      };
    }
    this.ops.phoneEvent(transferred, "EventEstablished");
    this.ops.phoneEvent(recipient, "EventEstablished");
  }

  /**
   * The initiator leaves before the end of the consultation (it hung up, or svc completed while the
   * recipient still rang): its leg and the consultation end, and the transferred party calls the
   * number itself; `repair` sends it there when the PBX would not.
   */
  #redial(transfer: Transfer, repair: boolean): void {
    const { initiator, transferred } = transfer;
    this.#forget(transfer);
    this.ops.release(initiator);
    if (transfer.recipient) this.ops.release(transfer.recipient);
    transferred.holdPeer = null;
    this.#dialFrom(transferred, transfer.exten, transfer.context, null);
    const channel = this.ops.channelOf(transferred);
    if (repair && channel) {
      this.ops.ctx.repair("Redirect", {
        Channel: channel.name,
        Context: transfer.context,
        Exten: transfer.exten,
        Priority: "1",
      });
    }
  }

  /**
   * The recipient's leg ends (cancelled, not answered, busy, hung up), and the initiator talks with
   * the transferred party again (`EventEstablished`). `repair`: bridge them back on the PBX now
   * (`"now"`, the initiator waits), once the initiator's consultation `Dial` has ended
   * (`"later"`), or not (svc does it itself).
   */
  #undo(transfer: Transfer, repair: "now" | "later" | "no"): void {
    const { initiator, transferred } = transfer;
    this.#forget(transfer);
    if (transfer.recipient) this.ops.release(transfer.recipient);
    if (initiator.ended || transferred.ended) return;
    this.#talkAgain(initiator, transferred);
    initiator.otherDN = transferred.number;
    initiator.call.failed = false;
    this.ops.phoneEvent(initiator, "EventEstablished");
    if (repair === "now") this.#bridgeBack(initiator, transferred);
    else if (repair === "later") this.#rebridge.set(initiator, transferred);
  }

  #bridgeBack(initiator: Leg, transferred: Leg): void {
    const [one, two] = [this.ops.channelOf(initiator), this.ops.channelOf(transferred)];
    if (one && two) this.ops.ctx.repair("Bridge", { Channel1: one.name, Channel2: two.name });
  }

  /**
   * A channel went on in the dialplan: the initiator back in its consultation context past the
   * `Dial` (waiting, or hung up) is the consultation over (not answered, busy, the recipient
   * gone): a transfer still in progress is undone, one undone already has its parties bridged
   * back.
   */
  dialplan(channel: Channel): void {
    const leg = channel.leg;
    const past = channel.app === "Wait" || channel.app === "Hangup";
    if (!leg || channel.context !== CONSULT_CONTEXT || !past) return;
    if (leg.transfer) return this.#undo(leg.transfer, "now");
    const transferred = this.#rebridge.get(leg);
    if (!transferred) return;
    this.#rebridge.delete(leg);
    if (!leg.ended && !transferred.ended) this.#bridgeBack(leg, transferred);
  }

  // --- conferences ------------------------------------------------------------------------------

  /**
   * svc merges `host` and `members` (uniqueIds, the host first) into a conference, or adds to the
   * one `host` hosts: each is a member from now on, as on the simulator, whenever its
   * `ConfbridgeJoin` comes.
   */
  #conference(host: Leg, members: string[], legOf: (uniqueId: string) => Leg | null): void {
    if (host.transfer) this.#forget(host.transfer);
    const conference = this.conferences.get(host.uniqueId) ??
      { id: host.uniqueId, host, joined: new Map(), order: [] };
    conference.order = members;
    this.conferences.set(host.uniqueId, conference);
    for (const id of members) {
      const member = legOf(id);
      if (member && !member.ended && !conference.joined.has(member)) this.#join(conference, member);
    }
  }

  /** A member joined: it hears the others (a leg svc held talks again, `EventEstablished`). */
  #join(conference: Conference, leg: Leg): void {
    for (const other of [leg, leg.holdPeer]) {
      if (other?.holdPeer === leg) other.holdPeer = null;
    }
    leg.holdPeer = null;
    leg.music = false;
    const wasHeld = leg.heldBy === "svc";
    if (wasHeld) leg.heldBy = null;
    if (leg.state === "on_hold" && !leg.heldBy) leg.state = "up";
    if (!conference.order.includes(leg.uniqueId)) conference.order.push(leg.uniqueId);
    conference.joined.set(leg, this.ops.ctx.now());
    const rank = (member: Leg) => conference.order.indexOf(member.uniqueId);
    conference.joined = new Map([...conference.joined].sort(([a], [b]) => rank(a) - rank(b)));
    if (wasHeld) this.ops.phoneEvent(leg, "EventEstablished");
  }

  /** Every member is released, in joining order; their calls end once nothing is left of them. */
  endConference(conference: Conference): void {
    this.conferences.delete(conference.id);
    const members = [...conference.joined.keys()];
    conference.joined.clear();
    for (const leg of members) this.ops.release(leg);
    for (const call of new Set(members.map((leg) => leg.call))) this.#endIfIdle(call);
  }

  // --- hang-ups ---------------------------------------------------------------------------------

  /** A call none of whose parties is left ends (its history). */
  #endIfIdle(call: Call): void {
    if (!call.ended && call.legs.every((leg) => leg.ended)) this.ops.endCall(call);
  }

  /**
   * A party that answered hung up; answers whether call control decided what follows (else the
   * call ends as any). A conference member leaves it (the host ends it); a transfer's initiator
   * hands the transferred party over (it calls the recipient anew); its transferred party abandons
   * it; its answered recipient cancels it. When others of the call are in a conference, only this
   * party and its peer end.
   */
  partyHungUp(leg: Leg): boolean {
    const conference = this.conferenceOf(leg);
    if (conference) {
      if (leg === conference.host) this.endConference(conference);
      else {
        conference.joined.delete(leg);
        this.ops.release(leg);
        this.#endIfIdle(leg.call);
      }
      return true;
    }
    const transfer = this.transferOf(leg);
    if (transfer?.initiator === leg) {
      this.#redial(transfer, true);
      return true;
    }
    if (transfer?.recipient === leg && transfer.status === "answered") {
      this.#undo(transfer, "later");
      return true;
    }
    if (transfer?.transferred === leg) {
      this.#forget(transfer);
      this.ops.release(leg);
      this.#endIfIdle(leg.call);
      return true;
    }
    const call = leg.call;
    const inConference = call.legs.some((other) =>
      !other.ended && other !== leg && this.conferenceOf(other)
    );
    if (!inConference) return false;
    const peer = this.peerOf(leg);
    this.ops.release(leg);
    if (peer && !this.conferenceOf(peer)) this.ops.release(peer);
    this.#endIfIdle(call);
    return true;
  }

  /** A call ended: conferences lose its members. */
  callEnded(call: Call): void {
    for (const conference of this.conferences.values()) {
      for (const leg of conference.joined.keys()) {
        if (leg.call === call) conference.joined.delete(leg);
      }
      if (conference.host.call === call) this.conferences.delete(conference.id);
    }
  }
}

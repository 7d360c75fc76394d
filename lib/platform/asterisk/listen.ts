/**
 * Supervisors listening to agents' calls on Asterisk (docs/asterisk.md, "Listening"): svc
 * originates the supervisor's phone into `svc-listen`, where `ChanSpy` listens to the agent's
 * channel. The listening call is no call of the call tracker's (no phone event, no history): it
 * is announced first (`SvcListen`, so that every svc process knows it and names its events alike)
 * and followed here, by `ChanSpyStart`/`ChanSpyStop` (the `ListenEvent`s) and its channel's
 * `Hangup`.
 */
import type { ListenEvent, PlatformEvent } from "../port.ts";
import type { AmiMessage } from "./ami_message.ts";
import { LISTEN_CONTEXT, LISTEN_EXTEN_PREFIX, TRUNK_IN_CONTEXT } from "./config_files.ts";

/** The `UserEvent` svc sends before originating a listening call. */
export const LISTEN_EVENT = "SvcListen";

/** What a listening call's events tell, beyond whether it listens. */
export type SpyFields = Omit<ListenEvent, "kind" | "started" | "linkedId" | "id">;

interface Spy {
  linkedId: string;
  fields: SpyFields;
  /** The supervisor's channel exists (its `Newchannel` came). */
  channel: string | null;
  started: boolean;
}

/** The fields of the `SvcListen` announcing the listening call `linkedId`. */
export function listenAnnouncement(
  linkedId: string,
  fields: SpyFields,
  channel: string,
): Record<string, string> {
  return {
    UserEvent: LISTEN_EVENT,
    Call: linkedId,
    Channel: channel,
    AgentId: String(fields.agentId),
    AgentNumber: fields.agentNumber,
    PhoneNb: fields.phoneNb,
    AgentUsername: fields.agentUsername,
    SupervisorId: String(fields.supervisorId),
    SupervisorUsername: fields.supervisorUsername,
  };
}

export class Spies {
  /** Listening calls by linkedId (the ChannelId svc gives the supervisor's channel). */
  readonly #spies = new Map<string, Spy & { originate: string }>();
  /**
   * The supervisor's side of listening calls placed on another server (the agent's), which
   * reach this one over a trunk (config_files.ts, `listenExten`): their linkedIds here.
   */
  readonly #far = new Set<string>();

  constructor(private readonly emit: (event: PlatformEvent) => void) {}

  /** Registers the listening call `linkedId` (its Originate's `Channel` is `originate`). */
  add(linkedId: string, fields: SpyFields, originate: string): void {
    if (this.#spies.has(linkedId)) return;
    this.#spies.set(linkedId, { linkedId, fields, channel: null, started: false, originate });
  }

  /** Forgets a listening call whose Originate was refused. */
  forget(linkedId: string): void {
    const spy = this.#spies.get(linkedId);
    if (spy && !spy.channel) this.#spies.delete(linkedId);
  }

  /** Whether `linkedId` is a listening call's (the call tracker leaves its channels alone). */
  has(linkedId: string): boolean {
    return this.#spies.has(linkedId) || this.#far.has(linkedId);
  }

  /**
   * The events of listening calls; answers whether the event was one. `SvcListen` registers
   * another process's; `ChanSpyStart`, `ChanSpyStop` start and stop; the supervisor's channel
   * hanging up stops; a failed Originate forgets.
   */
  handle(event: AmiMessage): boolean {
    switch (event.event) {
      case "UserEvent": {
        if (event.get("UserEvent") !== LISTEN_EVENT) return false;
        const id = (field: string) => Number(event.get(field));
        const linkedId = event.get("Call");
        if (linkedId) {
          this.add(linkedId, {
            agentId: id("AgentId"),
            agentNumber: event.get("AgentNumber") ?? "",
            phoneNb: event.get("PhoneNb") ?? "",
            agentUsername: event.get("AgentUsername") ?? "",
            supervisorId: id("SupervisorId"),
            supervisorUsername: event.get("SupervisorUsername") ?? "",
          }, event.get("Channel") ?? "");
        }
        return true;
      }
      case "Newchannel": {
        const uniqueId = event.get("Uniqueid") ?? "";
        if (
          event.get("Context") === TRUNK_IN_CONTEXT &&
          event.get("Exten")?.startsWith(LISTEN_EXTEN_PREFIX) && uniqueId === event.get("Linkedid")
        ) {
          this.#far.add(uniqueId);
          return true;
        }
        const spy = this.#spies.get(event.get("Linkedid") ?? "");
        if (spy && event.get("Uniqueid") === spy.linkedId) spy.channel = event.get("Channel") ?? "";
        return spy !== undefined;
      }
      case "ChanSpyStart":
      case "ChanSpyStop": {
        const spy = this.#spies.get(event.get("SpyerLinkedid") ?? "");
        if (spy) this.#listening(spy, event.event === "ChanSpyStart");
        return spy !== undefined;
      }
      case "Hangup": {
        if (this.#far.delete(event.get("Uniqueid") ?? "")) return true;
        const spy = this.#spies.get(event.get("Uniqueid") ?? "");
        if (!spy) return false;
        this.#listening(spy, false);
        this.#spies.delete(spy.linkedId);
        return true;
      }
      case "OriginateResponse": {
        if (event.get("Response") !== "Failure" || event.get("Context") !== LISTEN_CONTEXT) {
          return false;
        }
        const spy = [...this.#spies.values()].find((one) =>
          !one.channel && one.originate === event.get("Channel")
        );
        if (spy) this.#spies.delete(spy.linkedId);
        return spy !== undefined;
      }
      default:
        return false;
    }
  }

  /** After a reconnection: the listening calls whose channel is gone stopped meanwhile. */
  resync(uniqueIds: Set<string>): void {
    for (const far of this.#far) if (!uniqueIds.has(far)) this.#far.delete(far);
    for (const spy of [...this.#spies.values()]) {
      if (!spy.channel || uniqueIds.has(spy.linkedId)) continue;
      this.#listening(spy, false);
      this.#spies.delete(spy.linkedId);
    }
  }

  #listening(spy: Spy, started: boolean): void {
    if (spy.started === started) return;
    spy.started = started;
    this.emit({ kind: "listen", started, ...spy.fields, linkedId: spy.linkedId });
  }
}

/**
 * What both platform adapters know of the configuration: the phones, the numbers they answer to,
 * the queues, the agents and the meeting rooms, built from the configuration daemon's records
 * (decisions §8: a change applies to the next call without a restart).
 */
import { type AgentRecord, agents } from "../store/agents.ts";
import { type ConferenceRecord, conferences } from "../store/conferences.ts";
import {
  type CustomEndpointRecord,
  customEndpoints,
  type SipEndpointRecord,
  sipEndpoints,
} from "../store/endpoints.ts";
import { type ExtensionRecord, extensions } from "../store/extensions.ts";
import { type LineRecord, lines } from "../store/lines.ts";
import { type MeetingRecord, meetings } from "../store/meetings.ts";
import { type QueueRecord, queues } from "../store/queues.ts";
import { allOf, localWriteCount } from "../store/records.ts";
import { sharedRead } from "../store/shared_read.ts";
import type { Store } from "../store/store.ts";
import { type UserRecord, users } from "../store/users.ts";
import { type VoicemailRecord, voicemails } from "../store/voicemails.ts";
import { type RoomConfig, roomConfigs } from "./rooms.ts";

/** A phone: a line holding an enabled extension, named by that extension. */
export interface Phone {
  /** The first enabled extension of the line: the phone's name in events and the control API. */
  extension: string;
  /** The line's context, in which the phone's user dials. */
  context: string;
  lineId: number;
  /** The line's main user (`user_ids[0]`), null for a line without user. */
  userId: number | null;
  /** That user's username, "" when none. */
  username: string;
  /**
   * How a PBX reaches the line's device: `PJSIP/<endpoint username>`, `SCCP/<line name>` or the
   * custom endpoint's interface; null for a line without endpoint (the simulator needs none).
   */
  interface: string | null;
  /** The server the line is placed on when the PBX has several; absent: the main one. */
  registrar?: string;
}

/** The device interface of `line` (see {@link Phone.interface}). */
export function lineInterface(
  line: LineRecord,
  sip: Map<number, SipEndpointRecord>,
  custom: Map<number, CustomEndpointRecord>,
): string | null {
  const endpoint = line.endpoint;
  if (!endpoint) return null;
  if (endpoint.type === "sccp") return `SCCP/${line.name}`;
  if (endpoint.type === "sip") {
    const username = sip.get(endpoint.id)?.username;
    return username ? `PJSIP/${username}` : null;
  }
  return custom.get(endpoint.id)?.interface ?? null;
}

/** A user's full name: first and last names, "" when both are empty. */
export const userName = (user: Pick<UserRecord, "firstname" | "lastname">): string =>
  [user.firstname, user.lastname].filter(Boolean).join(" ");

/** Where a dialled number leads. */
export type Target =
  | { kind: "phone"; phone: Phone }
  | { kind: "queue"; queue: QueueRecord }
  /** A meeting room; `invited`: svc calls the phone in, no PIN asked (`inviteToRoom`). */
  | { kind: "room"; room: RoomConfig; invited?: boolean }
  | { kind: "external" };

const pair = (context: string, exten: string) => `${context}\u0000${exten}`;

/** Technologies are named in any case (`PJSIP`, `pjsip`); what follows the `/` is exact. */
const interfaceKey = (iface: string) => {
  const slash = iface.indexOf("/");
  return slash < 0 ? iface : iface.slice(0, slash).toUpperCase() + iface.slice(slash);
};

/** The configuration as a platform adapter sees it at one moment; treat it as read-only. */
export class Directory {
  readonly users = new Map<number, UserRecord>();
  readonly queues = new Map<number, QueueRecord>();
  readonly agents = new Map<number, AgentRecord>();
  readonly voicemails = new Map<number, VoicemailRecord>();
  /** The meeting rooms by id (docs/meetingrooms.md). */
  readonly rooms = new Map<string, RoomConfig>();
  /** Every phone, in line id order. */
  readonly phones: Phone[] = [];
  readonly #phoneByLine = new Map<number, Phone>();
  readonly #phoneByName = new Map<string, Phone>();
  readonly #extensions = new Map<string, ExtensionRecord>();
  readonly #queueByNumber = new Map<string, QueueRecord>();
  readonly #queueByName = new Map<string, QueueRecord>();
  readonly #phoneByInterface = new Map<string, Phone>();
  readonly #agentByNumber = new Map<string, AgentRecord>();
  readonly #roomByNumber = new Map<string, RoomConfig>();

  constructor(
    userList: UserRecord[],
    lineList: LineRecord[],
    extensionList: ExtensionRecord[],
    queueList: QueueRecord[],
    agentList: AgentRecord[],
    sipList: SipEndpointRecord[] = [],
    customList: CustomEndpointRecord[] = [],
    voicemailList: VoicemailRecord[] = [],
    conferenceList: ConferenceRecord[] = [],
    meetingList: MeetingRecord[] = [],
  ) {
    for (const voicemail of voicemailList) this.voicemails.set(voicemail.id, voicemail);
    for (const room of roomConfigs(conferenceList, extensionList, meetingList)) {
      this.rooms.set(room.id, room);
      if (room.number !== null) this.#roomByNumber.set(pair(room.context, room.number), room);
    }
    const sip = new Map(sipList.map((endpoint) => [endpoint.id, endpoint]));
    const custom = new Map(customList.map((endpoint) => [endpoint.id, endpoint]));
    for (const user of userList) this.users.set(user.id, user);
    for (const queue of queueList) {
      this.queues.set(queue.id, queue);
      this.#queueByName.set(queue.name, queue);
      if (queue.number !== null) this.#queueByNumber.set(pair(queue.context, queue.number), queue);
    }
    for (const agent of agentList) {
      this.agents.set(agent.id, agent);
      this.#agentByNumber.set(agent.number, agent);
    }
    const extensionById = new Map<number, ExtensionRecord>();
    for (const extension of extensionList) {
      extensionById.set(extension.id, extension);
      if (extension.enabled) {
        this.#extensions.set(pair(extension.context, extension.exten), extension);
      }
    }
    for (const line of lineList) {
      const named = line.extension_ids.map((id) => extensionById.get(id))
        .find((extension) => extension?.enabled && extension.line_id === line.id);
      if (!named) continue;
      const userId = line.user_ids[0] ?? null;
      const phone: Phone = {
        extension: named.exten,
        context: line.context,
        lineId: line.id,
        userId,
        username: (userId === null ? null : this.users.get(userId)?.username) ?? "",
        interface: lineInterface(line, sip, custom),
        ...(line.registrar === undefined ? {} : { registrar: line.registrar }),
      };
      this.phones.push(phone);
      const key = phone.interface && interfaceKey(phone.interface);
      if (key && !this.#phoneByInterface.has(key)) this.#phoneByInterface.set(key, phone);
      this.#phoneByLine.set(line.id, phone);
      // two lines named alike (same exten in two contexts): the control API reaches the first
      if (!this.#phoneByName.has(phone.extension)) this.#phoneByName.set(phone.extension, phone);
    }
  }

  phoneOfLine(lineId: number): Phone | null {
    return this.#phoneByLine.get(lineId) ?? null;
  }

  /** The phone the control API calls `extension`. */
  phoneNamed(extension: string): Phone | null {
    return this.#phoneByName.get(extension) ?? null;
  }

  /** The phone whose device is `iface` (`PJSIP/alice`; the case of the technology ignored). */
  phoneOfInterface(iface: string): Phone | null {
    return this.#phoneByInterface.get(interfaceKey(iface)) ?? null;
  }

  /** The agent whose number is `number`, or null. */
  agentNumbered(number: string): AgentRecord | null {
    return this.#agentByNumber.get(number) ?? null;
  }

  /** The queue named `name`, or null. */
  queueNamed(name: string): QueueRecord | null {
    return this.#queueByName.get(name) ?? null;
  }

  /** The user's phone: the one of its main line (`line_ids[0]`), null when it has none. */
  phoneOfUser(userId: number): Phone | null {
    const lineId = this.users.get(userId)?.line_ids[0];
    return lineId === undefined ? null : this.phoneOfLine(lineId);
  }

  /** The user's voicemail when it has one that is enabled, else null. */
  voicemailOfUser(userId: number | null): VoicemailRecord | null {
    const id = userId === null ? null : this.users.get(userId)?.voicemail_id;
    const voicemail = id == null ? undefined : this.voicemails.get(id);
    return voicemail?.enabled ? voicemail : null;
  }

  /** The voicemail whose mailbox is `number`@`context`, or null. */
  voicemailAt(number: string, context: string): VoicemailRecord | null {
    for (const voicemail of this.voicemails.values()) {
      if (voicemail.number === number && voicemail.context === context) return voicemail;
    }
    return null;
  }

  /** The enabled extension `exten` of `context`, or null. */
  extensionAt(exten: string, context: string): ExtensionRecord | null {
    return this.#extensions.get(pair(context, exten)) ?? null;
  }

  /** The phone reached by the extension `exten` of `context`, or null. */
  phoneAt(exten: string, context: string): Phone | null {
    const extension = this.extensionAt(exten, context);
    return extension?.line_id == null ? null : this.phoneOfLine(extension.line_id);
  }

  /**
   * The name a party shows as the other party `number` (a phone event's `otherDName`): the full
   * name of the user whose phone answers `number` in `context`, else `shown.name` when `number` is
   * the number the call showed (`shown.number`), else "".
   */
  nameOf(number: string, context: string, shown: { number: string; name: string }): string {
    const phone = this.phoneAt(number, context);
    const user = phone?.userId == null ? undefined : this.users.get(phone.userId);
    if (user) return userName(user);
    return number === shown.number ? shown.name : "";
  }

  /** The meeting room numbered `number` in `context`, or null. */
  roomAt(number: string, context: string): RoomConfig | null {
    return this.#roomByNumber.get(pair(context, number)) ?? null;
  }

  /**
   * Where `number`, dialled in `context`, leads: a phone, a queue, a meeting room, else the
   * outside network.
   */
  resolve(number: string, context: string): Target {
    const phone = this.phoneAt(number, context);
    if (phone) return { kind: "phone", phone };
    const queue = this.#queueByNumber.get(pair(context, number));
    if (queue) return { kind: "queue", queue };
    const room = this.roomAt(number, context);
    if (room) return { kind: "room", room };
    return { kind: "external" };
  }

  /** Ids of the queues `agentId` is a member of, in queue id order. */
  queueIdsOf(agentId: number): number[] {
    return [...this.queues.values()]
      .filter((queue) => queue.members.some((member) => member.agent_id === agentId))
      .map((queue) => queue.id);
  }
}

/**
 * How long a read-only question (phone statuses for the contacts list view) may be answered from
 * the directory without reading the version keys, while this process wrote no collection: only a
 * change made by another process sharing the store shows this much later, which is harmless for a
 * status that is live anyway. Commands always read the version keys (a simulator step that cannot
 * read the store is postponed, never half done).
 */
export const DIRECTORY_RECHECK_MS = 1000;

/** The directory as an adapter reads it: {@link directoryLoader}. */
export interface DirectoryLoader {
  /**
   * The current directory. One shared read of the collections' version keys tells whether
   * anything changed (requests arriving together share it; with `recent`, none is needed while
   * this process wrote nothing for {@link DIRECTORY_RECHECK_MS}); only then are the lists read
   * again (each cached against its own version key) and the directory rebuilt.
   */
  load(options?: { recent?: boolean }): Promise<Directory>;
  /** What `load({ recent: true })` would answer without reading, or null when it must read. */
  recent(): Directory | null;
}

export function directoryLoader(store: Store): DirectoryLoader {
  const collections = [
    users,
    lines,
    extensions,
    queues,
    agents,
    sipEndpoints,
    customEndpoints,
    voicemails,
    conferences,
    meetings,
  ] as const;
  const versions = sharedRead(() => store.getMany(collections.map((c) => c.versionKey)));
  let cached: { versions: string; directory: Directory } | null = null;
  let checked = { at: -Infinity, writes: -1 };
  const recent = () =>
    cached && checked.writes === localWriteCount() &&
      performance.now() - checked.at < DIRECTORY_RECHECK_MS
      ? cached.directory
      : null;
  return {
    recent,
    async load({ recent: recentEnough = false } = {}) {
      const kept = recentEnough ? recent() : null;
      if (kept) return kept;
      const started = { at: performance.now(), writes: localWriteCount() };
      const current = (await versions()).map((entry) => entry.versionstamp).join(",");
      if (cached?.versions !== current) {
        const directory = new Directory(...await allOf(store, collections));
        cached = { versions: current, directory };
      }
      checked = started;
      return cached.directory;
    },
  };
}

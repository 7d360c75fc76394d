/**
 * Every agent's status, as the agent daemon's `GET /agents` answers it: the JSON text of
 * `agentStatuses` over every agent, in id order, read with a fixed number of store reads whatever
 * the number of agents.
 *
 * One read of the version keys of what a status shows from the store (agents, queues, and the
 * extensions, lines and endpoints that give a logged agent's `state_interface`) tells whether any
 * of it changed, by any process sharing the store; only then are those lists read again (each kept
 * by its collection while its version key stays) and indexed. The presences come from the platform
 * (in memory), not even asked while the platform's `agentPresenceVersion` is the one they were
 * read at. The text is built again only when the lists or a presence changed. Requests asking
 * while a read runs share the next one, begun after they asked (`lib/store/shared_read.ts`), so a
 * change made before a request shows in its answer. The version keys themselves are not read
 * while the store's change mark (`Store.changeMark`) is the one taken before they last were.
 */
import { isLoggedOnLine, statusOf } from "./agent_control.ts";
import type { CoreServices } from "./core_services.ts";
import type { AgentPresence } from "./platform/port.ts";
import { type AgentRecord, agents } from "./store/agents.ts";
import {
  customEndpoints,
  type EndpointRecord,
  type EndpointType,
  sccpEndpoints,
  sipEndpoints,
} from "./store/endpoints.ts";
import { extensions, extensionsAt } from "./store/extensions.ts";
import { endpointInterface, type LineRecord, lines } from "./store/lines.ts";
import { membershipsByAgent, queues } from "./store/queues.ts";
import { allOf, versionKey } from "./store/records.ts";
import { serverUuid } from "./store/server_identity.ts";
import { sharedRead } from "./store/shared_read.ts";

/** What the statuses show from the store, read together. */
const COLLECTIONS = [
  agents,
  queues,
  extensions,
  lines,
  sipEndpoints,
  sccpEndpoints,
  customEndpoints,
] as const;

/** The lists of {@link COLLECTIONS}, as `allOf` reads them. */
type Lists = Awaited<ReturnType<typeof allOf<typeof COLLECTIONS>>>;

/** The lists of {@link COLLECTIONS}, indexed, at the versions they were read at. */
interface Sources {
  versions: string;
  agentList: readonly AgentRecord[];
  memberships: ReturnType<typeof membershipsByAgent>;
  /** The interface of the line holding `exten` in `context`, as `stateInterface` answers it. */
  interfaceAt(exten: string, context: string): string | null;
}

/** The text last answered, and what it was built from. */
interface Answer {
  sources: Sources;
  presences: AgentPresence[];
  /** The platform's `agentPresenceVersion` when `presences` were read. */
  presenceVersion: number | null;
  text: string;
}

/** Per services, the shared read of the list. */
const readers = new WeakMap<CoreServices, () => Promise<string>>();

/**
 * The status of every agent, in id order, as JSON text (what `JSON.stringify(agentStatuses(…))`
 * gives for every agent).
 *
 * @example
 * return c.body(await agentListJson(services), 200, { "Content-Type": "application/json" });
 */
export function agentListJson(services: CoreServices): Promise<string> {
  let read = readers.get(services);
  if (!read) readers.set(services, read = sharedRead(listReader(services)));
  return read();
}

/** A function reading the list now, keeping what it read for the next call. */
function listReader({ store, platform }: CoreServices): () => Promise<string> {
  const readVersions = versionsReader(store);
  const presencesOf = (agentList: readonly AgentRecord[]) =>
    platform.agentPresences(agentList.map((agent) => agent.id));
  let kept: Sources | null = null;
  /** The store's change mark taken before `kept`'s versions were read. */
  let keptMark: number | null = null;
  let answered: Answer | null = null;
  return async () => {
    // nothing committed since the versions were read (by any process): they are the same
    const mark = store.changeMark();
    const unchanged = kept !== null && mark !== null && mark === keptMark;
    const [versions, origin] = await Promise.all([
      unchanged ? kept!.versions : readVersions(),
      serverUuid(store),
    ]);
    keptMark = mark;
    // lists read after the version keys are at least as new: kept under these versions, a write
    // meanwhile is read again next time
    if (kept?.versions !== versions) kept = sources(versions, await allOf(store, COLLECTIONS));
    const current = kept;
    // read with the presences, in the same turn: no presence changed while it reads the same
    const presenceVersion = platform.agentPresenceVersion();
    if (
      answered?.sources === current && presenceVersion !== null &&
      answered.presenceVersion === presenceVersion
    ) return answered.text;
    const presences = await presencesOf(current.agentList);
    if (answered?.sources === current && samePresences(answered.presences, presences)) {
      answered.presenceVersion = presenceVersion;
      return answered.text;
    }
    const statuses = current.agentList.map((agent, i) => {
      const presence = presences[i]!;
      const stateInterface = isLoggedOnLine(presence)
        ? current.interfaceAt(presence.extension, presence.context)
        : null;
      return statusOf(agent, presence, {
        origin,
        memberships: current.memberships,
        stateInterface,
      });
    });
    answered = { sources: current, presences, presenceVersion, text: JSON.stringify(statuses) };
    return answered.text;
  };
}

/**
 * Reads the versionstamps of the version keys of {@link COLLECTIONS}, as one text. The keys are
 * read as one range, from the first name to the last (the other collections' keys in between
 * skipped): Deno KV reads a short range in about half the time of a `getMany` of seven keys, and
 * this read is the one store read of every answer.
 */
function versionsReader(store: CoreServices["store"]): () => Promise<string> {
  const names = COLLECTIONS.map((collection) => collection.name).sort();
  const selector: Deno.KvListSelector = {
    start: versionKey(names[0]!),
    end: [...versionKey(names.at(-1)!), ""], // just after the last name's key
  };
  return async () => {
    const stamps = new Map<Deno.KvKeyPart, string>();
    for (const entry of await store.list(selector)) stamps.set(entry.key[1]!, entry.versionstamp);
    return COLLECTIONS.map((collection) => stamps.get(collection.name) ?? null).join(",");
  };
}

/** The lists of {@link COLLECTIONS} indexed for the statuses. */
function sources(
  versions: string,
  [agentList, queueList, extensionList, lineList, sip, sccp, custom]: Lists,
): Sources {
  const extensionAt = extensionsAt(extensionList);
  const lineById = byId(lineList);
  const endpoints: Record<EndpointType, ReadonlyMap<number, EndpointRecord>> = {
    sip: byId(sip),
    sccp: byId(sccp),
    custom: byId(custom),
  };
  return {
    versions,
    agentList,
    memberships: membershipsByAgent(queueList),
    interfaceAt(exten, context) {
      const lineId = extensionAt(exten, context)?.line_id;
      const line: LineRecord | undefined = lineId == null ? undefined : lineById.get(lineId);
      const endpoint = line?.endpoint && endpoints[line.endpoint.type].get(line.endpoint.id);
      return line && endpoint ? endpointInterface(line, endpoint) : null;
    },
  };
}

/** Records by id, per list (a collection's cached list is one array). */
const idIndexes = new WeakMap<readonly { id: number }[], ReadonlyMap<number, unknown>>();

function byId<T extends { id: number }>(list: readonly T[]): ReadonlyMap<number, T> {
  let index = idIndexes.get(list);
  if (!index) idIndexes.set(list, index = new Map(list.map((record) => [record.id, record])));
  return index as ReadonlyMap<number, T>;
}

/** Whether two presences of the same agents show alike in their statuses. */
function samePresences(before: AgentPresence[], after: AgentPresence[]): boolean {
  if (before.length !== after.length) return false;
  for (let i = 0; i < after.length; i++) {
    const a = before[i]!;
    const b = after[i]!;
    if (
      a.agentId !== b.agentId || a.logged !== b.logged || a.paused !== b.paused ||
      a.pausedReason !== b.pausedReason || a.extension !== b.extension ||
      a.context !== b.context || a.state !== b.state
    ) return false;
  }
  return true;
}

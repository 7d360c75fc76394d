/**
 * Call history entries as xuc's clients read them (docs/cti.md, "Call history"): the user
 * history's entries (`lib/history.ts`: `start`, `duration`, `srcUsername`, `dstUsername`,
 * `srcNum`, `dstNum`, `status`) with the parties' names (`srcFirstName`, `srcLastName`,
 * `dstFirstName`, `dstLastName`: a user's names, "" for an outside party), and queue calls in the
 * same shape (`CallHistory`) or as a customer's calls (`CustomerCallHistoryResponseWithId`).
 */
import { formatDuration, formatStart, historyEntry } from "../history.ts";
import { type AgentRecord, listAgents } from "../store/agents.ts";
import type { CallRecord } from "../store/call_history.ts";
import { listQueues } from "../store/queues.ts";
import type { Store } from "../store/store.ts";
import { findUserByUsername } from "../store/users.ts";
import type { QueueCallOutcome, QueueCallRecord } from "./queue_calls.ts";

/** A party's names, "" for what is not known. */
interface Names {
  firstName: string;
  lastName: string;
}

const NO_NAMES: Names = { firstName: "", lastName: "" };

/** The names of the users `usernames` ("" and unknown ones: none). */
async function namesOf(store: Store, usernames: Iterable<string>): Promise<Map<string, Names>> {
  const names = new Map<string, Names>();
  await Promise.all(
    [...new Set(usernames)].filter((name) => name).map(async (username) => {
      const user = await findUserByUsername(store, username);
      if (user) names.set(username, { firstName: user.firstname, lastName: user.lastname ?? "" });
    }),
  );
  return names;
}

/** The user history's records as `CallHistory` entries, in the same order. */
export async function userEntries(store: Store, records: readonly CallRecord[]) {
  const names = await namesOf(store, records.flatMap((r) => [r.srcUsername, r.dstUsername]));
  return records.map((record) => {
    const src = names.get(record.srcUsername) ?? NO_NAMES;
    const dst = names.get(record.dstUsername) ?? NO_NAMES;
    return {
      ...historyEntry(record),
      srcFirstName: src.firstName,
      srcLastName: src.lastName,
      dstFirstName: dst.firstName,
      dstLastName: dst.lastName,
    };
  });
}

/** The talk time of a queue call so far (`nowMs` for one still talking). */
const talkMs = (record: QueueCallRecord, nowMs: number) =>
  record.answeredMs === null ? 0 : (record.endMs ?? nowMs) - record.answeredMs;

/** The wait of a queue call so far. */
const waitMs = (record: QueueCallRecord, nowMs: number) =>
  (record.answeredMs ?? record.endMs ?? nowMs) - record.joinedMs;

/** A queue call's `status` in `CallHistory`. */
const HISTORY_STATUS: Record<QueueCallOutcome, string> = {
  waiting: "ongoing",
  answered: "ongoing",
  completed: "answered",
  abandoned: "missed",
  timeout: "missed",
};

/** A queue call's `status` among a customer's calls. */
const CUSTOMER_STATUS: Record<QueueCallOutcome, string> = {
  waiting: "ongoing",
  answered: "ongoing",
  completed: "answered",
  abandoned: "abandoned",
  timeout: "timeout",
};

/** Every agent by id. */
async function agentsById(store: Store): Promise<Map<number, AgentRecord>> {
  return new Map((await listAgents(store)).map((agent) => [agent.id, agent]));
}

/**
 * Queue calls as `CallHistory` entries: the caller (`src`, its name as the call gave it in
 * `srcLastName`), the agent who answered (`dst`: its number and names), `status` `answered`
 * (taken and ended), `missed` (abandoned, timed out) or `ongoing` (waiting or talking).
 */
export async function queueCallEntries(
  store: Store,
  records: readonly QueueCallRecord[],
  nowMs: number,
) {
  const agents = await agentsById(store);
  return records.map((record) => {
    const agent = record.agentId === null ? undefined : agents.get(record.agentId);
    return {
      start: formatStart(record.joinedMs),
      duration: formatDuration(talkMs(record, nowMs)),
      srcUsername: "",
      dstUsername: "",
      srcNum: record.callerNumber,
      dstNum: agent?.number ?? "",
      status: HISTORY_STATUS[record.outcome],
      srcFirstName: "",
      srcLastName: record.callerName,
      dstFirstName: agent?.firstname ?? "",
      dstLastName: agent?.lastname ?? "",
    };
  });
}

/**
 * Queue calls as a customer's calls (`CustomerCallHistoryResponseWithId`'s `list`): when, how
 * long the talk and the wait, the agent and the queue, and `status` `answered`, `abandoned`,
 * `timeout` or `ongoing`.
 */
export async function customerEntries(
  store: Store,
  records: readonly QueueCallRecord[],
  nowMs: number,
) {
  const [agents, queues] = await Promise.all([agentsById(store), listQueues(store)]);
  const queueById = new Map(queues.map((queue) => [queue.id, queue]));
  return records.map((record) => {
    const agent = record.agentId === null ? undefined : agents.get(record.agentId);
    const queue = queueById.get(record.queueId);
    return {
      start: formatStart(record.joinedMs),
      duration: formatDuration(talkMs(record, nowMs)),
      waitTime: formatDuration(waitMs(record, nowMs)),
      agentName: agent ? [agent.firstname, agent.lastname].filter((part) => part).join(" ") : "",
      agentNum: agent?.number ?? "",
      queueName: queue ? queue.display_name ?? queue.name : "",
      queueNum: queue?.number ?? "",
      status: CUSTOMER_STATUS[record.outcome],
    };
  });
}

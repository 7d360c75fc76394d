/**
 * The days kept (docs/supervision.md, "History"): a row per day and queue, and per day and agent,
 * of what the counters hold, as JSON or as CSV (every cell neutralised against spreadsheet
 * formulas by `lib/csv.ts`). A day is a queue's own (its time zone's) or, for agents, the default
 * time zone's. What is still going on (a login, a pause not ended) counts once it has ended.
 */
import type { CoreServices } from "../core_services.ts";
import { toCsv } from "../csv.ts";
import { listAgents } from "../store/agents.ts";
import { listQueues } from "../store/queues.ts";
import { readCounters } from "../store/supervision.ts";
import { agentDayFigures, queueDayFigures } from "./day_figures.ts";
import { daysSpanned, isDay } from "./days.ts";
import type { SupervisionHistory } from "./schemas.ts";

/**
 * What is wrong with the days asked for (`from` required, `to` defaulting to it, both
 * `YYYY-MM-DD`, `to` not before `from`, at most `retentionDays` days), or null when nothing is.
 *
 * @example
 * historyRangeProblem("2026-01-01", "2026-01-31", 35); // null
 */
export function historyRangeProblem(
  from: string | undefined,
  to: string | undefined,
  retentionDays: number,
): string | null {
  if (from === undefined || from === "") return "from is required (YYYY-MM-DD)";
  if (!isDay(from)) return `from ${JSON.stringify(from)} is no date YYYY-MM-DD`;
  if (to !== undefined && !isDay(to)) return `to ${JSON.stringify(to)} is no date YYYY-MM-DD`;
  const last = to ?? from;
  if (last < from) return `to ${last} is before from ${from}`;
  const span = daysSpanned(from, last);
  if (span > retentionDays) {
    return `from ${from} to ${last} is ${span} days: at most ${retentionDays} are kept`;
  }
  return null;
}

/**
 * The rows of the days `from` to `to` (both included; checked by {@link historyRangeProblem}),
 * by day then id; days without any count have no row.
 *
 * @example
 * const { queues, agents } = await supervisionHistory(services, "2026-01-01", "2026-01-07");
 */
export async function supervisionHistory(
  services: CoreServices,
  from: string,
  to: string,
): Promise<SupervisionHistory> {
  const { store } = services;
  const [counters, queueList, agentList] = await Promise.all([
    readCounters(store, from, to),
    listQueues(store),
    listAgents(store),
  ]);
  const queues = new Map(queueList.map((queue) => [queue.id, queue]));
  const agents = new Map(agentList.map((agent) => [agent.id, agent]));
  return {
    from,
    to,
    queues: counters.queues.map((row) => ({
      day: row.day,
      queueId: row.id,
      name: queues.get(row.id)?.name ?? "",
      displayName: queues.get(row.id)?.display_name ?? null,
      number: queues.get(row.id)?.number ?? null,
      ...queueDayFigures(row.counters),
    })),
    agents: counters.agents.map((row) => ({
      day: row.day,
      agentId: row.id,
      number: agents.get(row.id)?.number ?? "",
      firstname: agents.get(row.id)?.firstname ?? null,
      lastname: agents.get(row.id)?.lastname ?? null,
      ...agentDayFigures(row.counters),
    })),
  };
}

/** The columns of the CSV history: the queue ones, then the agent ones. */
export const HISTORY_CSV_HEADER = [
  "day",
  "kind",
  "id",
  "number",
  "name",
  "entered",
  "answered",
  "abandoned",
  "abandoned_short",
  "timeout",
  "answered_within_service_level",
  "service_level_percent",
  "abandoned_after_short_percent",
  "mean_wait_seconds",
  "max_wait_seconds",
  "mean_talk_seconds",
  "missed",
  "talk_seconds",
  "pause_seconds",
  "login_seconds",
] as const;

const cell = (value: number | string | null) => value === null ? "" : String(value);

/**
 * The history as CSV: a row per day and queue (`kind` `queue`, `name` its display name, else its
 * name) and per day and agent (`kind` `agent`, `name` its first and last names), by day, queues
 * first; a column that does not apply to the row's kind is empty.
 */
export function historyCsv(history: SupervisionHistory): string {
  const queueRows = history.queues.map((row) => ({
    day: row.day,
    cells: [
      row.day,
      "queue",
      row.queueId,
      row.number,
      row.displayName ?? row.name,
      row.entered,
      row.answered,
      row.abandoned,
      row.abandonedShort,
      row.timeout,
      row.answeredWithinServiceLevel,
      row.serviceLevelPercent,
      row.abandonedAfterShortPercent,
      row.meanWaitSeconds,
      row.maxWaitSeconds,
      row.meanTalkSeconds,
      null,
      null,
      null,
      null,
    ],
  }));
  const agentRows = history.agents.map((row) => ({
    day: row.day,
    cells: [
      row.day,
      "agent",
      row.agentId,
      row.number,
      [row.firstname, row.lastname].filter((part) => part).join(" "),
      null,
      row.answered,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      null,
      row.missed,
      row.talkSeconds,
      row.pauseSeconds,
      row.loginSeconds,
    ],
  }));
  // stable: each kind is in day order already, queues before agents within a day
  const rows = [...queueRows, ...agentRows].sort((a, b) =>
    a.day === b.day ? 0 : a.day < b.day ? -1 : 1
  );
  return toCsv(HISTORY_CSV_HEADER, rows.map((row) => row.cells.map(cell)));
}

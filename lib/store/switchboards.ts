/**
 * Switchboards, their member users and their call records. The telephony simulator records each
 * call a switchboard takes with {@link recordSwitchboardCall} (again whenever the call changes),
 * and `/1.1/switchboards/{id}/stats` reads per-day figures from those records.
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export interface SwitchboardRecord {
  id: number;
  name: string;
  /** The users answering its calls, in the order given; absent on records older than the field. */
  member_user_ids?: number[];
}

/** One call that entered a switchboard; times are milliseconds since the epoch. */
export interface SwitchboardCallRecord {
  /** The simulator's call id; recording the same id again replaces the record. */
  id: string | number;
  switchboard_id: number;
  entered_at: number;
  answered_at: number | null;
  ended_at: number | null;
  transferred: boolean;
}

/** The figures of one UTC day (`date` is `YYYY-MM-DD`). */
export interface SwitchboardDayStats {
  date: string;
  entered: number;
  answered: number;
  /** Ended without being answered. */
  abandoned: number;
  transferred: number;
  /**
   * Mean seconds a call waited: until answered, or until it ended when abandoned; calls still
   * waiting do not count. Null when no call of the day finished waiting.
   */
  waiting_time_average: number | null;
}

/** Switchboards by id. */
export const switchboards = new Collection<SwitchboardRecord>("switchboards");
/** Call records by the simulator's call id. */
export const switchboardCalls = new Collection<SwitchboardCallRecord>("switchboard_calls");

/** The switchboard `id`, or null. */
export const getSwitchboard = (store: Store, id: number) => switchboards.get(store, id);

/**
 * Creates or replaces the call record with `record.id`.
 *
 * @example
 * await recordSwitchboardCall(store, {
 *   id: "1700000000.12", switchboard_id: 1, entered_at: Date.now(),
 *   answered_at: null, ended_at: null, transferred: false,
 * });
 */
export async function recordSwitchboardCall(
  store: Store,
  record: SwitchboardCallRecord,
): Promise<void> {
  await switchboardCalls.put(store, { ...record });
}

/** The call records of switchboard `id`. */
export async function callsOfSwitchboard(
  store: Store,
  id: number,
): Promise<SwitchboardCallRecord[]> {
  return (await switchboardCalls.all(store)).filter((call) => call.switchboard_id === id);
}

/** The UTC day of a time in milliseconds, `YYYY-MM-DD`. */
export const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** How long a call waited in ms, or null while it is still waiting. */
function waited(call: SwitchboardCallRecord): number | null {
  const until = call.answered_at ?? call.ended_at;
  return until === null ? null : Math.max(0, until - call.entered_at);
}

/**
 * Per-day figures of `calls` by the UTC day they entered, days in order, only days with calls;
 * `from` and `until` (`YYYY-MM-DD`, both included) bound the days.
 */
export function dailyStats(
  calls: SwitchboardCallRecord[],
  range: { from?: string; until?: string } = {},
): SwitchboardDayStats[] {
  const days = new Map<string, SwitchboardCallRecord[]>();
  for (const call of calls) {
    const day = utcDay(call.entered_at);
    if ((range.from && day < range.from) || (range.until && day > range.until)) continue;
    days.set(day, [...days.get(day) ?? [], call]);
  }
  return [...days.keys()].sort().map((date) => {
    const day = days.get(date)!;
    const waits = day.map(waited).filter((ms) => ms !== null);
    const mean = waits.length ? waits.reduce((a, b) => a + b, 0) / waits.length : null;
    return {
      date,
      entered: day.length,
      answered: day.filter((call) => call.answered_at !== null).length,
      abandoned: day.filter((call) => call.answered_at === null && call.ended_at !== null).length,
      transferred: day.filter((call) => call.transferred).length,
      waiting_time_average: mean === null ? null : Math.round(mean) / 1000,
    };
  });
}

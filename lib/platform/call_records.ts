/**
 * The history records of a finished call (decisions §8), the same rules for every adapter: one
 * record for the calling user and one for every other user whose phone rang.
 */
import type { CallRecord } from "../store/call_history.ts";

/** A user whose phone rang during a call. */
export interface Rung {
  username: string;
  /** The number dialled to reach that phone. */
  number: string;
  answeredMs: number | null;
  /**
   * Who called that phone when not the call's source: the party a transfer handed over (its
   * record names who it ended up talking with).
   */
  src?: { username: string; number: string };
}

/** What the records are made of: a call as an adapter tracked it. */
export interface CallSummary {
  linkedId: string;
  startMs: number;
  /** The calling party; `userId` null when no user placed the call (a dial to queue). */
  src: { userId: number | null; username: string; number: string };
  /** The number dialled, as dialled. */
  dialled: string;
  /** The user reached by the number dialled (before any forward), "" for none. */
  dialledUsername: string;
  /** When the destination answered. */
  answeredMs: number | null;
  /** Username of the party that answered the calling party. */
  answeredBy: string | null;
  /** Every user whose phone rang, by user id. */
  rung: Map<number, Rung>;
}

/**
 * One record for the calling user (`emitted`) and one for every other user whose phone rang
 * (`answered` or `missed`), naming who called it: the source, or the party a transfer handed over.
 */
export function historyOf(call: CallSummary, endMs: number): CallRecord[] {
  const base = {
    id: call.linkedId,
    startMs: call.startMs,
    endMs,
    srcUsername: call.src.username,
    srcNum: call.src.number,
  };
  const records: CallRecord[] = [];
  if (call.src.userId !== null) {
    records.push({
      ...base,
      userId: call.src.userId,
      answeredMs: call.answeredMs,
      dstUsername: call.answeredBy ?? call.dialledUsername,
      dstNum: call.dialled,
      status: "emitted",
    });
  }
  for (const [userId, rung] of call.rung) {
    if (userId === call.src.userId) continue;
    records.push({
      ...base,
      ...(rung.src && { srcUsername: rung.src.username, srcNum: rung.src.number }),
      userId,
      answeredMs: rung.answeredMs,
      dstUsername: rung.username,
      dstNum: rung.number,
      status: rung.answeredMs === null ? "missed" : "answered",
    });
  }
  return records;
}

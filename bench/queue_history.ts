/**
 * What the queue call history (lib/call_history/queue_calls.ts) costs the platform's listener:
 * 3,000 queue call events (1,000 calls: joined, answered, completed) written to a store file one
 * event at a time as supervision writes them (its day counters, each event's once), with the
 * history's keys in the same commit, next to the counters alone (what the listener did before),
 * each run twice in turn, the better run kept. Target: ≤ 1.5 × the counters alone (the history
 * takes no commit of its own: the extra is the bytes of its keys).
 *
 * Alone: `deno run -A --unstable-kv bench/queue_history.ts [calls]`.
 */
import { queueCallMutations } from "../lib/call_history/queue_calls.ts";
import { loadConfig } from "../lib/config.ts";
import type { QueueCallEvent } from "../lib/platform/port.ts";
import { Store } from "../lib/store/store.ts";
import { addCountersOnce } from "../lib/store/supervision.ts";
import { queueCallChanges, supervisionSettings } from "../lib/supervision/counting.ts";
import { printRows, type Row } from "./rows.ts";

const YEAR_MS = 365 * 86_400_000;

/** The three events of call `i`, each with an id of its own. */
function callEvents(i: number): QueueCallEvent[] {
  const call = {
    kind: "queue_call" as const,
    queueId: 1 + (i % 5),
    linkedId: `bench.${i}`,
    callerNumber: `0612${String(i % 300).padStart(6, "0")}`,
    callerName: "Caller",
  };
  return [
    { ...call, id: `${i}.j`, event: "joined", position: 1 },
    { ...call, id: `${i}.a`, event: "answered", agentId: 1 + (i % 10), waitMs: 4000 },
    { ...call, id: `${i}.c`, event: "completed", agentId: 1 + (i % 10), talkMs: 30_000 },
  ];
}

/** Microseconds per event to write `calls` calls' events, with the history or without. */
async function perEvent(calls: number, withHistory: boolean): Promise<number> {
  const settings = supervisionSettings(loadConfig({}));
  const dir = await Deno.makeTempDir({ prefix: "svc-bench-queue-history-" });
  const store = await Store.open(`${dir}/svc.kv`);
  try {
    const started = performance.now();
    for (let i = 0; i < calls; i++) {
      for (const event of callEvents(i)) {
        const now = Date.now();
        await addCountersOnce(
          store,
          [event],
          (e) => queueCallChanges(e, now, settings, "sales"),
          withHistory ? (op, chunk) => queueCallMutations(op, chunk, now, YEAR_MS) : undefined,
        );
      }
    }
    return (performance.now() - started) * 1000 / (calls * 3);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

export async function queueHistoryBench(calls = 1000): Promise<Row[]> {
  console.log(`- queue call history: ${calls * 3} queue call events written to a store file`);
  let alone = Infinity;
  let both = Infinity;
  for (let round = 0; round < 2; round++) {
    alone = Math.min(alone, await perEvent(calls, false));
    both = Math.min(both, await perEvent(calls, true));
  }
  return [{
    name: "queue call event: day counters and queue call history, one commit",
    value: both,
    unit: "µs",
    baseline: { name: "the day counters alone", value: alone },
    target: { text: "≤ 1.5 × the counters alone", met: both <= 1.5 * alone },
    detail: `${calls * 3} events, one at a time, the better of two runs each`,
  }];
}

if (import.meta.main) printRows(await queueHistoryBench(Number(Deno.args[0] ?? 1000)));

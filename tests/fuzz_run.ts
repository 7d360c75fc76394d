/**
 * `deno task fuzz`: the fuzz of `tests/fuzz.ts` as long as wanted. `FUZZ_SEED` (default: drawn
 * now, and printed) and `FUZZ_RUNS` (default 20000) set the run with the store up; a tenth as many
 * requests then go to an app whose store was closed on purpose (`FUZZ_STORE_DOWN_RUNS` to change
 * it). A failure prints fast-check's report (the seed, the path, the shrunk request and its
 * answer) and exits 1; `FUZZ_SEED=<seed>` replays it.
 *
 * @example
 * FUZZ_SEED=15 FUZZ_RUNS=100000 deno task fuzz
 */
import { fuzz, fuzzTarget } from "./fuzz.ts";

const integer = (name: string, fallback: number): number => {
  const raw = Deno.env.get(name);
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value)) {
    console.error(`${name} must be an integer, not ${JSON.stringify(raw)}`);
    Deno.exit(2);
  }
  return value;
};

const seed = integer("FUZZ_SEED", Date.now() ^ (Math.random() * 0x7fffffff));
const runs = integer("FUZZ_RUNS", 20_000);
const downRuns = integer("FUZZ_STORE_DOWN_RUNS", Math.ceil(runs / 10));

let failed = false;
for (
  const [label, storeDown, numRuns] of [["store up", false, runs], [
    "store down",
    true,
    downRuns,
  ]] as const
) {
  if (numRuns <= 0) continue;
  console.log(`fuzz (${label}): seed ${seed}, ${numRuns} requests…`);
  const run = await fuzz(await fuzzTarget({ storeDown }), { seed, numRuns });
  const rate = Math.round(run.requests / (run.ms / 1000));
  console.log(`  ${run.requests} requests in ${(run.ms / 1000).toFixed(1)} s (${rate}/s)`);
  if (run.failure !== null) {
    failed = true;
    console.log(`  FAILED with seed ${seed} (replay: FUZZ_SEED=${seed} deno task fuzz)\n`);
    console.log(run.failure);
    break;
  }
}
Deno.exit(failed ? 1 : 0);

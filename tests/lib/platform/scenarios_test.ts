/**
 * Every scenario of `scenarios.ts` on both adapters: the simulator, and the Asterisk adapter on a
 * replay of the recorded session; both must give exactly the scenario's events and history.
 */
import { check, onAsterisk, onSimulator } from "./scenario_runner.ts";
import { SCENARIOS } from "./scenarios.ts";

for (const scenario of SCENARIOS) {
  Deno.test(`simulator: ${scenario.name}`, async () => {
    check(scenario, await onSimulator(scenario));
  });
  if (scenario.transcript === null) continue;
  Deno.test(`Asterisk (replay of ${scenario.transcript}): ${scenario.name}`, async () => {
    check(scenario, await onAsterisk(scenario));
  });
}

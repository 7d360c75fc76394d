/**
 * The scenario table's phones (`tests/lib/platform/scenarios.ts`) played on real baresip phones by
 * the live tests: the people's extensions and what their phones do.
 */
import type { Phone } from "../peers/baresip_phone.ts";
import type { CallStarted } from "../../lib/platform/port.ts";
import type { SimPhones, Step, World } from "../lib/platform/scenarios.ts";
import { sleep } from "./svc_http.ts";

/** The phones of the scenario table's people: extension → SIP user. */
export const PEOPLE = { "1001": "alice", "1002": "bob", "1003": "carol" } as const;

/**
 * The scenario's phones as the simulator's control API is played on real ones: answer and reject
 * what rings (waiting for it), hang up, hold and resume; time passes for real. The outside
 * network is the PBX's own route: nothing to do there.
 */
export function livePhones(phones: Record<string, Phone>, settle: () => Promise<void>): SimPhones {
  /** Where each phone's events were read up to: what rang before the scenario is not its. */
  const seen = new Map(Object.entries(phones).map(([user, phone]) => [user, phone.ctrl.mark()]));
  return {
    async act(extension, action) {
      if (extension === "external") return;
      const user = PEOPLE[extension as keyof typeof PEOPLE];
      const ctrl = phones[user]!.ctrl;
      if (action === "answer" || action === "reject") {
        await ctrl.waitEvent("CALL_INCOMING", seen.get(user) ?? 0);
        seen.set(user, ctrl.mark());
        if (action === "answer") await ctrl.accept();
        else await ctrl.hangup();
      } else if (action === "hangup") await ctrl.hangup();
      else if (action === "hold") await ctrl.hold();
      else await ctrl.resume();
      await settle();
    },
    policy() {
      return Promise.reject(new Error("a real phone's policy is its answer mode: not played live"));
    },
    async advance(ms) {
      await sleep(ms);
      await settle();
    },
    async keys(extension, digits) {
      // the room's PIN prompt is playing: the digits come after it
      await sleep(1000);
      await phones[PEOPLE[extension as keyof typeof PEOPLE]]!.ctrl.sendDtmf(digits);
      // ConfBridge checks the PIN at the `#`, then plays its sounds before the channel joins
      await sleep(2500);
      await settle();
    },
  };
}

/**
 * Plays a scenario's steps live: each command, then what the phones do, `settle` after each;
 * answers what each dial command answered, in order.
 */
export async function playSteps(
  steps: Step[],
  w: World,
  sim: SimPhones,
  settle: () => Promise<void>,
): Promise<CallStarted[]> {
  const started: CallStarted[] = [];
  for (const step of steps) {
    const result = await step.command(w);
    if (typeof result === "object" && result !== null && "linkedId" in result) {
      started.push(result as CallStarted);
    }
    await settle();
    await step.phones?.(sim);
  }
  return started;
}

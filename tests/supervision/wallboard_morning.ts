/**
 * A morning of calls before the wallboard scenario (`wallboard_scenario.ts`), so that the page's
 * screenshots show a day's curve as a supervisor sees one: on the simulator in virtual time, from
 * the clock's time (08:00 in the page test) to `untilMs`, the scenario's six agents logged in,
 * answering by themselves after a few seconds and talking a few minutes each (their phones'
 * `auto` policy), and the ten callers calling both queues, more and more often up to a peak at
 * 10:00, then less; one caller in six hangs up if still waiting after a while, and the queues
 * send away the calls that wait 30 s (the simulator's limit). The arrivals come from a fixed
 * sequence, so every run plays the same morning. At `untilMs` every call is over and every agent
 * logged out, as the scenario starts.
 *
 * The scenario's table counts from 0: compare its figures with {@link sinceMorning}.
 */
import type { QueueName, WallboardFigures, WallboardWorld } from "./wallboard_scenario.ts";
import { AGENTS, CALLERS, QUEUES } from "./wallboard_scenario.ts";
import type { TestContext } from "../helpers.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** Calls an hour into each queue, from 08:00 (one figure per hour). */
const CALLS_PER_HOUR: Record<QueueName, number[]> = {
  sales: [14, 26, 38, 24],
  support: [10, 18, 30, 20],
};

/** How long each agent lets its phone ring, and talks (ms). */
const HABITS: Record<string, { answer: number; talk: number }> = {
  "8001": { answer: 4_000, talk: 210_000 },
  "8002": { answer: 6_000, talk: 260_000 },
  "8003": { answer: 3_000, talk: 170_000 },
  "8004": { answer: 5_000, talk: 190_000 },
  "8005": { answer: 7_000, talk: 240_000 },
  "8006": { answer: 3_000, talk: 150_000 },
};

/** A fixed sequence of numbers in [0, 1) (a linear congruential generator). */
function sequence(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state / 2_147_483_648;
  };
}

/** One thing to do at a time: a call into a queue, or a caller giving up. */
type Act =
  | { at: number; kind: "call"; queue: QueueName; patienceMs: number | null }
  | { at: number; kind: "give_up"; caller: string };

/** Plays the morning from the clock's time to `untilMs` (see the module's comment). */
export async function playMorning(
  ctx: TestContext,
  w: WallboardWorld,
  untilMs: number,
): Promise<void> {
  const { clock, services } = ctx;
  const sim = services.sim!;
  const start = clock.now();
  for (const [number, habit] of Object.entries(HABITS)) {
    await sim.setPolicy(AGENTS[number]!.extension, {
      policy: "auto",
      answer_ms: habit.answer,
      talk_ms: habit.talk,
    });
  }
  // callers pick up their own phone at once (a call through svc rings it first) and talk on
  // until the agent hangs up
  for (const caller of Object.keys(CALLERS)) {
    await sim.setPolicy(caller, { policy: "auto", answer_ms: 0, talk_ms: 0 });
  }
  for (const [number, agent] of Object.entries(w.agents)) {
    await services.platform.agentLogin(agent, AGENTS[number]!.extension, "default");
  }

  const random = sequence(26);
  const acts: Act[] = [];
  // no call in the last 6 minutes: every one is over by the end
  const lastCall = untilMs - 6 * MINUTE;
  for (const queue of Object.keys(QUEUES) as QueueName[]) {
    let at = start;
    for (;;) {
      const hour = Math.min(3, Math.floor((at - start) / HOUR));
      at += Math.round(-Math.log(1 - random()) * HOUR / CALLS_PER_HOUR[queue][hour]!);
      if (at > lastCall) break;
      const patienceMs = random() < 1 / 6 ? 8_000 + Math.round(random() * 16_000) : null;
      acts.push({ at, kind: "call", queue, patienceMs });
    }
  }
  const byTime = (a: Act, b: Act) => a.at - b.at;
  acts.sort(byTime);

  while (acts.length) {
    const act = acts.shift()!;
    await clock.advance(act.at - clock.now());
    if (act.kind === "give_up") {
      const waiting = await services.platform.queueCalls();
      if (waiting.some((call) => call.callerNumber === act.caller)) {
        await sim.act(act.caller, "hangup");
      }
      continue;
    }
    // the first caller free (all busy: this call is not made)
    const phones = await sim.phones();
    const caller = Object.keys(CALLERS).find((extension) =>
      phones.find((phone) => phone.extension === extension)?.state === "idle"
    );
    if (caller === undefined) continue;
    await sim.dialNumber(w.users[caller]!, QUEUES[act.queue].number, {});
    if (act.patienceMs !== null) {
      acts.push({ at: act.at + act.patienceMs, kind: "give_up", caller });
      acts.sort(byTime);
    }
  }
  await clock.advance(untilMs - clock.now());
  for (const agent of Object.values(w.agents)) await services.platform.agentLogout(agent.id);
}

/**
 * `figures` less what the morning counted (`morning`: the figures at its end): the day's counts of
 * the queues and the agents as the scenario's table writes them, from 0.
 */
export function sinceMorning(
  figures: WallboardFigures,
  morning: WallboardFigures,
): WallboardFigures {
  const queues = Object.fromEntries(
    Object.entries(figures.queues).map(([name, row]) => {
      const before = morning.queues[name as QueueName].today;
      const today = Object.fromEntries(
        Object.entries(row.today).map(([key, value]) => [
          key,
          value - before[key as keyof typeof before],
        ]),
      ) as typeof row.today;
      return [name, { ...row, today }];
    }),
  ) as WallboardFigures["queues"];
  const agents = Object.fromEntries(
    Object.entries(figures.agents).map(([number, row]) => {
      const before = morning.agents[number];
      return [number, {
        ...row,
        answered: row.answered - (before?.answered ?? 0),
        missed: row.missed - (before?.missed ?? 0),
      }];
    }),
  );
  return { queues, agents };
}

/**
 * A supervisor listening to an agent's call on the simulated PBX (docs/platform.md, "Listening"):
 * the supervisor's phone is rung as a `spy` leg of a `listen` call of its own (no phone event, no
 * history: the phone only shows busy); answered, the listening starts (`ListenEvent` started),
 * and it stops when that call ends: the supervisor hangs up, or the agent's call ended.
 */
import type { UserRecord } from "../../store/users.ts";
import { notLogged } from "../agent_rules.ts";
import { type CallStarted, PlatformRefusal } from "../port.ts";
import { newCall } from "./calls.ts";
import { endCall, phoneLeg, ringLeg } from "./legs.ts";
import type { Leg, Step } from "./state.ts";

/** Rings the supervisor's phone to listen to the call the agent's phone is on. */
export async function listen(
  step: Step,
  supervisor: UserRecord,
  agentId: number,
): Promise<CallStarted> {
  const phone = step.dir.phoneOfUser(supervisor.id);
  if (!phone) {
    throw new PlatformRefusal(
      "no_line",
      `user ${supervisor.username ?? supervisor.id} has no line`,
    );
  }
  const agent = step.sim.agents.get(agentId);
  if (!agent?.logged) throw notLogged(agentId);
  const agentPhone = step.dir.phoneAt(agent.extension!, agent.context!);
  const target = agentPhone ? talkingLeg(step.sim.legsOf(agentPhone)) : null;
  if (!agentPhone || !target) {
    throw new PlatformRefusal("not_on_call", `agent ${agent.agentNumber} is on no call`);
  }
  const username = step.dir.users.get(supervisor.id)?.username ?? supervisor.username ?? "";
  const call = newCall(step, {
    kind: "listen",
    context: phone.context,
    dialled: agentPhone.extension,
    shownNumber: agent.phoneNb,
    shownName: "",
    src: { userId: supervisor.id, username, number: phone.extension },
    variables: {},
  });
  call.noHistory = true;
  const spy = {
    agentId,
    agentNumber: agent.agentNumber,
    phoneNb: agent.phoneNb,
    agentUsername: agentPhone.username,
    supervisorId: supervisor.id,
    supervisorUsername: username,
    target,
    started: false,
  };
  call.spy = spy;
  // no user on the leg: the listening call gives no phone event
  const leg = phoneLeg(step, call, phone, "spy", agent.phoneNb, { userId: null, username: "" });
  const ringSeconds = step.dir.users.get(supervisor.id)?.ring_seconds ?? supervisor.ring_seconds;
  const end = (next: Step) => endCall(next, call);
  await ringLeg(step, leg, ringSeconds * 1000, {
    answered: (next) => {
      if (target.ended) return endCall(next, call);
      spy.started = true;
      const { target: _, started: __, ...fields } = spy;
      next.emit({ kind: "listen", started: true, ...fields, linkedId: call.linkedId });
    },
    rejected: end,
    busy: end,
    noAnswer: end,
  });
  return { linkedId: call.linkedId };
}

/** The newest leg of a phone that talks (up or held). */
function talkingLeg(legs: Leg[]): Leg | null {
  return legs.filter((leg) => leg.role !== "spy" && (leg.state === "up" || leg.state === "on_hold"))
    .at(-1) ?? null;
}

/** Listening calls whose agent's call ended end too (the supervisor hears nothing any more). */
export async function settleSpies(step: Step): Promise<void> {
  for (const call of [...step.sim.calls.values()]) {
    if (call.spy && !call.ended && call.spy.target.ended) await endCall(step, call);
  }
}

/**
 * `AgentListen` (docs/cti.md, "On the PBX"): the platform's `ListenEvent`s as CTI notices, to the
 * agent's user (xuc's agent client reads it) and to the supervisor listening
 * (lib/supervision/agent_calls.ts has the command).
 */
import type { CtiNotice } from "../events/messages.ts";
import type { ListenEvent } from "../platform/port.ts";

/** `AgentListen` as xuc's clients read it. */
const agentListen = (event: ListenEvent) => ({
  msgType: "AgentListen",
  ctiMessage: { started: event.started, phoneNumber: event.phoneNb, agentId: event.agentId },
});

/**
 * The `AgentListen` notices of `events`: to the agent's user and to the supervisor, each written
 * once whatever the number of times the event is handed over.
 */
export function listenNotices(
  events: readonly ListenEvent[],
): { id: string | undefined; notice: CtiNotice }[] {
  return events.flatMap((event) => {
    const to = new Map([["agent", event.agentUsername], ["supervisor", event.supervisorUsername]]);
    if (event.agentUsername === event.supervisorUsername) to.delete("supervisor");
    return [...to].filter(([, username]) => username !== "").map(([whom, username]) => ({
      id: event.id === undefined ? undefined : `${event.id}:${whom}`,
      notice: { username, notice: true as const, message: agentListen(event) },
    }));
  });
}

/**
 * The scenario table played with its people on two PBX servers (issue 47, docs/asterisk.md
 * "Several servers"): `main` with alice's and carol's phones, the queue and the rooms, `mds1` with
 * bob's. `tests/e2e/asterisk_live_servers_test.ts` plays them on two real Asterisk servers and
 * records both AMI sessions (`tests/peers/asterisk_transcripts/servers/`);
 * `several_servers_replay_test.ts` replays them in CI.
 */
import { setDnd, setForward } from "../../../../lib/user_services.ts";
import type { World } from "../scenarios.ts";

/** The servers, the main one first. */
export const SERVERS = ["main", "mds1"] as const;
export type ServerName = typeof SERVERS[number];

/** The scenarios (their transcripts) that give the table's events with bob on `mds1`. */
export const ACROSS = [
  "02-dial-answered",
  "06-callee-busy",
  "07-callee-no-answer",
  "08-dnd",
  "09-forward-unconditional",
  "10-forward-busy",
  "11-forward-noanswer",
  "12-queue-agent",
  "12b-queue-call-by-bob",
  "13-dial-to-queue",
  "14-dial-from-queue",
  "21-svc-hold-resume",
  "22-svc-hold-held-hangs-up",
  "23-blind-transfer",
  "24-attended-transfer-complete",
  "25-attended-transfer-cancel",
  "27-conference",
  "28-record-mute-dtmf",
  "35-conference-two-calls",
  "36-listen",
  "36b-listen-by-bob",
  "40-room-join-mute-kick",
  "41-room-wrong-pin",
  "42-room-invite",
];

/** A scenario's recorded session of one server, as `ami_replay.ts` names it. */
export const acrossTranscript = (transcript: string, server: ServerName) =>
  `servers/${transcript}.${server}`;

/** bob's line on `mds1`, as an administrator places it (`registrar`, `/1.1/lines`). */
export async function placeBob(w: World): Promise<void> {
  const response = await w.api.put(`/lines/${w.bob.line_ids[0]}`, { registrar: "mds1" });
  if (response.status !== 204) throw new Error(`bob's line not placed: ${await response.text()}`);
}

/**
 * What a scenario changed of bob's services, undone at its end (in its recorded session, so the
 * replay does it too): the next scenario's resync then finds mds1's AstDB as it left it.
 */
export async function undoServices(w: World, transcript: string): Promise<void> {
  const off = { enabled: false, destination: null };
  if (transcript === "08-dnd") await setDnd(w.services, w.bob.id, false);
  if (transcript === "09-forward-unconditional") {
    await setForward(w.services, w.bob.id, "unconditional", off);
  }
  if (transcript === "10-forward-busy") await setForward(w.services, w.bob.id, "busy", off);
  if (transcript === "11-forward-noanswer") await setForward(w.services, w.bob.id, "noanswer", off);
}

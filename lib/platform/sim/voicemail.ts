/**
 * Voicemail boxes of the simulated PBX (docs/platform.md, "Voicemail"): a call its callee does not
 * answer (no no-answer forward) goes to the callee's enabled voicemail, which answers it; when the
 * call ends a new message is in the box (`VoicemailEvent`), as Asterisk's `VoiceMail` leaves one.
 */
import type { VoicemailRecord } from "../../store/voicemails.ts";
import { PlatformRefusal, type VoicemailCounts } from "../port.ts";
import type { Directory } from "../directory.ts";
import { hangupLeg, phoneEvent } from "./legs.ts";
import type { Call, SimState, Step } from "./state.ts";

/**
 * The callee's voicemail answers `call`: its calling party gets `EventEstablished` (and, answered
 * by itself, hangs up after its phone's `talk_ms`); the message is left when the call ends.
 */
export function toVoicemail(step: Step, call: Call, voicemail: VoicemailRecord): void {
  call.voicemailId = voicemail.id;
  call.established = true;
  call.answeredMs ??= step.now;
  const origin = call.origin;
  if (!origin || origin.ended) return;
  phoneEvent(step, origin, "EventEstablished");
  const talkMs = step.sim.policyOf(origin.name).talk_ms;
  if (origin.selfAnswered && talkMs > 0) {
    step.later(origin, talkMs, (next) => hangupLeg(next, origin));
  }
}

/** The messages of the box; `no_voicemail` when no enabled voicemail has that id. */
export function mailboxCounts(sim: SimState, dir: Directory, voicemailId: number): VoicemailCounts {
  if (!dir.voicemails.get(voicemailId)?.enabled) {
    throw new PlatformRefusal("no_voicemail", `no voicemail ${voicemailId}`);
  }
  return { ...(sim.mailboxes.get(voicemailId) ?? { newMessages: 0, oldMessages: 0 }) };
}

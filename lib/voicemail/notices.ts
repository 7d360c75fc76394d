/**
 * `VoiceMailStatusUpdate` (docs/cti.md, "On the PBX"): the message, and the platform's
 * `VoicemailEvent`s as CTI notices to every user of the voicemail (lib/voicemail/mwi.ts sends it at
 * sign-in).
 */
import type { CtiMessage } from "../cti/messages.ts";
import type { CoreServices } from "../core_services.ts";
import type { CtiNotice } from "../events/messages.ts";
import type { VoicemailCounts, VoicemailEvent } from "../platform/port.ts";
import { getUser } from "../store/users.ts";
import { getVoicemail } from "../store/voicemails.ts";

/** `VoiceMailStatusUpdate` of the voicemail `voiceMailId` holding `counts`. */
export const voiceMailStatus = (voiceMailId: number, counts: VoicemailCounts): CtiMessage => ({
  msgType: "VoiceMailStatusUpdate",
  ctiMessage: {
    voiceMailId,
    newMessages: counts.newMessages,
    waitingMessages: counts.newMessages > 0 ? 1 : 0,
    oldMessages: counts.oldMessages,
  },
});

/**
 * The `VoiceMailStatusUpdate` notices of `events`: one per user of each voicemail whose messages
 * changed, each written once whatever the number of times the event is handed over.
 */
export async function voicemailNotices(
  services: Pick<CoreServices, "store">,
  events: readonly VoicemailEvent[],
): Promise<{ id: string | undefined; notice: CtiNotice }[]> {
  const notices = [];
  for (const event of events) {
    const voicemail = await getVoicemail(services.store, event.voicemailId);
    for (const userId of voicemail?.user_ids ?? []) {
      const username = (await getUser(services.store, userId))?.username;
      if (!username) continue;
      notices.push({
        id: event.id === undefined ? undefined : `${event.id}:${userId}`,
        notice: {
          username,
          notice: true as const,
          message: voiceMailStatus(event.voicemailId, event),
        },
      });
    }
  }
  return notices;
}

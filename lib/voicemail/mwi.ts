/**
 * Waiting voicemail messages on the CTI channel (docs/cti.md, "Voicemail"): a socket that opens is
 * sent `VoiceMailStatusUpdate` for its user's voicemail, and every user of a voicemail is sent one
 * whenever its messages change (the platform's `VoicemailEvent`: a message left, listened to,
 * deleted). xuc's shape: `{voiceMailId, newMessages, waitingMessages, oldMessages}`, where
 * `waitingMessages` is the message-waiting lamp (1 when new messages wait, else 0).
 */
import type { CtiFamily } from "../cti/command_set.ts";
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
 * Sends an opened socket its user's voicemail status. A user without (enabled) voicemail gets
 * none; nor does anyone while the PBX cannot tell (unreachable): the next change will.
 */
export const VOICEMAIL_FAMILY: CtiFamily = {
  commands: {},
  async greet({ services, user, reply }) {
    if (user.voicemail_id === null) return;
    try {
      const counts = await services.platform.voicemailCounts(user.voicemail_id);
      reply(voiceMailStatus(user.voicemail_id, counts));
    } catch (error) {
      services.logger.debug("voicemail status not sent", { error: String(error) });
    }
  },
};

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

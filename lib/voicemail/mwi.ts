/**
 * Waiting voicemail messages on the CTI channel (docs/cti.md, "On the PBX"): a socket that opens
 * is sent `VoiceMailStatusUpdate` for its user's voicemail; every user of a voicemail is sent one
 * whenever its messages change (lib/voicemail/notices.ts). xuc's shape: `{voiceMailId,
 * newMessages, waitingMessages, oldMessages}`, where `waitingMessages` is the message-waiting lamp
 * (1 when new messages wait, else 0).
 */
import type { CtiFamily } from "../cti/command_set.ts";
import { voiceMailStatus } from "./notices.ts";

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

/**
 * The CTI notices the platform's events cause (docs/cti.md): screen pops (`Sheet`, lib/sheets/),
 * listening (`AgentListen`, lib/supervision/listen_notices.ts) and waiting voicemail
 * (`VoiceMailStatusUpdate`, lib/voicemail/notices.ts). A platform listener: it runs in the process handing
 * the platform's events over (the lease holder on Asterisk), and writes each notice once through
 * the event log, whence every process's hub hands it to the user's sockets.
 */
import type { CoreServices } from "../core_services.ts";
import type { ListenEvent, PhoneEvent, PlatformEvent, VoicemailEvent } from "../platform/port.ts";
import { sheetNotices } from "../sheets/sheet.ts";
import { listenNotices } from "../supervision/listen_notices.ts";
import { voicemailNotices } from "../voicemail/notices.ts";

/** Writes the notices of a batch of platform events. */
export async function pbxNotices(
  services: Pick<CoreServices, "store" | "config" | "clock" | "events">,
  batch: readonly PlatformEvent[],
): Promise<void> {
  const ringing = batch.filter((event): event is PhoneEvent =>
    event.kind === "phone" && event.eventType === "EventRinging"
  );
  const listens = batch.filter((event): event is ListenEvent => event.kind === "listen");
  const boxes = batch.filter((event): event is VoicemailEvent => event.kind === "voicemail");
  if (!ringing.length && !listens.length && !boxes.length) return;
  await services.events.notifyOnce([
    ...await sheetNotices(services, ringing),
    ...listenNotices(listens),
    ...await voicemailNotices(services, boxes),
  ]);
}

/**
 * `LineConfig` (docs/cti.md, "Configuration"): the user's main line as xuc's clients read it
 * (`getConfig("line")`): whether it has a phone (`hasDevice`, `vendor`) or is a WebRTC line
 * (`webRtc`), to choose how they place calls. `id` is `"-"` for a user without a line, as xuc
 * sends it (its clients sign such a user out).
 *
 * _(decision)_ No `password` nor `xivoIp`: xuc gives a WebRTC line's SIP secret and the PBX's
 * address for the browser to register itself; svc gives no SIP credentials over the socket.
 */
import type { CoreServices } from "../core_services.ts";
import { getDevice } from "../store/devices.ts";
import { getExtension } from "../store/extensions.ts";
import { lineEndpoint, mainLine } from "../store/lines.ts";
import type { UserRecord } from "../store/users.ts";
import type { CtiMessage } from "../cti/messages.ts";

/** The user's main line as `LineConfig`. */
export async function lineConfig(
  { store }: CoreServices,
  user: UserRecord,
): Promise<CtiMessage> {
  const line = await mainLine(store, user);
  if (!line) return { msgType: "LineConfig", ctiMessage: { id: "-", hasDevice: false } };
  const [endpoint, extension, device] = await Promise.all([
    lineEndpoint(store, line),
    line.extension_ids[0] === undefined ? null : getExtension(store, line.extension_ids[0]),
    line.device_id === null ? null : getDevice(store, line.device_id),
  ]);
  const options = endpoint && "options" in endpoint ? endpoint.options : [];
  const webRtc = options.some(([name, value]) =>
    name === "webrtc" && /^(yes|true|1)$/i.test(value)
  );
  return {
    msgType: "LineConfig",
    ctiMessage: {
      id: line.id,
      name: endpoint && "username" in endpoint ? endpoint.username : line.name,
      context: line.context,
      number: extension?.exten ?? "",
      protocol: line.protocol,
      webRtc,
      hasDevice: device !== null,
      ...(device?.vendor ? { vendor: device.vendor } : {}),
    },
  };
}

/**
 * `LineConfig` (docs/cti.md): the user's main line as xuc's web clients read it to choose between
 * the desk phone and WebRTC (`id` "-" for a user without a line, `webRtc`, `hasDevice`, `vendor`)
 * and to register a WebRTC line (`name`, `password`, `sipProxyName`).
 */
import type { CtiMessage } from "../cti/messages.ts";
import { getDevice } from "../store/devices.ts";
import { getEndpoint, type SipEndpointRecord } from "../store/endpoints.ts";
import { getExtension } from "../store/extensions.ts";
import { getLine } from "../store/lines.ts";
import type { Store } from "../store/store.ts";

export interface LineConfig {
  /** The line's id, as text; "-" when the user has no line (xuc's clients then sign out). */
  id: string;
  context: string;
  /** The SIP username (what a WebRTC client registers as), else the line's name. */
  name: string;
  /** The line's first extension, "" without one. */
  number: string;
  /** A SIP line whose options say `webrtc=yes` (or XiVO's `ua`: a desk phone and WebRTC). */
  webRtc: boolean;
  /** A device (a desk phone) is associated with the line. */
  hasDevice: boolean;
  /** The device's vendor, when it has one. */
  vendor?: string;
  /** XiVO's proxy name, `default`: svc has one SIP proxy, the PBX. */
  sipProxyName: string;
  /** The SIP secret, for a WebRTC line only: the browser registers with it. */
  password?: string;
}

const NO_LINE: LineConfig = {
  id: "-",
  context: "",
  name: "",
  number: "",
  webRtc: false,
  hasDevice: false,
  sipProxyName: "default",
};

/** Whether a SIP endpoint's options make it a WebRTC line. */
const isWebRtc = (sip: SipEndpointRecord) =>
  sip.options.some(([name, value]) =>
    name === "webrtc" && ["yes", "true", "1", "ua"].includes(value.toLowerCase())
  );

/** The `LineConfig` of the user's main line, as the store holds it now. */
export async function lineConfigOf(
  store: Store,
  user: { line_ids: readonly number[] },
): Promise<LineConfig> {
  const lineId = user.line_ids[0];
  const line = lineId === undefined ? null : await getLine(store, lineId);
  if (!line) return NO_LINE;
  const extensionId = line.extension_ids[0];
  const extension = extensionId === undefined ? null : await getExtension(store, extensionId);
  const sip = line.endpoint?.type === "sip"
    ? await getEndpoint(store, "sip", line.endpoint.id) as SipEndpointRecord | null
    : null;
  const device = line.device_id === null ? null : await getDevice(store, line.device_id);
  const webRtc = sip !== null && isWebRtc(sip);
  return {
    id: String(line.id),
    context: line.context,
    name: sip?.username ?? line.name,
    number: extension?.exten ?? "",
    webRtc,
    hasDevice: device !== null,
    ...(device?.vendor ? { vendor: device.vendor } : {}),
    sipProxyName: "default",
    ...(webRtc ? { password: sip.secret } : {}),
  };
}

export const lineConfigMessage = (config: LineConfig): CtiMessage => ({
  msgType: "LineConfig",
  ctiMessage: config,
});

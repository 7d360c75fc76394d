/**
 * The Asterisk configuration svc generates from the configuration daemon's records: five files
 * the operator `#include`s once, at the end of `pjsip.conf`, `extensions.conf`, `queues.conf`,
 * `voicemail.conf` and `confbridge.conf`.
 * Generation is pure and deterministic (records in id order, Unix newlines), so an unchanged
 * configuration gives byte-identical files and nothing is written or reloaded.
 *
 * The dialplan has the shape of the one the recorded sessions ran (`tests/peers/asterisk_transcripts/`),
 * which the AMI event mapping relies on: a user's extension has a hint and runs
 * `Gosub(svc-user,${EXTEN},1(...))`, which reads AstDB family `svc` (keys below) and runs `Dial`,
 * `Busy`, or `Dial(Local/...)` for a forward, and a call its user does not answer (no no-answer
 * forward) goes to the user's voicemail (`VoiceMail`); a queue number runs `Answer` then `Queue`. A
 * queue
 * member's interface is `Local/<line id>@svc-agent` ({@link agentMemberInterface}), which rings the
 * line's device with no DND, forward or ring time of its own: the queue's settings decide. A
 * supervisor listens to an agent from `svc-listen` (`ChanSpy`).
 *
 * AstDB keys, by the line's main user id (`none` for a line without user, never set):
 * `svc/dnd/<user id>` = `1` · `svc/fwd_unc/<user id>`, `svc/fwd_busy/<user id>`,
 * `svc/fwd_rna/<user id>` = the destination number, dialled in the line's context.
 *
 * Asterisk facts this relies on (checked in its sources and documentation):
 * - A context may appear twice in `extensions.conf` and its `#include`s: `pbx_config` walks the
 *   sections one by one and `ast_context_find_or_create` merges a repeated name into the same
 *   context. So `[default]` here adds to the operator's `[default]`; an extension both define
 *   keeps the first priority loaded (Asterisk warns "already in use"). `[default](+)` is not used:
 *   it fails the whole file when the operator has no such section.
 * - `;` starts a comment anywhere in a line unless written `\;` (the parser then drops the `\`).
 *   A line break cannot be escaped, so values holding one are refused.
 * - `_X.` needs two characters and a digit first; confd also allows one-character extensions and
 *   `*`, `#`, `+` (`EXTEN_PATTERN`), hence `_[0-9*#+]!` (`!`: zero or more characters after).
 *   `_.` would also match `h`, `i`, `t` and run the subroutine again on hangup.
 * - `FILTER()` with an empty string logs an error in older Asterisk versions (its argument
 *   parser dropped a trailing empty argument), so a forward is filtered only once known to be set.
 * - A PJSIP section holding an option `res_pjsip` does not know is refused whole (the endpoint
 *   would vanish), hence the list of known options below: other options are left out, with a
 *   comment.
 * - `ExecIf(<expr>?App(args))` splits its (already substituted) data at the first `?`, then at `:`
 *   outside quotes and parentheses: a caller id `"Name" <number>` (no `"` in the name) passes
 *   whole. An expression `$["${X}" != ""]` would not survive the quotes of such a value, hence
 *   `$[${LEN(${X})} > 0]`.
 * - `GROUP_COUNT(<group>@<category>)` counts the live channels in that group; `Dial` puts the
 *   channels it creates in the group named by `OUTBOUND_GROUP_ONCE` (`<group>@<category>`), then
 *   unsets it. svc-user tags the callee's leg (not the caller's channel), so a call the user was
 *   forwarded away from, or transferred out of, no longer counts as one of the user's calls.
 * - `voicemail.conf` reads a context's mailboxes from the first section of that name only
 *   (`ast_variable_browse` by name): svc's contexts must not be sections of the operator's file.
 *   A mailbox line is `<number> => <password>,<name>,<email>,<pager>,<options>`: `,` and `|`
 *   separate, so values holding them (or `;`, a line break) are left out.
 * - `VoiceMail` with option `s` and no `u`/`b` plays no greeting nor instructions, only the beep
 *   (the `beep` sound), then records until the caller hangs up; the message is kept (`minsecs` 0).
 * - `ChanSpy(<uniqueid>,qESu)`: `u` names the channel by its uniqueid (exactly), `q` plays no beep
 *   nor name, `E` ends when that channel hangs up, `S` ends at once when it is already gone; no `w`
 *   or `B`: the supervisor is not heard.
 * - A meeting room (docs/meetingrooms.md) is the ConfBridge conference `svc-room:<room id>` with
 *   the bridge profile `svc-room-<room id>-bridge` (`max_members`: ConfBridge refuses one more
 *   participant, playing `conf-locked`) and the user profile `svc-room-<room id>-user`. Its PIN is
 *   set on the channel before `ConfBridge` (`CONFBRIDGE(user,template)` copies the room's profile
 *   into the channel's own, then `CONFBRIDGE(user,pin)`), and `ConfBridge` then names no user
 *   profile: a named one replaces the channel's own, and no PIN is asked (seen on Asterisk 22).
 *   ConfBridge asks it (`conf-getpin`, digits then `#`), three tries, then plays
 *   `conf-invalidpin` and hangs up. svc's invitation (`svc-room-invite`) names the profiles without
 *   setting a PIN.
 */
import { type AgentRecord, agents } from "../../store/agents.ts";
import { type ConferenceRecord, conferences } from "../../store/conferences.ts";
import {
  type CustomEndpointRecord,
  customEndpoints,
  type SccpEndpointRecord,
  sccpEndpoints,
  type SipEndpointRecord,
  sipEndpoints,
} from "../../store/endpoints.ts";
import { EXTEN_PATTERN, type ExtensionRecord, extensions } from "../../store/extensions.ts";
import { type LineRecord, lines } from "../../store/lines.ts";
import { type MeetingRecord, meetings } from "../../store/meetings.ts";
import { type QueueRecord, queues } from "../../store/queues.ts";
import { allOf } from "../../store/records.ts";
import type { Store } from "../../store/store.ts";
import { type UserRecord, users } from "../../store/users.ts";
import { type VoicemailRecord, voicemails } from "../../store/voicemails.ts";
import { type RoomConfig, roomConfigs } from "../rooms.ts";

/** The records the files are generated from. */
export interface ConfigSnapshot {
  users: readonly UserRecord[];
  lines: readonly LineRecord[];
  sipEndpoints: readonly SipEndpointRecord[];
  sccpEndpoints: readonly SccpEndpointRecord[];
  customEndpoints: readonly CustomEndpointRecord[];
  extensions: readonly ExtensionRecord[];
  queues: readonly QueueRecord[];
  agents: readonly AgentRecord[];
  voicemails: readonly VoicemailRecord[];
  conferences: readonly ConferenceRecord[];
  meetings: readonly MeetingRecord[];
}

/** svc's agent context: a queue member's interface rings the line's device through it. */
export const AGENT_CONTEXT = "svc-agent";

/**
 * The interface of a queue member on line `lineId` (AMI `QueueAdd`): a `Local/` channel into
 * {@link AGENT_CONTEXT}, so the member's penalty and wrap-up are the queue's.
 *
 * @example
 * agentMemberInterface(7); // "Local/7@svc-agent"
 */
export function agentMemberInterface(lineId: number): string {
  return `Local/${lineId}@${AGENT_CONTEXT}`;
}

/** svc's listening context: a supervisor's phone listens to an agent's channel from there. */
export const LISTEN_CONTEXT = "svc-listen";

/**
 * The extension of `[svc-trunk-in]` that rings line `lineId`'s phone for a supervisor listening
 * from another server (the agent's): no DND, forward nor call limit, no call of the tracker's.
 */
export const listenExten = (lineId: number) => `${LISTEN_EXTEN_PREFIX}${lineId}`;
export const LISTEN_EXTEN_PREFIX = "svclisten";

/** svc's invitation context: a user's phone svc calls into a room (`SVC_ROOM`) joins it there. */
export const ROOM_INVITE_CONTEXT = "svc-room-invite";

/**
 * Where one server's files go when svc drives several (docs/asterisk.md, "Several servers"): its
 * name, the main server's (lines placed nowhere else, queues and meeting rooms are there) and the
 * other servers, reached through trunks svc writes on both sides.
 */
export interface ServerPlacement {
  server: string;
  main: string;
  peers: readonly TrunkPeer[];
}

/** Another server as this one's trunk reaches it; `secret` is the trunk's (both sides hold it). */
export interface TrunkPeer {
  name: string;
  sipHost: string;
  sipPort: number;
  secret: string;
}

/** The PJSIP endpoint of the trunk toward server `name` (its auth and aor share the name). */
export const trunkName = (name: string) => `svc-trunk-${name}`;
/** The device of every trunk channel (`PJSIP/svc-trunk-<name>-…`). */
export const TRUNK_DEVICE = `PJSIP/${trunkName("")}`;

/** Where a call coming over a trunk from another server starts: each number served here. */
export const TRUNK_IN_CONTEXT = "svc-trunk-in";
/** The pre-dial handler of a call leaving over a trunk: it carries svc's call id along. */
export const TRUNK_OUT_CONTEXT = "svc-trunk-out";
/** The SIP header that carries the call's id (the caller's server's `Linkedid`) across. */
export const CALL_HEADER = "X-Svc-Call";
/**
 * The `UserEvent` a call arriving over a trunk sends first: its `Linkedid` here is the call whose
 * id (`Call`) the caller's server gave it.
 */
export const LINK_EVENT = "SvcLink";
/**
 * The SIP header that says a call over a trunk was placed by the other server on behalf of a
 * phone of this one (a queue's call to its agent, an invitation into a room): that server keeps
 * its history record, and the phone is rung directly (`svc-agent`).
 */
export const AGENT_HEADER = "X-Svc-Agent";
/** {@link AGENT_HEADER}'s value for a call whose caller is the phone (an invitation); 1: an agent. */
export const PLACED_FOR_CALLER = "caller";
/**
 * The SIP header of a queue's call to an agent of another server that a dial from queue placed on
 * the agent's behalf: the number dialled once the agent answers (what the agent's phone shows).
 */
export const DIALLED_HEADER = "X-Svc-Dialled";
/**
 * The `UserEvent` svc sends to a server when a party of a call there is established on another
 * server where nothing crosses the trunk to say so (`Call`: the call as the receiving server knows
 * it): the destination of a dial from queue answering the agent of another server (the connected
 * line changed at its ringing already), a room or a queue taking a caller over a trunk (both
 * answered it before).
 */
export const ESTABLISHED_EVENT = "SvcEstablished";
/**
 * The `UserEvent` a queue's call to an agent of another server sends from its trunk channel
 * (`Line`: the agent's line): that channel is the agent's phone, for the queue's server.
 */
export const AGENT_TRUNK_EVENT = "SvcAgentTrunk";

/** The generated files' contents. */
export interface AsteriskConfig {
  /** `pjsip_svc.conf` */
  pjsip: string;
  /** `extensions_svc.conf` */
  extensions: string;
  /** `queues_svc.conf` */
  queues: string;
  /** `voicemail_svc.conf` */
  voicemail: string;
  /** `confbridge_svc.conf` */
  confbridge: string;
}

/** The collections a snapshot reads: a write to any of them may change the files. */
export const SNAPSHOT_COLLECTIONS = [
  users,
  lines,
  sipEndpoints,
  sccpEndpoints,
  customEndpoints,
  extensions,
  queues,
  agents,
  voicemails,
] as const;

/** The collections of the meeting rooms, read beside those (ten version keys at most at once). */
export const ROOM_COLLECTIONS = [conferences, meetings] as const;

/**
 * Every record the files are generated from (each collection read once, cached against its
 * version key, all at one state of the version keys: `allOf`).
 *
 * @example
 * const files = asteriskConfig(await readConfigSnapshot(store));
 */
export async function readConfigSnapshot(store: Store): Promise<ConfigSnapshot> {
  const [
    userList,
    lineList,
    sipList,
    sccpList,
    customList,
    extensionList,
    queueList,
    agentList,
    voicemailList,
  ] = await allOf(store, SNAPSHOT_COLLECTIONS);
  const [conferenceList, meetingList] = await allOf(store, ROOM_COLLECTIONS);
  return {
    users: userList,
    lines: lineList,
    sipEndpoints: sipList,
    sccpEndpoints: sccpList,
    customEndpoints: customList,
    extensions: extensionList,
    queues: queueList,
    agents: agentList,
    voicemails: voicemailList,
    conferences: conferenceList,
    meetings: meetingList,
  };
}

/**
 * The three files for `snapshot`. Records that cannot be written safely are left out, each with a
 * comment naming its id (never a secret nor the offending value).
 *
 * @example
 * const { pjsip, extensions, queues } = asteriskConfig(await readConfigSnapshot(store));
 */
export function asteriskConfig(
  snapshot: ConfigSnapshot,
  placement?: ServerPlacement,
): AsteriskConfig {
  const model = new Model(snapshot, placement);
  return {
    pjsip: pjsipFile(model),
    extensions: extensionsFile(model),
    queues: queuesFile(model),
    voicemail: voicemailFile(model),
    confbridge: confbridgeFile(model),
  };
}

// ---- names and values

/** Contexts (section names and dialplan arguments): no `,` `;` `(` `)` `$` `/` `@` or spaces. */
const CONTEXT_NAME = /^[A-Za-z0-9_.-]{1,79}$/;
/** Section names `pbx_config` reads as settings, and the contexts this file defines itself. */
const RESERVED_CONTEXTS = new Set([
  "general",
  "globals",
  "svc-user",
  "svc-queue-out",
  "svc-queue-in",
  "svc-hold",
  "svc-wait",
  "svc-consult",
  "svc-conference",
  TRUNK_IN_CONTEXT,
  TRUNK_OUT_CONTEXT,
  LISTEN_CONTEXT,
  AGENT_CONTEXT,
  ROOM_INVITE_CONTEXT,
  // voicemail.conf's own sections
  "zonemessages",
  "aliases",
]);
/** PJSIP section names (confd's SIP usernames are a subset). */
const SECTION_NAME = /^[A-Za-z0-9_.+-]{1,80}$/;
/** Queue names; `general` is `queues.conf`'s settings section. */
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,128}$/;
/** `Tech/resource`: what `Dial` and a hint take, without `,` `;` `(` `)` `$` `{` `}` `\` or spaces. */
const INTERFACE = /^[A-Za-z0-9_]+\/[A-Za-z0-9_.\/@:#*+-]+$/;
/** PJSIP option names: lowercase letters, digits and `_` (`100rel`, `dtmf_mode`). */
const OPTION_NAME = /^[a-z0-9_]{1,64}$/;
/** A static SIP host: a name or an address, with an optional port. */
const HOST = /^[A-Za-z0-9.:\[\]-]{1,255}$/;

const usableContext = (name: string) =>
  CONTEXT_NAME.test(name) && !RESERVED_CONTEXTS.has(name.toLowerCase());

/** Control characters (a line break above all) end a config line: such a value is refused. */
// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x1f\x7f]/;

/** `value` as a config value (`;` escaped, see the module's notes), or null when unsafe. */
function configValue(value: string): string | null {
  if (CONTROL.test(value) || value.trim() === "") return null;
  return value.trim().replaceAll(";", "\\;");
}

const byId = <T extends { id: number }>(records: readonly T[]) =>
  [...records].sort((a, b) => a.id - b.id);

// ---- the records, cross-referenced

class Model {
  readonly users: Map<number, UserRecord>;
  readonly lines: Map<number, LineRecord>;
  readonly sip: Map<number, SipEndpointRecord>;
  readonly custom: Map<number, CustomEndpointRecord>;
  readonly extensions: Map<number, ExtensionRecord>;
  readonly voicemails: Map<number, VoicemailRecord>;
  /** The meeting rooms, conferences first, each in id order. */
  readonly rooms: RoomConfig[];

  constructor(readonly snapshot: ConfigSnapshot, readonly placement?: ServerPlacement) {
    const index = <T extends { id: number }>(records: readonly T[]) =>
      new Map(records.map((record) => [record.id, record]));
    this.users = index(snapshot.users);
    this.lines = index(snapshot.lines);
    this.sip = index(snapshot.sipEndpoints);
    this.custom = index(snapshot.customEndpoints);
    this.extensions = index(snapshot.extensions);
    this.voicemails = index(snapshot.voicemails);
    this.rooms = roomConfigs(
      byId(snapshot.conferences),
      snapshot.extensions,
      [...snapshot.meetings].sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
    );
  }

  /** The `<number>@<context>` of the user's enabled voicemail as a mailbox svc writes, or null. */
  mailboxOf(user: UserRecord | undefined): string | null {
    const voicemail = user?.voicemail_id == null
      ? undefined
      : this.voicemails.get(user.voicemail_id);
    return voicemail && usableMailbox(voicemail)
      ? `${voicemail.number}@${voicemail.context}`
      : null;
  }

  /**
   * The other server `line` is placed on, or null when it is this one's (always, with one server).
   * A line naming a server no longer listed is on the main one.
   */
  remoteServer(line: LineRecord): TrunkPeer | null {
    const placement = this.placement;
    if (!placement) return null;
    const name = line.registrar ?? placement.main;
    const peer = placement.peers.find((each) => each.name === name) ??
      placement.peers.find((each) => each.name === placement.main);
    return name === placement.server || !peer ? null : peer;
  }

  /** The main server as a trunk peer, null on the main server itself (or with one server). */
  mainPeer(): TrunkPeer | null {
    const placement = this.placement;
    return placement?.peers.find((peer) => peer.name === placement.main) ?? null;
  }

  /** The line's main user (`user_ids[0]`), if any. */
  mainUser(line: LineRecord): UserRecord | undefined {
    const id = line.user_ids[0];
    return id === undefined ? undefined : this.users.get(id);
  }

  /** The line's enabled extensions, in the line's order (the first names the phone). */
  enabledExtensions(line: LineRecord): ExtensionRecord[] {
    return line.extension_ids.map((id) => this.extensions.get(id))
      .filter((extension): extension is ExtensionRecord =>
        extension !== undefined && extension.enabled && extension.line_id === line.id
      );
  }

  /** The line `endpoint` serves, when both sides agree. */
  lineOf(type: "sip" | "sccp" | "custom", endpoint: { id: number; line_id: number | null }) {
    const line = endpoint.line_id === null ? undefined : this.lines.get(endpoint.line_id);
    return line?.endpoint?.type === type && line.endpoint.id === endpoint.id ? line : undefined;
  }

  /**
   * How Asterisk reaches the line's device (`PJSIP/<username>`, `SCCP/<line name>`, the custom
   * interface) and the name shown in `NoOp`; or why it cannot.
   */
  device(line: LineRecord): { iface: string; name: string } | { problem: string } {
    const endpoint = line.endpoint;
    if (!endpoint) return { problem: "its line has no endpoint" };
    if (endpoint.type === "sip") {
      const sip = this.sip.get(endpoint.id);
      if (!sip) return { problem: "its line's SIP endpoint is missing" };
      if (!SECTION_NAME.test(sip.username)) {
        return { problem: `the username of SIP endpoint ${sip.id} is not a valid name` };
      }
      return { iface: `PJSIP/${sip.username}`, name: sip.username };
    }
    if (endpoint.type === "sccp") {
      if (!SECTION_NAME.test(line.name)) return { problem: "its line's name is not a valid name" };
      return { iface: `SCCP/${line.name}`, name: line.name };
    }
    const custom = this.custom.get(endpoint.id);
    if (!custom) return { problem: "its line's custom endpoint is missing" };
    if (!custom.enabled) return { problem: `custom endpoint ${custom.id} is disabled` };
    if (!INTERFACE.test(custom.interface)) {
      return { problem: `the interface of custom endpoint ${custom.id} is not a valid interface` };
    }
    return { iface: custom.interface, name: custom.interface };
  }
}

function header(file: string, includer: string, module: string): string[] {
  return [
    `; ${file}: generated by svc from its configuration (/1.1). Do not edit: svc rewrites this`,
    `; file whenever that configuration changes, then reloads ${module}.`,
    `; ${includer} includes it once, at its end: #include <this directory>/${file}`,
  ];
}

const text = (out: string[]) => out.join("\n") + "\n";

// ---- pjsip_svc.conf

/** Options svc writes itself: the endpoint's own copies are left out. */
const SVC_OPTIONS = new Set(["type", "context", "aors", "auth", "callerid"]);

/**
 * Endpoint options `res_pjsip` knows (Asterisk 16 to 22); an option elsewhere would make
 * Asterisk refuse the endpoint.
 */
const ENDPOINT_OPTIONS = new Set(
  ("100rel accept_multiple_sdp_answers accountcode acl aggregate_mwi allow allow_overlap " +
    "allow_subscribe allow_transfer allow_unauthenticated_options asymmetric_rtp_codec " +
    "bind_rtp_to_media_address bundle call_group callerid_privacy callerid_tag " +
    "codec_prefs_incoming_answer codec_prefs_incoming_offer codec_prefs_outgoing_answer " +
    "codec_prefs_outgoing_offer connected_line_method contact_acl contact_deny contact_permit " +
    "contact_user cos_audio cos_video deny device_state_busy_at direct_media " +
    "direct_media_glare_mitigation direct_media_method disable_direct_media_on_nat disallow " +
    "dtls_auto_generate_cert dtls_ca_file dtls_ca_path dtls_cert_file dtls_cipher " +
    "dtls_fingerprint dtls_private_key dtls_rekey dtls_setup dtls_verify dtmf_mode fax_detect " +
    "fax_detect_timeout follow_early_media_fork force_avp force_rport from_domain from_user " +
    "g726_non_standard geoloc_incoming_call_profile geoloc_outgoing_call_profile ice_support " +
    "identify_by ignore_183_without_sdp inband_progress incoming_call_offer_pref " +
    "incoming_mwi_mailbox language mailboxes max_audio_streams max_video_streams media_address " +
    "media_encryption media_encryption_optimistic media_use_received_transport message_context " +
    "moh_passthrough moh_suggest mwi_from_user mwi_subscribe_replaces_unsolicited " +
    "named_call_group named_pickup_group notify_early_inuse_ringing one_touch_recording " +
    "outbound_auth outbound_proxy outgoing_call_offer_pref overlap_context permit pickup_group " +
    "preferred_codec_only record_off_feature record_on_feature redirect_method " +
    "refer_blind_progress rewrite_contact rpid_immediate rtcp_mux rtp_engine rtp_ipv6 " +
    "rtp_keepalive rtp_symmetric rtp_timeout rtp_timeout_hold sdp_owner sdp_session " +
    "security_mechanisms security_negotiation send_aoc send_connected_line send_diversion " +
    "send_history_info send_pai send_rpid set_var srtp_tag_32 stir_shaken stir_shaken_profile " +
    "sub_min_expiry subscribe_context suppress_moh_on_sendonly suppress_q850_reason_headers " +
    "t38_bind_udptl_to_media_address t38_udptl t38_udptl_ec t38_udptl_ipv6 " +
    "t38_udptl_maxdatagram t38_udptl_nat tenantid timers timers_min_se timers_sess_expires " +
    "tone_zone tos_audio tos_video transport trust_connected_line trust_id_inbound " +
    "trust_id_outbound use_avpf use_ptime user_eq_phone voicemail_extension webrtc").split(" "),
);

/** Options of the AOR (registrations) rather than the endpoint: they go to the `aor` section. */
const AOR_OPTIONS = new Set(
  ("authenticate_qualify contact default_expiration max_contacts maximum_expiration " +
    "minimum_expiration qualify_frequency qualify_timeout remove_existing remove_unavailable " +
    "support_path").split(" "),
);

/**
 * What the recorded configuration's endpoint template set (less its addresses and transport),
 * unless the endpoint's options set it: codecs (an endpoint without any cannot take a call; `!all`
 * first clears whatever a template gave, in one line, so an `allow` option replaces it whole and a
 * `disallow` option, written after it, still removes from it), media through Asterisk, and the
 * usual settings for phones behind NAT.
 */
const ENDPOINT_DEFAULTS: [string, string][] = [
  ["allow", "!all,ulaw,alaw"],
  ["direct_media", "no"],
  ["rtp_symmetric", "yes"],
  ["force_rport", "yes"],
  ["rewrite_contact", "yes"],
];

/** One contact per phone, the newest registration winning; qualified as recorded. */
const AOR_DEFAULTS: [string, string][] = [
  ["max_contacts", "1"],
  ["remove_existing", "yes"],
  ["qualify_frequency", "30"],
];

function pjsipFile(model: Model): string {
  const out = header("pjsip_svc.conf", "pjsip.conf", "res_pjsip.so");
  for (const endpoint of byId(model.snapshot.sipEndpoints)) {
    const line = model.lineOf("sip", endpoint);
    const remote = line && model.remoteServer(line);
    if (remote) {
      out.push("", `; SIP endpoint ${endpoint.id} is on server ${remote.name}`);
    } else if (model.placement && endpoint.username.startsWith(trunkName(""))) {
      out.push("", `; SIP endpoint ${endpoint.id} left out: its username is a trunk's name`);
    } else {
      out.push("", ...sipSections(model, endpoint));
    }
  }
  for (const peer of model.placement?.peers ?? []) {
    out.push("", ...trunkSections(model.placement!.server, peer));
  }
  return text(out);
}

/**
 * The trunk toward `peer`: each server authenticates to the other with the user named after
 * itself (`from_user`, so the other finds the endpoint by it), the caller id going as
 * P-Asserted-Identity; calls coming in start in {@link TRUNK_IN_CONTEXT}.
 */
function trunkSections(server: string, peer: TrunkPeer): string[] {
  const name = trunkName(peer.name);
  return [
    `; trunk to server ${peer.name}`,
    `[${name}]`,
    "type = endpoint",
    `context = ${TRUNK_IN_CONTEXT}`,
    `aors = ${name}`,
    `auth = ${name}-in`,
    `outbound_auth = ${name}-out`,
    `from_user = ${trunkName(server)}`,
    "allow = !all,ulaw,alaw",
    "direct_media = no",
    "send_pai = yes",
    "trust_id_inbound = yes",
    "trust_id_outbound = yes",
    "",
    `[${name}-in]`,
    "type = auth",
    "auth_type = userpass",
    `username = ${name}`,
    `password = ${peer.secret}`,
    "",
    `[${name}-out]`,
    "type = auth",
    "auth_type = userpass",
    `username = ${trunkName(server)}`,
    `password = ${peer.secret}`,
    "",
    `[${name}]`,
    "type = aor",
    `contact = sip:${
      peer.sipHost.includes(":") && !peer.sipHost.startsWith("[")
        ? `[${peer.sipHost}]`
        : peer.sipHost
    }:${peer.sipPort}`,
    "qualify_frequency = 0",
  ];
}

/** A number served by another server: dialled over the trunk, svc's call id in a header. */
function trunkEntry(exten: string, what: string, peer: TrunkPeer): string[] {
  return [
    `exten => ${exten},1,NoOp(${what} on server ${peer.name})`,
    ` same => n,Dial(PJSIP/\${EXTEN}@${trunkName(peer.name)},,b(${TRUNK_OUT_CONTEXT}^s^1))`,
    " same => n,Hangup()",
  ];
}

/**
 * A number served here, reached from another server: the call's id told, then its context; a
 * call that server placed on behalf of the phone of line `lineId` (${AGENT_HEADER}) rings it
 * directly, as on one server (no DND, forward nor call limit).
 */
function trunkInEntry(exten: string, context: string, lineId?: number): string[] {
  return [
    `exten => ${exten},1,Set(__SVC_CALL=\${PJSIP_HEADER(read,${CALL_HEADER})})`,
    ` same => n,Set(SVC_AGENT=\${PJSIP_HEADER(read,${AGENT_HEADER})})`,
    ` same => n,Set(SVC_DIALLED=\${PJSIP_HEADER(read,${DIALLED_HEADER})})`,
    ` same => n,UserEvent(${LINK_EVENT},Call: \${SVC_CALL},Agent: \${SVC_AGENT},Dialled: \${SVC_DIALLED})`,
    ...(lineId === undefined
      ? []
      : [` same => n,GotoIf($["\${SVC_AGENT}" != ""]?${AGENT_CONTEXT},${lineId},1)`]),
    ` same => n,Goto(${context},\${EXTEN},1)`,
  ];
}

/** The contexts a dialplan of several servers adds (see {@link TRUNK_OUT_CONTEXT}). */
function trunkContexts(trunkIn: string[][]): string[] {
  return [
    "",
    `; ${TRUNK_OUT_CONTEXT}: a call leaving over a trunk carries svc's call id (${CALL_HEADER}):`,
    ";   the id it came with from another server, else its own Linkedid; a queue's call to an",
    `;   agent (arguments \`agent\`, its line) says so (${AGENT_HEADER}, ${AGENT_TRUNK_EVENT}), and what`,
    `;   a dial from queue then dials (${DIALLED_HEADER}, SVC_DIALLED).`,
    `[${TRUNK_OUT_CONTEXT}]`,
    `exten => s,1,Set(PJSIP_HEADER(add,${CALL_HEADER})=\${IF($["\${SVC_CALL}" = ""]?\${CHANNEL(linkedid)}:\${SVC_CALL})})`,
    ` same => n,GotoIf($["\${ARG1}" != "agent"]?done)`,
    ` same => n,Set(PJSIP_HEADER(add,${AGENT_HEADER})=1)`,
    ` same => n,UserEvent(${AGENT_TRUNK_EVENT},Line: \${ARG2})`,
    ` same => n,GotoIf($["\${SVC_DIALLED}" = ""]?done)`,
    ` same => n,Set(PJSIP_HEADER(add,${DIALLED_HEADER})=\${SVC_DIALLED})`,
    " same => n(done),Return()",
    "",
    `; ${TRUNK_IN_CONTEXT}: a call from another server (its trunk): the numbers served here.`,
    `[${TRUNK_IN_CONTEXT}]`,
    ...trunkIn.flatMap((entry, i) => i ? ["", ...entry] : entry),
  ];
}

/** The endpoint, auth and aor sections of one SIP endpoint, or the comment leaving it out. */
function sipSections(model: Model, endpoint: SipEndpointRecord): string[] {
  const skipped = (why: string) => [`; SIP endpoint ${endpoint.id} left out: ${why}`];
  const line = model.lineOf("sip", endpoint);
  if (!line) return skipped("it is on no line");
  const name = endpoint.username;
  if (!SECTION_NAME.test(name)) return skipped("its username is not a valid section name");
  if (!usableContext(line.context)) {
    return skipped(`the context of line ${line.id} is not a usable context name`);
  }
  const password = configValue(endpoint.secret);
  if (password === null) return skipped("its secret cannot be written in a config file");

  const user = model.mainUser(line);
  const notes: string[] = [];
  const endpointOptions: [string, string][] = [];
  const aorOptions: [string, string][] = [];
  endpoint.options.forEach(([option, value], i) => {
    if (!OPTION_NAME.test(option)) {
      return notes.push(`; option ${i + 1} left out: not a valid option name`);
    }
    if (SVC_OPTIONS.has(option)) return notes.push(`; option ${option} left out: svc sets it`);
    const target = AOR_OPTIONS.has(option)
      ? aorOptions
      : ENDPOINT_OPTIONS.has(option)
      ? endpointOptions
      : null;
    if (!target) return notes.push(`; option ${option} left out: not a PJSIP endpoint option`);
    const written = configValue(value);
    if (written === null) {
      return notes.push(`; option ${option} left out: its value is empty or holds a line break`);
    }
    target.push([option, written]);
  });
  const given = new Set(endpointOptions.map(([option]) => option));
  const defaults = ENDPOINT_DEFAULTS.filter(([option]) => !given.has(option));

  const callerId = callerIdOf(model, line, user);
  if (callerId === null) notes.push("; callerid left out: it holds a line break");
  const aorGiven = new Set(aorOptions.map(([option]) => option));
  const staticHost = endpoint.host !== "dynamic" && !aorGiven.has("contact");
  if (staticHost && !HOST.test(endpoint.host)) notes.push("; host left out: not a valid host");
  const contact: [string, string][] = staticHost && HOST.test(endpoint.host)
    ? [["contact", `sip:${name}@${endpoint.host}`]]
    : [];

  const pairs = (list: [string, string][]) => list.map(([key, value]) => `${key} = ${value}`);
  return [
    `; SIP endpoint ${endpoint.id}, line ${line.id}` + (user ? `, user ${user.id}` : ""),
    `[${name}]`,
    "type = endpoint",
    `context = ${line.context}`,
    `aors = ${name}`,
    `auth = ${name}`,
    ...(callerId ? [`callerid = ${callerId}`] : []),
    ...pairs([...defaults, ...endpointOptions]),
    ...notes,
    "",
    `[${name}]`,
    "type = auth",
    "auth_type = userpass",
    `username = ${name}`,
    `password = ${password}`,
    "",
    `[${name}]`,
    "type = aor",
    ...pairs([
      ...AOR_DEFAULTS.filter(([option]) => !aorGiven.has(option)),
      ...contact,
      ...aorOptions,
    ]),
  ];
}

/**
 * The line's caller id, `"Name" <number>`: the line's `caller_id_name`/`caller_id_num` when set,
 * else the main user's `caller_id` (stored as `"Firstname Lastname"`, perhaps with `<number>`),
 * else the user's names; the number else the line's first enabled extension. "" when there is
 * nothing to show; null when a part holds a line break.
 */
function callerIdOf(model: Model, line: LineRecord, user: UserRecord | undefined): string | null {
  const stored = parseCallerId(user?.caller_id ?? "");
  const names = [user?.firstname, user?.lastname].filter(Boolean).join(" ");
  const name = line.caller_id_name || stored.name || names;
  const firstExten = model.enabledExtensions(line)[0]?.exten;
  const fallback = firstExten && !firstExten.startsWith("_") ? firstExten : "";
  const number = line.caller_id_num || stored.number || fallback;
  if (CONTROL.test(name) || CONTROL.test(number)) return null;
  // quotes and angle brackets would end the name or the number early; `\` escapes in callerids
  const cleanName = name.replace(/["<>\\]/g, "").trim().replaceAll(";", "\\;");
  const cleanNumber = number.replace(/[^0-9*#+]/g, "");
  return [cleanName && `"${cleanName}"`, cleanNumber && `<${cleanNumber}>`]
    .filter(Boolean).join(" ");
}

/** `"Name" <number>`, `"Name"`, `Name <number>` or `Name`, as users enter a caller id. */
function parseCallerId(raw: string): { name: string; number: string } {
  const match = /^\s*(?:"([^"]*)"|([^<]*?))\s*(?:<([^>]*)>)?\s*$/.exec(raw);
  if (!match) return { name: raw.trim(), number: "" };
  return { name: (match[1] ?? match[2] ?? "").trim(), number: (match[3] ?? "").trim() };
}

// ---- extensions_svc.conf

/**
 * The subroutine every user extension runs, as in the recorded dialplan, with the AstDB key, ring
 * time and call limit as arguments instead of the endpoint name and globals.
 */
const SVC_USER = [
  "; svc-user: rings one line, honouring the DND and forwards svc keeps in AstDB family svc.",
  ";   ARG1 interface to ring, ARG2 ring seconds, ARG3 AstDB key (the line's main user id, or",
  ";   none), ARG4 context forwards are dialled in, ARG5 the user's simultaneous calls. Keys:",
  ";   dnd/<ARG3> = 1 (busy, no ringing); fwd_unc/<ARG3> (at once), fwd_busy/<ARG3> (DIALSTATUS",
  ";   BUSY, or ARG5 calls already ringing or up on the user's legs, group <ARG3>@svcuser),",
  ";   fwd_rna/<ARG3> (NOANSWER) = the number to forward to. A call forwarded more than 5 times",
  ";   is refused (busy), as the simulated PBX does: __SVC_HOPS follows the call's legs and counts",
  ";   the forwards. SVC_CALLERID, set by svc on a dial from queue, is the caller id shown (the",
  ";   queue's, not that of the agent who answered). Entered with the dialled extension, so CDR",
  ";   Destination is the number; the pattern matches every extension confd allows (_X. would",
  ";   miss one-character ones and *, #, +). ARG6, when given, is the user's voicemail box",
  ";   (<number>@<context>): a call not answered and not forwarded is left there (VoiceMail,",
  ";   option s: the beep, then the message), unless svc's consultation dials (SVC_NOVM).",
  "[svc-user]",
  "exten => _[0-9*#+]!,1,NoOp(svc-user ${ARG1})",
  " same => n,ExecIf($[${LEN(${SVC_CALLERID})} > 0]?Set(CALLERID(all)=${SVC_CALLERID}))",
  ' same => n,GotoIf($["${DB(svc/dnd/${ARG3})}" = "1"]?dnd)',
  " same => n,Set(FWD=${DB(svc/fwd_unc/${ARG3})})",
  ' same => n,GotoIf($["${FWD}" != ""]?forward)',
  // a line without user has no call limit: `none` is no user's group
  ' same => n,GotoIf($["${ARG3}" = "none"]?ring)',
  " same => n,GotoIf($[${GROUP_COUNT(${ARG3}@svcuser)} >= ${ARG5}]?busy)",
  " same => n,Set(OUTBOUND_GROUP_ONCE=${ARG3}@svcuser)",
  " same => n(ring),Dial(${ARG1},${ARG2})",
  ' same => n,GotoIf($["${DIALSTATUS}" = "BUSY"]?busy)',
  ' same => n,GotoIf($["${DIALSTATUS}" = "NOANSWER"]?noanswer)',
  " same => n,Return()",
  " same => n(busy),Set(FWD=${DB(svc/fwd_busy/${ARG3})})",
  ' same => n,GotoIf($["${FWD}" != ""]?forward)',
  " same => n,Busy(3)",
  " same => n,Return()",
  " same => n(noanswer),Set(FWD=${DB(svc/fwd_rna/${ARG3})})",
  ' same => n,GotoIf($["${FWD}" != ""]?forward)',
  // VoiceMail on a line of its own: its Newexten tells svc the voicemail answered
  " same => n,GotoIf($[${LEN(${ARG6})} = 0 | 0${SVC_NOVM} = 1]?missed)",
  " same => n,VoiceMail(${ARG6},s)",
  " same => n(missed),Return()",
  " same => n(dnd),NoOp(${ARG3} is on DND)",
  " same => n,Busy(3)",
  " same => n,Return()",
  // `0${SVC_HOPS}` is 0 while unset; only digits, * # + of the stored number are dialled
  " same => n(forward),Set(__SVC_HOPS=$[0${SVC_HOPS} + 1])",
  " same => n,GotoIf($[${SVC_HOPS} > 5]?loop)",
  " same => n,Set(FWD=${FILTER(0-9*#+,${FWD})})",
  " same => n,NoOp(forward ${ARG3} -> ${FWD})",
  " same => n,Dial(Local/${FWD}@${ARG4},30)",
  " same => n,Return()",
  " same => n(loop),NoOp(forward ${ARG3} refused: more than 5 forwards)",
  " same => n,Busy(3)",
  " same => n,Return()",
];

/**
 * Where svc's call control parks channels (docs/asterisk.md, "Call control"): svc moves them there
 * with `Redirect` and back together with `Bridge`.
 */
const CALL_CONTROL = [
  "; svc-hold: a party svc holds hears music (the channel's class, else default) until svc",
  ";   bridges it back.",
  "[svc-hold]",
  "exten => s,1,MusicOnHold()",
  " same => n,Hangup()",
  "",
  "; svc-wait: the party that holds waits; silence is sent, so no RTP timeout ends its call.",
  "[svc-wait]",
  "exten => s,1,Playtones(0)",
  " same => n,Wait(86400)",
  " same => n,Hangup()",
  "",
  "; svc-consult: an attended transfer's consultation, dialled from the initiator's own channel",
  ";   in SVC_CONSULT_CONTEXT, for SVC_CONSULT_TIMEOUT seconds (empty: as long as it rings);",
  ";   then it waits (g), for svc to bridge it back with the transferred party. The recipient's",
  ";   voicemail never answers it (SVC_NOVM, inherited): not answered, the transfer is undone.",
  "[svc-consult]",
  "exten => _[0-9*#+]!,1,Set(__SVC_NOVM=1)",
  " same => n,Dial(Local/${EXTEN}@${SVC_CONSULT_CONTEXT},${SVC_CONSULT_TIMEOUT},g)",
  " same => n,Wait(86400)",
  " same => n,Hangup()",
  "",
  "; svc-conference: an ad-hoc conference, the ConfBridge named SVC_CONFERENCE; its host",
  ";   (SVC_CONF_MARKED=1) ends it for every member (SVC_CONF_MARKED=0) when it leaves.",
  "[svc-conference]",
  'exten => s,1,ExecIf($["${SVC_CONF_MARKED}" = "1"]?Set(CONFBRIDGE(user,marked)=yes))',
  ' same => n,ExecIf($["${SVC_CONF_MARKED}" = "0"]?Set(CONFBRIDGE(user,end_marked)=yes))',
  " same => n,ConfBridge(${SVC_CONFERENCE})",
  " same => n,Hangup()",
  "",
  `; ${ROOM_INVITE_CONTEXT}: a user's phone svc calls into the meeting room SVC_ROOM (its id):`,
  ";   it joins without being asked the room's PIN.",
  `[${ROOM_INVITE_CONTEXT}]`,
  "exten => s,1,NoOp(svc invites into room ${SVC_ROOM})",
  " same => n,ConfBridge(svc-room:${SVC_ROOM},svc-room-${SVC_ROOM}-bridge,svc-room-${SVC_ROOM}-user)",
  " same => n,Hangup()",
  "",
  `; ${LISTEN_CONTEXT}: a supervisor's phone (originated here) listens to the channel whose`,
  ";   uniqueid is SVC_SPY: both sides of its call, without being heard, until either hangs up.",
  `[${LISTEN_CONTEXT}]`,
  "exten => s,1,NoOp(svc listens to ${SVC_SPY})",
  " same => n,ChanSpy(${SVC_SPY},qESu)",
  " same => n,Hangup()",
];

/** A user's call limit (`simultaneous_calls`, confd allows 1 to 20); 5 for a line without user. */
function callLimit(user: UserRecord | undefined): number {
  const limit = user?.simultaneous_calls;
  return limit !== undefined && Number.isInteger(limit) && limit >= 1 ? limit : 5;
}

/** `Queue(<name>,r,,,30)`: ringing (not music) while waiting, 30 s at most, as the simulator. */
const queueApp = (name: string) => `Queue(${name},r,,,30)`;

function extensionsFile(model: Model): string {
  const out = header("extensions_svc.conf", "extensions.conf", "pbx_config.so");
  const notes: string[] = [];
  const contexts = new Map<string, string[][]>();
  /** The numbers served here that other servers reach (several servers only). */
  const trunkIn: string[][] = [];
  const mainPeer = model.mainPeer();
  const add = (context: string, entry: string[]) => {
    const entries = contexts.get(context);
    if (entries) entries.push(entry);
    else contexts.set(context, [entry]);
  };

  for (const extension of byId(model.snapshot.extensions)) {
    const line = extension.line_id === null ? undefined : model.lines.get(extension.line_id);
    // a free number, a disabled one or one its line does not hold rings nothing
    if (!extension.enabled || !line || !model.enabledExtensions(line).includes(extension)) {
      continue;
    }
    const skip = (why: string) => notes.push(`; extension ${extension.id} left out: ${why}`);
    if (!EXTEN_PATTERN.test(extension.exten)) {
      skip("not a valid extension");
      continue;
    }
    if (!usableContext(extension.context)) {
      skip("its context is not a usable context name");
      continue;
    }
    if (!usableContext(line.context)) {
      skip(`the context of line ${line.id} is not a usable context name`);
      continue;
    }
    const device = model.device(line);
    if ("problem" in device) {
      skip(device.problem);
      continue;
    }
    const remote = model.remoteServer(line);
    if (remote) {
      add(extension.context, trunkEntry(extension.exten, `call to ${device.name}`, remote));
      continue;
    }
    if (model.placement) trunkIn.push(trunkInEntry(extension.exten, extension.context, line.id));
    const user = model.mainUser(line);
    const ring = user && Number.isInteger(user.ring_seconds) && user.ring_seconds >= 0
      ? user.ring_seconds
      : 30;
    const exten = extension.exten;
    const mailbox = model.mailboxOf(user);
    const args = [
      device.iface,
      ring,
      user?.id ?? "none",
      line.context,
      callLimit(user),
      ...(mailbox ? [mailbox] : []),
    ].join(",");
    add(extension.context, [
      // a hint names one extension: a pattern gets none
      ...(exten.startsWith("_") ? [] : [`exten => ${exten},hint,${device.iface}`]),
      `exten => ${exten},1,NoOp(call to ${device.name})`,
      ` same => n,Gosub(svc-user,\${EXTEN},1(${args}))`,
      " same => n,Hangup()",
    ]);
  }

  const queueList = byId(model.snapshot.queues);
  const usableQueues = queueList.filter((queue) => {
    if (QUEUE_NAME.test(queue.name) && queue.name.toLowerCase() !== "general") return true;
    notes.push(`; queue ${queue.id} left out: its name is not a usable queue name`);
    return false;
  });
  for (const queue of usableQueues) {
    if (queue.number === null) continue;
    if (!/^\d{1,40}$/.test(queue.number)) {
      notes.push(`; queue ${queue.id}'s number left out: not a valid extension`);
      continue;
    }
    if (!usableContext(queue.context)) {
      notes.push(`; queue ${queue.id}'s number left out: its context is not a usable context name`);
      continue;
    }
    if (mainPeer) {
      add(queue.context, trunkEntry(queue.number, `queue ${queue.name}`, mainPeer));
      continue;
    }
    if (model.placement) trunkIn.push(trunkInEntry(queue.number, queue.context));
    add(queue.context, [
      `exten => ${queue.number},1,NoOp(queue ${queue.name})`,
      " same => n,Answer()",
      ` same => n,${queueApp(queue.name)}`,
      " same => n,Hangup()",
    ]);
  }

  for (const room of usableRooms(model, notes)) {
    if (mainPeer) {
      add(room.context, trunkEntry(room.number, `room ${room.id}`, mainPeer));
      continue;
    }
    if (model.placement) trunkIn.push(trunkInEntry(room.number, room.context));
    add(room.context, roomEntry(room));
  }

  const phoneLines = byId(model.snapshot.lines).flatMap((line) => {
    const device = model.device(line);
    return "problem" in device ? [] : [{ line, device }];
  });
  for (const { line, device } of phoneLines) {
    if (!model.placement || model.remoteServer(line)) continue;
    trunkIn.push([
      `exten => ${listenExten(line.id)},1,NoOp(a supervisor of another server on line ${line.id})`,
      ` same => n,Dial(${device.iface})`,
      " same => n,Hangup()",
    ]);
  }

  if (notes.length) out.push("", ...notes);
  for (const context of [...contexts.keys()].sort()) {
    out.push("", `[${context}]`);
    contexts.get(context)!.forEach((entry, i) => out.push(...(i ? ["", ...entry] : entry)));
  }
  out.push("", ...SVC_USER, "", ...CALL_CONTROL);
  out.push(
    "",
    `; ${AGENT_CONTEXT}: a queue call to an agent, through the member's interface`,
    `;   Local/<line id>@${AGENT_CONTEXT}: rings the line's device as long as the queue's timeout`,
    ";   says, without DND, forwards or call limit.",
    `[${AGENT_CONTEXT}]`,
  );
  phoneLines.forEach(({ line, device }, i) => {
    // an agent's line on another server: rung over the trunk, at its first extension
    const remote = model.remoteServer(line);
    const exten = remote && model.enabledExtensions(line)[0]?.exten;
    const overTrunk = remote && exten ? `PJSIP/${exten}@${trunkName(remote.name)}` : null;
    out.push(
      ...(i ? [""] : []),
      `exten => ${line.id},1,NoOp(agent on line ${line.id})`,
      overTrunk
        ? ` same => n,Dial(${overTrunk},,b(${TRUNK_OUT_CONTEXT}^s^1(agent^${line.id})))`
        : ` same => n,Dial(${device.iface})`,
      " same => n,Hangup()",
    );
  });
  out.push(
    "",
    "; svc-queue-out: a call placed by a queue on an agent's behalf, agent first. Originate",
    ";   Channel=Local/<queue id>@svc-queue-out, Context=<queue context>, Exten=<destination>:",
    ";   the ;2 half waits in the queue (not answered) until an agent answers.",
    "[svc-queue-out]",
  );
  const localQueues = mainPeer ? [] : usableQueues;
  localQueues.forEach((queue, i) =>
    out.push(
      ...(i ? [""] : []),
      `exten => ${queue.id},1,NoOp(dial from queue ${queue.name})`,
      ` same => n,${queueApp(queue.name)}`,
      " same => n,Hangup()",
    )
  );
  out.push(
    "",
    "; svc-queue-in: a destination called first, then put in a queue. Originate",
    ";   Channel=Local/<destination>@<queue context>, Context=svc-queue-in, Exten=<queue id>.",
    "[svc-queue-in]",
  );
  localQueues.forEach((queue, i) =>
    out.push(
      ...(i ? [""] : []),
      `exten => ${queue.id},1,NoOp(queue ${queue.name})`,
      ` same => n,${queueApp(queue.name)}`,
      " same => n,Hangup()",
    )
  );
  if (model.placement) out.push(...trunkContexts(trunkIn));
  return text(out);
}

// ---- the meeting rooms: extensions_svc.conf and confbridge_svc.conf

/** A room id as it goes into a profile's name and the invitation's `SVC_ROOM`. */
const ROOM_ID = /^(?:conference-\d+|meeting-[0-9a-f-]{36})$/;
/** A music on hold class name. */
const MOH_CLASS = /^[A-Za-z0-9_-]{1,80}$/;

/** The rooms svc writes (those left out noted), each with a number that is an extension. */
function usableRooms(model: Model, notes: string[]): (RoomConfig & { number: string })[] {
  return model.rooms.flatMap((room) => {
    const skip = (why: string) => (notes.push(`; room ${room.id} left out: ${why}`), []);
    if (!ROOM_ID.test(room.id)) return skip("its id is not a usable name");
    if (room.number === null) return [];
    if (!EXTEN_PATTERN.test(room.number)) return skip("its number is not a valid extension");
    if (!usableContext(room.context)) return skip("its context is not a usable context name");
    if (room.pin !== null && !/^\d{1,80}$/.test(room.pin)) return skip("its PIN is not digits");
    return [{ ...room, number: room.number }];
  });
}

/** The profiles' names of a room (see the module's notes). */
const bridgeProfile = (room: RoomConfig) => `svc-room-${room.id}-bridge`;
const userProfile = (room: RoomConfig) => `svc-room-${room.id}-user`;

/** The extension of a room: answered, its PIN set on the channel, then its ConfBridge. */
function roomEntry(room: RoomConfig & { number: string }): string[] {
  return [
    `exten => ${room.number},1,NoOp(svc room ${room.id})`,
    " same => n,Answer()",
    ...(room.pin === null ? [] : [
      ` same => n,Set(CONFBRIDGE(user,template)=${userProfile(room)})`,
      ` same => n,Set(CONFBRIDGE(user,pin)=${room.pin})`,
    ]),
    // with a PIN, no user profile named: a named one would replace the channel's (seen live)
    ` same => n,ConfBridge(svc-room:${room.id},${bridgeProfile(room)}${
      room.pin === null ? `,${userProfile(room)}` : ""
    })`,
    " same => n,Hangup()",
  ];
}

const yesNo = (value: boolean) => value ? "yes" : "no";

/**
 * The bridge and user profiles of every room (one with no number too: svc's invitation reaches
 * it): its size limit and recording, what its participants hear, talk detection on (svc follows
 * who talks, `ConfbridgeTalking`).
 */
function confbridgeFile(model: Model): string {
  const out = header("confbridge_svc.conf", "confbridge.conf", "app_confbridge.so");
  // with several servers the rooms are the main server's
  for (const room of model.mainPeer() ? [] : model.rooms) {
    if (!ROOM_ID.test(room.id)) continue; // noted in extensions_svc.conf
    const music = room.music !== null && MOH_CLASS.test(room.music) ? room.music : null;
    out.push(
      "",
      `; room ${room.id} (${room.type}${room.number ? `, ${room.number}@${room.context}` : ""})`,
      `[${bridgeProfile(room)}]`,
      "type = bridge",
      ...(room.maxUsers > 0 ? [`max_members = ${room.maxUsers}`] : []),
      `record_conference = ${yesNo(room.record)}`,
      "",
      `[${userProfile(room)}]`,
      "type = user",
      `quiet = ${yesNo(room.quiet)}`,
      `announce_user_count = ${yesNo(room.announceUserCount)}`,
      `announce_only_user = ${yesNo(room.announceOnlyUser)}`,
      "music_on_hold_when_empty = yes",
      ...(music ? [`music_on_hold_class = ${music}`] : []),
      "talk_detection_events = yes",
    );
  }
  return text(out);
}

// ---- voicemail_svc.conf

/** A mailbox number (`VoiceMail`'s `<number>@<context>`): digits, `*`, `#`, `+`. */
const MAILBOX_NUMBER = /^[0-9*#+]{1,40}$/;

/** Whether svc writes `voicemail`'s mailbox (enabled, a usable number and context). */
function usableMailbox(voicemail: VoicemailRecord): boolean {
  return voicemail.enabled && MAILBOX_NUMBER.test(voicemail.number) &&
    usableContext(voicemail.context);
}

/**
 * A field of a mailbox line: "" when absent; null when it cannot be written (`,` and `|` separate
 * fields and options, `;` starts a comment, a line break ends the line).
 */
function mailboxField(value: string | null): string | null {
  if (value === null) return "";
  return /[,|;]/.test(value) || CONTROL.test(value) ? null : value.trim();
}

/** Each context's mailboxes: `<number> => <password>,<name>,<email>,<pager>,<options>`. */
function voicemailFile(model: Model): string {
  const out = header("voicemail_svc.conf", "voicemail.conf", "app_voicemail.so");
  const notes: string[] = [];
  const contexts = new Map<string, string[]>();
  for (const voicemail of byId(model.snapshot.voicemails)) {
    const skip = (why: string) => notes.push(`; voicemail ${voicemail.id} left out: ${why}`);
    if (!voicemail.enabled) continue;
    if (!MAILBOX_NUMBER.test(voicemail.number)) {
      skip("its number is not a valid mailbox number");
      continue;
    }
    if (!usableContext(voicemail.context)) {
      skip("its context is not a usable context name");
      continue;
    }
    const [password, name, email, pager, language] = [
      voicemail.password,
      voicemail.name,
      voicemail.email,
      voicemail.pager,
      voicemail.language,
    ].map(mailboxField);
    if ([password, name, email, pager].includes(null)) {
      skip("a password, name, email or pager holds , | ; or a line break");
      continue;
    }
    const options = [
      `attach=${voicemail.attach_audio ? "yes" : "no"}`,
      `delete=${voicemail.delete_messages ? "yes" : "no"}`,
      ...(language ? [`language=${language}`] : []),
      ...(voicemail.max_messages !== null && Number.isInteger(voicemail.max_messages) &&
          voicemail.max_messages > 0
        ? [`maxmsg=${voicemail.max_messages}`]
        : []),
    ].join("|");
    const entry = `${voicemail.number} => ${[password, name, email, pager, options].join(",")}`;
    const entries = contexts.get(voicemail.context);
    if (entries) entries.push(entry);
    else contexts.set(voicemail.context, [entry]);
  }
  if (notes.length) out.push("", ...notes);
  for (const context of [...contexts.keys()].sort()) {
    out.push("", `[${context}]`, ...contexts.get(context)!);
  }
  return text(out);
}

// ---- queues_svc.conf

function queuesFile(model: Model): string {
  const out = header("queues_svc.conf", "queues.conf", "app_queue.so");
  // with several servers the queues are the main server's
  for (const queue of model.mainPeer() ? [] : byId(model.snapshot.queues)) {
    out.push("");
    if (!QUEUE_NAME.test(queue.name) || queue.name.toLowerCase() === "general") {
      out.push(`; queue ${queue.id} left out: its name is not a usable queue name`);
      continue;
    }
    const wrapup = Number.isInteger(queue.wrapup_seconds) && queue.wrapup_seconds >= 0
      ? queue.wrapup_seconds
      : 0;
    out.push(
      `; queue ${queue.id}: members are added at run time (AMI QueueAdd), none here`,
      `[${queue.name}]`,
      "strategy = ringall",
      "timeout = 15",
      "retry = 1",
      `wrapuptime = ${wrapup}`,
      "ringinuse = no",
      "joinempty = yes",
      "leavewhenempty = no",
      "autopause = no",
      "announce-frequency = 0",
      "periodic-announce-frequency = 0",
      "announce-position = no",
    );
  }
  return text(out);
}

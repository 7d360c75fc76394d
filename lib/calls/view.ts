/**
 * A party of a call as the call daemon's clients read it (wazo-calld's call object, docs/calls.md):
 * the same for `/1.0/calls`, `/1.0/users/me/calls` and the answer of a dial there.
 */
import * as z from "zod";
import type { LiveCall } from "../platform/call_control.ts";
import type { Store } from "../store/store.ts";
import { getUser } from "../store/users.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
export const CALL = z.lazy(() =>
  z.object({
    call_id: z.string().meta({
      description: "The leg's uniqueId (the uniqueId of its PhoneEvents)",
    }),
    conversation_id: z.string().meta({ description: "The call's linkedId, shared by its legs" }),
    user_uuid: z.string().nullable(),
    status: z.enum(["Ringing", "Up"]),
    bridges: z.array(z.string()).meta({ description: "The ad-hoc conference it is in, if any" }),
    talking_to: z.record(z.string(), z.string().nullable()).meta({
      description: "call_id → user_uuid of the parties it hears (null: no user's)",
    }),
    creation_time: z.string(),
    answer_time: z.string().nullable(),
    hangup_time: z.null(),
    caller_id_name: z.string().meta({ description: "This party's own name" }),
    caller_id_number: z.string().meta({ description: "This party's own number" }),
    peer_caller_id_name: z.string(),
    peer_caller_id_number: z.string(),
    on_hold: z.boolean(),
    muted: z.boolean(),
    record_state: z.enum(["inactive", "active", "paused"]),
    is_caller: z.boolean(),
    is_video: z.boolean(),
    dialed_extension: z.string(),
    sip_call_id: z.null(),
    line_id: z.number().int().nullable(),
    direction: z.enum(["internal", "inbound", "outbound"]),
    parked: z.boolean(),
  })
);

export type CallView = z.infer<typeof CALL>;

const iso = (ms: number) => new Date(ms).toISOString();

/** The uuids of the users of `calls` (and of the parties they hear), by user id. */
export async function userUuids(store: Store, calls: LiveCall[]): Promise<Map<number, string>> {
  const ids = new Set(calls.flatMap((call) => call.userId === null ? [] : [call.userId]));
  const found = await Promise.all([...ids].map((id) => getUser(store, id)));
  return new Map(found.flatMap((user) => user ? [[user.id, user.uuid]] : []));
}

/**
 * `call` as the call daemon shows it; `all` are the parties of the calls now (for `talking_to`),
 * `uuids` their users' uuids.
 */
export function callView(call: LiveCall, all: LiveCall[], uuids: Map<number, string>): CallView {
  const uuidOf = (userId: number | null) => userId === null ? null : uuids.get(userId) ?? null;
  const byId = new Map(all.map((party) => [party.callId, party]));
  return {
    call_id: call.callId,
    conversation_id: call.linkedId,
    user_uuid: uuidOf(call.userId),
    status: call.state === "ringing" ? "Ringing" : "Up",
    bridges: call.conferenceId === null ? [] : [call.conferenceId],
    talking_to: Object.fromEntries(
      call.talkingTo.map((id) => [id, uuidOf(byId.get(id)?.userId ?? null)]),
    ),
    creation_time: iso(call.createdMs),
    answer_time: call.answeredMs === null ? null : iso(call.answeredMs),
    hangup_time: null,
    caller_id_name: call.name,
    caller_id_number: call.number,
    peer_caller_id_name: call.peerName,
    peer_caller_id_number: call.peerNumber,
    on_hold: call.onHold,
    muted: call.muted,
    record_state: call.record,
    is_caller: call.isCaller,
    is_video: false,
    dialed_extension: call.dialled,
    sip_call_id: null,
    line_id: call.lineId,
    direction: call.direction,
    parked: false,
  };
}

/** Every party of `calls` as the call daemon shows them. */
export async function callViews(store: Store, calls: LiveCall[]): Promise<CallView[]> {
  const uuids = await userUuids(store, calls);
  return calls.map((call) => callView(call, calls, uuids));
}

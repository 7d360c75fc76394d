/**
 * A user's own calls (docs/calls.md), as the call daemon's `/1.0/users/me/…` routes and the CTI
 * channel's commands act on them: a user acts only on the parties of its own phones, transfers its
 * own peer to a number dialled in its main line's context, and hosts its own conferences.
 * Refusals are `PlatformRefusal`s, the platform's reasons plus `not_yours` (another user's party,
 * transfer or conference) and `no_line` (no main line to dial from).
 */
import type { Conference, LiveCall, Transfer, TransferFlow } from "../platform/call_control.ts";
import { type Platform, PlatformRefusal } from "../platform/port.ts";
import { mainLine } from "../store/lines.ts";
import type { Store } from "../store/store.ts";
import type { UserRecord } from "../store/users.ts";

/** The parties of the calls now on `userId`'s phones, oldest first. */
export async function callsOf(platform: Platform, userId: number): Promise<LiveCall[]> {
  return (await platform.liveCalls()).filter((call) => call.userId === userId);
}

/** The party `callId` of any call now; `no_call` when there is none. */
export async function liveCall(platform: Platform, callId: string): Promise<LiveCall> {
  const call = (await platform.liveCalls()).find((call) => call.callId === callId);
  if (!call) throw new PlatformRefusal("no_call", `no call ${callId}`);
  return call;
}

/** The user's own party `callId`: `no_call` when there is none, `not_yours` for another's. */
export async function ownCall(platform: Platform, userId: number, callId: string) {
  const call = await liveCall(platform, callId);
  if (call.userId !== userId) throw notYours(`call ${callId}`);
  return call;
}

const notYours = (what: string) => new PlatformRefusal("not_yours", `${what} is another user's`);

/** The context the user dials in: its main line's; `no_line` when it has none. */
export async function userContext(store: Store, user: UserRecord): Promise<string> {
  const line = await mainLine(store, user);
  if (!line) throw new PlatformRefusal("no_line", `user ${user.username ?? user.id} has no line`);
  return line.context;
}

/**
 * The user transfers the peer of its party `initiatorCallId` to `exten`, dialled in its main
 * line's context.
 */
export async function transferPeer(
  platform: Platform,
  store: Store,
  user: UserRecord,
  request: { initiatorCallId: string; exten: string; flow: TransferFlow; timeoutMs: number | null },
): Promise<Transfer> {
  const initiator = await ownCall(platform, user.id, request.initiatorCallId);
  if (initiator.peerCallId === null) {
    throw new PlatformRefusal("not_talking", `call ${initiator.callId} talks with nobody`);
  }
  return await platform.startTransfer({
    ...request,
    transferredCallId: initiator.peerCallId,
    context: await userContext(store, user),
  });
}

/** The transfer `id` in progress: `no_transfer` when there is none. */
export async function transferOf(platform: Platform, id: string): Promise<Transfer> {
  const transfer = (await platform.transfers()).find((transfer) => transfer.id === id);
  if (!transfer) throw new PlatformRefusal("no_transfer", `no transfer ${id}`);
  return transfer;
}

/** The user's own transfer `id`: `no_transfer`, or `not_yours` for another user's. */
export async function ownTransfer(platform: Platform, userId: number, id: string) {
  const transfer = await transferOf(platform, id);
  if (transfer.initiatorUserId !== userId) throw notYours(`transfer ${id}`);
  return transfer;
}

/** The user's own conference `id`: `no_conference`, for another user's too (it is not shown). */
export async function ownConference(
  platform: Platform,
  userId: number,
  id: string,
): Promise<Conference> {
  const conference = (await platform.conferences()).find((conference) => conference.id === id);
  if (!conference || conference.hostUserId !== userId) {
    throw new PlatformRefusal("no_conference", `no conference ${id}`);
  }
  return conference;
}

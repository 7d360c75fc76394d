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

/** Where a party stands for a command that names none: up and heard, on hold, or ringing. */
export type CallState = "talking" | "held" | "ringing";

const stateOf = (call: LiveCall): CallState =>
  call.state === "ringing" ? "ringing" : call.onHold ? "held" : "talking";

/**
 * The user's own party `callId` when one is named (`no_call`, `not_yours`), else its current
 * call: its oldest party in the first state of `prefer` that it has one in; `no_call` when none.
 *
 * @example
 * await userCall(platform, user.id, undefined, ["talking", "held"]); // what `hold` acts on
 */
export async function userCall(
  platform: Platform,
  userId: number,
  callId: string | undefined,
  prefer: readonly CallState[],
): Promise<LiveCall> {
  if (callId !== undefined) return await ownCall(platform, userId, callId);
  return currentCall(await callsOf(platform, userId), prefer);
}

/** The oldest of `calls` in the first state of `prefer` that one is in; `no_call` when none. */
function currentCall(calls: LiveCall[], prefer: readonly CallState[]): LiveCall {
  for (const state of prefer) {
    const call = calls.find((call) => stateOf(call) === state);
    if (call) return call;
  }
  const states = prefer.length > 1
    ? `${prefer.slice(0, -1).join(", ")} or ${prefer.at(-1)}`
    : prefer.join("");
  throw new PlatformRefusal("no_call", `no ${states} call`);
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

/** The transfers in progress that `userId` started. */
export async function transfersOf(platform: Platform, userId: number): Promise<Transfer[]> {
  return (await platform.transfers()).filter((transfer) => transfer.initiatorUserId === userId);
}

/** The user's transfer in progress (its oldest); `no_transfer` when it has none. */
export async function userTransfer(platform: Platform, userId: number): Promise<Transfer> {
  const [transfer] = await transfersOf(platform, userId);
  if (!transfer) throw new PlatformRefusal("no_transfer", "no transfer in progress");
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

/**
 * The user's own member party of the conference `id`, hosted by anyone; `no_conference` when the
 * user has none in it (or there is no such conference).
 */
export async function ownMember(platform: Platform, userId: number, id: string): Promise<LiveCall> {
  const member = (await callsOf(platform, userId)).find((call) => call.conferenceId === id);
  if (!member) throw new PlatformRefusal("no_conference", `no conference ${id}`);
  return member;
}

/**
 * What the user merges into a conference without naming the parties: during a transfer, its
 * initiator's party hosts the transferred and recipient parties; otherwise the user's current call
 * (talking, else held) hosts the peers of all of the user's calls. `no_call` when the user has no
 * call to host one.
 */
export async function conferenceParties(
  platform: Platform,
  userId: number,
): Promise<{ host: string; participants: string[] }> {
  const [transfer] = await transfersOf(platform, userId);
  if (transfer) {
    const { initiatorCallId: host, transferredCallId, recipientCallId } = transfer;
    return { host, participants: [transferredCallId, recipientCallId].filter((id) => id !== null) };
  }
  const calls = await callsOf(platform, userId);
  const host = currentCall(calls, ["talking", "held"]).callId;
  const peers = calls.map((call) => call.peerCallId).filter((id) => id !== null);
  return { host, participants: [...new Set(peers)] };
}

/**
 * Chat between users, xuc's "flash text" (docs/cti.md, "Chat"): `cti.js`'s
 * `sendFlashTextMessage(to, seq, message)` sends `flashTextBrowserRequest` with the request
 * `FlashTextDirectMessage`.
 *
 * - A message is stored for its recipient (lib/store/chat_messages.ts) before the sender's
 *   acknowledgement; a refusal (`FlashTextSendMessageNack`, with a reason) stores nothing.
 * - It goes live to every socket of the recipient, in whichever process sharing the store holds
 *   them, as a CTI notice; a process that gave it to at least one socket marks it delivered.
 * - A message still undelivered when a socket of the recipient opens is given to that socket: it
 *   is claimed atomically, so of several sockets opening at once only one gets it.
 * - A socket is never given the same message twice: each remembers the messages it was given, for
 *   the race of a message given at its open while its live notice was on the way.
 */
import * as z from "zod";
import { ctiCommand, type CtiCommandContext, type CtiFamily } from "../cti/command_set.ts";
import { type CtiSession, ownNumber } from "../cti/hub.ts";
import { userConfigOf } from "../cti/messages.ts";
import { ApiError } from "../errors.ts";
import type { CtiNotice } from "../events/messages.ts";
import type { Services } from "../services.ts";
import {
  addChatMessage,
  CHAT_BACKLOG,
  type ChatParty,
  claimChatMessages,
  deliverChatMessage,
} from "../store/chat_messages.ts";
import { isConnected } from "../store/connections.ts";
import { findUserByUsername, type UserRecord } from "../store/users.ts";
import { FLASH_TEXT_EVENT, type NackReason, sendAck, sendNack, userMessage } from "./messages.ts";

/** The longest message, in characters (Unicode code points). */
export const MAX_CHAT_MESSAGE = 4_000;

/**
 * The ids of the messages each socket was given, the latest {@link REMEMBERED} at most: enough to
 * cover a whole backlog given at its open and what comes live meanwhile.
 */
const given = new WeakMap<CtiSession, Set<number>>();
const REMEMBERED = 2 * CHAT_BACKLOG;

/** Sends `text` (message `id`) to `session` unless it was given it already; true if sent. */
function give(session: CtiSession, id: number, text: string): boolean {
  let ids = given.get(session);
  if (!ids) given.set(session, ids = new Set());
  if (session.closed || ids.has(id)) return false;
  ids.add(id);
  if (ids.size > REMEMBERED) ids.delete(ids.values().next().value!);
  session.sendText(text);
  return true;
}

const party = (user: UserRecord, phoneNumber: string | null): ChatParty => ({
  username: user.username ?? "",
  phoneNumber: phoneNumber ?? "",
  displayName: userConfigOf(user).fullName,
  guid: user.uuid,
});

/** The fields of `flashTextBrowserRequest`: all but `request` are checked as it runs. */
const requestFields = () =>
  z.object({
    request: z.string(),
    sequence: z.unknown().optional(),
    to: z.unknown().optional(),
    message: z.unknown().optional(),
  });

type RequestFields = z.infer<ReturnType<typeof requestFields>>;

async function runRequest(c: CtiCommandContext, fields: RequestFields): Promise<void> {
  switch (fields.request) {
    case "FlashTextDirectMessage":
      return await sendMessage(c, fields);
    case "FlashTextMarkAsRead":
      return; // nothing to mark: each message is given once
    case "FlashTextDirectMessageHistory":
      throw new ApiError(400, "NotSupported", "svc keeps no chat history: a message is given once");
    default:
      throw new ApiError(400, "BadRequest", `unknown request ${JSON.stringify(fields.request)}`);
  }
}

/**
 * `FlashTextDirectMessage`: stores the message for its recipient, then sends it live and
 * acknowledges it; without an integer `sequence` there is nothing to acknowledge: an `Error`.
 */
async function sendMessage(c: CtiCommandContext, fields: RequestFields): Promise<void> {
  const { services, session, user } = c;
  const { sequence, to, message } = fields;
  if (typeof sequence !== "number" || !Number.isSafeInteger(sequence)) {
    throw new ApiError(400, "BadRequest", "field sequence: an integer is expected");
  }
  const now = services.clock.now();
  const refuse = (reason: NackReason) => c.reply(sendNack(sequence, reason, now));
  const username = typeof to === "object" && to !== null && "username" in to ? to.username : null;
  if (typeof username !== "string" || typeof message !== "string") return refuse("BadRequest");
  if (message.trim() === "") return refuse("EmptyMessage");
  if (message.length > MAX_CHAT_MESSAGE && [...message].length > MAX_CHAT_MESSAGE) {
    return refuse("MessageTooLong");
  }
  if (username === user.username) return refuse("ToSelf");
  const recipient = await findUserByUsername(services.store, username);
  if (!recipient) return refuse("UserNotFound");
  const online = services.cti.count(username) > 0 ||
    await isConnected(services.store, recipient.id, now);
  const record = await addChatMessage(services.store, recipient.id, {
    from: party(user, session.user.phoneNumber),
    to: party(recipient, await ownNumber(services, recipient.line_ids)),
    sequence,
    message,
  }, now);
  if (!record) return refuse("RecipientBacklogFull");
  await services.events.notify([{ username, notice: true, message: userMessage(record) }]);
  c.reply(sendAck(sequence, !online, now));
}

/** At a socket's open: the messages that waited for its user, oldest first. */
async function giveWaiting(c: Omit<CtiCommandContext, "authorize">): Promise<void> {
  const { services, session, user } = c;
  for (let more = true; more && !session.closed;) {
    const claimed = await claimChatMessages(services.store, user.id, services.clock.now());
    for (const record of claimed.messages) {
      give(session, record.id, JSON.stringify(userMessage(record)));
    }
    more = claimed.more;
  }
}

/** A message live to this process's sockets of its recipient; delivered once one was given it. */
function giveLive(services: Services, sessions: ReadonlySet<CtiSession>, notice: CtiNotice) {
  const { id } = notice.message.ctiMessage as { id: number };
  const text = JSON.stringify(notice.message);
  let userId: number | null = null;
  for (const session of sessions) {
    if (give(session, id, text)) userId = session.user.id;
  }
  if (userId === null) return;
  deliverChatMessage(services.store, userId, id).catch((error) => {
    // it stays waiting: the user's next socket is given it again
    services.logger.warn("chat message not marked delivered", { id, error: String(error) });
  });
}

/** The chat's command, greeting and live messages (lib/cti/command_set.ts). */
export const chat: CtiFamily = {
  commands: {
    flashTextBrowserRequest: ctiCommand({
      fields: requestFields,
      acl: "svc.cti.chat.{username}.create",
      run: runRequest,
    }),
  },
  greet: giveWaiting,
  notices: { [FLASH_TEXT_EVENT]: giveLive },
};

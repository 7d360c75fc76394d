/**
 * What the chat sends on the CTI socket (docs/cti.md, "Chat"): xuc's `FlashTextEvent` messages,
 * each telling its kind in `event`, in the shapes of xuc's FlashText API documentation.
 */
import type { CtiMessage } from "../cti/messages.ts";
import type { ChatMessageRecord } from "../store/chat_messages.ts";

export const FLASH_TEXT_EVENT = "FlashTextEvent";

/** Why a message was refused (the `reason` of `FlashTextSendMessageNack`). */
export type NackReason =
  | "BadRequest"
  | "EmptyMessage"
  | "MessageTooLong"
  | "ToSelf"
  | "UserNotFound"
  | "RecipientBacklogFull";

const iso = (ms: number) => new Date(ms).toISOString();

/** A message to its recipient (live, or at the open of a socket while it waited). */
export const userMessage = (record: ChatMessageRecord): CtiMessage => ({
  msgType: FLASH_TEXT_EVENT,
  ctiMessage: {
    event: "FlashTextUserMessage",
    id: record.id,
    from: record.from,
    to: record.to,
    sequence: record.sequence,
    message: record.message,
    date: iso(record.date),
  },
});

/**
 * The sender's acknowledgement: the message is stored; `offline` when the recipient was not
 * connected (it waits for their next socket).
 */
export const sendAck = (sequence: number, offline: boolean, now: number): CtiMessage => ({
  msgType: FLASH_TEXT_EVENT,
  ctiMessage: {
    event: offline ? "FlashTextSendMessageAckOffline" : "FlashTextSendMessageAck",
    sequence,
    offline,
    date: iso(now),
  },
});

/** The sender's refusal: nothing was stored nor sent. */
export const sendNack = (sequence: number, reason: NackReason, now: number): CtiMessage => ({
  msgType: FLASH_TEXT_EVENT,
  ctiMessage: { event: "FlashTextSendMessageNack", sequence, reason, date: iso(now) },
});

/**
 * Screen pops (docs/cti.md, "Screen pops"): when a user's phone rings for a call (its
 * `EventRinging`), the user's CTI sockets get a `Sheet` telling who calls (number and name), the
 * contact svc knows for that number (a user of svc, else one of the called user's personal
 * contacts), the queue the call came through, the variables attached to the call (`USR_…`), and
 * the administrator's URL (`SVC_SHEET_URL`) filled with them.
 *
 * The message has both shapes xuc's clients read: flat fields (a page reading `popupUrl` and the
 * caller), and xuc's `payload.profile.user.sheetInfo`, a list of `{name, value}` (its CC Agent
 * opens `popupUrl` + `folderNumber` when the call carries a `folderNumber` variable, as XiVO's
 * sheets do).
 */
import type { CoreServices } from "../core_services.ts";
import type { CtiNotice } from "../events/messages.ts";
import { sanitizeNumber } from "../phone_numbers.ts";
import type { PhoneEvent } from "../platform/port.ts";
import { listContacts } from "../store/contacts.ts";
import { findExtension } from "../store/extensions.ts";
import { getLine } from "../store/lines.ts";
import { getQueue } from "../store/queues.ts";
import { getUser, type UserRecord } from "../store/users.ts";

/** The contact svc knows for the caller's number. */
export interface SheetContact {
  /** `users`: a user of svc; `personal`: one of the called user's personal contacts. */
  source: "users" | "personal";
  /** The user's id, or the contact's. */
  id: string;
  name: string;
  firstname: string;
  lastname: string;
  company: string;
  email: string;
  number: string;
  mobile: string;
}

/** The `ctiMessage` of a `Sheet`. */
export interface Sheet {
  /** When the phone rang (seconds since the epoch, as XiVO's sheets tell it). */
  timenow: number;
  compressed: false;
  serial: "json";
  /** The ringing leg's `uniqueId` (XiVO names its channel here). */
  channel: string;
  linkedId: string;
  uniqueId: string;
  callerNumber: string;
  callerName: string;
  /** The ringing phone's number (`DN`). */
  calledNumber: string;
  contact: SheetContact | null;
  queue: { id: number; name: string; displayName: string; number: string } | null;
  /** The call's variables, `USR_<key>` as its phone events carry them. */
  variables: Record<string, string>;
  /** `SVC_SHEET_URL` filled; "" without one. */
  popupUrl: string;
  payload: { profile: { user: { sheetInfo: { name: string; value: string }[] } } };
}

/** The screen pop of `event` (an `EventRinging`) for its user. */
export async function sheetOf(
  services: Pick<CoreServices, "store" | "config" | "clock">,
  event: PhoneEvent,
): Promise<Sheet> {
  const { store } = services;
  const user = await getUser(store, event.userId);
  const contact = await contactOf(store, user, event.otherDN);
  const queueRecord = event.queueId === undefined ? null : await getQueue(store, event.queueId);
  const queue = queueRecord && {
    id: queueRecord.id,
    name: queueRecord.name,
    displayName: queueRecord.display_name ?? queueRecord.name,
    number: queueRecord.number ?? "",
  };
  const variables = Object.fromEntries(
    Object.entries(event.userData).filter(([key]) => key.startsWith("USR_")),
  );
  const fields: Record<string, string> = {
    callerNumber: event.otherDN,
    callerName: event.otherDName || contact?.name || "",
    calledNumber: event.DN,
    username: event.username,
    contactName: contact?.name ?? "",
    contactSource: contact?.source ?? "",
    queueName: queue?.name ?? "",
    queueNumber: queue?.number ?? "",
    linkedId: event.linkedId,
    ...variables,
  };
  const popupUrl = fillUrl(services.config.sheetUrl ?? "", fields);
  const folderNumber = variables.USR_folderNumber;
  const sheetInfo = Object.entries({
    ...fields,
    popupUrl,
    ...(folderNumber !== undefined && { folderNumber }),
  }).map(([name, value]) => ({ name, value }));
  return {
    timenow: Math.floor(services.clock.now() / 1000),
    compressed: false,
    serial: "json",
    channel: event.uniqueId,
    linkedId: event.linkedId,
    uniqueId: event.uniqueId,
    callerNumber: event.otherDN,
    callerName: fields.callerName!,
    calledNumber: event.DN,
    contact,
    queue,
    variables,
    popupUrl,
    payload: { profile: { user: { sheetInfo } } },
  };
}

/**
 * `template` with each `{name}` replaced by that field, URL-encoded; an unknown name by "". xuc's
 * own placeholders, `{xuc-token}` and `{xuc-username}`, are left for xuc's clients to fill.
 */
export function fillUrl(template: string, fields: Record<string, string>): string {
  return template.replace(/\{([A-Za-z0-9_-]+)\}/g, (whole, name: string) => {
    if (name.startsWith("xuc-")) return whole;
    return encodeURIComponent(fields[name] ?? "");
  });
}

/**
 * The contact of `number` for the called `user`: the user of svc whose line answers it in the
 * called user's context, else the first of the user's personal contacts with that number (or
 * mobile), sanitized alike.
 */
async function contactOf(
  store: CoreServices["store"],
  user: UserRecord | null,
  number: string,
): Promise<SheetContact | null> {
  if (!number) return null;
  const lineId = user?.line_ids[0];
  const line = lineId === undefined ? null : await getLine(store, lineId);
  const extension = await findExtension(store, number, line?.context ?? "default");
  const holder = extension?.line_id == null ? null : await getLine(store, extension.line_id);
  const colleagueId = holder?.user_ids[0];
  const colleague = colleagueId === undefined ? null : await getUser(store, colleagueId);
  if (colleague) {
    return {
      source: "users",
      id: String(colleague.id),
      name: [colleague.firstname, colleague.lastname].filter(Boolean).join(" "),
      firstname: colleague.firstname,
      lastname: colleague.lastname ?? "",
      company: "",
      email: colleague.email ?? "",
      number,
      mobile: colleague.mobile_phone_number ?? "",
    };
  }
  if (!user) return null;
  const wanted = sanitizeNumber(number);
  const found = (await listContacts(store, user.id)).find((contact) =>
    [contact.number, contact.mobile].some((one) => one && sanitizeNumber(one) === wanted)
  );
  if (!found) return null;
  return {
    source: "personal",
    id: found.id,
    name: [found.firstname, found.lastname].filter(Boolean).join(" ") || found.company,
    firstname: found.firstname,
    lastname: found.lastname,
    company: found.company,
    email: found.email,
    number: found.number,
    mobile: found.mobile,
  };
}

/**
 * The `Sheet` notices of `events`: one per `EventRinging`, to its user's sockets, each written once
 * whatever the number of times the event is handed over (its id).
 */
export async function sheetNotices(
  services: Pick<CoreServices, "store" | "config" | "clock">,
  events: readonly PhoneEvent[],
): Promise<{ id: string | undefined; notice: CtiNotice }[]> {
  const notices = [];
  for (const event of events) {
    if (event.eventType !== "EventRinging" || !event.username) continue;
    notices.push({
      id: event.id === undefined ? undefined : `${event.id}:sheet`,
      notice: {
        username: event.username,
        notice: true as const,
        message: { msgType: "Sheet", ctiMessage: await sheetOf(services, event) },
      },
    });
  }
  return notices;
}

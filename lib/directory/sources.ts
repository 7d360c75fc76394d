/**
 * What the directory holds (docs/cti.md, "Directory and favourites"): the contacts of its three
 * sources, and the search over them.
 *
 * - `internal`: every user, named by its id: its name, its number (the first extension of its
 *   main line, as `LoggedOn` gives it), its other extensions, its mobile number and e-mail.
 * - `personal`: the asking user's own personal contacts (lib/store/contacts.ts), named by their
 *   UUID; nobody else's are ever found.
 * - `queue`: every queue with a number, named by its id, so that an agent finds where to transfer
 *   a caller by the queue's name.
 *
 * The shared sources are built once from the configuration records and kept until one of their
 * collections changes (`allOf` answers the same lists while none did); a user's personal contacts
 * are kept as long as `currentContacts` answers the same list.
 */
import { type ContactRecord, currentContacts, getContact } from "../store/contacts.ts";
import { type ExtensionRecord, extensions } from "../store/extensions.ts";
import { type LineRecord, lines } from "../store/lines.ts";
import { type QueueRecord, queues } from "../store/queues.ts";
import { allOf } from "../store/records.ts";
import type { Store } from "../store/store.ts";
import { type UserRecord, users } from "../store/users.ts";

export const SOURCES = ["internal", "personal", "queue"] as const;
export type Source = typeof SOURCES[number];

/** One contact of the directory. */
export interface DirectoryContact {
  source: Source;
  /** Its id in its source (`contact_id`): a user's or a queue's id, a personal contact's UUID. */
  id: string;
  name: string;
  /** The number its status is read for; "" when none. */
  number: string;
  mobile: string;
  /** Its other numbers (a user's other extensions), ", " between them. */
  otherNumber: string;
  email: string;
  /** A personal contact's own favourite flag; null for the others (lib/store/favorites.ts). */
  favorite: boolean | null;
  /** Every field a term is looked for in, folded ({@link fold}), one a line. */
  text: string;
}

/** Lower case, accents dropped: "Émile" and "emile" are found alike. */
export const fold = (text: string): string =>
  text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

const searchText = (fields: (string | null)[]) => fold(fields.filter((field) => field).join("\n"));

/** The key of a contact among the others: its source and id. */
export const contactKey = (source: string, id: string) => `${source}\u0000${id}`;

/** The shared sources' contacts, and the configuration lists they were built from. */
interface Shared {
  lists: readonly unknown[];
  contacts: DirectoryContact[];
  byKey: Map<string, DirectoryContact>;
}

const sharedCache = new WeakMap<Store, Shared>();

/**
 * The contacts of the shared sources (`internal`, `queue`), by source and id; treat them as
 * read-only. One read of the collections' version keys while nothing changed.
 */
export async function sharedContacts(store: Store): Promise<Shared> {
  const lists = await allOf(store, [users, lines, extensions, queues]);
  const cached = sharedCache.get(store);
  if (cached && cached.lists.every((list, i) => list === lists[i])) return cached;
  const [userList, lineList, extensionList, queueList] = lists;
  const contacts = [
    ...userContacts(userList, lineList, extensionList),
    ...queueList.flatMap(queueContact),
  ];
  const shared = {
    lists,
    contacts,
    byKey: new Map(contacts.map((contact) => [contactKey(contact.source, contact.id), contact])),
  };
  sharedCache.set(store, shared);
  return shared;
}

function userContacts(
  userList: readonly UserRecord[],
  lineList: readonly LineRecord[],
  extensionList: readonly ExtensionRecord[],
): DirectoryContact[] {
  const lineById = new Map(lineList.map((line) => [line.id, line]));
  const extenById = new Map(extensionList.map((extension) => [extension.id, extension.exten]));
  return userList.map((user) => {
    // the first extension of the main line first, as `LoggedOn` names the user's number
    const numbers = [
      ...new Set(
        user.line_ids.flatMap((id) => lineById.get(id)?.extension_ids ?? [])
          .map((id) => extenById.get(id))
          .filter((exten): exten is string => exten !== undefined),
      ),
    ];
    const mainLine = user.line_ids.length ? lineById.get(user.line_ids[0]!) : undefined;
    const mainExtension = mainLine?.extension_ids[0];
    const number = (mainExtension === undefined ? undefined : extenById.get(mainExtension)) ?? "";
    const others = numbers.filter((exten) => exten !== number);
    const name = [user.firstname, user.lastname].filter((part) => part).join(" ");
    return {
      source: "internal",
      id: String(user.id),
      name,
      number,
      mobile: user.mobile_phone_number ?? "",
      otherNumber: others.join(", "),
      email: user.email ?? "",
      favorite: null,
      text: searchText([name, number, ...others, user.mobile_phone_number, user.email]),
    };
  });
}

function queueContact(queue: QueueRecord): DirectoryContact[] {
  if (queue.number === null) return [];
  const name = queue.display_name || queue.name;
  return [{
    source: "queue",
    id: String(queue.id),
    name,
    number: queue.number,
    mobile: "",
    otherNumber: "",
    email: "",
    favorite: null,
    text: searchText([name, queue.name, queue.number]),
  }];
}

/** A personal contact as the directory shows it. */
function personalContact(contact: ContactRecord): DirectoryContact {
  const fullName = [contact.firstname, contact.lastname].filter((part) => part).join(" ");
  return {
    source: "personal",
    id: contact.id,
    name: fullName || contact.company || contact.number || contact.mobile || contact.email,
    number: contact.number,
    mobile: contact.mobile,
    otherNumber: "",
    email: contact.email,
    favorite: contact.favorite,
    text: searchText([
      fullName,
      contact.company,
      contact.number,
      contact.mobile,
      contact.fax,
      contact.email,
    ]),
  };
}

const personalCache = new WeakMap<readonly ContactRecord[], DirectoryContact[]>();

/** `userId`'s personal contacts, as the directory shows them; treat them as read-only. */
export async function personalContacts(store: Store, userId: number): Promise<DirectoryContact[]> {
  const records = await currentContacts(store, userId);
  let contacts = personalCache.get(records);
  if (!contacts) personalCache.set(records, contacts = records.map(personalContact));
  return contacts;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The contact `id` of `source` as `userId` may see it, or null: a personal contact is only ever
 * the user's own.
 */
export async function findContact(
  store: Store,
  userId: number,
  source: Source,
  id: string,
): Promise<DirectoryContact | null> {
  if (source === "personal") {
    if (!UUID.test(id)) return null;
    const contact = await getContact(store, userId, id.toLowerCase());
    return contact && personalContact(contact);
  }
  return (await sharedContacts(store)).byKey.get(contactKey(source, id)) ?? null;
}

/**
 * The contacts `userId` finds with `term`: those holding every word of it (folded) in one of
 * their fields, by name, at most `max`.
 */
export async function search(
  store: Store,
  userId: number,
  term: string,
  max: number,
): Promise<DirectoryContact[]> {
  const words = fold(term).split(/\s+/).filter((word) => word);
  const found = (contact: DirectoryContact) => words.every((word) => contact.text.includes(word));
  const [shared, personal] = await Promise.all([
    sharedContacts(store),
    personalContacts(store, userId),
  ]);
  return [...shared.contacts.filter(found), ...personal.filter(found)]
    .sort(byName)
    .slice(0, max);
}

const collator = new Intl.Collator("en", { sensitivity: "base", numeric: true });

/** By name, then source and id: the same contacts always come in the same order. */
export const byName = (a: DirectoryContact, b: DirectoryContact): number =>
  collator.compare(a.name, b.name) || collator.compare(a.source, b.source) ||
  collator.compare(a.id, b.id);

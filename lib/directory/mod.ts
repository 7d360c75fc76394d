/**
 * The directory and favourites on the CTI socket (docs/cti.md, "Directory and favourites"): the
 * commands `directoryLookUp`, `getFavorites`, `addFavorite` and `removeFavorite` of xuc's `cti.js`,
 * answered `DirectoryResult`, `Favorites` and `FavoriteUpdated`. The same on both platforms: only
 * the entries' statuses come from the PBX, through the platform port.
 */
import * as z from "zod";
import { ctiCommand, type CtiCommandContext, type CtiFamily } from "../cti/command_set.ts";
import type { CtiMessage } from "../cti/messages.ts";
import { ApiError } from "../errors.ts";
import type { PhoneStatus } from "../platform/port.ts";
import { watchedStatuses } from "../presence/hints.ts";
import { updateContact } from "../store/contacts.ts";
import {
  addFavorite,
  deleteFavorites,
  type FavoriteRef,
  listFavorites,
  removeFavorite,
} from "../store/favorites.ts";
import { queues } from "../store/queues.ts";
import { users } from "../store/users.ts";
import {
  directoryEntry,
  directoryResult,
  type FavoriteAction,
  favorites,
  favoriteUpdated,
} from "./messages.ts";
import {
  byName,
  contactKey,
  type DirectoryContact,
  findContact,
  personalContacts,
  search,
  sharedContacts,
  SOURCES,
} from "./sources.ts";

/** A term's length, spaces around it aside. */
export const MIN_TERM = 2;
export const MAX_TERM = 256;
/** The most entries one `DirectoryResult` holds (by name: a longer term narrows it). */
export const MAX_RESULTS = 100;
/** The most favourites of shared sources a user keeps (personal contacts are counted apart). */
export const MAX_FAVORITES = 500;
/** The longest `contactId` (a UUID has 36 characters). */
const MAX_CONTACT_ID = 64;

const term = () =>
  z.string().trim()
    .min(MIN_TERM, `at least ${MIN_TERM} characters`)
    .max(MAX_TERM, `at most ${MAX_TERM} characters`);

/** The contact of `addFavorite` and `removeFavorite`, as a `contact_id` and `source` name it. */
const favoriteFields = () =>
  z.object({
    contactId: z.union([z.string().min(1).max(MAX_CONTACT_ID), z.number().int().min(0)], {
      error: `a string of 1 to ${MAX_CONTACT_ID} characters (or an integer)`,
    }).transform(String),
    source: z.enum(SOURCES, { error: `one of ${SOURCES.join(", ")}` }),
  });

type FavoriteFields = z.infer<ReturnType<typeof favoriteFields>>;

const notFound = ({ source, contactId }: FavoriteFields) =>
  new ApiError(
    404,
    "ContactNotFound",
    `no contact ${JSON.stringify(contactId)} in the ${source} directory`,
  );

/**
 * The entries of `contacts`, each with the live status of its number as a watcher sees it
 * (lib/presence/hints.ts; -2 for a queue, whose number is no phone) and whether the user keeps it
 * as a favourite.
 */
async function entriesOf(
  c: CtiCommandContext,
  contacts: DirectoryContact[],
  favorite: (contact: DirectoryContact) => boolean,
) {
  const phones = (contact: DirectoryContact) => contact.source !== "queue" && contact.number !== "";
  const numbers = [...new Set(contacts.filter(phones).map((contact) => contact.number))];
  const statuses = numbers.length
    ? await watchedStatuses(c.services, numbers)
    : new Map<string, PhoneStatus>();
  return contacts.map((contact) =>
    directoryEntry(
      contact,
      phones(contact) ? statuses.get(contact.number) ?? -2 : -2,
      contact.favorite ?? favorite(contact),
    )
  );
}

/** The keys (`contactKey`) of the user's favourites of shared sources. */
async function favoriteKeys(c: CtiCommandContext): Promise<Set<string>> {
  const refs = await listFavorites(c.services.store, c.user.id);
  return new Set(refs.map((ref) => contactKey(ref.source, ref.contactId)));
}

/**
 * The user's favourites whose contact still exists, by name. Those whose contact is gone (a user
 * or a queue deleted, a queue's number removed) are dropped from the store as they are found.
 */
async function currentFavorites(c: CtiCommandContext): Promise<DirectoryContact[]> {
  const { store } = c.services;
  const [refs, shared, personal] = await Promise.all([
    listFavorites(store, c.user.id),
    sharedContacts(store),
    personalContacts(store, c.user.id),
  ]);
  const found: DirectoryContact[] = personal.filter((contact) => contact.favorite);
  const gone: FavoriteRef[] = [];
  for (const ref of refs) {
    const contact = shared.byKey.get(contactKey(ref.source, ref.contactId));
    if (contact) found.push(contact);
    else gone.push(ref);
  }
  if (gone.length) await deleteFavorites(store, c.user.id, gone);
  return found.sort(byName);
}

/** Tells every socket of the user, in every process: the favourite changed. */
async function announce(c: CtiCommandContext, message: CtiMessage): Promise<void> {
  await c.services.events.notify([{ username: c.session.username, notice: true, message }]);
}

/**
 * Sets the favourite of the contact `fields` names to `wanted`. A change is told to every socket
 * of the user; asking for what already is answers this socket alone (the others' state is right).
 */
async function setFavorite(c: CtiCommandContext, fields: FavoriteFields, wanted: boolean) {
  const { store } = c.services;
  const action: FavoriteAction = wanted ? "Added" : "Removed";
  const contact = await findContact(store, c.user.id, fields.source, fields.contactId);
  const told = (id: string) => favoriteUpdated(action, id, fields.source);
  if (fields.source === "personal") {
    if (!contact) throw notFound(fields);
    if (contact.favorite === wanted) return c.reply(told(contact.id));
    const outcome = await updateContact(store, c.user.id, contact.id, { favorite: wanted });
    if (outcome.status !== "updated") throw notFound(fields);
    return await announce(c, told(contact.id));
  }
  if (!wanted) {
    // a favourite whose contact is gone may still be removed
    if (await removeFavorite(store, c.user.id, fields)) {
      return await announce(c, told(fields.contactId));
    }
    if (!contact) throw notFound(fields);
    return c.reply(told(contact.id));
  }
  if (!contact) throw notFound(fields);
  const collection = fields.source === "internal" ? users : queues;
  const add = () =>
    addFavorite(
      store,
      c.user.id,
      { source: contact.source, contactId: contact.id },
      MAX_FAVORITES,
      async () => [
        await users.entry(store, c.user.id),
        await collection.entry(store, Number(contact.id)),
      ],
    );
  let outcome = await add();
  if (outcome === "limit") {
    await currentFavorites(c); // drops those whose contact is gone, then try again
    outcome = await add();
  }
  switch (outcome) {
    case "limit":
      throw new ApiError(409, "TooManyFavorites", `at most ${MAX_FAVORITES} favorites`);
    case "gone":
      throw notFound(fields);
    case "unchanged":
      return c.reply(told(contact.id));
    case "added":
      return await announce(c, told(contact.id));
  }
}

/** The commands of the directory, for every CTI user (`alias.ctiuser` grants their ACLs). */
export const DIRECTORY: CtiFamily = {
  commands: {
    directoryLookUp: ctiCommand({
      fields: () => z.object({ term: term() }),
      acl: "svc.cti.directory.{username}.read",
      async run(c, { term }) {
        const [contacts, keys] = await Promise.all([
          search(c.services.store, c.user.id, term, MAX_RESULTS),
          favoriteKeys(c),
        ]);
        const entries = await entriesOf(
          c,
          contacts,
          (contact) => keys.has(contactKey(contact.source, contact.id)),
        );
        c.reply(directoryResult(entries));
      },
    }),
    getFavorites: ctiCommand({
      fields: () => z.object({}),
      acl: "svc.cti.favorites.{username}.read",
      async run(c) {
        c.reply(favorites(await entriesOf(c, await currentFavorites(c), () => true)));
      },
    }),
    addFavorite: ctiCommand({
      fields: favoriteFields,
      acl: "svc.cti.favorites.{username}.create",
      run: (c, fields) => setFavorite(c, fields, true),
    }),
    removeFavorite: ctiCommand({
      fields: favoriteFields,
      acl: "svc.cti.favorites.{username}.delete",
      run: (c, fields) => setFavorite(c, fields, false),
    }),
  },
};

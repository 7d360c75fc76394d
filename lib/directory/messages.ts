/**
 * The directory's messages on the CTI socket (docs/cti.md, "Directory and favourites"), in the
 * shapes xuc's web clients read: `DirectoryResult` and `Favorites` are `{headers, entries}`, each
 * entry `{status, entry, contact_id, source, favorite}` with `entry` one value per header;
 * `FavoriteUpdated` is `{action, contact_id, source}`.
 */
import type { CtiMessage } from "../cti/messages.ts";
import type { PhoneStatus } from "../platform/port.ts";
import type { DirectoryContact } from "./sources.ts";

/**
 * The columns of `entry`. The number is the second: xuc's clients read `entry[1]` as the number
 * whose `PhoneHintStatusEvent` updates the entry's status.
 */
export const HEADERS = ["Name", "Number", "Mobile", "Other number", "Email", "Favorite"] as const;

/** One entry of `DirectoryResult` or `Favorites`. */
export interface DirectoryEntry {
  /** The live status of the entry's number (docs/cti.md, "Phone statuses"); -2 for none. */
  status: PhoneStatus;
  entry: string[];
  contact_id: string;
  source: string;
  favorite: boolean;
}

export const directoryEntry = (
  contact: DirectoryContact,
  status: PhoneStatus,
  favorite: boolean,
): DirectoryEntry => ({
  status,
  entry: [
    contact.name,
    contact.number,
    contact.mobile,
    contact.otherNumber,
    contact.email,
    String(favorite),
  ],
  contact_id: contact.id,
  source: contact.source,
  favorite,
});

/** The answer to `directoryLookUp`. */
export const directoryResult = (entries: DirectoryEntry[]): CtiMessage => ({
  msgType: "DirectoryResult",
  ctiMessage: { headers: HEADERS, entries },
});

/** The answer to `getFavorites`. */
export const favorites = (entries: DirectoryEntry[]): CtiMessage => ({
  msgType: "Favorites",
  ctiMessage: { headers: HEADERS, entries },
});

export type FavoriteAction = "Added" | "Removed";

/** A favourite added or removed, as every socket of its user is told. */
export const favoriteUpdated = (
  action: FavoriteAction,
  contactId: string,
  source: string,
): CtiMessage => ({
  msgType: "FavoriteUpdated",
  ctiMessage: { action, contact_id: contactId, source },
});

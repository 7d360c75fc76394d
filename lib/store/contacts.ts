/**
 * Personal contacts of CTI users (decisions §3): the only module that knows their keys.
 *
 * - `["contacts", userId, id]` holds a {@link ContactRecord}; listing a user's contacts is one
 *   range read.
 * - `["contacts_by_content", userId, hash]` holds the id of the contact whose content (every field
 *   but `id` and `favorite`, trimmed) hashes to `hash` (SHA-256): duplicate detection is one read,
 *   and an import loads the whole set in one range read of short keys.
 * - `["contacts_meta", userId]` holds how many contacts the user has. Every write of the user's
 *   contacts sets it in the same atomic operation, checked against the versionstamp it was read
 *   with, so the limit check costs one read and any concurrent change makes the loser try again.
 * - `["contacts_seq", userId]` holds the last creation number given to one of the user's contacts
 *   (each contact's `created`): creation order, for the list view's and the export's ties. It only
 *   grows, deletions aside, and is written with the contacts it numbers.
 * - `["contacts_import", userId]` is held by an import too large for one atomic operation while it
 *   writes (a staged write of `bulk.ts`): its contacts are numbered past the counter, which only its
 *   last commit advances, and readers hide contacts numbered past the counter while the key is
 *   held; so the import shows all at once. Every other write of the user's contacts waits for it.
 */
import { sha256 } from "../digest.ts";
import { StoreBusy } from "../errors.ts";
import { stagedKind, StagedWrite } from "./bulk.ts";
import {
  HELD_WAIT_MS,
  HeldByBulkWrite,
  localWriteCount,
  noteLocalWrite,
  waitForHeld,
} from "./records.ts";
import { batchedRead } from "./shared_read.ts";
import { keepRacing, raceBackoff, type Store } from "./store.ts";

/** The contact fields, in the export's column order. */
export const CONTACT_FIELDS = [
  "company",
  "email",
  "fax",
  "firstname",
  "lastname",
  "mobile",
  "number",
] as const;

export type ContactField = typeof CONTACT_FIELDS[number];

/** Every field present; "" stands for an absent one. */
export type ContactFields = Record<ContactField, string>;

export interface ContactRecord extends ContactFields {
  /** A UUID assigned by the service. */
  id: string;
  /** Shown in the list view's Favorite column; not part of the content nor of the CSV. */
  favorite: boolean;
  /**
   * Creation order among the user's contacts: 1, 2, 3… in the order they were created (an import
   * numbers its lines in file order). Absent on contacts stored before it existed.
   */
  created?: number;
}

/** Longest field, in characters (decisions §3). */
export const MAX_FIELD_LENGTH = 256;

/** One reason a contact is not valid, with the import's per-line text. */
export type ContactProblem =
  | { kind: "empty"; text: "no name, number, mobile, fax or email" }
  | { kind: "too_long"; field: ContactField; text: string }
  | { kind: "email"; field: "email"; text: "invalid email" };

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** An empty contact, every field "". */
export const emptyFields = (): ContactFields => ({
  company: "",
  email: "",
  fax: "",
  firstname: "",
  lastname: "",
  mobile: "",
  number: "",
});

/**
 * What is wrong with `fields` (already trimmed), in this order: no name, number, mobile, fax or
 * email; then each field in column order (too long, or an e-mail not of the form `local@domain`).
 *
 * @example
 * contactProblems({ ...emptyFields(), email: "x" }); // [{ kind: "email", … }]
 */
export function contactProblems(fields: ContactFields): ContactProblem[] {
  const problems: ContactProblem[] = [];
  const { number, mobile, fax, email, firstname, lastname } = fields;
  if (!number && !mobile && !fax && !email && !firstname && !lastname) {
    problems.push({ kind: "empty", text: "no name, number, mobile, fax or email" });
  }
  for (const field of CONTACT_FIELDS) {
    const value = fields[field];
    if (value.length > MAX_FIELD_LENGTH && [...value].length > MAX_FIELD_LENGTH) {
      problems.push({ kind: "too_long", field, text: `field ${field} is too long` });
    } else if (field === "email" && value && !EMAIL.test(value)) {
      problems.push({ kind: "email", field, text: "invalid email" });
    }
  }
  return problems;
}

const contactKey = (userId: number, id: string): Deno.KvKey => ["contacts", userId, id];
const contentKey = (userId: number, hash: string): Deno.KvKey => [
  "contacts_by_content",
  userId,
  hash,
];
const metaKey = (userId: number): Deno.KvKey => ["contacts_meta", userId];
const seqKey = (userId: number): Deno.KvKey => ["contacts_seq", userId];
const importKey = (userId: number): Deno.KvKey => ["contacts_import", userId];

/** What `["contacts_import", userId]` holds: the staged write importing the user's contacts. */
interface ImportLock {
  write: string;
}

/**
 * True when `contact` belongs to an import not committed yet: the user's import key is held and
 * the contact is numbered past the user's counter.
 */
const unseen = (contact: ContactRecord, lock: unknown, seq: unknown) =>
  lock !== null && (contact.created ?? 0) > ((seq as number | null) ?? 0);

/**
 * Waits a little while an import holds the user's contacts (see the module's comment); throws
 * {@link HeldByBulkWrite} (503) once `deadline` has passed.
 */
async function waitForImport(store: Store, userId: number, deadline: number, waited: number) {
  if (!await waitForHeld(store, deadline, waited)) throw new HeldByBulkWrite(importKey(userId));
}

/**
 * The hash of a contact's content: equal contents (decisions §3 duplicates) hash alike. SHA-256
 * (lib/digest.ts), base64url.
 */
export async function contentHash(fields: ContactFields): Promise<string> {
  const content = JSON.stringify(CONTACT_FIELDS.map((field) => fields[field]));
  return base64url(await sha256(content));
}

/** Unpadded base64url (RFC 4648 §5), as the content keys were always written. */
const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

const abandoned = () => new StoreBusy("the contacts");

/** What an attempt of {@link optimisticWrite} answers when its commit lost to another writer. */
const LOST = Symbol("lost");

/**
 * Reads `keys` (with the user's import lock), then runs `attempt` on them: again after waiting
 * while an import holds the user's contacts, and again while its commit loses to a concurrent
 * change (it answers {@link LOST}), as long as {@link keepRacing} says.
 */
async function optimisticWrite<T>(
  store: Store,
  userId: number,
  keys: Deno.KvKey[],
  attempt: (entries: Deno.KvEntryMaybe<unknown>[]) => Promise<T | typeof LOST>,
): Promise<T> {
  const deadline = Date.now() + HELD_WAIT_MS;
  for (let lost = 0, waited = 0, startedAt = performance.now(); keepRacing(lost, startedAt);) {
    const entries = await store.getMany<unknown>([...keys, importKey(userId)]);
    if (entries.at(-1)!.value) {
      await waitForImport(store, userId, deadline, waited++);
      continue;
    }
    const outcome = await attempt(entries.slice(0, -1));
    if (outcome !== LOST) return outcome;
    await raceBackoff(++lost);
  }
  throw abandoned();
}

/** Every write of contacts: noted first, so that {@link recentContacts} stops answering. */
function commitContacts(store: Store, build: Parameters<Store["commit"]>[0]) {
  noteLocalWrite();
  return store.commit(build);
}

/**
 * Every contact of `userId` that readers see, in id order (one range read), and the count key's
 * versionstamp it is as recent as. An import that begins or ends sets the count key: when it
 * changed during the range read, the range is read again.
 */
async function readContacts(store: Store, userId: number) {
  for (;;) {
    const [meta, seq, lock] = await store.getMany<unknown>([
      metaKey(userId),
      seqKey(userId),
      importKey(userId),
    ]);
    const entries = await store.list<ContactRecord>({ prefix: ["contacts", userId] }, {
      batchSize: 500,
    });
    if ((await store.get(metaKey(userId))).versionstamp !== meta!.versionstamp) continue;
    const contacts = entries.map((entry) => entry.value)
      .filter((contact) => !unseen(contact, lock!.value, seq!.value));
    return { versionstamp: meta!.versionstamp, contacts };
  }
}

/** Every contact of `userId`, in id order (one range read). */
export async function listContacts(store: Store, userId: number): Promise<ContactRecord[]> {
  return (await readContacts(store, userId)).contacts;
}

/** Users whose contacts {@link currentContacts} keeps, and contacts in all, at most. */
const CACHED_USERS = 10_000;
const CACHED_CONTACTS = 200_000;

interface CachedList {
  versionstamp: string | null;
  contacts: readonly ContactRecord[];
  /** When the versionstamp read started (`performance.now()`), and the local writes then. */
  checked: { at: number; writes: number };
}

/**
 * How long {@link recentContacts} answers a kept list without reading its versionstamp, while
 * this process wrote nothing: a change made through this process shows at once, one made by
 * another process sharing the store at most this much later (docs/contacts.md).
 */
const CONTACTS_RECHECK_MS = 1000;

/** Per store: the lists by user, oldest read first, and how many contacts they hold. */
const cachedLists = new WeakMap<Store, { lists: Map<number, CachedList>; contacts: number }>();

/**
 * Reads the versionstamps of users' count keys; the users asked while a read runs go together in
 * the next one (`getMany`, 10 keys each, Deno KV's limit). So many list views share a read under
 * load, and each versionstamp is still read after its request came.
 */
function versionReader(store: Store) {
  return batchedRead(async (userIds: number[]) => {
    const chunks = [];
    for (let i = 0; i < userIds.length; i += 10) {
      chunks.push(store.getMany(userIds.slice(i, i + 10).map(metaKey)));
    }
    const entries = (await Promise.all(chunks)).flat();
    return new Map(userIds.map((userId, i) => [userId, entries[i]!.versionstamp]));
  });
}

const versionReaders = new WeakMap<Store, ReturnType<typeof versionReader>>();

/**
 * Every contact of `userId`, for the list view and the export: kept in memory and read again (one
 * range read) only when the count key's versionstamp changed, which every write of the user's
 * contacts does, from any process sharing the store; so an unchanged list costs one read. The
 * same array is answered while nothing changed (callers may cache what they derive from it by
 * identity); treat it as read-only.
 */
export async function currentContacts(
  store: Store,
  userId: number,
): Promise<readonly ContactRecord[]> {
  let cache = cachedLists.get(store);
  if (!cache) cachedLists.set(store, cache = { lists: new Map(), contacts: 0 });
  let reader = versionReaders.get(store);
  if (!reader) versionReaders.set(store, reader = versionReader(store));
  const checked = { at: performance.now(), writes: localWriteCount() };
  const versionstamp = (await reader([userId])).get(userId) ?? null;
  const cached = cache.lists.get(userId);
  if (cached?.versionstamp === versionstamp) {
    cached.checked = checked;
    return cached.contacts;
  }
  // kept under the versionstamp it was read at
  const listed = await readContacts(store, userId);
  const contacts = Object.freeze(listed.contacts);
  const previous = cache.lists.get(userId); // another request may have replaced it meanwhile
  if (previous) {
    cache.lists.delete(userId);
    cache.contacts -= previous.contacts.length;
  }
  cache.lists.set(userId, { versionstamp: listed.versionstamp, contacts, checked });
  cache.contacts += contacts.length;
  for (const [oldest, list] of cache.lists) {
    if (cache.lists.size <= CACHED_USERS && cache.contacts <= CACHED_CONTACTS) break;
    cache.lists.delete(oldest);
    cache.contacts -= list.contacts.length;
  }
  return contacts;
}

/**
 * The list {@link currentContacts} would answer, without reading, when it was checked less than
 * `maxAgeMs` ago and this process wrote no contacts since; else null (ask `currentContacts`).
 */
export function recentContacts(
  store: Store,
  userId: number,
  maxAgeMs = CONTACTS_RECHECK_MS,
): readonly ContactRecord[] | null {
  const cached = cachedLists.get(store)?.lists.get(userId);
  if (!cached || cached.checked.writes !== localWriteCount()) return null;
  return performance.now() - cached.checked.at < maxAgeMs ? cached.contacts : null;
}

/** How many contacts `userId` has (one read). */
export async function countContacts(store: Store, userId: number): Promise<number> {
  return (await store.get<number>(metaKey(userId))).value ?? 0;
}

/** `userId`'s contact `id`, or null (another user's contact is null too). */
export async function getContact(
  store: Store,
  userId: number,
  id: string,
): Promise<ContactRecord | null> {
  const [entry, seq, lock] = await store.getMany<unknown>([
    contactKey(userId, id),
    seqKey(userId),
    importKey(userId),
  ]);
  const contact = entry!.value as ContactRecord | null;
  return contact && !unseen(contact, lock!.value, seq!.value) ? contact : null;
}

export type CreateOutcome =
  | { status: "created"; contact: ContactRecord }
  | { status: "duplicate" }
  | { status: "limit" };

/**
 * Creates a contact from valid, trimmed `fields` unless it duplicates one of the user's contacts
 * or the user already has `max` contacts.
 *
 * @example
 * const outcome = await createContact(store, 1, { ...emptyFields(), lastname: "Martin" }, false, 10_000);
 */
export async function createContact(
  store: Store,
  userId: number,
  fields: ContactFields,
  favorite: boolean,
  max: number,
): Promise<CreateOutcome> {
  const hash = await contentHash(fields);
  const keys = [metaKey(userId), contentKey(userId, hash), seqKey(userId)];
  return await optimisticWrite(store, userId, keys, async ([meta, taken, seq]) => {
    if (taken!.value) return { status: "duplicate" } as const;
    const count = (meta!.value as number | null) ?? 0;
    if (count >= max) return { status: "limit" } as const;
    const created = ((seq!.value as number | null) ?? 0) + 1;
    const contact: ContactRecord = { id: crypto.randomUUID(), ...fields, favorite, created };
    const result = await commitContacts(store, (op) =>
      op.check(meta!, taken!, seq!)
        .set(contactKey(userId, contact.id), contact)
        .set(contentKey(userId, hash), contact.id)
        .set(metaKey(userId), count + 1)
        .set(seqKey(userId), created));
    return result.ok ? { status: "created", contact } as const : LOST;
  });
}

/** What a PUT changes: the fields it sends (trimmed), and `favorite` when sent. */
export type ContactChange = Partial<ContactFields> & { favorite?: boolean };

export type UpdateOutcome =
  | { status: "updated"; contact: ContactRecord }
  | { status: "not_found" }
  | { status: "invalid"; problems: ContactProblem[] }
  | { status: "duplicate" };

/**
 * Applies `change` to `userId`'s contact `id`; the result must still be valid and must not
 * duplicate another of the user's contacts.
 */
export async function updateContact(
  store: Store,
  userId: number,
  id: string,
  change: ContactChange,
): Promise<UpdateOutcome> {
  const keys = [contactKey(userId, id), metaKey(userId)];
  return await optimisticWrite(store, userId, keys, async ([entry, meta]) => {
    const current = entry!.value as ContactRecord | null;
    if (!current) return { status: "not_found" } as const;
    const contact: ContactRecord = { ...current, ...change };
    const problems = contactProblems(contact);
    if (problems.length) return { status: "invalid", problems } as const;
    const [before, after] = await Promise.all([contentHash(current), contentHash(contact)]);
    const moved = before !== after;
    const taken = moved ? await store.get<string>(contentKey(userId, after)) : null;
    if (taken?.value) return { status: "duplicate" } as const;
    const result = await commitContacts(store, (op) => {
      op.check(entry!, meta!);
      if (moved) {
        op.check(taken!).delete(contentKey(userId, before)).set(contentKey(userId, after), id);
      }
      return op.set(contactKey(userId, id), contact)
        .set(metaKey(userId), (meta!.value as number | null) ?? 0);
    });
    return result.ok ? { status: "updated", contact } as const : LOST;
  });
}

/** Deletes `userId`'s contact `id`; answers false when the user has no such contact. */
export async function deleteContact(store: Store, userId: number, id: string): Promise<boolean> {
  const keys = [contactKey(userId, id), metaKey(userId)];
  return await optimisticWrite(store, userId, keys, async ([entry, meta]) => {
    const current = entry!.value as ContactRecord | null;
    if (!current) return false;
    const count = (meta!.value as number | null) ?? 1;
    const hash = await contentHash(current);
    const result = await commitContacts(store, (op) =>
      op.check(entry!, meta!)
        .delete(contactKey(userId, id))
        .delete(contentKey(userId, hash))
        .set(metaKey(userId), Math.max(0, count - 1)));
    return result.ok ? true : LOST;
  });
}

/** Contacts deleted per atomic operation: two mutations each, well under Deno KV's 1000. */
const DELETES_PER_COMMIT = 300;

/**
 * Deletes every contact of `userId`, in atomic operations of {@link DELETES_PER_COMMIT} contacts
 * each keeping the count right; contacts created meanwhile by another request may survive.
 */
export async function deleteAllContacts(store: Store, userId: number): Promise<void> {
  let lost = 0;
  let startedAt = performance.now();
  const deadline = Date.now() + HELD_WAIT_MS;
  for (let waited = 0;;) {
    const [meta, lock] = await store.getMany<number | ImportLock>([
      metaKey(userId),
      importKey(userId),
    ]) as [Deno.KvEntryMaybe<number>, Deno.KvEntryMaybe<ImportLock>];
    if (lock.value) {
      await waitForImport(store, userId, deadline, waited++);
      continue;
    }
    const page = await store.list<ContactRecord>(
      { prefix: ["contacts", userId] },
      { limit: DELETES_PER_COMMIT },
    );
    if (!page.length && !meta.value) return;
    const count = meta.value ?? 0;
    const hashes = await Promise.all(page.map(({ value }) => contentHash(value)));
    const result = await commitContacts(store, (op) => {
      op.check(meta); // covers every contact: each write of them sets the count
      page.forEach(({ key }, i) => op.delete(key).delete(contentKey(userId, hashes[i]!)));
      return op.set(metaKey(userId), Math.max(0, count - page.length));
    });
    if (result.ok) {
      if (!page.length) return;
      lost = 0;
      startedAt = performance.now();
    } else if (!keepRacing(++lost, startedAt)) throw abandoned();
    else await raceBackoff(lost);
  }
}

/**
 * Removes every trace of `userId`'s contacts, count included: for when the user is deleted.
 *
 * @example
 * await deleteContactsOfUser(store, user.id);
 */
export async function deleteContactsOfUser(store: Store, userId: number): Promise<void> {
  await deleteAllContacts(store, userId);
  await store.delete(metaKey(userId));
  await store.delete(seqKey(userId));
}

export type ImportOutcome =
  | { status: "created"; contact: ContactRecord }
  | { status: "duplicate" }
  | { status: "limit" };

/** Contacts per atomic operation of an import: two mutations each, plus the count. */
const IMPORTS_PER_COMMIT = 400;
/**
 * Budgets of one import commit against Deno KV's limits (keys 80 KiB, keys and values 800 KiB),
 * with room to spare: sizes are estimated at 3 bytes a character.
 */
const KEY_BUDGET = 64_000;
const TOTAL_BUDGET = 640_000;

interface ImportState {
  versionstamp: string | null;
  count: number;
  /** The last creation number given, and the versionstamp it was read at. */
  seq: number;
  seqVersionstamp: string | null;
  /** An import not committed holds the user's contacts. */
  locked: boolean;
  /** Content hashes of the user's contacts. */
  seen: Set<string>;
}

async function importState(store: Store, userId: number): Promise<ImportState> {
  const [meta, seq, lock] = await store.getMany<unknown>([
    metaKey(userId),
    seqKey(userId),
    importKey(userId),
  ]);
  const index = lock!.value
    ? []
    : await store.list<string>({ prefix: ["contacts_by_content", userId] });
  return {
    versionstamp: meta!.versionstamp,
    count: (meta!.value as number | null) ?? 0,
    seq: (seq!.value as number | null) ?? 0,
    seqVersionstamp: seq!.versionstamp,
    locked: lock!.value !== null,
    seen: new Set(index.map((entry) => entry.key[2] as string)),
  };
}

const estimatedSize = (contact: ContactRecord) => {
  let chars = 0;
  for (const field of CONTACT_FIELDS) chars += contact[field].length;
  return 3 * chars + 200;
};
/** Bytes of a contact key and a content key (ids and hashes are ASCII), with a margin. */
const KEYS_SIZE = 160;

/** The contacts of an import, in atomic operations within Deno KV's limits. */
function importCommits(contacts: { contact: ContactRecord; hash: string }[]) {
  const commits: { contact: ContactRecord; hash: string }[][] = [[]];
  let keyBytes = 0;
  let totalBytes = 0;
  for (const item of contacts) {
    const size = estimatedSize(item.contact);
    const last = commits.at(-1)!;
    if (
      last.length >= IMPORTS_PER_COMMIT || keyBytes + KEYS_SIZE > KEY_BUDGET ||
      totalBytes + size > TOTAL_BUDGET
    ) {
      commits.push([]);
      keyBytes = totalBytes = 0;
    }
    commits.at(-1)!.push(item);
    keyBytes += KEYS_SIZE;
    totalBytes += size;
  }
  return commits;
}

/**
 * Writes the contacts decided against `state`, all of them or none: in one atomic operation when
 * they fit, else as a staged write holding the user's contacts (see the module's comment). Answers
 * false, writing nothing, when the user's contacts changed since `state` was read.
 */
async function writeImport(
  store: Store,
  userId: number,
  state: ImportState,
  contacts: { contact: ContactRecord; hash: string }[],
): Promise<boolean> {
  const count = state.count + contacts.length;
  const seq = state.seq + contacts.length;
  const unchanged = (op: Deno.AtomicOperation) =>
    op.check(
      { key: metaKey(userId), versionstamp: state.versionstamp },
      { key: seqKey(userId), versionstamp: state.seqVersionstamp },
      { key: importKey(userId), versionstamp: null },
    );
  const put = (op: Deno.AtomicOperation, chunk: typeof contacts) => {
    for (const { contact, hash } of chunk) {
      op.set(contactKey(userId, contact.id), contact).set(contentKey(userId, hash), contact.id);
    }
    return op;
  };
  const commits = importCommits(contacts);
  if (commits.length === 1) {
    const result = await commitContacts(
      store,
      (op) => put(unchanged(op), commits[0]!).set(metaKey(userId), count).set(seqKey(userId), seq),
    );
    return result.ok;
  }
  // the count key is set too: a write that read it before now fails its check, then waits
  const write = await StagedWrite.begin<ContactImport>(
    store,
    "contacts",
    { userId, seq: state.seq },
    {
      hidden: false,
      build: (op, id) =>
        unchanged(op).set(importKey(userId), { write: id } satisfies ImportLock)
          .set(metaKey(userId), state.count),
    },
  );
  if (!write) return false;
  try {
    for (const chunk of commits) {
      const result = await store.commit((op) => put(write.gate(op), chunk));
      if (!result.ok) await write.assertAlive(); // only the gate is checked: it throws
    }
    noteLocalWrite();
    await write.commit((op) =>
      op.delete(importKey(userId)).set(metaKey(userId), count).set(seqKey(userId), seq)
    );
  } catch (error) {
    await write.abort();
    throw error;
  }
  await write.finish();
  return true;
}

/** What the journal of a staged contacts import holds. */
interface ContactImport {
  userId: number;
  /** The user's counter when the import began: its contacts are numbered past it. */
  seq: number;
}

/**
 * Undoes a contacts import that will not commit: deletes the contacts numbered past the counter
 * it began at, then lets the user's contacts go; each step checked against the import key still
 * being the import's (nobody else writes the user's contacts meanwhile).
 */
async function undoContactImport(store: Store, id: string, { userId, seq }: ContactImport) {
  for (;;) {
    const lock = await store.get<ImportLock>(importKey(userId));
    if (lock.value?.write !== id) return; // undone already
    const mine = (await store.list<ContactRecord>({ prefix: ["contacts", userId] }))
      .filter(({ value }) => (value.created ?? 0) > seq).slice(0, DELETES_PER_COMMIT);
    const meta = await store.get<number>(metaKey(userId));
    const hashes = await Promise.all(mine.map(({ value }) => contentHash(value)));
    await commitContacts(store, (op) => {
      op.check(lock);
      mine.forEach(({ key }, i) => op.delete(key).delete(contentKey(userId, hashes[i]!)));
      // the last step: the key goes; the count key is set so that waiting writes read again
      return mine.length ? op : op.delete(importKey(userId)).set(metaKey(userId), meta.value ?? 0);
    });
  }
}

stagedKind<ContactImport>("contacts", {
  undo: undoContactImport,
  finish: () => Promise.resolve(),
});

/**
 * Creates contacts from valid, trimmed `candidates` in their order: a candidate equal to an
 * existing contact or to an earlier candidate is a duplicate, one past `max` contacts hits the
 * limit. The contacts created are numbered (`created`) in the candidates' order. The lines are
 * decided against the user's contacts as read, and written all or nothing: in one atomic
 * operation when they fit (400 contacts), else as a staged write that readers see only once
 * complete, while every other write of the user's contacts waits. When another request changed
 * the user's contacts between the read and the write, they are read and decided again.
 */
export async function importContacts(
  store: Store,
  userId: number,
  candidates: readonly ContactFields[],
  max: number,
): Promise<ImportOutcome[]> {
  const hashes = await Promise.all(candidates.map(contentHash));
  const deadline = Date.now() + HELD_WAIT_MS;
  for (let lost = 0, waited = 0, startedAt = performance.now(); keepRacing(lost, startedAt);) {
    const state = await importState(store, userId);
    if (state.locked) {
      await waitForImport(store, userId, deadline, waited++);
      continue;
    }
    const outcomes: ImportOutcome[] = new Array(candidates.length);
    const contacts: { contact: ContactRecord; hash: string }[] = [];
    candidates.forEach((candidate, i) => {
      const hash = hashes[i]!;
      if (state.seen.has(hash)) {
        outcomes[i] = { status: "duplicate" };
      } else if (state.count + contacts.length >= max) {
        outcomes[i] = { status: "limit" };
      } else {
        const contact: ContactRecord = {
          id: crypto.randomUUID(),
          ...candidate,
          favorite: false,
          created: state.seq + contacts.length + 1,
        };
        state.seen.add(hash);
        contacts.push({ contact, hash });
        outcomes[i] = { status: "created", contact };
      }
    });
    if (!contacts.length || await writeImport(store, userId, state, contacts)) return outcomes;
    await raceBackoff(++lost);
  }
  throw abandoned();
}

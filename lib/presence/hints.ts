/**
 * Phone hints (busy lamps): the status of other people's phones as a watcher sees them: the
 * numbers of a CTI user's personal contacts (the list view, the socket), those a socket subscribed
 * to (`subscribeToPhoneHints`), the directory's entries. They are read here and only here, so that
 * what a watcher may see of a number is decided in one place.
 *
 * A user whose record has `supervision_enabled: false` may not be watched (Wazo's meaning: no
 * hint is made for its lines): the numbers of its lines read -2, as a number that is no extension
 * does, so a watcher cannot tell that a phone is there. The numbers hidden are read from the
 * users, lines and extensions as each process keeps them, and checked again at most every
 * {@link HIDDEN_RECHECK_MS} (at once after a change made through this process).
 */
import type { CoreServices } from "../core_services.ts";
import type { PhoneStatus } from "../platform/port.ts";
import { extensions } from "../store/extensions.ts";
import { lines } from "../store/lines.ts";
import { localWriteCount } from "../store/records.ts";
import type { Store } from "../store/store.ts";
import { users } from "../store/users.ts";

/** Most numbers one socket may watch through `subscribeToPhoneHints`. */
export const MAX_HINTS_PER_SOCKET = 1_000;
/** The longest number a socket may watch (characters). */
export const MAX_HINT_LENGTH = 64;
/** What a watcher sees of a phone that may not be watched: what a number that is none shows. */
export const HIDDEN: PhoneStatus = -2;
/** How long the numbers hidden are answered without being checked again (ms). */
export const HIDDEN_RECHECK_MS = 1_000;

type Lists = [readonly { id: number }[], readonly { id: number }[], readonly { id: number }[]];

/** Per store: the numbers hidden, the lists they come from, when and at which writes checked. */
const kept = new WeakMap<
  Store,
  { numbers: ReadonlySet<string>; lists: Lists; at: number; writes: number }
>();

/**
 * The numbers of the lines of the users whose `supervision_enabled` is false. One set per state
 * of the users, lines and extensions: a caller may keep what it built from it while it is the
 * same object.
 */
export async function hiddenNumbers(store: Store): Promise<ReadonlySet<string>> {
  const writes = localWriteCount();
  const [userList, lineList, extensionList] = await Promise.all([
    users.all(store),
    lines.all(store),
    extensions.all(store),
  ]);
  const before = kept.get(store);
  const same = before && before.lists[0] === userList && before.lists[1] === lineList &&
    before.lists[2] === extensionList;
  const numbers = same ? before.numbers : numbersOf(userList, lineList, extensionList);
  kept.set(store, {
    numbers,
    lists: [userList, lineList, extensionList],
    at: performance.now(),
    writes,
  });
  return numbers;
}

function numbersOf(
  userList: Awaited<ReturnType<typeof users.all>>,
  lineList: Awaited<ReturnType<typeof lines.all>>,
  extensionList: Awaited<ReturnType<typeof extensions.all>>,
): ReadonlySet<string> {
  const lineIds = new Set(
    userList.filter((user) => user.supervision_enabled === false).flatMap((user) => user.line_ids),
  );
  if (lineIds.size === 0) return new Set();
  const extensionIds = new Set(
    lineList.filter((line) => lineIds.has(line.id)).flatMap((line) => line.extension_ids),
  );
  return new Set(
    extensionList.filter((extension) => extensionIds.has(extension.id)).map((e) => e.exten),
  );
}

/**
 * What {@link hiddenNumbers} answered last, without waiting, when it was checked less than
 * {@link HIDDEN_RECHECK_MS} ago and this process wrote nothing since; else null (ask it).
 */
export function recentHidden(store: Store): ReadonlySet<string> | null {
  const last = kept.get(store);
  if (!last || last.writes !== localWriteCount()) return null;
  return performance.now() - last.at < HIDDEN_RECHECK_MS ? last.numbers : null;
}

/** The numbers hidden: kept ones when recent, else read. */
export const currentHidden = (store: Store): ReadonlySet<string> | Promise<ReadonlySet<string>> =>
  recentHidden(store) ?? hiddenNumbers(store);

/**
 * The statuses of `numbers` as a watcher sees them: a number that is no extension is -2, and so
 * is one of a user who may not be watched.
 */
export async function watchedStatuses(
  services: Pick<CoreServices, "platform" | "store">,
  numbers: string[],
): Promise<Map<string, PhoneStatus>> {
  if (numbers.length === 0) return new Map();
  const [statuses, hidden] = await Promise.all([
    services.platform.phoneStatuses(numbers),
    currentHidden(services.store),
  ]);
  if (!numbers.some((number) => hidden.has(number))) return statuses;
  const seen = new Map(statuses); // the platform's answer may be shared: not changed
  for (const number of numbers) if (hidden.has(number)) seen.set(number, HIDDEN);
  return seen;
}

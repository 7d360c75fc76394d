/**
 * Phone hints (busy lamps): the status of other people's phones as a CTI socket watches them, the
 * numbers of the user's personal contacts and those the socket subscribed to
 * (`subscribeToPhoneHints`). The hub (lib/cti/hub.ts) reads them here and only here, so that what
 * a watcher may see of a number is decided in one place.
 */
import type { CoreServices } from "../core_services.ts";
import type { PhoneStatus } from "../platform/port.ts";

/** Most numbers one socket may watch through `subscribeToPhoneHints`. */
export const MAX_HINTS_PER_SOCKET = 1_000;
/** The longest number a socket may watch (characters). */
export const MAX_HINT_LENGTH = 64;

/** The statuses of `numbers` as a watcher sees them; a number that is no extension is -2. */
export async function watchedStatuses(
  services: Pick<CoreServices, "platform">,
  numbers: string[],
): Promise<Map<string, PhoneStatus>> {
  if (numbers.length === 0) return new Map();
  return await services.platform.phoneStatuses(numbers);
}

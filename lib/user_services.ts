/**
 * A user's do-not-disturb and forwards: the one way to change them, used by the 2.0 routes
 * (`/dnd`, `/forward/{kind}`) and by the configuration daemon (`/1.1/users/{id}/services`,
 * `/forwards`), so both views always agree (decisions §5) and every change is told the same way:
 *
 * 1. the user record changes in one transaction (the record is the source of truth);
 * 2. when DND or a forward actually changed, one `UserConfigUpdate` is published (decisions §7);
 * 3. the platform is told (`userServicesChanged`), even when nothing changed: the call is
 *    idempotent, so a client retrying after a failed step 3 brings the platform back in line.
 *
 * The event is published after the record is committed, not in the same atomic operation (the
 * event export owns its own commit): a crash between both loses that one event, never the change.
 */
import type { EventExport } from "./events/export.ts";
import { userConfigMessage } from "./events/messages.ts";
import type { Platform } from "./platform/port.ts";
import { transact } from "./store/records.ts";
import type { Store } from "./store/store.ts";
import {
  type Forward,
  type ForwardKind,
  type ServiceName,
  type UserRecord,
  users,
} from "./store/users.ts";

/** What a change needs from the services. */
export interface UserServicesDeps {
  store: Store;
  events: Pick<EventExport, "publish">;
  platform: Pick<Platform, "userServicesChanged">;
}

export const FORWARD_KINDS: readonly ForwardKind[] = ["busy", "noanswer", "unconditional"];

/** The longest forward destination, as the configuration daemon allows it. */
export const MAX_DESTINATION_LENGTH = 128;

/** A change of one forward: fields left out keep their value. */
export interface ForwardChange {
  enabled?: boolean;
  /** Trimmed; `""` and null clear it. */
  destination?: string | null;
}

/** A change the rules refuse; each API words it its own way (400 in both). */
export class InvalidUserServices extends Error {
  constructor(
    /** The field at fault, as the configuration daemon names it: `busy.destination`. */
    readonly field: string,
    readonly reason: "destination_required" | "destination_too_long",
    message: string,
  ) {
    super(message);
    this.name = "InvalidUserServices";
  }
}

/** How a change went: the user as it now is, and whether anything changed. */
export interface UserServicesResult {
  user: UserRecord;
  changed: boolean;
}

/**
 * Sets the user's DND; answers null when there is no user `userId`.
 *
 * @example
 * await setDnd(services, alice.id, true);
 */
export function setDnd(
  deps: UserServicesDeps,
  userId: number,
  enabled: boolean,
): Promise<UserServicesResult | null> {
  return setService(deps, userId, "dnd", enabled);
}

/**
 * Sets one of the user's services (`dnd`, `incallfilter`); answers null when there is no user
 * `userId`. Only DND is part of the `UserConfigUpdate` event.
 */
export function setService(
  deps: UserServicesDeps,
  userId: number,
  service: ServiceName,
  enabled: boolean,
): Promise<UserServicesResult | null> {
  return changeUser(deps, userId, (user) => ({
    ...user,
    services: { ...user.services, [service]: { enabled } },
  }));
}

/**
 * Sets several services at once (the daemon's `PUT /users/{id}/services`), in one transaction;
 * services left out keep their state. Answers null when there is no user `userId`.
 */
export function setServices(
  deps: UserServicesDeps,
  userId: number,
  changes: Partial<Record<ServiceName, boolean>>,
): Promise<UserServicesResult | null> {
  return changeUser(deps, userId, (user) => {
    const services = { ...user.services };
    for (const [service, enabled] of Object.entries(changes)) {
      services[service as ServiceName] = { enabled };
    }
    return { ...user, services };
  });
}

/**
 * Changes one forward; an enabled forward needs a destination ({@link InvalidUserServices}).
 * Answers null when there is no user `userId`.
 *
 * @example
 * await setForward(services, alice.id, "busy", { enabled: true, destination: "1002" });
 */
export function setForward(
  deps: UserServicesDeps,
  userId: number,
  kind: ForwardKind,
  change: ForwardChange,
): Promise<UserServicesResult | null> {
  return setForwards(deps, userId, { [kind]: change });
}

/**
 * Changes several forwards at once (the daemon's `PUT /users/{id}/forwards`), all or none:
 * one event for the whole change. Answers null when there is no user `userId`.
 */
export function setForwards(
  deps: UserServicesDeps,
  userId: number,
  changes: Partial<Record<ForwardKind, ForwardChange>>,
): Promise<UserServicesResult | null> {
  return changeUser(deps, userId, (user) => {
    const forwards = { ...user.forwards };
    for (const kind of FORWARD_KINDS) {
      const change = changes[kind];
      if (change) forwards[kind] = applyForward(kind, forwards[kind], change);
    }
    return { ...user, forwards };
  });
}

/**
 * A forward after `change`. The destination is kept as given, only trimmed (it is dialled like
 * any number when the forward applies, so sanitizing happens there); empty is stored as null.
 */
function applyForward(kind: ForwardKind, current: Forward, change: ForwardChange): Forward {
  const destination = change.destination === undefined
    ? current.destination
    : (change.destination?.trim() || null);
  const enabled = change.enabled ?? current.enabled;
  if (destination !== null && destination.length > MAX_DESTINATION_LENGTH) {
    throw new InvalidUserServices(
      `${kind}.destination`,
      "destination_too_long",
      `the ${kind} forward destination is longer than ${MAX_DESTINATION_LENGTH} characters`,
    );
  }
  if (enabled && !destination) {
    throw new InvalidUserServices(
      `${kind}.destination`,
      "destination_required",
      `an enabled ${kind} forward needs a destination`,
    );
  }
  return { enabled, destination };
}

/**
 * The three steps of the module's description, around `change`; an error `change` throws leaves
 * everything as it was.
 */
async function changeUser(
  deps: UserServicesDeps,
  userId: number,
  change: (user: UserRecord) => UserRecord,
): Promise<UserServicesResult | null> {
  const result = await transact(deps.store, async (tx) => {
    const before = await tx.get(users, userId);
    if (!before) return null;
    const after = change(before);
    const changed = !sameServices(before, after);
    if (changed) tx.put(users, after);
    return { before, user: changed ? after : before, changed };
  });
  if (!result) return null;
  const { before, user, changed } = result;
  const message = userConfigMessage(user);
  if (JSON.stringify(message) !== JSON.stringify(userConfigMessage(before))) {
    await deps.events.publish([message]);
  }
  await deps.platform.userServicesChanged(user);
  return { user, changed };
}

function sameServices(a: UserRecord, b: UserRecord): boolean {
  return JSON.stringify([a.services, a.forwards]) === JSON.stringify([b.services, b.forwards]);
}

/**
 * A user's do-not-disturb and forwards: the one way to change them, used by the 2.0 routes
 * (`/dnd`, `/forward/{kind}`) and by the configuration daemon (`/1.1/users/{id}/services`,
 * `/forwards`), so both views always agree (decisions §5) and every change is told the same way:
 *
 * 1. the user record changes in one transaction (the record is the source of truth) and, when DND
 *    or a forward actually changed, one `UserConfigUpdate` is published (decisions §7) in the same
 *    atomic operation: the change and its event are durable together, or not at all, and a
 *    change costs one commit, shared with other users' changes committing at the same time
 *    (`lib/store/shared_commit.ts`);
 * 2. the platform is told (`userServicesChanged`), even when nothing changed: the call is
 *    idempotent, so a client retrying after a failed step 2 brings the platform back in line.
 */
import type { EventExport } from "./events/export.ts";
import { userConfigMessage } from "./events/messages.ts";
import type { Platform } from "./platform/port.ts";
import { inTurn } from "./store/in_turn.ts";
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
  events: Pick<EventExport, "stage" | "committed">;
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
 * Sets the user's DND; answers null when there is no such user. `user` is its id, or its record
 * as read from the store (the change's transaction starts from it: one read less).
 *
 * @example
 * await setDnd(services, alice.id, true);
 */
export function setDnd(
  deps: UserServicesDeps,
  user: number | UserRecord,
  enabled: boolean,
): Promise<UserServicesResult | null> {
  return setService(deps, user, "dnd", enabled);
}

/**
 * Sets one of the user's services (`dnd`, `incallfilter`); answers null when there is no such
 * user (`user`: see {@link setDnd}). Only DND is part of the `UserConfigUpdate` event.
 */
export function setService(
  deps: UserServicesDeps,
  user: number | UserRecord,
  service: ServiceName,
  enabled: boolean,
): Promise<UserServicesResult | null> {
  return changeUser(deps, user, (record) => ({
    ...record,
    services: { ...record.services, [service]: { enabled } },
  }));
}

/**
 * Sets several services at once (the daemon's `PUT /users/{id}/services`), in one transaction;
 * services left out keep their state. Answers null when there is no such user (`user`: see {@link setDnd}).
 */
export function setServices(
  deps: UserServicesDeps,
  user: number | UserRecord,
  changes: Partial<Record<ServiceName, boolean>>,
): Promise<UserServicesResult | null> {
  return changeUser(deps, user, (record) => {
    const services = { ...record.services };
    for (const [service, enabled] of Object.entries(changes)) {
      services[service as ServiceName] = { enabled };
    }
    return { ...record, services };
  });
}

/**
 * Changes one forward; an enabled forward needs a destination ({@link InvalidUserServices}).
 * Answers null when there is no such user (`user`: see {@link setDnd}).
 *
 * @example
 * await setForward(services, alice.id, "busy", { enabled: true, destination: "1002" });
 */
export function setForward(
  deps: UserServicesDeps,
  user: number | UserRecord,
  kind: ForwardKind,
  change: ForwardChange,
): Promise<UserServicesResult | null> {
  return setForwards(deps, user, { [kind]: change });
}

/**
 * Changes several forwards at once (the daemon's `PUT /users/{id}/forwards`), all or none:
 * one event for the whole change. Answers null when there is no such user (`user`: see {@link setDnd}).
 */
export function setForwards(
  deps: UserServicesDeps,
  user: number | UserRecord,
  changes: Partial<Record<ForwardKind, ForwardChange>>,
): Promise<UserServicesResult | null> {
  return changeUser(deps, user, (record) => {
    const forwards = { ...record.forwards };
    for (const kind of FORWARD_KINDS) {
      const change = changes[kind];
      if (change) forwards[kind] = applyForward(kind, forwards[kind], change);
    }
    return { ...record, forwards };
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
 * The steps of the module's description, around `change`; an error `change` throws leaves
 * everything as it was.
 */
function changeUser(
  deps: UserServicesDeps,
  who: number | UserRecord,
  change: (user: UserRecord) => UserRecord,
): Promise<UserServicesResult | null> {
  // one change of a user at a time in this process: its writers no longer race each other, and
  // the platform is told of the changes in the order they were committed
  const userId = typeof who === "number" ? who : who.id;
  // (after a wait, the record the caller read is likely stale: read it again)
  return inTurn(deps.store, userId, (waited) => changeUserNow(deps, waited ? userId : who, change));
}

async function changeUserNow(
  deps: UserServicesDeps,
  who: number | UserRecord,
  change: (user: UserRecord) => UserRecord,
): Promise<UserServicesResult | null> {
  const userId = typeof who === "number" ? who : who.id;
  let known = typeof who === "number" ? null : who;
  const result = await transact(deps.store, async (tx) => {
    // the first attempt starts from the record the caller read (checked at commit); a retry reads
    const before = known ? await tx.reuse(users, known) : await tx.get(users, userId);
    known = null;
    if (!before) return null;
    const after = change(before);
    const changed = !sameServices(before, after);
    const message = userConfigMessage(changed ? after : before);
    // a new set of ids at each attempt: those of an attempt that lost are never written
    const staged = JSON.stringify(message) === JSON.stringify(userConfigMessage(before))
      ? null
      : deps.events.stage([message], before.last_event_id ?? null);
    // (an event is staged only for a change: the record keeps that event's id)
    let user = changed ? after : before;
    if (staged) user = { ...user, last_event_id: staged.entries.at(-1)!.id };
    if (changed) tx.put(users, user);
    if (staged) tx.also(staged.add);
    return { user, changed, staged };
  }, { shareCommit: true }); // users changed at once share commits
  if (!result) return null;
  const { user, changed, staged } = result;
  if (staged) deps.events.committed(staged);
  await deps.platform.userServicesChanged(user);
  return { user, changed };
}

function sameServices(a: UserRecord, b: UserRecord): boolean {
  return JSON.stringify([a.services, a.forwards]) === JSON.stringify([b.services, b.forwards]);
}

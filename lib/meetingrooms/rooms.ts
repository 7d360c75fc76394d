/**
 * The meeting rooms' records (docs/meetingrooms.md): personal rooms (the 2.0 API's, Wazo's
 * meetings) and temporary rooms, each with a number of its range (`SVC_MEETINGROOM_PERSONAL_RANGE`,
 * `…_TEMPORARY_RANGE`) in `SVC_MEETINGROOM_CONTEXT`, unique among the rooms and the extensions of
 * that context; and what deleting a room does to the people in it (every one is hung up).
 */
import type { CoreServices } from "../core_services.ts";
import type { NumberRangeSetting } from "../config.ts";
import { PlatformUnavailable } from "../errors.ts";
import { meetingRoomId } from "../platform/rooms.ts";
import { extensions } from "../store/extensions.ts";
import { deleteAuthorizationsOf } from "../store/meeting_authorizations.ts";
import {
  findTemporaryRoom,
  type MeetingKind,
  type MeetingRecord,
  meetings,
} from "../store/meetings.ts";
import { transact, type Transaction, UniqueConflict } from "../store/records.ts";
import type { Store } from "../store/store.ts";
import { RoomRefusal } from "./refusal.ts";

type Services = Pick<CoreServices, "store" | "config" | "clock" | "platform" | "logger">;

/** True when `number` is in `range`: digits of its length, numerically between its ends. */
export function inNumberRange(number: string, range: NumberRangeSetting): boolean {
  return /^\d+$/.test(number) && number.length === range.start.length &&
    Number(number) >= Number(range.start) && Number(number) <= Number(range.end);
}

/** The range the rooms of `kind` take their numbers from. */
export const rangeOf = (config: CoreServices["config"], kind: MeetingKind) =>
  kind === "personal" ? config.personalRoomRange : config.temporaryRoomRange;

/**
 * The number a room of `kind` gets: `wanted` when given (in the range, held by no other room nor
 * extension of the context), else the lowest free one of the range. Read in `tx`: a room or
 * extension written meanwhile runs the transaction again.
 */
async function numberFor(
  tx: Transaction,
  services: Services,
  kind: MeetingKind,
  wanted: string | undefined,
  self: string | null,
): Promise<string> {
  const range = rangeOf(services.config, kind);
  const context = services.config.meetingRoomContext;
  const held = async () => {
    const [rooms, extensionList] = [await tx.all(meetings), await tx.all(extensions)];
    return new Set([
      ...rooms.filter((room) => room.context === context && room.id !== self)
        .map((room) => room.number),
      ...extensionList.filter((extension) => extension.context === context)
        .map((extension) => extension.exten),
    ]);
  };
  if (wanted !== undefined) {
    if (!inNumberRange(wanted, range)) {
      throw new RoomRefusal(
        "outside_range",
        `number ${wanted}: outside the range of ${kind} rooms, ${range.start}-${range.end}`,
      );
    }
    if ((await held()).has(wanted)) {
      throw new RoomRefusal("number_taken", `number ${wanted} is taken`);
    }
    return wanted;
  }
  const taken = await held();
  const width = range.start.length;
  for (let n = Number(range.start); n <= Number(range.end); n++) {
    const number = String(n).padStart(width, "0");
    if (!taken.has(number)) return number;
  }
  throw new RoomRefusal(
    "range_full",
    `every number of the range of ${kind} rooms, ${range.start}-${range.end}, is taken`,
  );
}

/** Runs a write of rooms, a number taken meanwhile by another writer answered `number_taken`. */
async function writing<R>(store: Store, write: (tx: Transaction) => Promise<R>): Promise<R> {
  try {
    return await transact(store, write);
  } catch (error) {
    if (error instanceof UniqueConflict && error.field === "number") {
      throw new RoomRefusal("number_taken", "that number was taken meanwhile");
    }
    throw error;
  }
}

/** What a new room is given; its number is chosen when none is. */
export interface NewMeeting {
  kind: MeetingKind;
  name: string;
  ownerIds: number[];
  number?: string;
  pin: string | null;
  persistent: boolean;
  requireAuthorization: boolean;
  expiresMs: number | null;
}

/** The record of a new room `id`, its number chosen in `tx` (the caller puts it). */
export async function meetingRecord(
  tx: Transaction,
  services: Services,
  input: NewMeeting,
  id: string,
): Promise<MeetingRecord> {
  return {
    id,
    kind: input.kind,
    name: input.name,
    owner_ids: input.ownerIds,
    number: await numberFor(tx, services, input.kind, input.number, null),
    context: services.config.meetingRoomContext,
    pin: input.pin,
    persistent: input.persistent,
    require_authorization: input.requireAuthorization,
    created_ms: services.clock.now(),
    expires_ms: input.expiresMs,
  };
}

/** Creates a room (a personal one, a Wazo meeting, a temporary one). */
export function createMeeting(services: Services, input: NewMeeting): Promise<MeetingRecord> {
  const id = crypto.randomUUID();
  return writing(services.store, async (tx) => {
    const record = await meetingRecord(tx, services, input, id);
    tx.put(meetings, record);
    return record;
  });
}

/** What a change of a room may change; a field left out is kept. */
export interface MeetingChange {
  name?: string;
  /** A new number (checked as a new room's). */
  number?: string;
  pin?: string | null;
  ownerIds?: number[];
  persistent?: boolean;
  requireAuthorization?: boolean;
}

/**
 * Changes the room `id` when `allowed` accepts it as it is now (else `not_found`, nothing
 * changed).
 */
export function updateMeeting(
  services: Services,
  id: string,
  change: MeetingChange,
  allowed: (record: MeetingRecord) => boolean = () => true,
): Promise<MeetingRecord> {
  return writing(services.store, async (tx) => {
    const current = await tx.get(meetings, id);
    if (!current || !allowed(current)) throw notFound(id);
    const number = change.number === undefined || change.number === current.number
      ? current.number
      : await numberFor(tx, services, current.kind, change.number, current.id);
    const record: MeetingRecord = {
      ...current,
      name: change.name ?? current.name,
      number,
      pin: change.pin === undefined ? current.pin : change.pin,
      owner_ids: change.ownerIds ?? current.owner_ids,
      persistent: change.persistent ?? current.persistent,
      require_authorization: change.requireAuthorization ?? current.require_authorization,
    };
    tx.put(meetings, record);
    return record;
  });
}

/**
 * Deletes the room `id` when `allowed` accepts it (else `not_found`): its number stops working at
 * once, whoever is in it is hung up, its guests' authorizations go.
 */
export async function deleteMeeting(
  services: Services,
  id: string,
  allowed: (record: MeetingRecord) => boolean = () => true,
): Promise<MeetingRecord> {
  const deleted = await transact(services.store, async (tx) => {
    const current = await tx.get(meetings, id);
    if (!current || !allowed(current)) throw notFound(id);
    tx.remove(meetings, id);
    return current;
  });
  await hangUpRoom(services, meetingRoomId(deleted.id));
  await deleteAuthorizationsOf(services.store, deleted.id);
  return deleted;
}

/**
 * Everybody in the room `roomId` is hung up (it was deleted). The PBX unreachable: nothing to do
 * now (a restarted Asterisk hung them up already; reconnected, the number no longer leads there),
 * logged.
 */
export async function hangUpRoom(services: Services, roomId: string): Promise<void> {
  try {
    await services.platform.endRoom(roomId);
  } catch (error) {
    if (!(error instanceof PlatformUnavailable)) throw error;
    services.logger.warn("deleted room's participants not hung up: PBX unreachable", { roomId });
  }
}

const notFound = (id: string) => new RoomRefusal("not_found", `no meeting room ${id}`);

/** `userId`'s personal rooms, by creation. */
export async function personalRoomsOf(store: Store, userId: number): Promise<MeetingRecord[]> {
  return (await meetings.all(store))
    .filter((room) => room.kind === "personal" && room.owner_ids.includes(userId))
    .sort((a, b) => a.created_ms - b.created_ms || (a.id < b.id ? -1 : 1));
}

/** Whether `userId` owns `room` (a personal room). */
export const ownedBy = (userId: number) => (room: MeetingRecord) =>
  room.kind === "personal" && room.owner_ids.includes(userId);

/** The personal room `id` of `userId`; another user's is `not_found`, as one that does not exist. */
export async function ownRoom(store: Store, userId: number, id: string): Promise<MeetingRecord> {
  const room = await meetings.get(store, id);
  if (!room || !ownedBy(userId)(room)) throw notFound(id);
  return room;
}

/**
 * The temporary room named `name`, kept until `expiresMs` at least: the existing one (its expiry
 * pushed back), else a new one with a free number of the temporary range. Expired ones nobody is in
 * are deleted first.
 */
export async function temporaryRoom(
  services: Services,
  name: string,
  expiresMs: number,
): Promise<MeetingRecord> {
  await purgeTemporaryRooms(services);
  const known = await findTemporaryRoom(services.store, name);
  if (known) {
    return await updateExpiry(services.store, known.id, expiresMs) ??
      await temporaryRoom(services, name, expiresMs);
  }
  try {
    return await createMeeting(services, {
      kind: "temporary",
      name,
      ownerIds: [],
      pin: null,
      persistent: false,
      requireAuthorization: false,
      expiresMs,
    });
  } catch (error) {
    // another request opened it meanwhile
    if (error instanceof UniqueConflict && error.field === "temporary") {
      return await temporaryRoom(services, name, expiresMs);
    }
    throw error;
  }
}

/** Pushes a room's expiry back to `expiresMs`; null when it is gone. */
function updateExpiry(store: Store, id: string, expiresMs: number) {
  return transact(store, async (tx) => {
    const current = await tx.get(meetings, id);
    if (!current) return null;
    const record = { ...current, expires_ms: Math.max(current.expires_ms ?? 0, expiresMs) };
    tx.put(meetings, record);
    return record;
  });
}

/**
 * Deletes the temporary rooms whose expiry has passed with nobody in them (a temporary room exists
 * while someone is in it, or its tokens may still be used).
 */
export async function purgeTemporaryRooms(services: Services): Promise<void> {
  const now = services.clock.now();
  const expired = (await meetings.all(services.store)).filter((room) =>
    room.kind === "temporary" && (room.expires_ms ?? 0) <= now
  );
  if (!expired.length) return;
  const busy = new Set((await services.platform.rooms()).map((room) => room.roomId));
  for (const room of expired) {
    if (busy.has(meetingRoomId(room.id))) continue;
    await transact(services.store, async (tx) => {
      const current = await tx.get(meetings, room.id);
      if (current && (current.expires_ms ?? 0) <= now) tx.remove(meetings, room.id);
    });
  }
}

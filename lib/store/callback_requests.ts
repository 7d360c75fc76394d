/**
 * Callback requests and their tickets (decisions §6): the only module that knows their keys, and
 * the rules of the agent workflow (take, release, start, report an outcome).
 *
 * - `["callback_requests", listUuid, uuid]` holds a {@link CallbackRequestRecord}, its ticket
 *   inside: the pending requests and the tickets of a list are one range read, and every workflow
 *   step is one atomic write of one key, checked against the versionstamp it was read with, so two
 *   agents taking the same request at once cannot both win.
 * - `["callback_requests_by_uuid", uuid]` holds the request's list UUID: the workflow routes name a
 *   request by its UUID alone. A request never changes list, so this key is written once.
 *
 * An import too large for one atomic operation is a staged write of `bulk.ts`: its requests are
 * stored as `StagedValue`s (records.ts) that readers see only once its last commit removed it from
 * the hidden writes, so the import shows all at once.
 */
import { StoreBusy } from "../errors.ts";
import { sanitizeNumber } from "../phone_numbers.ts";
import { stagedKind, StagedWrite } from "./bulk.ts";
import { type CallbackListRecord, periodOf } from "./callback_lists.ts";
import { isStaged, listVisible, readVisible, type StagedValue } from "./records.ts";
import { keepRacing, raceBackoff, type Store } from "./store.ts";

/** The columns of the import, in order (the spec's "Callback request CSV"). */
export const REQUEST_COLUMNS = [
  "phoneNumber",
  "mobilePhoneNumber",
  "firstName",
  "lastName",
  "company",
  "description",
  "dueDate",
  "period",
] as const;

export type RequestColumn = typeof REQUEST_COLUMNS[number];

/** A request as imported: every column, trimmed, "" for an empty one. */
export type RequestFields = Record<RequestColumn, string>;

/** What an agent reports when the call is over; `Callback` keeps the request open. */
export const OUTCOMES = ["Answered", "NoAnswer", "Fax", "Email", "Callback"] as const;
export type Outcome = typeof OUTCOMES[number];

/** A ticket's status: the last workflow step, or the outcome reported. */
export type TicketStatus = "Taken" | "Released" | "Started" | Outcome;

/** One per request, created by its first workflow step and changed by every later one. */
export interface CallbackTicket {
  uuid: string;
  listUuid: string;
  requestUuid: string;
  queueId: number;
  /** Number of the agent of the last step. */
  agent: string;
  /** The request's due date, `YYYY-MM-DD`. */
  dueDate: string;
  /** ISO time of the last `start`, null before any. */
  started: string | null;
  /** ISO time of the last step. */
  lastUpdate: string;
  status: TicketStatus;
  comment: string;
}

export interface CallbackRequestRecord extends Omit<RequestFields, "period"> {
  uuid: string;
  listUuid: string;
  /** The list's queue when the request was imported; its ticket names it. */
  queueId: number;
  /** `YYYY-MM-DD`. */
  dueDate: string;
  /** Name of one of the list's periods. */
  period: string;
  /** Number of the agent holding the request, null while nobody does. */
  agent: string | null;
  /** True once an outcome other than `Callback` was reported. */
  closed: boolean;
  /** ISO time of the import; with `line`, orders requests otherwise equal. */
  created: string;
  /** The request's line in its import. */
  line: number;
  ticket: CallbackTicket | null;
}

/** Longest field, in characters; `description` may hold more. */
export const MAX_FIELD_LENGTH = 256;
export const MAX_DESCRIPTION_LENGTH = 1024;
/** Longest ticket comment, in characters. */
export const MAX_COMMENT_LENGTH = 2048;

const requestKey = (listUuid: string, uuid: string): Deno.KvKey => [
  "callback_requests",
  listUuid,
  uuid,
];
const requestsOfListPrefix = (listUuid: string): Deno.KvKey => ["callback_requests", listUuid];
const listOfRequestKey = (uuid: string): Deno.KvKey => ["callback_requests_by_uuid", uuid];

/** `YYYY-MM-DD` of `ms` in UTC: "today" of the import and of the workflow. */
export const dayOf = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** True when `text` is `YYYY-MM-DD` and names a day of the calendar (no 2026-02-30). */
export function isDate(text: string): boolean {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day); // Date.UTC would read years 0-99 as 1900-1999
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 &&
    date.getUTCDate() === day;
}

/** The longest number once sanitized, in characters (as a dial destination, lib/dial.ts). */
const MAX_NUMBER_LENGTH = 64;

/**
 * Checks one imported line's fields against `list`: answers the request to create, or the line's
 * errors (all of them, in column order after the missing number). An empty `dueDate` is `today`,
 * an empty `period` the list's default period.
 *
 * @example
 * checkRequest(fields, list, dayOf(clock.now()), 2); // { request } or { errors: ["unknown period x"] }
 */
export function checkRequest(
  fields: RequestFields,
  list: CallbackListRecord,
  today: string,
  line: number,
): { request: NewCallbackRequest } | { errors: string[] } {
  const errors: string[] = [];
  if (!fields.phoneNumber && !fields.mobilePhoneNumber) {
    errors.push("no phoneNumber or mobilePhoneNumber");
  }
  for (const column of REQUEST_COLUMNS) {
    const value = fields[column];
    const max = column === "description" ? MAX_DESCRIPTION_LENGTH : MAX_FIELD_LENGTH;
    if (value.length > max) {
      errors.push(`field ${column} is too long`);
    } else if (column === "phoneNumber" || column === "mobilePhoneNumber") {
      const number = sanitizeNumber(value);
      if (value && !number) errors.push(`${column} holds no number to dial`);
      if (number.length > MAX_NUMBER_LENGTH) errors.push(`field ${column} is too long`);
    } else if (column === "dueDate" && value && !isDate(value)) {
      errors.push(`invalid dueDate ${JSON.stringify(value)}: expected a date YYYY-MM-DD`);
    } else if (column === "period" && !periodOf(list, value)) {
      errors.push(`unknown period ${JSON.stringify(value)}`);
    }
  }
  if (errors.length) return { errors };
  const period = periodOf(list, fields.period)!.name;
  return { request: { ...fields, dueDate: fields.dueDate || today, period, line } };
}

/** Requests written per atomic operation (two keys each), well under Deno KV's limits. */
const WRITE_CHUNK = 100;

/**
 * Requests an import writes in one atomic operation (two keys each), and their estimated bytes
 * (3 a character), within Deno KV's 1,000 mutations and 800 KiB.
 */
const IMPORT_CHUNK = 400;
const IMPORT_BYTES = 600_000;

/** `records` in atomic operations within {@link IMPORT_CHUNK} and {@link IMPORT_BYTES}. */
function importChunks(records: CallbackRequestRecord[]): CallbackRequestRecord[][] {
  const chunks: CallbackRequestRecord[][] = [[]];
  let bytes = 0;
  for (const record of records) {
    const size = 3 * JSON.stringify(record).length + 300;
    if (chunks.at(-1)!.length >= IMPORT_CHUNK || bytes + size > IMPORT_BYTES) {
      chunks.push([]);
      bytes = 0;
    }
    chunks.at(-1)!.push(record);
    bytes += size;
  }
  return chunks;
}

/** A request to create: its trimmed fields, the period resolved, and its line in the import. */
export interface NewCallbackRequest extends Omit<RequestFields, "period" | "dueDate"> {
  dueDate: string;
  period: string;
  line: number;
}

/**
 * Creates requests in `list`, each with a new UUID, free and without a ticket, all or nothing and
 * all at once for readers: one atomic operation when they fit ({@link importChunks}), else a
 * staged write (see the module's comment) that a process dying in the middle leaves invisible,
 * until recovery deletes it. UUIDs are random: they are not checked for collisions.
 *
 * @example
 * const [request] = await createCallbackRequests(store, list, [fields], clock.now());
 */
export async function createCallbackRequests(
  store: Store,
  list: CallbackListRecord,
  inputs: NewCallbackRequest[],
  now: number,
): Promise<CallbackRequestRecord[]> {
  const created = new Date(now).toISOString();
  // the fields in the order the API shows them: identity first
  const records = inputs.map((input): CallbackRequestRecord => ({
    uuid: crypto.randomUUID(),
    listUuid: list.uuid,
    queueId: list.queue_id,
    ...input,
    agent: null,
    closed: false,
    created,
    ticket: null,
  }));
  const put = (op: Deno.AtomicOperation, chunk: CallbackRequestRecord[], staged?: string) => {
    for (const record of chunk) {
      const value = staged ? { __bulk: staged, next: record } satisfies StagedValue : record;
      op.set(listOfRequestKey(record.uuid), record.listUuid)
        .set(requestKey(record.listUuid, record.uuid), value);
    }
    return op;
  };
  const chunks = importChunks(records);
  if (chunks.length === 1) {
    if (records.length) await store.commit((op) => put(op, records));
    return records;
  }
  const write = (await StagedWrite.begin(store, "callback_requests", { listUuid: list.uuid }, {
    hidden: true,
  }))!;
  try {
    for (const chunk of chunks) {
      const result = await store.commit((op) => put(write.gate(op), chunk, write.id));
      if (!result.ok) await write.assertAlive(); // only the gate is checked: it throws
    }
    await write.commit();
  } catch (error) {
    await write.abort();
    throw error;
  }
  await write.finish();
  return records;
}

/**
 * Undoes an import of requests that will not commit: deletes the requests of its list it staged,
 * with their UUID keys.
 */
async function undoRequestImport(store: Store, id: string, { listUuid }: { listUuid: string }) {
  for (;;) {
    const mine = (await store.list<unknown>({ prefix: requestsOfListPrefix(listUuid) }))
      .filter(({ value }) => isStaged(value) && value.__bulk === id).slice(0, WRITE_CHUNK);
    if (!mine.length) return;
    await store.commit((op) => {
      for (const { key, value } of mine) {
        const request = (value as StagedValue).next as CallbackRequestRecord;
        op.delete(key).delete(listOfRequestKey(request.uuid));
      }
      return op;
    });
  }
}

stagedKind("callback_requests", {
  undo: undoRequestImport,
  // committed requests keep their staged form, which readers see as the request
  finish: () => Promise.resolve(),
});

/** The request `uuid`, or null. */
export async function getCallbackRequest(
  store: Store,
  uuid: string,
): Promise<CallbackRequestRecord | null> {
  return (await readRequest(store, uuid))?.value ?? null;
}

async function readRequest(store: Store, uuid: string) {
  if (uuid.length > 64) return null; // no request has such a UUID, and KV keys are limited in size
  const listUuid = (await store.get<string>(listOfRequestKey(uuid))).value;
  if (listUuid === null) return null;
  // an import not committed shows nothing of its requests
  const entry = await readVisible<CallbackRequestRecord>(store, requestKey(listUuid, uuid));
  return entry.value ? { value: entry.value, versionstamp: entry.versionstamp! } : null;
}

/** Every request of `listUuid`, open or closed, in UUID order (one range read). */
export async function listCallbackRequests(
  store: Store,
  listUuid: string,
): Promise<CallbackRequestRecord[]> {
  const entries = await listVisible<CallbackRequestRecord>(store, {
    prefix: requestsOfListPrefix(listUuid),
  });
  return entries.map((entry) => entry.value);
}

/**
 * Deletes every request of `listUuid`, and so their tickets: for when the list is deleted. Written
 * in chunks of {@link WRITE_CHUNK} requests; a workflow step racing with it finds the request gone
 * (its write is checked against the version it read), and answers it is not found.
 *
 * @example
 * await deleteCallbackRequestsOfList(store, list.uuid);
 */
export async function deleteCallbackRequestsOfList(store: Store, listUuid: string): Promise<void> {
  for (;;) {
    const chunk = await store.list<unknown>(
      { prefix: requestsOfListPrefix(listUuid) },
      { limit: WRITE_CHUNK },
    );
    if (!chunk.length) return;
    await store.commit((op) => {
      for (const { key, value } of chunk) {
        // an import's requests too, committed or not
        const request = (isStaged(value) ? value.next : value) as CallbackRequestRecord;
        op.delete(key).delete(listOfRequestKey(request.uuid));
      }
      return op;
    });
  }
}

/**
 * The open requests of `list` in the order agents should call them: due date, then the start of
 * their period, then import order.
 */
export async function pendingRequests(
  store: Store,
  list: CallbackListRecord,
): Promise<CallbackRequestRecord[]> {
  const starts = new Map(list.periods.map((period) => [period.name, period.periodStart]));
  const key = (request: CallbackRequestRecord) =>
    [request.dueDate, starts.get(request.period) ?? "", request.created] as const;
  return (await listCallbackRequests(store, list.uuid))
    .filter((request) => !request.closed)
    .sort((a, b) => {
      const [ka, kb] = [key(a), key(b)];
      for (let i = 0; i < ka.length; i++) {
        if (ka[i]! !== kb[i]!) return ka[i]! < kb[i]! ? -1 : 1;
      }
      return a.line - b.line;
    });
}

/** The requests of `listUuid` that have a ticket, by the ticket's last update, then UUID. */
export async function ticketsOfList(store: Store, listUuid: string) {
  const tickets = (await listCallbackRequests(store, listUuid)).flatMap((request) =>
    request.ticket ? [{ request, ticket: request.ticket }] : []
  );
  return tickets.sort((a, b) =>
    a.ticket.lastUpdate === b.ticket.lastUpdate
      ? (a.ticket.uuid < b.ticket.uuid ? -1 : 1)
      : (a.ticket.lastUpdate < b.ticket.lastUpdate ? -1 : 1)
  );
}

/** Why a workflow step was refused: routes answer each in their own form. */
export type RefusalReason = "not_found" | "closed" | "taken" | "not_taken";

export class CallbackRefusal extends Error {
  constructor(readonly reason: RefusalReason, message: string) {
    super(message);
    this.name = "CallbackRefusal";
  }
}

/**
 * The number of the agent a step on `request` acts for: the holder. Refused when the request is
 * closed or free, or when `agent` is given and is not the holder.
 */
export function holderOf(request: CallbackRequestRecord, agent: string | null): string {
  if (request.closed) throw closedRefusal(request);
  if (request.agent === null) {
    throw new CallbackRefusal("not_taken", `callback request ${request.uuid} is not taken`);
  }
  if (agent !== null && agent !== request.agent) throw takenBy(request);
  return request.agent;
}

/** The refusal of a step on a request that does not exist. */
export const requestNotFound = (uuid: string) =>
  new CallbackRefusal("not_found", `no callback request ${uuid}`);

const closedRefusal = (request: CallbackRequestRecord) =>
  new CallbackRefusal("closed", `callback request ${request.uuid} is closed`);

const takenBy = (request: CallbackRequestRecord) =>
  new CallbackRefusal(
    "taken",
    `callback request ${request.uuid} is taken by agent ${request.agent}`,
  );

/**
 * Changes request `uuid` with `change` (which may throw a refusal) as one atomic write checked
 * against the version read; a concurrent change runs `change` again on the new version.
 */
async function changeRequest(
  store: Store,
  uuid: string,
  change: (request: CallbackRequestRecord) => CallbackRequestRecord,
): Promise<CallbackRequestRecord> {
  for (let lost = 0, startedAt = performance.now(); keepRacing(lost, startedAt);) {
    const current = await readRequest(store, uuid);
    if (!current) throw requestNotFound(uuid);
    const next = change(current.value);
    if (next === current.value) return next;
    const key = requestKey(next.listUuid, uuid);
    const result = await store.commit((op) =>
      op.check({ key, versionstamp: current.versionstamp }).set(key, next)
    );
    if (result.ok) return next;
    await raceBackoff(++lost);
  }
  throw new StoreBusy("the callback request");
}

/** `request` with its ticket after a step of `agent` at `now`, and the request fields given. */
function stepped(
  request: CallbackRequestRecord,
  agent: string,
  now: number,
  change: Pick<CallbackTicket, "status"> & Partial<Pick<CallbackTicket, "started" | "comment">>,
  fields: Partial<CallbackRequestRecord> = {},
): CallbackRequestRecord {
  const next = { ...request, ...fields };
  const previous = request.ticket;
  next.ticket = {
    uuid: previous?.uuid ?? crypto.randomUUID(),
    listUuid: request.listUuid,
    requestUuid: request.uuid,
    queueId: request.queueId,
    agent,
    dueDate: next.dueDate,
    started: change.started ?? previous?.started ?? null,
    lastUpdate: new Date(now).toISOString(),
    status: change.status,
    comment: change.comment ?? previous?.comment ?? "",
  };
  return next;
}

/**
 * Agent `agent` takes request `uuid`. Taking a request one already holds changes nothing; one
 * another agent holds is refused (`taken`), as is a closed one.
 *
 * @example
 * await takeRequest(store, uuid, "8001", clock.now());
 */
export function takeRequest(
  store: Store,
  uuid: string,
  agent: string,
  now: number,
): Promise<CallbackRequestRecord> {
  return changeRequest(store, uuid, (request) => {
    if (request.closed) throw closedRefusal(request);
    if (request.agent === agent) return request;
    if (request.agent !== null) throw takenBy(request);
    return stepped(request, agent, now, { status: "Taken" }, { agent });
  });
}

/**
 * A step of the holder of request `uuid` (who must be `agent` when given, {@link holderOf}):
 * `change` answers the request after it.
 */
function holderStep(
  store: Store,
  uuid: string,
  agent: string | null,
  change: (request: CallbackRequestRecord, holder: string) => CallbackRequestRecord,
): Promise<CallbackRequestRecord> {
  return changeRequest(store, uuid, (request) => change(request, holderOf(request, agent)));
}

/** The holder of request `uuid` (who must be `agent` when given) lets it go. */
export function releaseRequest(
  store: Store,
  uuid: string,
  agent: string | null,
  now: number,
): Promise<CallbackRequestRecord> {
  return holderStep(
    store,
    uuid,
    agent,
    (request, holder) => stepped(request, holder, now, { status: "Released" }, { agent: null }),
  );
}

/** Records that the holder of request `uuid` (who must be `agent` when given) called it at `now`. */
export function recordStart(
  store: Store,
  uuid: string,
  agent: string | null,
  now: number,
): Promise<CallbackRequestRecord> {
  const started = new Date(now).toISOString();
  return holderStep(
    store,
    uuid,
    agent,
    (request, holder) => stepped(request, holder, now, { status: "Started", started }),
  );
}

export interface OutcomeReport {
  status: Outcome;
  /** Absent: the ticket keeps its comment. */
  comment?: string;
  /** The new due date of a `Callback`, `YYYY-MM-DD`; required then, unused otherwise. */
  dueDate?: string;
  /** The agent reporting, who must hold the request; absent: the holder. */
  agent: string | null;
}

/**
 * The holder of request `uuid` reports how the call went: `Callback` releases the request, open,
 * due on `report.dueDate`; any other outcome closes it.
 */
export function reportOutcome(
  store: Store,
  uuid: string,
  report: OutcomeReport,
  now: number,
): Promise<CallbackRequestRecord> {
  return holderStep(store, uuid, report.agent, (request, holder) => {
    const fields = report.status === "Callback"
      ? { agent: null, dueDate: report.dueDate ?? request.dueDate }
      : { agent: null, closed: true };
    const { status, comment } = report;
    return stepped(request, holder, now, { status, comment }, fields);
  });
}

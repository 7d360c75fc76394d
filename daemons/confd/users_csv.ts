/**
 * `/1.1/users/import` (POST creates, PUT updates by uuid) and `/1.1/users/export`: users as CSV.
 * An import is all or nothing (decisions §10): every row is checked first, every bad field of
 * every row is answered at once, and only a file without errors is written, through a bulk write
 * (`lib/store/bulk.ts`) that no reader sees until its last commit, which shows every row at once.
 * One row may create a user with its line (whose caller id follows the user), SIP or SCCP
 * endpoint, extension, voicemail and call permissions. The rows' passwords are hashed through the
 * process's pool, as many at once as it allows, before the write. With `Prefer: respond-async`
 * the import is a job (`jobs.ts`): 202 at once, its answer at `GET /1.1/jobs/{id}`.
 */
import { type Context, Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type * as z from "zod";
import { hashPasswords } from "../../lib/auth/passwords.ts";
import { parseCsv, toCsv, unneutraliseCell } from "../../lib/csv.ts";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import {
  type BulkItem,
  BulkWriteInterrupted,
  bulkWriteOrConflicts,
  type LastCommit,
  reserveIds,
} from "../../lib/store/bulk.ts";
import { type CallPermissionRecord, callPermissions } from "../../lib/store/callpermissions.ts";
import { contexts, inRanges } from "../../lib/store/contexts.ts";
import {
  type SccpEndpointRecord,
  sccpEndpoints,
  type SipEndpointRecord,
  sipEndpoints,
} from "../../lib/store/endpoints.ts";
import { type ExtensionRecord, extensions } from "../../lib/store/extensions.ts";
import type { JobOutcome, JobRun } from "../../lib/store/jobs.ts";
import {
  callerIdIsExplicit,
  followMainUser,
  type LineRecord,
  lines,
  newLineName,
  newProvisioningCode,
  sameCallerId,
} from "../../lib/store/lines.ts";
import { allOf, randomText, type UniqueConflict } from "../../lib/store/records.ts";
import type { Store } from "../../lib/store/store.ts";
import { buildUser, type UserRecord, users } from "../../lib/store/users.ts";
import { type VoicemailRecord, voicemails } from "../../lib/store/voicemails.ts";
import { ConfdError, describe } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { confdIdempotent } from "./idempotency.ts";
import { prefersAsync, startJob } from "./jobs.ts";
import { USER_FIELDS, userCreateSchema, userUpdateSchema } from "./users.ts";

/**
 * The user's own columns: the fields of `/users` lists but `id`, in export order, and the
 * write-only `password`, never exported.
 */
const USER_COLUMNS = [...USER_FIELDS.filter((field) => field !== "id"), "password"];

const LINE_COLUMNS = ["line_protocol", "context", "exten", "sip_username", "sip_secret"] as const;

const VOICEMAIL_COLUMNS = [
  "voicemail_name",
  "voicemail_number",
  "voicemail_context",
  "voicemail_password",
  "voicemail_email",
  "voicemail_attach_audio",
  "voicemail_delete_messages",
  "voicemail_ask_password",
] as const;

const COLUMNS = [...USER_COLUMNS, ...LINE_COLUMNS, ...VOICEMAIL_COLUMNS, "call_permissions"];
const EXPORTED = COLUMNS.filter((column) => column !== "password");

const BOOLEAN_COLUMNS = new Set([
  "enabled",
  "supervision_enabled",
  "call_tranfer_enabled",
  "voicemail_attach_audio",
  "voicemail_delete_messages",
  "voicemail_ask_password",
]);
const INTEGER_COLUMNS = new Set(["ring_seconds", "simultaneous_calls"]);

/** Text columns an empty cell clears on update. */
const CLEARABLE = USER_COLUMNS.filter((column) =>
  !BOOLEAN_COLUMNS.has(column) && !INTEGER_COLUMNS.has(column) &&
  !["uuid", "password", "firstname"].includes(column)
);

type Row = Record<string, string>;

/**
 * The errors of one row, worded as the daemon words errors, in the order the fields are checked:
 * a row reports every bad field, not only the first.
 */
class RowErrors {
  readonly messages: string[] = [];
  readonly #fields = new Set<string>();

  /** Records that `field` is bad; a field already reported is not reported again. */
  add(field: string, reason: string): void {
    if (this.#fields.has(field)) return;
    this.#fields.add(field);
    this.messages.push(`Input Error - field '${field}': ${reason}`);
  }

  get empty(): boolean {
    return this.messages.length === 0;
  }
}

/** Thrown by a row's plan when its {@link RowErrors} are not empty. */
class BadRow extends Error {
  constructor(readonly messages: string[]) {
    super(messages.join("; "));
  }
}

/** `value` when `errors` is empty, else throws them. */
function unlessErrors<T>(errors: RowErrors, value: () => T): T {
  if (!errors.empty) throw new BadRow(errors.messages);
  return value();
}

/** Reads the CSV file; a file-level problem answers 400 at once. */
async function readTable(text: string, required: string) {
  const { header, rows } = await parseCsv(text);
  const fail = (reason: string) => new ConfdError(400, [`Input Error - ${reason}`]);
  if (!header.length) throw fail("the file is empty");
  const seen = new Set<string>();
  for (const column of header) {
    if (!COLUMNS.includes(column)) throw fail(`unknown column '${column}'`);
    if (seen.has(column)) throw fail(`column '${column}' appears twice`);
    seen.add(column);
  }
  if (!seen.has(required)) throw fail(`column '${required}' is required`);
  const errors: string[] = [];
  const table = rows.map(({ line, fields }) => {
    if (fields.length !== header.length) {
      errors.push(
        `Line ${line}: Input Error - ${fields.length} fields where the header has ${header.length}`,
      );
    }
    return {
      line,
      // svc's formula-neutralising `'` removed (docs/decisions.md, "CSV and spreadsheets")
      row: Object.fromEntries(
        header.map((name, i) => [name, unneutraliseCell(fields[i] ?? "")]),
      ) as Row,
    };
  });
  if (errors.length) throw new ConfdError(400, errors);
  return table;
}

/**
 * The typed value of a cell: booleans `true`/`false` (or `1`/`0`), integers, else text; undefined
 * when empty, or bad (recorded in `errors`).
 */
function cell(row: Row, column: string, errors: RowErrors): unknown {
  const raw = row[column];
  if (raw === undefined || raw === "") return undefined;
  if (BOOLEAN_COLUMNS.has(column)) {
    if (raw === "true" || raw === "1") return true;
    if (raw === "false" || raw === "0") return false;
    errors.add(column, "Not a valid boolean.");
    return undefined;
  }
  if (INTEGER_COLUMNS.has(column)) {
    if (/^-?\d{1,9}$/.test(raw)) return Number(raw);
    errors.add(column, "Not a valid integer.");
    return undefined;
  }
  return raw;
}

/**
 * The user fields of a row, checked by the same schema as `POST /users` (or PUT); every bad field
 * goes to `errors` (null then).
 */
function userFields<T extends z.ZodType>(
  row: Row,
  schema: T,
  errors: RowErrors,
): z.infer<T> | null {
  const input: Record<string, unknown> = {};
  for (const column of USER_COLUMNS) {
    if (column === "uuid") continue;
    const value = cell(row, column, errors);
    if (value !== undefined) input[column] = value;
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  for (const issue of result.error.issues) errors.add(issue.path.join(".") || "row", issue.message);
  return null;
}

/** The call permission names of a row's `call_permissions` cell; unknown ones go to `errors`. */
function permissionNames(
  row: Row,
  refs: Awaited<ReturnType<typeof referenceData>>,
  errors: RowErrors,
): string[] {
  const names = (row.call_permissions ?? "").split(";").map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !refs.permissions.has(name));
  if (unknown.length) {
    errors.add(
      "call_permissions",
      unknown.map((name) => `CallPermission was not found ('name': '${name}')`).join(", "),
    );
  }
  return names;
}

/** What the import reads once: contexts by name and call permissions by name. */
async function referenceData(store: Store) {
  const byName = <T extends { name: string }>(records: T[]) =>
    new Map(records.map((record) => [record.name, record]));
  return {
    contexts: byName(await contexts.all(store)),
    permissions: byName(await callPermissions.all(store)),
  };
}

/** The records one row of a POST import creates, before ids are known. */
interface RowPlan {
  line: number;
  user: z.infer<typeof userCreateSchema> & { uuid?: string };
  protocol: "sip" | "sccp" | null;
  context: string | null;
  exten: string | null;
  sip: { username: string | null; secret: string | null };
  voicemail: Omit<VoicemailRecord, "id" | "user_ids"> | null;
  permissions: string[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The plan of one row, or {@link BadRow} with every bad field of the row. */
function planRow(line: number, row: Row, refs: Awaited<ReturnType<typeof referenceData>>): RowPlan {
  const errors = new RowErrors();
  const user = userFields(row, userCreateSchema, errors) as RowPlan["user"] | null;
  if (row.uuid && !UUID.test(row.uuid)) errors.add("uuid", "Not a valid UUID.");
  const protocol = row.line_protocol || null;
  if (protocol !== null && protocol !== "sip" && protocol !== "sccp") {
    errors.add("line_protocol", "Must be one of: sip, sccp.");
  }
  const context = row.context || null;
  const exten = row.exten || null;
  // a context without protocol is a line without endpoint, as svc's export writes one
  if ((row.sip_username || row.sip_secret) && !protocol) {
    errors.add("line_protocol", "SIP columns need line_protocol sip.");
  }
  if ((protocol || exten) && !context) errors.add("context", "A line needs a context.");
  const contextRecord = context ? refs.contexts.get(context) : undefined;
  if (context && !contextRecord) {
    errors.add("context", `Context was not found ('name': '${context}')`);
  }
  if (exten && contextRecord && !inRanges(exten, contextRecord.user_ranges)) {
    errors.add("exten", `Exten ${exten} is outside the user ranges of context ${context}.`);
  }
  if ((row.sip_username || row.sip_secret) && protocol && protocol !== "sip") {
    errors.add(
      row.sip_username ? "sip_username" : "sip_secret",
      "SIP columns need line_protocol sip.",
    );
  }
  for (const column of ["sip_username", "sip_secret"] as const) {
    if (row[column] && !/^[a-zA-Z0-9_.+-]{1,80}$/.test(row[column]!)) {
      errors.add(column, "Must be 1 to 80 letters, digits or _ . + -.");
    }
  }
  const permissions = permissionNames(row, refs, errors);
  const voicemail = planVoicemail(row, contextRecord ? context : null, refs, errors);
  return unlessErrors(errors, () => ({
    line,
    user: { ...user!, ...(row.uuid ? { uuid: row.uuid.toLowerCase() } : {}) },
    protocol: protocol as RowPlan["protocol"],
    context,
    exten,
    sip: { username: row.sip_username || null, secret: row.sip_secret || null },
    voicemail,
    permissions,
  }));
}

/** The voicemail of a row, or null without voicemail columns; bad fields go to `errors`. */
function planVoicemail(
  row: Row,
  lineContext: string | null,
  refs: Awaited<ReturnType<typeof referenceData>>,
  errors: RowErrors,
): RowPlan["voicemail"] {
  if (!VOICEMAIL_COLUMNS.some((column) => row[column])) return null;
  const name = row.voicemail_name ?? "";
  const number = row.voicemail_number ?? "";
  if (!name || name.length > 80) {
    errors.add("voicemail_name", "Required, at most 80 characters.");
  }
  if (!/^\d{1,40}$/.test(number)) errors.add("voicemail_number", "Must be 1 to 40 digits.");
  const context = row.voicemail_context || lineContext || "default";
  if (!refs.contexts.has(context)) {
    errors.add("voicemail_context", `Context was not found ('name': '${context}')`);
  }
  const password = row.voicemail_password || null;
  if (password !== null && !/^\d{1,80}$/.test(password)) {
    errors.add("voicemail_password", "Must be digits.");
  }
  const email = row.voicemail_email || null;
  if (email !== null && !/^[^@\s]+@[^@\s]+$/.test(email)) {
    errors.add("voicemail_email", "Not a valid email address.");
  }
  const flag = (column: string, otherwise: boolean) =>
    (cell(row, column, errors) as boolean | undefined) ?? otherwise;
  return {
    name,
    number,
    context,
    password,
    email,
    pager: null,
    language: null,
    timezone: null,
    max_messages: null,
    attach_audio: flag("voicemail_attach_audio", false),
    delete_messages: flag("voicemail_delete_messages", false),
    ask_password: flag("voicemail_ask_password", true),
    enabled: true,
    options: [],
  };
}

/** How a taken unique value is worded, by collection. */
function conflictMessage(collection: string, error: UniqueConflict): string {
  const [first, second] = [error.value].flat();
  switch (collection) {
    case extensions.name:
      return `Resource Error - Extension already exists ${
        describe({ exten: second, context: first })
      }`;
    case voicemails.name:
      return `Resource Error - Voicemail already exists ${
        describe({ number: second, context: first })
      }`;
    case sipEndpoints.name:
      return `Resource Error - SIPEndpoint already exists ${describe({ username: first })}`;
    case lines.name:
      return `Resource Error - Line already exists ${describe({ [error.field]: first })}`;
    default:
      return `Resource Error - User already exists ${describe({ [error.field]: first })}`;
  }
}

/** Ids reserved for one import: `take(collection)` hands them out in order. */
async function reserve(store: Store, counts: Map<{ name: string }, number>) {
  const next = new Map<string, number>();
  // one sequence key each: reserved together rather than one store round trip after the other
  await Promise.all([...counts].map(async ([collection, count]) => {
    if (count) next.set(collection.name, await reserveIds(store, collection as never, count));
  }));
  return (collection: { name: string }) => {
    const id = next.get(collection.name)!;
    next.set(collection.name, id + 1);
    return id;
  };
}

/** Builds every record of the planned rows, linked to each other; `hashes` by row. */
async function buildRecords(
  store: Store,
  plans: RowPlan[],
  refs: Awaited<ReturnType<typeof referenceData>>,
  hashes: (string | null)[],
) {
  const count = (test: (plan: RowPlan) => boolean) => plans.filter(test).length;
  // the lines stored are read after the hashing, just before the write: the names and codes drawn
  // must be free then
  const [take, existing] = await Promise.all([
    reserve(
      store,
      new Map<{ name: string }, number>([
        [users, plans.length],
        [lines, count((p) => p.context !== null)],
        [sipEndpoints, count((p) => p.protocol === "sip")],
        [sccpEndpoints, count((p) => p.protocol === "sccp")],
        [extensions, count((p) => p.exten !== null)],
        [voicemails, count((p) => p.voicemail !== null)],
      ]),
    ),
    lines.all(store),
  ]);
  const items: { item: BulkItem; row: number }[] = [];
  const created: Record<string, unknown>[] = [];
  const permissions = new Map<number, CallPermissionRecord>();
  // generated line names and codes must be free: every one in use or drawn before is avoided
  const codes = new Set(existing.map((line) => line.provisioning_code));
  const names = new Set(existing.map((line) => line.name));
  const draw = (taken: Set<string>, generate: () => string) => {
    let value = generate();
    while (taken.has(value)) value = generate();
    taken.add(value);
    return value;
  };
  for (const [row, plan] of plans.entries()) {
    const { uuid, password: _, ...fields } = plan.user;
    const user: UserRecord = await buildUser(take(users), fields);
    if (uuid) user.uuid = uuid;
    user.password_hash = hashes[row] ?? null;
    const result: Record<string, unknown> = {
      row_number: plan.line,
      user_id: user.id,
      user_uuid: user.uuid,
    };
    const add = (collection: { name: string }, record: { id: number | string }) =>
      items.push({ item: { collection: collection as never, record }, row });
    if (plan.context) {
      const line: LineRecord = {
        id: take(lines),
        name: draw(names, newLineName),
        protocol: plan.protocol,
        context: plan.context,
        position: 1,
        provisioning_code: draw(codes, newProvisioningCode),
        caller_id_name: null,
        caller_id_num: null,
        caller_id_explicit: false,
        device_id: null,
        endpoint: null,
        extension_ids: [],
        user_ids: [user.id],
      };
      user.line_ids = [line.id];
      result.line_id = line.id;
      if (plan.protocol === "sip") {
        const sip: SipEndpointRecord = {
          id: take(sipEndpoints),
          username: plan.sip.username ?? randomText(8),
          secret: plan.sip.secret ?? randomText(8),
          type: "friend",
          host: "dynamic",
          options: [],
          line_id: line.id,
        };
        line.endpoint = { type: "sip", id: sip.id };
        result.endpoint_sip_id = sip.id;
        add(sipEndpoints, sip);
      } else if (plan.protocol === "sccp") {
        const sccp: SccpEndpointRecord = { id: take(sccpEndpoints), options: [], line_id: line.id };
        line.endpoint = { type: "sccp", id: sccp.id };
        result.endpoint_sccp_id = sccp.id;
        add(sccpEndpoints, sccp);
      }
      if (plan.exten) {
        const extension: ExtensionRecord = {
          id: take(extensions),
          exten: plan.exten,
          context: plan.context,
          enabled: true,
          line_id: line.id,
        };
        line.extension_ids = [extension.id];
        result.extension_id = extension.id;
        add(extensions, extension);
      }
      add(lines, followMainUser(line, user, plan.exten));
    }
    if (plan.voicemail) {
      const voicemail: VoicemailRecord = {
        id: take(voicemails),
        ...plan.voicemail,
        user_ids: [user.id],
      };
      user.voicemail_id = voicemail.id;
      result.voicemail_id = voicemail.id;
      add(voicemails, voicemail);
    }
    for (const name of plan.permissions) {
      const permission = refs.permissions.get(name)!;
      const current = permissions.get(permission.id) ??
        { ...permission, user_ids: [...permission.user_ids] };
      current.user_ids.push(user.id);
      permissions.set(permission.id, current);
      user.callpermission_ids.push(permission.id);
    }
    result.call_permission_ids = user.callpermission_ids;
    add(users, user);
    created.push(result);
  }
  for (const permission of permissions.values()) {
    items.push({
      item: {
        collection: callPermissions as never,
        record: permission,
        previous: refs.permissions.get(permission.name),
      },
      row: -1,
    });
  }
  return { items, created };
}

/**
 * Writes the whole batch, or answers every row's conflict and writes nothing
 * (`bulkWriteOrConflicts`: a value an import not yet committed claimed is waited for). The
 * records are written by a bulk write that readers see only once it is complete: every row at
 * once, or none.
 */
async function writeAll(
  store: Store,
  entries: { item: BulkItem; row: number }[],
  lineOf: (row: number) => number,
  lastCommit?: LastCommit & { committed(): void },
) {
  const items = entries.map((entry) => entry.item);
  let conflicts;
  try {
    conflicts = await bulkWriteOrConflicts(store, items, { lastCommit });
  } catch (error) {
    if (!(error instanceof BulkWriteInterrupted)) throw error;
    throw new ConfdError(409, [
      `Conflict - ${error.message}: nothing was written, send the file again`,
    ]);
  }
  if (conflicts.length) {
    throw new ConfdError(
      400,
      conflicts.map(({ item, error }) =>
        `Line ${lineOf(entries[item]!.row)}: ${
          conflictMessage(items[item]!.collection.name, error)
        }`
      ),
    );
  }
  lastCommit?.committed();
}

/** Plans every row, collecting every error of every row, in row order. */
function planAll<T>(table: { line: number; row: Row }[], plan: (line: number, row: Row) => T): T[] {
  const errors: string[] = [];
  const plans: T[] = [];
  for (const { line, row } of table) {
    try {
      plans.push(plan(line, row));
    } catch (error) {
      if (!(error instanceof BadRow)) throw error;
      errors.push(...error.messages.map((message) => `Line ${line}: ${message}`));
    }
  }
  if (errors.length) throw new ConfdError(400, errors);
  return plans;
}

/**
 * The job an import runs as, if any: told the rows done as their passwords are hashed, and ended
 * inside the import's last commit.
 */
type ImportJob = Pick<JobRun, "running" | "progress" | "lastCommit">;

/** Hashes the rows' passwords (null: none) through the pool, telling `job` each row done. */
function hashRows(passwords: (string | null | undefined)[], job?: ImportJob) {
  let done = 0;
  return hashPasswords(passwords.map((password) => password ?? null), () => {
    job?.progress(++done);
  });
}

/** `POST /users/import`: creates every row's records, or nothing; answers 201 `{created}`. */
async function importCreate(store: Store, text: string, job?: ImportJob): Promise<JobOutcome> {
  // the reference data is read while the file is parsed (a refused file leaves it unused)
  const refsRead = referenceData(store);
  refsRead.catch(() => {});
  const table = await readTable(text, "firstname");
  await job?.running(table.length);
  const refs = await refsRead;
  const plans = planAll(table, (line, row) => planRow(line, row, refs));
  const hashes = await hashRows(plans.map((plan) => plan.user.password), job);
  const { items, created } = await buildRecords(store, plans, refs, hashes);
  const outcome = { status: 201, body: { created } };
  await writeAll(store, items, (row) => plans[row]?.line ?? 0, job?.lastCommit(outcome));
  return outcome;
}

/** User fields a line's caller id is made of (`mainUserCallerId`). */
const CALLER_ID_FIELDS = ["caller_id", "firstname", "lastname"];

/**
 * The lines whose main user is one of `changed` (as they now are) and whose caller id follows it
 * and changes, as bulk items: the line as it becomes and as it was.
 */
async function linesFollowing(store: Store, changed: UserRecord[]) {
  if (!changed.length) return [];
  const byId = new Map(changed.map((user) => [user.id, user]));
  const extensionById = new Map((await extensions.all(store)).map((e) => [e.id, e]));
  return (await lines.all(store)).flatMap((line) => {
    const user = byId.get(line.user_ids[0] ?? 0);
    if (!user || callerIdIsExplicit(line)) return [];
    const first = extensionById.get(line.extension_ids[0] ?? 0);
    const record = followMainUser(line, user, first?.exten ?? null);
    return sameCallerId(line, record) ? [] : [{ record, previous: line }];
  });
}

/**
 * `PUT /users/import`: updates the users named by `uuid` with the user columns present; answers
 * 200 `{updated}`.
 */
async function importUpdate(store: Store, text: string, job?: ImportJob): Promise<JobOutcome> {
  const table = await readTable(text, "uuid");
  await job?.running(table.length);
  const refs = await referenceData(store);
  const plans = planAll(table, (line, row) => {
    const errors = new RowErrors();
    const uuid = row.uuid ?? "";
    if (!UUID.test(uuid)) errors.add("uuid", "A valid uuid is required.");
    const fields = userFields(row, userUpdateSchema, errors);
    const permissions = "call_permissions" in row ? permissionNames(row, refs, errors) : null;
    return unlessErrors(errors, () => {
      // an empty cell clears a text field; booleans and numbers keep their value
      for (const column of CLEARABLE) {
        if (row[column] === "") (fields as Record<string, unknown>)[column] = null;
      }
      return { line, uuid: uuid.toLowerCase(), fields: fields!, permissions };
    });
  });
  const errors: string[] = [];
  const entries: { item: BulkItem; row: number }[] = [];
  const changedPermissions = new Map<number, CallPermissionRecord>();
  const permission = (id: number) => {
    const known = [...refs.permissions.values()].find((p) => p.id === id)!;
    if (!changedPermissions.has(id)) {
      changedPermissions.set(id, { ...known, user_ids: [...known.user_ids] });
    }
    return changedPermissions.get(id)!;
  };
  const updated: Record<string, unknown>[] = [];
  const callerIdChanged: UserRecord[] = [];
  const found: UserRecord[] = [];
  for (const plan of plans) {
    const previous = await users.findBy(store, "uuid", plan.uuid);
    if (previous) found.push(previous);
    else {
      errors.push(
        `Line ${plan.line}: Resource Not Found - User was not found ('uuid': '${plan.uuid}')`,
      );
    }
  }
  if (errors.length) throw new ConfdError(400, errors);
  const hashes = await hashRows(plans.map((plan) => plan.fields.password), job);
  for (const [row, plan] of plans.entries()) {
    const previous = found[row]!;
    const { password, ...fields } = plan.fields as Record<string, unknown> & {
      password?: string | null;
    };
    const user: UserRecord = { ...previous, ...fields };
    if (password !== undefined) user.password_hash = hashes[row] ?? null;
    if (plan.permissions) {
      const wanted = plan.permissions.map((name) => refs.permissions.get(name)!.id);
      for (const id of user.callpermission_ids) {
        if (!wanted.includes(id)) {
          permission(id).user_ids = permission(id).user_ids.filter((u) => u !== user.id);
        }
      }
      for (const id of wanted) {
        if (!permission(id).user_ids.includes(user.id)) permission(id).user_ids.push(user.id);
      }
      user.callpermission_ids = wanted;
    }
    entries.push({ item: { collection: users as never, record: user, previous }, row });
    if (CALLER_ID_FIELDS.some((field) => field in fields)) callerIdChanged.push(user);
    updated.push({ row_number: plan.line, user_id: user.id, user_uuid: user.uuid });
  }
  for (const line of await linesFollowing(store, callerIdChanged)) {
    entries.push({ item: { collection: lines as never, ...line }, row: -1 });
  }
  for (const changed of changedPermissions.values()) {
    const previous = [...refs.permissions.values()].find((p) => p.id === changed.id);
    entries.push({
      item: { collection: callPermissions as never, record: changed, previous },
      row: -1,
    });
  }
  const outcome = { status: 200, body: { updated } };
  await writeAll(store, entries, (row) => plans[row]?.line ?? 0, job?.lastCommit(outcome));
  return outcome;
}

/** One export row per user: the user's columns, its main line, voicemail and call permissions. */
async function exportRows(store: Store): Promise<string[][]> {
  const [allUsers, allLines, sips, allExtensions, allVoicemails, permissions] = await allOf(store, [
    users,
    lines,
    sipEndpoints,
    extensions,
    voicemails,
    callPermissions,
  ]);
  const byId = <T extends { id: number | string }>(records: T[]) =>
    new Map(records.map((record) => [record.id, record]));
  const [lineById, sipById, extensionById, voicemailById, permissionById] = [
    byId(allLines),
    byId(sips),
    byId(allExtensions),
    byId(allVoicemails),
    byId(permissions),
  ];
  const text = (value: unknown) => value === null || value === undefined ? "" : String(value);
  return allUsers.map((user) => {
    const line = user.line_ids.length ? lineById.get(user.line_ids[0]!) : undefined;
    const sip = line?.endpoint?.type === "sip" ? sipById.get(line.endpoint.id) : undefined;
    const extension = line?.extension_ids.length
      ? extensionById.get(line.extension_ids[0]!)
      : undefined;
    const voicemail = user.voicemail_id === null ? undefined : voicemailById.get(user.voicemail_id);
    const values: Record<string, string> = {
      line_protocol: text(line?.protocol === "custom" ? null : line?.protocol),
      context: text(line?.protocol === "custom" ? null : line?.context),
      exten: text(line?.protocol === "custom" ? null : extension?.exten),
      sip_username: text(sip?.username),
      sip_secret: text(sip?.secret),
      voicemail_name: text(voicemail?.name),
      voicemail_number: text(voicemail?.number),
      voicemail_context: text(voicemail?.context),
      voicemail_password: text(voicemail?.password),
      voicemail_email: text(voicemail?.email),
      voicemail_attach_audio: text(voicemail?.attach_audio),
      voicemail_delete_messages: text(voicemail?.delete_messages),
      voicemail_ask_password: text(voicemail?.ask_password),
      call_permissions: user.callpermission_ids.map((id) => permissionById.get(id)?.name ?? "")
        .join(";"),
    };
    return EXPORTED.map((column) =>
      column in values
        ? values[column]!
        : text((user as unknown as Record<string, unknown>)[column])
    );
  });
}

export function userCsvRoutes(services: Services) {
  const { store, tokens } = services;
  const once = confdIdempotent(services);
  /** Runs `importFile` at once, or as a job when the client prefers (`Prefer: respond-async`). */
  const run = (
    importFile: (store: Store, text: string, job?: ImportJob) => Promise<JobOutcome>,
  ) =>
  async (c: Context<AppEnv>) => {
    const text = await c.req.text();
    if (prefersAsync(c.req.header("prefer"))) {
      const request = `${c.req.method} /1.1/users/import`;
      return await startJob(c, services, request, (job) => importFile(store, text, job));
    }
    const { status, body } = await importFile(store, text);
    return c.json(body, status as ContentfulStatusCode);
  };
  return new Hono<AppEnv>()
    .post(
      "/users/import",
      confdAcl(tokens, "confd.users.import.create"),
      once,
      run(importCreate),
    )
    .put("/users/import", confdAcl(tokens, "confd.users.import.update"), once, run(importUpdate))
    .get("/users/export", confdAcl(tokens, "confd.users.export.read"), async (c) => {
      const accept = c.req.header("accept") ?? "";
      if (!/(^|,)\s*text\/csv\s*(;[^,]*)?(,|$)/i.test(accept)) {
        throw new ConfdError(406, ["Not Acceptable - send Accept: text/csv; charset=utf-8"]);
      }
      c.header("Content-Type", "text/csv; charset=utf-8");
      return c.body(toCsv(EXPORTED, await exportRows(store)));
    });
}

/**
 * Personal contacts of CTI users (spec "Personal contacts", decisions §3, docs/contacts.md): the
 * list view, one contact, create, update, delete one or all, CSV export and import. Contacts
 * belong to the token's CTI user; a web service user's token is refused with 403 `Forbidden`, and
 * another user's contact is 404 `ContactNotFound` like one that does not exist.
 */
import * as z from "zod";
import { operation } from "../lib/openapi/operation.ts";
import { type Context, Hono } from "hono";
import { requireAcl } from "../lib/auth/guard.ts";
import { idempotent } from "../lib/idempotency.ts";
import { parseCsv, toCsv, unneutraliseCell } from "../lib/csv.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, MiB } from "../lib/http.ts";
import type { PhoneStatus } from "../lib/platform/port.ts";
import { currentHidden, recentHidden, watchedStatuses } from "../lib/presence/hints.ts";
import type { Services } from "../lib/services.ts";
import {
  CONTACT_FIELDS,
  type ContactChange,
  type ContactField,
  type ContactFields,
  type ContactProblem,
  contactProblems,
  type ContactRecord,
  createContact,
  currentContacts,
  deleteAllContacts,
  deleteContact,
  emptyFields,
  getContact,
  importContacts,
  recentContacts,
  updateContact,
} from "../lib/store/contacts.ts";
import { getUser } from "../lib/store/users.ts";
import { batchedRead } from "../lib/store/shared_read.ts";

/** The list view's columns (spec "Personal contact list view"). */
export const LIST_HEADERS = ["Firstname", "Lastname", "Number", "Mobile", "Favorite"] as const;

/** Largest CSV file an import accepts (decisions §3). */
export const MAX_IMPORT_BYTES = 10 * MiB;

const invalid = (message: string) => new ApiError(400, "InvalidContact", message);
const notFound = (id: string) =>
  new ApiError(404, "ContactNotFound", `contact ${id} does not exist`);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The contact id of the path, lowercased; anything but a UUID names no contact. */
function pathId(c: Context<AppEnv>): string {
  const id = c.req.param("id") ?? "";
  if (!UUID.test(id)) throw notFound(id);
  return id.toLowerCase();
}

/** The token's CTI user id. */
const owner = (c: Context<AppEnv>) => Number(c.get("identity").userId);

/** Writes need the user to exist still: a token outlives a deleted user. */
async function existingOwner(c: Context<AppEnv>, services: Services): Promise<number> {
  const userId = owner(c);
  if (!await getUser(services.store, userId)) {
    const { login } = c.get("identity");
    throw new ApiError(401, "UserNotFound", `user ${login} does not exist any more`);
  }
  return userId;
}

/** The API's message for the first problem of a contact. */
function problemMessage(problem: ContactProblem): string {
  switch (problem.kind) {
    case "empty":
      return "a contact needs a name, number, mobile, fax or email";
    case "too_long":
      return `field ${problem.field}: longer than 256 characters`;
    case "email":
      return "field email: invalid email, expected local@domain";
  }
}

/**
 * The JSON object of a POST or PUT. No body: 400 `InvalidContact`; not JSON: 500
 * `JsonParsingError` (the spec's status); JSON but not an object: 400 `InvalidContact`.
 */
async function readContactBody(c: Context<AppEnv>): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (!text.trim()) throw invalid("the request has no contact: send a JSON object");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(500, "JsonParsingError", "the contact sent is not valid JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalid("the body must be a JSON object");
  }
  return body as Record<string, unknown>;
}

const isField = (name: string): name is ContactField =>
  (CONTACT_FIELDS as readonly string[]).includes(name);

/**
 * The fields a body sends, trimmed, and `favorite` when sent. `id` is refused on POST; on PUT it
 * may repeat the path's id (a client sending back what it read).
 */
function contactChange(body: Record<string, unknown>, pathId?: string): ContactChange {
  const change: ContactChange = {};
  for (const [name, value] of Object.entries(body)) {
    if (isField(name)) {
      if (typeof value !== "string") throw invalid(`field ${name}: expected a string`);
      change[name] = value.trim();
    } else if (name === "favorite") {
      if (typeof value !== "boolean") throw invalid("field favorite: expected a boolean");
      change.favorite = value;
    } else if (name === "id") {
      if (pathId === undefined) throw invalid("field id: assigned by the service");
      if (typeof value !== "string" || value.toLowerCase() !== pathId) {
        throw invalid("field id: differs from the contact's id");
      }
    } else {
      throw invalid(`field ${name}: unknown field`);
    }
  }
  return change;
}

/** A contact as the API answers it. */
const view = (contact: ContactRecord) => ({
  id: contact.id,
  firstname: contact.firstname,
  lastname: contact.lastname,
  number: contact.number,
  mobile: contact.mobile,
  fax: contact.fax,
  email: contact.email,
  company: contact.company,
  favorite: contact.favorite,
});

/** The fields a body may send (a function: built with the schemas, on use). */
const contactFields = () => ({
  ...Object.fromEntries(CONTACT_FIELDS.map((field) => [field, z.string().max(256).optional()])),
  favorite: z.boolean().optional(),
});

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** What a body may send, as `contactChange` reads it: for the OpenAPI document. */
const contactBody = z.lazy(() => z.strictObject(contactFields()));

/** What a PUT may send: the same, and the contact's own `id`. */
const contactUpdateBody = z.lazy(() =>
  z.strictObject({ ...contactFields(), id: z.string().optional() })
);

/** A contact as the API answers it ({@link view}). */
const contactSchema = z.lazy(() =>
  z.object({
    id: z.string(),
    ...Object.fromEntries(CONTACT_FIELDS.map((field) => [field, z.string()])),
    favorite: z.boolean(),
  })
);

/** The list view. */
const listSchema = z.lazy(() =>
  z.object({
    headers: z.array(z.string()),
    entries: z.array(z.object({
      status: z.int().meta({ description: "The phone status of the contact's number" }),
      entry: z.array(z.string()),
      contact_id: z.string(),
    })),
  })
);

/** What an import did, line by line. */
const importAnswer = z.lazy(() =>
  z.object({
    created: z.array(z.object({ id: z.string(), lastname: z.string() })),
    failed: z.array(z.object({ line: z.int(), errors: z.array(z.string()) })),
  })
);

const notFoundError = { 404: "`ContactNotFound`" };

/** Case- and accent-insensitive sort key. */
const fold = (text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/**
 * The list view's and the export's order: lastname, then firstname, case- and
 * accent-insensitively; then creation order (`created`, contacts stored before it existed first),
 * then the id. An export re-imported into an empty account is numbered in file order, so its
 * export is the same file.
 */
export function sortContacts(contacts: ContactRecord[]): ContactRecord[] {
  const keyed = contacts.map((contact) => ({
    contact,
    lastname: fold(contact.lastname),
    firstname: fold(contact.firstname),
    created: contact.created ?? 0,
  }));
  keyed.sort((a, b) => {
    if (a.lastname !== b.lastname) return a.lastname < b.lastname ? -1 : 1;
    if (a.firstname !== b.firstname) return a.firstname < b.firstname ? -1 : 1;
    if (a.created !== b.created) return a.created - b.created;
    return a.contact.id < b.contact.id ? -1 : a.contact.id > b.contact.id ? 1 : 0;
  });
  return keyed.map(({ contact }) => contact);
}

/** What the list view and the export derive from a user's contacts, kept while they last. */
interface Derived {
  sorted: readonly ContactRecord[];
  /** Distinct non-empty numbers, to ask their statuses. */
  numbers: string[];
  /** Each sorted contact's list view entry, without its status. */
  entries: { entry: string[]; contact_id: string; number: string }[];
  /**
   * The list view's body for the statuses of `signature`, read at the platform's status `version`
   * with the numbers `hidden` then (lib/presence/hints.ts), kept for the next request (as text:
   * Deno copies a byte body in `new Response`, and writes a text straight from the string).
   */
  body?: {
    version: number | null;
    hidden: ReadonlySet<string>;
    signature: string;
    text: string;
  };
}

const derivedViews = new WeakMap<readonly ContactRecord[], Derived>();

function derive(contacts: readonly ContactRecord[]): Derived {
  let derived = derivedViews.get(contacts);
  if (derived) return derived;
  const sorted = sortContacts([...contacts]);
  derived = {
    sorted,
    numbers: [...new Set(sorted.map((contact) => contact.number).filter(Boolean))],
    entries: sorted.map((contact) => ({
      entry: [
        contact.firstname,
        contact.lastname,
        contact.number,
        contact.mobile,
        String(contact.favorite),
      ],
      contact_id: contact.id,
      number: contact.number,
    })),
  };
  derivedViews.set(contacts, derived);
  return derived;
}

type Statuses = Map<string, PhoneStatus>;

/**
 * The list view (spec "Personal contact list view"), `status` as a watcher sees it
 * (lib/presence/hints.ts: the platform's, -2 for a user who may not be watched). The user's
 * contacts come from `recentContacts` (no read) or `currentContacts` (one read, shared); the
 * statuses from one platform call (shared with the list views asked meanwhile), skipped while the
 * platform's status version and the numbers hidden are those of the kept answer. Not async: a
 * list kept and still current is answered at once, without a promise (the hot path).
 */
function listView(
  c: Context<AppEnv>,
  services: Services,
  phoneStatuses: (numbers: Iterable<string>) => Promise<Statuses>,
  userId: number,
): Response | Promise<Response> {
  const { store, platform } = services;
  const recent = recentContacts(store, userId);
  if (recent) {
    const body = derive(recent).body;
    const version = platform.phoneStatusVersion();
    if (
      body && version !== null && body.version === version && body.hidden === recentHidden(store)
    ) {
      return jsonResponse(c, body.text);
    }
  }
  return freshListView(c, services, phoneStatuses, userId);
}

/** The list view after reading what may have changed: the contacts, the statuses. */
async function freshListView(
  c: Context<AppEnv>,
  services: Services,
  phoneStatuses: (numbers: Iterable<string>) => Promise<Statuses>,
  userId: number,
): Promise<Response> {
  const { store, platform } = services;
  const derived = derive(recentContacts(store, userId) ?? await currentContacts(store, userId));
  // read before asking: a status changing meanwhile changes it, and the next view asks again
  const version = platform.phoneStatusVersion();
  const hidden = await currentHidden(store);
  let body = derived.body;
  if (version === null || body?.version !== version || body.hidden !== hidden) {
    const statuses = derived.numbers.length ? await phoneStatuses(derived.numbers) : new Map();
    // the text changes only with the contacts (a new `derived`) or a status: reuse it
    const signature = derived.numbers.map((number) => statuses.get(number) ?? -2).join(",");
    let text = body?.text;
    if (text === undefined || body?.signature !== signature) {
      text = JSON.stringify({
        headers: LIST_HEADERS,
        entries: derived.entries.map(({ entry, contact_id, number }) => ({
          status: statuses.get(number) ?? -2,
          entry,
          contact_id,
        })),
      });
    }
    body = derived.body = { version, hidden, signature, text };
  }
  return jsonResponse(c, body.text);
}

/** Built through the context, which gives it the request's headers (`X-Request-Id`). */
const jsonResponse = (c: Context<AppEnv>, text: string) => c.body(text, 200, JSON_HEADERS);

const JSON_HEADERS = { "Content-Type": "application/json" };

/** The bytes of an import: the multipart part `file`, or else the whole body. */
async function importBytes(c: Context<AppEnv>): Promise<Uint8Array> {
  const type = c.req.header("content-type") ?? "";
  if (!/^multipart\/form-data\b/i.test(type)) return new Uint8Array(await c.req.arrayBuffer());
  let form: FormData;
  try {
    form = await c.req.raw.formData();
  } catch (error) {
    if (error instanceof ApiError) throw error; // the body limit
    throw invalid("the multipart body cannot be read");
  }
  const file = form.get("file");
  if (file === null) throw invalid("the multipart body has no part named file");
  return typeof file === "string"
    ? new TextEncoder().encode(file)
    : new Uint8Array(await file.arrayBuffer());
}

/** One line's contact, or what is wrong with it (decisions §3 per-line texts). */
type LineCheck = { line: number; fields: ContactFields } | { line: number; errors: string[] };

/**
 * Reads an import file: refuses it whole (400 `InvalidContact`) when it is too large, not UTF-8,
 * empty, without header, or with an unknown or repeated column; else checks each data line.
 */
async function readImport(bytes: Uint8Array): Promise<LineCheck[]> {
  if (bytes.length > MAX_IMPORT_BYTES) {
    throw invalid(`the file is larger than ${MAX_IMPORT_BYTES} bytes`);
  }
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalid("the file is not valid UTF-8");
  }
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  if (!body.trim()) throw invalid("the file is empty");
  const { header, rows } = await parseCsv(body);
  const columns = header.map((name) => name.toLowerCase());
  const firstLine = body.slice(0, body.search(/\r?\n|$/));
  if (!firstLine.trim() || !columns.some(isField)) {
    throw invalid(`the file has no header: line 1 must name its columns among ${CONTACT_FIELDS}`);
  }
  for (const [i, name] of columns.entries()) {
    if (!isField(name)) throw invalid(`unknown column ${JSON.stringify(header[i])}`);
    if (columns.indexOf(name) !== i) throw invalid(`column ${name} appears more than once`);
  }
  const named = columns as ContactField[];
  return rows.map(({ line, fields: values }): LineCheck => {
    if (values.length > named.length) return { line, errors: ["too many fields"] };
    if (values.length < named.length) return { line, errors: ["missing fields"] };
    const fields = emptyFields();
    // trimmed, svc's formula-neutralising `'` removed (docs/decisions.md), trimmed again
    named.forEach((name, i) => (fields[name] = unneutraliseCell(values[i]!.trim()).trim()));
    const problems = contactProblems(fields);
    return problems.length ? { line, errors: problems.map((p) => p.text) } : { line, fields };
  });
}

export function contactRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens, config } = services;
  // contacts belong to CTI users, never to web service users
  const acl = (template: string) =>
    requireAcl(tokens, template, { ctiOnly: "personal contacts belong to CTI users only" });
  // list views asked while a platform call runs share the next one
  const phoneStatuses = batchedRead((numbers: string[]) => watchedStatuses(services, numbers));

  return new Hono<AppEnv>()
    .get(
      "/contact/personal",
      acl("svc.rest.contact.personal.read"),
      operation(
        () => ({
          summary: "The user's personal contacts: the list view",
          responses: { 200: listSchema },
        }),
        (c) => listView(c, services, phoneStatuses, owner(c)),
      ),
    )
    .get(
      "/contact/display/personal",
      acl("svc.rest.contact.display.personal.read"),
      operation(
        () => ({ summary: "The list view, under its other name", responses: { 200: listSchema } }),
        (c) => listView(c, services, phoneStatuses, owner(c)),
      ),
    )
    .post(
      "/contact/personal",
      acl("svc.rest.contact.personal.create"),
      operation(() => ({
        summary: "Creates a personal contact",
        body: contactBody,
        responses: { 201: contactSchema },
        errors: {
          400: "`InvalidContact`",
          409: "`DuplicateContact`",
          500: "`JsonParsingError`: the body is not JSON (the spec's status)",
        },
      }), async (c) => {
        const change = contactChange(await readContactBody(c));
        const { favorite = false, ...sent } = change;
        const fields = { ...emptyFields(), ...sent };
        const problems = contactProblems(fields);
        if (problems.length) throw invalid(problemMessage(problems[0]!));
        const userId = await existingOwner(c, services);
        const outcome = await createContact(store, userId, fields, favorite, config.maxContacts);
        if (outcome.status === "duplicate") {
          throw new ApiError(409, "DuplicateContact", "an equal contact already exists");
        }
        if (outcome.status === "limit") {
          throw invalid(`contact limit reached: at most ${config.maxContacts} contacts`);
        }
        c.header("Location", `${c.req.path}/${outcome.contact.id}`);
        return c.json(view(outcome.contact), 201);
      }),
    )
    .delete(
      "/contact/personal",
      acl("svc.rest.contact.personal.delete"),
      operation(() => ({
        summary: "Deletes every personal contact of the user",
        responses: { 204: null },
      }), async (c) => {
        await deleteAllContacts(store, owner(c));
        return c.body(null, 204);
      }),
    )
    .get(
      "/contact/personal/:id",
      acl("svc.rest.contact.personal.{id}.read"),
      operation(() => ({
        summary: "One personal contact",
        responses: { 200: contactSchema },
        errors: notFoundError,
      }), async (c) => {
        const id = pathId(c);
        const contact = await getContact(store, owner(c), id);
        if (!contact) throw notFound(id);
        return c.json(view(contact));
      }),
    )
    .put(
      "/contact/personal/:id",
      acl("svc.rest.contact.personal.{id}.update"),
      operation(() => ({
        summary: "Changes the fields sent of a personal contact",
        body: contactUpdateBody,
        responses: { 200: contactSchema },
        errors: { ...notFoundError, 400: "`InvalidContact`", 409: "`DuplicateContact`" },
      }), async (c) => {
        const id = pathId(c);
        const change = contactChange(await readContactBody(c), id);
        const userId = await existingOwner(c, services);
        const outcome = await updateContact(store, userId, id, change);
        switch (outcome.status) {
          case "not_found":
            throw notFound(id);
          case "invalid":
            throw invalid(problemMessage(outcome.problems[0]!));
          case "duplicate":
            throw new ApiError(409, "DuplicateContact", "an equal contact already exists");
        }
        return c.json(view(outcome.contact));
      }),
    )
    .delete(
      "/contact/personal/:id",
      acl("svc.rest.contact.personal.{id}.delete"),
      operation(() => ({
        summary: "Deletes a personal contact",
        responses: { 204: null },
        errors: notFoundError,
      }), async (c) => {
        const id = pathId(c);
        if (!await deleteContact(store, owner(c), id)) throw notFound(id);
        return c.body(null, 204);
      }),
    )
    .get(
      "/contact/export/personal",
      acl("svc.rest.contact.export.personal.read"),
      operation(() => ({
        summary: "The user's personal contacts as a CSV file",
        responses: { 200: { mediaType: "text/csv", description: "The contacts" } },
      }), async (c) => {
        const { sorted } = derive(await currentContacts(store, owner(c)));
        const rows = sorted.map((contact) => CONTACT_FIELDS.map((field) => contact[field]));
        return c.body(toCsv(CONTACT_FIELDS, rows), 200, {
          "Content-Type": "text/csv; charset=utf-8",
          "Content-Disposition": 'attachment; filename="contacts.csv"',
        });
      }),
    )
    .post(
      "/contact/import/personal",
      acl("svc.rest.contact.import.personal.create"),
      idempotent(services),
      operation(() => ({
        summary: "Imports personal contacts from a CSV file (at most 10 MiB)",
        body: {
          content: {
            "text/csv": null,
            "multipart/form-data": z.object({ file: z.string().meta({ format: "binary" }) }),
          },
        },
        responses: { 201: importAnswer },
        errors: { 400: "`InvalidContact`: the file as a whole is refused" },
      }), async (c) => {
        const checks = await readImport(await importBytes(c));
        const userId = await existingOwner(c, services);
        const valid = checks.flatMap((check) => "fields" in check ? [check] : []);
        const outcomes = await importContacts(
          store,
          userId,
          valid.map((check) => check.fields),
          config.maxContacts,
        );
        const created: { id: string; lastname: string }[] = [];
        const failed = new Map<number, string[]>();
        for (const check of checks) if ("errors" in check) failed.set(check.line, check.errors);
        outcomes.forEach((outcome, i) => {
          const { line } = valid[i]!;
          if (outcome.status === "created") {
            created.push({ id: outcome.contact.id, lastname: outcome.contact.lastname });
          } else {
            failed.set(line, [
              outcome.status === "duplicate" ? "duplicate contact" : "contact limit reached",
            ]);
          }
        });
        const failures = [...failed].sort(([a], [b]) => a - b)
          .map(([line, errors]) => ({ line, errors }));
        return c.json({ created, failed: failures }, 201);
      }),
    );
}

/**
 * Callback lists in the 2.0 API (spec "Callback lists", decisions §6), web service users only. The
 * lists themselves are configured through `/1.1/callback_lists`; the requests and their tickets
 * live in `lib/store/callback_requests.ts`. See docs/callbacks.md.
 *
 * - `POST /callback_lists/callback_requests/csv` (ACL
 *   `svc.rest.callback_lists.callback_requests.csv.create`): body `{listUuid, csv}` (sent as
 *   `text/json` by the spec's clients, read as JSON whatever the type); 201 `{created, failed}`.
 * - `POST /callback_lists/callback_tickets/csv` (ACL
 *   `svc.rest.callback_lists.callback_tickets.csv.create`): body `{listUuid}`; 200 `text/csv`.
 * - The agent workflow (beyond the spec): `GET /callback_lists` (ACL `svc.rest.callback_lists.read`)
 *   and, on `/callback_lists/callback_requests/{uuid}`, `POST …/take`, `…/release`, `…/start`
 *   (ACLs `svc.rest.callback_lists.callback_requests.{uuid}.take|release|start.create`) and
 *   `PUT …/ticket` (ACL `svc.rest.callback_lists.callback_requests.{uuid}.ticket.update`).
 *
 * Bodies: none 400 `JsonBodyNotFound` (release and start may have none), not JSON or not the model
 * 400 `JsonErrorDecoding` (the spec's errors 7); an unknown list or agent 400 `BadRequest`; an
 * unknown request 404 `CallbackRequestNotFound`; a request in the wrong state 409.
 */
import { operation } from "../lib/openapi/operation.ts";
import { type Context, Hono } from "hono";
import * as z from "zod";
import { agentStatus, userOfAgentLine } from "../lib/agent_control.ts";
import { requireAcl } from "../lib/auth/guard.ts";
import { idempotent } from "../lib/idempotency.ts";
import { SERVICE_BODY } from "../lib/control.ts";
import { toCsv } from "../lib/csv.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, readBody } from "../lib/http.ts";
import { bodyObject, required } from "../lib/body_schema.ts";
import { sanitizeNumber } from "../lib/phone_numbers.ts";
import { PlatformRefusal } from "../lib/platform/port.ts";
import type { Services } from "../lib/services.ts";
import { type AgentRecord, findAgentByNumber } from "../lib/store/agents.ts";
import {
  type CallbackListRecord,
  getCallbackList,
  listCallbackLists,
} from "../lib/store/callback_lists.ts";
import {
  CallbackRefusal,
  type CallbackRequestRecord,
  type CallbackTicket,
  checkRequest,
  createCallbackRequests,
  dayOf,
  getCallbackRequest,
  holderOf,
  isDate,
  MAX_COMMENT_LENGTH,
  type NewCallbackRequest,
  OUTCOMES,
  pendingRequests,
  recordStart,
  releaseRequest,
  reportOutcome,
  REQUEST_COLUMNS,
  type RequestColumn,
  type RequestFields,
  requestNotFound,
  takeRequest,
  ticketsOfList,
} from "../lib/store/callback_requests.ts";

/** The import's header line, exactly. */
export const REQUEST_CSV_HEADER = REQUEST_COLUMNS.join("|");

/** The request's columns a ticket row repeats: all but the due date and period. */
const REQUEST_TEXT_COLUMNS = REQUEST_COLUMNS.filter((column) =>
  column !== "dueDate" && column !== "period"
) as Exclude<RequestColumn, "dueDate" | "period">[];

/** The ticket export's columns (decisions §6): the ticket's, then the request's but due date and period. */
export const TICKET_CSV_HEADER = [
  "uuid",
  "listUuid",
  "requestUuid",
  "queueId",
  "agent",
  "dueDate",
  "started",
  "lastUpdate",
  "status",
  "comment",
  ...REQUEST_TEXT_COLUMNS,
];

/** Most data lines one import may hold. */
export const MAX_IMPORT_LINES = 10_000;

const badRequest = (message: string) => new ApiError(400, "BadRequest", message);

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const text = () => z.string(required("a string"));
const agentNumber = () => text().max(64, "longer than 64 characters");
const importSchema = z.lazy(() => bodyObject({ listUuid: text(), csv: text() }));
const exportSchema = z.lazy(() => bodyObject({ listUuid: text() }));
const takeSchema = z.lazy(() => bodyObject({ agentNumber: agentNumber() }));
const holderSchema = z.lazy(() => bodyObject({ agentNumber: agentNumber().optional() }));
const ticketSchema = z.lazy(() =>
  bodyObject({
    status: z.enum(OUTCOMES, required(`one of ${OUTCOMES.join(", ")}`)),
    comment: text().max(MAX_COMMENT_LENGTH, `longer than ${MAX_COMMENT_LENGTH} characters`)
      .optional(),
    dueDate: text().refine(isDate, "expected a date YYYY-MM-DD").optional(),
    agentNumber: agentNumber().optional(),
  }).superRefine((body, ctx) => {
    if (body.status === "Callback" && body.dueDate === undefined) {
      ctx.addIssue({ code: "custom", path: ["dueDate"], message: "required with status Callback" });
    }
    if (body.status !== "Callback" && body.dueDate !== undefined) {
      ctx.addIssue({ code: "custom", path: ["dueDate"], message: "only with status Callback" });
    }
  })
);

/** A body that may be left out: none is `{}`. */
/** A callback request as the routes answer it ({@link requestView}): its main fields. */
const requestSchema = z.lazy(() =>
  z.looseObject({
    uuid: z.string(),
    listUuid: z.string(),
    phoneNumber: z.string(),
    dueDate: z.string(),
    period: z.string(),
    agent: z.string().nullable(),
    closed: z.boolean(),
  })
);
const listSchema = z.lazy(() =>
  z.object({
    uuid: z.string(),
    name: z.string(),
    queueId: z.int(),
    periods: z.array(z.looseObject({ name: z.string() })),
    callbacks: z.array(requestSchema),
  })
);
const workflowErrors = {
  400: "`BadRequest`: an unknown agent",
  404: "`CallbackRequestNotFound`",
  409: "`CallbackRequestClosed`, `CallbackRequestTaken`, `CallbackRequestNotTaken`",
};

async function optionalBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  if (!(await c.req.text()).trim()) return schema.parse({});
  return await readBody(c, schema, SERVICE_BODY);
}

/** A request as answered: its fields, holder, state and ticket. */
export function requestView(
  { created: _created, line: _line, queueId: _queueId, ...view }: CallbackRequestRecord,
) {
  return view;
}

/** A list as `GET /callback_lists` answers it, with its pending requests. */
function listView(list: CallbackListRecord, callbacks: CallbackRequestRecord[]) {
  return {
    uuid: list.uuid,
    name: list.name,
    queueId: list.queue_id,
    periods: list.periods,
    callbacks: callbacks.map(requestView),
  };
}

/** One export row: the ticket, then the request's fields. */
function ticketRow(request: CallbackRequestRecord, ticket: CallbackTicket): string[] {
  return [
    ticket.uuid,
    ticket.listUuid,
    ticket.requestUuid,
    String(ticket.queueId),
    ticket.agent,
    ticket.dueDate,
    ticket.started ?? "",
    ticket.lastUpdate,
    ticket.status,
    ticket.comment,
    ...REQUEST_TEXT_COLUMNS.map((column) => request[column]),
  ];
}

/** A line of the import: its number in the file (the header is 1) and its fields, trimmed. */
interface ImportLine {
  line: number;
  fields: string[];
}

/**
 * The data lines of an import's `csv`: `\n` or `\r\n` line ends, `|` between fields, no quoting (a
 * field cannot hold `|`), a BOM ignored, blank lines skipped. A header other than
 * {@link REQUEST_CSV_HEADER} or too many lines: 400 `BadRequest`.
 */
export function importLines(csv: string): ImportLine[] {
  const [header = "", ...rest] = csv.replace(/^\uFEFF/, "").split("\n");
  if (header.trim() !== REQUEST_CSV_HEADER) {
    throw badRequest(
      `the csv header must be ${REQUEST_CSV_HEADER}, got ${JSON.stringify(header.trim())}`,
    );
  }
  const lines = rest.flatMap((text, i) =>
    text.trim() ? [{ line: i + 2, fields: text.split("|").map((field) => field.trim()) }] : []
  );
  if (lines.length > MAX_IMPORT_LINES) {
    throw badRequest(`more than ${MAX_IMPORT_LINES} callback requests in one import`);
  }
  return lines;
}

/** Checks one import line: the request to create, or its errors. */
function checkLine({ line, fields }: ImportLine, list: CallbackListRecord, today: string) {
  if (fields.length !== REQUEST_COLUMNS.length) {
    return {
      errors: [fields.length > REQUEST_COLUMNS.length ? "too many fields" : "missing fields"],
    };
  }
  const named = Object.fromEntries(REQUEST_COLUMNS.map((column, i) => [column, fields[i]!]));
  return checkRequest(named as RequestFields, list, today, line);
}

/** A workflow refusal as the API answers it. */
function refusalError(refusal: CallbackRefusal): ApiError {
  switch (refusal.reason) {
    case "not_found":
      return new ApiError(404, "CallbackRequestNotFound", refusal.message);
    case "closed":
      return new ApiError(409, "CallbackRequestClosed", refusal.message);
    case "taken":
      return new ApiError(409, "CallbackRequestTaken", refusal.message);
    case "not_taken":
      return new ApiError(409, "CallbackRequestNotTaken", refusal.message);
  }
}

/** Runs a workflow step; its refusal becomes the API's answer. */
async function step<T>(run: () => T | Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof CallbackRefusal) throw refusalError(error);
    throw error;
  }
}

export function callbackRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens, platform, clock, logger } = services;
  const once = idempotent(services);

  /** The list `uuid`; 400 `BadRequest` when there is none. */
  async function knownList(uuid: string): Promise<CallbackListRecord> {
    const list = uuid.length <= 64 ? await getCallbackList(store, uuid) : null;
    if (!list) throw badRequest(`callback list ${JSON.stringify(uuid)} not found`);
    return list;
  }

  /** The agent numbered `number`; 400 `BadRequest` when there is none. */
  async function knownAgent(number: string): Promise<AgentRecord> {
    const agent = /^\d{1,64}$/.test(number) ? await findAgentByNumber(store, number) : null;
    if (!agent) throw badRequest(`agent ${JSON.stringify(number)} not found`);
    return agent;
  }

  /** The agent a holder's step names, checked to exist; null when the body names none. */
  async function namedAgent(number: string | undefined): Promise<string | null> {
    return number === undefined ? null : (await knownAgent(number)).number;
  }

  /** The user whose line `agent` is logged on: a start dials from there; 409 when none. */
  async function agentLineUser(agent: AgentRecord) {
    const status = await agentStatus(services, agent);
    if (!status.logged) {
      throw new ApiError(409, "AgentNotLoggedIn", `agent ${agent.number} is not logged in`);
    }
    const user = await userOfAgentLine(services, status);
    if (!user) {
      throw new ApiError(
        409,
        "AgentLineWithoutUser",
        `the line agent ${agent.number} is logged on (${status.extension}) has no user`,
      );
    }
    return user;
  }

  const uuidOf = (c: Context) => c.req.param("uuid")!;
  const requests = "/callback_lists/callback_requests";
  const acl = (action: string) =>
    requireAcl(tokens, `svc.rest.callback_lists.callback_requests.{uuid}.${action}`);

  return new Hono<AppEnv>()
    .get(
      "/callback_lists",
      requireAcl(tokens, "svc.rest.callback_lists.read"),
      operation(() => ({
        summary: "The callback lists, each with its pending requests",
        responses: { 200: z.array(listSchema) },
      }), async (c) => {
        const lists = [...await listCallbackLists(store)].sort((a, b) =>
          a.name === b.name ? (a.uuid < b.uuid ? -1 : 1) : (a.name < b.name ? -1 : 1)
        );
        const pending = await Promise.all(lists.map((list) => pendingRequests(store, list)));
        return c.json(lists.map((list, i) => listView(list, pending[i]!)));
      }),
    )
    .post(
      `${requests}/csv`,
      requireAcl(tokens, "svc.rest.callback_lists.callback_requests.csv.create"),
      once,
      operation(() => ({
        summary: "Imports callback requests into a list from a CSV text (`|`-separated)",
        body: importSchema,
        responses: {
          201: z.object({
            created: z.array(z.object({ uuid: z.string(), phoneNumber: z.string() })),
            failed: z.array(z.object({ line: z.int(), errors: z.array(z.string()) })),
          }),
        },
        errors: { 400: "`BadRequest`: an unknown list, a bad header, too many lines" },
      }), async (c) => {
        const body = await readBody(c, importSchema, SERVICE_BODY);
        const list = await knownList(body.listUuid);
        const today = dayOf(clock.now());
        const valid: NewCallbackRequest[] = [];
        const failed: { line: number; errors: string[] }[] = [];
        for (const line of importLines(body.csv)) {
          const checked = checkLine(line, list, today);
          if ("request" in checked) valid.push(checked.request);
          else failed.push({ line: line.line, errors: checked.errors });
        }
        const created = await createCallbackRequests(store, list, valid, clock.now());
        logger.info("callback requests imported", {
          requestId: c.get("requestId"),
          listUuid: list.uuid,
          created: created.length,
          failed: failed.length,
        });
        return c.json({
          created: created.map(({ uuid, phoneNumber }) => ({ uuid, phoneNumber })),
          failed,
        }, 201);
      }),
    )
    .post(
      "/callback_lists/callback_tickets/csv",
      requireAcl(tokens, "svc.rest.callback_lists.callback_tickets.csv.create"),
      operation(() => ({
        summary: "The tickets of a list as CSV (`|`-separated)",
        body: exportSchema,
        responses: { 200: { mediaType: "text/csv", description: "The tickets" } },
        errors: { 400: "`BadRequest`: an unknown list" },
      }), async (c) => {
        const body = await readBody(c, exportSchema, SERVICE_BODY);
        const list = await knownList(body.listUuid);
        const rows = (await ticketsOfList(store, list.uuid)).map(({ request, ticket }) =>
          ticketRow(request, ticket)
        );
        return c.body(toCsv(TICKET_CSV_HEADER, rows), 200, {
          "Content-Type": "text/csv; charset=utf-8",
        });
      }),
    )
    .post(
      `${requests}/:uuid/take`,
      acl("take.create"),
      once,
      operation(() => ({
        summary: "An agent takes a callback request",
        body: takeSchema,
        responses: { 200: requestSchema },
        errors: workflowErrors,
      }), async (c) => {
        const body = await readBody(c, takeSchema, SERVICE_BODY);
        const agent = await knownAgent(body.agentNumber);
        const request = await step(() => takeRequest(store, uuidOf(c), agent.number, clock.now()));
        return c.json(requestView(request));
      }),
    )
    .post(
      `${requests}/:uuid/release`,
      acl("release.create"),
      operation(() => ({
        summary: "The holder releases a callback request",
        body: { content: { "application/json": holderSchema }, required: false },
        responses: { 200: requestSchema },
        errors: workflowErrors,
      }), async (c) => {
        const agent = await namedAgent((await optionalBody(c, holderSchema)).agentNumber);
        const request = await step(() => releaseRequest(store, uuidOf(c), agent, clock.now()));
        return c.json(requestView(request));
      }),
    )
    .post(
      `${requests}/:uuid/start`,
      acl("start.create"),
      operation(() => ({
        summary: "The holder calls back: the call starts from the agent's line",
        body: { content: { "application/json": holderSchema }, required: false },
        responses: {
          200: z.object({ linkedId: z.string(), request: requestSchema }),
        },
        errors: {
          ...workflowErrors,
          409: "`CallbackRequest…`, `AgentNotLoggedIn`, `AgentLineWithoutUser`, `DialRefused`",
        },
      }), async (c) => {
        const uuid = uuidOf(c);
        const named = await namedAgent((await optionalBody(c, holderSchema)).agentNumber);
        const request = await getCallbackRequest(store, uuid);
        if (!request) throw refusalError(requestNotFound(uuid));
        const holder = await step(() => holderOf(request, named));
        const user = await agentLineUser(await knownAgent(holder));
        const number = sanitizeNumber(request.phoneNumber || request.mobilePhoneNumber);
        const variables = { CALLBACK_REQUEST_UUID: uuid, CALLBACK_LIST_UUID: request.listUuid };
        let linkedId: string;
        try {
          ({ linkedId } = await platform.dialNumber(user, number, variables));
        } catch (error) {
          if (error instanceof PlatformRefusal) {
            throw new ApiError(409, "DialRefused", error.message);
          }
          throw error;
        }
        logger.info("callback started", { requestId: c.get("requestId"), uuid, linkedId });
        const started = await step(() => recordStart(store, uuid, holder, clock.now()));
        return c.json({ linkedId, request: requestView(started) });
      }),
    )
    .put(
      `${requests}/:uuid/ticket`,
      acl("ticket.update"),
      operation(() => ({
        summary: "Reports the outcome of a callback request",
        body: ticketSchema,
        responses: { 200: requestSchema },
        errors: workflowErrors,
      }), async (c) => {
        const body = await readBody(c, ticketSchema, SERVICE_BODY);
        const agent = await namedAgent(body.agentNumber);
        const report = { ...body, agent };
        const request = await step(() => reportOutcome(store, uuidOf(c), report, clock.now()));
        return c.json(requestView(request));
      }),
    );
}

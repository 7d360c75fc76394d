/**
 * Call qualifications (decisions §4), for any token holding the route's ACL: CTI users hold them
 * through `alias.ctiuser`, and a web service user (a CRM posting answers) may be given them.
 *
 * - `GET /call_qualification/queue/{queue_id}` (ACL `svc.rest.call_qualification.queue.{queue_id}.read`):
 *   `[{id, name, subQualifications: [{id, name}]}]`, the configuration daemon's qualifications
 *   offered on the queue. An unknown queue, and a `queue_id` that is not a decimal integer (it can
 *   name no queue), answer `[]`.
 * - `POST /call_qualification` (ACL `svc.rest.call_qualification.create`): stores an answer. Required:
 *   `sub_qualification_id`, `time` (a real `YYYY-MM-DD HH:MM:SS`, UTC), `callid`, `agent`, `queue`;
 *   `first_name`, `last_name`, `comment`, `custom_data` default to `""`; unknown fields are
 *   ignored. The three ids are JSON integers ≥ 1. The sub-qualification must exist and the queue
 *   must exist, but the sub-qualification need not be offered on that queue (the configuration
 *   may change between the call and its answer, and a CRM may qualify from its own list); the agent
 *   is not looked up (answers outlive agents). 201 with the answer and its integer `id`.
 * - `GET /call_qualification/csv/{queue_id}/{from}/{to}`
 *   (ACL `svc.rest.call_qualification.csv.{queue_id}.{from}.{to}.read`): the queue's answers whose
 *   time is in [from, to], ordered by time, as CSV with the spec's header. `from`/`to` are
 *   `YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS` (URL-encoded; `+` is accepted for the space); a date
 *   alone is the start of the day for `from`, its last second for `to`.
 *
 * Errors: no body 400 `JsonBodyNotFound`; not JSON, not matching the model, an unknown
 * sub-qualification or queue, a bad date or `from` after `to`: 400 `JsonErrorDecoding`, the message
 * naming the field; the store failing: 503 `Unreachable`.
 */
import { operation } from "../lib/openapi/operation.ts";
import { Hono } from "hono";
import * as z from "zod";
import { requireAcl } from "../lib/auth/guard.ts";
import { toCsv } from "../lib/csv.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, type BodyCodes, readBody } from "../lib/http.ts";
import { bodyObject, required } from "../lib/body_schema.ts";
import type { Services } from "../lib/services.ts";
import {
  ANSWER_CSV_HEADER,
  answerCsvRow,
  answersBetween,
  createAnswer,
  parseAnswerTime,
  parseBound,
} from "../lib/store/call_qualification_answers.ts";
import { findSubQualification, qualificationsOfQueue } from "../lib/store/call_qualifications.ts";
import { getQueue } from "../lib/store/queues.ts";

/** The codes of the spec's errors 4. */
const ANSWER_BODY: BodyCodes = { missing: "JsonBodyNotFound", invalid: "JsonErrorDecoding" };

const invalid = (message: string) => new ApiError(400, "JsonErrorDecoding", message);

/** A queue id of a path: a decimal integer, else null (such a value names no queue). */
const pathQueueId = (raw: string): number | null => /^\d{1,15}$/.test(raw) ? Number(raw) : null;

const id = () =>
  z.number(required("an integer")).int("expected an integer").min(1, "must be at least 1")
    .max(Number.MAX_SAFE_INTEGER, "too large");

const text = (max: number) =>
  z.string(required("a string")).max(max, `longer than ${max} characters`);

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** The sizes keep a stored answer well under Deno KV's 64 KiB value limit. */
const answerSchema = z.lazy(() =>
  bodyObject({
    sub_qualification_id: id(),
    time: z.string(required("a string")).refine((value) => parseAnswerTime(value) !== null, {
      message: "expected a real date and time YYYY-MM-DD HH:MM:SS",
    }),
    callid: text(256).min(1, "must not be empty"),
    agent: id(),
    queue: id(),
    first_name: text(256).default(""),
    last_name: text(256).default(""),
    comment: text(4096).default(""),
    custom_data: text(16384).default(""),
  })
);

/** A bound of the CSV export, or 400 naming it. */
const qualificationsBody = z.lazy(() => {
  const named = { id: z.int(), name: z.string() };
  return z.array(z.object({ ...named, subQualifications: z.array(z.object(named)) }));
});
const answerBody = z.lazy(() =>
  z.object({
    id: z.int(),
    sub_qualification_id: z.int(),
    time: z.string(),
    callid: z.string(),
    agent: z.int(),
    queue: z.int(),
    first_name: z.string(),
    last_name: z.string(),
    comment: z.string(),
    custom_data: z.string(),
  })
);

function bound(raw: string, side: "from" | "to"): number {
  const value = parseBound(raw.replaceAll("+", " "), side);
  if (value === null) {
    throw invalid(`${side} ${raw}: expected YYYY-MM-DD or YYYY-MM-DD HH:MM:SS`);
  }
  return value;
}

export function callQualificationRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens } = services;
  return new Hono<AppEnv>()
    .get(
      "/call_qualification/queue/:queue_id",
      requireAcl(tokens, "svc.rest.call_qualification.queue.{queue_id}.read"),
      operation(() => ({
        summary: "The call qualifications of a queue, with their sub-qualifications",
        responses: { 200: qualificationsBody },
      }), async (c) => {
        const queueId = pathQueueId(c.req.param("queue_id") ?? "");
        return c.json(queueId === null ? [] : await qualificationsOfQueue(store, queueId));
      }),
    )
    .post(
      "/call_qualification",
      requireAcl(tokens, "svc.rest.call_qualification.create"),
      operation(() => ({
        summary: "Records an agent's qualification of a call",
        body: answerSchema,
        responses: { 201: answerBody },
        errors: { 400: "`JsonBodyNotFound`, `JsonErrorDecoding` (naming the field)" },
      }), async (c) => {
        const input = await readBody(c, answerSchema, ANSWER_BODY);
        if (!await findSubQualification(store, input.sub_qualification_id)) {
          throw invalid(
            `field sub_qualification_id: unknown sub-qualification ${input.sub_qualification_id}`,
          );
        }
        if (!await getQueue(store, input.queue)) {
          throw invalid(`field queue: unknown queue ${input.queue}`);
        }
        return c.json(await createAnswer(store, input), 201);
      }),
    )
    .get(
      "/call_qualification/csv/:queue_id/:from/:to",
      requireAcl(tokens, "svc.rest.call_qualification.csv.{queue_id}.{from}.{to}.read"),
      operation(() => ({
        summary: "A queue's call qualification answers between two times, as CSV",
        description: "`from` and `to` are `YYYY-MM-DD` or `YYYY-MM-DD HH:MM:SS` (UTC).",
        responses: { 200: { mediaType: "text/csv", description: "The answers" } },
        errors: { 400: "`JsonErrorDecoding`: a bad `from` or `to`" },
      }), async (c) => {
        const from = bound(c.req.param("from") ?? "", "from");
        const to = bound(c.req.param("to") ?? "", "to");
        if (from > to) {
          throw invalid(`from ${c.req.param("from")} is after to ${c.req.param("to")}`);
        }
        const queueId = pathQueueId(c.req.param("queue_id") ?? "");
        const answers = queueId === null ? [] : await answersBetween(store, queueId, from, to);
        return c.body(toCsv(ANSWER_CSV_HEADER, answers.map(answerCsvRow)), 200, {
          "Content-Type": "text/csv; charset=utf-8",
        });
      }),
    );
}

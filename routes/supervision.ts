/**
 * Supervision in the 2.0 API (docs/supervision.md): live queue and agent statistics, the days
 * kept, and the supervisor's commands on agents, each route with its ACL (`svc.rest.supervision.#`
 * grants them all), or a CTI user's rights profile (lib/rights/): an admin sees everything, a
 * supervisor the queues, groups and agents it covers; lists are filtered and anything else named
 * by id is 403 `Forbidden` (lib/rights/guard.ts checks the path's queue and agent).
 *
 * - `GET /supervision/queues` (`svc.rest.supervision.queues.read`): every queue, or those of
 *   `?queue=` (ids, the parameter repeated or comma-separated; unknown ids are left out).
 * - `GET /supervision/queues/{queueId}/calls` (`svc.rest.supervision.queues.{queueId}.calls.read`):
 *   the calls waiting in it.
 * - `GET /supervision/queues/{queueId}/intervals?day=`
 *   (`svc.rest.supervision.queues.{queueId}.intervals.read`): its day (today by default), interval
 *   by interval: the day's curve.
 * - `GET /supervision/agents` (`svc.rest.supervision.agents.read`): every agent, or those of the
 *   queues of `?queue=`.
 * - `GET /supervision/history?from=&to=` (`svc.rest.supervision.history.read`): a row per day and
 *   queue and per day and agent, as JSON, or CSV with `Accept: text/csv`.
 * - `POST /supervision/agents/{agentId}/pause` (body `{reason}`, optional), `…/unpause`,
 *   `…/logout` (`svc.rest.supervision.agents.{agentId}.pause.create`, `….unpause.create`,
 *   `….logout.create`); `POST` and `DELETE /supervision/queues/{queueId}/agents/{agentId}` (body
 *   `{penalty}`, optional, 0 by default; `svc.rest.supervision.queues.{queueId}.agents.{agentId}
 *   .create` and `.delete`): the agent joins the queue (or takes that penalty), or leaves it.
 * - `PUT /supervision/agents/{agentId}/group` (body `{groupId}`, null for none;
 *   `svc.rest.supervision.agents.{agentId}.group.update`): the agent's agent group.
 *
 * Errors: 400 `BadRequest` (a bad `queue`, `from`, `to` or `day`), 400 `JsonErrorDecoding` (a body
 * that is not JSON or not the model), 400 `JsonBodyNotFound` (no group body), 404 `QueueNotFound`,
 * 404 `AgentNotFound`, 404 `AgentGroupNotFound`, 409 `AgentNotLoggedIn`, 409 `AgentNotInQueue`.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import { setAgentGroup } from "../lib/agent_groups/control.ts";
import { ApiError } from "../lib/errors.ts";
import { type AppEnv, checkBody, readBody } from "../lib/http.ts";
import { operation } from "../lib/openapi/operation.ts";
import { requireRights, type RightsNeeds } from "../lib/rights/guard.ts";
import type { Rights } from "../lib/rights/rights.ts";
import type { Services } from "../lib/services.ts";
import {
  addToQueue,
  agentFigures,
  historyCsv,
  historyRangeProblem,
  logoutAgent,
  pauseAgent,
  queueFigures,
  queueIntervals,
  removeFromQueue,
  supervisionHistory,
  SupervisionRefusal,
  unpauseAgent,
  waitingCalls,
} from "../lib/supervision/mod.ts";
import {
  AGENT_FIGURES,
  HISTORY,
  QUEUE_FIGURES,
  QUEUE_INTERVALS,
  WAITING_CALL,
} from "../lib/supervision/schemas.ts";

/** Ids as the API writes them (no leading zero): one queue or agent has one path and one ACL. */
const CANONICAL_ID = /^(0|[1-9]\d{0,14})$/;

const queueNotFound = (shown: string) =>
  new ApiError(404, "QueueNotFound", `queue ${shown} does not exist`);
const agentNotFound = (shown: string) =>
  new ApiError(404, "AgentNotFound", `agent ${shown} does not exist`);

/** The id a path value names, else the answer of an unknown one. */
function pathId(c: Context, name: "queueId" | "agentId"): number {
  const value = c.req.param(name) ?? "";
  if (!CANONICAL_ID.test(value)) throw (name === "queueId" ? queueNotFound : agentNotFound)(value);
  return Number(value);
}

/**
 * The queue ids of `?queue=` (repeated, or comma-separated), or undefined when absent; 400
 * `BadRequest` for a value that is no id, 403 `Forbidden` for a queue the rights do not cover.
 */
function queueIds(c: Context<AppEnv>): number[] | undefined {
  const values = c.req.queries("queue");
  if (values === undefined) return undefined;
  const items = values.flatMap((value) => value.split(",")).map((item) => item.trim());
  const wrong = items.find((item) => !/^\d{1,15}$/.test(item));
  if (wrong !== undefined) {
    throw new ApiError(400, "BadRequest", `queue ${JSON.stringify(wrong)} is no queue id`);
  }
  const ids = items.map(Number);
  for (const id of ids) c.get("rights").requireQueue(id);
  return ids;
}

/** The caller's rights (set by the guard). */
const rightsOf = (c: Context<AppEnv>): Rights => c.get("rights");

/** A body that may be absent (then `{}`); one that is not JSON or not `schema`: 400. */
async function optionalBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  const text = await c.req.text();
  if (!text.trim()) return checkBody(schema, {}, "JsonErrorDecoding");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(400, "JsonErrorDecoding", "the body is not valid JSON");
  }
  return checkBody(schema, body, "JsonErrorDecoding");
}

/** A supervision command's refusal as the 2.0 API answers it. */
async function answered(command: () => Promise<void>): Promise<void> {
  try {
    await command();
  } catch (error) {
    if (!(error instanceof SupervisionRefusal)) throw error;
    const [status, code] = ({
      agent_not_found: [404, "AgentNotFound"],
      queue_not_found: [404, "QueueNotFound"],
      not_logged: [409, "AgentNotLoggedIn"],
      not_in_queue: [409, "AgentNotInQueue"],
    } as const)[error.reason];
    throw new ApiError(status, code, error.message);
  }
}

/** The `queue` filter, for the OpenAPI document (built with it). */
const queueQuery = () =>
  z.object({
    queue: z.array(z.string()).optional().meta({
      description: "Queue ids: repeated (`?queue=1&queue=2`) or comma-separated (`?queue=1,2`)",
    }),
  });

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const pauseBody = z.lazy(() =>
  z.object({
    reason: z.string().max(256).nullable().optional().meta({ description: "Why, if said" }),
  }, { error: "the body must be a JSON object" })
);

const memberBody = z.lazy(() =>
  z.object({
    penalty: z.int().min(0).max(2147483647).optional().meta({
      description: "0 (the default) is the highest priority",
    }),
  }, { error: "the body must be a JSON object" })
);

const groupBody = z.lazy(() =>
  z.object({
    groupId: z.int().nullable().meta({ description: "The agent group's id; null: none" }),
  }, { error: "the body must be a JSON object" })
);

/** A CSV answer is asked for: `Accept` names `text/csv`. */
const wantsCsv = (c: Context) =>
  /(^|,)\s*text\/csv\s*(;[^,]*)?(,|$)/i.test(c.req.header("accept") ?? "");

const commandErrors: Record<number, string> = { 404: "`AgentNotFound`", 409: "`AgentNotLoggedIn`" };

export function supervisionRoutes(services: Services): Hono<AppEnv> {
  const acl = (template: string, needs?: RightsNeeds) =>
    requireRights(services, `svc.rest.supervision.${template}`, needs);
  const agentCommand = (
    action: string,
    summary: string,
    run: (agentId: number, c: Context<AppEnv>) => Promise<void>,
    body?: z.ZodType,
  ) =>
    [
      `/supervision/agents/:agentId/${action}`,
      acl(`agents.{agentId}.${action}.create`),
      operation(() => ({
        summary,
        ...(body ? { body: { content: { "application/json": body }, required: false } } : {}),
        responses: { 204: null },
        errors: body
          ? { ...commandErrors, 400: "`JsonErrorDecoding`: a body not JSON, or not the model" }
          : commandErrors,
      }), async (c: Context<AppEnv>) => {
        await answered(() => run(pathId(c, "agentId"), c));
        return c.body(null, 204);
      }),
    ] as const;
  const member = "/supervision/queues/:queueId/agents/:agentId";
  const memberAcl = (action: string) =>
    acl(`queues.{queueId}.agents.{agentId}.${action}`, { changeQueues: true });

  return new Hono<AppEnv>()
    .get(
      "/supervision/queues",
      acl("queues.read"),
      operation(() => ({
        summary: "Queues' live figures and their counts since midnight",
        query: queueQuery(),
        responses: { 200: z.array(QUEUE_FIGURES) },
        errors: { 400: "`BadRequest`: a `queue` that is no id" },
      }), async (c) => {
        const ids = queueIds(c);
        return c.json(rightsOf(c).queuesIn(await queueFigures(services, ids)));
      }),
    )
    .get(
      "/supervision/queues/:queueId/calls",
      acl("queues.{queueId}.calls.read"),
      operation(() => ({
        summary: "The calls waiting in a queue, in order",
        responses: { 200: z.array(WAITING_CALL) },
        errors: { 404: "`QueueNotFound`" },
      }), async (c) => {
        const id = pathId(c, "queueId");
        const calls = await waitingCalls(services, id);
        if (!calls) throw queueNotFound(String(id));
        return c.json(calls);
      }),
    )
    .get(
      "/supervision/queues/:queueId/intervals",
      acl("queues.{queueId}.intervals.read"),
      operation(() => ({
        summary: "A queue's day interval by interval (15 minutes): its calls and calls waiting",
        query: z.object({
          day: z.string().optional().meta({
            description: "YYYY-MM-DD in the queue's time zone; today if absent",
          }),
        }),
        responses: { 200: QUEUE_INTERVALS },
        errors: {
          400: "`BadRequest`: a `day` that is no date, or before the days kept",
          404: "`QueueNotFound`",
        },
      }), async (c) => {
        const id = pathId(c, "queueId");
        const curve = await queueIntervals(services, id, c.req.query("day"));
        if (curve === null) throw queueNotFound(String(id));
        if (typeof curve === "string") throw new ApiError(400, "BadRequest", curve);
        return c.json(curve);
      }),
    )
    .get(
      "/supervision/agents",
      acl("agents.read"),
      operation(() => ({
        summary: "What each agent is doing, and its counts since midnight",
        query: queueQuery(),
        responses: { 200: z.array(AGENT_FIGURES) },
        errors: { 400: "`BadRequest`: a `queue` that is no id" },
      }), async (c) => {
        const ids = queueIds(c);
        return c.json(rightsOf(c).agentsIn(await agentFigures(services, ids)));
      }),
    )
    .get(
      "/supervision/history",
      acl("history.read"),
      operation(() => ({
        summary: "A row per day and queue, and per day and agent (JSON, or CSV by `Accept`)",
        query: z.object({
          from: z.string().meta({ description: "The first day, YYYY-MM-DD" }),
          to: z.string().optional().meta({
            description: "The last day, YYYY-MM-DD; `from` if absent",
          }),
        }),
        headers: { Accept: "`text/csv` for CSV (cells neutralised against formulas), else JSON" },
        responses: { 200: { content: { "application/json": HISTORY, "text/csv": null } } },
        errors: {
          400: "`BadRequest`: no `from`, a day that is no date, `to` before `from`, too many days",
        },
      }), async (c) => {
        const from = c.req.query("from");
        const to = c.req.query("to");
        const problem = historyRangeProblem(from, to, services.supervision.settings.retentionDays);
        if (problem) throw new ApiError(400, "BadRequest", problem);
        const rights = rightsOf(c);
        const whole = await supervisionHistory(services, from!, to ?? from!);
        const history = {
          ...whole,
          queues: whole.queues.filter((row) => rights.coversQueue(row.queueId)),
          agents: whole.agents.filter((row) => rights.coversAgent(row.agentId)),
        };
        if (!wantsCsv(c)) return c.json(history);
        return c.body(historyCsv(history), 200, { "Content-Type": "text/csv; charset=utf-8" });
      }),
    )
    .post(
      ...agentCommand(
        "pause",
        "Pauses an agent, with a reason if given",
        async (agentId, c) => {
          const { reason } = await optionalBody(c, pauseBody);
          await pauseAgent(services, agentId, reason ?? null);
        },
        pauseBody,
      ),
    )
    .post(
      ...agentCommand("unpause", "Unpauses an agent", (id) => unpauseAgent(services, id)),
    )
    .post(
      ...agentCommand("logout", "Logs an agent out", (id) => logoutAgent(services, id)),
    )
    .post(
      member,
      memberAcl("create"),
      operation(() => ({
        summary: "Makes the agent a member of the queue, or gives it that penalty",
        body: { content: { "application/json": memberBody }, required: false },
        responses: { 204: null },
        errors: {
          400: "`JsonErrorDecoding`: a body not JSON, or not the model",
          404: "`QueueNotFound`, `AgentNotFound`",
        },
      }), async (c) => {
        const queueId = pathId(c, "queueId");
        const agentId = pathId(c, "agentId");
        const { penalty } = await optionalBody(c, memberBody);
        await answered(() => addToQueue(services, queueId, agentId, penalty ?? 0));
        await services.supervision.queuesChanged([queueId]);
        return c.body(null, 204);
      }),
    )
    .put(
      "/supervision/agents/:agentId/group",
      acl("agents.{agentId}.group.update"),
      operation(() => ({
        summary: "Puts the agent in an agent group (out of the one it was in), or in none",
        body: groupBody,
        responses: { 204: null },
        errors: {
          400: "`JsonBodyNotFound`, `JsonErrorDecoding`: no body, not JSON, or not the model",
          404: "`AgentNotFound`, `AgentGroupNotFound`",
        },
      }), async (c) => {
        const agentId = pathId(c, "agentId");
        const { groupId } = await readBody(c, groupBody, {
          missing: "JsonBodyNotFound",
          invalid: "JsonErrorDecoding",
        });
        if (groupId !== null) rightsOf(c).requireGroup(groupId);
        await setAgentGroup(services, agentId, groupId);
        services.cti.supervision.changed();
        return c.body(null, 204);
      }),
    )
    .delete(
      member,
      memberAcl("delete"),
      operation(() => ({
        summary: "Takes the agent out of the queue",
        responses: { 204: null },
        errors: { 404: "`QueueNotFound`, `AgentNotFound`", 409: "`AgentNotInQueue`" },
      }), async (c) => {
        const queueId = pathId(c, "queueId");
        const agentId = pathId(c, "agentId");
        await answered(() => removeFromQueue(services, queueId, agentId));
        await services.supervision.queuesChanged([queueId]);
        return c.body(null, 204);
      }),
    );
}

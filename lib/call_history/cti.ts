/**
 * The call history commands of the CTI channel (docs/cti.md, "Call history"), as xuc's `cti.js`
 * sends them:
 *
 * - `getUserCallHistory {size}`, `getUserCallHistoryByDays {days}`: the user's own calls (the
 *   history of `GET /history/{username}` and `GET /history/days/{username}`, under their ACLs),
 *   answered `CallHistory` and `CallHistoryByDays`.
 * - `getAgentCallHistory {size}`: the queue calls the user's own agent answered, `CallHistory`.
 * - `getQueueCallHistory {queue, size}` (a supervisor's): the calls of a queue (by id, or by
 *   name) its rights profile covers, `CallHistory`.
 * - `findCustomerCallHistory {id, request: {filters, size}}` (a supervisor's): the queue calls of
 *   one caller number to the queues its rights profile covers, `CustomerCallHistoryResponseWithId`
 *   echoing `id`.
 *
 * The user history is `lib/store/call_history.ts`'s; the queue calls `queue_calls.ts`'s.
 */
import * as z from "zod";
import { agentOfUser } from "../agent_control.ts";
import { ctiCommand, type CtiCommandContext, type CtiFamily } from "../cti/command_set.ts";
import { ApiError } from "../errors.ts";
import { DAYS, SIZE } from "../history.ts";
import { callsSince, lastCalls } from "../store/call_history.ts";
import { findQueueByName, getQueue } from "../store/queues.ts";
import { customerEntries, queueCallEntries, userEntries } from "./entries.ts";
import { callerQueueCalls, lastAgentQueueCalls, lastQueueCalls } from "./queue_calls.ts";

const DAY_MS = 24 * 60 * 60 * 1000;

/** When the oldest queue call still kept started (`SVC_CALL_HISTORY_RETENTION_DAYS` ago). */
const keptSince = ({ clock, config }: CtiCommandContext["services"]) =>
  clock.now() - config.callHistoryRetentionDays * DAY_MS;

const size = () => z.number().int().min(SIZE.min).max(SIZE.max).default(SIZE.fallback);

/** The one filter a customer's calls are found by: the caller's number. */
const CALLER_FIELD = "src_num";

const filter = () =>
  z.object({
    field: z.string(),
    operator: z.string().optional(),
    value: z.union([z.string(), z.number()]).optional(),
  });

/** The caller number `filters` name, or 400 `BadRequest`. */
function callerNumberOf(filters: z.infer<ReturnType<typeof filter>>[]): string {
  const wrong = filters.find((f) =>
    f.field !== CALLER_FIELD || (f.operator ?? "=") !== "=" || f.value === undefined
  );
  const caller = filters.find((f) => f.field === CALLER_FIELD);
  if (wrong || !caller) {
    throw new ApiError(
      400,
      "BadRequest",
      `filters: one {"field":"${CALLER_FIELD}","operator":"=","value":<number>} is what svc ` +
        "finds a customer's calls by",
    );
  }
  return String(caller.value);
}

export const historyFamily: CtiFamily = {
  commands: {
    getUserCallHistory: ctiCommand({
      fields: () => z.object({ size: size() }),
      acl: "svc.rest.history.{username}.read",
      async run(c, { size }) {
        const records = await lastCalls(c.services.store, c.user.id, size);
        c.reply({
          msgType: "CallHistory",
          ctiMessage: await userEntries(c.services.store, records),
        });
      },
    }),
    getUserCallHistoryByDays: ctiCommand({
      fields: () =>
        z.object({ days: z.number().int().min(DAYS.min).max(DAYS.max).default(DAYS.fallback) }),
      acl: "svc.rest.history.days.{username}.read",
      async run(c, { days }) {
        const { store, clock } = c.services;
        const records = await callsSince(store, c.user.id, clock.now() - days * DAY_MS);
        c.reply({ msgType: "CallHistoryByDays", ctiMessage: await userEntries(store, records) });
      },
    }),
    getAgentCallHistory: ctiCommand({
      fields: () => z.object({ size: size() }),
      acl: "agentd.users.me.agents.read",
      async run(c, { size }) {
        const { store, clock } = c.services;
        const agent = await agentOfUser(c.services, c.user);
        if (!agent) {
          throw new ApiError(404, "AgentNotFound", `user ${c.user.username} has no agent`);
        }
        const records = await lastAgentQueueCalls(store, agent.id, size, keptSince(c.services));
        c.reply({
          msgType: "CallHistory",
          ctiMessage: await queueCallEntries(store, records, clock.now()),
        });
      },
    }),
    getQueueCallHistory: ctiCommand({
      fields: () =>
        z.object({ queue: z.union([z.number().int(), z.string().min(1).max(128)]), size: size() }),
      acl: null, // the rights profile's, checked once the queue is known
      async run(c, { queue: named, size }) {
        const { store, clock } = c.services;
        const rights = await c.rights();
        // `cti.js` passes what it is given: an id, as a number or as digits, else a name
        const queue = typeof named === "number" || /^\d{1,15}$/.test(named)
          ? await getQueue(store, Number(named))
          : await findQueueByName(store, named);
        // a supervisor learns nothing of a queue it does not cover, not even that it exists
        if (!rights.everything && !(queue && rights.coversQueue(queue.id))) {
          const shown = JSON.stringify(named);
          throw new ApiError(
            403,
            "Forbidden",
            `queue ${shown} is not in the user's rights profile`,
          );
        }
        if (!queue) {
          throw new ApiError(404, "QueueNotFound", `queue ${JSON.stringify(named)} does not exist`);
        }
        const records = await lastQueueCalls(store, queue.id, size, keptSince(c.services));
        c.reply({
          msgType: "CallHistory",
          ctiMessage: await queueCallEntries(store, records, clock.now()),
        });
      },
    }),
    findCustomerCallHistory: ctiCommand({
      fields: () =>
        z.object({
          id: z.union([z.number(), z.string().max(256)]),
          request: z.object({ filters: z.array(filter()).max(16), size: size() }),
        }),
      acl: null, // a rights profile: the queues it covers
      async run(c, { id, request }) {
        const { store, clock } = c.services;
        const rights = await c.rights();
        const number = callerNumberOf(request.filters);
        const { total, records } = await callerQueueCalls(
          store,
          number,
          request.size,
          keptSince(c.services),
          rights.coversQueue,
        );
        c.reply({
          msgType: "CustomerCallHistoryResponseWithId",
          ctiMessage: {
            id,
            response: { total, list: await customerEntries(store, records, clock.now()) },
          },
        });
      },
    }),
  },
};

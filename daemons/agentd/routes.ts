/**
 * The agent daemon's routes below `/agents` (decisions §9, docs/agentd.md), each with its ACL
 * beside its path: the status of every agent, logoff and relog of every logged agent, the service
 * status, and per agent, named `by-id/{id}` or `by-number/{number}`, its status and the commands
 * login, logoff, pause and unpause (and by id, add to and remove from a queue). A command answers
 * 204; the platform holds the agents' state.
 */
import { type Context, Hono } from "hono";
import { agentStatus, changeMembership } from "../../lib/agent_control.ts";
import { agentListJson } from "../../lib/agent_list.ts";
import { operation } from "../../lib/openapi/operation.ts";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import { PlatformRefusal } from "../../lib/platform/port.ts";
import type { Services } from "../../lib/services.ts";
import { type AgentRecord, agents, listAgents } from "../../lib/store/agents.ts";
import { type QueueRecord, queues, withMember, withoutMember } from "../../lib/store/queues.ts";
import type { Transaction } from "../../lib/store/records.ts";
import { AGENT_STATUS, loginBody, pauseBody, queueBody, readFields } from "./body.ts";
import {
  alreadyInQueue,
  noSuchAgent,
  noSuchQueue,
  notInQueue,
  refusalsAnswered,
} from "./errors.ts";
import { agentdAcl, agentdRights } from "./guard.ts";
import { AGENT_KEYS, type AgentKey, pathAgent } from "./lookup.ts";

export function agentRoutes(services: Services): Hono<AppEnv> {
  const { platform, tokens, logger } = services;
  const app = new Hono<AppEnv>();
  app.get(
    "/",
    agentdRights(services, "agentd.agents.read"),
    operation(
      () => ({ summary: "The status of every agent", responses: { 200: z.array(AGENT_STATUS) } }),
      async (c) => {
        const text = await agentListJson(services);
        const rights = c.get("rights");
        if (rights.everything) return c.body(text, 200, JSON_TYPE);
        // a supervisor's: the agents its rights profile covers
        const all = JSON.parse(text) as { id: number }[];
        return c.json(all.filter((agent) => rights.coversAgent(agent.id)));
      },
    ),
  );
  app.get("/status", agentdAcl(tokens, "agentd.status.read"), serviceStatus(services));
  // every logged agent logs off; one that did meanwhile is skipped
  app.post(
    "/logoff",
    agentdAcl(tokens, "agentd.agents.logoff.create"),
    operation(() => ({
      summary: "Logs every logged agent off",
      responses: { 204: null },
    }), async (c) => {
      for (const { agent } of await loggedAgents(services)) {
        await skippingNotLogged(() => platform.agentLogout(agent.id));
      }
      return c.body(null, 204);
    }),
  );
  // every logged agent logs off and back on where it was; one the platform refuses is logged and
  // skipped (it may stay logged off), as the daemon svc follows does
  app.post(
    "/relog",
    agentdAcl(tokens, "agentd.agents.relog.create"),
    operation(() => ({
      summary: "Logs every logged agent off and back on where it was",
      responses: { 204: null },
    }), async (c) => {
      for (const { agent, extension, context } of await loggedAgents(services)) {
        try {
          await platform.agentLogout(agent.id);
          await platform.agentLogin(agent, extension, context);
        } catch (error) {
          if (!(error instanceof PlatformRefusal)) throw error;
          logger.warn("agent not relogged", { agent: agent.number, reason: error.reason });
        }
      }
      return c.body(null, 204);
    }),
  );
  for (const key of AGENT_KEYS) app.route(`/${key.kind}`, oneAgentRoutes(services, key));
  app.route("/by-id", membershipRoutes(services));
  return app;
}

/** What `c.json` sets: `GET /agents` answers its kept text with it. */
const JSON_TYPE = { "Content-Type": "application/json" };

/**
 * `GET /agents/status` (and `GET /status`): the daemon's components, each `{"status": "ok"}` or
 * `{"status": "fail"}`: the store answers, the telephony platform takes commands.
 */
export function serviceStatus({ store, platform }: Services) {
  return operation(() => {
    const state = z.object({ status: z.enum(["ok", "fail"]) });
    return {
      summary: "The daemon's components: the store and the telephony platform",
      responses: { 200: z.object({ store: state, platform: state }) },
    };
  }, async (c: Context<AppEnv>) => {
    const state = (up: boolean) => ({ status: up ? "ok" : "fail" });
    return c.json({ store: state(await store.ping()), platform: state(platform.reachable()) });
  });
}

const noAgent = { 404: "`no such agent`" };
const notLogged = { ...noAgent, 409: "`not logged in`" };

/** The routes of one agent named by `key`, below `/{key.kind}`. */
function oneAgentRoutes(services: Services, key: AgentKey): Hono<AppEnv> {
  const { platform, tokens } = services;
  const path = `/:${key.param}`;
  // e.g. agentd.agents.by-number.{number}.pause.create
  const acl = (action: string) =>
    agentdAcl(tokens, `agentd.agents.${key.kind}.{${key.param}}.${action}`);
  return new Hono<AppEnv>()
    .get(
      path,
      acl("read"),
      operation(() => ({
        summary: `An agent's status, by ${key.param}`,
        responses: { 200: AGENT_STATUS },
        errors: noAgent,
      }), async (c) => {
        return c.json(await agentStatus(services, await pathAgent(services, c, key)));
      }),
    )
    .post(
      `${path}/login`,
      acl("login.create"),
      operation(() => ({
        summary: "Logs the agent in on the line holding `extension` in `context`",
        body: loginBody,
        responses: { 204: null },
        errors: {
          ...noAgent,
          409: "`already logged`, `extension and context already in use`",
        },
      }), async (c) => {
        const { extension, context } = await readFields(c, loginBody);
        const agent = await pathAgent(services, c, key);
        await refusalsAnswered(() => platform.agentLogin(agent, extension, context));
        return c.body(null, 204);
      }),
    )
    .post(
      `${path}/logoff`,
      acl("logoff.create"),
      operation(() => ({
        summary: "Logs the agent off",
        responses: { 204: null },
        errors: notLogged,
      }), async (c) => {
        const agent = await pathAgent(services, c, key);
        await refusalsAnswered(() => platform.agentLogout(agent.id));
        return c.body(null, 204);
      }),
    )
    .post(
      `${path}/pause`,
      acl("pause.create"),
      operation(() => ({
        summary: "Pauses the agent, with an optional reason",
        body: { content: { "application/json": pauseBody }, required: false },
        responses: { 204: null },
        errors: notLogged,
      }), async (c) => {
        const { reason } = await readFields(c, pauseBody, { optional: true });
        const agent = await pathAgent(services, c, key);
        await refusalsAnswered(() => platform.agentPause(agent.id, reason ?? null));
        return c.body(null, 204);
      }),
    )
    .post(
      `${path}/unpause`,
      acl("unpause.create"),
      operation(() => ({
        summary: "Unpauses the agent",
        responses: { 204: null },
        errors: notLogged,
      }), async (c) => {
        const agent = await pathAgent(services, c, key);
        await refusalsAnswered(() => platform.agentUnpause(agent.id));
        return c.body(null, 204);
      }),
    );
}

/**
 * `POST /agents/by-id/{id}/add` and `…/remove` `{"queue_id"}`: the agent joins (penalty 0) or
 * leaves the queue in the configuration, as `/1.1/queues/{id}/members/agents/{agent_id}` does,
 * and live when logged in. The ACL of `remove` is `….delete.create`, the one the daemon svc
 * follows checks.
 */
function membershipRoutes(services: Services): Hono<AppEnv> {
  const byId = AGENT_KEYS[0]!;
  const acl = (action: string) => agentdAcl(services.tokens, `agentd.agents.by-id.{id}.${action}`);
  /** The agent and the queue, read in `tx`. */
  const load = async (tx: Transaction, agentId: number, queueId: number) => {
    const agent = await tx.get(agents, agentId);
    if (!agent) throw noSuchAgent(); // deleted meanwhile
    const queue = await tx.get(queues, queueId);
    if (!queue) throw noSuchQueue();
    return { agent, queue };
  };
  const isMember = (queue: QueueRecord, agent: AgentRecord) =>
    queue.members.some((member) => member.agent_id === agent.id);
  return new Hono<AppEnv>()
    .post(
      "/:id/add",
      acl("add.create"),
      operation(() => ({
        summary: "Adds the agent to a queue (penalty 0)",
        body: queueBody,
        responses: { 204: null },
        errors: { 404: "`no such agent`, `no such queue`", 409: "`agent already in queue`" },
      }), async (c) => {
        const { queue_id } = await readFields(c, queueBody);
        const named = await pathAgent(services, c, byId);
        await changeMembership(services, (tx) => load(tx, named.id, queue_id), (queue, agent) => {
          if (isMember(queue, agent)) throw alreadyInQueue();
          return withMember(queue, agent.id, 0);
        });
        return c.body(null, 204);
      }),
    )
    .post(
      "/:id/remove",
      acl("delete.create"),
      operation(() => ({
        summary: "Removes the agent from a queue",
        body: queueBody,
        responses: { 204: null },
        errors: { 404: "`no such agent`, `no such queue`", 409: "`agent not in queue`" },
      }), async (c) => {
        const { queue_id } = await readFields(c, queueBody);
        const named = await pathAgent(services, c, byId);
        await changeMembership(services, (tx) => load(tx, named.id, queue_id), (queue, agent) => {
          if (!isMember(queue, agent)) throw notInQueue();
          return withoutMember(queue, agent.id);
        });
        return c.body(null, 204);
      }),
    );
}

/** Every agent logged in now, with where it is logged, in id order. */
async function loggedAgents(services: Services) {
  const found: { agent: AgentRecord; extension: string; context: string }[] = [];
  for (const agent of await listAgents(services.store)) {
    const { logged, extension, context } = await services.platform.agentPresence(agent.id);
    if (logged && extension !== null && context !== null) found.push({ agent, extension, context });
  }
  return found;
}

/** Runs a command; the refusal of an agent that is not logged in (any more) is no failure. */
async function skippingNotLogged(command: () => Promise<void>): Promise<void> {
  try {
    await command();
  } catch (error) {
    if (!(error instanceof PlatformRefusal && error.reason === "not_logged")) throw error;
  }
}

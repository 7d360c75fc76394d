/**
 * The agent daemon's routes (decisions §9), each with its ACL beside its path: the status of every
 * agent, and per agent, named `by-id/{id}` or `by-number/{number}`, its status and the commands
 * login, logoff, pause and unpause. A command answers 204; the platform holds the agents' state.
 */
import { Hono } from "hono";
import { agentStatus, agentStatuses } from "../../lib/agent_control.ts";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { listAgents } from "../../lib/store/agents.ts";
import { loginBody, pauseBody, readFields } from "./body.ts";
import { refusalsAnswered } from "./errors.ts";
import { agentdAcl } from "./guard.ts";
import { AGENT_KEYS, type AgentKey, pathAgent } from "./lookup.ts";

export function agentRoutes(services: Services): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get("/", agentdAcl(services.tokens, "agentd.agents.read"), async (c) => {
    return c.json(await agentStatuses(services, await listAgents(services.store)));
  });
  for (const key of AGENT_KEYS) app.route(`/${key.kind}`, oneAgentRoutes(services, key));
  return app;
}

/** The routes of one agent named by `key`, below `/{key.kind}`. */
function oneAgentRoutes(services: Services, key: AgentKey): Hono<AppEnv> {
  const { platform, tokens } = services;
  const path = `/:${key.param}`;
  // e.g. agentd.agents.by-number.{number}.pause.create
  const acl = (action: string) =>
    agentdAcl(tokens, `agentd.agents.${key.kind}.{${key.param}}.${action}`);
  return new Hono<AppEnv>()
    .get(path, acl("read"), async (c) => {
      return c.json(await agentStatus(services, await pathAgent(services, c, key)));
    })
    .post(`${path}/login`, acl("login.create"), async (c) => {
      const { extension, context } = await readFields(c, loginBody);
      const agent = await pathAgent(services, c, key);
      await refusalsAnswered(() => platform.agentLogin(agent, extension, context));
      return c.body(null, 204);
    })
    .post(`${path}/logoff`, acl("logoff.create"), async (c) => {
      const agent = await pathAgent(services, c, key);
      await refusalsAnswered(() => platform.agentLogout(agent.id));
      return c.body(null, 204);
    })
    .post(`${path}/pause`, acl("pause.create"), async (c) => {
      const { reason } = await readFields(c, pauseBody, { optional: true });
      const agent = await pathAgent(services, c, key);
      await refusalsAnswered(() => platform.agentPause(agent.id, reason ?? null));
      return c.body(null, 204);
    })
    .post(`${path}/unpause`, acl("unpause.create"), async (c) => {
      const agent = await pathAgent(services, c, key);
      await refusalsAnswered(() => platform.agentUnpause(agent.id));
      return c.body(null, 204);
    });
}

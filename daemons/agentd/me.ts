/**
 * The agent daemon's routes on the calling user's own agent, served at `/users/me/agents` (beside
 * `/agents`, where its clients look for them; docs/agentd.md), each with its ACL beside its path:
 * the agent's status, login on one of the user's lines, logoff, pause and unpause. The user is
 * the token's: a CTI user, whose `alias.ctiuser` grants these ACLs (guard.ts). Its agent is the
 * one `agentOfUser` finds; none (or a token that is no CTI user's) is 404 `no such agent`.
 */
import { operation } from "../../lib/openapi/operation.ts";
import { type Context, Hono } from "hono";
import { agentOfUser, agentStatus } from "../../lib/agent_control.ts";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import type { AgentRecord } from "../../lib/store/agents.ts";
import { getExtension } from "../../lib/store/extensions.ts";
import { getLine } from "../../lib/store/lines.ts";
import { getUser, type UserRecord } from "../../lib/store/users.ts";
import { AGENT_STATUS, pauseBody, readFields, userLoginBody } from "./body.ts";
import {
  alreadyLogged,
  noSuchAgent,
  noSuchExtension,
  noSuchLine,
  refusalsAnswered,
} from "./errors.ts";
import { agentdAcl } from "./guard.ts";

/** The routes below `/users/me/agents`. */
export function userAgentRoutes(services: Services): Hono<AppEnv> {
  const { platform, tokens } = services;
  const acl = (action: string) => agentdAcl(tokens, `agentd.users.me.agents.${action}`);
  return new Hono<AppEnv>()
    .get(
      "/",
      acl("read"),
      operation(() => ({
        summary: "The status of the user's own agent",
        responses: { 200: AGENT_STATUS },
        errors: { 404: "`no such agent`: the user has none" },
      }), async (c) => {
        const { agent } = await ownAgent(services, c);
        return c.json(await agentStatus(services, agent));
      }),
    )
    // the agent on the line's first extension; checks in the order of the daemon svc follows
    .post(
      "/login",
      acl("login.create"),
      operation(() => ({
        summary: "Logs the user's agent in on one of the user's lines",
        body: userLoginBody,
        responses: { 204: null },
        errors: {
          400: "`invalid fields: …`, `no such line`",
          404: "`no such agent`, `no such extension and context`",
          409: "`already logged`, `extension and context already in use`",
        },
      }), async (c) => {
        const { line_id } = await readFields(c, userLoginBody);
        const { user, agent } = await ownAgent(services, c);
        if ((await platform.agentPresence(agent.id)).logged) throw alreadyLogged();
        const line = user.line_ids.includes(line_id)
          ? await getLine(services.store, line_id)
          : null;
        if (!line) throw noSuchLine();
        const extensionId = line.extension_ids[0];
        const extension = extensionId === undefined
          ? null
          : await getExtension(services.store, extensionId);
        if (!extension) throw noSuchExtension();
        await refusalsAnswered(() =>
          platform.agentLogin(agent, extension.exten, extension.context)
        );
        return c.body(null, 204);
      }),
    )
    .post(
      "/logoff",
      acl("logoff.create"),
      operation(() => ({
        summary: "Logs the user's agent off",
        responses: { 204: null },
        errors: { 404: "`no such agent`", 409: "`not logged in`" },
      }), async (c) => {
        const { agent } = await ownAgent(services, c);
        await refusalsAnswered(() => platform.agentLogout(agent.id));
        return c.body(null, 204);
      }),
    )
    .post(
      "/pause",
      acl("pause.create"),
      operation(() => ({
        summary: "Pauses the user's agent",
        body: { content: { "application/json": pauseBody }, required: false },
        responses: { 204: null },
        errors: { 404: "`no such agent`", 409: "`not logged in`" },
      }), async (c) => {
        const { reason } = await readFields(c, pauseBody, { optional: true });
        const { agent } = await ownAgent(services, c);
        await refusalsAnswered(() => platform.agentPause(agent.id, reason ?? null));
        return c.body(null, 204);
      }),
    )
    .post(
      "/unpause",
      acl("unpause.create"),
      operation(() => ({
        summary: "Unpauses the user's agent",
        responses: { 204: null },
        errors: { 404: "`no such agent`", 409: "`not logged in`" },
      }), async (c) => {
        const { agent } = await ownAgent(services, c);
        await refusalsAnswered(() => platform.agentUnpause(agent.id));
        return c.body(null, 204);
      }),
    );
}

/** The token's CTI user and that user's agent; 404 `no such agent` when there is none. */
async function ownAgent(
  services: Services,
  c: Context<AppEnv>,
): Promise<{ user: UserRecord; agent: AgentRecord }> {
  const identity = c.get("identity");
  const userId = Number(identity.userId);
  const user = identity.userType === "cti" && Number.isSafeInteger(userId)
    ? await getUser(services.store, userId)
    : null;
  const agent = user ? await agentOfUser(services, user) : null;
  if (!user || !agent) throw noSuchAgent();
  return { user, agent };
}

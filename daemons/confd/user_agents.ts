/**
 * `/1.1/users/{id}/agents`: a user's own agent, the one the agent daemon's `/users/me/agents`
 * routes drive (docs/agentd.md). `PUT /users/{id}/agents/{agent_id}` associates it (a user has one
 * at most: 400 while another is associated), `DELETE /users/{id}/agents` dissociates it (204 when
 * there is none). The link lives beside the user record (`lib/store/user_agents.ts`).
 */
import { Hono } from "hono";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { getAgent } from "../../lib/store/agents.ts";
import { linkedAgentId, linkUserAgent } from "../../lib/store/user_agents.ts";
import { readUser } from "./entities.ts";
import { describe, notFound, resourceError } from "./errors.ts";
import { confdAcl } from "./guard.ts";

export function userAgentRoutes({ store, tokens }: Services) {
  return new Hono<AppEnv>()
    .put(
      "/users/:id/agents/:agent_id",
      confdAcl(tokens, "confd.users.{id}.agents.{agent_id}.update"),
      async (c) => {
        const user = await readUser(store, c.req.param("id"));
        const raw = c.req.param("agent_id");
        const agent = /^\d{1,15}$/.test(raw) ? await getAgent(store, Number(raw)) : null;
        if (!agent) throw notFound("Agent", { id: /^\d{1,15}$/.test(raw) ? Number(raw) : raw });
        const linked = await linkedAgentId(store, user.id);
        // a link to an agent deleted since is no link
        if (linked !== null && linked !== agent.id && await getAgent(store, linked)) {
          throw resourceError(
            `User is already associated to Agent ${describe({ user_id: user.id, agent: linked })}`,
          );
        }
        await linkUserAgent(store, user.id, agent.id);
        return c.body(null, 204);
      },
    )
    .delete("/users/:id/agents", confdAcl(tokens, "confd.users.{id}.agents.delete"), async (c) => {
      const user = await readUser(store, c.req.param("id"));
      await linkUserAgent(store, user.id, null);
      return c.body(null, 204);
    });
}

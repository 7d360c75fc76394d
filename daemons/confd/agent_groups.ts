/**
 * `/1.1/agentgroups` (docs/supervision.md, "Agent groups"): XiVO CC's agent groups, which Wazo's
 * configuration daemon does not have, with its conventions (decisions §10): `name` (letters,
 * digits, `-`, `_`, unique), `display_name`, and read-only `agents`. An agent joins a group with
 * `PUT /agentgroups/{id}/agents/{agent_id}`, which takes it out of the group it was in (an agent
 * is in one group at most), and leaves it with `DELETE`; both answer 204 when there is nothing to
 * do. Deleting a group leaves its agents in none; deleting an agent takes it out of its group.
 */
import { type Context, Hono } from "hono";
import * as z from "zod";
import {
  type AgentGroupRecord,
  agentGroups,
  buildAgentGroup,
  placeAgentIn,
} from "../../lib/agent_groups/store.ts";
import type { AppEnv } from "../../lib/http.ts";
import { operation } from "../../lib/openapi/operation.ts";
import { forgetGroup } from "../../lib/rights/profiles.ts";
import type { Services } from "../../lib/services.ts";
import { type AgentRecord, agents, listAgents } from "../../lib/store/agents.ts";
import { transact, type Transaction } from "../../lib/store/records.ts";
import { check, fields, pathId } from "./body.ts";
import { loadOr404, type Resource, resourceRoutes } from "./crud.ts";
import { confdAcl } from "./guard.ts";

/** A group's agent as its view shows it. */
type GroupAgent = Pick<AgentRecord, "id" | "number" | "firstname" | "lastname">;

export type AgentGroupView = Omit<AgentGroupRecord, "agent_ids"> & { agents: GroupAgent[] };

/** A group's name: what a queue's may be. */
const name = () => fields.name(128).regex(/^[a-zA-Z0-9_-]+$/, "Must be letters, digits, - or _.");

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const createSchema = z.lazy(() =>
  z.object({ name: name(), display_name: fields.text(128).optional() })
);
const updateSchema = z.lazy(() =>
  z.object({ name: name().optional(), display_name: fields.text(128).optional() })
);
const viewSchema = z.lazy(() =>
  z.object({
    id: z.int(),
    name: z.string(),
    display_name: z.string().nullable(),
    agents: z.array(z.object({
      id: z.int(),
      number: z.string(),
      firstname: z.string().nullable(),
      lastname: z.string().nullable(),
    })).meta({ description: "Read-only: `PUT /agentgroups/{id}/agents/{agent_id}` changes it" }),
  })
);

export const agentGroupResource: Resource<AgentGroupRecord, AgentGroupView> = {
  path: "/agentgroups",
  label: "AgentGroup",
  collection: agentGroups,
  fields: ["id", "name", "display_name"],
  search: ["name", "display_name"],
  schemas: { create: createSchema, update: updateSchema, view: viewSchema },
  async views(store, records) {
    const byId = new Map((await listAgents(store)).map((agent) => [agent.id, agent]));
    return records.map(({ agent_ids, ...group }) => ({
      ...group,
      agents: agent_ids.flatMap((id) => {
        const agent = byId.get(id);
        return agent
          ? [{
            id: agent.id,
            number: agent.number,
            firstname: agent.firstname,
            lastname: agent.lastname,
          }]
          : [];
      }),
    }));
  },
  create(_tx, body, id) {
    return Promise.resolve(buildAgentGroup(id, check(createSchema, body)));
  },
  update(_tx, current, body) {
    return Promise.resolve({ ...current, ...check(updateSchema, body) });
  },
  /** No supervisor's rights profile names it any more. */
  beforeDelete: (tx, group) => forgetGroup(tx, group.id),
};

/** An agent joins a group (leaving any other) or leaves it. */
function memberRoutes({ store, tokens }: Services) {
  const path = "/agentgroups/:id/agents/:agent_id";
  const acl = "confd.agentgroups.{id}.agents.{agent_id}";
  /** In one transaction: the path's group and agent (404 when missing), then `change`. */
  const write = (c: Context, change: (tx: Transaction, group: AgentGroupRecord) => Promise<void>) =>
    transact(store, async (tx) => {
      const group = await loadOr404(tx, agentGroups, "AgentGroup", pathId(c, "AgentGroup"));
      await loadOr404(tx, agents, "Agent", pathId(c, "Agent", "agent_id"));
      await change(tx, group);
    });
  const errors = { 404: "`Resource Not Found - AgentGroup …` or `… Agent was not found …`" };
  return new Hono<AppEnv>()
    .put(
      path,
      confdAcl(tokens, `${acl}.update`),
      operation(() => ({
        summary: "Puts the agent in the group, taking it out of the group it was in",
        responses: { 204: null },
        errors,
      }), async (c) => {
        const agentId = pathId(c, "Agent", "agent_id");
        await write(c, (tx, group) => placeAgentIn(tx, agentId, group.id));
        return c.body(null, 204);
      }),
    )
    .delete(
      path,
      confdAcl(tokens, `${acl}.delete`),
      operation(() => ({
        summary: "Takes the agent out of the group (204 also when it is not in it)",
        responses: { 204: null },
        errors,
      }), async (c) => {
        const agentId = pathId(c, "Agent", "agent_id");
        // an agent of another group stays there
        await write(c, async (tx, group) => {
          if (group.agent_ids.includes(agentId)) await placeAgentIn(tx, agentId, null);
        });
        return c.body(null, 204);
      }),
    );
}

export function agentGroupRoutes(services: Services) {
  const app = new Hono<AppEnv>();
  app.route("/", memberRoutes(services));
  app.route("/", resourceRoutes(services, agentGroupResource));
  return app;
}

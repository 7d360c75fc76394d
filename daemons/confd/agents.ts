/**
 * `/1.1/agents` (Deneb.03): agents and, read-only, the queues they are members of (`queues` in the
 * view, `GET /agents/{id}/queues`). Membership is changed through
 * `/1.1/queues/{id}/members/agents/{agent_id}`. The `number` is set on creation and never
 * changes; `password` is write-only. Deleting an agent takes it out of its group
 * (`/1.1/agentgroups`).
 */
import { Hono } from "hono";
import * as z from "zod";
import { placeAgentIn } from "../../lib/agent_groups/store.ts";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import { agentPasswordHash, type AgentRecord, agents, buildAgent } from "../../lib/store/agents.ts";
import { listQueues, membershipsOf, queuesOfAgent } from "../../lib/store/queues.ts";
import { check, fields, pathId } from "./body.ts";
import { getOr404, type Resource, resourceRoutes } from "./crud.ts";
import { inputError, resourceError } from "./errors.ts";
import { confdAcl } from "./guard.ts";
import { listItems } from "./list.ts";

export type AgentView = Omit<AgentRecord, "password_hash"> & {
  queues: { id: number; name: string; penalty: number }[];
};

/** The fields an agent's creation and change share (a function: built with the schemas, on use). */
const editable = () => ({
  firstname: fields.text(128).optional(),
  lastname: fields.text(128).optional(),
  password: fields.text(128).optional(),
  language: fields.text(20).optional(),
  description: fields.text(1024).optional(),
  preprocess_subroutine: fields.text(39).optional(),
});

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const createSchema = z.lazy(() =>
  z.object({
    number: z.string().regex(/^\d{1,40}$/, "Must be 1 to 40 digits."),
    ...editable(),
  })
);

const updateSchema = z.lazy(() => z.object({ number: z.unknown().optional(), ...editable() }));

export const agentResource: Resource<AgentRecord, AgentView> = {
  path: "/agents",
  label: "Agent",
  collection: agents,
  fields: [
    "id",
    "number",
    "firstname",
    "lastname",
    "language",
    "description",
    "preprocess_subroutine",
  ],
  search: ["number", "firstname", "lastname", "description"],
  async views(store, records) {
    const all = await listQueues(store);
    return records.map(({ password_hash: _, ...agent }) => ({
      ...agent,
      queues: membershipsOf(all, agent.id),
    }));
  },
  create(_tx, body, id) {
    return buildAgent(id, check(createSchema, body));
  },
  async update(_tx, current, body) {
    const { number, password, ...input } = check(updateSchema, body);
    if (number !== undefined && number !== current.number) {
      throw inputError("number", "An agent's number cannot be changed.");
    }
    const passwordHash = password === undefined
      ? current.password_hash
      : await agentPasswordHash(password);
    return { ...current, ...input, password_hash: passwordHash };
  },
  async beforeDelete(tx, agent) {
    if ((await queuesOfAgent(tx.store, agent.id)).length) {
      throw resourceError("Agent is associated with a Queue");
    }
    await placeAgentIn(tx, agent.id, null); // its group loses it
  },
};

export function agentRoutes(services: Services) {
  const { store, tokens } = services;
  const app = new Hono<AppEnv>();
  app.get("/agents/:id/queues", confdAcl(tokens, "confd.agents.{id}.queues.read"), async (c) => {
    const id = pathId(c, "Agent");
    await getOr404(store, agents, "Agent", id);
    const memberships = await queuesOfAgent(store, id);
    return c.json(
      listItems(c, memberships, { fields: ["id", "name", "penalty"], search: ["name"] }),
    );
  });
  app.route("/", resourceRoutes(services, agentResource));
  return app;
}

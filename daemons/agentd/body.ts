/**
 * The bodies of the agent daemon's commands, read into `400 invalid fields: <names>` errors, and
 * the status it answers.
 */
import type { Context } from "hono";
import * as z from "zod";
import { invalidFields } from "./errors.ts";

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** `POST …/login`: both strings, not empty; other fields are ignored. */
export const loginBody = z.lazy(() =>
  z.object({
    extension: z.string().min(1),
    context: z.string().min(1),
  })
);

/** `POST …/pause`: an optional reason, a string or null; other fields are ignored. */
export const pauseBody = z.lazy(() => z.object({ reason: z.string().nullable().optional() }));

/** `POST /agents/by-id/{id}/add` and `…/remove`: the queue's id, an integer. */
export const queueBody = z.lazy(() => z.object({ queue_id: z.number().int() }));

/** `POST /users/me/agents/login`: the id of one of the user's lines, an integer. */
export const userLoginBody = z.lazy(() => z.object({ line_id: z.number().int() }));

/**
 * Reads the JSON body against `schema` (a lazy object, as above), naming every field that is
 * missing or of the wrong type. A body that is not JSON, or not a JSON object, names all the
 * schema's fields. With `optional`, an empty body reads as `{}`.
 *
 * @example
 * const { extension, context } = await readFields(c, loginBody);
 */
export async function readFields<S extends z.ZodLazy<z.ZodObject>>(
  c: Context,
  schema: S,
  { optional = false }: { optional?: boolean } = {},
): Promise<z.infer<S>> {
  const names = Object.keys(schema.unwrap().shape);
  const text = await c.req.text();
  let body: unknown = {};
  if (!optional || text.trim() !== "") {
    try {
      body = JSON.parse(text);
    } catch {
      throw invalidFields(names);
    }
  }
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const wrong = new Set(result.error.issues.map((issue) => issue.path[0]));
  throw invalidFields(wrong.has(undefined) ? names : names.filter((name) => wrong.has(name)));
}

/** An agent's status (`AgentStatus`, lib/agent_control.ts), for the OpenAPI document. */
export const AGENT_STATUS = z.lazy(() =>
  z.object({
    id: z.int(),
    tenant_uuid: z.string(),
    origin_uuid: z.string(),
    number: z.string(),
    logged: z.boolean(),
    paused: z.boolean(),
    paused_reason: z.string().nullable(),
    extension: z.string().nullable(),
    context: z.string().nullable(),
    state_interface: z.string().nullable(),
    state: z.string(),
    queues: z.array(z.object({ id: z.int(), name: z.string() })),
  })
);

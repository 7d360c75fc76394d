/**
 * The presences CTI users may choose (docs/cti.md, "Presence and phone hints"), XiVO's CTI
 * statuses: the list the CTI socket sends as `UsersStatuses`, for an administrator's web service
 * user to read and replace.
 *
 * - `GET /presences` (ACL `svc.rest.presences.read`): the list, `[{name, color, longName,
 *   actions: [{name, parameters}]}]`; XiVO's defaults until one is stored.
 * - `PUT /presences` (ACL `svc.rest.presences.update`): replaces it; answers it. 1 to 50 statuses,
 *   names unique (`[A-Za-z0-9_.-]`, 64 at most), `color` `#RRGGBB`, `longName` 1 to 128
 *   characters, each action once at most, `enablednd`'s `parameters` `"true"` or `"false"`.
 *
 * Sockets get the new list when they open. A user whose status left the list shows the list's
 * first. Errors: no body 400 `JsonBodyNotFound`; not JSON or not matching the model 400
 * `JsonErrorDecoding` naming the field; the store failing 503 `Unreachable`.
 */
import { Hono } from "hono";
import * as z from "zod";
import { requireAcl } from "../lib/auth/guard.ts";
import { required } from "../lib/body_schema.ts";
import { type AppEnv, type BodyCodes, readBody } from "../lib/http.ts";
import { operation } from "../lib/openapi/operation.ts";
import { PRESENCE_ACTIONS, STATUS_LIMITS } from "../lib/presence/statuses.ts";
import { readStatuses, writeStatuses } from "../lib/presence/store.ts";
import type { Services } from "../lib/services.ts";

const BODY: BodyCodes = { missing: "JsonBodyNotFound", invalid: "JsonErrorDecoding" };

const text = (max: number) =>
  z.string(required("a string")).min(1, "must not be empty").max(
    max,
    `longer than ${max} characters`,
  );

// built on first use (`z.lazy`), not at every start (docs/performance.md)
const actionSchema = () =>
  z.object({
    name: z.enum(PRESENCE_ACTIONS, { error: `expected one of ${PRESENCE_ACTIONS.join(", ")}` }),
    parameters: z.string(required("a string")).max(STATUS_LIMITS.parameters).default(""),
  }).refine(
    (action) => action.name !== "enablednd" || ["true", "false"].includes(action.parameters),
    { message: 'enablednd takes "true" or "false"', path: ["parameters"] },
  );

const statusSchema = () =>
  z.object({
    name: text(STATUS_LIMITS.name).regex(/^[A-Za-z0-9_.-]+$/, "letters, digits, _ . - only"),
    color: z.string(required("a string")).regex(/^#[0-9A-Fa-f]{6}$/, "expected #RRGGBB"),
    longName: text(STATUS_LIMITS.longName),
    actions: z.array(actionSchema(), required("an array")).max(PRESENCE_ACTIONS.length)
      .refine(
        (actions) => new Set(actions.map((action) => action.name)).size === actions.length,
        "an action appears twice",
      ),
  });

const statusesSchema = z.lazy(() =>
  z.array(statusSchema(), { error: "the body must be a JSON array of statuses" })
    .min(1, "one status at least")
    .max(STATUS_LIMITS.statuses, `${STATUS_LIMITS.statuses} statuses at most`)
    .superRefine((statuses, context) => {
      const seen = new Set<string>();
      for (const [i, { name }] of statuses.entries()) {
        if (seen.has(name)) {
          context.addIssue({ code: "custom", path: [i, "name"], message: `${name} appears twice` });
        }
        seen.add(name);
      }
    })
);

export function presenceRoutes(services: Services): Hono<AppEnv> {
  const { store, tokens } = services;
  return new Hono<AppEnv>()
    .get(
      "/presences",
      requireAcl(tokens, "svc.rest.presences.read"),
      operation(() => ({
        summary: "The presences CTI users may choose (`UsersStatuses`)",
        responses: { 200: statusesSchema },
      }), async (c) => c.json(await readStatuses(store))),
    )
    .put(
      "/presences",
      requireAcl(tokens, "svc.rest.presences.update"),
      operation(() => ({
        summary: "Replaces the presences CTI users may choose",
        description: "Sockets get the new list when they open; a user whose status left the " +
          "list shows the list's first.",
        body: statusesSchema,
        responses: { 200: statusesSchema },
        errors: { 400: "`JsonBodyNotFound`, `JsonErrorDecoding` (naming the field)" },
      }), async (c) => {
        const statuses = await readBody(c, statusesSchema, BODY);
        await writeStatuses(store, statuses);
        return c.json(statuses);
      }),
    );
}

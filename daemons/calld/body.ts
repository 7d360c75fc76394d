/**
 * The bodies and query values of the call daemon's routes, as wazo-calld reads them (docs/calls.md):
 * the call requests ignore fields they do not know, the transfer and conference requests refuse
 * them; anything off the model is 400 `invalid-data` naming each field and what is wrong with it.
 */
import type { Context } from "hono";
import * as z from "zod";
import { invalidData } from "./errors.ts";

const text = () => z.string().min(1).max(256);

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** `POST /calls`. */
export const CALL_REQUEST = z.lazy(() =>
  z.object({
    source: z.object({
      user: text().meta({ description: "The uuid of the user whose phone is rung first" }),
      line_id: z.number().int().optional().meta({ description: "Must be the user's main line" }),
      from_mobile: z.boolean().optional().meta({ description: "Ring the user's mobile first" }),
      all_lines: z.boolean().optional().meta({ description: "Accepted; svc rings the main line" }),
      auto_answer: z.boolean().optional().meta({ description: "Accepted; has no effect" }),
    }),
    destination: z.object({
      context: text().meta({ description: "Must be the context of the user's main line" }),
      extension: text(),
      priority: z.number().int().min(1),
    }),
    variables: z.record(z.string(), z.string()).optional(),
  })
);

/** `POST /users/me/calls`. */
export const USER_CALL_REQUEST = z.lazy(() =>
  z.object({
    extension: text(),
    variables: z.record(z.string(), z.string()).optional(),
    line_id: z.number().int().optional().meta({ description: "Must be the user's main line" }),
    from_mobile: z.boolean().optional(),
    all_lines: z.boolean().optional().meta({ description: "Accepted; svc rings the main line" }),
    auto_answer_caller: z.boolean().optional().meta({ description: "Accepted; has no effect" }),
  })
);

const flow = () => z.enum(["attended", "blind"]).default("attended");
/** Seconds the recipient rings (attended), null: as long as its own dialplan rings it. */
const timeout = () => z.number().int().min(1).max(3600).nullable().optional();

/** `POST /transfers`. */
export const TRANSFER_REQUEST = z.lazy(() =>
  z.strictObject({
    transferred_call: text(),
    initiator_call: text(),
    context: text(),
    exten: text(),
    flow: flow(),
    variables: z.record(z.string(), z.string()).optional().meta({
      description: "Must be empty: svc sets no variables on a transfer",
    }),
    timeout: timeout(),
  })
);

/** `POST /users/me/transfers`. */
export const USER_TRANSFER_REQUEST = z.lazy(() =>
  z.strictObject({
    initiator_call: text(),
    exten: text(),
    flow: flow(),
    timeout: timeout(),
  })
);

/** `POST /users/me/conferences/adhoc`. */
export const ADHOC_REQUEST = z.lazy(() =>
  z.strictObject({
    host_call_id: text(),
    participant_call_ids: z.array(text()).max(32).default([]),
  })
);

let dtmfQuerySchema: z.ZodObject<{ digits: z.ZodString }> | undefined;

/** `PUT …/dtmf?digits=`: the keys to press, one by one; built on first use (docs/performance.md). */
export const dtmfQuery = () =>
  dtmfQuerySchema ??= z.object({
    digits: z.string().regex(/^[0-9*#]{1,64}$/, "String does not match expected pattern."),
  });

/** What is wrong with `error`'s value, field by field (`source.user`: [...]). */
function details(error: z.ZodError): Record<string, string[]> {
  // a Map: a field may be named `constructor` or `__proto__`
  const fields = new Map<string, string[]>();
  for (const issue of error.issues) {
    const keys = issue.code === "unrecognized_keys" ? issue.keys : [""];
    for (const key of keys) {
      const name = [...issue.path, ...(key ? [key] : [])].join(".") || "_schema";
      const messages = fields.get(name) ?? [];
      messages.push(issue.code === "unrecognized_keys" ? "Unknown field." : issue.message);
      fields.set(name, messages);
    }
  }
  return Object.fromEntries(fields);
}

/** `value` read with `schema`; off the model: 400 `invalid-data`. */
export function parsed<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw invalidData(details(result.error));
  return result.data;
}

/** The JSON body read with `schema`; not JSON: 400 `invalid-data`. */
export async function readBody<S extends z.ZodType>(c: Context, schema: S): Promise<z.infer<S>> {
  const raw = await c.req.text();
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    throw invalidData({ _schema: ["Invalid JSON body."] });
  }
  return parsed(schema, body);
}

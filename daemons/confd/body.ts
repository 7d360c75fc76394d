/** Reading request bodies and query values the configuration daemon's way. */
import type { Context } from "hono";
import * as z from "zod";
import { badInput, inputError, notFound } from "./errors.ts";

/**
 * Parses the JSON body against `schema`; unknown fields are dropped by the schema. A body that is
 * not a JSON object, or a field that does not match, answers 400 `Input Error`.
 */
export async function readBody<T extends z.ZodType>(c: Context, schema: T): Promise<z.infer<T>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw badInput("the body is not valid JSON");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw badInput("the body must be a JSON object");
  }
  return check(schema, body);
}

/** Checks a value against `schema`, answering 400 `Input Error` naming the first bad field. */
export function check<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const field = issue.path.join(".");
  throw field ? inputError(field, issue.message) : badInput(issue.message);
}

/** The integer id a path value names, or null when it cannot name one. */
export const integerId = (raw: string): number | null =>
  /^\d{1,15}$/.test(raw) ? Number(raw) : null;

/** The integer id of a path, or 404 for the resource when it is not one. */
export function pathId(c: Context, resource: string, name = "id"): number {
  const raw = c.req.param(name) ?? "";
  const id = integerId(raw);
  if (id === null) throw notFound(resource, { [name]: raw });
  return id;
}

/** Reusable field schemas with the daemon's limits. */
export const fields = {
  /** A text that may be null; `max` characters at most. */
  text: (max: number) => z.string().max(max, `Longer than maximum length ${max}.`).nullable(),
  /** A required, non-empty text. */
  name: (max: number) =>
    z.string().min(1, "Shorter than minimum length 1.").max(
      max,
      `Longer than maximum length ${max}.`,
    ),
  /** A JSON boolean only: `"true"` or `1` are refused. */
  boolean: () => z.boolean(),
  integer: (min: number, max: number) =>
    z.number().int("Not a valid integer.").min(min, `Must be greater than or equal to ${min}.`)
      .max(max, `Must be less than or equal to ${max}.`),
};

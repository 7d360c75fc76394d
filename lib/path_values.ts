/**
 * The rule every path value of every route meets before anything is looked up (docs/decisions.md,
 * "Errors and HTTP"): 1 to {@link MAX_PATH_VALUE} characters once decoded, none a control
 * character. A value outside it can name nothing (no login, name, number or id is that long or
 * holds such a character), so the route answers it as it answers an unknown id, without a store
 * read; and no store key, ACL or cache entry is ever built from it. An area's own shape rules (an
 * integer id, a UUID, an agent number) come on top, where the area reads the value.
 */
import type { Context } from "hono";
import { UnknownPathValue } from "./errors.ts";

/** The longest path value: the longest login (decisions §2), name or id any area keeps. */
export const MAX_PATH_VALUE = 256;

// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Why `value` can name nothing, or null when it may name something.
 *
 * @example
 * pathValueProblem("alice"); // null
 * pathValueProblem("9".repeat(300)); // "is longer than 256 characters"
 */
export function pathValueProblem(value: string): string | null {
  if (value === "") return "is empty";
  if (value.length > MAX_PATH_VALUE) return `is longer than ${MAX_PATH_VALUE} characters`;
  if (CONTROL.test(value)) return "holds a control character";
  return null;
}

/**
 * Checks every path value of the route answering `c` (decoded, as `c.req.param()` gives them, or
 * `values` when the caller read them already);
 * throws {@link UnknownPathValue} for the first that can name nothing. The guards call it, so every
 * route behind a token is covered.
 *
 * @example
 * checkPathValues(c); // in a guard, once the token is verified, before the ACL is filled
 */
export function checkPathValues(
  c: Context,
  values: Record<string, string | undefined> = c.req.param(),
): void {
  for (const [name, value] of Object.entries(values)) {
    if (value === undefined) continue;
    const problem = pathValueProblem(value);
    if (problem) throw new UnknownPathValue(name, value, problem);
  }
}

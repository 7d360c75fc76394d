/**
 * What the robustness tests of the 2.0 API, the 1.0 API and the agent daemon share: path values and
 * bodies no route expects, the routes of the app under a prefix, and the check that every answer
 * is a success or an error in the API's documented form, never a 500.
 */
import { bodyText, type TestContext } from "./helpers.ts";
import { isMiddlewareEntry } from "../lib/no_route.ts";

/** Path values no route expects: zero, a word, out of range, negative, dots, encoded dots. */
export const ODD_VALUES = ["0", "abc", "99999999999", "-1", "a.b", "%2e%2e"];

/**
 * Bodies no route expects: none, empty, not JSON, JSON that is no object, then `specific` (an
 * API's own: wrong types, huge values, or a valid body where the path values are what is odd),
 * and JSON nested too deep.
 */
export function oddBodies(...specific: string[]): (string | undefined)[] {
  return [
    undefined,
    "",
    "{",
    "[]",
    "null",
    "42",
    '"text"',
    ...specific,
    "[".repeat(5_000) + "]".repeat(5_000),
  ];
}

/** The documented form of an API's error body: true when `body` has it. */
export type ErrorForm = (body: unknown) => boolean;

const isRecord = (body: unknown): body is Record<string, unknown> =>
  typeof body === "object" && body !== null && !Array.isArray(body);

/** `{error, message}`, both strings: the 2.0 and 1.0 APIs. */
export const SERVICE_ERROR: ErrorForm = (body) =>
  isRecord(body) && typeof body.error === "string" && typeof body.message === "string";

/** `{error}` alone, a string: the agent daemon (decisions §9). */
export const AGENTD_ERROR: ErrorForm = (body) =>
  isRecord(body) && Object.keys(body).join() === "error" && typeof body.error === "string";

/** A route: its method and its path template (`/users/:id`). */
export type Route = readonly [method: string, path: string];

/**
 * Every route of the app under `prefix`, once each (the app lists a route once per handler, a
 * guard and the route's own), without the middlewares mounted for `ALL` methods.
 */
export function routesUnder(ctx: TestContext, prefix: string): Route[] {
  const routes = ctx.app.routes
    .filter((route) => route.path.startsWith(prefix) && !isMiddlewareEntry(route))
    .map((route): Route => [route.method, route.path]);
  return [...new Map(routes.map((route) => [route.join(" "), route])).values()];
}

/** One request of a robustness test. */
export interface Probe {
  method: string;
  /** The route's path template. */
  path: string;
  /** The path with every parameter replaced by an odd value, and a query. */
  url: string;
  body?: string;
}

/**
 * Every route with each of `values` in all its path parameters: with each of `bodies`, or for a
 * GET or DELETE (which send no body) with each query of `queries(value)`.
 */
export function* probes(
  routes: Route[],
  values: string[],
  bodies: (string | undefined)[],
  queries: (value: string) => string[] = () => [""],
): Generator<Probe> {
  for (const [method, path] of routes) {
    for (const value of values) {
      const url = path.replace(/:[A-Za-z_]+(\{[^}]*\})?/g, value);
      if (method === "GET" || method === "DELETE") {
        for (const query of queries(value)) yield { method, path, url: `${url}${query}` };
      } else {
        for (const body of bodies) yield { method, path, url, body };
      }
    }
  }
}

/**
 * Sends every probe and answers what went wrong, one line each: a 5xx (unless `documented500`
 * allows it), or an error whose body is not in `form`; and how many requests were sent.
 */
export async function robustnessFailures(
  all: Iterable<Probe>,
  send: (probe: Probe) => Promise<Response>,
  form: ErrorForm,
  documented500: (probe: Probe, body: unknown) => boolean = () => false,
): Promise<{ failures: string[]; requests: number }> {
  const failures: string[] = [];
  let requests = 0;
  for (const probe of all) {
    const response = await send(probe);
    const text = await bodyText(response);
    requests++;
    if (response.status < 400) continue;
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch { /* not in the form: reported below */ }
    if ((response.status >= 500 && !documented500(probe, parsed)) || !form(parsed)) {
      const { method, url, body } = probe;
      failures.push(
        `${method} ${url.slice(0, 80)} ${body?.slice(0, 40) ?? ""} -> ` +
          `${response.status} ${text.slice(0, 120)}`,
      );
    }
  }
  return { failures, requests };
}

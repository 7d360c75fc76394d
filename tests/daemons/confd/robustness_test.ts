/**
 * Every /1.1 route, with odd ids and bodies that are not what it expects, answers a 4xx in the
 * daemon's error form: never a 500, never a body that is not a JSON array of strings.
 */
import assert from "node:assert/strict";
import { setupConfd } from "../../helpers.ts";
import { isMiddlewareEntry } from "../../../lib/no_route.ts";

const ODD_IDS = [
  "0",
  "abc",
  "99999999999",
  "-1",
  "1.5",
  "%2e%2e",
  "00000000-0000-4000-8000-000000000000",
];
const ODD_BODIES = ["{", "[]", "null", "42", '"text"', '{"name": 5, "firstname": []}', "{}"];

Deno.test("no /1.1 route answers 500 to odd ids or bodies", async () => {
  const { ctx, api } = await setupConfd();
  const routes = ctx.app.routes
    .filter((route) => route.path.startsWith("/1.1/") && !isMiddlewareEntry(route))
    .map((route) => [route.method, route.path] as const);
  assert.ok(routes.length > 80, `only ${routes.length} routes found`);
  const failures: string[] = [];
  for (const [method, path] of new Map(routes.map((r) => [r.join(" "), r])).values()) {
    for (const id of ODD_IDS) {
      const url = path.replace(/^\/1\.1/, "").replace(/:[a-z_]+/g, id);
      for (const body of method === "GET" || method === "DELETE" ? [undefined] : ODD_BODIES) {
        const response = await api.call(method, url, body);
        const text = await response.text();
        let parsed: unknown = null;
        try {
          parsed = JSON.parse(text);
        } catch { /* reported below */ }
        const errorForm = Array.isArray(parsed) && parsed.every((item) => typeof item === "string");
        if (response.status >= 500 || (response.status >= 400 && !errorForm)) {
          failures.push(
            `${method} ${url} ${body ?? ""} -> ${response.status} ${text.slice(0, 120)}`,
          );
        }
      }
    }
  }
  assert.deepEqual(failures, []);
});

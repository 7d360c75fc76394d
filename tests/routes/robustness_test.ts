/**
 * Every /svc/api/2.0 route, called by a web service user holding every ACL and by a CTI user, with
 * odd path values and bodies that are not what it expects, answers in the `{error, message}` form
 * and never 500, except the one 500 the spec documents (`JsonParsingError` for a contact that is
 * not JSON).
 */
import assert from "node:assert/strict";
import { ctiUser, login, setup, webServiceUser } from "../helpers.ts";

const ODD_VALUES = ["0", "abc", "99999999999", "-1", "a.b", "%2e%2e", crypto.randomUUID()];
const ODD_BODIES = [
  "",
  "{",
  "[]",
  "null",
  "42",
  '"text"',
  '{"state": "yes", "enabled": 1, "destination": [], "token": {}, "lastname": 5}',
  JSON.stringify({ destination: "1".repeat(100_000), variables: { a: "b".repeat(100_000) } }),
  "[".repeat(5_000) + "]".repeat(5_000),
];

/** The one documented 500: a contact body that is not JSON. */
const documented500 = (path: string, body: { error?: string }) =>
  path.includes("/contact/") && body.error === "JsonParsingError";

Deno.test("no 2.0 route answers 500 to odd path values or bodies", async () => {
  const ctx = await setup();
  await ctiUser(ctx, "alice");
  const admin = await webServiceUser(ctx, ["#"]);
  const tokens = [
    await login(ctx, "webservice", admin.login),
    await login(ctx, "login", "alice"),
  ];
  const routes = ctx.app.routes
    .filter((route) => route.path.startsWith("/svc/api/2.0/") && route.method !== "ALL")
    .map((route) => [route.method, route.path] as const);
  assert.ok(routes.length > 30, `only ${routes.length} routes found`);
  const failures: string[] = [];
  let requests = 0;
  for (const [method, path] of new Map(routes.map((r) => [r.join(" "), r])).values()) {
    for (const value of ODD_VALUES) {
      const url = path.replace(/:[A-Za-z_]+(\{[^}]*\})?/g, value);
      const bodies = method === "GET" || method === "DELETE" ? [undefined] : ODD_BODIES;
      for (const body of bodies) {
        for (const token of tokens) {
          const response = await ctx.app.request(url, {
            method,
            headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
            body,
          });
          const text = await response.text();
          requests++;
          if (response.status < 400) continue;
          let parsed: { error?: string; message?: string } | null = null;
          try {
            parsed = JSON.parse(text);
          } catch { /* reported below */ }
          const errorForm = typeof parsed?.error === "string" && typeof parsed.message === "string";
          if ((response.status >= 500 && !documented500(path, parsed ?? {})) || !errorForm) {
            const shown = body === undefined ? "" : body.slice(0, 40);
            failures.push(`${method} ${url} ${shown} -> ${response.status} ${text.slice(0, 120)}`);
          }
        }
      }
    }
  }
  assert.deepEqual(failures, []);
  assert.ok(requests > 2_000, `only ${requests} requests sent`);
});

/**
 * Every /svc/api/2.0 route, called by a web service user holding every ACL and by a CTI user, with
 * odd path values and bodies that are not what it expects, answers in the `{error, message}` form
 * and never 500, except the one 500 the spec documents (`JsonParsingError` for a contact that is
 * not JSON).
 */
import assert from "node:assert/strict";
import { ctiUser, login, setup, webServiceUser } from "../helpers.ts";
import {
  ODD_VALUES,
  oddBodies,
  type Probe,
  probes,
  robustnessFailures,
  routesUnder,
  SERVICE_ERROR,
} from "../robustness.ts";

const ODD_BODIES = oddBodies(
  '{"state": "yes", "enabled": 1, "destination": [], "token": {}, "lastname": 5}',
  JSON.stringify({ destination: "1".repeat(100_000), variables: { a: "b".repeat(100_000) } }),
);

/** The one documented 500: a contact body that is not JSON. */
const documented500 = ({ path }: Probe, body: unknown) =>
  path.includes("/contact/") && (body as { error?: unknown } | null)?.error === "JsonParsingError";

Deno.test("no 2.0 route answers 500 to odd path values or bodies", async () => {
  const ctx = await setup();
  await ctiUser(ctx, "alice");
  const admin = await webServiceUser(ctx, ["#"]);
  const routes = routesUnder(ctx, "/svc/api/2.0/");
  assert.ok(routes.length > 30, `only ${routes.length} routes found`);
  const failures: string[] = [];
  let requests = 0;
  for (
    const token of [await login(ctx, "webservice", admin.login), await login(ctx, "login", "alice")]
  ) {
    const headers = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };
    const result = await robustnessFailures(
      probes(routes, [...ODD_VALUES, crypto.randomUUID()], ODD_BODIES),
      ({ method, url, body }) => Promise.resolve(ctx.app.request(url, { method, headers, body })),
      SERVICE_ERROR,
      documented500,
    );
    failures.push(...result.failures);
    requests += result.requests;
  }
  assert.deepEqual(failures, []);
  assert.ok(requests > 2_000, `only ${requests} requests sent`);
});

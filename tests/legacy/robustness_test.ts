/**
 * Every 1.0 route, called from an allowed address with odd path values and bodies that are not
 * what it expects, answers in the `{error, message}` form and never 500.
 */
import assert from "node:assert/strict";
import { ctiUser, setup } from "../helpers.ts";
import {
  ODD_VALUES,
  oddBodies,
  probes,
  robustnessFailures,
  routesUnder,
  SERVICE_ERROR,
} from "../robustness.ts";
import { ALLOWED_HOSTS, V1, v1 } from "./fixtures.ts";

const ODD_BODIES = oddBodies(
  '{"state": "yes", "number": [], "username": {}, "queueId": "1", "phoneNumber": 5}',
  '{"agentphonenumber": "1001", "agentnumber": "99999999999999999999"}',
  JSON.stringify({ number: "1".repeat(100_000), destination: "2".repeat(100_000) }),
  // valid for every route: the path values are what is odd
  JSON.stringify({
    password: "x",
    state: true,
    number: "1002",
    username: "alice",
    destination: "1002",
    queueId: 1,
    phoneNumber: "1001",
    agentphonenumber: "1001",
    agentnumber: "8001",
  }),
);

/** A GET has no body: its odd values go in the query too. */
const queries = (value: string) => [`?size=${value}&days=${value}`, "?size=5", "?days=2"];

Deno.test("no 1.0 route answers 500 to odd path values or bodies", async () => {
  const ctx = await setup({ SVC_DEPRECATED_API_HOST: ALLOWED_HOSTS });
  await ctiUser(ctx, "alice");
  const routes = routesUnder(ctx, `${V1}/`)
    .map(([method, path]) => [method, path.slice(V1.length)] as const);
  assert.equal(routes.length, 26, "13 routes, each with and without the slash");
  const { failures, requests } = await robustnessFailures(
    probes(routes, [...ODD_VALUES, "%00", "x".repeat(3000)], ODD_BODIES, queries),
    ({ method, url, body }) => v1(ctx, method, url, body),
    SERVICE_ERROR,
  );
  assert.deepEqual(failures, []);
  assert.ok(requests > 1_500, `only ${requests} requests sent`);
});

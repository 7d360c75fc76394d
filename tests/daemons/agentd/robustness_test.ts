/**
 * Every `/agents` route, with odd path values and bodies that are not what it expects, answers
 * 2xx or an error in the daemon's form `{"error": "..."}`, and never 500 (decisions §9, §11).
 */
import assert from "node:assert/strict";
import { bearer } from "../../helpers.ts";
import {
  AGENTD_ERROR,
  ODD_VALUES,
  oddBodies,
  probes,
  robustnessFailures,
  routesUnder,
} from "../../robustness.ts";
import { callCenter, tokenHolding } from "./fixtures.ts";

const ODD_BODIES = oddBodies(
  '{"extension": 1001, "context": {}, "reason": 5}',
  '{"extension": "1001", "context": "default", "reason": "r"}',
  JSON.stringify({ extension: "1".repeat(100_000), context: "c".repeat(100_000) }),
);

Deno.test("no /agents route answers 500, or out of the daemon's form, to odd input", async () => {
  const { t } = await callCenter();
  const headers = {
    ...bearer(await tokenHolding(t.ctx, ["agentd.#"])),
    "Content-Type": "application/json",
  };
  const routes = routesUnder(t.ctx, "/agents");
  assert.equal(routes.length, 11, routes.join(" | "));
  const values = [...ODD_VALUES, "1", "8001", "1e3", " 1"].map(encodeURIComponent);
  const { failures, requests } = await robustnessFailures(
    probes(routes, values, ODD_BODIES),
    ({ method, url, body }) => Promise.resolve(t.ctx.app.request(url, { method, headers, body })),
    AGENTD_ERROR,
  );
  assert.deepEqual(failures, []);
  assert.ok(requests > 800, `only ${requests} requests sent`);
});

/**
 * Every `/agents` route, and those of the daemon served at the root (`/users/me/agents…`,
 * `/status`), with odd path values and bodies that are not what it expects, answers 2xx or an
 * error in the daemon's form `{"error": "..."}`, and never 500 (decisions §9, §11).
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
import { callCenter, ctiToken, tokenHolding } from "./fixtures.ts";
import { linkUserAgent } from "../../../lib/store/user_agents.ts";
import { findUserByUsername } from "../../../lib/store/users.ts";

const ODD_BODIES = oddBodies(
  '{"extension": 1001, "context": {}, "reason": 5, "queue_id": "1", "line_id": 1.5}',
  '{"extension": "1001", "context": "default", "reason": "r", "queue_id": 1, "line_id": 1}',
  '{"queue_id": 99999999999999999999, "line_id": -1}',
  JSON.stringify({ extension: "1".repeat(100_000), context: "c".repeat(100_000) }),
);

Deno.test("no /agents route answers 500, or out of the daemon's form, to odd input", async () => {
  const { t } = await callCenter();
  const headers = {
    ...bearer(await tokenHolding(t.ctx, ["agentd.#"])),
    "Content-Type": "application/json",
  };
  const routes = routesUnder(t.ctx, "/agents");
  assert.equal(routes.length, 16, routes.join(" | "));
  const values = [...ODD_VALUES, "1", "8001", "1e3", " 1"].map(encodeURIComponent);
  const { failures, requests } = await robustnessFailures(
    probes(routes, values, ODD_BODIES),
    ({ method, url, body }) => Promise.resolve(t.ctx.app.request(url, { method, headers, body })),
    AGENTD_ERROR,
  );
  assert.deepEqual(failures, []);
  assert.ok(requests > 800, `only ${requests} requests sent`);
});

Deno.test("no route of the daemon at the root answers 500, or out of its form, to odd input", async () => {
  const { t, agent } = await callCenter();
  // bob (1002) is a CTI user whose agent logs on and off his line as the bodies come
  const bob = (await findUserByUsername(t.ctx.services.store, "bob"))!;
  await linkUserAgent(t.ctx.services.store, bob.id, agent.id);
  const headers = { ...bearer(await ctiToken(t.ctx, bob)), "Content-Type": "application/json" };
  const routes = [...routesUnder(t.ctx, "/users/me/agents"), ...routesUnder(t.ctx, "/status")];
  assert.equal(routes.length, 6, routes.join(" | "));
  const { failures, requests } = await robustnessFailures(
    probes(routes, ["1"], [...ODD_BODIES, `{"line_id": ${bob.line_ids[0]}}`]),
    ({ method, url, body }) => Promise.resolve(t.ctx.app.request(url, { method, headers, body })),
    AGENTD_ERROR,
  );
  assert.deepEqual(failures, []);
  assert.ok(requests > 40, `only ${requests} requests sent`);
});

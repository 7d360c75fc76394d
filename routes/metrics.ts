/**
 * `GET /metrics`: this process's Prometheus metrics in the text format (docs/metrics.md). Readable
 * with a token holding `svc.rest.metrics.read` (a web service user's: `alias.ctiuser` does not
 * grant it) or with the static token of `SVC_METRICS_TOKEN` (tokens of svc expire; a scrape job
 * needs one that does not): every series. A CTI user whose rights profile is a supervisor's or an
 * admin's reads supervision's series alone, of what its profile covers (lib/supervision/metrics.ts
 * `coveredExposition`). Refusals are the 2.0 API's: 400 without a token, 403 `InvalidToken` for a
 * token that is neither, 403 `Forbidden` for a token without the ACL or a profile.
 */
import { Hono, type MiddlewareHandler } from "hono";
import { readToken } from "../lib/auth/guard.ts";
import { sameBytes, sha256 } from "../lib/digest.ts";
import type { AppEnv } from "../lib/http.ts";
import { requireRights } from "../lib/rights/guard.ts";
import { ALL_RIGHTS } from "../lib/rights/rights.ts";
import type { Services } from "../lib/services.ts";
import { coveredExposition } from "../lib/supervision/metrics.ts";

export const METRICS_ACL = "svc.rest.metrics.read";

/**
 * Lets through the static token of `SVC_METRICS_TOKEN`, else a token holding {@link METRICS_ACL},
 * else a CTI user with a rights profile (`c.var.rights` then says which).
 */
function metricsGuard(services: Services): MiddlewareHandler<AppEnv> {
  const withRights = requireRights(services, METRICS_ACL);
  const { metricsToken } = services.config;
  if (metricsToken === null) return withRights;
  const expected = sha256(metricsToken);
  return async (c, next) => {
    // digests have one length: the comparison takes the same time whatever the token sent
    const isStatic = sameBytes(await sha256(readToken(c)), await expected);
    return isStatic ? next() : withRights(c, next);
  };
}

export function metricsRoutes(services: Services) {
  const { metrics } = services;
  return new Hono<AppEnv>().get("/metrics", metricsGuard(services), async (c) => {
    const rights = c.get("rights") ?? ALL_RIGHTS; // the static token: everything
    const text = rights === ALL_RIGHTS
      ? await metrics.exposition()
      : await coveredExposition(metrics.registry, services, rights.coverage);
    return c.body(text, 200, { "Content-Type": metrics.contentType, "Cache-Control": "no-store" });
  });
}

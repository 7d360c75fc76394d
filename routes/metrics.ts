/**
 * `GET /metrics`: this process's Prometheus metrics in the text format (docs/metrics.md). Readable
 * with a token holding `svc.rest.metrics.read` (a web service user's: `alias.ctiuser` does not
 * grant it) or with the static token of `SVC_METRICS_TOKEN` (tokens of svc expire; a scrape job
 * needs one that does not). Refusals are the 2.0 API's: 400 without a token, 403 `InvalidToken`
 * for a token that is neither, 403 `Forbidden` for a token without the ACL.
 */
import { Hono, type MiddlewareHandler } from "hono";
import { readToken, requireAcl } from "../lib/auth/guard.ts";
import { sameBytes, sha256 } from "../lib/digest.ts";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";

export const METRICS_ACL = "svc.rest.metrics.read";

/** Lets through the static token of `SVC_METRICS_TOKEN`, else a token holding {@link METRICS_ACL}. */
function metricsGuard({ config, tokens }: Services): MiddlewareHandler<AppEnv> {
  const withAcl = requireAcl(tokens, METRICS_ACL);
  if (config.metricsToken === null) return withAcl;
  const expected = sha256(config.metricsToken);
  return async (c, next) => {
    // digests have one length: the comparison takes the same time whatever the token sent
    const isStatic = sameBytes(await sha256(readToken(c)), await expected);
    return isStatic ? next() : withAcl(c, next);
  };
}

export function metricsRoutes(services: Services) {
  const { metrics } = services;
  return new Hono<AppEnv>().get("/metrics", metricsGuard(services), async (c) => {
    const text = await metrics.exposition();
    return c.body(text, 200, { "Content-Type": metrics.contentType, "Cache-Control": "no-store" });
  });
}

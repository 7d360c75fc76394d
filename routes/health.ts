/**
 * `GET /health` (the process runs), `GET /ready` (the store answers and the telephony platform
 * takes commands; decisions §1 and §12: 503, with `"platform": "unreachable"` when it is the PBX)
 * and `GET /version` (svc's version and the git revision of the build, `lib/version.ts`). None
 * needs a token: probes and deploy checks call them, and nothing they tell is secret.
 */
import { Hono } from "hono";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { buildInfo } from "../lib/version.ts";

export function healthRoutes({ store, platform }: Services) {
  return new Hono<AppEnv>()
    .get("/health", (c) => c.json({ status: "ok" }))
    .get("/ready", async (c) => {
      const storeUp = await store.ping();
      const platformUp = platform.reachable();
      if (storeUp && platformUp) return c.json({ status: "ready" });
      const body = platformUp
        ? { status: "unavailable" }
        : { status: "unavailable", platform: "unreachable" };
      return c.json(body, 503);
    })
    .get("/version", (c) => c.json(buildInfo()));
}

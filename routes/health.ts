/**
 * `GET /health` (the process runs), `GET /ready` (the store answers and the telephony platform
 * takes commands; decisions §1 and §12: 503, with `"platform": "unreachable"` when it is the PBX)
 * and `GET /version` (svc's version and the git revision of the build, `lib/version.ts`). None
 * needs a token: probes and deploy checks call them, and nothing they tell is secret.
 */
import { operation, type ZodBuilders } from "../lib/openapi/operation.ts";
import { Hono } from "hono";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { buildInfo } from "../lib/version.ts";

/** `servers` of `/ready` with several PBX servers: each by name, the main one first. */
const servers = (z: ZodBuilders) =>
  z.array(z.object({
    name: z.string(),
    state: z.string(),
  }));

export function healthRoutes({ store, platform }: Services) {
  return new Hono<AppEnv>()
    .get(
      "/health",
      // the schemas built from the zod the OpenAPI generator gives: the start loads no zod
      // (docs/performance.md)
      operation(
        (z) => ({
          summary: "The process runs",
          responses: { 200: z.object({ status: z.literal("ok") }) },
        }),
        (c) => c.json({ status: "ok" }),
      ),
    )
    .get(
      "/ready",
      operation((z) => ({
        summary: "The store answers and the telephony platform takes commands",
        responses: {
          200: z.object({
            status: z.literal("ready"),
            servers: servers(z).optional(),
          }),
          503: z.object({
            status: z.literal("unavailable"),
            platform: z.literal("unreachable").optional(),
            servers: servers(z).optional(),
          }),
        },
      }), async (c) => {
        const storeUp = await store.ping();
        const platformUp = platform.reachable();
        // several PBX servers: each, and where it stands (ready while one of them is)
        const listed = platform.servers ? { servers: platform.servers() } : {};
        if (storeUp && platformUp) return c.json({ status: "ready", ...listed });
        const body = platformUp
          ? { status: "unavailable", ...listed }
          : { status: "unavailable", platform: "unreachable", ...listed };
        return c.json(body, 503);
      }),
    )
    .get(
      "/version",
      operation((z) => ({
        summary: "The version and the git revision of this build (docs/metrics.md)",
        responses: { 200: z.object({ version: z.string(), revision: z.string() }) },
      }), (c) => c.json(buildInfo())),
    );
}

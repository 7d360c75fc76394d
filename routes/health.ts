/** `GET /health` (the process runs) and `GET /ready` (the store answers). */
import { Hono } from "hono";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";

export function healthRoutes({ store }: Services) {
  return new Hono<AppEnv>()
    .get("/health", (c) => c.json({ status: "ok" }))
    .get(
      "/ready",
      async (c) =>
        await store.ping() ? c.json({ status: "ready" }) : c.json({ status: "unavailable" }, 503),
    );
}

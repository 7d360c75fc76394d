/**
 * `POST /handshake/<domain>/` (decisions §7): reposts every event still retained in the event log
 * (the last `SVC_EVENT_RETENTION` seconds), oldest first, to `SVC_EVENT_URL`, and answers 200
 * `{"reposted": n}`. They are queued in the outbox under new ids and delivered like any event, so
 * the answer comes once they are durable, not once they are delivered. Without `SVC_EVENT_URL`
 * nothing is posted: `{"reposted": 0}`. The body, if any, is not read; `domain` is any value.
 */
import { Hono } from "hono";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";
import { both } from "./common.ts";

export function handshakeRoutes({ events, logger }: Services): Hono<AppEnv> {
  return new Hono<AppEnv>().on("POST", both("/handshake/:domain"), async (c) => {
    const reposted = await events.repostRetained();
    logger.info("handshake", { requestId: c.get("requestId"), reposted });
    return c.json({ reposted });
  });
}

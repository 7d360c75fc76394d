/**
 * The event export's state (decisions §7): `GET /events/deliveries` shows the pending and
 * dead-letter counts, the last failure and the dead letters; `POST /events/deadletters/retry`
 * puts the dead letters back in the outbox, due at once.
 */
import { Hono } from "hono";
import { requireAcl } from "../lib/auth/guard.ts";
import type { AppEnv } from "../lib/http.ts";
import type { Services } from "../lib/services.ts";

export function eventRoutes({ tokens, events }: Services): Hono<AppEnv> {
  return new Hono<AppEnv>()
    .get(
      "/events/deliveries",
      requireAcl(tokens, "svc.rest.events.deliveries.read"),
      async (c) => c.json(await events.deliveries()),
    )
    .post(
      "/events/deadletters/retry",
      requireAcl(tokens, "svc.rest.events.deadletters.retry.create"),
      async (c) => c.json({ requeued: await events.retryDeadLetters() }),
    );
}

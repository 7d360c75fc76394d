/**
 * `Idempotency-Key` on the 1.0 API (`lib/idempotency.ts`). There are no tokens here: the caller a
 * key belongs to is the client address, as the allowlist (`client_address.ts`) finds it, so two
 * allowed clients' keys never meet.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../lib/http.ts";
import { idempotent } from "../lib/idempotency.ts";
import { canonicalAddress } from "../lib/ip_address.ts";
import type { Services } from "../lib/services.ts";
import { clientAddress } from "./client_address.ts";

/**
 * The `Idempotency-Key` middleware of a 1.0 route.
 *
 * @example
 * app.on("POST", both("/dnd/:domain/:username"), legacyIdempotent(services), handler);
 */
export function legacyIdempotent(services: Services): MiddlewareHandler<AppEnv> {
  return idempotent(services, {
    caller: (c) => {
      const { address } = clientAddress(
        c.env,
        c.req.header("x-forwarded-for"),
        services.config.trustProxy,
      );
      return `address:${address === null ? "" : canonicalAddress(address) ?? address}`;
    },
  });
}

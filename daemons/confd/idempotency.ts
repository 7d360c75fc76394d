/**
 * `Idempotency-Key` on the configuration daemon's imports (`lib/idempotency.ts`), its refusals in
 * the daemon's form: 400 `["Input Error - Idempotency-Key …"]`, 409 `["Conflict - …"]`, 422
 * `["Resource Error - …"]`.
 */
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../../lib/http.ts";
import { idempotent, type Refusal } from "../../lib/idempotency.ts";
import type { Services } from "../../lib/services.ts";

const PREFIX: Record<Refusal["status"], string> = {
  400: "Input Error",
  409: "Conflict",
  422: "Resource Error",
};

/**
 * The `Idempotency-Key` middleware of a `/1.1` route, after its `confdAcl` guard.
 *
 * @example
 * app.post("/users/import", confdAcl(tokens, acl), confdIdempotent(services), handler);
 */
export function confdIdempotent(services: Services): MiddlewareHandler<AppEnv> {
  return idempotent(services, {
    refuse: (c, { status, message }) => c.json([`${PREFIX[status]} - ${message}`], status),
  });
}

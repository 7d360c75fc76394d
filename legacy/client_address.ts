/**
 * Who may call the deprecated 1.0 API (spec "Authentication" 7, decisions §1): only the client
 * addresses listed in `SVC_DEPRECATED_API_HOST`; the list is empty by default, so the whole tree
 * is refused until an address is listed.
 *
 * - The client address is the TCP peer (`Deno.serve`'s `remoteAddr`, which Hono hands over as the
 *   context's `env`). With `SVC_TRUST_PROXY=true` and an `X-Forwarded-For` header, it is the
 *   header's last hop instead: the one the proxy in front of us added, the only one it vouches for.
 * - Addresses are compared in the canonical form of `lib/ip_address.ts`: `::1` is
 *   `0:0:0:0:0:0:0:1`, upper or lower case does not matter, and an IPv4-mapped IPv6 address
 *   (`::ffff:10.0.0.1`, as a dual-stack listener `SVC_HOSTNAME=::` reports IPv4 clients) is the
 *   IPv4 address. A hop may carry brackets and a port (`[::1]:8080`, `10.0.0.1:8080`), as some
 *   proxies write them.
 * - A listed entry is an IP address: the configuration refuses anything else (a host name,
 *   `010.0.0.1`, a network) at start-up.
 * - Refused: 403 `{"error":"Forbidden","message":"client address <address> is not allowed ..."}`.
 */
import type { MiddlewareHandler } from "hono";
import type { Config } from "../lib/config.ts";
import { ApiError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http.ts";
import { canonicalAddress } from "../lib/ip_address.ts";

/** How much of a client address the 403 message quotes: a header's value can be anything. */
const SHOWN_LENGTH = 64;

/** The address of an `X-Forwarded-For` hop: brackets and a port taken off. */
function hopAddress(hop: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(hop);
  if (bracketed) return bracketed[1]!;
  const withPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(hop);
  return withPort ? withPort[1]! : hop;
}

/** Where a request comes from, as {@link clientAddress} finds it. */
export interface ClientAddress {
  /** As found (a hop without its brackets and port); null when there is none. */
  address: string | null;
  source: "peer" | "X-Forwarded-For";
}

/**
 * The client address of a request: the peer's, or with `trustProxy` the last `X-Forwarded-For`
 * hop when the header is present (several headers count as one list, in order).
 */
export function clientAddress(
  env: unknown,
  forwardedFor: string | undefined,
  trustProxy: boolean,
): ClientAddress {
  if (trustProxy && forwardedFor !== undefined) {
    const hop = forwardedFor.split(",").at(-1)!.trim();
    return { address: hop === "" ? null : hopAddress(hop), source: "X-Forwarded-For" };
  }
  const peer = (env as { remoteAddr?: { hostname?: unknown } } | undefined)?.remoteAddr?.hostname;
  return { address: typeof peer === "string" && peer !== "" ? peer : null, source: "peer" };
}

/**
 * Refuses, with 403, every request whose client address is not one of `config.deprecatedApiHosts`;
 * mounted on the whole 1.0 tree, known paths or not.
 */
export function allowedClients(
  config: Pick<Config, "deprecatedApiHosts" | "trustProxy">,
): MiddlewareHandler<AppEnv> {
  // every entry is an IP address (the configuration checked it)
  const allowed = new Set(config.deprecatedApiHosts.map(canonicalAddress));
  return async (c, next) => {
    const { address, source } = clientAddress(
      c.env,
      c.req.header("x-forwarded-for"),
      config.trustProxy,
    );
    const canonical = address === null ? null : canonicalAddress(address);
    if (canonical === null || !allowed.has(canonical)) {
      const shown = address === null
        ? "unknown"
        : JSON.stringify(address.slice(0, SHOWN_LENGTH)).slice(1, -1);
      const from = source === "peer" ? "" : " (X-Forwarded-For)";
      throw new ApiError(
        403,
        "Forbidden",
        `client address ${shown}${from} is not allowed on the 1.0 API (SVC_DEPRECATED_API_HOST)`,
      );
    }
    await next();
  };
}

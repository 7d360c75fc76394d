/**
 * Endpoints: how a line reaches the telephony platform — a SIP account, an SCCP phone line or a
 * custom interface (`dahdi/i1/1234`). An endpoint serves one line at most (`line_id`); the line
 * keeps the other side (`lines.endpoint`), and both change in one transaction.
 */
import { Collection } from "./records.ts";
import type { Store } from "./store.ts";

export type EndpointType = "sip" | "sccp" | "custom";

export const ENDPOINT_TYPES: readonly EndpointType[] = ["sip", "sccp", "custom"];

/** One endpoint parameter, `[name, value]`, e.g. `["allow", "ulaw,alaw"]` (kept whole, 16.05). */
export type EndpointOption = [string, string];

interface EndpointBase {
  id: number;
  /** The line this endpoint serves, if any. */
  line_id: number | null;
}

export interface SipEndpointRecord extends EndpointBase {
  username: string;
  secret: string;
  type: "friend" | "peer" | "user";
  host: string;
  options: EndpointOption[];
}

export interface SccpEndpointRecord extends EndpointBase {
  options: EndpointOption[];
}

export interface CustomEndpointRecord extends EndpointBase {
  interface: string;
  enabled: boolean;
}

export type EndpointRecord = SipEndpointRecord | SccpEndpointRecord | CustomEndpointRecord;

export const sipEndpoints = new Collection<SipEndpointRecord>("endpoints_sip", {
  username: (endpoint) => endpoint.username,
});
export const sccpEndpoints = new Collection<SccpEndpointRecord>("endpoints_sccp");
export const customEndpoints = new Collection<CustomEndpointRecord>("endpoints_custom", {
  interface: (endpoint) => endpoint.interface,
});

const collections = { sip: sipEndpoints, sccp: sccpEndpoints, custom: customEndpoints };

/** The collection of an endpoint type, for code that handles the three alike. */
export function endpointCollection(type: EndpointType): Collection<EndpointRecord> {
  return collections[type] as unknown as Collection<EndpointRecord>;
}

/**
 * The endpoint of a type and id, or null.
 *
 * @example
 * const sip = await getEndpoint(store, "sip", line.endpoint.id);
 */
export const getEndpoint = (store: Store, type: EndpointType, id: number) =>
  endpointCollection(type).get(store, id);

export const findSipEndpointByUsername = (store: Store, username: string) =>
  sipEndpoints.findBy(store, "username", username);

/** Re-exported for `lib/demo.ts`, which imports it from here; it lives in `records.ts`. */
export { randomText } from "./records.ts";

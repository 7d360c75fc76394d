/**
 * `/1.1/endpoints/sip|sccp|custom`: how lines reach the platform. Each view shows its `line`
 * (`{id}` or null); an endpoint on a line cannot be deleted. The line ↔ endpoint routes are in
 * `lines.ts`.
 */
import { Hono } from "hono";
import * as z from "zod";
import type { AppEnv } from "../../lib/http.ts";
import type { Services } from "../../lib/services.ts";
import {
  type CustomEndpointRecord,
  customEndpoints,
  type EndpointOption,
  type EndpointRecord,
  type EndpointType,
  type SccpEndpointRecord,
  sccpEndpoints,
  type SipEndpointRecord,
  sipEndpoints,
} from "../../lib/store/endpoints.ts";
import { randomText, type Transaction, unusedValue } from "../../lib/store/records.ts";
import { check, fields } from "./body.ts";
import { bodyRecords, type Resource, resourceRoutes } from "./crud.ts";
import { inputError, resourceError } from "./errors.ts";

/** Names of each endpoint type in messages, as the daemon this API follows spells them. */
export const ENDPOINT_LABELS: Record<EndpointType, string> = {
  sip: "SIPEndpoint",
  sccp: "SCCPEndpoint",
  custom: "CustomEndpoint",
};

/** SIP parameters that may appear only once in `options` (spec); others are free (16.01). */
const SINGLE_SIP_OPTIONS = new Set(
  ("md5secret language accountcode amaflags allowtransfer fromuser fromdomain subscribemwi " +
    "buggymwi call-limit callerid fullname cid-number maxcallbitrate insecure nat promiscredir " +
    "usereqphone videosupport trustrpid sendrpid allowsubscribe allowoverlap dtmfmode " +
    "rfc2833compensate qualify g726nonstandard disallow allow autoframing mohinterpret " +
    "useclientcode progressinband t38pt-udptl t38pt-usertpsource rtptimeout rtpholdtimeout " +
    "rtpkeepalive deny permit defaultip setvar port regexten subscribecontext fullcontact " +
    "vmexten callingpres ipaddr regseconds regserver lastms parkinglot protocol outboundproxy " +
    "transport remotesecret directmedia callcounter busylevel ignoresdpversion session-timers " +
    "session-expires session-minse session-refresher callbackextension timert1 timerb " +
    "qualifyfreq contactpermit contactdeny unsolicited_mailbox use-q850-reason encryption " +
    "snom-aoc-enabled maxforwards disallowed-methods textsupport").split(" "),
);

// built on first use (`z.lazy`), not at every start (docs/performance.md)
/** `[name, value]` pairs; a value such as `allow` = `ulaw,alaw` stays one option (16.05). */
const options = z.lazy(() =>
  z.array(
    z.tuple([fields.name(80), z.string().max(2048, "Longer than maximum length 2048.")]),
  )
);

/** Refuses a listed SIP parameter given twice, naming it. */
function singleSipOptions(list: EndpointOption[] | undefined): void {
  const seen = new Set<string>();
  for (const [name] of list ?? []) {
    if (SINGLE_SIP_OPTIONS.has(name) && seen.has(name)) {
      throw inputError("options", `'${name}' may appear only once.`);
    }
    seen.add(name);
  }
}

const sipSchema = z.lazy(() =>
  z.object({
    username: z.string().regex(
      /^[a-zA-Z0-9_.+-]{1,40}$/,
      "Must be 1 to 40 letters, digits or the characters _ . + -.",
    ).optional(),
    secret: z.string().regex(
      /^[\x21-\x7e]{1,80}$/,
      "Must be 1 to 80 printable characters without spaces.",
    ).optional(),
    type: z.enum(["friend", "peer", "user"]).optional(),
    host: fields.name(255).optional(),
    options: options.optional(),
  })
);

/** The SCCP and custom bodies (functions: `bodyRecords` builds their schemas on first use). */
const sccpSchema = () => z.object({ options: options.optional() });

const customSchema = () =>
  z.object({
    interface: fields.name(128).regex(
      /^[a-zA-Z0-9#*./_@:-]+$/,
      "Must be letters, digits or the characters # * . / _ @ : -.",
    ),
    enabled: fields.boolean().optional(),
  });

/** The API shape of an endpoint: `line` instead of `line_id`. */
export function endpointView<T extends EndpointRecord>({ line_id, ...endpoint }: T) {
  return { ...endpoint, line: line_id === null ? null : { id: line_id } };
}

type EndpointSpec<T extends EndpointRecord> = Pick<
  Resource<T, object>,
  "collection" | "fields" | "search" | "create" | "update"
>;

/** A resource description for one endpoint type: the parts the three types share. */
function endpointResource<T extends EndpointRecord>(
  type: EndpointType,
  spec: EndpointSpec<T>,
): Resource<T, ReturnType<typeof endpointView<T>>> {
  const label = ENDPOINT_LABELS[type];
  return {
    ...spec,
    path: `/endpoints/${type}`,
    label,
    view: endpointView,
    beforeDelete(_tx: Transaction, endpoint: T) {
      if (endpoint.line_id !== null) throw resourceError(`${label} is associated with a Line`);
      return Promise.resolve();
    },
  };
}

const sipResource = endpointResource<SipEndpointRecord>("sip", {
  collection: sipEndpoints,
  fields: ["id", "username", "secret", "type", "host"],
  search: ["username", "host"],
  async create(tx, body, id) {
    const input = check(sipSchema, body);
    singleSipOptions(input.options);
    return {
      id,
      username: input.username ??
        await unusedValue(tx, sipEndpoints, "username", () => randomText(8)),
      secret: input.secret ?? randomText(16),
      type: input.type ?? "friend",
      host: input.host ?? "dynamic",
      options: input.options ?? [],
      line_id: null,
    };
  },
  update(_tx, current, body) {
    const input = check(sipSchema, body);
    singleSipOptions(input.options);
    return Promise.resolve({ ...current, ...input });
  },
});

const sccpResource = endpointResource<SccpEndpointRecord>("sccp", {
  collection: sccpEndpoints,
  fields: ["id"],
  search: [],
  ...bodyRecords(sccpEndpoints, sccpSchema, { options: [], line_id: null }),
});

const customResource = endpointResource<CustomEndpointRecord>("custom", {
  collection: customEndpoints,
  fields: ["id", "interface", "enabled"],
  search: ["interface"],
  ...bodyRecords(customEndpoints, customSchema, { enabled: true, line_id: null }),
});

/** CRUD routes of the three endpoint types. */
export function endpointRoutes(services: Services) {
  return new Hono<AppEnv>()
    .route("/", resourceRoutes(services, sipResource))
    .route("/", resourceRoutes(services, sccpResource))
    .route("/", resourceRoutes(services, customResource));
}

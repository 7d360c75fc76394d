/**
 * The fuzz test's machinery (issue 15): requests no client should send, built by fast-check from
 * the app's own route table (`app.routes` of the one app `createApp` builds, with odd values in
 * every `:param`), sent through the real app, and the check that every answer is a success or an
 * error in its area's form, never a 5xx the spec does not allow, and that nothing reaches the log
 * as an `unhandled error`.
 *
 * The 5xx allowed: 500 `JsonParsingError` of a contact body that is not JSON (the spec's status),
 * and 503 `Unreachable` only in the run that closed the store on purpose.
 *
 * `tests/fuzz_test.ts` runs it with a fixed seed in CI; `deno task fuzz` (`tests/fuzz_run.ts`)
 * runs it as long as wanted, with the seed and the count from the environment.
 */
import fc from "fast-check";
import { bodyText, login, setup, type TestContext, webServiceUser } from "./helpers.ts";
import { isMiddlewareEntry } from "../lib/no_route.ts";

/** The client address of every request; the 1.0 API allows it. */
const CLIENT = "192.0.2.10";
/** An address the 1.0 API refuses. */
const OTHER_CLIENT = "192.0.2.99";
/** The origin allowed by CORS in the fuzzed app. */
const ORIGIN = "https://crm.example";

/** Which credentials a request carries; resolved when it is sent. */
export type Auth =
  | "webservice"
  | "cti"
  | "none"
  | "x-auth-token"
  | "bearer-empty"
  | "bearer-garbage"
  | "bearer-forged"
  | "bearer-huge"
  | "basic";

const AUTHS: Auth[] = [
  "bearer-empty",
  "bearer-garbage",
  "bearer-forged",
  "bearer-huge",
  "basic",
  "x-auth-token",
];

/** A request body: bytes, bytes then a connection that breaks, or fewer bytes than announced. */
export type FuzzBody =
  | { kind: "none" }
  | { kind: "bytes"; bytes: Uint8Array }
  | { kind: "cut"; bytes: Uint8Array }
  | { kind: "short"; bytes: Uint8Array; declared: number };

/** One request of the fuzz; prints itself (fast-check shows shrunk cases so). */
export class FuzzRequest {
  constructor(
    readonly method: string,
    /** The path and query, as sent. */
    readonly url: string,
    readonly auth: Auth,
    readonly headers: Record<string, string>,
    readonly body: FuzzBody,
    /** The TCP peer: allowed on the 1.0 API or not. */
    readonly client: string,
    /** The route template the request was built from (empty for a random path). */
    readonly route: string,
  ) {}

  [fc.toStringMethod](): string {
    return this.toString();
  }

  toString(): string {
    const headers = Object.entries(this.headers).map(([name, value]) =>
      `${name}: ${clip(value, 80)}`
    );
    const lines = [
      `${this.method} ${clip(this.url, 300)}`,
      `  route: ${this.route || "(none)"}; client ${this.client}; auth: ${this.auth}`,
      ...headers.map((header) => `  ${header}`),
    ];
    if (this.body.kind !== "none") {
      const { bytes } = this.body;
      const shown = showBytes(bytes);
      const how = this.body.kind === "cut"
        ? ", then the connection breaks"
        : this.body.kind === "short"
        ? `, Content-Length ${this.body.declared}`
        : "";
      lines.push(`  body (${bytes.length} bytes${how}): ${shown}`);
    }
    return lines.join("\n");
  }
}

/** A body as text (JSON-quoted), or in hex when it is not UTF-8; at most 300 characters. */
function showBytes(bytes: Uint8Array): string {
  try {
    return JSON.stringify(clip(new TextDecoder("utf-8", { fatal: true }).decode(bytes), 300));
  } catch {
    const hex = Array.from(bytes.subarray(0, 100), (b) => b.toString(16).padStart(2, "0"));
    return `hex ${hex.join(" ")}${bytes.length > 100 ? " …" : ""}`;
  }
}

const clip = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;

const encoder = new TextEncoder();
const bytesOf = (text: string) => encoder.encode(text);

// ---- path values --------------------------------------------------------------------------

/** Values that name something in the fuzzed store, and words the routes give meaning to. */
const KNOWN_VALUES = [
  "1",
  "2",
  "3",
  "alice",
  "bob",
  "1001",
  "1002",
  "3000",
  "8001",
  "sales",
  "default",
  "demo-ws",
  "me",
  "main",
  "dnd",
  "busy",
  "noanswer",
  "unconditional",
  "answer",
  "hangup",
  "2024-01-01",
  "2024-01-01 10:00:00",
];

/** Values no route expects, given raw: the URL parser and the router get them as they are. */
const ODD_VALUES = [
  "0",
  "-1",
  "1.5",
  "1e3",
  " 1",
  "01",
  "0x10",
  "..",
  ".",
  "%00",
  "%01",
  "%0a",
  "%7f",
  "%2e%2e",
  "%2F",
  "%2f..%2f",
  "%",
  "%ZZ",
  "%C3%28",
  "%ED%A0%80",
  "%FF%FE",
  "null",
  "undefined",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "true",
  "NaN",
  "Infinity",
  "00000000-0000-4000-8000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "a.b",
  "a*b",
  "#",
  "*",
  "a b",
  "ünïcödé",
  "😀",
  "\u202e1001",
  "\ufeff1",
  "x".repeat(257),
  "x".repeat(3000),
  "é".repeat(1500),
  "%00".repeat(100),
  "9".repeat(2100),
];

/**
 * A path value: known (`known` adds the fuzzed store's own ids and uuids), odd, a long number,
 * unicode, or random text.
 */
const pathValue = (known: string[]): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.integer({ min: 1, max: 4 }).map(String) },
    { weight: 6, arbitrary: fc.constantFrom(...KNOWN_VALUES, ...known) },
    { weight: 4, arbitrary: fc.constantFrom(...ODD_VALUES) },
    { weight: 2, arbitrary: fc.integer({ min: 10, max: 400 }).map((n) => "9".repeat(n)) },
    { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String) },
    { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 8 }) },
    { weight: 1, arbitrary: fc.constant("") },
  );

/** A path value as it goes in the URL: raw (the URL parser and the router get it so) or encoded. */
const pathSegment = (known: string[]): fc.Arbitrary<string> =>
  fc.tuple(pathValue(known), fc.boolean()).map(([value, raw]) => raw ? value : encode(value));

/** `encodeURIComponent`, or the value as is when it holds a lone surrogate. */
function encode(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return value;
  }
}

// ---- queries ------------------------------------------------------------------------------

const QUERY_NAMES = [
  "size",
  "days",
  "view",
  "offset",
  "skip",
  "limit",
  "order",
  "direction",
  "search",
  "recurse",
  "scope",
  "token",
  "from",
  "to",
  "name",
  "ticket",
  "service",
  "apiVersion",
];

const queryValue = fc.oneof(
  fc.constantFrom("1", "0", "-1", "10", "1000", "1001", "summary", "asc", "desc", "true", "%00"),
  fc.constantFrom("%", "%ZZ", "%C3%28", "a%00b", "%E0%A4%A", "+", "%2B", "a=b", "1e3", " 1"),
  fc.integer({ min: 10, max: 400 }).map((n) => "9".repeat(n)),
  fc.string({ maxLength: 10 }).map(encode),
);

const query: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constant("") },
  {
    weight: 2,
    arbitrary: fc.array(fc.tuple(fc.constantFrom(...QUERY_NAMES), queryValue), {
      minLength: 1,
      maxLength: 3,
    }).map((pairs) => `?${pairs.map(([name, value]) => `${name}=${value}`).join("&")}`),
  },
  { weight: 1, arbitrary: fc.constantFrom("?", "?&&", "?size", "?=1", "?size=1&size=2") },
);

// ---- headers ------------------------------------------------------------------------------

const CONTENT_TYPES = [
  "application/json",
  "application/json",
  "text/json",
  "application/json; charset=utf-8",
  "application/json; charset=utf-16",
  "text/csv",
  "text/csv; charset=utf-8",
  "text/plain",
  "multipart/form-data",
  "multipart/form-data; boundary=fuzz",
  "multipart/form-data; boundary=",
  "application/x-www-form-urlencoded",
  "application/octet-stream",
  "garbage",
  "",
];

/** Headers beside the body's type and the credentials, each with the values it may take. */
const EXTRA_HEADERS: Record<string, string[]> = {
  "X-Request-Id": ["fuzz-1", "", "a b", "x".repeat(200), "é"],
  Accept: ["text/csv", "text/csv; charset=utf-8", "*/*", "application/xml", ""],
  Origin: [ORIGIN, "https://evil.example", "null"],
  "Idempotency-Key": ['"k1"', '"k2"', "k3", "", `"${"x".repeat(300)}"`, "é"],
  "Access-Control-Request-Method": ["POST", "DELETE", "FOO"],
  "X-Forwarded-For": [CLIENT, "garbage", "[::1]:80"],
  "X-Pad": ["p".repeat(16 * 1024)],
  // what a body's length header may say beside the body (`short` bodies set their own)
  "Content-Length": ["abc", "-1", "0", " 1", "99999999999999", "9".repeat(20)],
};

/** None most of the time, else one to three of {@link EXTRA_HEADERS}. */
const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({}) },
  {
    weight: 2,
    arbitrary: fc.array(
      fc.constantFrom(...Object.keys(EXTRA_HEADERS)).chain((name) =>
        fc.constantFrom(...EXTRA_HEADERS[name]!).map((value) => [name, value] as const)
      ),
      { minLength: 1, maxLength: 3 },
    ).map((pairs) => Object.fromEntries(pairs)),
  },
);

const headers: fc.Arbitrary<Record<string, string>> = fc.tuple(
  fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined, freq: 4 }),
  extraHeaders,
).map(([contentType, extra]) =>
  contentType === undefined ? extra : { "Content-Type": contentType, ...extra }
);

// ---- bodies -------------------------------------------------------------------------------

/** Body fields the routes read (from their schemas), and some they do not. */
const FIELDS = [
  "state",
  "enabled",
  "destination",
  "number",
  "username",
  "queueId",
  "queueName",
  "variables",
  "callerIdName",
  "callerIdNumber",
  "listUuid",
  "csv",
  "login",
  "password",
  "token",
  "firstname",
  "lastname",
  "mobile",
  "fax",
  "email",
  "company",
  "favorite",
  "extension",
  "context",
  "reason",
  "queue_id",
  "line_id",
  "name",
  "label",
  "exten",
  "id",
  "uuid",
  "caller_id",
  "sub_qualification_id",
  "time",
  "callid",
  "agent",
  "queue",
  "first_name",
  "last_name",
  "comment",
  "custom_data",
  "agentNumber",
  "status",
  "dueDate",
  "periods",
  "backend",
  "expiration",
  "apiVersion",
  "penalty",
  "options",
  "description",
  "userfield",
  "mobile_phone_number",
  "ring_seconds",
  "simultaneous_calls",
  "line_type",
  "users",
  "acls",
  "secret",
  "type",
  "position",
  "mac",
  "ip",
  "phoneNumber",
  "agentphonenumber",
  "agentnumber",
  "policy",
  "run_scripts",
  "admin_password",
  "timezone",
  "language",
  "entity_name",
  "provisioning_code",
  "template_id",
  "max_messages",
  "user_ranges",
  "queue_ranges",
  "sub_qualifications",
  "__proto__",
  "constructor",
];

/** A value of a field: plausible for some route (`known`: the store's ids), wrong, or huge. */
const fieldValue = (known: string[]): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constantFrom(...known, "1") },
    {
      weight: 4,
      arbitrary: fc.constantFrom<unknown>(
        "1001",
        "1002",
        "alice",
        "bob",
        "default",
        "sales",
        "8001",
        "3000",
        "2024-01-01 10:00:00",
        "2030-01-01",
        "a@b.example",
        "Callback",
        "Answered",
        "xivo_service",
        "answer",
        true,
        false,
        1,
        2,
        0,
        -1,
        null,
        "",
        " ",
      ),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom<unknown>(
        1.5,
        1e308,
        -1e308,
        Number.MAX_SAFE_INTEGER + 2,
        "9".repeat(400),
        "x".repeat(300),
        "\u0000",
        "a|b|c",
        [],
        {},
        [1, 2, 3],
        { a: "b" },
        { "": "" },
      ),
    },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 100_000 }).map((n) => "x".repeat(n)) },
    { weight: 1, arbitrary: fc.integer({ min: 100, max: 20_000 }).map((n) => Array(n).fill("1")) },
    {
      weight: 1,
      arbitrary: fc.dictionary(fc.string({ maxLength: 70 }), fc.string({ maxLength: 30 }), {
        maxKeys: 40,
      }),
    },
  );

/** JSON text of an object whose fields are those routes read. */
const fieldsBody = (known: string[]): fc.Arbitrary<string> =>
  fc.dictionary(fc.constantFrom(...FIELDS), fieldValue(known), { maxKeys: 6 }).map((body) =>
    JSON.stringify(body)
  );

const CALLBACK_HEADER =
  "phoneNumber|mobilePhoneNumber|firstName|lastName|company|description|dueDate|period";

/** Texts no route takes as they are: broken JSON, JSON nested or long beyond reason, CSV. */
const ODD_TEXTS = [
  "",
  " \n ",
  "{",
  "}",
  "[",
  '{"a":',
  "[]",
  "null",
  "42",
  "-0",
  "1e400",
  '"text"',
  "true",
  '{"a":1,"a":2}',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  "\ufeff{}",
  '{"state":true}\u0000',
  "[".repeat(5_000) + "]".repeat(5_000),
  '{"a":'.repeat(3_000) + "1" + "}".repeat(3_000),
  `[${"1,".repeat(100_000)}1]`,
  `{"n":${"9".repeat(5_000)}}`,
  `{"s":"${"\\ud800".repeat(100)}"}`,
  "firstname,lastname,number\nAlice,Martin,1001\n",
  "company,email,fax,firstname,lastname,mobile,number\n" + "a,b,c,d,e,f,g,h\n".repeat(50),
  '"unclosed,quote\n',
  "number\n" + "1001\n".repeat(2_000),
  "a,".repeat(5_000) + "\n",
  `${CALLBACK_HEADER}\n1001||A|B|C|D|2030-01-01|\n`,
  `{"listUuid":"x","csv":"${CALLBACK_HEADER}\\n1001||A|B|C|D|not-a-date|p"}`,
  "login=alice&password=x",
  '--fuzz\r\nContent-Disposition: form-data; name="file"; filename="c.csv"\r\n\r\n' +
  "firstname\r\nA\r\n--fuzz--\r\n",
  '--fuzz\r\nContent-Disposition: form-data; name="file"\r\n\r\nunterminated',
  "<xml/>",
];

/** Bytes that are not UTF-8, alone or around JSON. */
const INVALID_UTF8 = [
  [0xff],
  [0xfe, 0xff, 0x00, 0x7b],
  [0xc3, 0x28],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0x80, 0x80, 0x80],
];

type Body = Record<string, unknown>;

const ANSWER: Body = {
  sub_qualification_id: 1,
  time: "2024-01-01 10:00:00",
  callid: "c1",
  agent: 1,
  queue: 1,
};
const NEW_USER: Body = { firstname: "F", lastname: "L", username: "fuzzed", password: "pw" };
const USER_CHANGE: Body = {
  firstname: "G",
  caller_id: '"G" <1004>',
  ring_seconds: 30,
  simultaneous_calls: 2,
};
const CONTEXT: Body = {
  name: "fuzzctx",
  type: "internal",
  user_ranges: [{ start: "1000", end: "1999" }],
};
const WIDE_CONTEXT: Body = {
  name: "huge",
  type: "internal",
  user_ranges: [{ start: "0", end: "9999999999999999" }],
};
const WIZARD: Body = { admin_password: "secret", network: { hostname: "h", domain: "d" } };
const CALLBACK_LIST: Body = {
  name: "cl",
  queue_id: 1,
  periods: [{ name: "p", periodStart: "08:00:00", periodEnd: "09:00:00", default: true }],
};

/** A body some route takes (or nearly): the fuzz changes a field or two of it. */
const VALID_BODIES: Body[] = [
  { state: true },
  { state: false },
  { destination: "1002", enabled: true },
  { destination: "", enabled: false },
  { destination: "1002", variables: { a: "b" } },
  { username: "bob" },
  { destination: "1002", queueId: 1, callerIdName: "CRM", callerIdNumber: "555" },
  { destination: "1002", queueName: "sales", callerIdNumber: "555" },
  { firstname: "Ann", lastname: "Lee", number: "1003", email: "a@b.example", favorite: true },
  ANSWER,
  { token: "device-token" },
  { listUuid: "", csv: "" },
  { agentNumber: "8001" },
  { status: "Callback", dueDate: "2030-01-01", comment: "later" },
  { status: "Answered" },
  { extension: "1001", context: "default" },
  { reason: "lunch" },
  { queue_id: 1 },
  { line_id: 1 },
  { password: "alice-demo" },
  { number: "1002" },
  { phoneNumber: "1001" },
  { agentphonenumber: "1001", agentnumber: "8001" },
  { login: "alice", password: "alice-demo" },
  { login: "fuzz-admin", password: "wrong" },
  { backend: "xivo_user", expiration: 60 },
  NEW_USER,
  USER_CHANGE,
  { context: "default", position: 1 },
  { exten: "1005", context: "default" },
  { name: "fuzzq", display_name: "Q", number: "3001", context: "default" },
  { number: "8002", context: "default" },
  { name: "cp", password: "1234", mode: "deny", extensions: ["1001"] },
  { name: "vm", number: "1006", context: "default" },
  { name: "ent", display_name: "E" },
  CONTEXT,
  WIDE_CONTEXT,
  { login: "ws2", password: "p", acls: ["#"] },
  { name: "cq", sub_qualifications: [{ name: "s" }] },
  { name: "list", queue_id: 1 },
  { mac: "00:11:22:33:44:55", ip: "10.0.0.1" },
  { enabled: true },
  { penalty: 1 },
  { name: "label" },
  { policy: "answer", answer_ms: 10 },
  WIZARD,
  { name: "cp2", extensions: ["1001"] },
  { mac: "00:11:22:33:44:66", options: { k: "v" } },
  { options: [["k", "v"]] },
  { name: "vm2", number: "1007", context: "default", options: [["k", "v"]] },
  { users: [{ uuid: "00000000-0000-4000-8000-000000000000" }] },
  { lines: [{ id: 1 }] },
  CALLBACK_LIST,
];

const CONTACT = { firstname: "Ann", lastname: "Lee", number: "1003", email: "a@b.example" };
const LEGACY_FORWARD = { state: true, destination: "1002" };

/**
 * The bodies each route takes (matched on its path template, the method aside), so that most
 * requests go past the body checks; a route matching none gets any of {@link VALID_BODIES}.
 */
const ROUTE_BODIES: [RegExp, Body[]][] = [
  [/\/2\.0\/dnd\//, [{ state: true }]],
  [/\/2\.0\/forward\//, [{ destination: "1002", enabled: true }]],
  [/\/dial\/number\//, [{ destination: "1002", variables: { a: "b" } }]],
  [/\/dial\/user\//, [{ username: "bob" }]],
  [/\/dial\/fromqueue\//, [{ destination: "1002", queueId: 1, callerIdName: "C" }]],
  [/\/dial\/toqueue/, [{ destination: "1002", queueName: "sales", callerIdNumber: "555" }]],
  [/\/contact\/personal/, [CONTACT, { ...CONTACT, favorite: true }]],
  [/\/call_qualification$/, [ANSWER]],
  [/\/mobile\/push/, [{ token: "device-token" }]],
  [/callback_requests\/csv/, [{ listUuid: "", csv: "" }]],
  [/callback_tickets\/csv/, [{ listUuid: "" }]],
  [/callback_requests\/:uuid\/(take|release|start)/, [{ agentNumber: "8001" }, {}]],
  [/callback_requests\/:uuid\/ticket/, [{ status: "Callback", dueDate: "2030-01-01" }]],
  [/\/sim\/phones\/.*\/policy/, [{ policy: "answer", answer_ms: 10 }]],
  [/\/auth\//, [{ login: "alice", password: "alice-demo" }, { login: "x", password: "y" }]],
  [/\/1\.0\/connect\//, [{ password: "alice-demo" }]],
  [/\/1\.0\/dnd\//, [{ state: true }]],
  [/\/1\.0\/dial\//, [{ number: "1002" }]],
  [/\/1\.0\/dialByUsername\//, [{ username: "bob" }]],
  [/\/1\.0\/dialFromQueue\//, [{ destination: "1002", queueId: 1, variables: { a: "b" } }]],
  [/\/1\.0\/\w+Forward\//, [LEGACY_FORWARD]],
  [/\/1\.0\/agentLogin/, [{ agentphonenumber: "1001", agentnumber: "8001" }]],
  [/\/1\.0\/(agentLogout|togglePause)/, [{ phoneNumber: "1001" }]],
  [/\/1\.1\/users(\/:id)?$/, [NEW_USER, USER_CHANGE]],
  [/\/1\.1\/users\/:id\/services/, [{ enabled: true }]],
  [/\/1\.1\/users\/:id\/forwards/, [{ enabled: true, destination: "1002" }]],
  [/\/1\.1\/lines(\/:id)?$/, [{ context: "default", position: 1 }]],
  [/\/1\.1\/extensions(\/:id)?$/, [{ exten: "1005", context: "default" }]],
  [/\/1\.1\/endpoints\/sip(\/:id)?$/, [{ options: [["k", "v"]] }, {}]],
  [/\/1\.1\/endpoints\/custom(\/:id)?$/, [{ interface: "dahdi/1" }]],
  [/\/1\.1\/devices(\/:id)?$/, [{ mac: "00:11:22:33:44:66", options: { k: "v" } }]],
  [/\/1\.1\/voicemails(\/:id)?$/, [{
    name: "vm",
    number: "1007",
    context: "default",
    options: [["k", "v"]],
  }]],
  [/\/1\.1\/callpermissions(\/:id)?$/, [{ name: "cp", mode: "deny", extensions: ["1001"] }]],
  [/\/1\.1\/entities(\/:id)?$/, [{ name: "ent", display_name: "E" }]],
  [/\/1\.1\/labels(\/:id)?$/, [{ name: "label", description: "d" }]],
  [/\/1\.1\/switchboards(\/:id)?$/, [{ name: "sb" }]],
  [/\/members\/users/, [{ users: [{ uuid: "00000000-0000-4000-8000-000000000000" }] }]],
  [/\/members\/agents/, [{ penalty: 1 }]],
  [/\/1\.1\/agents(\/:id)?$/, [{ number: "8002", context: "default" }]],
  [/\/1\.1\/queues(\/:id)?$/, [{ name: "fuzzq", number: "3001", context: "default" }]],
  [/\/1\.1\/webservice_users(\/:id)?$/, [{ login: "ws2", password: "p", acls: ["#"] }]],
  [/\/1\.1\/call_qualifications(\/:id)?$/, [{ name: "cq", sub_qualifications: [{ name: "s" }] }]],
  [/\/1\.1\/callback_lists(\/:uuid)?$/, [CALLBACK_LIST]],
  [/\/1\.1\/contexts(\/:\w+)?$/, [CONTEXT, WIDE_CONTEXT]],
  [/\/1\.1\/wizard/, [WIZARD]],
  [/\/lines\/:\w+\/users|\/users\/:id\/lines$/, [{ lines: [{ id: 1 }] }]],
  [/\/(by-id|by-number)\/:\w+\/login|\/users\/me\/agents\/login/, [
    { extension: "1001", context: "default" },
    { line_id: 1 },
  ]],
  [/\/pause$/, [{ reason: "lunch" }, {}]],
  [/\/(add|remove)$/, [{ queue_id: 1 }]],
  [/\/0\.1\/token$/, [{ backend: "xivo_user", expiration: 60 }]],
];

/** The bodies of {@link ROUTE_BODIES} for `template`, else all of {@link VALID_BODIES}. */
function bodiesFor(template: string): Body[] {
  const bodies = ROUTE_BODIES.filter(([pattern]) => pattern.test(template)).flatMap(([, b]) => b);
  return bodies.length ? bodies : VALID_BODIES;
}

/**
 * `value` made `count` times larger, each item a little different, so that unique rules pass and
 * only the size is wrong: an array of items like its first, an object with more keys, a longer
 * string.
 */
function inflate(value: unknown, count: number): unknown {
  if (Array.isArray(value)) {
    const model = value[0] ?? "1";
    return Array.from({ length: count }, (_, i) => vary(model, i));
  }
  if (isRecord(value)) {
    const more = Array.from(
      { length: count },
      (_, i) => [`k${i}`, vary(Object.values(value)[0] ?? "v", i)],
    );
    return { ...value, ...Object.fromEntries(more) };
  }
  if (typeof value !== "string" || value === "") return value;
  return value.repeat(Math.min(count, Math.ceil(200_000 / value.length)));
}

/** Fields whose values are unique among records: {@link unique} changes them. */
const UNIQUE_FIELDS = new Set(["name", "login", "username", "exten", "number", "interface", "mac"]);

/** `body` with the values of its unique fields changed by `i`, so that a create is no duplicate. */
function unique(body: Body, i: number): Body {
  return Object.fromEntries(
    Object.entries(body).map((
      [key, value],
    ) => [key, UNIQUE_FIELDS.has(key) ? vary(value, i) : value]),
  );
}

/** `model` with its texts changed by `i`: digits count up, other texts get a suffix. */
function vary(model: unknown, i: number): unknown {
  if (typeof model === "string") {
    return /^\d{1,15}$/.test(model)
      ? String(Number(model) * 100_000 + i).padStart(model.length, "0")
      : `${model}${i}`;
  }
  if (Array.isArray(model)) return model.map((item) => vary(item, i));
  if (isRecord(model)) {
    return Object.fromEntries(Object.entries(model).map(([key, item]) => [key, vary(item, i)]));
  }
  return model;
}

/**
 * A body of {@link VALID_BODIES} with up to two fields changed, removed or added, and sometimes
 * one of its own fields inflated (see {@link inflate}).
 */
const mutatedBody = (known: string[], valid: Body[]): fc.Arbitrary<string> =>
  fc.tuple(
    fc.constantFrom(...valid),
    fc.oneof(
      { weight: 1, arbitrary: fc.constant([]) },
      {
        weight: 1,
        arbitrary: fc.array(
          fc.tuple(fc.nat(), fc.constantFrom(...FIELDS), fc.option(fieldValue(known))),
          { minLength: 1, maxLength: 2 },
        ),
      },
    ),
    fc.oneof(
      { weight: 3, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.tuple(fc.nat(), fc.constantFrom(50, 5_000, 20_000)) },
    ),
    // most bodies made unique (names, numbers), so that a create is not just a duplicate
    fc.option(fc.nat(99_999), { freq: 5 }),
  ).map(([valid, changes, inflated, distinct]) => {
    const body = distinct === null ? { ...valid } : unique(valid, distinct);
    for (const [pick, other, value] of changes) {
      const own = Object.keys(body);
      const field = own.length && pick % 3 !== 0 ? own[pick % own.length]! : other;
      if (value === null) delete body[field];
      else body[field] = value;
    }
    const own = Object.keys(body);
    if (inflated && own.length) {
      // a list or an object rather than a text, when there is one: the size is what is odd
      const collections = own.filter((field) => typeof body[field] === "object" && body[field]);
      const [pick, count] = inflated;
      const among = collections.length ? collections : own;
      const field = among[pick % among.length]!;
      body[field] = inflate(body[field], count);
    }
    return JSON.stringify(body);
  });

/** Body bytes: nearly right, fields, random JSON, odd texts, invalid UTF-8. */
const bodyBytes = (known: string[], valid: Body[]): fc.Arbitrary<Uint8Array> =>
  fc.oneof(
    { weight: 12, arbitrary: mutatedBody(known, valid).map(bytesOf) },
    { weight: 3, arbitrary: fieldsBody(known).map(bytesOf) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => bytesOf(JSON.stringify(v))) },
    { weight: 3, arbitrary: fc.constantFrom(...ODD_TEXTS).map(bytesOf) },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(...INVALID_UTF8), fieldsBody(known)).map(([bad, json]) =>
        new Uint8Array([...bad, ...bytesOf(json), ...bad])
      ),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  );

/** Just over the 1 MiB limit (and the 10 MiB one is not worth the time). */
const OVERSIZED = bytesOf(JSON.stringify({ pad: "x".repeat(1024 * 1024) }));

const body = (known: string[], valid: Body[]): fc.Arbitrary<FuzzBody> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant<FuzzBody>({ kind: "none" }) },
    {
      weight: 10,
      arbitrary: bodyBytes(known, valid).map((bytes): FuzzBody => ({ kind: "bytes", bytes })),
    },
    {
      weight: 2,
      arbitrary: fc.tuple(bodyBytes(known, valid), fc.nat()).map(([bytes, at]): FuzzBody => ({
        kind: "cut",
        bytes: bytes.subarray(0, at % (bytes.length + 1)),
      })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(bodyBytes(known, valid), fc.integer({ min: 1, max: 1000 })).map((
        [bytes, more],
      ): FuzzBody => ({ kind: "short", bytes, declared: bytes.length + more })),
    },
    { weight: 1, arbitrary: fc.constant<FuzzBody>({ kind: "bytes", bytes: OVERSIZED }) },
  );

// ---- requests -----------------------------------------------------------------------------

/** A route of the app: its method and its path template. */
export type Route = readonly [method: string, path: string];

/** Every route of `app` once (the table lists a route once per handler), middleware aside. */
export function routeTable(ctx: TestContext): Route[] {
  const routes = ctx.app.routes
    .filter((route) => !isMiddlewareEntry(route))
    .map((route): Route => [route.method, route.path]);
  return [...new Map(routes.map((route) => [route.join(" "), route])).values()];
}

const PARAM = /:[A-Za-z_]+(\{[^}]*\})?|\*/g;

/** `template` with each parameter (and `*`) replaced by the next of `values`. */
function fill(template: string, values: string[]): string {
  let i = 0;
  return template.replace(PARAM, () => values[i++ % values.length] ?? "x");
}

const OTHER_METHODS = [
  "GET",
  "POST",
  "PUT",
  "DELETE",
  "PATCH",
  "HEAD",
  "OPTIONS",
  "FOO",
  "PROPFIND",
];

/** Paths beside the routes: unknown ones, empty segments, dot segments, prefixes alone. */
const oddPath = (known: string[]): fc.Arbitrary<string> =>
  fc.oneof(
    fc.constantFrom(
      "/",
      "//",
      "/svc/api/2.0",
      "/svc/api/2.0/",
      "/svc/api/2.0//dnd//",
      "/svc/api/1.0",
      "/svc/api/3.0/dnd/alice",
      "/1.1",
      "/1.1/",
      "/1.1//users",
      "/1.1/users/",
      "/1.1/users/../lines",
      "/1.1/%2e%2e/users",
      "/agents/",
      "/agents//by-id/1",
      "/users/me/agents/",
      "/0.1",
      "/0.1/token/",
      "/status/",
      "/health/x",
      "/%00",
      "/svc/api/2.0/%00/x",
    ),
    fc.array(pathSegment(known), { minLength: 1, maxLength: 5 }).map((parts) =>
      `/${parts.join("/")}`
    ),
  );

/**
 * A request: mostly one of `routes` with its own method and odd values in its parameters,
 * sometimes another method or a path of no route; any query, headers, credentials and body.
 */
export function fuzzRequest(routes: Route[], known: string[] = []): fc.Arbitrary<FuzzRequest> {
  const target = fc.oneof(
    {
      weight: 9,
      arbitrary: fc.tuple(
        fc.constantFrom(...routes),
        fc.array(pathSegment(known), { minLength: 4, maxLength: 4 }),
        fc.oneof(
          { weight: 6, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.constantFrom(...OTHER_METHODS) },
        ),
      ).map(([[method, template], values, other]) => ({
        method: other ?? method,
        path: fill(template, values),
        route: template,
      })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(oddPath(known), fc.constantFrom(...OTHER_METHODS)).map((
        [path, method],
      ) => ({
        method,
        path,
        route: "",
      })),
    },
  );
  const auth = fc.oneof(
    { weight: 5, arbitrary: fc.constant<Auth>("webservice") },
    { weight: 3, arbitrary: fc.constant<Auth>("cti") },
    { weight: 1, arbitrary: fc.constant<Auth>("none") },
    { weight: 2, arbitrary: fc.constantFrom(...AUTHS) },
  );
  const client = fc.oneof(
    { weight: 9, arbitrary: fc.constant(CLIENT) },
    { weight: 1, arbitrary: fc.constant(OTHER_CLIENT) },
  );
  return fc.tuple(target, query, auth, headers, client).chain((
    [{ method, path, route }, search, auth, headers, client],
  ) =>
    (method === "GET" || method === "HEAD"
      ? fc.constant<FuzzBody>({ kind: "none" })
      : body(known, bodiesFor(route))).map((body) =>
        new FuzzRequest(method, `${path}${search}`, auth, headers, body, client, route)
      )
  );
}

// ---- sending and checking -----------------------------------------------------------------

/** The fuzzed app, its tokens, and whether its store was closed on purpose. */
export interface FuzzTarget {
  ctx: TestContext;
  tokens: { webservice: string; cti: string };
  storeDown: boolean;
  /** Ids and uuids the store holds: contacts, users, callback lists and requests. */
  known: string[];
}

/**
 * The real app on a fresh store holding the demo data set (users with lines, a queue, an agent,
 * call qualifications, a callback list), the 1.0 API open to the fuzz's address and CORS to one
 * origin; with `storeDown`, the store is closed once the tokens are issued.
 */
export async function fuzzTarget({ storeDown = false } = {}): Promise<FuzzTarget> {
  const ctx = await setup({
    SVC_DEMO: "true",
    SVC_DEPRECATED_API_HOST: CLIENT,
    SVC_CORS_ORIGINS: ORIGIN,
  });
  const admin = await webServiceUser(ctx, ["#"], "fuzz-admin");
  const tokens = {
    webservice: await login(ctx, "webservice", admin.login),
    cti: await loginAs(ctx, "alice", "alice-demo"),
  };
  const known = await knownValues(ctx, tokens);
  if (storeDown) ctx.services.store.close();
  return { ctx, tokens, storeDown, known };
}

/** Two contacts of alice's, then the ids and uuids of what the store holds. */
async function knownValues(
  ctx: TestContext,
  tokens: { webservice: string; cti: string },
): Promise<string[]> {
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const response = await ctx.app.request(path, {
      method,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status}`);
    return await response.json();
  };
  for (const lastname of ["Known", "Other"]) {
    await call(tokens.cti, "POST", "/svc/api/2.0/contact/personal", { lastname, number: "1002" });
  }
  const contacts = await call(tokens.cti, "GET", "/svc/api/2.0/contact/personal");
  const users = await call(tokens.webservice, "GET", "/1.1/users");
  const lists = await call(tokens.webservice, "GET", "/svc/api/2.0/callback_lists");
  const text = JSON.stringify([contacts, users, lists]);
  const uuids = text.match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? [];
  return [...new Set(uuids)];
}

async function loginAs(ctx: TestContext, login: string, password: string): Promise<string> {
  const response = await ctx.app.request("/svc/api/2.0/auth/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ login, password }),
  });
  if (response.status !== 200) throw new Error(`login ${login}: ${response.status}`);
  return (await response.json()).token;
}

/** The `Authorization`/`X-Auth-Token` headers of `auth`. */
function credentials(target: FuzzTarget, auth: Auth): Record<string, string> {
  const { webservice, cti } = target.tokens;
  switch (auth) {
    case "webservice":
      return { Authorization: `Bearer ${webservice}` };
    case "cti":
      return { Authorization: `Bearer ${cti}` };
    case "none":
      return {};
    case "x-auth-token":
      return { "X-Auth-Token": webservice };
    case "bearer-empty":
      return { Authorization: "Bearer " };
    case "bearer-garbage":
      return { Authorization: "Bearer a.b.c" };
    case "bearer-forged":
      return { Authorization: `Bearer ${webservice.slice(0, -4)}AAAA` };
    case "bearer-huge":
      return { Authorization: `Bearer ${"a".repeat(20_000)}` };
    case "basic":
      return { Authorization: `Basic ${btoa("alice:alice-demo")}` };
  }
}

/** The `Request` of `request` for `target`. */
function toRequest(target: FuzzTarget, request: FuzzRequest): Request {
  const headers = new Headers({ ...request.headers, ...credentials(target, request.auth) });
  let body: BodyInit | undefined;
  const spec = request.body;
  if (spec.kind === "bytes") body = spec.bytes as Uint8Array<ArrayBuffer>;
  if (spec.kind === "short") {
    body = spec.bytes as Uint8Array<ArrayBuffer>;
    headers.set("Content-Length", String(spec.declared));
  }
  if (spec.kind === "cut") {
    // what Deno.serve's request body does when the connection ends before the body
    body = new ReadableStream<Uint8Array>({
      start(controller) {
        if (spec.bytes.length) controller.enqueue(spec.bytes.slice());
        controller.error(
          new Deno.errors.BadResource("Cannot read body as underlying resource unavailable"),
        );
      },
    });
  }
  return new Request(`http://localhost${request.url}`, {
    method: request.method,
    headers,
    body,
    duplex: "half",
  } as RequestInit);
}

/** Which area answers `pathname` (as Hono decodes it), hence the form of its errors. */
function areaOf(
  pathname: string,
): "confd" | "agentd" | "calld" | "xivo" | "service" | "status" | "ready" {
  let path = pathname;
  if (path.includes("%")) {
    try {
      path = decodeURI(path.replaceAll("%25", "%2525"));
    } catch { /* Hono keeps it as is too */ }
  }
  if (/^\/1\.1(\/|$)/.test(path)) return "confd";
  if (/^\/agents(\/|$)/.test(path) || /^\/users\/me\/agents(\/|$)/.test(path)) return "agentd";
  if (/^\/0\.1(\/|$)/.test(path)) return "xivo";
  if (/^\/1\.0(\/|$)/.test(path)) return "calld";
  if (path === "/status") return "status";
  if (path === "/ready") return "ready";
  return "service";
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const FORMS = {
  /** `{error, message}`: the 2.0 and 1.0 APIs, and unknown paths. */
  service: (body: unknown) =>
    isRecord(body) && typeof body.error === "string" && typeof body.message === "string",
  /** A JSON array of strings: the configuration daemon. */
  confd: (body: unknown) =>
    Array.isArray(body) && body.length > 0 && body.every((item) => typeof item === "string"),
  /** `{error}` alone: the agent daemon. */
  agentd: (body: unknown) =>
    isRecord(body) && Object.keys(body).join() === "error" && typeof body.error === "string",
  /** `{message, error_id, details, timestamp}`: the call daemon. */
  calld: (body: unknown) =>
    isRecord(body) && typeof body.message === "string" && typeof body.error_id === "string" &&
    isRecord(body.details) && typeof body.timestamp === "number",
  /** `{reason: [text], timestamp: [n], status_code}`: xivo-auth. */
  xivo: (body: unknown) =>
    isRecord(body) && Array.isArray(body.reason) && typeof body.reason[0] === "string" &&
    Array.isArray(body.timestamp) && typeof body.status_code === "number",
};

/** True when `body` is an error in the form of the area answering `pathname`. */
function inAreaForm(pathname: string, body: unknown): boolean {
  const area = areaOf(pathname);
  switch (area) {
    case "confd":
      return FORMS.confd(body);
    case "agentd":
      return FORMS.agentd(body);
    case "calld":
      return FORMS.calld(body);
    case "xivo": // an unknown path below /0.1 is the app's 404
      return FORMS.xivo(body) || FORMS.service(body);
    case "status": // GET /status is the agent daemon's; any other method an unknown route
      return FORMS.agentd(body) || FORMS.service(body);
    case "ready": // GET /ready's 503 is `{status}`; any other method an unknown route
      return (isRecord(body) && body.status === "unavailable") || FORMS.service(body);
    case "service":
      return FORMS.service(body);
  }
}

/** True when the spec allows this 5xx: see the module's comment. */
function allowed5xx(target: FuzzTarget, pathname: string, status: number, body: unknown): boolean {
  if (status === 503 && target.storeDown) return true;
  // the spec's 500 for a contact that is not JSON (errors 3)
  return status === 500 && pathname.includes("/contact/") && isRecord(body) &&
    body.error === "JsonParsingError";
}

/**
 * Sends `request` to the app; throws, naming the answer, when it is a 5xx the spec does not allow,
 * an error out of its area's form, or when the log got an `unhandled error` line meanwhile.
 */
export async function check(target: FuzzTarget, request: FuzzRequest): Promise<void> {
  const { ctx } = target;
  const logged = ctx.logs.length;
  const env = { remoteAddr: { transport: "tcp", hostname: request.client, port: 40_000 } };
  const response = await ctx.app.request(toRequest(target, request), undefined, env);
  const text = await bodyText(response);
  const unhandled = ctx.logs.slice(logged).filter((line) => line.includes('"unhandled error"'));
  const pathname = new URL(`http://localhost${request.url}`).pathname;
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch { /* not JSON: out of any form */ }
  const problems: string[] = [];
  if (response.status >= 500 && !allowed5xx(target, pathname, response.status, body)) {
    problems.push(`a ${response.status} the spec does not allow`);
  }
  if (response.status >= 400 && request.method !== "HEAD" && !inAreaForm(pathname, body)) {
    problems.push(`an error out of the ${areaOf(pathname)} form`);
  }
  if (unhandled.length) problems.push(`unhandled error in the log: ${unhandled.join("\n")}`);
  if (problems.length) {
    throw new Error(
      `${problems.join("; ")}\n  answer: ${response.status} ${clip(text, 400)}`,
    );
  }
}

/** How a run went: the requests sent (with shrinking) and the milliseconds it took. */
export interface FuzzRun {
  requests: number;
  ms: number;
  /** fast-check's report when a property failed (seed, path, the shrunk request), else null. */
  failure: string | null;
}

/**
 * Runs `numRuns` requests from `seed` against `target`: fast-check's report of the first failure,
 * shrunk, or null.
 *
 * @example
 * const run = await fuzz(await fuzzTarget(), { seed: 15, numRuns: 3000 });
 */
export async function fuzz(
  target: FuzzTarget,
  { seed, numRuns }: { seed: number; numRuns: number },
): Promise<FuzzRun> {
  let requests = 0;
  const started = performance.now();
  const requestsOf = fuzzRequest(routeTable(target.ctx), target.known);
  const property = fc.asyncProperty(requestsOf, async (request) => {
    requests++;
    await check(target, request);
  });
  const details = await fc.check(property, { seed, numRuns, includeErrorInReport: true });
  const ms = Math.round(performance.now() - started);
  return { requests, ms, failure: details.failed ? fc.defaultReportMessage(details) ?? "" : null };
}

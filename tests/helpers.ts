/** Test factories: a fresh in-memory store, a manual clock and captured log lines per test. */
import assert from "node:assert/strict";
import { prepareStore } from "../lib/bootstrap.ts";
import { ManualClock } from "../lib/clock.ts";
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { createServices, type Services } from "../lib/services.ts";
import { createUser, type UserRecord } from "../lib/store/users.ts";
import { createWebServiceUser, type WebServiceUserRecord } from "../lib/store/webservice_users.ts";
import { createApp } from "../routes/mod.ts";
import { checkResponse, requestLine } from "./openapi_responses.ts";

export interface TestContext {
  services: Services;
  app: ReturnType<typeof createApp>;
  clock: ManualClock;
  /** Every JSON log line written so far. */
  logs: string[];
}

/**
 * Builds the real app on a fresh `:memory:` store; `env` adds settings. Every answer its
 * `app.request()` gives is checked against the OpenAPI document (`tests/openapi_responses.ts`):
 * one the document does not describe fails the test.
 */
export async function setup(env: Record<string, string> = {}): Promise<TestContext> {
  const clock = new ManualClock();
  const logs: string[] = [];
  const config = loadConfig({ SVC_KV: ":memory:", ...env });
  const services = await createServices(config, {
    clock,
    logger: createLogger("debug", (line) => logs.push(line)),
  });
  await prepareStore(services);
  return { services, app: checkedAgainstOpenApi(createApp(services)), clock, logs };
}

/** `app`, its `request()` checking each answer against the OpenAPI document. */
function checkedAgainstOpenApi(app: ReturnType<typeof createApp>) {
  const request = app.request.bind(app);
  app.request = async (input, init, ...rest) => {
    const response = await request(input, init, ...rest);
    const { method, path } = requestLine(input, init);
    await checkResponse(method, path, response);
    return response;
  };
  return app;
}

let serial = 0;

/** A CTI user with a unique username; the password is `${username}-pw`. */
export function ctiUser(ctx: TestContext, username = `user${++serial}`): Promise<UserRecord> {
  return createUser(ctx.services.store, {
    firstname: "Test",
    lastname: username,
    username,
    password: `${username}-pw`,
  });
}

/** A web service user with the given ACLs; the password is `${login}-pw`. */
export function webServiceUser(
  ctx: TestContext,
  acls: string[],
  login = `ws${++serial}`,
): Promise<WebServiceUserRecord> {
  return createWebServiceUser(ctx.services.store, { login, password: `${login}-pw`, acls });
}

/** Sends a JSON body to the app. */
export function postJson(
  ctx: TestContext,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return Promise.resolve(ctx.app.request(path, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  }));
}

/** Logs in through the real route and answers the token. */
export async function login(
  ctx: TestContext,
  route: "login" | "webservice",
  login: string,
): Promise<string> {
  const response = await postJson(ctx, `/svc/api/2.0/auth/${route}`, {
    login,
    password: `${login}-pw`,
  });
  if (response.status !== 200) throw new Error(`login ${login}: ${response.status}`);
  return (await response.json()).token;
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** Calls `/1.1` with a web service user's token holding `acls` (the whole daemon by default). */
export async function confd(ctx: TestContext, acls: string[] = ["confd.#"]) {
  const user = await webServiceUser(ctx, acls);
  return confdClient(ctx, await login(ctx, "webservice", user.login));
}

/** A fresh app and a `/1.1` client holding the whole daemon's ACLs: most tests start so. */
export async function setupConfd(env: Record<string, string> = {}) {
  const ctx = await setup(env);
  return { ctx, api: await confd(ctx) };
}

/**
 * A function calling the app at `prefix` + path with `token` and a JSON body (a string is sent as
 * is); `headers` add to or replace the token's and the content type's.
 *
 * @example
 * const call = apiCall(ctx, "/svc/api/2.0", token);
 * const response = await call("POST", "/dial/toqueue", { destination: "1001", queueName: "sales" });
 */
export function apiCall(ctx: TestContext, prefix: string, token: string) {
  return (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    Promise.resolve(ctx.app.request(`${prefix}${path}`, {
      method,
      headers: { ...bearer(token), "Content-Type": "application/json", ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
}

/**
 * Gives users rights profiles through `PUT /svc/api/2.0/rights/profiles/{userId}`, as a web
 * service user holding `svc.rest.rights.#`; `null` takes the profile away (`DELETE`).
 *
 * @example
 * const give = await rightsAdmin(ctx);
 * await give(sam.id, { profile: "supervisor", queueIds: [1], changeQueues: true });
 */
export async function rightsAdmin(ctx: TestContext) {
  const user = await webServiceUser(ctx, ["svc.rest.rights.#"]);
  const call = apiCall(ctx, "/svc/api/2.0", await login(ctx, "webservice", user.login));
  return async (userId: number, profile: Record<string, unknown> | null) => {
    const response = profile === null
      ? await call("DELETE", `/rights/profiles/${userId}`)
      : await call("PUT", `/rights/profiles/${userId}`, profile);
    const text = await response.text();
    assert.equal(response.status, profile === null ? 204 : 200, text);
  };
}

/** A `/1.1` client, as `confd` answers it. */
export type Confd = ReturnType<typeof confdClient>;

/** Bodies and the error each must answer: its first message matches the pattern beside it. */
type InvalidCases = [body: unknown, pattern: RegExp][];

/**
 * Calls `/1.1` with `token`: raw calls, and the checks every resource's tests make, which send
 * their own requests.
 */
function confdClient(ctx: TestContext, token: string) {
  const call = apiCall(ctx, "/1.1", token);
  const api = {
    token,
    get: (path: string, headers?: Record<string, string>) => call("GET", path, undefined, headers),
    post: (path: string, body?: unknown) => call("POST", path, body),
    put: (path: string, body?: unknown) => call("PUT", path, body),
    delete: (path: string) => call("DELETE", path),
    call,

    /** POSTs, asserts 201 with a Location naming the new resource (by id, else uuid), answers it. */
    async create(path: string, body: unknown) {
      const response = await call("POST", path, body);
      const text = await response.text();
      assert.equal(response.status, 201, `${path}: ${text}`);
      const created = JSON.parse(text);
      assert.equal(response.headers.get("location"), `/1.1${path}/${created.id ?? created.uuid}`);
      return created;
    },

    /** GETs a list (asserting 200) and answers its total and each item's `field`. */
    async list(path: string, field = "name") {
      const response = await call("GET", path);
      assert.equal(response.status, 200, path);
      const body = await response.json();
      const values: unknown[] = body.items.map((item: Record<string, unknown>) => item[field]);
      return { total: body.total as number, values };
    },

    /** GET, PUT and DELETE of `path`/`key`'s value each answer 404 naming `resource` and `key`. */
    async expectUnknownId(path: string, resource: string, key: Record<string, string | number>) {
      const url = `${path}/${Object.values(key)[0]}`;
      for (const method of ["GET", "PUT", "DELETE"]) {
        const body = method === "PUT" ? {} : undefined;
        await expectNotFound(await call(method, url, body), resource, key);
      }
    },

    /** DELETE of `path`/`key`'s value answers 204; then its GET answers 404 as `expectNotFound`. */
    async expectDeleted(path: string, resource: string, key: Record<string, string | number>) {
      const url = `${path}/${Object.values(key)[0]}`;
      const deleted = await call("DELETE", url);
      assert.equal(deleted.status, 204, `DELETE ${url}: ${await deleted.text()}`);
      await expectNotFound(await call("GET", url), resource, key);
    },

    /** `method` on `path` answers 400 to each body of `cases`. */
    async expectInvalid(method: string, path: string, cases: InvalidCases) {
      for (const [body, pattern] of cases) {
        await expectConfdError(await call(method, path, body), 400, pattern);
      }
    },

    /** `method` on `path` answers 400 to a body that is not JSON, and to JSON not an object. */
    async expectJsonObjectBody(method: string, path: string) {
      const cases: InvalidCases = [
        ["{oops", /^Input Error - .*not valid JSON/],
        ["[1]", /^Input Error - .*JSON object/],
        ["null", /^Input Error - .*JSON object/],
      ];
      await api.expectInvalid(method, path, cases);
    },

    /**
     * POSTing `taken` (a body whose unique fields already exist) answers 400 `message`, and so
     * does PUTting it over another resource, created from `other`.
     */
    async expectTaken(path: string, taken: object, other: object, message: RegExp) {
      await expectConfdError(await call("POST", path, taken), 400, message);
      const { id } = await api.create(path, other);
      await expectConfdError(await call("PUT", `${path}/${id}`, taken), 400, message);
    },
  };
  return api;
}

/**
 * Reads the job at `path` (`/jobs/<id>`) until it has ended, yielding to the event loop between
 * reads (a bounded number of times); answers its last view.
 */
export async function waitForJob(api: Confd, path: string) {
  for (let read = 0; read < 3000; read++) {
    const response = await api.get(path);
    const job = await response.json();
    assert.equal(response.status, 200, JSON.stringify(job));
    if (job.state === "succeeded" || job.state === "failed") return job;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the job ${path} did not end`);
}

/**
 * Asserts a configuration daemon error: `status` and a first message matching `pattern` (a
 * string must be the whole message).
 */
export async function expectConfdError(
  response: Response,
  status: number,
  pattern: RegExp | string,
) {
  const body = await response.json();
  const message = Array.isArray(body) ? String(body[0]) : undefined;
  const matches = typeof pattern === "string" ? message === pattern : pattern.test(message ?? "");
  if (response.status !== status || message === undefined || !matches) {
    throw new Error(
      `expected ${status} ${pattern}, got ${response.status} ${JSON.stringify(body)}`,
    );
  }
}

/**
 * Asserts 404 `Resource Not Found` for `resource` looked up by `key`: `{ id: 3 }` reads
 * `('id': 3)`, a string value is quoted: `{ uuid: "x" }` reads `('uuid': 'x')`.
 */
export async function expectNotFound(
  response: Response,
  resource: string,
  key: Record<string, string | number>,
) {
  const [name, value] = Object.entries(key)[0]!;
  const shown = typeof value === "string" ? `'${value}'` : value;
  await expectConfdError(
    response,
    404,
    `Resource Not Found - ${resource} was not found ('${name}': ${shown})`,
  );
}

/**
 * Asserts a 2.0 (or 1.0) error: status, JSON content type, code, and a message matching `message`;
 * answers the body.
 */
export async function expectError(
  response: Response,
  status: number,
  code: string,
  message: RegExp = /./,
): Promise<{ error: string; message: string }> {
  const text = await response.text();
  assert.equal(response.status, status, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  const body = JSON.parse(text);
  assert.equal(body.error, code, text);
  assert.equal(typeof body.message, "string", text);
  assert.match(body.message, message, text);
  return body;
}

/** A port nobody listens on (a server was there a moment ago). */
export async function closedPort(): Promise<number> {
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen() {} },
    () => new Response(),
  );
  const { port } = server.addr;
  await server.shutdown();
  return port;
}

/** Asserts the 2.0 API's 403 naming the ACL the token lacks. */
export async function expectForbidden(response: Response, acl: string) {
  assert.equal(response.status, 403);
  assert.deepEqual(await response.json(), { error: "Forbidden", message: `missing ACL ${acl}` });
}

/** Asserts the configuration daemon's 403 naming the ACL the token lacks. */
export async function expectMissingAcl(response: Response, acl: string) {
  assert.equal(response.status, 403);
  assert.deepEqual(await response.json(), [`Forbidden - missing ACL ${acl}`]);
}

/** A route for `expectAcls`: method, `/1.1` path, the ACL it needs, and the body it sends. */
export type AclRoute = [method: string, path: string, acl: string, body?: unknown];

/**
 * One step per route, in order (so put deletions last): a web service token holding only
 * `others` gets 403 naming the route's ACL, and one holding only that ACL gets a 2xx. The tokens
 * are signed directly, sparing a password hash per route.
 */
export async function expectAcls(
  t: Deno.TestContext,
  ctx: TestContext,
  routes: AclRoute[],
  others = ["confd.contexts.#"],
) {
  const holding = async (acls: string[]) => {
    const identity = { userId: "0", login: "acl-check", userType: "webservice" as const, acls };
    return confdClient(ctx, (await ctx.services.tokens.issue(identity)).token);
  };
  const narrow = await holding(others);
  for (const [method, path, acl, body] of routes) {
    await t.step(`${method} ${path} needs ${acl}`, async () => {
      await expectMissingAcl(await narrow.call(method, path, body), acl);
      const allowed = await (await holding([acl])).call(method, path, body);
      assert.ok(allowed.status < 300, `${method} ${path}: ${allowed.status}`);
      await allowed.body?.cancel();
    });
  }
}

/**
 * The text of an answer; a live event stream (`text/event-stream`, never ending) is cancelled and
 * reads as "" — what a probe checks of it is its status.
 */
export async function bodyText(response: Response): Promise<string> {
  if (response.headers.get("content-type") === "text/event-stream") {
    await response.body?.cancel();
    return "";
  }
  return await response.text();
}

/** Imports `source` as a module from a temporary file (removed after). */
export async function importSource(source: string): Promise<Record<string, unknown>> {
  const file = await Deno.makeTempFile({ suffix: ".js" });
  try {
    await Deno.writeTextFile(file, source);
    return await import(`file://${file}`);
  } finally {
    await Deno.remove(file);
  }
}

/**
 * `expect(status, method, path, body?)` on `call`: asserts the status, answers the parsed JSON body
 * (its JSON content type asserted), or null for a 204 with no body; `prefix` names the API in the
 * failure message.
 */
export function expectJson(
  call: (method: string, path: string, body?: unknown) => Promise<Response>,
  prefix: string,
) {
  return async <T = Record<string, unknown>>(
    status: number,
    method: string,
    path: string,
    body?: unknown,
  ): Promise<T> => {
    const response = await call(method, path, body);
    const text = await response.text();
    assert.equal(response.status, status, `${method} ${prefix}${path}: ${text}`);
    if (status === 204) {
      assert.equal(text, "");
      return null as T;
    }
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    return JSON.parse(text);
  };
}

/**
 * A receiver of exported events on loopback (`SVC_EVENT_URL`: its `url`), answering 200 and keeping
 * each event posted, in order.
 */
export function eventReceiver<T = unknown>() {
  const posted: T[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    posted.push(await request.json());
    return new Response(null, { status: 200 });
  });
  return {
    posted,
    url: `http://127.0.0.1:${server.addr.port}/events`,
    close: () => server.shutdown(),
  };
}

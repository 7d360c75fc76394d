/** Test factories: a fresh in-memory store, a manual clock and captured log lines per test. */
import { prepareStore } from "../lib/bootstrap.ts";
import { ManualClock } from "../lib/clock.ts";
import { loadConfig } from "../lib/config.ts";
import { createLogger } from "../lib/log.ts";
import { createServices, type Services } from "../lib/services.ts";
import { createUser, type UserRecord } from "../lib/store/users.ts";
import { createWebServiceUser, type WebServiceUserRecord } from "../lib/store/webservice_users.ts";
import { createApp } from "../routes/mod.ts";

export interface TestContext {
  services: Services;
  app: ReturnType<typeof createApp>;
  clock: ManualClock;
  /** Every JSON log line written so far. */
  logs: string[];
}

/** Builds the real app on a fresh `:memory:` store; `env` adds settings. */
export async function setup(env: Record<string, string> = {}): Promise<TestContext> {
  const clock = new ManualClock();
  const logs: string[] = [];
  const config = loadConfig({ SVC_KV: ":memory:", ...env });
  const services = await createServices(config, {
    clock,
    logger: createLogger("debug", (line) => logs.push(line)),
  });
  await prepareStore(services);
  return { services, app: createApp(services), clock, logs };
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
  const token = await login(ctx, "webservice", user.login);
  const call = (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    Promise.resolve(ctx.app.request(`/1.1${path}`, {
      method,
      headers: { ...bearer(token), "Content-Type": "application/json", ...headers },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
  return {
    token,
    get: (path: string, headers?: Record<string, string>) => call("GET", path, undefined, headers),
    post: (path: string, body?: unknown) => call("POST", path, body),
    put: (path: string, body?: unknown) => call("PUT", path, body),
    delete: (path: string) => call("DELETE", path),
    call,
  };
}

/** Asserts a configuration daemon error: `status` and one message matching `pattern`. */
export async function expectConfdError(response: Response, status: number, pattern: RegExp) {
  const body = await response.json();
  if (response.status !== status || !Array.isArray(body) || !pattern.test(String(body[0]))) {
    throw new Error(
      `expected ${status} ${pattern}, got ${response.status} ${JSON.stringify(body)}`,
    );
  }
}

/**
 * Talking to the real server process from end-to-end tests: JSON requests with a token, logins,
 * users made through `/1.1`, an `eventUrl` receiver that can wait for an event, and a poller.
 */
import assert from "node:assert/strict";
import type { EventMessage } from "../../lib/events/messages.ts";
import type { RunningServer } from "./server.ts";

export const V2 = "/svc/api/2.0";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `test` holds, checking every 100 ms for at most `ms`; fails naming `what`. */
export async function until(test: () => boolean | Promise<boolean>, ms: number, what: string) {
  const end = performance.now() + ms;
  while (!await test()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(100);
  }
}

export interface Answer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** How a request carries its token: `Authorization: Bearer`, or `X-Auth-Token` as Wazo's clients. */
export type TokenHeader = "bearer" | "x-auth-token";

/**
 * One request to svc (JSON body, token as `tokenHeader` says, bearer unless told); gives up after
 * `timeoutMs` (10 s).
 */
export async function call(
  server: RunningServer,
  method: string,
  path: string,
  { token, body, timeoutMs = 10_000, tokenHeader = "bearer" }: {
    token?: string;
    body?: unknown;
    timeoutMs?: number;
    tokenHeader?: TokenHeader;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (token && tokenHeader === "bearer") headers.Authorization = `Bearer ${token}`;
  else if (token) headers["X-Auth-Token"] = token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(server.baseUrl + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : JSON.parse(text) };
}

/** `call` asserting `status`. */
export async function expectStatus(
  status: number,
  server: RunningServer,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; tokenHeader?: TokenHeader } = {},
): Promise<Answer> {
  const answer = await call(server, method, path, options);
  assert.equal(answer.status, status, `${method} ${path}: ${JSON.stringify(answer.body)}`);
  return answer;
}

export async function login(
  server: RunningServer,
  route: "login" | "webservice",
  login: string,
  password: string,
): Promise<string> {
  const body = { login, password };
  return (await expectStatus(200, server, "POST", `${V2}/auth/${route}`, { body })).body.token;
}

export interface Person {
  username: string;
  password: string;
  exten: string;
  /** The SIP endpoint's username and secret (what the phone registers with). */
  secret: string;
  fields?: Record<string, unknown>;
}

/** A user with a SIP line holding `exten` in `default`, made through `/1.1`; answers its id. */
export async function phoneUser(
  server: RunningServer,
  token: string,
  person: Person,
): Promise<number> {
  const create = async (path: string, body: unknown): Promise<number> =>
    (await expectStatus(201, server, "POST", `/1.1${path}`, { token, body })).body.id;
  const link = (path: string, body?: unknown) =>
    expectStatus(204, server, "PUT", `/1.1${path}`, { token, body });
  const { username, password, exten } = person;
  const id = await create("/users", { firstname: username, username, password, ...person.fields });
  const line = await create("/lines", { context: "default" });
  const extension = await create("/extensions", { exten, context: "default" });
  const sip = await create("/endpoints/sip", { username, secret: person.secret });
  await link(`/lines/${line}/extensions/${extension}`);
  await link(`/lines/${line}/endpoints/sip/${sip}`);
  await link(`/users/${id}/lines/${line}`);
  return id;
}

/** One event as received, flattened: phone events' CTI message, agent and config fields. */
export interface Received {
  username: string;
  msgType: string;
  eventType?: string;
  DN?: string;
  otherDN?: string;
  otherDName?: string;
  linkedId?: string;
  uniqueId?: string;
  userData?: Record<string, string>;
  recordState?: string;
  name?: string;
  agentNumber?: string;
  phoneNb?: string;
  monitorState?: string;
}

/** A `Deno.serve` receiver for `SVC_EVENT_URL` that can wait for an event. */
export function eventReceiver() {
  const events: Received[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, async (request) => {
    const { username, message }: EventMessage = await request.json();
    const fields = "ctiMessage" in message ? message.ctiMessage : message;
    events.push({ username, msgType: message.msgType, ...fields } as Received);
    return new Response(null, { status: 200 });
  });
  const receiver = {
    url: `http://127.0.0.1:${server.addr.port}/pbx/1.0/event/e2e/dropbox/`,
    events,
    /** Where the events received from now on start. */
    mark: () => events.length,
    /** Phone events since `since`, of `username` if given. */
    phone: (since: number, username?: string) =>
      events.slice(since).filter((event) =>
        event.msgType === "PhoneEvent" && (username === undefined || event.username === username)
      ),
    /** Agent state names of agent `number` since `since`. */
    agent: (since: number, number: string) =>
      events.slice(since).filter((e) => e.msgType === "AgentStateEvent" && e.agentNumber === number)
        .map((event) => event.name),
    /** The first event since `since` matching `test`, waiting up to `ms` for it. */
    async waitFor(
      since: number,
      test: (event: Received) => boolean,
      what: string,
      ms = 20_000,
    ): Promise<Received> {
      await until(() => events.slice(since).some(test), ms, what);
      return events.slice(since).find(test)!;
    },
    close: () => server.shutdown(),
  };
  return receiver;
}

export type Receiver = ReturnType<typeof eventReceiver>;

/** Sends `request` as raw bytes, closes the sending side, and answers all that came back. */
export async function halfClosed(port: number, request: string): Promise<string> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await connection.write(new TextEncoder().encode(request));
    await connection.closeWrite();
    let text = "";
    const buffer = new Uint8Array(4096);
    for (;;) {
      const n = await connection.read(buffer);
      if (n === null) return text;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } finally {
    connection.close();
  }
}

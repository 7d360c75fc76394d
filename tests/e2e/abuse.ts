/**
 * Malformed requests of every kind over every route of the real server (issue 27 §6): the route
 * table of the app `createApp` builds, each route with its path parameters filled in, sent over raw
 * TCP connections (one request each, `Connection: close`) so that a body can be cut, oversized or
 * streamed exactly as a hostile client would.
 *
 * The kinds, in turn, each request different from all others:
 * - a route taking a body (POST, PUT, PATCH, DELETE):
 *   - 10 MiB + 1 byte announced by `Content-Length`, and sent (413 at once);
 *   - 10 MiB + 1 byte chunked, without a length (read up to the route's limit, then 413);
 *   - a JSON string of 1 MiB (just under the limit, so it is read and parsed);
 *   - arrays nested 3,000 deep;
 *   - a body cut short: `Content-Length: 100`, 10 bytes, then a half-close;
 *   - bytes that are no JSON;
 * - every route: a bearer token that is no JWT, a JWT signed with another key, an 8 KB token,
 *   and a valid token on a path value that names nothing.
 *
 * `tests/e2e/memory_abuse_test.ts` and `deno task bench memory` send them.
 */
import { isMiddlewareEntry } from "../../lib/no_route.ts";
import { loadConfig } from "../../lib/config.ts";
import { createServices } from "../../lib/services.ts";
import { createApp } from "../../routes/mod.ts";

export const MiB = 1024 * 1024;

/** A route: its method and its path template (`/users/:id`). */
export type Route = readonly [method: string, path: string];

/** Every route of the app, once each, without the middleware entries. */
export async function everyRoute(): Promise<Route[]> {
  const services = await createServices(loadConfig({ SVC_KV: ":memory:", SVC_LOG_LEVEL: "error" }));
  try {
    const routes = createApp(services).routes
      .filter((route) => !isMiddlewareEntry(route))
      .map((route): Route => [route.method, route.path]);
    return [...new Map(routes.map((route) => [route.join(" "), route])).values()];
  } finally {
    await services.platform.close();
    await services.events.close();
    services.store.close();
  }
}

/** A JWT of the right shape signed with a key svc does not have. */
const FOREIGN_TOKEN = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." +
  "eyJsb2dpbiI6ImFidXNlIiwic3ViIjoiMSIsImV4cCI6NDEwMjQ0NDgwMH0." +
  "c2lnbmVkLXdpdGgtYW5vdGhlci1rZXktYWJjZGVmZ2hpamtsbW5vcA";

const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The kinds of malformed request a route taking a body gets, and the ones every route gets. */
export const BODY_KINDS = [
  "oversized",
  "oversized-chunked",
  "string-1mib",
  "nested-3000",
  "cut",
  "not-json",
] as const;
export const ANY_KINDS = ["garbage-token", "foreign-token", "huge-token", "odd-value"] as const;
export type Kind = typeof BODY_KINDS[number] | typeof ANY_KINDS[number];

/** One request of the abuse: what is sent, raw. */
export interface Abuse {
  kind: Kind;
  method: string;
  path: string;
  headers: Record<string, string>;
  /**
   * The body, sent whole (`bytes`), sent as chunks without a last one (`chunked`), or `length`
   * bytes of it sent and the connection half-closed (`cut`).
   */
  body?:
    | { how: "bytes"; bytes: Uint8Array }
    | { how: "chunked"; size: number }
    | { how: "cut"; bytes: Uint8Array; declared: number };
}

const encoder = new TextEncoder();

/** 10 MiB + 1 byte of JSON-looking text, made once. */
let oversized: Uint8Array | null = null;
const oversizedBody = () => oversized ??= encoder.encode(`{"x":"${"a".repeat(10 * MiB - 7)}"}`);
/** A JSON object holding a 1 MiB string less a little: under the 1 MiB limit of most routes. */
let stringBody: Uint8Array | null = null;
const string1MiB = () => stringBody ??= encoder.encode(`{"name":"${"é".repeat(MiB / 2 - 16)}"}`);
const NESTED = encoder.encode(`{"name":${"[".repeat(3_000)}${"]".repeat(3_000)}}`);

/** The `n`th request of the abuse on `route`, with `token` where a valid token is wanted. */
export function abuse(route: Route, kind: Kind, n: number, token: string): Abuse {
  const [method, template] = route;
  const value = kind === "odd-value" ? `%2e%2e${n}` : `${n}x`;
  const path = template.replace(/:[A-Za-z_]+(\{[^}]*\})?/g, value) || "/";
  const auth = (authorization: string) => ({ Authorization: authorization });
  const json = { "Content-Type": "application/json" };
  const valid = auth(`Bearer ${token}`);
  /** A JSON request with a valid token and `body`. */
  const withBody = (body: Abuse["body"], extra: Record<string, string> = {}): Abuse => ({
    kind,
    method,
    path,
    headers: { ...valid, ...json, ...extra },
    body,
  });
  switch (kind) {
    case "oversized":
      return withBody({ how: "bytes", bytes: oversizedBody() });
    case "oversized-chunked":
      return withBody({ how: "chunked", size: 10 * MiB + 1 });
    case "string-1mib":
      return withBody({ how: "bytes", bytes: string1MiB() });
    case "nested-3000":
      return withBody({ how: "bytes", bytes: NESTED });
    case "cut":
      return withBody({
        how: "cut",
        bytes: encoder.encode(`{"state": ${n}`.slice(0, 10)),
        declared: 100,
      });
    case "not-json":
      return withBody({ how: "bytes", bytes: encoder.encode(`{"state": tru${n}`) }, {
        "Idempotency-Key": crypto.randomUUID(),
      });
    case "garbage-token":
      return { kind, method, path, headers: auth(`Bearer ${crypto.randomUUID()}${n}`) };
    case "foreign-token":
      return { kind, method, path, headers: auth(`Bearer ${FOREIGN_TOKEN}${n}`) };
    case "huge-token":
      return { kind, method, path, headers: auth(`Bearer ${"x".repeat(8_000)}${n}`) };
    case "odd-value":
      return { kind, method, path, headers: valid };
  }
}

/** Each route with each kind it takes, in the order the abuse sends them. */
function plan(routes: Route[]): [Route, Kind][] {
  return routes.flatMap((route) =>
    (BODY_METHODS.has(route[0]) ? [...BODY_KINDS, ...ANY_KINDS] : ANY_KINDS)
      .map((kind): [Route, Kind] => [route, kind])
  );
}

/** How many requests send each kind to each route once: {@link abuses}' first pass. */
export function onePass(routes: Route[]): number {
  return plan(routes).length;
}

/** Every request of the abuse in turn, `count` of them: each route with each kind it takes. */
export function* abuses(routes: Route[], token: string, count: number): Generator<Abuse> {
  const steps = plan(routes);
  for (let n = 0; n < count; n++) {
    const [route, kind] = steps[n % steps.length]!;
    yield abuse(route, kind, n, token);
  }
}

const CHUNK_SIZE = 64 * 1024;
const CHUNK = encoder.encode(`${CHUNK_SIZE.toString(16)}\r\n${"a".repeat(CHUNK_SIZE)}\r\n`);
/** The chunk that ends a chunked body. */
const LAST_CHUNK = encoder.encode("0\r\n\r\n");

/**
 * Sends `request` to `port` on a new connection and answers the status of the answer, or null
 * when there was none (the server closed the connection first, as it may after a 413 to a body
 * it did not read). Gives up after `timeoutMs`.
 */
export async function send(
  port: number,
  request: Abuse,
  timeoutMs = 30_000,
): Promise<number | null> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  const timer = setTimeout(() => connection.close(), timeoutMs);
  try {
    const { body } = request;
    const headers: Record<string, string> = {
      Host: "127.0.0.1",
      Connection: "close",
      ...request.headers,
    };
    if (body?.how === "bytes") headers["Content-Length"] = `${body.bytes.length}`;
    if (body?.how === "cut") headers["Content-Length"] = `${body.declared}`;
    if (body?.how === "chunked") headers["Transfer-Encoding"] = "chunked";
    if (!body && BODY_METHODS.has(request.method)) headers["Content-Length"] = "0";
    const head = `${request.method} ${request.path} HTTP/1.1\r\n` +
      Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join("") + "\r\n";
    const reading = readStatus(connection);
    try {
      await writeAll(connection, encoder.encode(head));
      if (body?.how === "bytes" || body?.how === "cut") await writeAll(connection, body.bytes);
      if (body?.how === "chunked") {
        let sent = 0;
        for (; sent + CHUNK_SIZE <= body.size; sent += CHUNK_SIZE) {
          await writeAll(connection, CHUNK);
        }
        const rest = body.size - sent;
        if (rest) {
          await writeAll(
            connection,
            encoder.encode(`${rest.toString(16)}\r\n${"a".repeat(rest)}\r\n`),
          );
        }
        await writeAll(connection, LAST_CHUNK);
      }
      if (body?.how === "cut") await connection.closeWrite();
    } catch {
      // the server answered and closed before reading it all (a 413): its answer tells
    }
    return await reading;
  } finally {
    clearTimeout(timer);
    try {
      connection.close();
    } catch {
      // closed by the timer
    }
  }
}

async function writeAll(connection: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let offset = 0; offset < bytes.length;) {
    offset += await connection.write(bytes.subarray(offset));
  }
}

/** The status of the answer read from `connection` (read to its end), or null. */
async function readStatus(connection: Deno.Conn): Promise<number | null> {
  const buffer = new Uint8Array(16 * 1024);
  let head = "";
  try {
    for (;;) {
      const n = await connection.read(buffer);
      if (n === null) break;
      if (head.length < 64) head += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } catch {
    // reset by the server: what came before tells
  }
  const status = head.match(/^HTTP\/1\.1 (\d{3}) /)?.[1];
  return status ? Number(status) : null;
}

/** What a burst gave: how many answers of each status (`none` for no answer). */
export type Tally = Record<string, number>;

/** Sends `count` requests of the abuse to `port`, `atOnce` at a time; answers the statuses seen. */
export async function burst(
  port: number,
  routes: Route[],
  token: string,
  count: number,
  atOnce = 16,
): Promise<Tally> {
  const tally: Tally = {};
  const all = abuses(routes, token, count);
  await Promise.all(Array.from({ length: atOnce }, async () => {
    for (const request of all) {
      const status = await send(port, request);
      const key = status === null ? "none" : `${status}`;
      tally[key] = (tally[key] ?? 0) + 1;
    }
  }));
  return tally;
}

/**
 * Normal requests, what a server gets before its memory is measured: `rounds` times, a login of
 * `login` and a `GET` of every route without a path value with its `token` (lists, the OpenAPI
 * documents, metrics, health, the event stream's first bytes), the docs page with the files it
 * loads. Each answer is read to its end (a stream's headers only).
 */
export async function warmUp(
  port: number,
  routes: Route[],
  token: string,
  login: { login: string; password: string },
  rounds = 3,
): Promise<void> {
  const base = `http://127.0.0.1:${port}`;
  const get = async (path: string) => {
    const response = await fetch(`${base}${path}`, {
      headers: { Authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (response.headers.get("content-type")?.startsWith("text/event-stream")) {
      await response.body?.cancel();
      return "";
    }
    return await response.text();
  };
  const paths = routes.filter(([method, path]) => method === "GET" && !path.includes(":"))
    .map(([, path]) => path);
  for (let round = 0; round < rounds; round++) {
    const answer = await fetch(`${base}/svc/api/2.0/auth/webservice`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(login),
      signal: AbortSignal.timeout(10_000),
    });
    await answer.body?.cancel();
    for (const path of paths) {
      const text = await get(path);
      if (path !== "/docs") continue;
      for (const [, asset] of text.matchAll(/(?:src|href)="(\/docs\/[^"]+)"/g)) await get(asset!);
    }
  }
}

/** The pid of the process listening on 127.0.0.1:`port` (Linux: `/proc/net/tcp` and the fds). */
export async function listenerPid(port: number): Promise<number> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = new Set<string>();
  for (const line of (await Deno.readTextFile("/proc/net/tcp")).split("\n").slice(1)) {
    const fields = line.trim().split(/\s+/);
    // local address, state 0A (LISTEN), inode
    if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === "0A") inodes.add(fields[9]!);
  }
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      for await (const fd of Deno.readDir(`/proc/${entry.name}/fd`)) {
        const target = await Deno.readLink(`/proc/${entry.name}/fd/${fd.name}`).catch(() => "");
        const inode = target.match(/^socket:\[(\d+)\]$/)?.[1];
        if (inode && inodes.has(inode)) return Number(entry.name);
      }
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  throw new Error(`no process listens on port ${port}`);
}

/** The resident memory of process `pid` in bytes (`VmRSS` of `/proc/<pid>/status`). */
export async function rssBytes(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kb = status.match(/^VmRSS:\s+(\d+) kB/m)?.[1];
  if (!kb) throw new Error(`no VmRSS for process ${pid}`);
  return Number(kb) * 1024;
}

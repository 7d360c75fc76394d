/**
 * Malformed requests of every kind over every route of the real server (issue 27 §6, issue 43 §2):
 * the route table of the app `createApp` builds, each route with its path parameters filled in,
 * sent over raw TCP connections (one request each, `Connection: close`) so that a body can be cut,
 * oversized, streamed or framed wrongly exactly as a hostile client would.
 *
 * The kinds, in turn, each request different from the ones before:
 * - a route taking a body (POST, PUT, PATCH, DELETE), with a valid token:
 *   - one byte over the route's limit ({@link bodyLimit}: 10 MiB for a CSV import, else 1 MiB),
 *     announced by `Content-Length` and sent (413 at once);
 *   - as much, chunked without a length (413 once the limit is passed);
 *   - as much behind a `Content-Length` that lies (40 bytes): what follows them is no request;
 *   - a JSON string just under the limit (read whole and parsed: the largest bodies svc reads);
 *   - CSV that is wrong (`text/csv`): just under the limit on an import route, with bad values,
 *     a quote that never closes or bytes that are no UTF-8; 64 KiB of it elsewhere;
 *   - JSON of the wrong types (numbers for strings, arrays for objects, a bare value…);
 *   - arrays nested 3,000 deep;
 *   - a body cut short: `Content-Length: 100`, 10 bytes, then a half-close;
 *   - bytes that are no JSON (with an `Idempotency-Key`);
 * - every route: a bearer token that is no JWT, a JWT signed with another key, an 8 KB token, a
 *   valid token on a path value that names nothing, and odd headers with a valid token
 *   (multipart without a boundary or cut, `Content-Encoding: gzip` on plain bytes, `Expect:
 *   100-continue`, 90 extra headers, an 8 KB request id, a key too long, both framings at once…).
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

/** The routes that import a CSV file. */
const CSV_IMPORT = /\/(contact\/import\/personal|callback_requests\/csv|users\/import)$/;

/**
 * The largest body a route reads, as the docs give it: 10 MiB for a CSV import (decisions §3,
 * §10, §11), 1 MiB for any other.
 */
export const bodyLimit = (path: string) => CSV_IMPORT.test(path) ? 10 * MiB : MiB;

/** A JWT of the right shape signed with a key svc does not have. */
const FOREIGN_TOKEN = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." +
  "eyJsb2dpbiI6ImFidXNlIiwic3ViIjoiMSIsImV4cCI6NDEwMjQ0NDgwMH0." +
  "c2lnbmVkLXdpdGgtYW5vdGhlci1rZXktYWJjZGVmZ2hpamtsbW5vcA";

const BODY_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** The kinds of malformed request a route taking a body gets, and the ones every route gets. */
export const BODY_KINDS = [
  "over-limit",
  "over-limit-chunked",
  "lying-length",
  "near-limit",
  "broken-csv",
  "wrong-types",
  "nested-3000",
  "cut",
  "not-json",
] as const;
export const ANY_KINDS = [
  "garbage-token",
  "foreign-token",
  "huge-token",
  "odd-value",
  "odd-headers",
] as const;
export type Kind = typeof BODY_KINDS[number] | typeof ANY_KINDS[number];

/** A body as sent. */
export interface Body {
  /** What is sent: these bytes, or as many bytes of `a`. */
  content: Uint8Array | number;
  /**
   * How its length is told: `Content-Length` of the content (by default) or of another number (a
   * lie), or chunked without a length.
   */
  length?: number | "chunked";
  /** The connection is half-closed after the body: a body cut short ends there. */
  halfClose?: boolean;
}

/** One request of the abuse: what is sent, raw. */
export interface Abuse {
  kind: Kind;
  method: string;
  path: string;
  /** Header lines in order (a name may come twice); the body's framing is added as it says. */
  headers: [string, string][];
  body?: Body;
}

const encoder = new TextEncoder();

/** Made once each: the large bodies, by size. */
const made = new Map<string, Uint8Array>();
const once = (key: string, make: () => Uint8Array) => {
  let bytes = made.get(key);
  if (!bytes) made.set(key, bytes = make());
  return bytes;
};

/** A JSON object holding one string of two-byte characters, `size` bytes in all, just under it. */
const nearLimit = (size: number) =>
  once(`json ${size}`, () => encoder.encode(`{"name":"${"é".repeat(size / 2 - 16)}"}`));

/** The lines of wrong CSV, in turn: bad values, a quote never closed, a formula, a NUL… */
const CSV_LINES = [
  "abc,12x,maybe,-1,1e999,,,,,,,,,,,,,,,,,,",
  '"never closed,x,y\n',
  "=cmd|' /C calc'!A0,@SUM(1),+1,-1,\t,\r",
  "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z,1,2,3,4,5,6,7,8,9",
  "\0\0\0,\u202e,\ufeff,\ud800x",
];
/** Wrong CSV of about `size` bytes (its header names columns no import has); variant `n`. */
const brokenCsv = (size: number, n: number) =>
  once(`csv ${size} ${n % 3}`, () => {
    if (n % 3 === 2) {
      // bytes that are no UTF-8
      return Uint8Array.from({ length: size }, (_, i) => (i % 7 ? 0xc3 : 0xff));
    }
    const line = n % 3 === 0 ? CSV_LINES.join("\n") : CSV_LINES.slice(1).join("\n");
    const head = "firstname,lastname,enabled,entity_id,exten,phone,mail,listUuid\n";
    const bytes = encoder.encode(head + `${line}\n`.repeat(Math.ceil(size / line.length)));
    return bytes.subarray(0, size); // cut in a line, maybe in a character: wrong all the same
  });

/** JSON values of the wrong types, in turn. */
const WRONG_TYPES = [
  `{"name":1,"firstname":[],"lastname":{},"state":"maybe","number":true,"login":null,` +
  `"password":123,"enabled":"yes","id":"x","ids":"1,2","queueId":1.5,"uuid":42,"username":[1]}`,
  `[{"name":"a"},{"name":"b"}]`,
  "42",
  `"just a string"`,
  "null",
  `{"__proto__":{"admin":true},"constructor":{"prototype":{"x":1}}}`,
  `{"name":"${"x".repeat(4000)}","number":"${"9".repeat(400)}","state":-1e308}`,
];

const NESTED = encoder.encode(`{"name":${"[".repeat(3_000)}${"]".repeat(3_000)}}`);

/** Odd headers, in turn (each with a valid token; a small body where the method takes one). */
function oddHeaders(n: number): { headers: [string, string][]; body?: Body } {
  const small = encoder.encode(`{"state": "${n}"}`);
  switch (n % 9) {
    case 0:
      return {
        headers: [["Content-Type", "multipart/form-data"]],
        body: { content: encoder.encode(`--x\r\nContent-Disposition: form-data; name="file"\r\n`) },
      };
    case 1:
      return {
        headers: [["Content-Type", "multipart/form-data; boundary=zz"]],
        body: {
          content: encoder.encode(
            `--zz\r\nContent-Disposition: form-data; name="file"; ` +
              `filename="a.csv"\r\n\r\n${"a,b\n".repeat(1000)}`,
          ),
        },
      };
    case 2:
      return { headers: [["Content-Encoding", "gzip"]], body: { content: small } };
    case 3:
      return {
        headers: [["Content-Type", "application/json; charset=utf-16"], ["Expect", "100-continue"]],
        body: { content: small },
      };
    case 4:
      return {
        headers: Array.from({ length: 90 }, (_, i): [string, string] => [`X-Odd-${i}`, `${n}`]),
        body: { content: small },
      };
    case 5:
      return {
        headers: [
          ["X-Request-Id", "r".repeat(8_000)],
          ["Idempotency-Key", `"${"k".repeat(4_000)}${n}"`],
        ],
        body: { content: small },
      };
    case 6:
      return {
        headers: [
          ["Accept", "text/csv; q=bogus, */*;q=2"],
          ["Accept-Encoding", "gzip;q=2, br;q=-1"],
          ["Origin", "null"],
          ["X-Forwarded-For", `::ffff:999.1.1.${n}, garbage`],
          ["Prefer", "respond-async; wait=-1"],
          ["Last-Event-ID", `${"9".repeat(400)}`],
        ],
        body: { content: small },
      };
    case 7:
      // both framings: the chunked one counts (RFC 9112 §6.3)
      return { headers: [["Content-Length", "5"]], body: { content: small, length: "chunked" } };
    default:
      return {
        headers: [["Upgrade", "websocket"], ["X-Auth-Token", `${n}`], [
          "Cookie",
          "c".repeat(8_000),
        ]],
        body: { content: small },
      };
  }
}

/** The `n`th request of the abuse on `route`, with `token` where a valid token is wanted. */
export function abuse(route: Route, kind: Kind, n: number, token: string): Abuse {
  const [method, template] = route;
  const value = kind === "odd-value" ? `%2e%2e${n}` : `${n}x`;
  const path = template.replace(/:[A-Za-z_]+(\{[^}]*\})?/g, value) || "/";
  const limit = bodyLimit(path);
  const bearer = (token: string): [string, string] => ["Authorization", `Bearer ${token}`];
  const valid = bearer(token);
  const json: [string, string] = ["Content-Type", "application/json"];
  /** A request with a valid token and `body`. */
  const withBody = (body: Body, headers: [string, string][] = [json]): Abuse => ({
    kind,
    method,
    path,
    headers: [valid, ...headers],
    body,
  });
  switch (kind) {
    case "over-limit":
      return withBody({ content: limit + 1 });
    case "over-limit-chunked":
      return withBody({ content: limit + 1, length: "chunked" });
    case "lying-length":
      return withBody({ content: limit + 1, length: 40 });
    case "near-limit":
      return withBody({ content: nearLimit(limit) });
    case "broken-csv": {
      const size = limit === MiB ? 64 * 1024 : limit - 1024;
      return withBody({ content: brokenCsv(size, n) }, [["Content-Type", "text/csv"]]);
    }
    case "wrong-types":
      return withBody({ content: encoder.encode(WRONG_TYPES[n % WRONG_TYPES.length]!) });
    case "nested-3000":
      return withBody({ content: NESTED });
    case "cut":
      return withBody({
        content: encoder.encode(`{"state": ${n}`.slice(0, 10)),
        length: 100,
        halfClose: true,
      });
    case "not-json":
      return withBody({ content: encoder.encode(`{"state": tru${n}`) }, [
        json,
        ["Idempotency-Key", crypto.randomUUID()],
      ]);
    case "garbage-token":
      return { kind, method, path, headers: [bearer(`${crypto.randomUUID()}${n}`)] };
    case "foreign-token":
      return { kind, method, path, headers: [bearer(`${FOREIGN_TOKEN}${n}`)] };
    case "huge-token":
      return { kind, method, path, headers: [bearer(`${"x".repeat(8_000)}${n}`)] };
    case "odd-value":
      return { kind, method, path, headers: [valid] };
    case "odd-headers": {
      const { headers, body } = oddHeaders(n);
      return BODY_METHODS.has(method) && body
        ? withBody(body, headers)
        : { kind, method, path, headers: [valid, ...headers.filter(([name]) => !FRAMING[name])] };
    }
  }
}

/** Headers that tell a body's framing or type: not sent without a body. */
const FRAMING: Record<string, boolean> = {
  "Content-Length": true,
  "Content-Type": true,
  "Content-Encoding": true,
  Expect: true,
};

/** Each route with each kind it takes, in the order the abuse sends them. */
function plan(routes: Route[]): [Route, Kind][] {
  return routes.flatMap((route) =>
    (BODY_METHODS.has(route[0]) ? [...BODY_KINDS, ...ANY_KINDS] : ANY_KINDS)
      .map((kind): [Route, Kind] => [route, kind])
  );
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
const FILLER = encoder.encode("a".repeat(CHUNK_SIZE));
/** The chunk that ends a chunked body. */
const LAST_CHUNK = encoder.encode("0\r\n\r\n");

/** The pieces of `content` to write, at most 64 KiB each. */
function* pieces(content: Uint8Array | number): Generator<Uint8Array> {
  const size = typeof content === "number" ? content : content.length;
  for (let at = 0; at < size; at += CHUNK_SIZE) {
    const end = Math.min(size, at + CHUNK_SIZE);
    yield typeof content === "number" ? FILLER.subarray(0, end - at) : content.subarray(at, end);
  }
}

/** Writes `body` to `connection` as its framing says. */
async function writeBody(connection: Deno.Conn, body: Body): Promise<void> {
  const chunked = body.length === "chunked";
  for (const piece of pieces(body.content)) {
    if (chunked) await writeAll(connection, encoder.encode(`${piece.length.toString(16)}\r\n`));
    await writeAll(connection, piece);
    if (chunked) await writeAll(connection, encoder.encode("\r\n"));
  }
  if (chunked) await writeAll(connection, LAST_CHUNK);
  if (body.halfClose) await connection.closeWrite();
}

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
    const headers: [string, string][] = [
      ["Host", "127.0.0.1"],
      ["Connection", "close"],
      ...request.headers,
    ];
    if (body?.length === "chunked") headers.push(["Transfer-Encoding", "chunked"]);
    else if (body) {
      const size = typeof body.content === "number" ? body.content : body.content.length;
      headers.push(["Content-Length", `${body.length ?? size}`]);
    } else if (BODY_METHODS.has(request.method)) headers.push(["Content-Length", "0"]);
    const head = `${request.method} ${request.path} HTTP/1.1\r\n` +
      headers.map(([name, value]) => `${name}: ${value}\r\n`).join("") + "\r\n";
    const reading = readStatus(connection);
    try {
      await writeAll(connection, encoder.encode(head));
      if (body) await writeBody(connection, body);
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

/**
 * The status of the answer read from `connection` (read to its end), or null; a `100 Continue`
 * before it is skipped.
 */
async function readStatus(connection: Deno.Conn): Promise<number | null> {
  const buffer = new Uint8Array(16 * 1024);
  let head = "";
  try {
    for (;;) {
      const n = await connection.read(buffer);
      if (n === null) break;
      if (head.length < 4096) head += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } catch {
    // reset by the server: what came before tells
  }
  const statuses = [...head.matchAll(/^HTTP\/1\.1 (\d{3}) /gm)].map((match) => Number(match[1]));
  return statuses.find((status) => status >= 200) ?? null;
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

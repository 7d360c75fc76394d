/**
 * A body over the route's limit is refused with 413 before it is read whole, on a real connection
 * to the real server (issue 43 §2): a chunked body that never ends, with no length or behind a
 * lying `Content-Length` (Deno's HTTP layer refuses both framings at once with a 400 of its own), on
 * a 1 MiB route and a 10 MiB CSV import; `tests/routes/app_test.ts` checks a lying length through
 * the app. The client sends until the answer comes; what it could send is bounded by the limit
 * plus what the two sockets' buffers hold on loopback, far below what a server reading on takes.
 */
import assert from "node:assert/strict";
import { MiB } from "./abuse.ts";
import { startServer, withTempDir } from "./server.ts";
import { login, V2 } from "./svc_http.ts";

const CHUNK = 64 * 1024;
const encoder = new TextEncoder();
const CHUNKED = encoder.encode(`${CHUNK.toString(16)}\r\n${"a".repeat(CHUNK)}\r\n`);
/** What the kernel may hold between the client's writes and the server's reads on loopback. */
const SOCKET_BUFFERS = 24 * MiB;

/**
 * Sends `head` then chunks without end until the answer comes (or `limit` + 64 MiB went out):
 * answers the status and how many body bytes were written before it came.
 */
async function endless(port: number, head: string, limit: number) {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  let answer = "";
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    connection.close();
  };
  // the answer's head and body, read as they come: the server stops reading the request, so once
  // the answer is in, closing the connection ends the write waiting on it
  const reading = (async () => {
    const buffer = new Uint8Array(16 * 1024);
    for (;;) {
      const n = await connection.read(buffer);
      if (n === null) break;
      answer += new TextDecoder().decode(buffer.subarray(0, n));
      if (/\r\n\r\n[\s\S]*PayloadTooLarge|\r\n\r\n[\s\S]*\S$/.test(answer)) break;
    }
  })().catch(() => {}).finally(close);
  let written = 0;
  try {
    await connection.write(encoder.encode(head));
    while (!closed && written < limit + 64 * MiB) {
      for (let at = 0; at < CHUNKED.length;) at += await connection.write(CHUNKED.subarray(at));
      written += CHUNK;
    }
  } catch {
    // closed once the answer came, or by the server
  }
  await reading;
  close();
  return { status: Number(answer.match(/^HTTP\/1\.1 (\d{3}) /)?.[1]), answer, written };
}

Deno.test("a body that never ends: 413 from the real server before it is read whole", async (t) => {
  await withTempDir(async (dir) => {
    const server = await startServer({
      SVC_KV: `${dir}/svc.kv`,
      SVC_ADMIN_LOGIN: "admin",
      SVC_ADMIN_PASSWORD: "admin-password",
    });
    try {
      const token = await login(server, "webservice", "admin", "admin-password");
      const routes: [path: string, limit: number][] = [
        [`${V2}/dnd/alice`, MiB],
        ["/1.1/users/import", 10 * MiB],
      ];
      for (const [path, limit] of routes) {
        for (const lie of ["", "Content-Length: 100\r\n"]) {
          await t.step(`${path}${lie ? ", Content-Length: 100" : ""}`, async () => {
            const head = `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
              `Authorization: Bearer ${token}\r\nContent-Type: text/csv\r\n${lie}` +
              "Transfer-Encoding: chunked\r\n\r\n";
            const { status, answer, written } = await endless(server.port, head, limit);
            if (lie) {
              // both framings: Deno's HTTP layer refuses the request itself (RFC 9112 §6.3 lets
              // a server), before any route, without reading the body
              assert.ok(status === 400 || status === 413, answer);
            } else {
              assert.equal(status, 413, answer);
              assert.match(answer, /PayloadTooLarge/);
            }
            assert.ok(written <= limit + SOCKET_BUFFERS, `${written} bytes sent before the 413`);
          });
        }
      }
      const health = await fetch(`${server.baseUrl}/health`);
      assert.equal(health.status, 200);
      await health.body?.cancel();
    } finally {
      await server.stop();
    }
  });
});

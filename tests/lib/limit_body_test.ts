/**
 * `limitBody` (`lib/http.ts`) reading bodies from a real `Deno.serve` connection: every byte
 * arrives, in order, whatever the size, with `Content-Length` or chunked, in large chunks or
 * one-byte ones; one byte over the limit is 413.
 */
import assert from "node:assert/strict";
import { Hono } from "hono";
import { ApiError } from "../../lib/errors.ts";
import { limitBody } from "../../lib/http.ts";

const LIMIT = 100 * 1024;

/** `size` bytes that differ from one place to the next, so that a lost or moved byte shows. */
const bytesOf = (size: number) =>
  Uint8Array.from({ length: size }, (_, i) => (i * 7 + i / 251) & 255);

async function digest(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toString();
}

/** A server answering the length and digest of the body `limitBody` read, or the error. */
async function withServer(fn: (base: string, port: number) => Promise<void>): Promise<void> {
  const app = new Hono();
  app.post("*", limitBody(() => LIMIT));
  app.post("*", async (c) => {
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    return c.json({ size: bytes.length, digest: await digest(bytes) });
  });
  app.onError((error, c) =>
    error instanceof ApiError
      ? c.json({ error: error.code }, error.status as 400)
      : c.json({ error: String(error) }, 500)
  );
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, app.fetch);
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`, server.addr.port);
  } finally {
    await server.shutdown();
  }
}

/** `bytes` as a stream of `chunk`-byte pieces: fetch sends it chunked, without a length. */
const streamOf = (bytes: Uint8Array, chunk: number) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += chunk) {
        controller.enqueue(bytes.slice(at, at + chunk));
      }
      controller.close();
    },
  });

const SIZES = [
  0,
  1,
  100,
  16 * 1024 - 1,
  16 * 1024,
  16 * 1024 + 1,
  65_536,
  70_000,
  LIMIT - 1,
  LIMIT,
];

Deno.test("limitBody: every body up to the limit arrives whole, with a length or chunked", async () => {
  await withServer(async (base) => {
    for (const size of SIZES) {
      const bytes = bytesOf(size);
      const expected = { size, digest: await digest(bytes) };
      const withLength = await fetch(base, { method: "POST", body: bytes });
      assert.deepEqual(await withLength.json(), expected, `${size} bytes with Content-Length`);
      for (const chunk of [65_536, 1000]) {
        const chunked = await fetch(base, { method: "POST", body: streamOf(bytes, chunk) });
        assert.deepEqual(await chunked.json(), expected, `${size} bytes in ${chunk}-byte chunks`);
      }
    }
  });
});

Deno.test("limitBody: one byte over the limit is 413, with a length or chunked", async () => {
  await withServer(async (base) => {
    for (const size of [LIMIT + 1, 3 * LIMIT]) {
      const bytes = bytesOf(size);
      const withLength = await fetch(base, { method: "POST", body: bytes });
      assert.equal(withLength.status, 413);
      assert.deepEqual(await withLength.json(), { error: "PayloadTooLarge" });
      const chunked = await fetch(base, { method: "POST", body: streamOf(bytes, 65_536) });
      assert.equal(chunked.status, 413, `${size} bytes chunked`);
      await chunked.body?.cancel();
    }
  });
});

Deno.test("limitBody: a chunked body of one-byte chunks on a raw connection", async () => {
  await withServer(async (_base, port) => {
    const bytes = bytesOf(300);
    const chunks = Array.from(bytes, (byte) => `1\r\n${String.fromCharCode(byte)}\r\n`).join("");
    const request = "POST / HTTP/1.1\r\nHost: svc.test\r\nConnection: close\r\n" +
      `Transfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`;
    const connection = await Deno.connect({ hostname: "127.0.0.1", port });
    // latin1: one byte per character
    await connection.write(Uint8Array.from(request, (char) => char.charCodeAt(0)));
    const answer = new TextDecoder().decode(await new Response(connection.readable).arrayBuffer());
    assert.match(answer, /^HTTP\/1\.1 200 /);
    const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
    assert.deepEqual(body, { size: 300, digest: await digest(bytes) });
  });
});

Deno.test("limitBody: a body that is no byte stream is read as it comes", async () => {
  const app = new Hono();
  app.post("*", limitBody(() => LIMIT));
  app.post("*", async (c) => c.json({ size: (await c.req.arrayBuffer()).byteLength }));
  app.onError((error, c) => c.json({ error: (error as ApiError).code }, 413));
  for (
    const [size, expected] of [[70_000, { size: 70_000 }], [LIMIT + 1, {
      error: "PayloadTooLarge",
    }]] as const
  ) {
    // a plain (not byte) stream: new Request keeps it as it is
    const request = new Request("http://svc.test/", {
      method: "POST",
      body: streamOf(bytesOf(size), 4096),
    });
    assert.deepEqual(await (await app.request(request)).json(), expected);
  }
});

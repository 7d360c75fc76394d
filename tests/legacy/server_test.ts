/**
 * End-to-end: the real server process, so the client address is the one `Deno.serve` reports for
 * the TCP peer (127.0.0.1 here), not one a test hands to the app.
 */
import assert from "node:assert/strict";
import { type RunningServer, startServer } from "../e2e/server.ts";

/** Starts the server with `env` on a fresh in-memory store, runs `fn`, always stops it. */
async function withServer(
  env: Record<string, string>,
  fn: (server: RunningServer) => Promise<void>,
) {
  const server = await startServer({ SVC_KV: ":memory:", ...env });
  try {
    await fn(server);
  } finally {
    const status = await server.stop();
    assert.equal(status.code, 0, server.stderrLines.join("\n"));
  }
}

const handshake = async (server: RunningServer, headers: Record<string, string> = {}) => {
  const response = await fetch(`${server.baseUrl}/svc/api/1.0/handshake/example.com/`, {
    method: "POST",
    headers,
  });
  return { status: response.status, body: await response.json() };
};

Deno.test("the real server allows 127.0.0.1 only when SVC_DEPRECATED_API_HOST lists it", async (t) => {
  await t.step("listed: 200", async () => {
    await withServer({ SVC_DEPRECATED_API_HOST: "127.0.0.1" }, async (server) => {
      assert.deepEqual(await handshake(server), { status: 200, body: { reposted: 0 } });
      // a forwarded address is ignored without SVC_TRUST_PROXY
      const forwarded = await handshake(server, { "X-Forwarded-For": "192.0.2.1" });
      assert.equal(forwarded.status, 200);
    });
  });

  await t.step("not listed (the default): 403 naming 127.0.0.1", async () => {
    await withServer({}, async (server) => {
      assert.deepEqual(await handshake(server), {
        status: 403,
        body: {
          error: "Forbidden",
          message:
            "client address 127.0.0.1 is not allowed on the 1.0 API (SVC_DEPRECATED_API_HOST)",
        },
      });
    });
  });

  await t.step("behind a trusted proxy: the last X-Forwarded-For hop", async () => {
    await withServer(
      { SVC_DEPRECATED_API_HOST: "192.0.2.1", SVC_TRUST_PROXY: "true" },
      async (server) => {
        assert.equal((await handshake(server)).status, 403);
        const forwarded = await handshake(server, { "X-Forwarded-For": "10.9.9.9, 192.0.2.1" });
        assert.deepEqual(forwarded, { status: 200, body: { reposted: 0 } });
      },
    );
  });
});

/**
 * End-to-end: two real server processes on one store file. A dial with an `Idempotency-Key` is
 * answered by the first; its retry reaches the second, which answers the same bytes without
 * dialling: the simulated PBX of each process shows one call in all.
 */
import assert from "node:assert/strict";
import { DEMO_USERS, DEMO_WEBSERVICE_USER } from "../../lib/demo.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";

const API = "/svc/api/2.0";

interface Answer {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
  text: string;
}

async function send(
  server: RunningServer,
  method: string,
  path: string,
  { body, headers = {} }: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const response = await fetch(server.baseUrl + path, {
    method,
    headers: body === undefined ? headers : { "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  return {
    status: response.status,
    headers: response.headers,
    bytes,
    text: new TextDecoder().decode(bytes),
  };
}

async function token(server: RunningServer, route: string, login: string, password: string) {
  const answer = await send(server, "POST", `${API}/auth/${route}`, { body: { login, password } });
  assert.equal(answer.status, 200, answer.text);
  return JSON.parse(answer.text).token as string;
}

Deno.test("two processes on one store file: a dial retried on the other process rings once", async () => {
  await withTempDir(async (dir) => {
    // phones ring for a minute: the call is still listed by its process's simulator
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true", SVC_SIM_ANSWER_MS: "60000" };
    const one = await startServer(env);
    let two: RunningServer | null = null;
    try {
      await one.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      two = await startServer(env);
      const alice = DEMO_USERS.find((user) => user.username === "alice")!;
      await token(one, "login", alice.username, alice.password); // alice is connected
      const ws = await token(
        one,
        "webservice",
        DEMO_WEBSERVICE_USER.login,
        DEMO_WEBSERVICE_USER.password,
      );
      const headers = {
        Authorization: `Bearer ${ws}`,
        "Idempotency-Key": `"${crypto.randomUUID()}"`,
      };
      const body = { destination: "0612345678", variables: { crmTicket: "T-42" } };

      const first = await send(one, "POST", `${API}/dial/number/alice`, { body, headers });
      assert.equal(first.status, 200, first.text);
      assert.equal(first.headers.get("idempotent-replayed"), null);
      // the client timed out and retries; its load balancer sends the retry to the other process
      const retry = await send(two, "POST", `${API}/dial/number/alice`, { body, headers });
      assert.equal(retry.status, 200, retry.text);
      assert.equal(retry.headers.get("idempotent-replayed"), "true");
      assert.equal(retry.headers.get("content-type"), first.headers.get("content-type"));
      assert.deepEqual(retry.bytes, first.bytes);

      const calls = async (server: RunningServer) => {
        const answer = await send(server, "GET", `${API}/sim/calls`, {
          headers: { Authorization: `Bearer ${ws}` },
        });
        assert.equal(answer.status, 200, answer.text);
        return JSON.parse(answer.text) as unknown[];
      };
      assert.equal((await calls(one)).length, 1, "the first process dialled");
      assert.equal((await calls(two)).length, 0, "the second did not");

      const other = await send(two, "POST", `${API}/dial/number/alice`, {
        body: { destination: "0699999999" },
        headers,
      });
      assert.equal(other.status, 422, other.text);
      assert.equal(JSON.parse(other.text).error, "IdempotencyKeyReused");
      assert.equal((await calls(two)).length, 0);
    } finally {
      const stopped = await Promise.all([one.stop(), two?.stop()]);
      for (const status of stopped) if (status) assert.equal(status.code, 0);
    }
  });
});

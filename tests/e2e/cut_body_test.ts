/**
 * Bodies cut short on a real connection to the real server process (issue 15): headers announcing
 * `Content-Length: 100` then 10 bytes (or a chunked body without its last chunk), the client then
 * half-closing, or staying a moment and going away. Every area answers 400 in its own form to a
 * client still reading, logs the request as a 400 when the client is gone, and never logs an
 * unhandled error; the server goes on serving.
 */
import assert from "node:assert/strict";
import { startServer, withTempDir } from "./server.ts";
import { halfClosed, login, sleep, V2 } from "./svc_http.ts";

/** Sends `request`, keeps the connection open `ms` without a byte more, then closes it. */
async function leftOpen(port: number, request: string, ms: number): Promise<void> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  await connection.write(new TextEncoder().encode(request));
  await sleep(ms);
  connection.close();
}

/** The status and JSON body of a raw HTTP/1.1 answer. */
function parse(answer: string): { status: number; body: unknown } {
  const status = Number(answer.match(/^HTTP\/1\.1 (\d{3}) /)?.[1]);
  return { status, body: JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4)) };
}

type Form = "service" | "confd" | "agentd" | "xivo";

const inForm = (form: Form, body: unknown): boolean => {
  const record = body as Record<string, unknown>;
  switch (form) {
    case "service":
      return record.error === "IncompleteBody" && typeof record.message === "string";
    case "confd":
      return Array.isArray(body) && /^Input Error - the request body/.test(String(body[0]));
    case "agentd":
      return Object.keys(record).join() === "error" && /request body/.test(String(record.error));
    case "xivo":
      return (record.reason as string[])?.[0] === "Invalid JSON body: the body was cut short";
  }
};

Deno.test("a body cut short on a real connection: 400 in every area's form, never a 500", async (t) => {
  await withTempDir(async (dir) => {
    const server = await startServer({
      SVC_KV: `${dir}/svc.kv`,
      SVC_DEMO: "true",
      SVC_ADMIN_LOGIN: "admin",
      SVC_ADMIN_PASSWORD: "admin-password",
      SVC_DEPRECATED_API_HOST: "127.0.0.1",
    });
    try {
      const ws = await login(server, "webservice", "admin", "admin-password");
      const cti = await login(server, "login", "alice", "alice-demo");
      const basic = `Basic ${btoa("alice:alice-demo")}`;
      const targets: [path: string, authorization: string, form: Form][] = [
        [`${V2}/dnd/alice`, `Bearer ${ws}`, "service"],
        [`${V2}/contact/personal`, `Bearer ${cti}`, "service"],
        [`${V2}/callback_lists/callback_requests/csv`, `Bearer ${ws}`, "service"],
        [`${V2}/auth/webservice`, "", "service"],
        ["/svc/api/1.0/dnd/site/alice/", "", "service"],
        ["/1.1/labels", `Bearer ${ws}`, "confd"],
        ["/agents/by-number/8001/login", `Bearer ${ws}`, "agentd"],
        ["/users/me/agents/login", `Bearer ${cti}`, "agentd"],
        ["/0.1/token", basic, "xivo"],
      ];
      const head = (path: string, authorization: string) =>
        `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
        (authorization ? `Authorization: ${authorization}\r\n` : "");

      await t.step("Content-Length 100, 10 bytes, then a half-close: 400", async () => {
        for (const [path, authorization, form] of targets) {
          const answer = await halfClosed(
            server.port,
            `${head(path, authorization)}Content-Length: 100\r\n\r\n{"state": `,
          );
          const { status, body } = parse(answer);
          assert.equal(status, 400, `${path}: ${answer}`);
          assert.ok(inForm(form, body), `${path}: ${answer}`);
        }
      });

      await t.step("a chunked body without its last chunk, then a half-close: 400", async () => {
        for (const [path, authorization, form] of targets) {
          const answer = await halfClosed(
            server.port,
            `${head(path, authorization)}Transfer-Encoding: chunked\r\n\r\na\r\n{"state": \r\n`,
          );
          const { status, body } = parse(answer);
          assert.equal(status, 400, `${path}: ${answer}`);
          assert.ok(inForm(form, body), `${path}: ${answer}`);
        }
      });

      await t.step("the client stays a moment then goes: logged as a 400", async () => {
        const before = server.stderrLines.length;
        await Promise.all(targets.map(([path, authorization]) =>
          leftOpen(
            server.port,
            `${head(path, authorization)}Content-Length: 100\r\n\r\n{"state": `,
            300,
          )
        ));
        const requestLine = (path: string) => (line: string) => {
          if (server.stderrLines.indexOf(line) < before) return false;
          const entry = JSON.parse(line);
          return entry.msg === "request" && entry.path === path;
        };
        for (const [path] of targets) {
          const line = await server.waitForLine("stderr", requestLine(path));
          assert.equal(JSON.parse(line).status, 400, line);
        }
      });

      await t.step("nothing unhandled in the log, and the server goes on", async () => {
        const health = await fetch(`${server.baseUrl}/health`);
        assert.equal(health.status, 200);
        await health.body?.cancel();
        const unhandled = server.stderrLines.filter((line) => line.includes("unhandled error"));
        assert.deepEqual(unhandled, []);
        // and nothing but the JSON log lines: no warning of the runtime either
        for (const line of server.stderrLines) assert.doesNotThrow(() => JSON.parse(line), line);
      });
    } finally {
      await server.stop();
    }
  });
});

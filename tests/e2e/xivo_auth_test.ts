/**
 * xivo-auth compatible tokens end to end (docs/xivo_auth.md): the real server process also
 * listening on `SVC_EXTRA_LISTEN`, a token from `/0.1/token` there used with `X-Auth-Token` on
 * `/1.1` through the main port, bodies cut short on a real connection, the token never in the log,
 * TLS on both addresses, and an address in use stopping the start with one line naming its setting.
 */
import assert from "node:assert/strict";
import { ensureDebianPackages, skipWithoutPackages } from "../peers/debian.ts";
import { freePort } from "../peers/process.ts";
import { type RunningServer, runServerToExit, startServer, withTempDir } from "./server.ts";
import { expectStatus, halfClosed, login } from "./svc_http.ts";

const basic = (login: string, password: string) => `Basic ${btoa(`${login}:${password}`)}`;

/** The port of the `also listening` log line (the extra address). */
async function extraPort(server: RunningServer): Promise<number> {
  const line = await server.waitForLine("stderr", (line) => line.includes('"also listening"'));
  const entry = JSON.parse(line);
  assert.equal(entry.setting, "SVC_EXTRA_LISTEN");
  return entry.port;
}

/** True when nothing accepts connections on 127.0.0.1:`port`. */
async function refused(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return false;
  } catch (error) {
    return error instanceof Deno.errors.ConnectionRefused;
  }
}

Deno.test("a token from /0.1/token on the extra port works on /1.1 through the main port", async (t) => {
  await withTempDir(async (dir) => {
    const wanted = freePort();
    const server = await startServer({
      SVC_KV: `${dir}/svc.kv`,
      SVC_ADMIN_LOGIN: "admin",
      SVC_ADMIN_PASSWORD: "admin-password",
      SVC_EXTRA_LISTEN: `127.0.0.1:${wanted}`,
      // a zone without daylight saving time, half an hour off: local times are easy to check
      TZ: "Asia/Kolkata",
    });
    const tokens: string[] = [];
    let port = 0;
    try {
      await t.step("the server also listens on SVC_EXTRA_LISTEN", async () => {
        port = await extraPort(server);
        assert.equal(port, wanted);
        assert.notEqual(port, server.port);
      });

      const admin = await login(server, "webservice", "admin", "admin-password");
      await expectStatus(201, server, "POST", "/1.1/webservice_users", {
        token: admin,
        body: { login: "crm", password: "crm-secret", acls: ["confd.users.read"] },
      });

      await t.step("POST /0.1/token there, as xivo-auth's clients do", async () => {
        const response = await fetch(`http://127.0.0.1:${port}/0.1/token`, {
          method: "POST",
          headers: {
            Authorization: basic("crm", "crm-secret"),
            Accept: "application/json",
            "Content-Type": "application/json",
          },
          body: '{"backend": "xivo_service", "expiration": 3600}',
        });
        assert.equal(response.status, 200);
        const { data } = await response.json();
        tokens.push(data.token);
        assert.deepEqual(data.acls, ["confd.users.read"]);
        // the server's local time is the zone's: 5 h 30 ahead of UTC
        const local = Date.parse(`${data.issued_at}Z`);
        assert.equal(local - Date.parse(`${data.utc_issued_at}Z`), 5.5 * 3_600_000);
        assert.equal(
          Date.parse(`${data.utc_expires_at}Z`) - Date.parse(`${data.utc_issued_at}Z`),
          3_600_000,
        );
      });

      await t.step("X-Auth-Token on /1.1 through the main port", async () => {
        const headers = { "X-Auth-Token": tokens[0]! };
        const users = await fetch(`${server.baseUrl}/1.1/users`, { headers });
        assert.equal(users.status, 200);
        assert.equal((await users.json()).total, 0);
        const lines = await fetch(`${server.baseUrl}/1.1/lines`, { headers });
        assert.equal(lines.status, 403);
        await lines.body?.cancel();
      });

      await t.step("HEAD /0.1/token/{token} on either port", async () => {
        for (const base of [server.baseUrl, `http://127.0.0.1:${port}`]) {
          const valid = await fetch(`${base}/0.1/token/${tokens[0]}`, { method: "HEAD" });
          assert.equal(valid.status, 204);
          const scoped = await fetch(`${base}/0.1/token/${tokens[0]}?scope=confd.lines.read`, {
            method: "HEAD",
          });
          assert.equal(scoped.status, 403);
          const forged = await fetch(`${base}/0.1/token/${tokens[0]}x`, { method: "HEAD" });
          assert.equal(forged.status, 404);
        }
      });

      await t.step("a body cut short on a real connection: 400 in xivo-auth's form", async () => {
        const head = `POST /0.1/token HTTP/1.1\r\nHost: 127.0.0.1\r\n` +
          `Authorization: ${basic("crm", "crm-secret")}\r\nContent-Type: application/json\r\n`;
        const cuts = [
          `${head}Content-Length: 50\r\n\r\n{"backend": "xivo_serv`,
          `${head}Transfer-Encoding: chunked\r\n\r\n16\r\n{"backend": "xivo_serv\r\n`,
        ];
        for (const request of cuts) {
          const answer = await halfClosed(port, request);
          assert.match(answer, /^HTTP\/1\.1 400 /, answer);
          const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
          assert.deepEqual(body.reason, ["Invalid JSON body: the body was cut short"]);
          assert.equal(body.status_code, 400);
        }
      });

      await t.step("wrong credentials: 401 Authentication Failed", async () => {
        const response = await fetch(`http://127.0.0.1:${port}/0.1/token`, {
          method: "POST",
          headers: { Authorization: basic("crm", "wrong"), "Content-Type": "application/json" },
          body: '{"backend": "xivo_service"}',
        });
        assert.equal(response.status, 401);
        assert.deepEqual((await response.json()).reason, ["Authentication Failed"]);
      });
    } finally {
      await server.stop();
    }

    await t.step("the extra address closes with the main one", async () => {
      assert.ok(await refused(port), "the extra port still accepts connections");
      assert.ok(await refused(server.port), "the main port still accepts connections");
    });

    await t.step("the token never reaches the log, not even from the path", () => {
      const all = server.stderrLines.join("\n");
      assert.ok(!all.includes(tokens[0]!.split(".")[2]!), "a token reached stderr");
      assert.ok(all.includes('"path":"/0.1/token/<token>"'));
      assert.ok(!all.includes("crm-secret"));
    });
  });
});

const OPENSSL_WHY = "openssl, to make the test certificate";
const noOpenssl = await skipWithoutPackages(["openssl"], OPENSSL_WHY);

Deno.test("with SVC_TLS_*, the extra address is served over HTTPS too", {
  ignore: noOpenssl,
}, async () => {
  await ensureDebianPackages(["openssl"], OPENSSL_WHY);
  await withTempDir(async (dir) => {
    const cert = `${dir}/cert.pem`;
    const key = `${dir}/key.pem`;
    const made = await new Deno.Command("openssl", {
      args: [
        ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
        ...["-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        ...["-addext", "basicConstraints=critical,CA:FALSE", "-keyout", key, "-out", cert],
      ],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.ok(made.success, new TextDecoder().decode(made.stderr));
    const server = await startServer({
      SVC_KV: `${dir}/svc.kv`,
      SVC_TLS_CERT: cert,
      SVC_TLS_KEY: key,
      SVC_EXTRA_LISTEN: `127.0.0.1:${freePort()}`,
    });
    const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert)] });
    try {
      const line = await server.waitForLine("stderr", (line) => line.includes('"also listening"'));
      const { port, scheme } = JSON.parse(line);
      assert.equal(scheme, "https");
      const response = await fetch(`https://127.0.0.1:${port}/0.1/backends`, { client });
      assert.deepEqual(await response.json(), { data: ["xivo_service", "xivo_user"] });
      await assert.rejects(fetch(`http://127.0.0.1:${port}/0.1/backends`));
    } finally {
      client.close();
      await server.stop();
    }
  });
});

Deno.test("an address in use stops the start with one line naming its setting", async (t) => {
  await withTempDir(async (dir) => {
    const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const { port } = taken.addr as Deno.NetAddr;
    try {
      /** The process exits 1, its last stderr line (after JSON log lines) saying why. */
      const lastLine = async (env: Record<string, string>) => {
        const result = await runServerToExit({ SVC_KV: `${dir}/svc.kv`, ...env });
        assert.equal(result.code, 1, result.stderr);
        const lines = result.stderr.trimEnd().split("\n");
        assert.ok(lines.slice(0, -1).every((line) => line.startsWith("{")), result.stderr);
        return lines.at(-1)!;
      };
      await t.step("SVC_EXTRA_LISTEN", async () => {
        assert.match(
          await lastLine({ SVC_EXTRA_LISTEN: `127.0.0.1:${port}` }),
          new RegExp(
            `^svc: cannot listen on 127\\.0\\.0\\.1:${port} \\(SVC_EXTRA_LISTEN\\): .*in use`,
            "i",
          ),
        );
      });
      await t.step("the main address too", async () => {
        assert.match(
          await lastLine({ SVC_PORT: String(port) }),
          new RegExp(
            `^svc: cannot listen on 127\\.0\\.0\\.1:${port} \\(SVC_HOSTNAME/SVC_PORT\\): .*in use`,
            "i",
          ),
        );
      });
    } finally {
      taken.close();
    }
  });
});

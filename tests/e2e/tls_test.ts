/**
 * HTTPS (decisions §9): with `SVC_TLS_CERT`/`SVC_TLS_KEY` the real server serves the whole app
 * over TLS with that certificate, a throw-away self-signed one made by `openssl` here; plain HTTP
 * to its port gets no answer. Files it cannot read or use stop it with one line naming them.
 */
import assert from "node:assert/strict";
import { ensureDebianPackages, skipWithoutPackages } from "../peers/debian.ts";
import { runServerToExit, startServer, withTempDir } from "./server.ts";

const OPENSSL_WHY = "openssl, to make the test certificates";
const noOpenssl = await skipWithoutPackages(["openssl"], OPENSSL_WHY);

/** A self-signed certificate for 127.0.0.1 and localhost, valid one day: `{cert, key}` paths. */
async function selfSigned(dir: string, name = "svc"): Promise<{ cert: string; key: string }> {
  await ensureDebianPackages(["openssl"], OPENSSL_WHY);
  const paths = { cert: `${dir}/${name}-cert.pem`, key: `${dir}/${name}-key.pem` };
  const output = await new Deno.Command("openssl", {
    args: [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-addext", // a server's certificate, not a CA's (which a client refuses as the server's)
      "basicConstraints=critical,CA:FALSE",
      "-keyout",
      paths.key,
      "-out",
      paths.cert,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.ok(output.success, new TextDecoder().decode(output.stderr));
  return paths;
}

Deno.test("SVC_TLS_CERT/SVC_TLS_KEY: the whole app over HTTPS, /agents with a token", {
  ignore: noOpenssl,
}, async (t) => {
  await withTempDir(async (dir) => {
    const { cert, key } = await selfSigned(dir);
    const server = await startServer({
      SVC_KV: `${dir}/svc.kv`,
      SVC_TLS_CERT: cert,
      SVC_TLS_KEY: key,
      SVC_ADMIN_LOGIN: "admin",
      SVC_ADMIN_PASSWORD: "admin-password",
    });
    const client = Deno.createHttpClient({ caCerts: [await Deno.readTextFile(cert)] });
    const base = `https://127.0.0.1:${server.port}`;
    const request = async (path: string, init: RequestInit = {}) => {
      const response = await fetch(`${base}${path}`, { ...init, client });
      return { status: response.status, body: await response.json() };
    };
    try {
      await t.step("the listening line says https", async () => {
        const line = await server.waitForLine("stderr", (line) => line.includes('"listening"'));
        assert.equal(JSON.parse(line).scheme, "https");
      });
      await t.step("the 2.0 API and /agents answer over HTTPS", async () => {
        assert.deepEqual(await request("/health"), { status: 200, body: { status: "ok" } });
        const login = await request("/svc/api/2.0/auth/webservice", {
          method: "POST",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ login: "admin", password: "admin-password" }),
        });
        assert.equal(login.status, 200);
        const headers = { Authorization: `Bearer ${login.body.token}` };
        assert.deepEqual(await request("/agents", { headers }), { status: 200, body: [] });
        assert.deepEqual(await request("/agents"), {
          status: 401,
          body: { error: "invalid token or unauthorized" },
        });
      });
      await t.step("a client that does not trust the certificate is refused", async () => {
        await assert.rejects(fetch(`${base}/health`));
      });
      await t.step("plain HTTP to the same port gets no answer", async () => {
        await assert.rejects(fetch(`http://127.0.0.1:${server.port}/health`));
      });
    } finally {
      client.close();
      await server.stop();
    }
  });
});

/** Asserts the server stopped at start-up with one stderr line starting with `start`. */
function assertRefused(result: { code: number; stderr: string }, start: string) {
  assert.equal(result.code, 1, result.stderr);
  const lines = result.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `one line on stderr, got:\n${result.stderr}`);
  assert.ok(lines[0]!.startsWith(start), lines[0]!);
}

Deno.test("start-up refuses TLS files it cannot read or use, naming the setting", {
  ignore: noOpenssl,
}, async (t) => {
  await withTempDir(async (dir) => {
    const { cert, key } = await selfSigned(dir);
    const other = await selfSigned(dir, "other");
    const refused = (env: Record<string, string>) =>
      runServerToExit({ SVC_KV: `${dir}/svc.kv`, ...env });

    await t.step("a certificate file that does not exist", async () => {
      const result = await refused({ SVC_TLS_CERT: `${dir}/missing.pem`, SVC_TLS_KEY: key });
      assertRefused(
        result,
        `svc: invalid configuration: SVC_TLS_CERT: cannot read "${dir}/missing.pem"`,
      );
    });
    await t.step("a key file that cannot be read", async () => {
      const result = await refused({ SVC_TLS_CERT: cert, SVC_TLS_KEY: dir });
      assertRefused(result, `svc: invalid configuration: SVC_TLS_KEY: cannot read "${dir}"`);
    });
    await t.step("files that hold no certificate, no key", async () => {
      const noCert = await refused({ SVC_TLS_CERT: key, SVC_TLS_KEY: key });
      assertRefused(noCert, `svc: invalid configuration: SVC_TLS_CERT: "${key}" holds no PEM`);
      const noKey = await refused({ SVC_TLS_CERT: cert, SVC_TLS_KEY: cert });
      assertRefused(noKey, `svc: invalid configuration: SVC_TLS_KEY: "${cert}" holds no PEM`);
    });
    await t.step("the key of another certificate", async () => {
      // found only when the server starts listening: the last line
      const result = await refused({ SVC_TLS_CERT: cert, SVC_TLS_KEY: other.key });
      assert.equal(result.code, 1, result.stderr);
      const last = result.stderr.trimEnd().split("\n").at(-1)!;
      assert.match(last, /^svc: invalid configuration: SVC_TLS_CERT\/SVC_TLS_KEY: /);
    });
    await t.step("one setting without the other", async () => {
      const result = await refused({ SVC_TLS_CERT: cert });
      assertRefused(result, "svc: invalid configuration: SVC_TLS_KEY: ");
    });
  });
});

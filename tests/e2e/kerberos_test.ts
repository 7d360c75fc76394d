/**
 * End-to-end: Kerberos single sign-on (`GET /auth/sso`) of the real server process against a real
 * MIT KDC on 127.0.0.1 (`tests/peers/kdc.ts`), with `curl --negotiate` as the browser. The demo
 * data set provides the CTI user alice; `nobody` is a principal without a CTI user.
 */
import assert from "node:assert/strict";
import { ensureDebianPackages, skipWithoutPackages } from "../peers/debian.ts";
import { KDC_PACKAGES, startKdc } from "../peers/kdc.ts";
import { type RunningServer, startServer, withTempDir } from "./server.ts";

const API = "/svc/api/2.0";
const SPN = "HTTP/localhost";

interface Answer {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  body: any;
}

async function get(
  server: RunningServer,
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await fetch(server.baseUrl + path, { headers });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) };
}

interface CurlAnswer {
  status: number;
  // deno-lint-ignore no-explicit-any
  body: any;
  /** The `Authorization` header curl sent last, if any. */
  authorization: string | null;
  /** The `WWW-Authenticate` header of the last answer, if any. */
  wwwAuthenticate: string | null;
}

/**
 * `curl --negotiate -u :` to `http://<host>:<port><path>` with `env`'s credential cache; `host`
 * resolves to 127.0.0.1 only, and names the service principal `HTTP/<host>`.
 */
async function negotiate(
  server: RunningServer,
  env: Record<string, string>,
  path = `${API}/auth/sso`,
  host = "localhost",
): Promise<CurlAnswer> {
  const output = await new Deno.Command("curl", {
    args: [
      "-sS",
      "-v",
      "--negotiate",
      "-u",
      ":",
      "--noproxy",
      "*",
      "--resolve",
      `${host}:${server.port}:127.0.0.1`,
      "-w",
      "\n%{http_code}",
      `http://${host}:${server.port}${path}`,
    ],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  const stdout = decoder.decode(output.stdout);
  const verbose = decoder.decode(output.stderr);
  assert.ok(output.success, `curl failed:\n${verbose}`);
  const newline = stdout.lastIndexOf("\n");
  const lastHeader = (prefix: string) =>
    verbose.split(/\r?\n/).filter((line) => line.toLowerCase().startsWith(prefix)).at(-1)
      ?.slice(prefix.length).trim() ?? null;
  return {
    status: Number(stdout.slice(newline + 1)),
    body: JSON.parse(stdout.slice(0, newline)),
    authorization: lastHeader("> authorization:"),
    wwwAuthenticate: lastHeader("< www-authenticate:"),
  };
}

const KDC_WHY = "a real Kerberos KDC and curl --negotiate for the Kerberos single sign-on test";
const noKdc = await skipWithoutPackages(KDC_PACKAGES, KDC_WHY);

Deno.test("Kerberos single sign-on through a real KDC and curl --negotiate", {
  ignore: noKdc,
}, async (t) => {
  await ensureDebianPackages(KDC_PACKAGES, KDC_WHY);
  const started = performance.now();
  const kdc = await startKdc({
    users: { alice: "alice-krb-pw", nobody: "nobody-krb-pw" },
    services: [SPN, "HTTP/elsewhere.test"],
  });
  console.log(`KDC peer started in ${((performance.now() - started) / 1000).toFixed(2)} s`);
  try {
    const keytab = await kdc.writeKeytab("http.keytab", [SPN]); // not HTTP/elsewhere.test
    const alice = await kdc.kinit("alice", "alice-krb-pw");
    const nobody = await kdc.kinit("nobody", "nobody-krb-pw");
    await withTempDir(async (dir) => {
      const server = await startServer({
        SVC_KV: `${dir}/svc.kv`,
        SVC_DEMO: "true",
        SVC_KRB5_KEYTAB: keytab,
        ...kdc.env,
      });
      try {
        await server.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
        let aliceAuthorization = "";

        await t.step("alice logs in with her ticket, with mutual authentication", async () => {
          const answer = await negotiate(server, alice);
          assert.equal(answer.status, 200, JSON.stringify(answer.body));
          assert.equal(answer.body.login, "alice");
          assert.equal(typeof answer.body.token, "string");
          assert.ok(answer.body.TTL > 0);
          assert.match(answer.wwwAuthenticate ?? "", /^Negotiate [A-Za-z0-9+/]+=*$/);
          assert.match(answer.authorization ?? "", /^Negotiate [A-Za-z0-9+/]+=*$/);
          aliceAuthorization = answer.authorization!;
          const check = await get(server, `${API}/auth/check`, {
            Authorization: `Bearer ${answer.body.token}`,
          });
          assert.equal(check.status, 200);
          assert.equal(check.body.login, "alice");
        });

        await t.step("the same token a second time is a replay", async () => {
          const answer = await get(server, `${API}/auth/sso`, {
            Authorization: aliceAuthorization,
          });
          assert.equal(answer.status, 401);
          assert.equal(answer.body.error, "SsoAuthenticationFailed");
          assert.match(answer.body.message, /replay/i);
        });

        await t.step("a principal without a CTI user is UserNotFound", async () => {
          const answer = await negotiate(server, nobody);
          assert.equal(answer.status, 401);
          assert.equal(answer.body.error, "UserNotFound");
        });

        await t.step("a ticket for a service the keytab does not hold fails", async () => {
          const answer = await negotiate(server, alice, `${API}/auth/sso`, "elsewhere.test");
          assert.equal(answer.status, 401);
          assert.equal(answer.body.error, "SsoAuthenticationFailed");
          assert.ok(answer.authorization, "curl offered a ticket");
        });

        await t.step("garbage tokens fail with SsoAuthenticationFailed", async () => {
          for (const token of ["abc", "YIIB", "!!!not-base64", "A".repeat(40_000)]) {
            const answer = await get(server, `${API}/auth/sso`, {
              Authorization: `Negotiate ${token}`,
            });
            assert.equal(answer.status, 401, token.slice(0, 20));
            assert.equal(answer.body.error, "SsoAuthenticationFailed");
          }
        });

        await t.step("no token asks for one", async () => {
          const answer = await get(server, `${API}/auth/sso`);
          assert.equal(answer.status, 401);
          assert.equal(answer.body.error, "SsoAuthenticationFailed");
          assert.equal(answer.headers.get("www-authenticate"), "Negotiate");
        });
      } finally {
        await server.stop();
      }
      assert.ok(!server.stderrLines.some((line) => line.includes("unhandled error")));
    });
  } finally {
    await kdc.stop();
  }
});

Deno.test("Kerberos single sign-on fails without a usable keytab", async (t) => {
  await withTempDir(async (dir) => {
    for (
      const [name, env] of [
        ["without SVC_KRB5_KEYTAB", {}],
        ["with a keytab that does not exist", { SVC_KRB5_KEYTAB: `${dir}/missing.keytab` }],
      ] as const
    ) {
      await t.step(name, async () => {
        const server = await startServer({ SVC_KV: `${dir}/svc.kv`, ...env });
        try {
          const answer = await get(server, `${API}/auth/sso`, { Authorization: "Negotiate YIIB" });
          assert.equal(answer.status, 401);
          assert.equal(answer.body.error, "SsoAuthenticationFailed");
          if ("SVC_KRB5_KEYTAB" in env) assert.match(answer.body.message, /keytab/);
        } finally {
          await server.stop();
        }
      });
    }
  });
});

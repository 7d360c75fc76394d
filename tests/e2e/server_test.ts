/**
 * End-to-end: the real server process on a temporary store file — logins, token renewal, restarts
 * on the same store, configuration errors, the demo data set and the request log.
 */
import assert from "node:assert/strict";
import { type RunningServer, runServerToExit, startServer, withTempDir } from "./server.ts";

const API = "/svc/api/2.0";

interface Answer {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  body: any;
}

/** Sends a request and reads the whole JSON answer (so no body is left open). */
async function call(
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
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === "" ? null : JSON.parse(text),
  };
}

const login = (
  server: RunningServer,
  route: "login" | "webservice",
  login: string,
  password: string,
) => call(server, "POST", `${API}/auth/${route}`, { body: { login, password } });

const check = (server: RunningServer, token: string, headers: Record<string, string> = {}) =>
  call(server, "GET", `${API}/auth/check`, {
    headers: { Authorization: `Bearer ${token}`, ...headers },
  });

/** Starts the server with `env`, runs `fn`, and always stops it; answers the server. */
async function withServer(
  env: Record<string, string>,
  fn: (server: RunningServer) => Promise<void>,
): Promise<RunningServer> {
  const server = await startServer(env);
  try {
    await fn(server);
  } finally {
    const status = await server.stop();
    // SIGTERM is a clean stop: requests finished, the store closed, exit code 0
    assert.equal(status.code, 0, server.stderrLines.join("\n"));
  }
  return server;
}

function assertTokenAnswer(answer: Answer, login: string, ttl: number): string {
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  assert.deepEqual(Object.keys(answer.body).sort(), ["TTL", "login", "token"]);
  assert.equal(answer.body.login, login);
  assert.equal(answer.body.TTL, ttl);
  assert.equal(typeof answer.body.token, "string");
  assert.match(answer.body.token, /^[\w-]+\.[\w-]+\.[\w-]+$/);
  return answer.body.token;
}

Deno.test("admin logs in, renews its token, and the token survives a restart on the same store", async () => {
  await withTempDir(async (dir) => {
    const env = {
      SVC_KV: `${dir}/svc.kv`,
      SVC_ADMIN_LOGIN: "admin",
      SVC_ADMIN_PASSWORD: "first-admin-password",
    };
    let token = "";
    await withServer(env, async (server) => {
      const answer = await login(server, "webservice", "admin", "first-admin-password");
      token = assertTokenAnswer(answer, "admin", 7200);
      assert.ok(answer.headers.get("x-request-id"), "X-Request-Id on the login answer");

      const renewed = await check(server, token, { "X-Request-Id": "e2e-check-1" });
      const newToken = assertTokenAnswer(renewed, "admin", 7200);
      assert.notEqual(newToken, token);
      assert.equal(renewed.headers.get("x-request-id"), "e2e-check-1");

      const missing = await call(server, "GET", `${API}/auth/check`);
      assert.equal(missing.status, 400);
      assert.equal(missing.body.error, "AuthorizationHeaderNotFound");
      assert.ok(missing.headers.get("x-request-id"), "X-Request-Id on an error answer");
    });

    // No SVC_JWT_SECRET: the secret generated at the first start is kept in the store.
    await withServer(env, async (server) => {
      assertTokenAnswer(await check(server, token), "admin", 7200);
    });

    // A restart with another SVC_ADMIN_PASSWORD resets the admin's password.
    await withServer({ ...env, SVC_ADMIN_PASSWORD: "second-admin-password" }, async (server) => {
      const old = await login(server, "webservice", "admin", "first-admin-password");
      assert.equal(old.status, 401);
      assert.equal(old.body.error, "InvalidCredentials");
      const answer = await login(server, "webservice", "admin", "second-admin-password");
      assertTokenAnswer(answer, "admin", 7200);
      assertTokenAnswer(await check(server, token), "admin", 7200);
    });
  });
});

const SHORT_SECRET = "tiny-jwt-secret-value";

const badSettings: { name: string; env: Record<string, string>; setting: string }[] = [
  { name: "SVC_PORT=abc", env: { SVC_PORT: "abc" }, setting: "SVC_PORT" },
  { name: "SVC_TOKEN_TTL=0", env: { SVC_TOKEN_TTL: "0" }, setting: "SVC_TOKEN_TTL" },
  { name: "SVC_LOG_LEVEL=loud", env: { SVC_LOG_LEVEL: "loud" }, setting: "SVC_LOG_LEVEL" },
  {
    name: "a short SVC_JWT_SECRET",
    env: { SVC_JWT_SECRET: SHORT_SECRET },
    setting: "SVC_JWT_SECRET",
  },
  {
    name: "SVC_ADMIN_LOGIN without SVC_ADMIN_PASSWORD",
    env: { SVC_ADMIN_LOGIN: "admin" },
    setting: "SVC_ADMIN_PASSWORD",
  },
];

for (const { name, env, setting } of badSettings) {
  Deno.test(`start-up refuses ${name}`, async () => {
    await withTempDir(async (dir) => {
      const result = await runServerToExit({ SVC_KV: `${dir}/svc.kv`, ...env });
      assertConfigRefused(result, setting);
    });
  });
}

function assertConfigRefused(result: { code: number; stderr: string }, setting: string) {
  assert.equal(result.code, 1, result.stderr);
  const lines = result.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `one line on stderr, got:\n${result.stderr}`);
  assert.ok(
    lines[0]!.startsWith(`svc: invalid configuration: ${setting}: `),
    `stderr names ${setting}: ${lines[0]}`,
  );
  assert.ok(!result.stderr.includes(SHORT_SECRET), "the JWT secret is never echoed");
}

Deno.test("start-up refuses an SVC_CONFIG file that is not JSON", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.json`;
    await Deno.writeTextFile(file, "SVC_TOKEN_TTL = 60\n");
    const result = await runServerToExit({ SVC_KV: `${dir}/svc.kv`, SVC_CONFIG: file });
    assertConfigRefused(result, "SVC_CONFIG");
    assert.match(result.stderr, /is not valid JSON/);
  });
});

Deno.test("start-up refuses an SVC_CONFIG file with an unknown setting", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.json`;
    await Deno.writeTextFile(file, JSON.stringify({ SVC_TOKEN_TTL: 60, SVC_COLOUR: "blue" }));
    const result = await runServerToExit({ SVC_KV: `${dir}/svc.kv`, SVC_CONFIG: file });
    assertConfigRefused(result, "SVC_CONFIG");
    assert.match(result.stderr, /unknown setting "SVC_COLOUR"/);
  });
});

Deno.test("start-up refuses a bad value in the SVC_CONFIG file, naming its setting", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.json`;
    await Deno.writeTextFile(file, JSON.stringify({ SVC_JWT_SECRET: SHORT_SECRET }));
    const result = await runServerToExit({ SVC_KV: `${dir}/svc.kv`, SVC_CONFIG: file });
    assertConfigRefused(result, "SVC_JWT_SECRET");
  });
});

Deno.test("an SVC_CONFIG file is honoured and the environment wins over it", async () => {
  await withTempDir(async (dir) => {
    const file = `${dir}/svc.json`;
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        SVC_TOKEN_TTL: 60,
        SVC_ADMIN_LOGIN: "file-admin",
        SVC_ADMIN_PASSWORD: "password-from-file",
        SVC_LOG_LEVEL: "debug",
      }),
    );
    const env = {
      SVC_KV: `${dir}/svc.kv`,
      SVC_CONFIG: file,
      SVC_ADMIN_PASSWORD: "password-from-env",
      SVC_LOG_LEVEL: "info",
    };
    await withServer(env, async (server) => {
      const fromFile = await login(server, "webservice", "file-admin", "password-from-file");
      assert.equal(fromFile.status, 401);
      const answer = await login(server, "webservice", "file-admin", "password-from-env");
      const token = assertTokenAnswer(answer, "file-admin", 60);
      assertTokenAnswer(await check(server, token), "file-admin", 60);
    });
    await withServer({ ...env, SVC_TOKEN_TTL: "90" }, async (server) => {
      const answer = await login(server, "webservice", "file-admin", "password-from-env");
      assertTokenAnswer(answer, "file-admin", 90);
    });
  });
});

/** The password printed for `username` in the demo banner. */
async function demoPassword(server: RunningServer, username: string): Promise<string> {
  const pattern = new RegExp(`^\\s+${username} / (\\S+)$`);
  const line = await server.waitForLine("stdout", (line) => pattern.test(line));
  return line.match(pattern)![1]!;
}

/** Counts the records under `prefix` in the store file (the server must be stopped). */
async function countRecords(path: string, prefix: string): Promise<number> {
  const kv = await Deno.openKv(path);
  try {
    return (await Array.fromAsync(kv.list({ prefix: [prefix] }))).length;
  } finally {
    kv.close();
  }
}

Deno.test("the demo prints its logins, alice logs in, and a second start adds no user", async () => {
  await withTempDir(async (dir) => {
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true" };
    const first = await withServer(env, async (server) => {
      await server.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      const password = await demoPassword(server, "alice");
      assertTokenAnswer(await login(server, "login", "alice", password), "alice", 7200);
    });
    assert.ok(first.stderrLines.some((line) => JSON.parse(line).msg === "demo data set loaded"));
    const users = await countRecords(`${dir}/svc.kv`, "users");
    const webServiceUsers = await countRecords(`${dir}/svc.kv`, "webservice_users");
    assert.ok(users >= 2, `the demo has users, found ${users}`);

    const second = await withServer(env, async (server) => {
      const password = await demoPassword(server, "alice");
      assertTokenAnswer(await login(server, "login", "alice", password), "alice", 7200);
      const bob = await demoPassword(server, "bob");
      assertTokenAnswer(await login(server, "login", "bob", bob), "bob", 7200);
    });
    const levels = second.stderrLines.map((line) => JSON.parse(line));
    assert.ok(!levels.some((entry) => entry.msg === "demo data set loaded"));
    assert.deepEqual(levels.filter((entry) => entry.level === "error"), []);
    assert.equal(await countRecords(`${dir}/svc.kv`, "users"), users);
    assert.equal(await countRecords(`${dir}/svc.kv`, "webservice_users"), webServiceUsers);
  });
});

Deno.test("a first start without an administrator says which settings create one, once it has one not", async () => {
  await withTempDir(async (dir) => {
    const hint = (line: string) => JSON.parse(line).msg.includes("set SVC_ADMIN_LOGIN and");
    const bare = await withServer({ SVC_KV: `${dir}/svc.kv` }, async () => {});
    const warning = bare.stderrLines.find(hint);
    assert.ok(warning, bare.stderrLines.join("\n"));
    assert.equal(JSON.parse(warning).level, "warn");
    const admin = { SVC_ADMIN_LOGIN: "admin", SVC_ADMIN_PASSWORD: "admin-password-1" };
    const withAdmin = await withServer({ SVC_KV: `${dir}/svc.kv`, ...admin }, async () => {});
    const again = await withServer({ SVC_KV: `${dir}/svc.kv` }, async () => {});
    assert.ok(!withAdmin.stderrLines.some(hint) && !again.stderrLines.some(hint));
  });
});

Deno.test("stderr holds JSON request log lines and never a password or a token", async () => {
  await withTempDir(async (dir) => {
    const password = "log-test-password-0123";
    const wrongPassword = "log-test-wrong-password-4567";
    const tokens: string[] = [];
    const server = await withServer(
      { SVC_KV: `${dir}/svc.kv`, SVC_ADMIN_LOGIN: "admin", SVC_ADMIN_PASSWORD: password },
      async (server) => {
        const failed = await login(server, "webservice", "admin", wrongPassword);
        assert.equal(failed.status, 401);
        const answer = await login(server, "webservice", "admin", password);
        tokens.push(assertTokenAnswer(answer, "admin", 7200));
        const renewed = await check(server, tokens[0]!);
        tokens.push(assertTokenAnswer(renewed, "admin", 7200));
        // A token in a query string must not reach the log either: only the path is logged.
        const query = await call(server, "GET", `${API}/auth/check?token=${tokens[1]}`, {
          headers: { "X-Auth-Token": tokens[1]! },
        });
        tokens.push(assertTokenAnswer(query, "admin", 7200));
        const notFound = await call(server, "GET", `/nowhere/${"x".repeat(8)}`);
        assert.equal(notFound.status, 404);
      },
    );

    const entries = server.stderrLines.map((line) => {
      const entry = JSON.parse(line);
      assert.equal(typeof entry, "object", line);
      assert.ok(entry !== null && !Array.isArray(entry), line);
      return entry;
    });
    const requests = entries.filter((entry) => entry.msg === "request");
    assert.equal(requests.length, 5);
    for (const entry of requests) {
      assert.equal(typeof entry.method, "string");
      assert.equal(typeof entry.path, "string");
      assert.ok(entry.path.startsWith("/"));
      assert.equal(typeof entry.status, "number");
      assert.equal(typeof entry.durationMs, "number");
      assert.equal(typeof entry.requestId, "string");
      assert.ok(entry.requestId.length > 0);
    }
    assert.deepEqual(
      requests.map(({ method, path, status }) => [method, path, status]),
      [
        ["POST", `${API}/auth/webservice`, 401],
        ["POST", `${API}/auth/webservice`, 200],
        ["GET", `${API}/auth/check`, 200],
        ["GET", `${API}/auth/check`, 200],
        ["GET", "/nowhere/xxxxxxxx", 404],
      ],
    );
    const all = server.stderrLines.join("\n");
    for (const secret of [password, wrongPassword, ...tokens]) {
      assert.ok(!all.includes(secret), "a password or a token reached stderr");
    }
    // Not even a token's signature alone.
    for (const token of tokens) assert.ok(!all.includes(token.split(".")[2]!));
  });
});

Deno.test("two processes on one store file: a contact made through one is listed by the other within a second", async () => {
  await withTempDir(async (dir) => {
    const env = { SVC_KV: `${dir}/svc.kv`, SVC_DEMO: "true" };
    await withServer(env, async (one) => {
      await one.waitForLine("stdout", (line) => line.startsWith("svc demo is running on "));
      const password = await demoPassword(one, "alice");
      await withServer(env, async (other) => {
        const token = (await login(one, "login", "alice", password)).body.token;
        const headers = { Authorization: `Bearer ${token}` };
        const lastnames = async (server: RunningServer): Promise<string[]> => {
          const view = await call(server, "GET", `${API}/contact/personal`, { headers });
          assert.equal(view.status, 200, JSON.stringify(view.body));
          return view.body.entries.map((entry: { entry: string[] }) => entry.entry[1]);
        };
        assert.ok(!(await lastnames(one)).includes("Elsewhere"), "one keeps the list");
        const body = { lastname: "Elsewhere", number: "0611223344" };
        const created = await call(other, "POST", `${API}/contact/personal`, { headers, body });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        assert.ok((await lastnames(other)).includes("Elsewhere"));
        // one reads the list again at the latest CONTACTS_RECHECK_MS (1 s) after it last did
        const started = performance.now();
        while (!(await lastnames(one)).includes("Elsewhere")) {
          assert.ok(performance.now() - started < 3000, "listed by the other process in time");
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      });
    });
  });
});

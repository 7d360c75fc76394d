import assert from "node:assert/strict";
import { ConfigError, loadConfig, settingNames } from "../../lib/config.ts";

const noFile = () => {
  throw new Error("no file expected");
};

Deno.test("defaults are the ones of decisions §1", () => {
  const config = loadConfig({}, noFile);
  assert.equal(config.port, 8090);
  assert.equal(config.hostname, "0.0.0.0");
  assert.equal(config.kv, "./data/svc.kv");
  assert.equal(config.tokenTtl, 7200);
  assert.equal(config.adminLogin, null);
  assert.equal(config.jwtSecret, null);
  assert.equal(config.eventUrl, null);
  assert.deepEqual(config.deprecatedApiHosts, []);
  assert.equal(config.trustProxy, false);
  assert.equal(config.platform, "sim");
  assert.equal(config.demo, false);
  assert.equal(config.logLevel, "info");
  assert.equal(config.maxContacts, 10000);
  assert.equal(config.simAnswerMs, 1000);
  assert.equal(config.eventRetention, 3600);
  assert.equal(config.hashConcurrency, navigator.hardwareConcurrency);
  assert.equal(config.hashIterations, 600_000);
});

Deno.test("the password hash pool's size and cost are settings", () => {
  const config = loadConfig({ SVC_HASH_CONCURRENCY: "4", SVC_HASH_ITERATIONS: "1000000" }, noFile);
  assert.equal(config.hashConcurrency, 4);
  assert.equal(config.hashIterations, 1_000_000);
  assert.equal(
    loadConfig({ SVC_HASH_CONCURRENCY: " " }, noFile).hashConcurrency,
    navigator.hardwareConcurrency,
  );
});

Deno.test("every setting of decisions §1 is known", () => {
  for (
    const name of [
      "SVC_PORT",
      "SVC_HOSTNAME",
      "SVC_KV",
      "SVC_ADMIN_LOGIN",
      "SVC_ADMIN_PASSWORD",
      "SVC_TOKEN_TTL",
      "SVC_JWT_SECRET",
      "SVC_EVENT_URL",
      "SVC_EVENT_SECRET",
      "SVC_DEPRECATED_API_HOST",
      "SVC_TRUST_PROXY",
      "SVC_PLATFORM",
      "SVC_DEMO",
      "SVC_LOG_LEVEL",
    ]
  ) assert.ok((settingNames as string[]).includes(name), name);
});

Deno.test("values are parsed", () => {
  const config = loadConfig({
    SVC_PORT: "9000",
    SVC_KV: "https://kv.example.test/db",
    SVC_ADMIN_LOGIN: "root",
    SVC_ADMIN_PASSWORD: "pw",
    SVC_TOKEN_TTL: "60",
    SVC_JWT_SECRET: "x".repeat(32),
    SVC_EVENT_URL: "http://127.0.0.1:9/pbx/1.0/event/d/dropbox/",
    SVC_DEPRECATED_API_HOST: "127.0.0.1, ::1,, ::FFFF:10.0.0.1 ,fe80::1%eth0",
    SVC_TRUST_PROXY: "TRUE",
    SVC_DEMO: "1",
    SVC_LOG_LEVEL: "debug",
  }, noFile);
  assert.equal(config.port, 9000);
  assert.equal(config.kv, "https://kv.example.test/db");
  assert.equal(config.adminLogin, "root");
  assert.equal(config.tokenTtl, 60);
  assert.deepEqual(config.deprecatedApiHosts, [
    "127.0.0.1",
    "::1",
    "::FFFF:10.0.0.1",
    "fe80::1%eth0",
  ]);
  assert.equal(config.trustProxy, true);
  assert.equal(config.demo, true);
  assert.equal(config.logLevel, "debug");
});

Deno.test("a bad value names the setting and the reason", async (t) => {
  const bad: [Record<string, string>, string, RegExp][] = [
    [{ SVC_PORT: "abc" }, "SVC_PORT", /integer from 0 to 65535/],
    [{ SVC_PORT: "70000" }, "SVC_PORT", /integer/],
    [{ SVC_PORT: "80.5" }, "SVC_PORT", /integer/],
    [{ SVC_TOKEN_TTL: "0" }, "SVC_TOKEN_TTL", /from 1/],
    [{ SVC_TOKEN_TTL: "-5" }, "SVC_TOKEN_TTL", /integer/],
    [{ SVC_KV: "" }, "SVC_KV", /file path/],
    [{ SVC_KV: "ftp://host/db" }, "SVC_KV", /http\(s\) URL/],
    [{ SVC_EVENT_URL: "not a url" }, "SVC_EVENT_URL", /http\(s\) URL/],
    [{ SVC_EVENT_URL: "file:///etc/passwd" }, "SVC_EVENT_URL", /http\(s\) URL/],
    [{ SVC_TRUST_PROXY: "maybe" }, "SVC_TRUST_PROXY", /true or false/],
    [{ SVC_DEMO: "on?" }, "SVC_DEMO", /true or false/],
    [{ SVC_PLATFORM: "pbx" }, "SVC_PLATFORM", /one of sim, asterisk/],
    [{ SVC_PLATFORM: "asterisk" }, "SVC_AMI_USERNAME", /must be set with SVC_PLATFORM=asterisk/],
    [
      { SVC_PLATFORM: "asterisk", SVC_AMI_USERNAME: "svc" },
      "SVC_AMI_SECRET",
      /must be set with SVC_PLATFORM=asterisk/,
    ],
    [
      { SVC_PLATFORM: "asterisk", SVC_AMI_USERNAME: "svc", SVC_AMI_SECRET: "s" },
      "SVC_ASTERISK_CONFIG_DIR",
      /must be set/,
    ],
    [{ SVC_AMI_PORT: "0" }, "SVC_AMI_PORT", /integer from 1 to 65535/],
    [{ SVC_AMI_HOST: "pbx host" }, "SVC_AMI_HOST", /host name or an IP address/],
    [{ SVC_LOG_LEVEL: "loud" }, "SVC_LOG_LEVEL", /debug, info, warn, error/],
    [{ SVC_JWT_SECRET: "short" }, "SVC_JWT_SECRET", /at least 32 bytes/],
    [{ SVC_METRICS_TOKEN: "short" }, "SVC_METRICS_TOKEN", /at least 32 characters/],
    [{ SVC_METRICS_TOKEN: `${"x".repeat(32)} y` }, "SVC_METRICS_TOKEN", /visible ASCII/],
    [{ SVC_METRICS_TOKEN: `${"x".repeat(32)}é` }, "SVC_METRICS_TOKEN", /visible ASCII/],
    [{ SVC_ADMIN_LOGIN: "root" }, "SVC_ADMIN_PASSWORD", /set together/],
    [{ SVC_ADMIN_PASSWORD: "pw" }, "SVC_ADMIN_LOGIN", /set together/],
    [{ SVC_TLS_CERT: "cert.pem" }, "SVC_TLS_KEY", /set together/],
    [{ SVC_MAX_CONTACTS: "0" }, "SVC_MAX_CONTACTS", /integer/],
    [{ SVC_HASH_CONCURRENCY: "0" }, "SVC_HASH_CONCURRENCY", /integer from 1 to 256, got "0"/],
    [{ SVC_HASH_CONCURRENCY: "two" }, "SVC_HASH_CONCURRENCY", /integer from 1 to 256/],
    [{ SVC_HASH_CONCURRENCY: "1.5" }, "SVC_HASH_CONCURRENCY", /integer/],
    [{ SVC_HASH_ITERATIONS: "99999" }, "SVC_HASH_ITERATIONS", /integer from 100000 to 100000000/],
    [{ SVC_HASH_ITERATIONS: "" }, "SVC_HASH_ITERATIONS", /integer/],
    [{ SVC_HASH_ITERATIONS: "1e6" }, "SVC_HASH_ITERATIONS", /integer/],
    [
      { SVC_DEPRECATED_API_HOST: "localhost" },
      "SVC_DEPRECATED_API_HOST",
      /IP addresses.*"localhost"/,
    ],
    [
      { SVC_DEPRECATED_API_HOST: "10.0.0.1, 010.0.0.2" },
      "SVC_DEPRECATED_API_HOST",
      /"010\.0\.0\.2"/,
    ],
    [{ SVC_DEPRECATED_API_HOST: "10.0.0.0/8" }, "SVC_DEPRECATED_API_HOST", /IP addresses/],
    [
      { SVC_DEPRECATED_API_HOST: "10.0.0.1 10.0.0.2" },
      "SVC_DEPRECATED_API_HOST",
      /separated by commas/,
    ],
    // meeting rooms (docs/meetingrooms.md)
    [{ SVC_MEETINGROOM_CONTEXT: "a b" }, "SVC_MEETINGROOM_CONTEXT", /context name/],
    [{ SVC_MEETINGROOM_PERSONAL_RANGE: "4100" }, "SVC_MEETINGROOM_PERSONAL_RANGE", /<start>-<end>/],
    [
      { SVC_MEETINGROOM_PERSONAL_RANGE: "410-4199" },
      "SVC_MEETINGROOM_PERSONAL_RANGE",
      /same length/,
    ],
    [
      { SVC_MEETINGROOM_PERSONAL_RANGE: "4199-4100" },
      "SVC_MEETINGROOM_PERSONAL_RANGE",
      /start not above end/,
    ],
    [
      { SVC_MEETINGROOM_TEMPORARY_RANGE: "4150-4250" },
      "SVC_MEETINGROOM_TEMPORARY_RANGE",
      /must not overlap/,
    ],
    [{ SVC_JITSI_DOMAIN: "https://meet.example" }, "SVC_JITSI_DOMAIN", /host name/],
    [{ SVC_JITSI_DOMAIN: "meet.example" }, "SVC_JITSI_APP_ID", /set together/],
    [
      { SVC_JITSI_DOMAIN: "meet.example", SVC_JITSI_APP_ID: "app", SVC_JITSI_SECRET: "short" },
      "SVC_JITSI_SECRET",
      /at least 32 bytes/,
    ],
    [{ SVC_JITSI_TOKEN_TTL: "10" }, "SVC_JITSI_TOKEN_TTL", /integer from 60/],
  ];
  for (const [env, setting, reason] of bad) {
    await t.step(JSON.stringify(env), () => {
      assert.throws(() => loadConfig(env, noFile), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.setting, setting);
        assert.ok(error.message.startsWith(`${setting}: `), error.message);
        assert.match(error.message, reason);
        assert.ok(!error.message.includes("\n"));
        return true;
      });
    });
  }
});

Deno.test("a secret is never echoed in the error", () => {
  assert.throws(
    () => loadConfig({ SVC_JWT_SECRET: "hunter2-secret" }, noFile),
    (error: Error) => !error.message.includes("hunter2"),
  );
  assert.throws(
    () => loadConfig({ SVC_AMI_SECRET: "hunter2\nsecret" }, noFile),
    (error: Error) =>
      error.message.startsWith("SVC_AMI_SECRET: ") && !error.message.includes("hunter2"),
  );
  assert.throws(
    () => loadConfig({ SVC_METRICS_TOKEN: "hunter2 secret" }, noFile),
    (error: Error) =>
      error.message.startsWith("SVC_METRICS_TOKEN: ") && !error.message.includes("hunter2"),
  );
});

Deno.test("SVC_METRICS_TOKEN: unset by default, else kept as given", () => {
  assert.equal(loadConfig({}, noFile).metricsToken, null);
  const token = "Prometheus-0123456789_abcdef.~+/=";
  assert.equal(loadConfig({ SVC_METRICS_TOKEN: token }, noFile).metricsToken, token);
});

Deno.test("CORS origins and a second listen address", () => {
  const config = loadConfig({
    SVC_CORS_ORIGINS: "https://crm.example.com, http://localhost:3000",
    SVC_EXTRA_LISTEN: "127.0.0.1:9497",
  }, noFile);
  assert.deepEqual(config.corsOrigins, ["https://crm.example.com", "http://localhost:3000"]);
  assert.deepEqual(config.extraListen, { hostname: "127.0.0.1", port: 9497 });
  assert.deepEqual(loadConfig({ SVC_CORS_ORIGINS: "*" }, noFile).corsOrigins, ["*"]);
  assert.deepEqual(loadConfig({ SVC_EXTRA_LISTEN: ":9497" }, noFile).extraListen, {
    hostname: "0.0.0.0",
    port: 9497,
  });
  assert.deepEqual(loadConfig({ SVC_EXTRA_LISTEN: "[::1]:9497" }, noFile).extraListen, {
    hostname: "::1",
    port: 9497,
  });
  const defaults = loadConfig({}, noFile);
  assert.deepEqual(defaults.corsOrigins, []);
  assert.equal(defaults.extraListen, null);
  for (
    const [env, pattern] of [
      [{ SVC_CORS_ORIGINS: "crm.example.com" }, /origins like/],
      [{ SVC_CORS_ORIGINS: "https://crm.example.com/app" }, /origins like/],
      [{ SVC_CORS_ORIGINS: "*, https://a.example" }, /\* alone/],
      [{ SVC_EXTRA_LISTEN: "9497" }, /host:port/],
      [{ SVC_EXTRA_LISTEN: "host:99999" }, /host:port/],
    ] as const
  ) {
    assert.throws(() => loadConfig(env, noFile), { message: pattern });
  }
});

Deno.test("the Asterisk settings", () => {
  const config = loadConfig({
    SVC_PLATFORM: "asterisk",
    SVC_AMI_HOST: "[::1]",
    SVC_AMI_USERNAME: "svc",
    SVC_AMI_SECRET: "s3cret;#",
    SVC_ASTERISK_CONFIG_DIR: "/etc/asterisk/svc",
  }, noFile);
  assert.equal(config.platform, "asterisk");
  assert.equal(config.amiHost, "::1");
  assert.equal(config.amiPort, 5038);
  assert.equal(config.amiUsername, "svc");
  assert.equal(config.amiSecret, "s3cret;#");
  assert.equal(config.asteriskConfigDir, "/etc/asterisk/svc");
  const defaults = loadConfig({}, noFile);
  assert.equal(defaults.amiHost, "127.0.0.1");
  assert.equal(defaults.amiPort, 5038);
});

Deno.test("SVC_CONFIG names a JSON file; the environment wins", () => {
  const files: Record<string, string> = {
    "/etc/svc.json": JSON.stringify({
      SVC_PORT: 9100,
      SVC_TOKEN_TTL: 60,
      SVC_DEMO: true,
      SVC_DEPRECATED_API_HOST: ["10.0.0.1", "10.0.0.2"],
    }),
  };
  const read = (path: string) => files[path] ?? noFile();
  const config = loadConfig({ SVC_CONFIG: "/etc/svc.json", SVC_TOKEN_TTL: "120" }, read);
  assert.equal(config.port, 9100);
  assert.equal(config.tokenTtl, 120);
  assert.equal(config.demo, true);
  assert.deepEqual(config.deprecatedApiHosts, ["10.0.0.1", "10.0.0.2"]);
});

Deno.test("a bad SVC_CONFIG file is refused", async (t) => {
  const files: Record<string, string> = {
    "/not-json": "{port: 1",
    "/array": "[1]",
    "/unknown": JSON.stringify({ SVC_PROT: 1 }),
    "/bad-type": JSON.stringify({ SVC_PORT: { value: 1 } }),
    "/bad-value": JSON.stringify({ SVC_PORT: "x" }),
    "/host-name": JSON.stringify({ SVC_DEPRECATED_API_HOST: ["10.0.0.1", "proxy.example"] }),
  };
  const read = (path: string) => {
    if (!(path in files)) throw new Deno.errors.NotFound(path);
    return files[path]!;
  };
  const expected: [string, string, RegExp][] = [
    ["/missing", "SVC_CONFIG", /cannot be read/],
    ["/not-json", "SVC_CONFIG", /not valid JSON/],
    ["/array", "SVC_CONFIG", /JSON object/],
    ["/unknown", "SVC_CONFIG", /unknown setting "SVC_PROT"/],
    ["/bad-type", "SVC_PORT", /string, number or boolean/],
    ["/bad-value", "SVC_PORT", /integer/],
    ["/host-name", "SVC_DEPRECATED_API_HOST", /IP addresses.*"proxy\.example"/],
  ];
  for (const [path, setting, reason] of expected) {
    await t.step(path, () => {
      assert.throws(() => loadConfig({ SVC_CONFIG: path }, read), (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.setting, setting);
        assert.match(error.message, reason);
        return true;
      });
    });
  }
});

Deno.test("the demo uses its own store unless SVC_KV says otherwise", () => {
  assert.equal(loadConfig({ SVC_DEMO: "true" }, noFile).kv, "./data/demo.kv");
  assert.equal(loadConfig({ SVC_DEMO: "true", SVC_KV: ":memory:" }, noFile).kv, ":memory:");
  assert.equal(loadConfig({ SVC_DEMO: "false" }, noFile).kv, "./data/svc.kv");
  assert.throws(() => loadConfig({ SVC_DEMO: "maybe" }, noFile), { message: /^SVC_DEMO: / });
});

/**
 * `GET /metrics` (docs/metrics.md) through the real app, read with a real Prometheus text parser:
 * who may scrape it, and that each family moves with what it counts (requests by route template,
 * logins, event deliveries against a real receiver, store failures, the platform's state). And
 * `GET /version`.
 */
import assert from "node:assert/strict";
import { GIVE_UP_AFTER_MS } from "../../lib/events/export.ts";
import { UNMATCHED } from "../../lib/metrics.ts";
import { METRICS_ACL } from "../../routes/metrics.ts";
import denoJson from "../../deno.json" with { type: "json" };
import {
  bearer,
  closedPort,
  ctiUser,
  expectError,
  expectForbidden,
  login,
  postJson,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";
import { type Family, parseExposition, valueOf } from "../prometheus.ts";

const STATIC_TOKEN = "metrics-scrape-token-0123456789abcdef";
const API = "/svc/api/2.0";

/** Scrapes with the static token (it never expires, unlike a login token in virtual time). */
async function scrape(ctx: TestContext): Promise<Map<string, Family>> {
  const response = await ctx.app.request("/metrics", { headers: bearer(STATIC_TOKEN) });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return parseExposition(text);
}

Deno.test("GET /metrics needs the static token or a token holding svc.rest.metrics.read", async (t) => {
  const ctx = await setup({ SVC_METRICS_TOKEN: STATIC_TOKEN });
  const get = (headers: Record<string, string> = {}) => ctx.app.request("/metrics", { headers });

  await t.step("no token: 400 AuthorizationHeaderNotFound", async () => {
    await expectError(await get(), 400, "AuthorizationHeaderNotFound");
  });
  await t.step("a wrong token: 403 InvalidToken", async () => {
    await expectError(await get(bearer("not-a-token")), 403, "InvalidToken");
    await expectError(await get(bearer(`${STATIC_TOKEN}x`)), 403, "InvalidToken");
    await expectError(await get({ Authorization: STATIC_TOKEN }), 400, "BearerNotFound");
  });
  await t.step("tokens without the ACL: 403 Forbidden naming it", async () => {
    const narrow = await webServiceUser(ctx, ["svc.rest.metrics.read.other", "confd.#"]);
    await expectForbidden(
      await get(bearer(await login(ctx, "webservice", narrow.login))),
      METRICS_ACL,
    );
    const alice = await ctiUser(ctx);
    const refused = await get(bearer(await login(ctx, "login", alice.username!)));
    assert.equal(refused.status, 403);
    assert.deepEqual(await refused.json(), {
      error: "Forbidden",
      message: `missing ACL ${METRICS_ACL}; the user has no supervisor rights profile`,
    });
  });
  await t.step("a token holding the ACL, or the static token (either header): 200", async () => {
    const reader = await webServiceUser(ctx, [METRICS_ACL]);
    for (
      const headers of [
        bearer(await login(ctx, "webservice", reader.login)),
        bearer(STATIC_TOKEN),
        { "X-Auth-Token": STATIC_TOKEN },
      ]
    ) {
      const response = await get(headers);
      assert.equal(response.status, 200);
      assert.ok(parseExposition(await response.text()).has("svc_http_request_duration_seconds"));
    }
  });

  await t.step("without SVC_METRICS_TOKEN, no token is static", async () => {
    const other = await setup();
    const response = await other.app.request("/metrics", { headers: bearer(STATIC_TOKEN) });
    await expectError(response, 403, "InvalidToken");
  });
});

Deno.test("every family is there, with its help and type", async () => {
  const families = await scrape(await setup({ SVC_METRICS_TOKEN: STATIC_TOKEN }));
  const expected: [string, string][] = [
    ["svc_http_request_duration_seconds", "HISTOGRAM"],
    ["svc_logins_total", "COUNTER"],
    ["svc_store_errors_total", "COUNTER"],
    ["svc_events_delivered_total", "COUNTER"],
    ["svc_event_retries_total", "COUNTER"],
    ["svc_events_dead_lettered_total", "COUNTER"],
    ["svc_event_outbox_pending", "GAUGE"],
    ["svc_event_dead_letters", "GAUGE"],
    ["svc_event_outbox_oldest_age_seconds", "GAUGE"],
    ["svc_platform_state", "GAUGE"],
    ["svc_build_info", "GAUGE"],
    ["process_cpu_seconds_total", "COUNTER"],
    ["process_resident_memory_bytes", "GAUGE"],
    ["process_start_time_seconds", "GAUGE"],
  ];
  for (const [name, type] of expected) {
    const family = families.get(name);
    assert.ok(family, `${name} is missing`);
    assert.equal(family.type, type, name);
    assert.ok(family.help.length > 10, `${name} has no help`);
  }
  assert.ok(valueOf(families, "process_resident_memory_bytes") > 1_000_000);
  assert.ok(valueOf(families, "process_cpu_seconds_total") > 0);
  const started = valueOf(families, "process_start_time_seconds");
  assert.ok(Math.abs(started - Date.now() / 1000) < 3600, `start time ${started}`);
});

Deno.test("requests are counted by method, route template and status, with their latency", async () => {
  const origin = "https://crm.example.com";
  const ctx = await setup({ SVC_METRICS_TOKEN: STATIC_TOKEN, SVC_CORS_ORIGINS: origin });
  const ws = await webServiceUser(ctx, ["svc.rest.dnd.#"]);
  const token = bearer(await login(ctx, "webservice", ws.login));
  const [alice, bob] = [await ctiUser(ctx), await ctiUser(ctx)];
  const dnd = { method: "POST", route: `${API}/dnd/:username`, status: "200" };
  const before = await scrape(ctx);

  for (const user of [alice, bob]) {
    const response = await postJson(ctx, `${API}/dnd/${user.username}`, { state: true }, token);
    assert.equal(response.status, 200);
    await response.body?.cancel();
  }
  const refused = await postJson(ctx, `${API}/dnd/${alice.username}`, { state: "yes" }, token);
  assert.equal(refused.status, 400);
  await refused.body?.cancel();
  const tooLarge = await postJson(ctx, `${API}/dnd/${alice.username}`, "x".repeat(2 << 20), token);
  assert.equal(tooLarge.status, 413); // refused by the area's body limit, before the route
  await tooLarge.body?.cancel();
  const unmatched = [["GET", `/no/such/${alice.username}`], ["PURGE", "/health"]] as const;
  for (const [method, path] of unmatched) {
    const response = await ctx.app.request(path, { method });
    assert.equal(response.status, method === "PURGE" ? 405 : 404); // /health: GET only
    await response.body?.cancel();
  }
  const preflight = await ctx.app.request(`${API}/dnd/${alice.username}`, {
    method: "OPTIONS",
    headers: { Origin: origin, "Access-Control-Request-Method": "POST" },
  });
  assert.equal(preflight.status, 204);

  const after = await scrape(ctx);
  const name = "svc_http_request_duration_seconds";
  const count = (families: Map<string, Family>, labels: Record<string, string>) =>
    valueOf(families, `${name}_count`, labels);
  assert.equal(count(after, dnd) - count(before, dnd), 2);
  assert.equal(count(after, { ...dnd, status: "400" }), 1);
  assert.equal(count(after, { ...dnd, status: "413" }), 1);
  assert.equal(count(after, { method: "GET", route: UNMATCHED, status: "404" }), 1);
  assert.equal(count(after, { method: "other", route: UNMATCHED, status: "405" }), 1);
  assert.equal(count(after, { method: "OPTIONS", route: UNMATCHED, status: "204" }), 1);
  // the scrape before was counted as it ended
  assert.equal(count(after, { method: "GET", route: "/metrics", status: "200" }), 1);
  const series = after.get(`${name}_count`)!.samples;
  for (const { labels } of series) {
    assert.deepEqual(Object.keys(labels).sort(), ["method", "route", "status"]);
    assert.ok(!labels.route!.includes(alice.username!), `a raw path as route: ${labels.route}`);
  }

  // each label set has its own buckets, rising to +Inf = _count, and its _sum
  assert.ok(valueOf(after, `${name}_sum`, dnd) > 0);
  const buckets = after.get(`${name}_bucket`)!.samples
    .filter(({ labels }) => labels.route === dnd.route && labels.status === "200")
    .map(({ labels, value }) => ({
      le: labels.le === "+Inf" ? Infinity : Number(labels.le),
      value,
    }));
  assert.equal(buckets.length, 15);
  assert.deepEqual(
    buckets.map(({ le }) => le),
    [...buckets.map(({ le }) => le)].sort((a, b) => a - b),
  );
  for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]!.value >= buckets[i - 1]!.value);
  assert.deepEqual(buckets.at(-1), { le: Infinity, value: count(after, dnd) });
});

Deno.test("logins are counted by user type, method and outcome", async () => {
  const client = "192.0.2.10";
  const ctx = await setup({ SVC_METRICS_TOKEN: STATIC_TOKEN, SVC_DEPRECATED_API_HOST: client });
  const [alice, bob] = [await ctiUser(ctx), await ctiUser(ctx)];
  const ws = await webServiceUser(ctx, []);
  const logins = (families: Map<string, Family>, labels: Record<string, string>) =>
    valueOf(families, "svc_logins_total", labels);
  const cti = { user_type: "cti", method: "password" };
  const before = await scrape(ctx);
  assert.equal(
    logins(before, { ...cti, outcome: "success" }),
    0,
    "the series exist from the start",
  );
  assert.equal(before.get("svc_logins_total")!.samples.length, 6);

  await login(ctx, "login", alice.username!);
  await login(ctx, "webservice", ws.login);
  // 10 wrong passwords are refused, then the login is throttled, its right password too
  for (let attempt = 0; attempt < 10; attempt++) {
    const response = await postJson(ctx, `${API}/auth/login`, {
      login: alice.username,
      password: "wrong",
    });
    assert.equal(response.status, 401);
    await response.body?.cancel();
  }
  for (const password of ["wrong", `${alice.username}-pw`]) {
    const response = await postJson(ctx, `${API}/auth/login`, { login: alice.username, password });
    assert.equal(response.status, 429);
    await response.body?.cancel();
  }
  // the 1.0 connect and xivo-auth's /0.1/token check passwords the same way
  const legacy = await ctx.app.request(
    `/svc/api/1.0/connect/demo/${bob.username}/`,
    { method: "POST", body: JSON.stringify({ password: "wrong" }) },
    { remoteAddr: { transport: "tcp", hostname: client, port: 40_000 } },
  );
  assert.equal(legacy.status, 401);
  await legacy.body?.cancel();
  const xivo = await ctx.app.request("/0.1/token", {
    method: "POST",
    headers: { Authorization: `Basic ${btoa(`${ws.login}:wrong`)}` },
    body: JSON.stringify({ backend: "xivo_service" }),
  });
  assert.equal(xivo.status, 401);
  await xivo.body?.cancel();
  // single sign-on: OpenID Connect is not configured here, a refusal
  const oidc = await ctx.app.request(`${API}/auth/oidc?token=abc`);
  assert.equal(oidc.status, 403);
  await oidc.body?.cancel();

  const after = await scrape(ctx);
  assert.equal(logins(after, { ...cti, outcome: "success" }), 1);
  assert.equal(logins(after, { ...cti, outcome: "refused" }), 11);
  assert.equal(logins(after, { ...cti, outcome: "throttled" }), 2);
  const webservice = { user_type: "webservice", method: "password" };
  assert.equal(logins(after, { ...webservice, outcome: "success" }), 1);
  assert.equal(logins(after, { ...webservice, outcome: "refused" }), 1);
  assert.equal(logins(after, { user_type: "cti", method: "oidc", outcome: "refused" }), 1);
});

Deno.test("event deliveries, retries and dead letters, and the outbox, against a real receiver", async () => {
  const port = await closedPort();
  const ctx = await setup({
    SVC_METRICS_TOKEN: STATIC_TOKEN,
    SVC_EVENT_URL: `http://127.0.0.1:${port}/dropbox/`,
  });
  const ws = await webServiceUser(ctx, ["svc.rest.dnd.#"]);
  const token = bearer(await login(ctx, "webservice", ws.login));
  const alice = await ctiUser(ctx);
  /** A DND change posts a `UserConfigUpdate` event. */
  const changeDnd = async (state: boolean) => {
    const response = await postJson(ctx, `${API}/dnd/${alice.username}`, { state }, token);
    assert.equal(response.status, 200);
    await response.body?.cancel();
  };
  const figures = async () => {
    const families = await scrape(ctx);
    return {
      delivered: valueOf(families, "svc_events_delivered_total"),
      retries: valueOf(families, "svc_event_retries_total"),
      deadLettered: valueOf(families, "svc_events_dead_lettered_total"),
      pending: valueOf(families, "svc_event_outbox_pending"),
      deadLetters: valueOf(families, "svc_event_dead_letters"),
      oldestAge: valueOf(families, "svc_event_outbox_oldest_age_seconds"),
    };
  };
  const received: unknown[] = [];
  let receiver: Deno.HttpServer | null = null;
  const events = ctx.services.events;
  try {
    events.start();
    await changeDnd(true); // the receiver is down: the post fails, a retry is due in 1 s
    await ctx.clock.advance(0);
    assert.deepEqual(await figures(), {
      delivered: 0,
      retries: 1,
      deadLettered: 0,
      pending: 1,
      deadLetters: 0,
      oldestAge: 0,
    });
    await ctx.clock.advance(30_000); // retried after 1 s and 5 s, next after 30 s more
    assert.deepEqual(await figures(), {
      delivered: 0,
      retries: 3,
      deadLettered: 0,
      pending: 1,
      deadLetters: 0,
      oldestAge: 30,
    });

    receiver = Deno.serve({ port, hostname: "127.0.0.1", onListen() {} }, async (request) => {
      received.push(await request.json());
      return new Response(null, { status: 204 });
    });
    await ctx.clock.advance(30_000);
    assert.equal(received.length, 1);
    assert.deepEqual(await figures(), {
      delivered: 1,
      retries: 3,
      deadLettered: 0,
      pending: 0,
      deadLetters: 0,
      oldestAge: 0,
    });

    await receiver.shutdown();
    receiver = null;
    await changeDnd(false); // down again, for more than a day: a dead letter
    await ctx.clock.advance(GIVE_UP_AFTER_MS + 600_000);
    const dead = await figures();
    assert.equal(dead.delivered, 1);
    assert.equal(dead.deadLettered, 1);
    assert.equal(dead.deadLetters, 1);
    assert.equal(dead.pending, 0);
    assert.ok(dead.retries > 100, `${dead.retries} retries`);
  } finally {
    await events.close();
    await receiver?.shutdown();
  }
});

Deno.test("store failures are counted by kind, and a scrape still answers with the store down", async () => {
  const ctx = await setup({ SVC_METRICS_TOKEN: STATIC_TOKEN });
  const { store } = ctx.services;
  const errors = (families: Map<string, Family>, kind: string) =>
    valueOf(families, "svc_store_errors_total", { kind });
  assert.equal(errors(await scrape(ctx), "unavailable"), 0);

  await assert.rejects(store.set(["metrics-test"], "v".repeat(70_000))); // over Deno KV's 64 KiB
  assert.equal((await store.get(["k", "k".repeat(3_000)])).value, null); // reads as absent
  const refused = await scrape(ctx);
  assert.equal(errors(refused, "value_too_large"), 1);
  assert.equal(errors(refused, "key_too_large_for_read"), 0, "an absent key is no failure");

  store.close();
  const ws = await ctx.app.request(`${API}/auth/webservice`, {
    method: "POST",
    body: JSON.stringify({ login: "someone", password: "secret" }),
  });
  await expectError(ws, 503, "Unreachable");
  const down = await scrape(ctx);
  assert.ok(errors(down, "unavailable") >= 2, "the login's read and the scrape's");
  // the outbox cannot be read: its gauges are NaN (unknown) rather than a wrong 0
  const backlog = [
    "svc_event_outbox_pending",
    "svc_event_dead_letters",
    "svc_event_outbox_oldest_age_seconds",
  ];
  for (const name of backlog) assert.ok(Number.isNaN(valueOf(down, name)), name);
  assert.equal(valueOf(down, "svc_platform_state", { state: "ready" }), 1);
});

Deno.test("the platform's state: the simulator is ready; Asterisk before it connects is not", async () => {
  const sim = await scrape(await setup({ SVC_METRICS_TOKEN: STATIC_TOKEN }));
  assert.deepEqual(sim.get("svc_platform_state")!.samples, [
    { labels: { adapter: "sim", state: "ready" }, value: 1 },
    { labels: { adapter: "sim", state: "syncing" }, value: 0 },
    { labels: { adapter: "sim", state: "disconnected" }, value: 0 },
  ]);

  const dir = await Deno.makeTempDir({ prefix: "svc-metrics-" });
  try {
    const asterisk = await setup({
      SVC_METRICS_TOKEN: STATIC_TOKEN,
      SVC_PLATFORM: "asterisk",
      SVC_AMI_USERNAME: "svc",
      SVC_AMI_SECRET: "secret",
      SVC_ASTERISK_CONFIG_DIR: dir,
    });
    try {
      const families = await scrape(asterisk); // never started: not connected
      assert.equal(valueOf(families, "svc_platform_state", { state: "disconnected" }), 1);
      assert.equal(valueOf(families, "svc_platform_state", { state: "ready" }), 0);
      assert.ok(
        families.get("svc_platform_state")!.samples.every(({ labels }) =>
          labels.adapter === "asterisk"
        ),
      );
    } finally {
      await asterisk.services.platform.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** The commit checked out in this repository, from git itself. */
async function gitHead(): Promise<string> {
  const output = await new Deno.Command("git", {
    args: ["rev-parse", "HEAD"],
    cwd: new URL("../../", import.meta.url),
    stdout: "piped",
  }).output();
  assert.ok(output.success, "git rev-parse HEAD failed");
  return new TextDecoder().decode(output.stdout).trim();
}

Deno.test("GET /version: deno.json's version and the checkout's revision, without a token", async () => {
  const ctx = await setup({ SVC_METRICS_TOKEN: STATIC_TOKEN });
  const response = await ctx.app.request("/version");
  assert.equal(response.status, 200);
  const expected = { version: denoJson.version, revision: await gitHead() };
  assert.deepEqual(await response.json(), expected);
  assert.match(expected.version, /^\d+\.\d+\.\d+$/);
  assert.equal(valueOf(await scrape(ctx), "svc_build_info", expected), 1);

  const post = await ctx.app.request("/version", { method: "POST" });
  await expectError(post, 405, "MethodNotAllowed");
});

import assert from "node:assert/strict";
import { wizardSettings } from "../../../lib/store/wizard.ts";
import {
  bearer,
  confd,
  expectConfdError,
  expectMissingAcl,
  postJson,
  setup,
  type TestContext,
} from "../../helpers.ts";

const configured = async (ctx: TestContext) =>
  (await (await ctx.app.request("/1.1/wizard")).json()).configured;

const VALID = { admin_password: "s3cret-Admin", license: true };

Deno.test("/1.1/wizard: a new store is configured once, without a token", async (t) => {
  const ctx = await setup();

  await t.step("GET /wizard needs no token and answers configured: false", async () => {
    const response = await ctx.app.request("/1.1/wizard");
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { configured: false });
  });

  await t.step("GET /wizard/discover is open while unconfigured", async () => {
    const response = await ctx.app.request("/1.1/wizard/discover");
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.deepEqual(Object.keys(body).sort(), [
      "domain",
      "gateway",
      "hostname",
      "interfaces",
      "nameservers",
      "timezone",
    ]);
    assert.equal(typeof body.hostname, "string"); // the tests run with every permission
    assert.equal(typeof body.timezone, "string");
    assert.ok(Array.isArray(body.interfaces));
    for (const nic of body.interfaces) {
      assert.equal(typeof nic.interface, "string");
      assert.equal(typeof nic.ip_address, "string");
      assert.ok(!nic.ip_address.startsWith("127."));
    }
    assert.ok(body.gateway === null || typeof body.gateway.gateway === "string");
  });

  await t.step("POST creates the admin and records the settings", async () => {
    const response = await postJson(ctx, "/1.1/wizard", {
      ...VALID,
      language: "fr_FR",
      timezone: "Europe/Paris",
      entity_name: "Acme",
      network: { hostname: "pbx", domain: "example.com", nameservers: ["192.0.2.53"] },
      run_scripts: false,
    });
    assert.equal(response.status, 201);
    assert.equal(response.headers.get("location"), "/1.1/wizard");
    assert.deepEqual(await response.json(), {
      admin_login: "admin",
      language: "fr_FR",
      timezone: "Europe/Paris",
      entity_name: "Acme",
      network: {
        hostname: "pbx",
        domain: "example.com",
        interface: null,
        ip_address: null,
        netmask: null,
        gateway: null,
        nameservers: ["192.0.2.53"],
      },
      run_scripts: false,
    });
    const stored = await wizardSettings(ctx.services.store);
    assert.equal(stored?.run_scripts, false);
    assert.equal(stored?.configured_at, new Date(ctx.clock.now()).toISOString());
    assert.equal(await configured(ctx), true);
  });

  await t.step("the admin logs in with the password given and holds #", async () => {
    const login = await postJson(ctx, "/svc/api/2.0/auth/webservice", {
      login: "admin",
      password: VALID.admin_password,
    });
    assert.equal(login.status, 200);
    const { token } = await login.json();
    const response = await ctx.app.request("/1.1/webservice_users", { headers: bearer(token) });
    const users = await response.json();
    assert.deepEqual(users.items, [{ id: 1, login: "admin", name: "admin", acls: ["#"] }]);
  });

  await t.step("a second POST: 403, nothing changes", async () => {
    await expectConfdError(
      await postJson(ctx, "/1.1/wizard", { ...VALID, admin_password: "other-pw" }),
      403,
      /^Forbidden - the wizard has already run$/,
    );
    await expectConfdError(await postJson(ctx, "/1.1/wizard", {}), 403, /already run/);
    const login = await postJson(ctx, "/svc/api/2.0/auth/webservice", {
      login: "admin",
      password: "other-pw",
    });
    assert.equal(login.status, 401);
    await login.body?.cancel();
  });

  await t.step("once configured, discover needs a token with its ACL", async () => {
    await expectConfdError(await ctx.app.request("/1.1/wizard/discover"), 401, /^Unauthorized/);
    const narrow = await confd(ctx, ["confd.wizard.read"]);
    await expectMissingAcl(await narrow.get("/wizard/discover"), "confd.wizard.discover.read");
    const allowed = await (await confd(ctx, ["confd.wizard.discover.read"])).get(
      "/wizard/discover",
    );
    assert.equal(allowed.status, 200);
    assert.equal(typeof (await allowed.json()).timezone, "string");
  });
});

Deno.test("/1.1/wizard: defaults", async () => {
  const ctx = await setup();
  const response = await postJson(ctx, "/1.1/wizard", VALID);
  assert.equal(response.status, 201);
  const body = await response.json();
  assert.equal(body.language, "en_US");
  assert.equal(body.timezone, Intl.DateTimeFormat().resolvedOptions().timeZone);
  assert.equal(body.entity_name, null);
  assert.equal(body.network, null);
  assert.equal(body.run_scripts, true);
});

Deno.test("/1.1/wizard: a store with a web service user counts as configured", async () => {
  const ctx = await setup({ SVC_ADMIN_LOGIN: "root", SVC_ADMIN_PASSWORD: "root-pw" });
  assert.equal(await configured(ctx), true);
  await expectConfdError(await postJson(ctx, "/1.1/wizard", VALID), 403, /already run/);
});

Deno.test("/1.1/wizard: invalid bodies answer 400 and configure nothing", async () => {
  const ctx = await setup();
  const network = { hostname: "pbx", domain: "example.com" };
  const cases: [unknown, RegExp][] = [
    [{ license: true }, /^Input Error - field 'admin_password': /],
    [{ ...VALID, admin_password: "abc" }, /field 'admin_password': Must be 4 to 64/],
    [{ ...VALID, admin_password: "with space" }, /field 'admin_password'/],
    [{ admin_password: "s3cret" }, /field 'license'/],
    [{ ...VALID, license: false }, /field 'license': Must be true/],
    [{ ...VALID, license: "true" }, /field 'license'/],
    [{ ...VALID, language: "xx_XX" }, /field 'language'/],
    [{ ...VALID, timezone: "Mars/Olympus" }, /field 'timezone': Must be a known time zone/],
    [{ ...VALID, entity_name: "" }, /field 'entity_name'/],
    [{ ...VALID, run_scripts: "yes" }, /field 'run_scripts'/],
    [{ ...VALID, network: "eth0" }, /field 'network'/],
    [{ ...VALID, network: { domain: "example.com" } }, /field 'network.hostname'/],
    [{ ...VALID, network: { ...network, hostname: "-bad" } }, /field 'network.hostname'/],
    [{ ...VALID, network: { ...network, domain: "a..b" } }, /field 'network.domain'/],
    [{ ...VALID, network: { ...network, ip_address: "300.1.1.1" } }, /'network.ip_address'/],
    [{ ...VALID, network: { ...network, gateway: "x" } }, /field 'network.gateway'/],
    [{ ...VALID, network: { ...network, interface: "eth 0" } }, /field 'network.interface'/],
    [
      {
        ...VALID,
        network: { ...network, nameservers: ["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.0.0.1"] },
      },
      /field 'network.nameservers': At most 3/,
    ],
  ];
  for (const [body, pattern] of cases) {
    await expectConfdError(await postJson(ctx, "/1.1/wizard", body), 400, pattern);
  }
  await expectConfdError(await postJson(ctx, "/1.1/wizard", "{x"), 400, /not valid JSON/);
  assert.equal(await configured(ctx), false);
});

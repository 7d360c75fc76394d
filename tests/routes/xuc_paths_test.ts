/**
 * xuc's own paths (`SVC_XUC_PATHS`, docs/cti.md "xuc's paths"): with the setting on, every route of
 * the 2.0 API answers below `/xuc/api/2.0` exactly as below `/svc/api/2.0` (login, token check,
 * errors, CORS preflights, the CTI socket over a real connection); with it off (the default), that
 * prefix is an unknown path. The OpenAPI document keeps naming `/svc/api/2.0` only.
 */
import assert from "node:assert/strict";
import { bearer, ctiUser, login, postJson, setup } from "../helpers.ts";
import { Client, fixture, userWithLine } from "./cti_fixtures.ts";

const XUC = "/xuc/api/2.0";
const ORIGIN = "https://glpi.example.com";

Deno.test("xuc's paths are unknown unless SVC_XUC_PATHS is on", async () => {
  const ctx = await setup();
  try {
    await ctiUser(ctx, "alice");
    const response = await postJson(ctx, `${XUC}/auth/login`, {
      login: "alice",
      password: "alice-pw",
    });
    assert.equal(response.status, 404);
    assert.equal((await response.json()).error, "NotFound");
  } finally {
    ctx.services.store.close();
  }
});

Deno.test("with SVC_XUC_PATHS, the 2.0 API answers below /xuc/api/2.0 as below /svc/api/2.0", async () => {
  const ctx = await setup({ SVC_XUC_PATHS: "true" });
  try {
    await ctiUser(ctx, "alice");
    const signedIn = await postJson(ctx, `${XUC}/auth/login`, {
      login: "alice",
      password: "alice-pw",
    });
    assert.equal(signedIn.status, 200);
    const { token, login: name, TTL } = await signedIn.json();
    assert.equal(name, "alice");
    assert.equal(TTL, 7200);

    // the token works on both prefixes, and each renews it
    for (const prefix of [XUC, "/svc/api/2.0"]) {
      const checked = await ctx.app.request(`${prefix}/auth/check`, { headers: bearer(token) });
      assert.equal(checked.status, 200, prefix);
      assert.equal((await checked.json()).login, "alice");
    }
    // a token of /svc/api/2.0 reads the user's contacts below /xuc/api/2.0
    const svcToken = await login(ctx, "login", "alice");
    const contacts = await ctx.app.request(`${XUC}/contact/personal`, {
      headers: bearer(svcToken),
    });
    assert.equal(contacts.status, 200);

    // errors in the 2.0 form, the same as below /svc/api/2.0
    const bad = await postJson(ctx, `${XUC}/auth/login`, "{");
    assert.equal(bad.status, 400);
    assert.equal((await bad.json()).error, "InvalidJson");
    const noToken = await ctx.app.request(`${XUC}/auth/check`);
    const svcNoToken = await ctx.app.request("/svc/api/2.0/auth/check");
    assert.equal(noToken.status, svcNoToken.status);
    assert.deepEqual(await noToken.json(), await svcNoToken.json());
    const plainCti = await ctx.app.request(`${XUC}/cti?token=${token}`);
    assert.equal(plainCti.status, 426);
    assert.equal((await plainCti.json()).error, "UpgradeRequired");

    // only the prefix itself is an alias: neighbours stay unknown, the rest of the app is there
    for (const path of [`${XUC}x/auth/check`, "/xuc/api/2.1/auth/check", "/xuc/api/auth/check"]) {
      const response = await ctx.app.request(path, { headers: bearer(token) });
      assert.equal(response.status, 404, path);
    }
    assert.equal((await ctx.app.request("/health")).status, 200);

    // the OpenAPI document still names svc's paths only
    const document = await (await ctx.app.request("/svc/api/2.0/openapi.json")).json();
    const paths = Object.keys(document.paths);
    assert.ok(paths.includes("/svc/api/2.0/auth/login"));
    assert.ok(!paths.some((path) => path.startsWith("/xuc/")), "no /xuc path documented");
  } finally {
    ctx.services.store.close();
  }
});

Deno.test("CORS works below /xuc/api/2.0 as it does below /svc/api/2.0", async () => {
  const ctx = await setup({ SVC_XUC_PATHS: "true", SVC_CORS_ORIGINS: ORIGIN });
  try {
    await ctiUser(ctx, "alice");
    const preflight = await ctx.app.request(`${XUC}/auth/login`, {
      method: "OPTIONS",
      headers: {
        Origin: ORIGIN,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type",
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get("access-control-allow-origin"), ORIGIN);
    assert.match(preflight.headers.get("access-control-allow-methods") ?? "", /POST/);
    const signedIn = await ctx.app.request(`${XUC}/auth/login`, {
      method: "POST",
      headers: { Origin: ORIGIN, "Content-Type": "application/json" },
      body: JSON.stringify({ login: "alice", password: "alice-pw" }),
    });
    assert.equal(signedIn.status, 200);
    assert.equal(signedIn.headers.get("access-control-allow-origin"), ORIGIN);
    const { token } = await signedIn.json();
    const refused = await ctx.app.request(`${XUC}/auth/check`, {
      headers: { Origin: ORIGIN, Authorization: "Bearer not-a-token" },
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get("access-control-allow-origin"), ORIGIN);
    const checked = await ctx.app.request(`${XUC}/auth/check`, {
      headers: { Origin: ORIGIN, ...bearer(token) },
    });
    assert.equal(checked.headers.get("access-control-allow-origin"), ORIGIN);
  } finally {
    ctx.services.store.close();
  }
});

Deno.test("with SVC_XUC_PATHS, the CTI socket opens at /xuc/api/2.0/cti over a real connection", async () => {
  const f = await fixture({ SVC_XUC_PATHS: "true" });
  try {
    await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const client = new Client(new WebSocket(`ws://${f.base}${XUC}/cti?token=${token}`));
    f.clients.push(client);
    const loggedOn = await client.type("LoggedOn");
    assert.equal(loggedOn.ctiMessage.username, "alice");
    assert.equal(loggedOn.ctiMessage.phoneNumber, "1001");
    client.send({ claz: "ping" });
    await client.type("Pong");
    client.web("dnd", { state: true });
    const config = await client.next(
      (m) => m.msgType === "UserConfigUpdate" && m.ctiMessage.dndEnabled === true,
      "DND on",
    );
    assert.equal(config.ctiMessage.dndEnabled, true);
  } finally {
    await f.close();
  }
});

Deno.test("without SVC_XUC_PATHS, a WebSocket to /xuc/api/2.0/cti is refused", async () => {
  const f = await fixture();
  try {
    await userWithLine(f.api, "alice", "1001");
    const token = await login(f.ctx, "login", "alice");
    const socket = new WebSocket(`ws://${f.base}${XUC}/cti?token=${token}`);
    let opened = false;
    const { promise, resolve } = Promise.withResolvers<CloseEvent>();
    socket.onopen = () => opened = true;
    socket.onclose = resolve;
    socket.onerror = () => {};
    const closed = await promise;
    assert.equal(opened, false); // the handshake was answered 404
    assert.notEqual(closed.code, 1000);
  } finally {
    await f.close();
  }
});

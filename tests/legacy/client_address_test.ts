/**
 * The client address allowlist of the 1.0 API (`SVC_DEPRECATED_API_HOST`, `SVC_TRUST_PROXY`):
 * every route answers from a listed address (IPv4 and IPv6) and is refused from any other, with
 * nothing done; unknown 1.0 paths are refused too; `X-Forwarded-For` counts only behind a trusted
 * proxy, and then only its last hop.
 */
import assert from "node:assert/strict";
import { ConfigError } from "../../lib/config.ts";
import { isConnected } from "../../lib/store/connections.ts";
import { getUser } from "../../lib/store/users.ts";
import { ctiUser, expectError, setup } from "../helpers.ts";
import {
  ALLOWED_HOSTS,
  ALLOWED_V4,
  ALLOWED_V6,
  expectOk,
  expectRefused,
  legacySim,
  OTHER_V4,
  OTHER_V6,
  routeTable,
  v1,
} from "./fixtures.ts";

Deno.test("every 1.0 route answers from a listed address, IPv4 and IPv6", async (t) => {
  const f = await legacySim();
  for (const address of [ALLOWED_V4, ALLOWED_V6]) {
    for (const route of routeTable(f.queue.id)) {
      await t.step(`${address} ${route.method} ${route.path}`, async () => {
        const response = await f.call(route.method, route.path, route.body, { address });
        route.answer(await expectOk(response));
      });
    }
    await f.t.advance(60_000); // every call of the round ends
  }
});

Deno.test("every 1.0 route is refused from another address, and does nothing", async (t) => {
  const f = await legacySim();
  for (const address of [OTHER_V4, OTHER_V6, "192.0.2.1", "2001:db8::1"]) {
    for (const route of routeTable(f.queue.id)) {
      await t.step(`${address} ${route.method} ${route.path}`, async () => {
        await expectRefused(
          await f.call(route.method, route.path, route.body, { address }),
          address,
        );
      });
    }
  }
  const { store, clock } = f.ctx.services;
  assert.equal(await isConnected(store, f.alice.id, clock.now()), false, "alice not connected");
  assert.deepEqual(f.t.take(), [], "no platform event: no dial, no agent login");
  assert.deepEqual(await f.ctx.services.events.retained(), [], "no event at all");
});

Deno.test("the whole 1.0 tree is refused: unknown paths and methods too", async () => {
  const ctx = await setup({ SVC_DEPRECATED_API_HOST: ALLOWED_HOSTS });
  const unknown: [string, string][] = [
    ["GET", ""],
    ["GET", "/"],
    ["GET", "/nothing/here"],
    ["POST", "/agentLogin/extra/segments"],
    ["PUT", "/dnd/example.com/alice/extra/"],
    ["DELETE", "/nothing/example.com/"],
  ];
  for (const [method, path] of unknown) {
    await expectRefused(await v1(ctx, method, path, undefined, { address: OTHER_V4 }), OTHER_V4);
    await expectError(
      await v1(ctx, method, path),
      404,
      "NotFound",
      /^no route for /,
    );
  }
  // the refusal comes before the body is read: even an oversized one
  const big = JSON.stringify({ state: true, pad: "x".repeat(2 * 1024 * 1024) });
  await expectRefused(
    await v1(ctx, "POST", "/dnd/d/alice/", big, { address: OTHER_V4 }),
    OTHER_V4,
  );
  await ctiUser(ctx, "alice");
  await expectError(await v1(ctx, "POST", "/dnd/d/alice/", big), 413, "PayloadTooLarge");
  // the 2.0 API and the other areas do not look at the address
  const health = await ctx.app.request("/health");
  assert.equal(health.status, 200);
});

Deno.test("the default (empty list) refuses everything, even 127.0.0.1 and ::1", async () => {
  const ctx = await setup();
  for (const address of ["127.0.0.1", "::1", ALLOWED_V4]) {
    const response = await v1(ctx, "POST", "/handshake/d/", undefined, { address });
    await expectRefused(response, address);
  }
  // no peer address at all (not a TCP request): refused as unknown
  await expectRefused(
    await v1(ctx, "POST", "/handshake/d/", undefined, { address: null }),
    "unknown",
  );
});

Deno.test("addresses match exactly, compared in canonical form", async (t) => {
  const cases: [hosts: string, address: string, allowed: boolean][] = [
    ["::1", "0:0:0:0:0:0:0:1", true],
    ["0:0:0:0:0:0:0:1", "::1", true],
    ["2001:DB8::10", "2001:db8:0:0:0:0:0:10", true],
    ["10.0.0.1", "::ffff:10.0.0.1", true],
    ["::ffff:10.0.0.1", "10.0.0.1", true],
    ["10.0.0.9,10.0.0.1", "10.0.0.1", true],
    [" 10.0.0.9 , 10.0.0.1 ", "10.0.0.1", true],
    ["fe80::1%eth0", "fe80::1%eth0", true],
    ["10.0.0.1", "10.0.0.10", false],
    ["10.0.0.10", "10.0.0.1", false],
    ["10.0.0.1", "10.0.0.2", false],
    ["::1", "::2", false],
    ["::1", "127.0.0.1", false],
    ["127.0.0.1", "::1", false],
    ["10.0.0.1", "::10.0.0.1", false], // IPv4-compatible, not IPv4-mapped
    ["fe80::1%eth0", "fe80::1%eth1", false],
    ["fe80::1%eth0", "fe80::1", false],
  ];
  for (const [hosts, address, allowed] of cases) {
    await t.step(`${hosts} ${allowed ? "allows" : "refuses"} ${address}`, async () => {
      const ctx = await setup({ SVC_DEPRECATED_API_HOST: hosts });
      const response = await v1(ctx, "POST", "/handshake/d/", undefined, { address });
      if (allowed) assert.deepEqual(await expectOk(response), { reposted: 0 });
      else await expectRefused(response, address);
    });
  }
});

Deno.test("a listed entry that is no IP address stops the start: a configuration error", async () => {
  for (const entry of ["localhost", "010.0.0.2", "10.0.0.0/8"]) {
    await assert.rejects(
      () => setup({ SVC_DEPRECATED_API_HOST: `10.0.0.1,${entry}` }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.setting, "SVC_DEPRECATED_API_HOST");
        assert.ok(error.message.includes(JSON.stringify(entry)), error.message);
        return true;
      },
    );
  }
});

Deno.test("X-Forwarded-For is ignored unless SVC_TRUST_PROXY=true", async () => {
  const ctx = await setup({ SVC_DEPRECATED_API_HOST: ALLOWED_HOSTS });
  for (const forwarded of [ALLOWED_V4, `${OTHER_V4}, ${ALLOWED_V4}`, ALLOWED_V6]) {
    const response = await v1(ctx, "POST", "/handshake/d/", undefined, {
      address: OTHER_V4,
      headers: { "X-Forwarded-For": forwarded },
    });
    await expectRefused(response, OTHER_V4);
  }
  // and a listed peer stays allowed whatever the header says
  const response = await v1(ctx, "POST", "/handshake/d/", undefined, {
    headers: { "X-Forwarded-For": OTHER_V4 },
  });
  assert.deepEqual(await expectOk(response), { reposted: 0 });
});

Deno.test("with SVC_TRUST_PROXY=true, only the last X-Forwarded-For hop counts", async (t) => {
  const ctx = await setup({ SVC_DEPRECATED_API_HOST: ALLOWED_HOSTS, SVC_TRUST_PROXY: "true" });
  const proxy = "198.51.100.1"; // the peer: a proxy, not listed itself
  const send = (forwarded?: string | string[]) => {
    const headers = new Headers();
    for (const value of [forwarded ?? []].flat()) headers.append("X-Forwarded-For", value);
    return v1(ctx, "POST", "/handshake/d/", undefined, { address: proxy, headers });
  };
  const allowed: (string | string[])[] = [
    ALLOWED_V4,
    `${OTHER_V4}, ${ALLOWED_V4}`,
    `${OTHER_V4},${ALLOWED_V4}`,
    `unknown, ${ALLOWED_V6}`,
    `${ALLOWED_V4}:4711`,
    `[${ALLOWED_V6}]`,
    `[${ALLOWED_V6}]:4711`,
    "2001:DB8:0:0:0:0:0:10",
    `::ffff:${ALLOWED_V4}`,
    [OTHER_V4, ALLOWED_V4], // two headers are one list: the last hop is the second's last
  ];
  for (const forwarded of allowed) {
    await t.step(`allowed: ${forwarded}`, async () => {
      assert.deepEqual(await expectOk(await send(forwarded)), { reposted: 0 });
    });
  }
  const refused: [forwarded: string | string[], named: string][] = [
    [`${ALLOWED_V4}, ${OTHER_V4}`, OTHER_V4],
    [`${ALLOWED_V6}, ${OTHER_V6}`, OTHER_V6],
    [[ALLOWED_V4, OTHER_V4], OTHER_V4],
    ["unknown", "unknown"],
    [`${ALLOWED_V4}, garbage`, "garbage"],
    [`${ALLOWED_V4},`, "unknown"],
    ["", "unknown"],
  ];
  for (const [forwarded, named] of refused) {
    await t.step(`refused: ${JSON.stringify(forwarded)}`, async () => {
      const response = await send(forwarded);
      const body = await expectError(response, 403, "Forbidden");
      assert.equal(
        body.message,
        `client address ${named} (X-Forwarded-For) is not allowed on the 1.0 API ` +
          "(SVC_DEPRECATED_API_HOST)",
      );
    });
  }
  await t.step("no header: the peer's address", async () => {
    await expectRefused(await send(), proxy);
    const direct = await v1(ctx, "POST", "/handshake/d/", undefined, { address: ALLOWED_V4 });
    assert.deepEqual(await expectOk(direct), { reposted: 0 });
  });
  await t.step("a long header value is quoted short", async () => {
    const body = await expectError(await send("9".repeat(5000)), 403, "Forbidden");
    assert.ok(body.message.length < 200, body.message);
  });
});

Deno.test("a refused request changes nothing: DND stays off", async () => {
  const ctx = await setup({ SVC_DEPRECATED_API_HOST: ALLOWED_HOSTS });
  const alice = await ctiUser(ctx, "alice");
  const response = await v1(ctx, "POST", "/dnd/d/alice/", { state: true }, { address: OTHER_V4 });
  await expectRefused(response, OTHER_V4);
  assert.equal((await getUser(ctx.services.store, alice.id))!.services.dnd.enabled, false);
});

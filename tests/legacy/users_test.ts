/**
 * The 1.0 routes naming a user: connect, dnd, the three forwards, historyByUsername; the paths with
 * and without their trailing slash and with any domain; and the user auto-connected by every call
 * naming it (decisions §2), which a 2.0 dial then sees.
 */
import assert from "node:assert/strict";
import type { ExportedMessage } from "../../lib/events/messages.ts";
import { type CallRecord, recordCalls } from "../../lib/store/call_history.ts";
import { isConnected } from "../../lib/store/connections.ts";
import { getUser, type UserRecord } from "../../lib/store/users.ts";
import {
  bearer,
  ctiUser,
  expectError,
  login,
  postJson,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";
import { phoneUser } from "../lib/platform/fixtures.ts";
import { ALLOWED_HOSTS, expectOk, expectSuccess, legacySim, routeTable, v1 } from "./fixtures.ts";

const HOUR = 3600_000;

async function fixture() {
  const ctx = await setup({ SVC_DEPRECATED_API_HOST: ALLOWED_HOSTS });
  const alice = await ctiUser(ctx, "alice");
  const post = (path: string, body?: unknown) => v1(ctx, "POST", path, body);
  return { ctx, alice, post };
}

const connected = (ctx: TestContext, user: UserRecord) =>
  isConnected(ctx.services.store, user.id, ctx.clock.now());

/** Bodies every DND and forward route refuses, with the code and message of each. */
const BAD_BODIES: [body: unknown, code: string, message: RegExp][] = [
  ["", "JsonBodyNotFound", /no JSON body/],
  ["  ", "JsonBodyNotFound", /no JSON body/],
  ["{oops", "JsonErrorDecoding", /not valid JSON/],
  ["[]", "JsonErrorDecoding", /JSON object/],
  ["null", "JsonErrorDecoding", /JSON object/],
  [{}, "JsonErrorDecoding", /^field state: required$/],
  [{ state: "yes" }, "JsonErrorDecoding", /^field state: expected a boolean$/],
  [{ state: 1 }, "JsonErrorDecoding", /^field state: expected a boolean$/],
];

Deno.test("POST connect: the password connects the user", async (t) => {
  const { ctx, alice, post } = await fixture();

  await t.step(
    "wrong password, unknown user: 401 InvalidCredentials, nobody connected",
    async () => {
      for (
        const path of ["/connect/d/alice/", "/connect/d/nobody/", `/connect/d/${"x".repeat(300)}/`]
      ) {
        await expectError(
          await post(path, { password: "nope" }),
          401,
          "InvalidCredentials",
          /^invalid login and\/or password$/,
        );
      }
      assert.equal(await connected(ctx, alice), false);
    },
  );

  await t.step("bad bodies: 400 InvalidJson, as /auth/login", async () => {
    for (const body of ["", "{oops", "[]", {}, { password: 5 }, { login: "alice" }]) {
      await expectError(await post("/connect/d/alice/", body), 400, "InvalidJson");
    }
  });

  await t.step("the right password: success, connected for the token TTL", async () => {
    await expectSuccess(await post("/connect/d/alice/", { password: "alice-pw" }));
    assert.equal(await connected(ctx, alice), true);
    await ctx.clock.advance(7200_000 - 1);
    assert.equal(await connected(ctx, alice), true);
    await ctx.clock.advance(1);
    assert.equal(await connected(ctx, alice), false, "not after the token TTL (7200 s)");
  });

  await t.step("failures count with /auth/login's: 429 TooManyAttempts after 10", async () => {
    for (let i = 0; i < 10; i++) {
      await expectError(
        await post("/connect/d/alice/", { password: "nope" }),
        401,
        "InvalidCredentials",
      );
    }
    await expectError(
      await post("/connect/d/alice/", { password: "alice-pw" }),
      429,
      "TooManyAttempts",
    );
    const loginAnswer = await postJson(ctx, "/svc/api/2.0/auth/login", {
      login: "alice",
      password: "alice-pw",
    });
    await expectError(loginAnswer, 429, "TooManyAttempts");
  });
});

Deno.test("POST dnd: sets the user's DND as the 2.0 route does", async (t) => {
  const { ctx, alice, post } = await fixture();
  const dnd = async () => (await getUser(ctx.services.store, alice.id))!.services.dnd.enabled;

  await t.step("state true, then false", async () => {
    await expectSuccess(await post("/dnd/d/alice/", { state: true }));
    assert.equal(await dnd(), true);
    await expectSuccess(await post("/dnd/d/alice", { state: false }));
    assert.equal(await dnd(), false);
    const updates = (await ctx.services.events.retained()).filter((event: ExportedMessage) =>
      event.message.msgType === "UserConfigUpdate"
    );
    assert.deepEqual(
      updates.map((event) => (event.message as { dndEnabled: boolean }).dndEnabled),
      [true, false],
    );
  });

  await t.step("bad bodies: JsonBodyNotFound, JsonErrorDecoding", async () => {
    for (const [body, code, message] of BAD_BODIES) {
      await expectError(await post("/dnd/d/alice/", body), 400, code, message);
    }
  });

  await t.step("an unknown user: 400 UserNotFound", async () => {
    await expectError(
      await post("/dnd/d/nobody/", { state: true }),
      400,
      "UserNotFound",
      /^user nobody not found$/,
    );
    await expectError(
      await post(`/dnd/d/${"x".repeat(300)}/`, { state: true }),
      400,
      "UserNotFound",
    );
  });
});

Deno.test("POST uncForward, naForward, busyForward: set the user's forwards", async (t) => {
  const { ctx, alice, post } = await fixture();
  const forwards = async () => (await getUser(ctx.services.store, alice.id))!.forwards;
  const methods = [
    ["uncForward", "unconditional"],
    ["naForward", "noanswer"],
    ["busyForward", "busy"],
  ] as const;
  for (const [method, kind] of methods) {
    await t.step(method, async () => {
      const path = `/${method}/d/alice/`;
      await expectSuccess(await post(path, { state: true, destination: " 1002 " }));
      assert.deepEqual((await forwards())[kind], { enabled: true, destination: "1002" });
      // disabled without a destination: the destination is kept for the next time
      await expectSuccess(await post(path, { state: false }));
      assert.deepEqual((await forwards())[kind], { enabled: false, destination: "1002" });
      await expectSuccess(await post(path, { state: true }));
      assert.deepEqual((await forwards())[kind], { enabled: true, destination: "1002" });
      await expectSuccess(await post(path, { state: false, destination: "" }));
      assert.deepEqual((await forwards())[kind], { enabled: false, destination: null });
      await expectError(
        await post(path, { state: true }),
        400,
        "BadRequest",
        new RegExp(`^an enabled ${kind} forward needs a destination$`),
      );
      await expectError(
        await post(path, { state: true, destination: "1".repeat(129) }),
        400,
        "BadRequest",
        /longer than 128/,
      );
      for (const [body, code, message] of BAD_BODIES) {
        await expectError(await post(path, body), 400, code, message);
      }
      await expectError(
        await post(path, { state: true, destination: 1002 }),
        400,
        "JsonErrorDecoding",
        /^field destination: expected a string$/,
      );
      await expectError(
        await post(`/${method}/d/nobody/`, { state: false }),
        400,
        "UserNotFound",
      );
    });
  }
  // only the three kinds were touched, each left disabled
  assert.deepEqual(Object.keys(await forwards()).sort(), ["busy", "noanswer", "unconditional"]);
});

Deno.test("GET historyByUsername: ?size and ?days, a bare list of entries", async (t) => {
  const { ctx, alice } = await fixture();
  const bob = await ctiUser(ctx, "bob");
  let serial = 0;
  /** A call of alice that started `ago` ms ago, answered after 2 s, 30 s of talk. */
  const call = (ago: number): CallRecord => {
    const startMs = ctx.clock.now() - ago;
    return {
      id: `${Math.floor(startMs / 1000)}.${++serial}`,
      userId: alice.id,
      startMs,
      answeredMs: startMs + 2000,
      endMs: startMs + 32_000,
      srcUsername: "alice",
      dstUsername: "bob",
      srcNum: "1001",
      dstNum: "1002",
      status: "emitted",
    };
  };
  // 12 calls, one every 6 hours, the newest an hour ago (so 4 in the last day, 8 in two); and
  // one of bob's, which never shows
  await recordCalls(
    ctx.services.store,
    Array.from({ length: 12 }, (_, i) => call(HOUR + i * 6 * HOUR)),
  );
  await recordCalls(ctx.services.store, [{ ...call(HOUR), userId: bob.id, id: "other" }]);
  const get = async (query: string, path = "/historyByUsername/example.com/alice/") =>
    await v1(ctx, "GET", `${path}${query}`);
  const starts = async (query: string, path?: string) =>
    ((await expectOk(await get(query, path))) as { start: string }[]).map((entry) => entry.start);
  const hoursAgo = (hours: number) =>
    new Date(ctx.clock.now() - hours * HOUR).toISOString().slice(0, 19).replace("T", " ");

  await t.step("?size=n: the last n calls, newest first; 10 without a query", async () => {
    assert.deepEqual(await starts("?size=2"), [hoursAgo(1), hoursAgo(7)]);
    assert.equal((await starts("")).length, 10);
    assert.equal((await starts("?size=1000")).length, 12);
    const [first] = (await expectOk(await get("?size=1"))) as object[];
    assert.deepEqual(first, {
      start: hoursAgo(1),
      duration: "00:00:30",
      srcUsername: "alice",
      dstUsername: "bob",
      srcNum: "1001",
      dstNum: "1002",
      status: "emitted",
    });
  });

  await t.step("?days=n: the calls of the last n × 24 h", async () => {
    assert.deepEqual(await starts("?days=1"), [1, 7, 13, 19].map(hoursAgo));
    assert.equal((await starts("?days=2")).length, 8);
    assert.equal((await starts("?days=365")).length, 12);
  });

  await t.step("without the trailing slash, any domain", async () => {
    assert.equal((await starts("?size=3", "/historyByUsername/other.domain/alice")).length, 3);
  });

  await t.step("bad values, both at once: 400 BadRequest", async () => {
    const bad: [string, RegExp][] = [
      ["?size=0", /^size must be an integer from 1 to 1000$/],
      ["?size=1001", /^size must be an integer from 1 to 1000$/],
      ["?size=abc", /^size must be/],
      ["?size=", /^size must be/],
      ["?days=0", /^days must be an integer from 1 to 365$/],
      ["?days=1.5", /^days must be/],
      ["?size=2&days=1", /^give size or days, not both$/],
    ];
    for (const [query, message] of bad) {
      await expectError(await get(query), 400, "BadRequest", message);
    }
  });

  await t.step("an unknown user: 400 UserNotFound", async () => {
    await expectError(await get("?size=1", "/historyByUsername/d/nobody/"), 400, "UserNotFound");
  });
});

Deno.test("every route naming a user connects it; a 2.0 dial then passes", async (t) => {
  const f = await legacySim();
  const ws = await webServiceUser(f.ctx, ["svc.rest.dial.#"]);
  const token = await login(f.ctx, "webservice", ws.login);
  const dial2 = (username: string) =>
    postJson(f.ctx, `/svc/api/2.0/dial/number/${username}`, { destination: "0612345678" }, {
      ...bearer(token),
    });

  await t.step(
    "a 2.0 dial for a fresh user fails as not connected, works after a 1.0 call",
    async () => {
      const erin = await phoneUser(f.t, "erin", "1005", { password: "erin-pw" });
      await expectError(await dial2("erin"), 400, "BadRequest", /^user erin is not connected$/);
      await expectOk(await f.call("GET", "/historyByUsername/d/erin/?size=1"));
      assert.equal(await connected(f.ctx, erin), true);
      await expectSuccess(await dial2("erin"));
    },
  );

  const named = routeTable(f.queue.id, { username: "USER" }).filter((route) =>
    route.path.includes("/USER")
  );
  assert.equal(named.length, 10);
  let n = 0;
  for (const route of named) {
    await t.step(`${route.method} ${route.path}`, async () => {
      const username = `fresh${++n}`;
      const user = await phoneUser(f.t, username, `11${String(n).padStart(2, "0")}`, {
        password: `${username}-pw`,
      });
      assert.equal(await connected(f.ctx, user), false);
      const body = route.path.startsWith("/connect/") ? { password: `${username}-pw` } : route.body;
      const response = await f.call(route.method, route.path.replace("USER", username), body);
      route.answer(await expectOk(response));
      assert.equal(await connected(f.ctx, user), true);
    });
  }

  await t.step("a refused body or a wrong password connects nobody", async () => {
    const gina = await phoneUser(f.t, "gina", "1190", { password: "gina-pw" });
    await expectError(
      await f.call("POST", "/dnd/d/gina/", { state: "on" }),
      400,
      "JsonErrorDecoding",
    );
    await expectError(await f.call("POST", "/dial/d/gina/", {}), 400, "BadRequest");
    await expectError(
      await f.call("POST", "/connect/d/gina/", { password: "nope" }),
      401,
      "InvalidCredentials",
    );
    await expectError(await f.call("GET", "/historyByUsername/d/gina/?size=0"), 400, "BadRequest");
    assert.equal(await connected(f.ctx, gina), false);
  });
});

Deno.test("every route with and without the trailing slash, with any domain", async (t) => {
  const f = await legacySim();
  const domains = ["example.com", "x", "site_2", "%C3%A9t%C3%A9", "10.0.0.1", "a%2Fb"];
  for (const domain of domains) {
    for (const slash of ["/", ""]) {
      for (const route of routeTable(f.queue.id, { domain, slash })) {
        await t.step(`${route.method} ${route.path}`, async () => {
          route.answer(await expectOk(await f.call(route.method, route.path, route.body)));
        });
      }
      await f.t.advance(60_000);
    }
  }
});

Deno.test("auto-connect in a loop: the connection is written again only once 60 s of it went", async () => {
  const { ctx, alice } = await fixture();
  const key = ["connections", alice.id];
  const written = async () => (await ctx.services.store.get(key)).versionstamp;
  const call = async () => expectOk(await v1(ctx, "GET", "/historyByUsername/d/alice?size=1"));
  await call();
  const first = await written();
  assert.ok(first, "connected");
  await ctx.clock.advance(59_000);
  await call();
  assert.equal(await written(), first, "not written again within 60 s");
  await ctx.clock.advance(2_000);
  await call();
  assert.notEqual(await written(), first, "written again after 60 s");
  await ctx.clock.advance(7200 * 1000 - 1);
  assert.equal(await connected(ctx, alice), true, "connected for the TTL from the last write");
});

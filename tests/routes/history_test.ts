import assert from "node:assert/strict";
import { type CallRecord, pruneCallsBefore, recordCalls } from "../../lib/store/call_history.ts";
import { Store } from "../../lib/store/store.ts";
import type { UserRecord } from "../../lib/store/users.ts";
import {
  bearer,
  ctiUser,
  expectError,
  expectForbidden,
  login,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

const V2 = "/svc/api/2.0";
const SECOND = 1000;
const HOUR = 3600 * SECOND;
const DAY = 24 * HOUR;

let serial = 0;

/** A record of `user` that started `ago` ms before now; answered after 2 s, 30 s of talk. */
function call(
  ctx: TestContext,
  user: UserRecord,
  ago: number,
  fields: Partial<CallRecord> = {},
): CallRecord {
  const startMs = ctx.clock.now() - ago;
  return {
    id: `${Math.floor(startMs / 1000)}.${++serial}`,
    userId: user.id,
    startMs,
    answeredMs: startMs + 2 * SECOND,
    endMs: startMs + 32 * SECOND,
    srcUsername: user.username!,
    dstUsername: "bob",
    srcNum: "1001",
    dstNum: "1002",
    status: "emitted",
    ...fields,
  };
}

async function fixture() {
  const ctx = await setup();
  const alice = await ctiUser(ctx, "alice");
  const other = await ctiUser(ctx, "carol");
  const ws = await webServiceUser(ctx, ["svc.rest.history.#"]);
  let token = await login(ctx, "webservice", ws.login);
  /** A fresh token, once virtual time went past the last one's TTL. */
  const relogin = async () => {
    token = await login(ctx, "webservice", ws.login);
  };
  const get = async (path: string, withToken?: string) =>
    await ctx.app.request(`${V2}${path}`, { headers: bearer(withToken ?? token) });
  /** The entries of a successful answer. */
  const entries = async (path: string) => {
    const response = await get(path);
    const text = await response.text();
    assert.equal(response.status, 200, text);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    const body = JSON.parse(text);
    assert.deepEqual(Object.keys(body), ["res", "data"]);
    assert.equal(body.res, "success");
    assert.deepEqual(Object.keys(body.data), ["entries"]);
    return body.data.entries as Record<string, string>[];
  };
  return { ctx, alice, other, get, entries, relogin };
}

Deno.test("GET /history/{username}?size=", async (t) => {
  const { ctx, alice, other, get, entries } = await fixture();
  // 12 calls of alice, one per hour, the newest an hour ago; carol's calls never show
  await recordCalls(
    ctx.services.store,
    Array.from({ length: 12 }, (_, i) => call(ctx, alice, (i + 1) * HOUR, { dstNum: `${i}` })),
  );
  await recordCalls(ctx.services.store, [call(ctx, other, 10 * SECOND)]);

  await t.step("10 by default, newest first, with the entry fields", async () => {
    const found = await entries("/history/alice");
    assert.equal(found.length, 10);
    assert.deepEqual(found.map((entry) => entry.dstNum), [
      "0",
      "1",
      "2",
      "3",
      "4",
      "5",
      "6",
      "7",
      "8",
      "9",
    ]);
    assert.deepEqual(found[0], {
      start: "2025-12-31 23:00:00",
      duration: "00:00:30",
      srcUsername: "alice",
      dstUsername: "bob",
      srcNum: "1001",
      dstNum: "0",
      status: "emitted",
    });
  });

  await t.step("size 1 to 1000", async () => {
    assert.deepEqual((await entries("/history/alice?size=1")).map((e) => e.dstNum), ["0"]);
    assert.equal((await entries("/history/alice?size=12")).length, 12);
    assert.equal((await entries("/history/alice?size=1000")).length, 12);
    assert.equal((await entries("/history/alice?size=007")).length, 7);
  });

  await t.step("size out of range or not an integer: 400 BadRequest", async () => {
    for (const size of ["0", "1001", "-1", "1.5", "1e2", "abc", "", "+5", "99999999999"]) {
      await expectError(
        await get(`/history/alice?size=${encodeURIComponent(size)}`),
        400,
        "BadRequest",
        /^size must be an integer from 1 to 1000$/,
      );
    }
  });

  await t.step("a user without calls has none; an unknown one: 400 UserNotFound", async () => {
    await ctiUser(ctx, "dave");
    assert.deepEqual(await entries("/history/dave"), []);
    await expectError(await get("/history/nobody"), 400, "UserNotFound", /user nobody not found/);
  });
});

Deno.test("GET /history/days/{username}?days=", async (t) => {
  const { ctx, alice, other, get, entries, relogin } = await fixture();
  await recordCalls(ctx.services.store, [
    call(ctx, alice, 10 * SECOND, { dstNum: "now" }),
    call(ctx, alice, DAY, { dstNum: "one day" }), // exactly at the window's start: included
    call(ctx, alice, DAY + SECOND, { dstNum: "one day and a second" }),
    call(ctx, alice, 3 * DAY, { dstNum: "three days" }),
    call(ctx, alice, 365 * DAY, { dstNum: "a year" }),
    call(ctx, alice, 400 * DAY, { dstNum: "too old" }),
    call(ctx, other, HOUR, { dstNum: "carol's" }),
  ]);
  const numbers = async (path: string) => (await entries(path)).map((entry) => entry.dstNum);

  await t.step("1 day by default: the last 24 hours, newest first", async () => {
    assert.deepEqual(await numbers("/history/days/alice"), ["now", "one day"]);
    assert.deepEqual(await numbers("/history/days/alice?days=1"), ["now", "one day"]);
  });

  await t.step("days 1 to 365", async () => {
    assert.deepEqual(await numbers("/history/days/alice?days=3"), [
      "now",
      "one day",
      "one day and a second",
      "three days",
    ]);
    assert.equal((await numbers("/history/days/alice?days=365")).at(-1), "a year");
    assert.equal((await numbers("/history/days/alice?days=365")).length, 5);
  });

  await t.step("the window moves with the clock", async () => {
    await ctx.clock.advance(DAY);
    await relogin();
    assert.deepEqual(await numbers("/history/days/alice"), []);
    assert.deepEqual(await numbers("/history/days/alice?days=2"), ["now", "one day"]);
  });

  await t.step("days out of range or not an integer: 400 BadRequest", async () => {
    for (const days of ["0", "366", "-1", "2.0", "x", ""]) {
      await expectError(
        await get(`/history/days/alice?days=${encodeURIComponent(days)}`),
        400,
        "BadRequest",
        /^days must be an integer from 1 to 365$/,
      );
    }
  });

  await t.step("an unknown user: 400 UserNotFound", async () => {
    await expectError(await get("/history/days/nobody"), 400, "UserNotFound");
  });
});

Deno.test("history entries: start in UTC, duration from answer to hang-up", async (t) => {
  const { ctx, alice, entries } = await fixture();
  const start = Date.UTC(2025, 11, 31, 9, 5, 7, 999);
  const at = ctx.clock.now() - start;
  await recordCalls(ctx.services.store, [
    call(ctx, alice, at, {
      answeredMs: start + 3 * SECOND,
      endMs: start + 3 * SECOND + 3723.9 * SECOND,
      dstNum: "long",
    }),
    call(ctx, alice, at - 1, { answeredMs: null, status: "missed", dstNum: "missed" }),
    call(ctx, alice, at - 2, {
      answeredMs: start,
      endMs: start + 100 * HOUR,
      status: "answered",
      srcUsername: "",
      srcNum: "0612345678",
      dstUsername: "alice",
      dstNum: "1001",
    }),
  ]);
  await t.step("every field", async () => {
    assert.deepEqual(await entries("/history/alice"), [
      {
        start: "2025-12-31 09:05:08",
        duration: "100:00:00",
        srcUsername: "",
        dstUsername: "alice",
        srcNum: "0612345678",
        dstNum: "1001",
        status: "answered",
      },
      {
        start: "2025-12-31 09:05:08",
        duration: "00:00:00",
        srcUsername: "alice",
        dstUsername: "bob",
        srcNum: "1001",
        dstNum: "missed",
        status: "missed",
      },
      {
        start: "2025-12-31 09:05:07",
        duration: "01:02:03",
        srcUsername: "alice",
        dstUsername: "bob",
        srcNum: "1001",
        dstNum: "long",
        status: "emitted",
      },
    ]);
  });
});

Deno.test("history: every route needs its ACL, CTI users never", async (t) => {
  const { ctx, get } = await fixture();
  await ctiUser(ctx, "a.b");
  const holding = async (acls: string[]) =>
    await login(ctx, "webservice", (await webServiceUser(ctx, acls)).login);
  const sizeOnly = await holding(["svc.rest.history.*.read"]);
  const daysOnly = await holding(["svc.rest.history.days.*.read"]);
  const cti = await login(ctx, "login", "alice");

  await t.step("/history/{username} needs svc.rest.history.{username}.read", async () => {
    await expectForbidden(await get("/history/alice", daysOnly), "svc.rest.history.alice.read");
    await expectForbidden(await get("/history/alice", cti), "svc.rest.history.alice.read");
    assert.equal((await get("/history/alice", sizeOnly)).status, 200);
    await expectForbidden(await get("/history/a.b", daysOnly), "svc.rest.history.a_b.read");
  });

  await t.step("/history/days/{username} needs svc.rest.history.days.{username}.read", async () => {
    const days = "svc.rest.history.days.alice.read";
    await expectForbidden(await get("/history/days/alice", sizeOnly), days);
    await expectForbidden(await get("/history/days/alice", cti), days);
    assert.equal((await get("/history/days/alice", daysOnly)).status, 200);
  });

  await t.step("no token: 400 AuthorizationHeaderNotFound", async () => {
    await expectError(
      await ctx.app.request(`${V2}/history/alice`),
      400,
      "AuthorizationHeaderNotFound",
    );
  });
});

Deno.test("GET /history/{username}: what another process writes or prunes shows in the next answer", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-history-" });
  const ctx = await setup({ SVC_KV: `${dir}/svc.kv` });
  const other = await Store.open(`${dir}/svc.kv`); // a second svc process on the same store
  try {
    const alice = await ctiUser(ctx, "alice");
    const ws = await webServiceUser(ctx, ["svc.rest.history.#"]);
    const token = await login(ctx, "webservice", ws.login);
    const numbers = async (size: number) => {
      const response = await ctx.app.request(`${V2}/history/alice?size=${size}`, {
        headers: bearer(token),
      });
      assert.equal(response.status, 200);
      const { data } = await response.json();
      return data.entries.map((entry: { dstNum: string }) => entry.dstNum);
    };
    await recordCalls(ctx.services.store, [call(ctx, alice, 3 * HOUR, { dstNum: "old" })]);
    assert.deepEqual(await numbers(2), ["old"]);
    assert.deepEqual(await numbers(2), ["old"]); // kept: the same answer
    await recordCalls(other, [call(ctx, alice, 2 * HOUR, { dstNum: "by the other" })]);
    assert.deepEqual(await numbers(2), ["by the other", "old"]);
    await recordCalls(ctx.services.store, [call(ctx, alice, HOUR, { dstNum: "new" })]);
    assert.deepEqual(await numbers(2), ["new", "by the other"]);
    assert.deepEqual(await numbers(5), ["new", "by the other", "old"]); // more than was read
    assert.deepEqual(await numbers(1), ["new"]);
    await pruneCallsBefore(other, ctx.clock.now() - 90 * 60 * SECOND);
    assert.deepEqual(await numbers(5), ["new"]);
  } finally {
    other.close();
    ctx.services.store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

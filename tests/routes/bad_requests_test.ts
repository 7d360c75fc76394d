/**
 * Bad requests that used to reach a route and fail there with a 5xx (issue 15), through the real
 * app: a body that cannot be read in full, and path values no id can have. Each area answers 4xx
 * in its own form, never logs an unhandled error, and refuses the path values without a store
 * read (the same answers with the store closed).
 */
import assert from "node:assert/strict";
import { MAX_PATH_VALUE } from "../../lib/path_values.ts";
import { bearer, login, setup, type TestContext, webServiceUser } from "../helpers.ts";

const V2 = "/svc/api/2.0";
const CLIENT = { remoteAddr: { transport: "tcp", hostname: "192.0.2.10", port: 40_000 } };

/** The app with the demo data set, the 1.0 API open to {@link CLIENT}, and two tokens. */
async function fixture() {
  const ctx = await setup({ SVC_DEMO: "true", SVC_DEPRECATED_API_HOST: "192.0.2.10" });
  const admin = await webServiceUser(ctx, ["#"], "admin");
  const ws = bearer(await login(ctx, "webservice", admin.login));
  const response = await ctx.app.request(`${V2}/auth/login`, {
    method: "POST",
    body: JSON.stringify({ login: "alice", password: "alice-demo" }),
  });
  const cti = bearer((await response.json()).token);
  return { ctx, ws, cti };
}

/** A body stream giving `text`, then failing as Deno.serve's does when the connection breaks. */
const cutStream = (text: string) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(text));
      controller.error(new Deno.errors.BadResource("Cannot read body as underlying resource"));
    },
  });

async function send(
  ctx: TestContext,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: BodyInit,
): Promise<{ status: number; body: unknown }> {
  const init = { method, headers, body, duplex: "half" } as RequestInit;
  const response = await ctx.app.request(path, init, CLIENT);
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text) };
}

const unhandled = (ctx: TestContext) =>
  ctx.logs.filter((line) => line.includes('"unhandled error"'));

/** Routes of each area taking a body, the credentials they need, and the answer to a cut one. */
function bodyRoutes(ws: Record<string, string>, cti: Record<string, string>) {
  const service = (body: unknown) => {
    const { error, message } = body as Record<string, string>;
    return error === "IncompleteBody" &&
      /^the request body could not be read in full/.test(message ?? "");
  };
  return [
    ["POST", `${V2}/dnd/alice`, ws, service],
    ["POST", `${V2}/contact/personal`, cti, service],
    ["POST", `${V2}/contact/import/personal`, cti, service],
    ["POST", `${V2}/dial/toqueue`, ws, service],
    ["POST", `${V2}/callback_lists/callback_requests/csv`, ws, service],
    ["POST", `${V2}/auth/login`, {}, service],
    ["POST", "/svc/api/1.0/dnd/site/alice/", {}, service],
    ["POST", "/svc/api/1.0/agentLogin/", {}, service],
    [
      "POST",
      "/1.1/labels",
      ws,
      (body: unknown) =>
        Array.isArray(body) && /^Input Error - the request body could not be read/.test(body[0]),
    ],
    [
      "PUT",
      "/1.1/users/1",
      ws,
      (body: unknown) =>
        Array.isArray(body) && /^Input Error - the request body could not be read/.test(body[0]),
    ],
    [
      "POST",
      "/agents/by-number/8001/login",
      ws,
      (body: unknown) =>
        /^the request body could not be read/.test((body as { error: string }).error),
    ],
    [
      "POST",
      "/users/me/agents/login",
      cti,
      (body: unknown) =>
        /^the request body could not be read/.test((body as { error: string }).error),
    ],
    ["POST", "/0.1/token", { Authorization: `Basic ${btoa("alice:alice-demo")}` }, (
      body: unknown,
    ) => (body as { reason: string[] }).reason[0] === "Invalid JSON body: the body was cut short"],
  ] as const;
}

Deno.test("a body that cannot be read in full: 400 in each area's form, never a 500", async (t) => {
  const { ctx, ws, cti } = await fixture();
  const routes = bodyRoutes(ws, cti);

  await t.step("the connection breaks during the body", async () => {
    for (const [method, path, headers, form] of routes) {
      const answer = await send(ctx, method, path, { ...headers }, cutStream('{"state": tr'));
      assert.equal(answer.status, 400, `${method} ${path}: ${JSON.stringify(answer.body)}`);
      assert.ok(form(answer.body), `${method} ${path}: ${JSON.stringify(answer.body)}`);
    }
  });

  await t.step("fewer bytes than Content-Length announced", async () => {
    for (const [method, path, headers, form] of routes) {
      const answer = await send(
        ctx,
        method,
        path,
        { ...headers, "Content-Length": "100" },
        '{"state": true}',
      );
      assert.equal(answer.status, 400, `${method} ${path}: ${JSON.stringify(answer.body)}`);
      assert.ok(form(answer.body), `${method} ${path}: ${JSON.stringify(answer.body)}`);
    }
  });

  await t.step("nothing was logged as unhandled", () => {
    assert.deepEqual(unhandled(ctx), []);
  });
});

Deno.test("a body read once in full reaches every reader: JSON, CSV, multipart", async (t) => {
  const { ctx, ws, cti } = await fixture();
  await t.step("a JSON body whose Content-Length is right", async () => {
    const body = '{"state": true}';
    const answer = await send(ctx, "POST", `${V2}/dnd/alice`, {
      ...ws,
      "Content-Length": String(body.length),
    }, body);
    assert.deepEqual(answer, { status: 200, body: { res: "success" } });
  });
  await t.step("a multipart import", async () => {
    const form = new FormData();
    form.append("file", new Blob(["lastname,number\nDoe,1009\n"]), "contacts.csv");
    const answer = await send(ctx, "POST", `${V2}/contact/import/personal`, cti, form);
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
    assert.equal((answer.body as { created: unknown[] }).created.length, 1);
  });
  await t.step("a streamed body without a length", async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"state": '));
        controller.enqueue(new TextEncoder().encode("false}"));
        controller.close();
      },
    });
    const answer = await send(ctx, "POST", `${V2}/dnd/alice`, ws, stream);
    assert.deepEqual(answer, { status: 200, body: { res: "success" } });
  });
});

const LONG = "9".repeat(MAX_PATH_VALUE + 1);

Deno.test("a path value no id can have: the area's unknown answer, without a store read", async (t) => {
  const { ctx, ws, cti } = await fixture();
  const cases = [
    // [method, path, credentials, body, status, body expected]
    ["POST", `${V2}/dnd/${LONG}`, ws, '{"state":true}', 400, {
      error: "UserNotFound",
      message: `user ${"9".repeat(64)}… not found`,
    }],
    ["GET", `${V2}/history/x%00y`, ws, undefined, 400, {
      error: "UserNotFound",
      message: "user x\u0000y not found",
    }],
    ["GET", `${V2}/history/days/${LONG}`, ws, undefined, 400, {
      error: "UserNotFound",
      message: `user ${"9".repeat(64)}… not found`,
    }],
    ["POST", `${V2}/dial/number/${"é".repeat(300)}`, ws, '{"destination":"1002"}', 400, {
      error: "UserNotFound",
      message: `user ${"é".repeat(64)}… not found`,
    }],
    ["GET", `${V2}/contact/personal/${LONG}`, cti, undefined, 404, {
      error: "ContactNotFound",
      message: `contact ${"9".repeat(64)}… does not exist`,
    }],
    ["POST", `${V2}/callback_lists/callback_requests/${LONG}/take`, ws, "{}", 404, {
      error: "CallbackRequestNotFound",
      message: `no callback request ${"9".repeat(64)}…`,
    }],
    ["POST", "/svc/api/1.0/dnd/site/%01/", {}, '{"state":true}', 400, {
      error: "UserNotFound",
      message: "user \u0001 not found",
    }],
    ["GET", `/1.1/users/${LONG}`, ws, undefined, 404, [
      `Resource Not Found - no resource has ('id': '${"9".repeat(64)}…'): ` +
      "the value is longer than 256 characters",
    ]],
    ["PUT", `/1.1/users/1/lines/${"x".repeat(3000)}`, ws, "{}", 404, [
      `Resource Not Found - no resource has ('line_id': '${"x".repeat(64)}…'): ` +
      "the value is longer than 256 characters",
    ]],
    ["GET", `/agents/by-number/${LONG}`, ws, undefined, 404, { error: "no such agent" }],
    ["POST", `/agents/by-id/${LONG}/pause`, ws, "{}", 404, { error: "no such agent" }],
  ] as const;

  const check = async () => {
    for (const [method, path, headers, body, status, expected] of cases) {
      const answer = await send(ctx, method, path, { ...headers }, body);
      assert.deepEqual(answer, { status, body: expected }, `${method} ${path.slice(0, 80)}`);
    }
  };
  await t.step("each area answers as it answers an unknown id", check);
  await t.step("the same with the store closed: nothing was read", async () => {
    ctx.services.store.close();
    await check();
  });
  await t.step("nothing was logged as unhandled", () => {
    assert.deepEqual(unhandled(ctx), []);
  });
});

Deno.test("an over-long value that is a known shape still names nothing: no 503", async () => {
  const { ctx, ws } = await fixture();
  // 2,100 digits: a number, but a key too large for Deno KV to read
  const answer = await send(ctx, "GET", `/1.1/users/${"1".repeat(2_100)}`, ws);
  assert.equal(answer.status, 404);
  assert.deepEqual(unhandled(ctx), []);
});

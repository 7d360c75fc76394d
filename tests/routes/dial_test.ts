import assert from "node:assert/strict";
import type { PhoneEventMessage } from "../../lib/events/messages.ts";
import { findUserByUsername } from "../../lib/store/users.ts";
import {
  bearer,
  type Confd,
  confd,
  ctiUser,
  expectError,
  expectForbidden,
  login,
  postJson,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

const V2 = "/svc/api/2.0";

const expectBadRequest = (response: Response, message?: RegExp) =>
  expectError(response, 400, "BadRequest", message);

async function expectSuccess(response: Response) {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  assert.deepEqual(JSON.parse(text), { res: "success" });
}

/** A CTI user (password `<username>-pw`) with a line in `default`, holding `exten` if given. */
async function userWithLine(api: Confd, username: string, exten?: string) {
  const user = await api.create("/users", {
    firstname: username,
    username,
    password: `${username}-pw`,
  });
  const line = await api.create("/lines", { context: "default" });
  if (exten) {
    const extension = await api.create("/extensions", { exten, context: "default" });
    assert.equal((await api.put(`/lines/${line.id}/extensions/${extension.id}`)).status, 204);
  }
  assert.equal((await api.put(`/users/${user.id}/lines/${line.id}`)).status, 204);
  return user as { id: number; username: string };
}

interface Fixture {
  ctx: TestContext;
  queueId: number;
  /** The web service user's token: every dial ACL and the history's. */
  token: string;
  post(path: string, body: unknown, token?: string): Promise<Response>;
}

/**
 * alice (1001, connected), bob (1002, connected), erin (1003, not connected), carol (no line,
 * connected), dave (a line without extension, connected), the queue `sales` (3000), and a web
 * service user holding every dial ACL.
 */
async function fixture(env: Record<string, string> = {}): Promise<Fixture> {
  const ctx = await setup(env);
  const api = await confd(ctx);
  await userWithLine(api, "alice", "1001");
  await userWithLine(api, "bob", "1002");
  await userWithLine(api, "erin", "1003");
  await userWithLine(api, "dave");
  await ctiUser(ctx, "carol");
  for (const username of ["alice", "bob", "carol", "dave"]) await login(ctx, "login", username);
  const queue = await api.create("/queues", { name: "sales", number: "3000", context: "default" });
  const ws = await webServiceUser(ctx, ["svc.rest.dial.#", "svc.rest.history.#"]);
  const token = await login(ctx, "webservice", ws.login);
  const post = (path: string, body: unknown, withToken = token) =>
    postJson(ctx, `${V2}${path}`, body, bearer(withToken));
  return { ctx, queueId: queue.id, token, post };
}

/** Problems every dial route answers as 400 `BadRequest` (the spec's errors 6). */
async function expectBodyErrors(post: Fixture["post"], path: string, valid: object) {
  await expectBadRequest(await post(path, ""), /no JSON body/);
  await expectBadRequest(await post(path, "{oops"), /not valid JSON/);
  await expectBadRequest(await post(path, "null"));
  await expectBadRequest(await post(path, "[]"));
  await expectBadRequest(await post(path, "3"));
  const variables: [unknown, RegExp][] = [
    [[], /field variables: expected an object of strings/],
    ["a=b", /field variables: expected an object of strings/],
    [null, /field variables: expected an object of strings/],
    [{ a: 1 }, /field variables\.a: expected a string/],
    [{ a: { b: "c" } }, /field variables\.a: expected a string/],
    [{ "a-b": "x" }, /key "a-b" is not 1 to 64 letters, digits or _/],
    [{ "": "x" }, /key "" is not/],
    [{ ["k".repeat(65)]: "x" }, /is not 1 to 64/],
    [{ a: "line\nbreak" }, /field variables\.a: .*control characters/],
    [{ a: "x".repeat(1025) }, /field variables\.a: longer than 1024/],
    [{ a: "x", USR_a: "y" }, /a and USR_a both name USR_a/],
    [Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`v${i}`, "x"])), /more than 32/],
  ];
  for (const [value, message] of variables) {
    await expectBadRequest(await post(path, { ...valid, variables: value }), message);
  }
}

/** Destination problems of the routes that dial a number. */
async function expectDestinationErrors(post: Fixture["post"], path: string, valid: object) {
  const { destination: _, ...rest } = valid as { destination: string };
  await expectBadRequest(await post(path, rest), /^field destination: required$/);
  await expectBadRequest(
    await post(path, { ...rest, destination: 1002 }),
    /^field destination: expected a string$/,
  );
  for (const destination of ["", "abc", " - ", "(0)", "٠٦١٢"]) {
    await expectBadRequest(
      await post(path, { ...rest, destination }),
      /^destination ".*" holds no number to dial$/,
    );
  }
  await expectBadRequest(await post(path, { ...rest, destination: "1".repeat(65) }), /64 digits/);
  await expectBadRequest(
    await post(path, { ...rest, destination: "1".repeat(257) }),
    /field destination: longer than 256/,
  );
}

/**
 * The path user's checks, in order: exists, has a line, is connected. With `needsPhone`, a caller
 * whose line has no extension is refused by the platform.
 */
async function expectCallerErrors(
  post: Fixture["post"],
  route: string,
  body: object,
  needsPhone = true,
) {
  await expectError(
    await post(`${route}/nobody`, body),
    400,
    "UserNotFound",
    /^user nobody not found$/,
  );
  await expectBadRequest(await post(`${route}/carol`, body), /^user carol has no line$/);
  await expectBadRequest(await post(`${route}/erin`, body), /^user erin is not connected$/);
  // a line without an extension is no phone: the platform refuses, with its own message
  if (needsPhone) await expectBadRequest(await post(`${route}/dave`, body));
}

Deno.test("POST /dial/number/{username}", async (t) => {
  const { ctx, post } = await fixture();
  const valid = { destination: "+33 (0)6 12 34 56 78" };

  await t.step("success, with or without variables", async () => {
    await expectSuccess(await post("/dial/number/alice", valid));
    await expectSuccess(
      await post("/dial/number/bob", { destination: "1001", variables: { customer: "42" } }),
    );
    await expectSuccess(await post("/dial/number/alice", { ...valid, variables: {} }));
  });

  await t.step("the body", async () => {
    await expectBodyErrors(post, "/dial/number/alice", valid);
    await expectDestinationErrors(post, "/dial/number/alice", valid);
  });

  await t.step("the path user", async () => {
    await expectCallerErrors(post, "/dial/number", valid);
  });

  await t.step("a connection ends with the login token's lifetime", async () => {
    await ctx.clock.advance(7200 * 1000);
    const ws = await webServiceUser(ctx, ["svc.rest.dial.#"]);
    const token = await login(ctx, "webservice", ws.login);
    await expectBadRequest(
      await post("/dial/number/alice", valid, token),
      /^user alice is not connected$/,
    );
    await login(ctx, "login", "alice");
    await expectSuccess(await post("/dial/number/alice", valid, token));
  });
});

Deno.test("POST /dial/user/{username}", async (t) => {
  const { post } = await fixture();
  const valid = { username: "bob" };

  await t.step("success", async () => {
    await expectSuccess(await post("/dial/user/alice", valid));
    await expectSuccess(await post("/dial/user/bob", { username: "erin", variables: { a: "b" } }));
  });

  await t.step("the body", async () => {
    await expectBodyErrors(post, "/dial/user/alice", valid);
    await expectBadRequest(await post("/dial/user/alice", {}), /^field username: required$/);
    await expectBadRequest(
      await post("/dial/user/alice", { username: 2 }),
      /^field username: expected a string$/,
    );
  });

  await t.step("the callee: unknown, or without a line", async () => {
    await expectBadRequest(
      await post("/dial/user/alice", { username: "nobody" }),
      /^user to call "nobody" not found$/,
    );
    await expectBadRequest(
      await post("/dial/user/alice", { username: "carol" }),
      /^user to call carol has no line$/,
    );
  });

  await t.step("the path user", async () => {
    await expectCallerErrors(post, "/dial/user", valid);
  });
});

Deno.test("POST /dial/fromqueue/{username}", async (t) => {
  const { post, queueId } = await fixture();
  const valid = { destination: "0612345678", queueId };

  await t.step("success, with the optional caller id", async () => {
    await expectSuccess(await post("/dial/fromqueue/alice", valid));
    await expectSuccess(
      await post("/dial/fromqueue/alice", {
        ...valid,
        callerIdName: "Sales",
        callerIdNumber: "+33 1 00 00 00 00",
        variables: { campaign: "spring" },
      }),
    );
    await expectSuccess(
      await post("/dial/fromqueue/alice", { ...valid, callerIdName: "", callerIdNumber: " " }),
    );
  });

  await t.step("the body", async () => {
    await expectBodyErrors(post, "/dial/fromqueue/alice", valid);
    await expectDestinationErrors(post, "/dial/fromqueue/alice", valid);
    const path = "/dial/fromqueue/alice";
    const cases: [unknown, RegExp][] = [
      [{ destination: "1" }, /^field queueId: required$/],
      [{ ...valid, queueId: String(queueId) }, /^field queueId: expected an integer$/],
      [{ ...valid, queueId: 1.5 }, /^field queueId: expected an integer$/],
      [{ ...valid, queueId: null }, /^field queueId: expected an integer$/],
      [{ ...valid, callerIdName: 5 }, /^field callerIdName: expected a string$/],
      [{ ...valid, callerIdNumber: false }, /^field callerIdNumber: expected a string$/],
      [{ ...valid, callerIdName: "x".repeat(81) }, /^field callerIdName: longer than 80/],
      [{ ...valid, callerIdName: "a\r\nb" }, /^field callerIdName: control characters/],
    ];
    for (const [body, message] of cases) await expectBadRequest(await post(path, body), message);
  });

  await t.step("an unknown queue", async () => {
    await expectBadRequest(
      await post("/dial/fromqueue/alice", { ...valid, queueId: 999 }),
      /^no queue id 999$/,
    );
  });

  await t.step("the path user", async () => {
    // the queue rings an agent first: the requester's own phone is not needed
    await expectCallerErrors(post, "/dial/fromqueue", valid, false);
  });
});

Deno.test("POST /dial/toqueue", async (t) => {
  const { post } = await fixture();
  const valid = { destination: "0612345678", queueName: "sales" };

  await t.step("success, callerIdNumber optional", async () => {
    await expectSuccess(await post("/dial/toqueue", valid));
    await expectSuccess(
      await post("/dial/toqueue", { ...valid, callerIdNumber: "0102030405", variables: { a: "" } }),
    );
  });

  await t.step("the body", async () => {
    await expectBodyErrors(post, "/dial/toqueue", valid);
    await expectDestinationErrors(post, "/dial/toqueue", valid);
    await expectBadRequest(
      await post("/dial/toqueue", { destination: "1" }),
      /^field queueName: required$/,
    );
    await expectBadRequest(
      await post("/dial/toqueue", { ...valid, queueName: 1 }),
      /^field queueName: expected a string$/,
    );
    await expectBadRequest(
      await post("/dial/toqueue", { ...valid, callerIdNumber: 1 }),
      /^field callerIdNumber: expected a string$/,
    );
  });

  await t.step("an unknown queue", async () => {
    await expectBadRequest(
      await post("/dial/toqueue", { ...valid, queueName: "support" }),
      /^no queue "support"$/,
    );
  });
});

Deno.test("dial: every route needs its ACL, CTI users never", async (t) => {
  const { ctx, post, queueId } = await fixture();
  const holding = async (acls: string[]) =>
    await login(ctx, "webservice", (await webServiceUser(ctx, acls)).login);
  const others = await holding(["svc.rest.dnd.#", "svc.rest.history.#"]);
  const bobOnly = await holding(["svc.rest.dial.*.bob.create"]);
  const cti = await login(ctx, "login", "alice");
  const routes: [string, unknown, string][] = [
    ["/dial/number/alice", { destination: "1002" }, "svc.rest.dial.number.alice.create"],
    ["/dial/user/alice", { username: "bob" }, "svc.rest.dial.user.alice.create"],
    [
      "/dial/fromqueue/alice",
      { destination: "1002", queueId },
      "svc.rest.dial.fromqueue.create",
    ],
    ["/dial/toqueue", { destination: "1002", queueName: "sales" }, "svc.rest.dial.toqueue.create"],
  ];
  for (const [path, body, acl] of routes) {
    await t.step(`${path} needs ${acl}`, async () => {
      await expectForbidden(await post(path, body, others), acl);
      await expectForbidden(await post(path, body, bobOnly), acl);
      await expectForbidden(await post(path, body, cti), acl);
      await expectSuccess(await post(path, body, await holding([acl])));
      await expectError(
        await postJson(ctx, `${V2}${path}`, body),
        400,
        "AuthorizationHeaderNotFound",
      );
    });
  }
});

// These need the simulated platform and the event export.
Deno.test("a dial makes the phones ring, events with the variables, and history", async (t) => {
  const { ctx, post, token } = await fixture({
    SVC_SIM_ANSWER_MS: "1000",
    SVC_SIM_TALK_MS: "3000",
  });
  await expectSuccess(
    await post("/dial/number/alice", {
      destination: "06 12 34 56 78",
      variables: { customer: "42", USR_ticket: "T-1" },
    }),
  );
  await ctx.clock.advance(60_000);

  await t.step("alice's phone events carry PLATFORM_USERID and the USR_ variables", async () => {
    const alice = await findUserByUsername(ctx.services.store, "alice");
    const phoneEvents = (await ctx.services.events.retained())
      .filter((event) => event.message.msgType === "PhoneEvent" && event.username === "alice")
      .map((event) => (event.message as PhoneEventMessage).ctiMessage);
    const linkedId = phoneEvents[0]?.linkedId;
    assert.match(linkedId ?? "", /^\d+\.\d+$/);
    const userData = { PLATFORM_USERID: String(alice!.id), USR_customer: "42", USR_ticket: "T-1" };
    assert.deepEqual(
      phoneEvents,
      ["EventDialing", "EventEstablished", "EventReleased"].map((eventType) => ({
        eventType,
        DN: "1001",
        otherDN: "0612345678",
        otherDName: "", // an outside number: no name known
        linkedId,
        uniqueId: linkedId, // alice's leg is the call's first
        userData,
        recordState: "inactive",
      })),
    );
  });

  await t.step("the call is in alice's history", async () => {
    const history = await ctx.app.request(`${V2}/history/alice`, { headers: bearer(token) });
    assert.equal(history.status, 200);
    assert.deepEqual(await history.json(), {
      res: "success",
      data: {
        entries: [{
          start: "2026-01-01 00:00:00",
          duration: "00:00:03", // the outside party answered and hung up after SVC_SIM_TALK_MS
          srcUsername: "alice",
          dstUsername: "",
          srcNum: "1001",
          dstNum: "0612345678",
          status: "emitted",
        }],
      },
    });
  });
});

Deno.test("DND and forwards set through 2.0 apply to the next call", async (t) => {
  const { ctx, post } = await fixture({ SVC_SIM_ANSWER_MS: "1000", SVC_SIM_TALK_MS: "2000" });
  const ws = await webServiceUser(ctx, ["svc.rest.dnd.#", "svc.rest.forward.#"]);
  const services = await login(ctx, "webservice", ws.login);
  /** The phone event types of `username`, from the `from`-th retained event on. */
  const eventsOf = async (username: string, from: number) =>
    (await ctx.services.events.retained()).slice(from)
      .filter((event) => event.username === username && event.message.msgType === "PhoneEvent")
      .map((event) => (event.message as PhoneEventMessage).ctiMessage.eventType);

  await t.step("bob in DND: alice's call fails, bob's phone never rings", async () => {
    await expectSuccess(await post("/dnd/bob", { state: true }, services));
    const from = (await ctx.services.events.retained()).length;
    await expectSuccess(await post("/dial/user/alice", { username: "bob" }));
    await ctx.clock.advance(60_000);
    assert.deepEqual(await eventsOf("alice", from), ["EventDialing", "EventFailure"]);
    assert.deepEqual(await eventsOf("bob", from), []);
    await expectSuccess(await post("/dnd/bob", { state: false }, services));
  });

  await t.step("bob forwarding everything to erin: erin's phone rings", async () => {
    await expectSuccess(
      await post("/forward/unconditional/bob", { destination: "1003", enabled: true }, services),
    );
    const from = (await ctx.services.events.retained()).length;
    await expectSuccess(await post("/dial/user/alice", { username: "bob" }));
    await ctx.clock.advance(60_000);
    assert.deepEqual(await eventsOf("bob", from), []);
    assert.deepEqual(await eventsOf("erin", from), [
      "EventRinging",
      "EventEstablished",
      "EventReleased",
    ]);
  });
});

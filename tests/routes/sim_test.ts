/**
 * The simulator's control API (`routes/sim.ts`, decisions §8): every route, its errors and ACLs,
 * and a call played by hand through HTTP.
 */
import assert from "node:assert/strict";
import { lastCalls } from "../../lib/store/call_history.ts";
import { bearer, expectForbidden, login, webServiceUser } from "../helpers.ts";
import { phoneEvents, phoneUser, type SimContext, simSetup } from "../lib/platform/fixtures.ts";

const V2 = "/svc/api/2.0";

/** A client of the 2.0 API holding `acls` (a web service user logged in through the route). */
async function client(t: SimContext, acls: string[]) {
  const user = await webServiceUser(t.ctx, acls);
  const headers = bearer(await login(t.ctx, "webservice", user.login));
  const call = (method: string, path: string, body?: unknown) =>
    Promise.resolve(t.ctx.app.request(`${V2}${path}`, {
      method,
      headers: { ...headers, "Content-Type": "application/json" },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
  return {
    call,
    /** Answers the JSON body, asserting `status`. */
    async json(method: string, path: string, body?: unknown, status = 200) {
      const response = await call(method, path, body);
      const text = await response.text();
      assert.equal(response.status, status, `${method} ${path}: ${text}`);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      return JSON.parse(text);
    },
  };
}

async function expectError(response: Response, status: number, error: string) {
  const text = await response.text();
  assert.equal(response.status, status, text);
  const body = JSON.parse(text);
  assert.equal(body.error, error, text);
  assert.equal(typeof body.message, "string");
  return body;
}

async function fixture() {
  const t = await simSetup({ SVC_SIM_ANSWER_MS: "1000", SVC_SIM_TALK_MS: "5000" });
  const alice = await phoneUser(t, "alice", "1001");
  const bob = await phoneUser(t, "bob", "1002");
  const api = await client(t, ["svc.rest.sim.#"]);
  return { t, alice, bob, api };
}

Deno.test("a call played by hand through the control API", async () => {
  const { t, alice, bob, api } = await fixture();
  const leg = (extension: string, state: string) => ({ extension, state });
  const phonesSeen = async () =>
    (await api.json("GET", "/sim/phones")).map((phone: { extension: string; state: string }) =>
      `${phone.extension} ${phone.state}`
    );
  const legsSeen = async () =>
    (await api.json("GET", "/sim/calls")).flatMap((call: { legs: Record<string, unknown>[] }) =>
      call.legs.map(({ uniqueId: _, ...rest }: Record<string, unknown>) => rest)
    );

  for (const extension of ["1001", "1002"]) {
    assert.deepEqual(
      await api.json("PUT", `/sim/phones/${extension}/policy`, { policy: "manual" }),
      { extension, policy: "manual", answer_ms: 1000, talk_ms: 5000 },
    );
  }
  assert.deepEqual(await phonesSeen(), ["1001 idle", "1002 idle", "external idle"]);

  const { linkedId } = await t.ctx.services.platform.dialNumber(alice, "1002", { ref: "x" });
  assert.deepEqual(await api.json("GET", "/sim/calls"), [{
    linkedId,
    legs: [{ uniqueId: linkedId, extension: "1001", state: "ringing" }],
  }]);
  assert.deepEqual(await phonesSeen(), ["1001 calling", "1002 idle", "external idle"]);

  await t.advance(20_000); // a manual phone rings until ring_seconds (30)
  assert.deepEqual(await api.json("POST", "/sim/phones/1001/answer"), { res: "success" });
  assert.deepEqual(await legsSeen(), [leg("1001", "up"), leg("1002", "ringing")]);
  assert.deepEqual(await phonesSeen(), ["1001 calling", "1002 ringing", "external idle"]);

  await api.json("POST", "/sim/phones/1002/answer");
  assert.deepEqual(await phonesSeen(), ["1001 busy", "1002 busy", "external idle"]);
  await api.json("POST", "/sim/phones/1002/hold");
  assert.deepEqual(await legsSeen(), [leg("1001", "up"), leg("1002", "on_hold")]);
  assert.deepEqual(await phonesSeen(), ["1001 busy", "1002 on_hold", "external idle"]);
  await api.json("POST", "/sim/phones/1002/resume");

  await t.advance(60_000);
  await api.json("POST", "/sim/phones/1002/hangup");
  assert.deepEqual(await api.json("GET", "/sim/calls"), []);
  assert.deepEqual(await phonesSeen(), ["1001 idle", "1002 idle", "external idle"]);

  assert.deepEqual(
    phoneEvents(t.take()).map((e) => `${e.username} ${e.eventType} ${e.otherDN} ${e.linkedId}`),
    [
      `alice EventDialing 1002 ${linkedId}`,
      `bob EventRinging 1001 ${linkedId}`,
      `alice EventEstablished 1002 ${linkedId}`,
      `bob EventEstablished 1001 ${linkedId}`,
      `bob EventOnHold 1001 ${linkedId}`,
      `bob EventEstablished 1001 ${linkedId}`,
      `alice EventReleased 1002 ${linkedId}`,
      `bob EventReleased 1001 ${linkedId}`,
    ],
  );
  const [record] = await lastCalls(t.ctx.services.store, bob.id, 1);
  assert.deepEqual([record?.id, record?.status, record?.srcUsername, record?.endMs], [
    linkedId,
    "answered",
    "alice",
    t.ctx.clock.now(),
  ]);
});

Deno.test("control API errors: 404 PhoneNotFound, 409 NoCall, 400 BadRequest", async (s) => {
  const { t, alice, api } = await fixture();

  await s.step("an unknown phone: 404 PhoneNotFound", async () => {
    for (const action of ["answer", "reject", "hangup", "hold", "resume"]) {
      await expectError(await api.call("POST", `/sim/phones/1999/${action}`), 404, "PhoneNotFound");
    }
    await expectError(
      await api.call("PUT", "/sim/phones/1999/policy", { policy: "auto" }),
      404,
      "PhoneNotFound",
    );
  });

  await s.step("nothing to act on: 409 NoCall", async () => {
    for (const action of ["answer", "reject", "hangup", "hold", "resume"]) {
      const body = await expectError(
        await api.call("POST", `/sim/phones/1001/${action}`),
        409,
        "NoCall",
      );
      assert.equal(body.message, `phone 1001 has no call to ${action}`);
    }
    await expectError(await api.call("POST", "/sim/phones/external/answer"), 409, "NoCall");
    await api.json("PUT", "/sim/phones/1001/policy", { policy: "manual" });
    await t.sim.dialNumber(alice, "1002", {});
    await expectError(await api.call("POST", "/sim/phones/1001/hold"), 409, "NoCall");
  });

  await s.step("a bad policy body: 400 BadRequest", async () => {
    for (
      const body of [
        "{oops",
        "",
        "[]",
        {},
        { policy: "sleepy" },
        { policy: "auto", answer_ms: -1 },
        { policy: "auto", talk_ms: 1.5 },
        { policy: "auto", answer_ms: "100" },
        { policy: "auto", color: "red" },
      ]
    ) {
      await expectError(
        await api.call("PUT", "/sim/phones/1002/policy", body),
        400,
        "BadRequest",
      );
    }
    assert.deepEqual(
      await api.json("PUT", "/sim/phones/external/policy", {
        policy: "busy",
        answer_ms: 0,
        talk_ms: 0,
      }),
      { extension: "external", policy: "busy", answer_ms: 0, talk_ms: 0 },
    );
  });

  await s.step("an unknown action: 404 NotFound", async () => {
    await expectError(await api.call("POST", "/sim/phones/1001/dance"), 404, "NotFound");
    await expectError(await api.call("GET", "/sim/phones/1001"), 404, "NotFound");
  });
});

Deno.test("control API ACLs", async (s) => {
  const { t } = await fixture();
  const narrow = await client(t, ["svc.rest.dial.#", "svc.rest.sim.phones.1002.#"]);
  const routes: [method: string, path: string, acl: string, body?: unknown][] = [
    ["GET", "/sim/phones", "svc.rest.sim.phones.read"],
    ["GET", "/sim/calls", "svc.rest.sim.calls.read"],
    ["PUT", "/sim/phones/1001/policy", "svc.rest.sim.phones.1001.policy.update", {
      policy: "manual",
    }],
    ...["answer", "reject", "hangup", "hold", "resume"].map((action) =>
      [
        "POST",
        `/sim/phones/1001/${action}`,
        `svc.rest.sim.phones.1001.${action}.create`,
      ] as [string, string, string]
    ),
    ["POST", "/sim/phones/10.01/answer", "svc.rest.sim.phones.10_01.answer.create"],
  ];
  for (const [method, path, acl, body] of routes) {
    await s.step(`${method} ${path} needs ${acl}`, async () => {
      await expectForbidden(await narrow.call(method, path, body), acl);
      const allowed = await (await client(t, [acl])).call(method, path, body);
      assert.notEqual(allowed.status, 403, `${method} ${path}`);
      await allowed.body?.cancel();
    });
  }
  await s.step("no token: 400 AuthorizationHeaderNotFound", async () => {
    const response = await t.ctx.app.request(`${V2}/sim/phones`);
    await expectError(response, 400, "AuthorizationHeaderNotFound");
  });
});

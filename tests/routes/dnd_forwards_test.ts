import assert from "node:assert/strict";
import type { EventMessage } from "../../lib/events/messages.ts";
import type { UserRecord } from "../../lib/store/users.ts";
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
const KINDS = ["unconditional", "noanswer", "busy"] as const;

async function expectSuccess(response: Response) {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  assert.deepEqual(JSON.parse(text), { res: "success" });
}

interface Fixture {
  ctx: TestContext;
  api: Confd;
  bob: UserRecord;
  token: string;
  post(path: string, body: unknown, token?: string): Promise<Response>;
}

async function fixture(): Promise<Fixture> {
  const ctx = await setup();
  const api = await confd(ctx);
  const bob = await ctiUser(ctx, "bob");
  const ws = await webServiceUser(ctx, ["svc.rest.dnd.#", "svc.rest.forward.#"]);
  const token = await login(ctx, "webservice", ws.login);
  const post = (path: string, body: unknown, withToken = token) =>
    postJson(ctx, `${V2}${path}`, body, bearer(withToken));
  return { ctx, api, bob, token, post };
}

/** The `UserConfigUpdate` messages published so far, oldest first. */
async function configUpdates(ctx: TestContext): Promise<EventMessage[]> {
  return (await ctx.services.events.retained()).filter((event): event is EventMessage =>
    event.message.msgType === "UserConfigUpdate"
  );
}

/** The exact message for `bob` with `changes` over a user with nothing set. */
function update(user: UserRecord, changes: Record<string, unknown> = {}): EventMessage {
  return {
    username: user.username!,
    message: {
      msgType: "UserConfigUpdate",
      userId: user.id,
      dndEnabled: false,
      uncFwdEnabled: false,
      uncFwdDestination: "",
      naFwdEnabled: false,
      naFwdDestination: "",
      busyFwdEnabled: false,
      busyFwdDestination: "",
      ...changes,
    },
  };
}

/** Body problems every DND and forward route answers the same way (the spec's errors 7). */
async function expectBodyErrors(post: Fixture["post"], path: string, field: string) {
  await expectError(await post(path, ""), 400, "JsonBodyNotFound");
  await expectError(await post(path, "  \n"), 400, "JsonBodyNotFound");
  await expectError(await post(path, "{oops"), 400, "JsonErrorDecoding", /not valid JSON/);
  await expectError(await post(path, "null"), 400, "JsonErrorDecoding");
  await expectError(await post(path, "[true]"), 400, "JsonErrorDecoding");
  await expectError(await post(path, "true"), 400, "JsonErrorDecoding");
  await expectError(await post(path, {}), 400, "JsonErrorDecoding", new RegExp(field));
}

Deno.test("POST /dnd/{username}", async (t) => {
  const { ctx, api, bob, post } = await fixture();

  await t.step("sets DND, as /1.1/users/{id}/services/dnd reads it", async () => {
    await expectSuccess(await post("/dnd/bob", { state: true }));
    assert.deepEqual(await (await api.get(`/users/${bob.id}/services/dnd`)).json(), {
      enabled: true,
    });
    await expectSuccess(await post("/dnd/bob", { state: false, ignored: 1 }));
    assert.deepEqual(await (await api.get(`/users/${bob.id}/services`)).json(), {
      dnd: { enabled: false },
      incallfilter: { enabled: false },
    });
  });

  await t.step("a body sent as text/plain is read all the same", async () => {
    const response = await ctx.app.request(`${V2}/dnd/bob`, {
      method: "POST",
      headers: { ...bearer(await fixtureToken(ctx)), "Content-Type": "text/plain" },
      body: JSON.stringify({ state: true }),
    });
    await expectSuccess(response);
    assert.deepEqual(await (await api.get(`/users/${bob.id}/services/dnd`)).json(), {
      enabled: true,
    });
  });

  await t.step("the body: JsonBodyNotFound, JsonErrorDecoding", async () => {
    await expectBodyErrors(post, "/dnd/bob", "field state: required");
    await expectError(
      await post("/dnd/bob", { state: "true" }),
      400,
      "JsonErrorDecoding",
      /^field state: expected a boolean$/,
    );
    await expectError(await post("/dnd/bob", { state: 1 }), 400, "JsonErrorDecoding");
    await expectError(await post("/dnd/bob", { state: null }), 400, "JsonErrorDecoding");
  });

  await t.step("an unknown user: 400 UserNotFound", async () => {
    await expectError(
      await post("/dnd/nobody", { state: true }),
      400,
      "UserNotFound",
      /user nobody not found/,
    );
  });
});

/** A second web service token for the DND route (the fixture's own lives in `fixture`). */
async function fixtureToken(ctx: TestContext) {
  const ws = await webServiceUser(ctx, ["svc.rest.dnd.bob.create"]);
  return await login(ctx, "webservice", ws.login);
}

Deno.test("POST /forward/{kind}/{username}", async (t) => {
  const { api, bob, post } = await fixture();
  const path = `/users/${bob.id}/forwards`;

  for (const kind of KINDS) {
    await t.step(`${kind}: set, then read through /1.1`, async () => {
      await expectSuccess(
        await post(`/forward/${kind}/bob`, { destination: "1002", enabled: true }),
      );
      assert.deepEqual(await (await api.get(`${path}/${kind}`)).json(), {
        enabled: true,
        destination: "1002",
      });
      // disabled, the destination sent is kept for later
      await expectSuccess(
        await post(`/forward/${kind}/bob`, { destination: " 06 12 34 ", enabled: false }),
      );
      assert.deepEqual(await (await api.get(`${path}/${kind}`)).json(), {
        enabled: false,
        destination: "06 12 34",
      });
      await expectSuccess(await post(`/forward/${kind}/bob`, { destination: "", enabled: false }));
      assert.deepEqual(await (await api.get(`${path}/${kind}`)).json(), {
        enabled: false,
        destination: null,
      });
    });
  }

  await t.step("the destination is kept as sent, trimmed", async () => {
    await expectSuccess(
      await post("/forward/busy/bob", { destination: "  +33 (0)6 12 34 56 78 ", enabled: true }),
    );
    assert.deepEqual((await (await api.get(path)).json()).busy, {
      enabled: true,
      destination: "+33 (0)6 12 34 56 78",
    });
    await expectSuccess(await post("/forward/busy/bob", { destination: "", enabled: false }));
  });

  await t.step("enabled with no destination: 400 BadRequest, nothing changes", async () => {
    for (const destination of ["", "   "]) {
      await expectError(
        await post("/forward/unconditional/bob", { destination, enabled: true }),
        400,
        "BadRequest",
        /an enabled unconditional forward needs a destination/,
      );
    }
    await expectError(
      await post("/forward/noanswer/bob", { destination: "1".repeat(129), enabled: true }),
      400,
      "BadRequest",
      /longer than 128/,
    );
    assert.deepEqual(await (await api.get(path)).json(), {
      busy: { enabled: false, destination: null },
      noanswer: { enabled: false, destination: null },
      unconditional: { enabled: false, destination: null },
    });
  });

  await t.step("the body: JsonBodyNotFound, JsonErrorDecoding", async () => {
    await expectBodyErrors(post, "/forward/busy/bob", "field destination: required");
    const cases: [unknown, RegExp][] = [
      [{ destination: "1002" }, /^field enabled: required$/],
      [{ enabled: false }, /^field destination: required$/],
      [{ destination: 1002, enabled: true }, /^field destination: expected a string$/],
      [{ destination: null, enabled: false }, /^field destination: expected a string$/],
      [{ destination: "1002", enabled: "true" }, /^field enabled: expected a boolean$/],
    ];
    for (const [body, message] of cases) {
      await expectError(await post("/forward/busy/bob", body), 400, "JsonErrorDecoding", message);
    }
  });

  await t.step("an unknown user: 400 UserNotFound; an unknown kind: 404", async () => {
    await expectError(
      await post("/forward/busy/nobody", { destination: "1", enabled: true }),
      400,
      "UserNotFound",
    );
    await expectError(
      await post("/forward/sometimes/bob", { destination: "1", enabled: true }),
      404,
      "NotFound",
    );
  });
});

Deno.test("DND and forwards: every route needs its ACL, CTI users never", async (t) => {
  const { ctx, post } = await fixture();
  await ctiUser(ctx, "a.b");
  const holding = async (acls: string[]) =>
    await login(ctx, "webservice", (await webServiceUser(ctx, acls)).login);
  const dndOnly = await holding(["svc.rest.dnd.#"]);
  const forwardOnly = await holding(["svc.rest.forward.#"]);
  const alice = await holding(["svc.rest.dnd.alice.create", "svc.rest.forward.*.alice.create"]);
  const cti = await login(ctx, "login", "bob");
  const routes: [string, unknown, string, string][] = [
    ["/dnd/bob", { state: true }, "svc.rest.dnd.bob.create", forwardOnly],
    ...KINDS.map((kind): [string, unknown, string, string] => [
      `/forward/${kind}/bob`,
      { destination: "1", enabled: true },
      `svc.rest.forward.${kind}.bob.create`,
      dndOnly,
    ]),
  ];
  for (const [path, body, acl, other] of routes) {
    await t.step(`${path} needs ${acl}`, async () => {
      await expectForbidden(await post(path, body, other), acl);
      await expectForbidden(await post(path, body, alice), acl);
      await expectForbidden(await post(path, body, cti), acl);
      await expectError(
        await postJson(ctx, `${V2}${path}`, body),
        400,
        "AuthorizationHeaderNotFound",
      );
    });
  }
  await t.step("a dot in the path user never adds ACL words", async () => {
    await expectForbidden(
      await post("/dnd/a.b", { state: true }, alice),
      "svc.rest.dnd.a_b.create",
    );
    const exact = await holding(["svc.rest.dnd.a_b.create"]);
    await expectSuccess(await post("/dnd/a.b", { state: true }, exact));
  });
});

// These read the event log (`events.retained()`), so they need the event export.
Deno.test("each change publishes one UserConfigUpdate, whichever API makes it", async (t) => {
  const { ctx, api, bob, post } = await fixture();
  const path = `/users/${bob.id}`;
  let expected: EventMessage[] = [];
  const expectUpdates = async (...added: Record<string, unknown>[]) => {
    expected = [...expected, ...added.map((changes) => update(bob, changes))];
    assert.deepEqual(await configUpdates(ctx), expected);
  };

  await t.step("2.0 DND", async () => {
    await expectSuccess(await post("/dnd/bob", { state: true }));
    await expectUpdates({ dndEnabled: true });
  });

  await t.step("no change, no event", async () => {
    await expectSuccess(await post("/dnd/bob", { state: true }));
    assert.equal((await api.put(`${path}/services/dnd`, { enabled: true })).status, 204);
    await expectUpdates();
  });

  await t.step("/1.1 DND publishes the same event", async () => {
    assert.equal((await api.put(`${path}/services/dnd`, { enabled: false })).status, 204);
    await expectUpdates({ dndEnabled: false });
    // the incoming call filter is not part of the event
    assert.equal((await api.put(`${path}/services/incallfilter`, { enabled: true })).status, 204);
    await expectUpdates();
  });

  await t.step("2.0 forwards, each with the whole state", async () => {
    await expectSuccess(
      await post("/forward/unconditional/bob", { destination: "1002", enabled: true }),
    );
    await expectSuccess(
      await post("/forward/noanswer/bob", { destination: "1003", enabled: true }),
    );
    await expectSuccess(await post("/forward/busy/bob", { destination: "1004", enabled: false }));
    await expectUpdates(
      { uncFwdEnabled: true, uncFwdDestination: "1002" },
      {
        uncFwdEnabled: true,
        uncFwdDestination: "1002",
        naFwdEnabled: true,
        naFwdDestination: "1003",
      },
      {
        uncFwdEnabled: true,
        uncFwdDestination: "1002",
        naFwdEnabled: true,
        naFwdDestination: "1003",
        busyFwdDestination: "1004",
      },
    );
  });

  await t.step("a refused change publishes nothing", async () => {
    await expectError(
      await post("/forward/busy/bob", { destination: "", enabled: true }),
      400,
      "BadRequest",
    );
    assert.equal(
      (await api.put(`${path}/forwards/busy`, { enabled: true, destination: "" })).status,
      400,
    );
    await expectUpdates();
  });

  await t.step("/1.1 forwards: one, and several in one event", async () => {
    assert.equal((await api.put(`${path}/forwards/unconditional`, { enabled: false })).status, 204);
    assert.equal(
      (await api.put(`${path}/forwards`, {
        busy: { enabled: true },
        noanswer: { enabled: false, destination: null },
      })).status,
      204,
    );
    await expectUpdates(
      {
        uncFwdDestination: "1002",
        naFwdEnabled: true,
        naFwdDestination: "1003",
        busyFwdDestination: "1004",
      },
      { uncFwdDestination: "1002", busyFwdEnabled: true, busyFwdDestination: "1004" },
    );
    // and 2.0 sees the same record: setting what /1.1 set changes nothing
    await expectSuccess(await post("/forward/busy/bob", { destination: "1004", enabled: true }));
    await expectUpdates();
  });
});

Deno.test("concurrent changes of one user: one event per change that took, in commit order", async () => {
  const { ctx, bob, post } = await fixture();
  // 30 requests at once, each losing its commit to the others and running again
  const states = Array.from({ length: 30 }, (_, n) => n % 3 !== 0);
  const answers = await Promise.all(states.map((state) => post("/dnd/bob", { state })));
  for (const answer of answers) await expectSuccess(answer);
  const events = await configUpdates(ctx);
  const dnd = events.map((event) => (event.message as { dndEnabled: boolean }).dndEnabled);
  // each event is a change: it differs from the one before (the user started without DND)
  dnd.forEach((enabled, i) => assert.notEqual(enabled, i === 0 ? false : dnd[i - 1], `${i}`));
  const user = await ctx.services.store.get<UserRecord>(["users", bob.id]);
  assert.equal(user.value!.services.dnd.enabled, dnd.at(-1), "the last event is the state");
  assert.equal((await ctx.services.events.deliveries()).pending, 0, "no SVC_EVENT_URL: no outbox");
});

Deno.test("a change starting from a user read before another write keeps that write", async () => {
  const { ctx, bob } = await fixture();
  const { findUserByUsername } = await import("../../lib/store/users.ts");
  const { setDnd, setForward } = await import("../../lib/user_services.ts");
  const read = (await findUserByUsername(ctx.services.store, "bob"))!;
  await setForward(ctx.services, bob.id, "busy", { enabled: true, destination: "1002" });
  // `read` is stale: its transaction's commit fails, and the next attempt reads the user again
  const result = await setDnd(ctx.services, read, true);
  assert.equal(result!.user.services.dnd.enabled, true);
  assert.deepEqual(result!.user.forwards.busy, { enabled: true, destination: "1002" });
  assert.deepEqual(
    (await configUpdates(ctx)).at(-1),
    update(bob, {
      dndEnabled: true,
      busyFwdEnabled: true,
      busyFwdDestination: "1002",
    }),
  );
});

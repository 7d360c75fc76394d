import assert from "node:assert/strict";
import { DEMO_CALLBACK_REQUESTS, DEMO_WEBSERVICE_USER } from "../../lib/demo.ts";
import { MiB } from "../../lib/http.ts";
import type { AgentRecord } from "../../lib/store/agents.ts";
import {
  apiCall,
  bearer,
  ctiUser,
  expectError,
  expectForbidden,
  login,
  postJson,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";
import {
  addAgent,
  agentAndQueue,
  phoneEvents,
  phoneUser,
  type SimContext,
  simSetup,
} from "../lib/platform/fixtures.ts";

const V2 = "/svc/api/2.0";
const HEADER =
  "phoneNumber|mobilePhoneNumber|firstName|lastName|company|description|dueDate|period";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The ManualClock's start, 2026-01-01T00:00:00Z: "today" of imports. */
const TODAY = "2026-01-01";

interface Fixture {
  t: SimContext;
  listUuid: string;
  queueId: number;
  /** 8001 and 8002, both in the list's queue; bob (1002) and alice (1001) have phones. */
  agents: AgentRecord[];
  token: string;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<
    Response
  >;
  /** Imports `lines` (after the header) into the list, asserting 201; answers the body. */
  importLines(...lines: string[]): Promise<{ created: { uuid: string; phoneNumber: string }[] }>;
}

/**
 * A queue `sales` with agents 8001 and 8002, a callback list on it with the periods Morning
 * (default) and Afternoon, bob (1002) and alice (1001) with phones, and a web service user holding
 * `svc.rest.callback_lists.#`.
 */
async function fixture(): Promise<Fixture> {
  const t = await simSetup();
  await phoneUser(t, "bob", "1002");
  await phoneUser(t, "alice", "1001");
  const { agent, queue } = await agentAndQueue(t, "8001", { name: "sales", number: "3000" });
  const second = await addAgent(t, "8002", queue.id);
  const list = await t.api.create("/callback_lists", {
    name: "Sales callbacks",
    queue_id: queue.id,
    periods: [
      { name: "Morning", periodStart: "08:00", periodEnd: "12:00", default: true },
      { name: "Afternoon", periodStart: "14:00", periodEnd: "18:00" },
    ],
  });
  const ws = await webServiceUser(t.ctx, ["svc.rest.callback_lists.#"]);
  const token = await login(t.ctx, "webservice", ws.login);
  const call = apiCall(t.ctx, V2, token);
  const importLines = async (...lines: string[]) => {
    const csv = [HEADER, ...lines].join("\n");
    const response = await call("POST", "/callback_lists/callback_requests/csv", {
      listUuid: list.uuid,
      csv,
    });
    const text = await response.text();
    assert.equal(response.status, 201, text);
    return JSON.parse(text);
  };
  return {
    t,
    listUuid: list.uuid,
    queueId: queue.id,
    agents: [agent, second],
    token,
    call,
    importLines,
  };
}

/** Logs in with a demo login and password. */
async function loginAs(
  ctx: TestContext,
  route: "login" | "webservice",
  { login, password }: { login: string; password: string },
): Promise<string> {
  const response = await postJson(ctx, `${V2}/auth/${route}`, { login, password });
  assert.equal(response.status, 200);
  return (await response.json()).token;
}

/** Imports one line; answers the new request's UUID. */
async function importOne(f: Fixture, line: string): Promise<string> {
  const { created } = await f.importLines(line);
  assert.equal(created.length, 1);
  return created[0]!.uuid;
}

const requests = (uuid: string, action: string) =>
  `/callback_lists/callback_requests/${uuid}/${action}`;

/** Asserts 200 and answers the JSON body. */
async function ok(response: Response) {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  return JSON.parse(text);
}

/** The pending requests `GET /callback_lists` shows for the fixture's list. */
async function pending(f: Fixture) {
  const lists = await ok(await f.call("GET", "/callback_lists"));
  return lists.find((list: { uuid: string }) => list.uuid === f.listUuid).callbacks;
}

Deno.test("import: good and bad lines answer created and failed", async (s) => {
  const f = await fixture();
  const csv = [
    HEADER,
    "0612345678||Carol|Petit|Petit SARL|Wants a quote||",
    " |+33 7 98 76 54 32| Dan |Moreau|||2026-02-03|Afternoon\r",
    "||Nobody|Here|||2026-01-05|",
    "0611111111||A|B|||2026-02-30|",
    "0622222222||A|B||||Night",
    "",
    "0633333333|A|B",
    "0644444444||a|b|c|d|2026-01-02|Morning|extra",
    "abc||||||01/02/2026|Night",
    '0655555555||Eve|Laurent|Laurent & Fils|"quoted" text|2026-01-03|Morning',
    "",
  ].join("\n");
  const response = await f.call("POST", "/callback_lists/callback_requests/csv", {
    listUuid: f.listUuid,
    csv,
  });
  const text = await response.text();
  assert.equal(response.status, 201, text);
  const body = JSON.parse(text);

  await s.step("created: uuid and phoneNumber of each good line, in file order", () => {
    assert.deepEqual(body.created.map((c: { phoneNumber: string }) => c.phoneNumber), [
      "0612345678",
      "",
      "0655555555",
    ]);
    for (const created of body.created) assert.match(created.uuid, UUID);
  });

  await s.step("failed: physical line numbers (header = 1) and every error", () => {
    assert.deepEqual(body.failed, [
      { line: 4, errors: ["no phoneNumber or mobilePhoneNumber"] },
      { line: 5, errors: ['invalid dueDate "2026-02-30": expected a date YYYY-MM-DD'] },
      { line: 6, errors: ['unknown period "Night"'] },
      { line: 8, errors: ["missing fields"] },
      { line: 9, errors: ["too many fields"] },
      {
        line: 10,
        errors: [
          "phoneNumber holds no number to dial",
          'invalid dueDate "01/02/2026": expected a date YYYY-MM-DD',
          'unknown period "Night"',
        ],
      },
    ]);
  });

  await s.step("the list shows them: trimmed, today and the default period filled in", async () => {
    const [carol, dan, eve] = body.created.map((c: { uuid: string }) => c.uuid);
    const common = { listUuid: f.listUuid, agent: null, closed: false, ticket: null };
    assert.deepEqual(await pending(f), [
      {
        uuid: carol,
        phoneNumber: "0612345678",
        mobilePhoneNumber: "",
        firstName: "Carol",
        lastName: "Petit",
        company: "Petit SARL",
        description: "Wants a quote",
        dueDate: TODAY,
        period: "Morning",
        ...common,
      },
      {
        uuid: eve,
        phoneNumber: "0655555555",
        mobilePhoneNumber: "",
        firstName: "Eve",
        lastName: "Laurent",
        company: "Laurent & Fils",
        description: '"quoted" text',
        dueDate: "2026-01-03",
        period: "Morning",
        ...common,
      },
      {
        uuid: dan,
        phoneNumber: "",
        mobilePhoneNumber: "+33 7 98 76 54 32",
        firstName: "Dan",
        lastName: "Moreau",
        company: "",
        description: "",
        dueDate: "2026-02-03",
        period: "Afternoon",
        ...common,
      },
    ]);
  });

  await s.step("GET /callback_lists: the list with its queue and periods", async () => {
    const [list] = await ok(await f.call("GET", "/callback_lists"));
    assert.deepEqual({ ...list, callbacks: list.callbacks.length }, {
      uuid: f.listUuid,
      name: "Sales callbacks",
      queueId: f.queueId,
      periods: [
        { name: "Morning", periodStart: "08:00", periodEnd: "12:00", default: true },
        { name: "Afternoon", periodStart: "14:00", periodEnd: "18:00", default: false },
      ],
      callbacks: 3,
    });
  });
});

Deno.test("import: Content-Type text/json is read as JSON; a header alone creates nothing", async () => {
  const f = await fixture();
  const csv = `${HEADER}\n0612345678|||||||`;
  const response = await f.call(
    "POST",
    "/callback_lists/callback_requests/csv",
    { listUuid: f.listUuid, csv },
    { "Content-Type": "text/json" },
  );
  const body = await response.json();
  assert.equal(response.status, 201);
  assert.equal(body.created.length, 1);
  assert.deepEqual(body.failed, []);
  assert.deepEqual(await f.importLines(), { created: [], failed: [] });
  // a BOM and CRLF line ends
  const bom = await f.call("POST", "/callback_lists/callback_requests/csv", {
    listUuid: f.listUuid,
    csv: `\uFEFF${HEADER}\r\n0612345678|||||||\r\n`,
  });
  assert.equal(bom.status, 201);
  assert.equal((await bom.json()).created.length, 1);
});

Deno.test("import: the whole file refused", async (s) => {
  const f = await fixture();
  const post = (body: unknown, headers?: Record<string, string>) =>
    f.call("POST", "/callback_lists/callback_requests/csv", body, headers);

  await s.step("wrong header: 400 BadRequest naming the expected one", async () => {
    for (
      const csv of [
        "phoneNumber,mobilePhoneNumber\n0612345678,",
        HEADER.replace("period", "Period"),
        HEADER.split("|").slice(0, 7).join("|"),
        "",
      ]
    ) {
      await expectError(
        await post({ listUuid: f.listUuid, csv }),
        400,
        "BadRequest",
        /^the csv header must be phoneNumber\|mobilePhoneNumber\|firstName\|lastName\|company\|description\|dueDate\|period, got /,
      );
    }
  });

  await s.step("unknown list: 400 BadRequest", async () => {
    for (const listUuid of [crypto.randomUUID(), "x".repeat(5000)]) {
      await expectError(
        await post({ listUuid, csv: HEADER }),
        400,
        "BadRequest",
        /^callback list .* not found$/,
      );
    }
  });

  await s.step("no body: 400 JsonBodyNotFound", async () => {
    await expectError(await post(""), 400, "JsonBodyNotFound");
    await expectError(await post("  ", { "Content-Type": "text/json" }), 400, "JsonBodyNotFound");
  });

  await s.step("not JSON, or not the model: 400 JsonErrorDecoding", async () => {
    await expectError(await post("{oops"), 400, "JsonErrorDecoding", /not valid JSON/);
    await expectError(await post("[]"), 400, "JsonErrorDecoding", /JSON object/);
    await expectError(
      await post({ listUuid: 5, csv: HEADER }),
      400,
      "JsonErrorDecoding",
      /^field listUuid: expected a string$/,
    );
    await expectError(
      await post({ listUuid: f.listUuid }),
      400,
      "JsonErrorDecoding",
      /^field csv: required$/,
    );
  });

  await s.step("more than 10000 lines: 400 BadRequest, nothing created", async () => {
    const csv = [HEADER, ...Array(10_001).fill("1|||||||")].join("\n");
    await expectError(
      await post({ listUuid: f.listUuid, csv }),
      400,
      "BadRequest",
      /more than 10000 callback requests/,
    );
    assert.deepEqual(await pending(f), []);
  });
});

Deno.test("import: a body of 2 MiB is read, one over 10 MiB refused with 413", async (s) => {
  const f = await fixture();
  const post = (csv: string) =>
    f.call("POST", "/callback_lists/callback_requests/csv", { listUuid: f.listUuid, csv });

  await s.step("9000 lines with long descriptions (about 2 MiB): every one created", async () => {
    const description = "Wants a call back about the quote, ".repeat(6);
    const lines = Array.from(
      { length: 9_000 },
      (_, i) => `06${String(i).padStart(8, "0")}||First ${i}|Last ${i}|Company|${description}||`,
    );
    const csv = [HEADER, ...lines].join("\n");
    assert.ok(csv.length > 2 * MiB && csv.length < 3 * MiB, `${csv.length} bytes`);
    const response = await post(csv);
    const text = await response.text();
    assert.equal(response.status, 201, text.slice(0, 200));
    const body = JSON.parse(text);
    assert.equal(body.created.length, 9_000);
    assert.deepEqual(body.failed, []);
    assert.equal((await pending(f)).length, 9_000);
  });

  await s.step("over 10 MiB: 413 PayloadTooLarge, nothing more created", async () => {
    const line = `0612345678||A|B|C|${"d".repeat(1000)}||`;
    const csv = [HEADER, ...Array(10_500).fill(line)].join("\n");
    assert.ok(csv.length > 10 * MiB, `${csv.length} bytes`);
    await expectError(await post(csv), 413, "PayloadTooLarge", /larger than 10485760 bytes/);
    assert.equal((await pending(f)).length, 9_000);
  });
});

Deno.test("take and release", async (s) => {
  const f = await fixture();
  const uuid = await importOne(f, "0612345678||Carol|Petit||||");
  const take = (agentNumber: unknown) => f.call("POST", requests(uuid, "take"), { agentNumber });

  await s.step("an agent takes a free request: it holds it, the ticket says Taken", async () => {
    const request = await ok(await take("8001"));
    assert.equal(request.agent, "8001");
    assert.match(request.ticket.uuid, UUID);
    assert.deepEqual({ ...request.ticket, uuid: "" }, {
      uuid: "",
      listUuid: f.listUuid,
      requestUuid: uuid,
      queueId: f.queueId,
      agent: "8001",
      dueDate: TODAY,
      started: null,
      lastUpdate: "2026-01-01T00:00:00.000Z",
      status: "Taken",
      comment: "",
    });
    assert.equal((await pending(f))[0].agent, "8001");
  });

  await s.step("taking it again changes nothing; another agent is refused", async () => {
    await f.t.advance(1000);
    const again = await ok(await take("8001"));
    assert.equal(again.ticket.lastUpdate, "2026-01-01T00:00:00.000Z");
    await expectError(
      await take("8002"),
      409,
      "CallbackRequestTaken",
      /is taken by agent 8001$/,
    );
    await expectError(
      await f.call("POST", requests(uuid, "release"), { agentNumber: "8002" }),
      409,
      "CallbackRequestTaken",
    );
  });

  await s.step("release (no body: for the holder) frees it; the ticket says Released", async () => {
    const released = await ok(await f.call("POST", requests(uuid, "release")));
    assert.equal(released.agent, null);
    assert.equal(released.ticket.status, "Released");
    assert.equal(released.ticket.agent, "8001");
    assert.equal(released.ticket.lastUpdate, "2026-01-01T00:00:01.000Z");
    await expectError(
      await f.call("POST", requests(uuid, "release")),
      409,
      "CallbackRequestNotTaken",
    );
  });

  await s.step("then the other agent takes it; release may name the holder", async () => {
    const taken = await ok(await take("8002"));
    assert.equal(taken.ticket.agent, "8002");
    const released = await ok(
      await f.call("POST", requests(uuid, "release"), { agentNumber: "8002" }),
    );
    assert.equal(released.agent, null);
  });

  await s.step("errors", async () => {
    await expectError(await take("9999"), 400, "BadRequest", /^agent "9999" not found$/);
    await expectError(await take("abc"), 400, "BadRequest");
    await expectError(
      await f.call("POST", requests(uuid, "release"), { agentNumber: "9999" }),
      400,
      "BadRequest",
    );
    await expectError(await take(8001), 400, "JsonErrorDecoding", /field agentNumber/);
    await expectError(
      await f.call("POST", requests(uuid, "take"), ""),
      400,
      "JsonBodyNotFound",
    );
    await expectError(
      await f.call("POST", requests(uuid, "release"), "{oops"),
      400,
      "JsonErrorDecoding",
    );
    const unknown = crypto.randomUUID();
    for (const action of ["take", "release"]) {
      await expectError(
        await f.call("POST", requests(unknown, action), { agentNumber: "8001" }),
        404,
        "CallbackRequestNotFound",
        new RegExp(unknown),
      );
    }
  });
});

Deno.test("two agents taking the same request at once: exactly one wins", async () => {
  const f = await fixture();
  for (let round = 0; round < 20; round++) {
    const uuid = await importOne(f, "0612345678|||||||");
    const responses = await Promise.all(
      ["8001", "8002"].map((agentNumber) =>
        f.call("POST", requests(uuid, "take"), { agentNumber })
      ),
    );
    const bodies = await Promise.all(responses.map((response) => response.json()));
    const statuses = responses.map((response) => response.status);
    assert.deepEqual([...statuses].sort(), [200, 409], `round ${round}: ${statuses}`);
    const winner = bodies[statuses.indexOf(200)].agent;
    const loser = bodies[statuses.indexOf(409)];
    assert.equal(loser.error, "CallbackRequestTaken");
    assert.match(loser.message, new RegExp(`taken by agent ${winner}$`));
    const shown = (await pending(f)).find((r: { uuid: string }) => r.uuid === uuid);
    assert.equal(shown.agent, winner);
    assert.equal(shown.ticket.agent, winner);
  }
});

Deno.test("start dials the request's number from the holder's line", async (s) => {
  const f = await fixture();
  const { created } = await f.importLines(
    "06 12 34 56 78|0698765432|Carol|Petit||||",
    "|+33 7 98 76 54 32|Dan|Moreau||||",
  ) as { created: { uuid: string }[] };
  const [carol, dan] = created.map((c) => c.uuid) as [string, string];
  const start = (uuid: string, body?: unknown) => f.call("POST", requests(uuid, "start"), body);

  await s.step("a free request: 409 CallbackRequestNotTaken", async () => {
    await expectError(await start(carol), 409, "CallbackRequestNotTaken");
  });

  await s.step("the holder not logged in: 409 AgentNotLoggedIn, nothing dialled", async () => {
    await ok(await f.call("POST", requests(carol, "take"), { agentNumber: "8001" }));
    await expectError(await start(carol), 409, "AgentNotLoggedIn", /^agent 8001 is not logged in$/);
    assert.deepEqual(f.t.sim.calls(), []);
  });

  await s.step("the body naming another agent: 409 CallbackRequestTaken", async () => {
    await expectError(await start(carol, { agentNumber: "8002" }), 409, "CallbackRequestTaken");
  });

  await s.step("logged on bob's phone: bob's phone rings, then the number is dialled", async () => {
    await f.t.ctx.services.platform.agentLogin(f.agents[0]!, "1002", "default");
    f.t.take();
    await f.t.advance(5000);
    const body = await ok(await start(carol, { agentNumber: "8001" }));
    assert.deepEqual(Object.keys(body).sort(), ["linkedId", "request"]);
    assert.equal(body.request.ticket.status, "Started");
    assert.equal(body.request.ticket.started, "2026-01-01T00:00:05.000Z");
    assert.equal(body.request.ticket.lastUpdate, "2026-01-01T00:00:05.000Z");
    assert.equal(body.request.agent, "8001");
    const [call] = f.t.sim.calls();
    assert.equal(call?.linkedId, body.linkedId);
    assert.deepEqual(call?.legs.map((leg) => "extension" in leg ? leg.extension : leg.number), [
      "1002",
    ]);
    await f.t.sim.act("1002", "answer");
    const dialing = phoneEvents(f.t.take()).filter((event) => event.eventType === "EventDialing");
    assert.deepEqual(
      dialing.map((e) => [e.username, e.DN, e.otherDN, e.linkedId]),
      [["bob", "1002", "0612345678", body.linkedId]],
    );
    assert.equal(dialing[0]!.userData.USR_CALLBACK_REQUEST_UUID, carol);
    assert.equal(dialing[0]!.userData.USR_CALLBACK_LIST_UUID, f.listUuid);
    await f.t.sim.act("1002", "hangup");
  });

  await s.step("no phoneNumber: the mobile number, sanitized", async () => {
    await ok(await f.call("POST", requests(dan, "take"), { agentNumber: "8001" }));
    const body = await ok(await start(dan));
    await f.t.sim.act("1002", "answer");
    const dialing = phoneEvents(f.t.take()).filter((event) => event.eventType === "EventDialing");
    assert.deepEqual(dialing.map((e) => [e.otherDN, e.linkedId]), [[
      "0033798765432",
      body.linkedId,
    ]]);
    await f.t.sim.act("1002", "hangup");
  });

  await s.step("logged on a line without user: 409 AgentLineWithoutUser", async () => {
    const line = await f.t.api.create("/lines", { context: "default" });
    const extension = await f.t.api.create("/extensions", { exten: "1009", context: "default" });
    const sip = await f.t.api.create("/endpoints/sip", {});
    assert.equal((await f.t.api.put(`/lines/${line.id}/extensions/${extension.id}`)).status, 204);
    assert.equal((await f.t.api.put(`/lines/${line.id}/endpoints/sip/${sip.id}`)).status, 204);
    await f.t.ctx.services.platform.agentLogout(f.agents[0]!.id);
    await f.t.ctx.services.platform.agentLogin(f.agents[0]!, "1009", "default");
    await expectError(await start(dan), 409, "AgentLineWithoutUser", /\(1009\) has no user$/);
  });

  await s.step("unknown request: 404; bad body: 400", async () => {
    await expectError(await start(crypto.randomUUID()), 404, "CallbackRequestNotFound");
    await expectError(await start(dan, { agentNumber: 1 }), 400, "JsonErrorDecoding");
    await expectError(await start(dan, { agentNumber: "9999" }), 400, "BadRequest");
  });
});

Deno.test("ticket: each outcome", async (s) => {
  const f = await fixture();
  const lines = Array.from({ length: 5 }, (_, i) => `061234567${i}|||||||`);
  const { created } = await f.importLines(...lines) as { created: { uuid: string }[] };
  const uuids = created.map((c) => c.uuid);
  const ticket = (uuid: string, body: unknown) => f.call("PUT", requests(uuid, "ticket"), body);
  const take = (uuid: string) =>
    f.call("POST", requests(uuid, "take"), { agentNumber: "8001" }).then(ok);

  await s.step("a free request: 409 CallbackRequestNotTaken", async () => {
    await expectError(
      await ticket(uuids[0]!, { status: "Answered" }),
      409,
      "CallbackRequestNotTaken",
    );
  });

  for (const [i, status] of ["Answered", "NoAnswer", "Fax", "Email"].entries()) {
    await s.step(`${status} closes the request`, async () => {
      const uuid = uuids[i]!;
      await take(uuid);
      await f.t.advance(1000);
      const closed = await ok(await ticket(uuid, { status, comment: `said ${status}` }));
      assert.equal(closed.closed, true);
      assert.equal(closed.agent, null);
      assert.equal(closed.ticket.status, status);
      assert.equal(closed.ticket.comment, `said ${status}`);
      assert.equal(closed.ticket.agent, "8001");
      assert.ok(!(await pending(f)).some((r: { uuid: string }) => r.uuid === uuid));
      for (const action of ["take", "release", "start"]) {
        await expectError(
          await f.call("POST", requests(uuid, action), { agentNumber: "8001" }),
          409,
          "CallbackRequestClosed",
        );
      }
      await expectError(await ticket(uuid, { status: "Answered" }), 409, "CallbackRequestClosed");
    });
  }

  await s.step("Callback keeps it open, released, due on the new date", async () => {
    const uuid = uuids[4]!;
    await take(uuid);
    const reopened = await ok(
      await ticket(uuid, { status: "Callback", dueDate: "2026-01-09", comment: "after 3pm" }),
    );
    assert.equal(reopened.closed, false);
    assert.equal(reopened.agent, null);
    assert.equal(reopened.dueDate, "2026-01-09");
    assert.deepEqual(
      [reopened.ticket.status, reopened.ticket.dueDate, reopened.ticket.comment],
      ["Callback", "2026-01-09", "after 3pm"],
    );
    assert.deepEqual((await pending(f)).map((r: { uuid: string }) => r.uuid), [uuid]);
    // taken again: the ticket keeps its comment when the outcome sends none
    await take(uuid);
    const answered = await ok(await ticket(uuid, { status: "Answered", agentNumber: "8001" }));
    assert.deepEqual([answered.ticket.status, answered.ticket.comment], ["Answered", "after 3pm"]);
    assert.equal(answered.ticket.uuid, reopened.ticket.uuid, "one ticket per request");
  });

  await s.step("bad bodies: 400 JsonErrorDecoding naming the field", async () => {
    const uuid = await importOne(f, "0600000000|||||||");
    await take(uuid);
    const cases: [unknown, RegExp][] = [
      [{ status: "Callback" }, /^field dueDate: required with status Callback$/],
      [{ status: "Callback", dueDate: "2026-13-01" }, /^field dueDate: expected a date/],
      [{ status: "Answered", dueDate: "2026-01-09" }, /^field dueDate: only with status Callback$/],
      [
        { status: "Done" },
        /^field status: expected one of Answered, NoAnswer, Fax, Email, Callback$/,
      ],
      [{}, /^field status: required$/],
      [{ status: "Answered", comment: 5 }, /^field comment: expected a string$/],
      [{ status: "Answered", comment: "x".repeat(2049) }, /^field comment: longer than 2048/],
    ];
    for (const [body, message] of cases) {
      await expectError(await ticket(uuid, body), 400, "JsonErrorDecoding", message);
    }
    await expectError(await ticket(uuid, ""), 400, "JsonBodyNotFound");
    await expectError(
      await ticket(uuid, { status: "Answered", agentNumber: "8002" }),
      409,
      "CallbackRequestTaken",
    );
    await expectError(
      await ticket(crypto.randomUUID(), { status: "Answered" }),
      404,
      "CallbackRequestNotFound",
    );
  });
});

Deno.test("ticket export: header and one row per ticket", async (s) => {
  const f = await fixture();
  const exportCsv = (body: unknown) => f.call("POST", "/callback_lists/callback_tickets/csv", body);
  const header =
    "uuid,listUuid,requestUuid,queueId,agent,dueDate,started,lastUpdate,status,comment,phoneNumber,mobilePhoneNumber,firstName,lastName,company,description";

  await s.step("no ticket yet: the header alone", async () => {
    await f.importLines("0612345678|||||||");
    const response = await exportCsv({ listUuid: f.listUuid });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/csv; charset=utf-8");
    assert.equal(await response.text(), `${header}\r\n`);
  });

  await s.step("rows by last update, quoted where RFC 4180 needs it", async () => {
    const { created } = await f.importLines(
      '0611111111|0622222222|Carol|Petit|Petit, SARL|Said "call me"|2026-01-02|Afternoon',
      "|0633333333|Dan|Moreau||||",
    ) as { created: { uuid: string }[] };
    const [carol, dan] = created.map((c) => c.uuid) as [string, string];
    await f.t.ctx.services.platform.agentLogin(f.agents[1]!, "1001", "default");
    await ok(await f.call("POST", requests(dan, "take"), { agentNumber: "8001" }));
    await f.t.advance(60_000);
    await ok(await f.call("POST", requests(carol, "take"), { agentNumber: "8002" }));
    await ok(await f.call("POST", requests(carol, "start")));
    await f.t.sim.act("1001", "reject");
    await f.t.advance(60_000);
    const comment = 'He said "no",\nthen hung up';
    const closed = await ok(
      await f.call("PUT", requests(carol, "ticket"), { status: "NoAnswer", comment }),
    );
    await f.t.advance(60_000);
    const callback = await ok(
      await f.call("PUT", requests(dan, "ticket"), { status: "Callback", dueDate: "2026-01-05" }),
    );
    const response = await exportCsv({ listUuid: f.listUuid });
    assert.equal(response.status, 200);
    assert.equal(
      await response.text(),
      [
        header,
        `${closed.ticket.uuid},${f.listUuid},${carol},${f.queueId},8002,2026-01-02,` +
        `2026-01-01T00:01:00.000Z,2026-01-01T00:02:00.000Z,NoAnswer,"He said ""no"",\nthen hung up",` +
        `0611111111,0622222222,Carol,Petit,"Petit, SARL","Said ""call me"""`,
        `${callback.ticket.uuid},${f.listUuid},${dan},${f.queueId},8001,2026-01-05,,` +
        `2026-01-01T00:03:00.000Z,Callback,,,0633333333,Dan,Moreau,,`,
        "",
      ].join("\r\n"),
    );
  });

  await s.step("errors: unknown list 400 BadRequest, no body, not JSON", async () => {
    await expectError(await exportCsv({ listUuid: crypto.randomUUID() }), 400, "BadRequest");
    await expectError(await exportCsv(""), 400, "JsonBodyNotFound");
    await expectError(await exportCsv("{"), 400, "JsonErrorDecoding");
    await expectError(await exportCsv({ listUuid: [] }), 400, "JsonErrorDecoding");
  });
});

Deno.test("deleting the list through /1.1 deletes its requests and tickets", async () => {
  const f = await fixture();
  const { created } = await f.importLines("0611111111|||||||", "0622222222|||||||") as {
    created: { uuid: string }[];
  };
  const [open, closed] = created.map((c) => c.uuid) as [string, string];
  await ok(await f.call("POST", requests(open, "take"), { agentNumber: "8001" }));
  await ok(await f.call("POST", requests(closed, "take"), { agentNumber: "8002" }));
  await ok(await f.call("PUT", requests(closed, "ticket"), { status: "Answered" }));
  const other = await f.t.api.create("/callback_lists", { name: "Other", queue_id: f.queueId });

  const deleted = await f.t.api.delete(`/callback_lists/${f.listUuid}`);
  assert.equal(deleted.status, 204, await deleted.text());

  for (const uuid of [open, closed]) {
    for (const [method, action] of [["POST", "take"], ["POST", "release"], ["POST", "start"]]) {
      await expectError(
        await f.call(method!, requests(uuid, action!), { agentNumber: "8001" }),
        404,
        "CallbackRequestNotFound",
        new RegExp(uuid),
      );
    }
    await expectError(
      await f.call("PUT", requests(uuid, "ticket"), { status: "Answered" }),
      404,
      "CallbackRequestNotFound",
    );
  }
  await expectError(
    await f.call("POST", "/callback_lists/callback_tickets/csv", { listUuid: f.listUuid }),
    400,
    "BadRequest",
    /^callback list .* not found$/,
  );
  const lists = await ok(await f.call("GET", "/callback_lists"));
  assert.deepEqual(lists.map((list: { uuid: string }) => list.uuid), [other.uuid]);
});

Deno.test("every route needs its ACL, a token, and is refused to CTI users", async (s) => {
  const f = await fixture();
  const uuid = await importOne(f, "0612345678|||||||");
  const routes: [method: string, path: string, acl: string, body?: unknown][] = [
    ["GET", "/callback_lists", "svc.rest.callback_lists.read"],
    [
      "POST",
      "/callback_lists/callback_requests/csv",
      "svc.rest.callback_lists.callback_requests.csv.create",
      { listUuid: f.listUuid, csv: HEADER },
    ],
    [
      "POST",
      "/callback_lists/callback_tickets/csv",
      "svc.rest.callback_lists.callback_tickets.csv.create",
      { listUuid: f.listUuid },
    ],
    [
      "POST",
      requests(uuid, "take"),
      `svc.rest.callback_lists.callback_requests.${uuid}.take.create`,
      { agentNumber: "8001" },
    ],
    [
      "POST",
      requests(uuid, "release"),
      `svc.rest.callback_lists.callback_requests.${uuid}.release.create`,
    ],
    [
      "POST",
      requests(uuid, "start"),
      `svc.rest.callback_lists.callback_requests.${uuid}.start.create`,
    ],
    [
      "PUT",
      requests(uuid, "ticket"),
      `svc.rest.callback_lists.callback_requests.${uuid}.ticket.update`,
      { status: "Answered" },
    ],
  ];
  const others = await webServiceUser(f.t.ctx, ["svc.rest.dial.#", "svc.rest.history.#"]);
  const otherToken = await login(f.t.ctx, "webservice", others.login);
  await ctiUser(f.t.ctx, "carol");
  const ctiToken = await login(f.t.ctx, "login", "carol");
  for (const [method, path, acl, body] of routes) {
    await s.step(`${method} ${path}`, async () => {
      await expectForbidden(await f.call(method, path, body, bearer(otherToken)), acl);
      await expectForbidden(await f.call(method, path, body, bearer(ctiToken)), acl);
      const anonymous = await f.t.ctx.app.request(`${V2}${path}`, {
        method,
        headers: { "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      await expectError(anonymous, 400, "AuthorizationHeaderNotFound");
      const holder = await webServiceUser(f.t.ctx, [acl]);
      const allowed = await f.call(
        method,
        path,
        body,
        bearer(await login(f.t.ctx, "webservice", holder.login)),
      );
      assert.ok(allowed.status !== 403, `${method} ${path} with ${acl}: ${allowed.status}`);
      await allowed.body?.cancel();
    });
  }
});

Deno.test("the demo: the README's callback workflow", async () => {
  const ctx = await setup({ SVC_DEMO: "true" });
  const token = await loginAs(ctx, "webservice", DEMO_WEBSERVICE_USER);
  const call = (method: string, path: string, body?: unknown) =>
    ctx.app.request(path, {
      method,
      headers: { ...bearer(token), "Content-Type": "text/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  const [list] = await ok(await call("GET", `${V2}/callback_lists`));
  assert.equal(list.name, "Sales callbacks");
  assert.deepEqual(
    list.callbacks.map((r: Record<string, string>) => [r.firstName, r.dueDate, r.period]),
    DEMO_CALLBACK_REQUESTS.map((r) => [r.firstName, TODAY, "All day"]),
  );
  const uuid = list.callbacks[0].uuid;
  const login = await call("POST", "/agents/by-number/8001/login", {
    extension: "1002",
    context: "default",
  });
  assert.equal(login.status, 204, await login.text());
  await ok(await call("POST", `${V2}${requests(uuid, "take")}`, { agentNumber: "8001" }));
  const started = await ok(await call("POST", `${V2}${requests(uuid, "start")}`));
  assert.equal(ctx.services.sim!.calls()[0]?.linkedId, started.linkedId);
  await ok(await call("PUT", `${V2}${requests(uuid, "ticket")}`, { status: "Answered" }));
  const exported = await call("POST", `${V2}/callback_lists/callback_tickets/csv`, {
    listUuid: list.uuid,
  });
  const rows = (await exported.text()).trim().split("\r\n");
  assert.equal(rows.length, 2);
  assert.match(rows[1]!, /,8001,2026-01-01,2026-01-01T00:00:00\.000Z,.*,Answered,,0612345678,/);
});

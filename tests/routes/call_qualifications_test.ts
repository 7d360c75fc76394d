import assert from "node:assert/strict";
import type { UserType } from "../../lib/auth/tokens.ts";
import { createCallQualification } from "../../lib/store/call_qualifications.ts";
import { createQueue } from "../../lib/store/queues.ts";
import {
  bearer,
  ctiUser,
  expectError,
  expectForbidden,
  login,
  postJson,
  setup,
  type TestContext,
} from "../helpers.ts";

const V2 = "/svc/api/2.0";
const HEADER = "sub_qualification_id,time,callid,agent,queue,first_name,last_name,comment," +
  "custom_data";

/** A token signed directly (no password hash), as `expectAcls` does. */
async function tokenWith(ctx: TestContext, acls: string[], userType: UserType = "webservice") {
  const identity = { userId: "0", login: "acl-check", userType, acls };
  return (await ctx.services.tokens.issue(identity)).token;
}

/**
 * Queues `sales` and `support`; `Sale` (Won, Lost) on sales, `Support` (Solved) on support, and
 * `Unused` (Spare) on no queue; alice, a CTI user logged in through the real route.
 */
async function fixture() {
  const ctx = await setup();
  const store = ctx.services.store;
  const sales = await createQueue(store, { name: "sales" });
  const support = await createQueue(store, { name: "support" });
  const empty = await createQueue(store, { name: "empty" });
  const sale = await createCallQualification(store, {
    name: "Sale",
    sub_qualifications: [{ name: "Won" }, { name: "Lost" }],
    queue_ids: [sales.id],
  });
  const help = await createCallQualification(store, {
    name: "Support",
    sub_qualifications: [{ name: "Solved" }],
    queue_ids: [support.id, sales.id],
  });
  const unused = await createCallQualification(store, {
    name: "Unused",
    sub_qualifications: [{ name: "Spare" }],
  });
  await ctiUser(ctx, "alice");
  const token = await login(ctx, "login", "alice");
  const get = (path: string, withToken = token) =>
    Promise.resolve(ctx.app.request(`${V2}${path}`, { headers: bearer(withToken) }));
  const post = (body: unknown, withToken = token) =>
    postJson(ctx, `${V2}/call_qualification`, body, bearer(withToken));
  return { ctx, sales, support, empty, sale, help, unused, token, get, post };
}

type Fixture = Awaited<ReturnType<typeof fixture>>;

/** A complete answer for the sales queue (sub-qualification Won). */
function answer(f: Fixture, changes: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    sub_qualification_id: f.sale.sub_qualifications[0]!.id,
    time: "2026-03-10 09:30:00",
    callid: "1773135000.17",
    agent: 8001,
    queue: f.sales.id,
    first_name: "Jean",
    last_name: "Dupont",
    comment: "wants a quote",
    custom_data: '{"crm":42}',
    ...changes,
  };
}

async function created(response: Response) {
  const text = await response.text();
  assert.equal(response.status, 201, text);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  return JSON.parse(text);
}

async function csv(response: Response): Promise<string> {
  const text = await response.text();
  assert.equal(response.status, 200, text);
  assert.equal(response.headers.get("content-type"), "text/csv; charset=utf-8");
  return text;
}

/** The CSV of `lines` under the spec's header, CRLF-terminated. */
const csvOf = (...lines: string[]) => [HEADER, ...lines].map((line) => `${line}\r\n`).join("");

Deno.test("GET /call_qualification/queue/{queue_id}", async (t) => {
  const f = await fixture();
  const [won, lost] = f.sale.sub_qualifications;
  const [solved] = f.help.sub_qualifications;

  await t.step("the queue's qualifications with their sub-qualifications", async () => {
    const response = await f.get(`/call_qualification/queue/${f.sales.id}`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    assert.deepEqual(await response.json(), [
      { id: f.sale.id, name: "Sale", subQualifications: [won, lost] },
      { id: f.help.id, name: "Support", subQualifications: [solved] },
    ]);
    assert.deepEqual(await (await f.get(`/call_qualification/queue/${f.support.id}`)).json(), [
      { id: f.help.id, name: "Support", subQualifications: [solved] },
    ]);
  });

  await t.step(
    "[] for a queue without qualification, an unknown queue, a non-integer",
    async () => {
      for (const id of [String(f.empty.id), "999", "abc", "1.5", "-1", "%20"]) {
        const response = await f.get(`/call_qualification/queue/${id}`);
        assert.equal(response.status, 200, id);
        assert.deepEqual(await response.json(), [], id);
      }
    },
  );

  await t.step("a web service user holding the ACL reads; another queue is refused", async () => {
    const token = await tokenWith(f.ctx, [`svc.rest.call_qualification.queue.${f.sales.id}.read`]);
    assert.equal((await f.get(`/call_qualification/queue/${f.sales.id}`, token)).status, 200);
    await expectForbidden(
      await f.get(`/call_qualification/queue/${f.support.id}`, token),
      `svc.rest.call_qualification.queue.${f.support.id}.read`,
    );
    // a dot in the path value cannot add ACL words
    await expectForbidden(
      await f.get(`/call_qualification/queue/${f.sales.id}.read`, token),
      `svc.rest.call_qualification.queue.${f.sales.id}_read.read`,
    );
  });
});

Deno.test("POST /call_qualification", async (t) => {
  const f = await fixture();

  await t.step("201 with the answer's fields and an integer id", async () => {
    const body = await created(await f.post(answer(f)));
    assert.deepEqual(body, { id: 1, ...answer(f) });
    const next = await created(await f.post(answer(f, { callid: "1773135000.18" })));
    assert.equal(next.id, 2);
  });

  await t.step("the four text fields default to empty; unknown fields are ignored", async () => {
    const body = await created(
      await f.post({
        sub_qualification_id: f.sale.sub_qualifications[1]!.id,
        time: "2026-03-10 10:00:00",
        callid: "c-3",
        agent: 8002,
        queue: f.sales.id,
        id: 77,
        extra: true,
      }),
    );
    assert.deepEqual(body, {
      id: 3,
      sub_qualification_id: f.sale.sub_qualifications[1]!.id,
      time: "2026-03-10 10:00:00",
      callid: "c-3",
      agent: 8002,
      queue: f.sales.id,
      first_name: "",
      last_name: "",
      comment: "",
      custom_data: "",
    });
  });

  await t.step("a sub-qualification not offered on the queue is accepted", async () => {
    const spare = f.unused.sub_qualifications[0]!.id;
    const body = await created(await f.post(answer(f, { sub_qualification_id: spare })));
    assert.equal(body.sub_qualification_id, spare);
  });

  await t.step("each required field missing: 400 JsonErrorDecoding naming it", async () => {
    for (const field of ["sub_qualification_id", "time", "callid", "agent", "queue"]) {
      const body = answer(f);
      delete body[field];
      await expectError(
        await f.post(body),
        400,
        "JsonErrorDecoding",
        new RegExp(`^field ${field}: required$`),
      );
    }
  });

  await t.step("wrong types and values: 400 JsonErrorDecoding naming the field", async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ sub_qualification_id: "1" }, /^field sub_qualification_id: expected an integer$/],
      [{ sub_qualification_id: 1.5 }, /^field sub_qualification_id: expected an integer$/],
      [{ sub_qualification_id: 0 }, /^field sub_qualification_id: must be at least 1$/],
      [{ agent: "8001" }, /^field agent: expected an integer$/],
      [{ agent: null }, /^field agent: expected an integer$/],
      [{ queue: true }, /^field queue: expected an integer$/],
      [{ queue: -2 }, /^field queue: must be at least 1$/],
      [{ callid: 17 }, /^field callid: expected a string$/],
      [{ callid: "" }, /^field callid: must not be empty$/],
      [{ callid: "x".repeat(257) }, /^field callid: longer than 256 characters$/],
      [{ first_name: 3 }, /^field first_name: expected a string$/],
      [{ last_name: null }, /^field last_name: expected a string$/],
      [{ comment: ["a"] }, /^field comment: expected a string$/],
      [{ comment: "x".repeat(4097) }, /^field comment: longer than 4096 characters$/],
      [{ custom_data: {} }, /^field custom_data: expected a string$/],
      [{ custom_data: "x".repeat(16385) }, /^field custom_data: longer than 16384 characters$/],
      [{ time: 1773135000 }, /^field time: expected a string$/],
    ];
    for (const [changes, message] of cases) {
      await expectError(await f.post(answer(f, changes)), 400, "JsonErrorDecoding", message);
    }
  });

  await t.step("time must be a real YYYY-MM-DD HH:MM:SS", async () => {
    const bad = [
      "2026-03-10",
      "2026-03-10T09:30:00",
      "2026-03-10 09:30",
      "2026-03-10 09:30:00Z",
      " 2026-03-10 09:30:00",
      "2026-02-29 10:00:00", // not a leap year
      "2026-04-31 10:00:00",
      "2026-13-01 10:00:00",
      "2026-00-10 10:00:00",
      "2026-03-00 10:00:00",
      "2026-03-10 24:00:00",
      "2026-03-10 10:60:00",
      "2026-03-10 10:00:60",
      "yesterday",
    ];
    for (const time of bad) {
      await expectError(
        await f.post(answer(f, { time })),
        400,
        "JsonErrorDecoding",
        /^field time: expected a real date and time YYYY-MM-DD HH:MM:SS$/,
      );
    }
    await created(await f.post(answer(f, { time: "2028-02-29 23:59:59" })));
  });

  await t.step("an unknown sub-qualification or queue: 400 JsonErrorDecoding", async () => {
    await expectError(
      await f.post(answer(f, { sub_qualification_id: 999 })),
      400,
      "JsonErrorDecoding",
      /^field sub_qualification_id: unknown sub-qualification 999$/,
    );
    await expectError(
      await f.post(answer(f, { queue: 999 })),
      400,
      "JsonErrorDecoding",
      /^field queue: unknown queue 999$/,
    );
  });

  await t.step(
    "no body: 400 JsonBodyNotFound; not JSON or not an object: JsonErrorDecoding",
    async () => {
      await expectError(await f.post(""), 400, "JsonBodyNotFound");
      await expectError(await f.post(" \n"), 400, "JsonBodyNotFound");
      await expectError(await f.post("{oops"), 400, "JsonErrorDecoding", /not valid JSON/);
      for (const body of ["null", "[]", "42", '"text"']) {
        await expectError(await f.post(body), 400, "JsonErrorDecoding", /JSON object/);
      }
    },
  );

  await t.step("a web service user holding the ACL posts (a CRM)", async () => {
    const token = await tokenWith(f.ctx, ["svc.rest.call_qualification.create"]);
    const body = await created(await f.post(answer(f, { callid: "from-crm" }), token));
    assert.equal(body.callid, "from-crm");
  });

  await t.step("the store failing: 503 Unreachable", async () => {
    f.ctx.services.store.close();
    await expectError(await f.post(answer(f)), 503, "Unreachable");
  });
});

Deno.test("GET /call_qualification/csv/{queue_id}/{from}/{to}", async (t) => {
  const f = await fixture();
  const [won, lost] = f.sale.sub_qualifications.map((sub) => sub.id);
  const solved = f.help.sub_qualifications[0]!.id;
  // posted out of time order, with a twin time, around the day 2026-03-10 and in two queues
  const posted: [number, string, string, number, Record<string, unknown>][] = [
    [won!, "2026-03-10 12:00:00", "c1", f.sales.id, {}],
    [lost!, "2026-03-10 00:00:00", "c2", f.sales.id, { comment: 'says "hi", then\nleaves' }],
    [won!, "2026-03-09 23:59:59", "c3", f.sales.id, {}],
    [solved, "2026-03-10 08:00:00", "c4", f.support.id, {}],
    [lost!, "2026-03-10 23:59:59", "c5", f.sales.id, { first_name: "Zoé" }],
    [won!, "2026-03-11 00:00:00", "c6", f.sales.id, {}],
    [won!, "2026-03-10 12:00:00", "c7", f.sales.id, {}],
  ];
  for (const [sub, time, callid, queue, changes] of posted) {
    await created(
      await f.post(answer(f, { sub_qualification_id: sub, time, callid, queue, ...changes })),
    );
  }
  const line = (sub: number, time: string, callid: string, rest = "Jean,Dupont,wants a quote") =>
    `${sub},${time},${callid},8001,${f.sales.id},${rest},"{""crm"":42}"`;
  const c1 = line(won!, "2026-03-10 12:00:00", "c1");
  const c2 = line(lost!, "2026-03-10 00:00:00", "c2", 'Jean,Dupont,"says ""hi"", then\nleaves"');
  const c3 = line(won!, "2026-03-09 23:59:59", "c3");
  const c5 = line(lost!, "2026-03-10 23:59:59", "c5", "Zoé,Dupont,wants a quote");
  const c6 = line(won!, "2026-03-11 00:00:00", "c6");
  const c7 = line(won!, "2026-03-10 12:00:00", "c7");
  const path = (from: string, to: string, queue = f.sales.id) =>
    `/call_qualification/csv/${queue}/${encodeURIComponent(from)}/${encodeURIComponent(to)}`;

  await t.step("date-only bounds: the whole days, ordered by time, CRLF, quoted", async () => {
    assert.equal(
      await csv(await f.get(path("2026-03-10", "2026-03-10"))),
      csvOf(c2, c1, c7, c5),
    );
    assert.equal(
      await csv(await f.get(path("2026-03-09", "2026-03-11"))),
      csvOf(c3, c2, c1, c7, c5, c6),
    );
  });

  await t.step("date-time bounds are inclusive at both ends", async () => {
    assert.equal(
      await csv(await f.get(path("2026-03-10 00:00:00", "2026-03-10 12:00:00"))),
      csvOf(c2, c1, c7),
    );
    assert.equal(
      await csv(await f.get(path("2026-03-10 00:00:01", "2026-03-10 11:59:59"))),
      csvOf(),
    );
    assert.equal(
      await csv(await f.get(path("2026-03-10 12:00:00", "2026-03-11"))),
      csvOf(c1, c7, c5, c6),
    );
  });

  await t.step("the space sent as %20 or +, and a date with a date-time", async () => {
    const base = `/call_qualification/csv/${f.sales.id}`;
    assert.equal(
      await csv(await f.get(`${base}/2026-03-10%2012:00:00/2026-03-10%2023:59:59`)),
      csvOf(c1, c7, c5),
    );
    assert.equal(
      await csv(await f.get(`${base}/2026-03-10+12:00:00/2026-03-10`)),
      csvOf(c1, c7, c5),
    );
  });

  await t.step("other queues' answers are not exported; unknown queue: header only", async () => {
    const support = await csv(await f.get(path("2026-03-10", "2026-03-10", f.support.id)));
    assert.equal(
      support,
      csvOf(
        `${solved},2026-03-10 08:00:00,c4,8001,${f.support.id},` +
          `Jean,Dupont,wants a quote,"{""crm"":42}"`,
      ),
    );
    assert.equal(await csv(await f.get(path("2026-03-10", "2026-03-10", 999))), csvOf());
    assert.equal(
      await csv(await f.get(`/call_qualification/csv/abc/2026-03-10/2026-03-10`)),
      csvOf(),
    );
  });

  await t.step("bad dates, and from after to: 400 JsonErrorDecoding", async () => {
    const bad = [
      ["2026-3-10", "2026-03-10"],
      ["2026-03-10", "2026-02-30"],
      ["2026-03-10T00:00:00", "2026-03-11"],
      ["2026-03-10 25:00:00", "2026-03-11"],
      ["2026-03-10 12:00", "2026-03-11"],
      ["2026-03-10", "tomorrow"],
      ["2026-03-10", "2026-03-10 12:00:00 "],
      ["1773100800", "2026-03-11"],
    ];
    for (const [from, to] of bad) {
      await expectError(
        await f.get(path(from!, to!)),
        400,
        "JsonErrorDecoding",
        /^(from|to) .*: expected YYYY-MM-DD or YYYY-MM-DD HH:MM:SS$/,
      );
    }
    await expectError(
      await f.get(path("2026-03-11", "2026-03-10")),
      400,
      "JsonErrorDecoding",
      /^from 2026-03-11 is after to 2026-03-10$/,
    );
    await expectError(
      await f.get(path("2026-03-10 12:00:01", "2026-03-10 12:00:00")),
      400,
      "JsonErrorDecoding",
      /is after/,
    );
  });

  await t.step("a value with spaces and colons fills the ACL and matches csv.#.read", async () => {
    const any = await tokenWith(f.ctx, ["svc.rest.call_qualification.csv.#.read"]);
    assert.equal(
      await csv(await f.get(path("2026-03-10 00:00:00", "2026-03-10 12:00:00"), any)),
      csvOf(c2, c1, c7),
    );
    const salesOnly = await tokenWith(f.ctx, [
      `svc.rest.call_qualification.csv.${f.sales.id}.#.read`,
    ]);
    assert.equal(
      await csv(await f.get(path("2026-03-10", "2026-03-10 12:00:00"), salesOnly)),
      csvOf(c2, c1, c7),
    );
    await expectForbidden(
      await f.get(path("2026-03-10 08:00:00", "2026-03-10", f.support.id), salesOnly),
      `svc.rest.call_qualification.csv.${f.support.id}.2026-03-10 08:00:00.2026-03-10.read`,
    );
  });

  await t.step("the store failing: 503 Unreachable", async () => {
    f.ctx.services.store.close();
    await expectError(await f.get(path("2026-03-10", "2026-03-10")), 503, "Unreachable");
    await expectError(await f.get(`/call_qualification/queue/${f.sales.id}`), 503, "Unreachable");
  });
});

Deno.test("every call qualification route refuses a token without its ACL", async () => {
  const f = await fixture();
  const token = await tokenWith(f.ctx, ["svc.rest.dnd.#", "svc.rest.call_qualification.queue.1"]);
  await expectForbidden(
    await f.get(`/call_qualification/queue/${f.sales.id}`, token),
    `svc.rest.call_qualification.queue.${f.sales.id}.read`,
  );
  await expectForbidden(await f.post(answer(f), token), "svc.rest.call_qualification.create");
  await expectForbidden(
    await f.get(`/call_qualification/csv/${f.sales.id}/2026-03-10/2026-03-11%2010:00:00`, token),
    `svc.rest.call_qualification.csv.${f.sales.id}.2026-03-10.2026-03-11 10:00:00.read`,
  );
  // a CTI token whose ACLs deny the area is refused too (the ACLs decide, not the user type)
  const denied = await tokenWith(f.ctx, ["alias.ctiuser", "!svc.rest.call_qualification.#"], "cti");
  await expectForbidden(await f.post(answer(f), denied), "svc.rest.call_qualification.create");
  // no token at all
  await expectError(
    await postJson(f.ctx, `${V2}/call_qualification`, answer(f)),
    400,
    "AuthorizationHeaderNotFound",
  );
});

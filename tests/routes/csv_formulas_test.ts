/**
 * CSV formula neutralisation (docs/decisions.md, "CSV and spreadsheets") in every CSV export, through
 * the real app: personal contacts, call qualification answers, callback tickets and users. Each
 * export gets a `'` before a cell a spreadsheet would read as a formula and keeps phone numbers as
 * they are; the imports of files svc exports (contacts, users) remove exactly that `'`, so export →
 * import → export gives the same bytes; the callback import, a file made by people, keeps every
 * character.
 */
import assert from "node:assert/strict";
import { parseCsv } from "../../lib/csv.ts";
import { createAgent } from "../../lib/store/agents.ts";
import { createCallQualification } from "../../lib/store/call_qualifications.ts";
import { createCallbackList } from "../../lib/store/callback_lists.ts";
import { createQueue } from "../../lib/store/queues.ts";
import {
  apiCall,
  confd,
  ctiUser,
  login,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";

const V2 = "/svc/api/2.0";

const HYPERLINK = '=HYPERLINK("http://x","y")';
const CALC = "=cmd|' /C calc'!A0";
const SUM = "@SUM(1+1)";

/** The cells of a CSV answer by column name, one record per row. */
async function records(csv: string): Promise<Record<string, string>[]> {
  const { header, rows } = await parseCsv(csv);
  return rows.map(({ fields }) => Object.fromEntries(header.map((name, i) => [name, fields[i]!])));
}

/** Answers the body of `response`, asserting `status`. */
async function text(response: Response, status = 200): Promise<string> {
  const body = await response.text();
  assert.equal(response.status, status, body);
  return body;
}

/** A CTI user logged in through the real route, calling the 2.0 API. */
async function ctiApi(ctx: TestContext, username: string) {
  await ctiUser(ctx, username);
  return apiCall(ctx, V2, await login(ctx, "login", username));
}

Deno.test("contacts export: formulas neutralised, phone numbers kept, export → import → export the same bytes", async (t) => {
  const ctx = await setup();
  const alice = await ctiApi(ctx, "alice");
  const contacts = [
    { firstname: HYPERLINK, lastname: "A1", number: "+33612345678" },
    { firstname: CALC, lastname: "A2", number: "+33 6 12 34 56 78", mobile: "+1-555-0100" },
    { firstname: SUM, lastname: "A3", number: "-5", company: "+foo" },
    { firstname: "'=x", lastname: "A4", company: "'hello", fax: "-" },
    // values are trimmed: a tab or CR at the start never reaches the store
    { firstname: "\t=1+1", lastname: "A5", mobile: "'+33 6 12 34 56 78" },
    { lastname: "@A6", email: "=1@x.y" },
  ];
  for (const contact of contacts) {
    await text(await alice("POST", "/contact/personal", contact), 201);
  }
  const exported = await text(await alice("GET", "/contact/export/personal"));

  await t.step("the exact export", () => {
    assert.equal(
      exported,
      [
        "company,email,fax,firstname,lastname,mobile,number",
        ",'=1@x.y,,,'@A6,,",
        `,,,"'=HYPERLINK(""http://x"",""y"")",A1,,+33612345678`,
        ",,,'=cmd|' /C calc'!A0,A2,+1-555-0100,+33 6 12 34 56 78",
        "'+foo,,,'@SUM(1+1),A3,,'-5",
        "'hello,,'-,''=x,A4,,",
        ",,,'=1+1,A5,'+33 6 12 34 56 78,",
        "",
      ].join("\r\n"),
    );
  });

  await t.step(
    "imported into an empty account: the same values, and the same bytes again",
    async () => {
      const bob = await ctiApi(ctx, "bob");
      const imported = JSON.parse(
        await text(
          await bob("POST", "/contact/import/personal", exported, { "Content-Type": "text/csv" }),
          201,
        ),
      );
      assert.equal(imported.created.length, contacts.length);
      assert.deepEqual(imported.failed, []);
      assert.equal(await text(await bob("GET", "/contact/export/personal")), exported);
      const list = JSON.parse(await text(await bob("GET", "/contact/personal")));
      const byLastname = new Map<string, string>(
        list.entries.map((entry: { entry: string[]; contact_id: string }) => [
          entry.entry[1],
          entry.contact_id,
        ]),
      );
      const read = async (lastname: string) =>
        JSON.parse(await text(await bob("GET", `/contact/personal/${byLastname.get(lastname)}`)));
      assert.equal((await read("A1")).firstname, HYPERLINK);
      assert.equal((await read("A2")).firstname, CALC);
      assert.deepEqual(
        [(await read("A3")).firstname, (await read("A3")).number, (await read("A3")).company],
        [SUM, "-5", "+foo"],
      );
      const a4 = await read("A4");
      assert.deepEqual([a4.firstname, a4.company, a4.fax], ["'=x", "'hello", "-"]);
      const a5 = await read("A5");
      assert.deepEqual([a5.firstname, a5.mobile], ["=1+1", "'+33 6 12 34 56 78"]);
      assert.equal((await read("@A6")).email, "=1@x.y");
    },
  );

  await t.step(
    "a file written by a person: only a ' before a formula is taken as svc's",
    async () => {
      const carol = await ctiApi(ctx, "carol");
      const csv = "firstname,lastname,number\n'=1+1,'hello,'+33 6 12 34 56 78\n\"\t'@x \",=2,-1\n";
      const imported = JSON.parse(
        await text(await carol("POST", "/contact/import/personal", csv), 201),
      );
      assert.equal(imported.created.length, 2);
      const byId = async (id: string) =>
        JSON.parse(await text(await carol("GET", `/contact/personal/${id}`)));
      const [first, second] = [
        await byId(imported.created[0].id),
        await byId(imported.created[1].id),
      ];
      assert.deepEqual([first.firstname, first.lastname, first.number], [
        "=1+1",
        "'hello",
        "'+33 6 12 34 56 78",
      ]);
      assert.deepEqual([second.firstname, second.lastname, second.number], ["@x", "=2", "-1"]);
    },
  );
});

Deno.test("call qualification answers export: formulas neutralised, phone numbers kept", async () => {
  const ctx = await setup();
  const { store } = ctx.services;
  const queue = await createQueue(store, { name: "sales" });
  const qualification = await createCallQualification(store, {
    name: "Sale",
    sub_qualifications: [{ name: "Won" }],
    queue_ids: [queue.id],
  });
  const alice = await ctiApi(ctx, "alice");
  const answer = (fields: Record<string, string>) => ({
    sub_qualification_id: qualification.sub_qualifications[0]!.id,
    agent: 1,
    queue: queue.id,
    ...fields,
  });
  const answers = [
    answer({
      time: "2026-11-22 10:00:00",
      callid: "-5",
      first_name: HYPERLINK,
      last_name: SUM,
      comment: "\t=1+1",
      custom_data: `\r${CALC}`,
    }),
    answer({
      time: "2026-11-22 10:00:01",
      callid: "+foo",
      first_name: "+33612345678",
      last_name: CALC,
      comment: "'=x",
      custom_data: "+33 6 12 34 56 78",
    }),
    answer({
      time: "2026-11-22 10:00:02",
      callid: "1795341600.1",
      first_name: "'hello",
      last_name: "+1-555-0100",
      comment: "-",
      custom_data: "@",
    }),
  ];
  for (const body of answers) await text(await alice("POST", "/call_qualification", body), 201);
  const csv = await text(
    await alice("GET", `/call_qualification/csv/${queue.id}/2026-11-22/2026-11-22`),
  );
  const sub = qualification.sub_qualifications[0]!.id;
  assert.equal(
    csv,
    [
      "sub_qualification_id,time,callid,agent,queue,first_name,last_name,comment,custom_data",
      `${sub},2026-11-22 10:00:00,'-5,1,${queue.id},"'=HYPERLINK(""http://x"",""y"")",'@SUM(1+1),` +
      `'\t=1+1,"'\r=cmd|' /C calc'!A0"`,
      `${sub},2026-11-22 10:00:01,'+foo,1,${queue.id},+33612345678,'=cmd|' /C calc'!A0,''=x,` +
      "+33 6 12 34 56 78",
      `${sub},2026-11-22 10:00:02,1795341600.1,1,${queue.id},'hello,+1-555-0100,'-,'@`,
      "",
    ].join("\r\n"),
  );
});

Deno.test("callback tickets export: formulas neutralised, phone numbers kept; the import keeps every character", async (t) => {
  const ctx = await setup();
  const { store } = ctx.services;
  const queue = await createQueue(store, { name: "sales" });
  await createAgent(store, { number: "8001", firstname: "Ann", lastname: "Agent" });
  const list = await createCallbackList(store, { name: "Callbacks", queue_id: queue.id });
  const ws = await webServiceUser(ctx, ["svc.rest.callback_lists.#"]);
  const call = apiCall(ctx, V2, await login(ctx, "webservice", ws.login));
  const csv = [
    "phoneNumber|mobilePhoneNumber|firstName|lastName|company|description|dueDate|period",
    `+33 6 12 34 56 78|+1-555-0100|'=x|+foo|${SUM}|-5||`,
    `0612345678||${HYPERLINK}|Petit|'hello|=1+1||`,
  ].join("\n");
  const imported = JSON.parse(
    await text(
      await call("POST", "/callback_lists/callback_requests/csv", { listUuid: list.uuid, csv }),
      201,
    ),
  );
  const [first, second] = imported.created.map((request: { uuid: string }) => request.uuid);

  await t.step("the import keeps a ' as written: its file is not one svc exported", async () => {
    const lists = JSON.parse(await text(await call("GET", "/callback_lists")));
    const names = lists[0].callbacks.map((request: { firstName: string }) => request.firstName);
    assert.deepEqual(names.sort(), ["'=x", HYPERLINK].sort());
  });

  const outcome = async (uuid: string, status: string, comment: string) => {
    const path = `/callback_lists/callback_requests/${uuid}`;
    await text(await call("POST", `${path}/take`, { agentNumber: "8001" }));
    await text(await call("PUT", `${path}/ticket`, { status, comment }));
  };
  await outcome(first, "Answered", `\t${CALC}`);
  await outcome(second, "NoAnswer", "\r-1");
  const exported = await text(
    await call("POST", "/callback_lists/callback_tickets/csv", { listUuid: list.uuid }),
  );
  const rows = new Map((await records(exported)).map((row) => [row.requestUuid, row]));
  const pick = (
    { comment, phoneNumber, mobilePhoneNumber, firstName, lastName, company, description }: Record<
      string,
      string
    >,
  ) => ({
    comment,
    phoneNumber,
    mobilePhoneNumber,
    firstName,
    lastName,
    company,
    description,
  });
  assert.deepEqual(pick(rows.get(first)!), {
    comment: `'\t${CALC}`,
    phoneNumber: "+33 6 12 34 56 78",
    mobilePhoneNumber: "+1-555-0100",
    firstName: "''=x",
    lastName: "'+foo",
    company: `'${SUM}`,
    description: "'-5",
  });
  assert.deepEqual(pick(rows.get(second)!), {
    comment: "'\r-1",
    phoneNumber: "0612345678",
    mobilePhoneNumber: "",
    firstName: `'${HYPERLINK}`,
    lastName: "Petit",
    company: "'hello",
    description: "'=1+1",
  });
  assert.ok(exported.includes(`"'=HYPERLINK(""http://x"",""y"")"`), exported);
});

Deno.test("users export: formulas neutralised, phone numbers kept, export → import → export the same bytes", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  const created = async (body: Record<string, unknown>) => {
    const response = await api.post("/users", body);
    return JSON.parse(await text(response, 201));
  };
  await created({
    firstname: HYPERLINK,
    lastname: SUM,
    username: "@home",
    mobile_phone_number: "+33612345678",
    description: "\t=1+1",
    userfield: "\r=1",
    caller_id: "'=x",
    outgoing_caller_id: "-5",
    timezone: "+foo",
  });
  await created({ firstname: CALC, lastname: "'hello", username: "-admin", description: "-" });
  const withLine = [
    "firstname,lastname,line_protocol,context,exten,sip_username,sip_secret",
    "'+1-555-0100,Line,sip,default,1001,'+foo1,'-secret",
  ].join("\n");
  const response = await api.call("POST", "/users/import", withLine, {
    "Content-Type": "text/csv; charset=utf-8",
  });
  await text(response, 201);
  const exportCsv = async (client: typeof api) =>
    await text(await client.get("/users/export", { Accept: "text/csv; charset=utf-8" }));
  const exported = await exportCsv(api);
  const [first, second, third] = await records(exported);

  await t.step("each cell as exported", () => {
    assert.deepEqual(
      [
        first!.firstname,
        first!.lastname,
        first!.username,
        first!.mobile_phone_number,
        first!.description,
        first!.userfield,
        first!.caller_id,
        first!.outgoing_caller_id,
        first!.timezone,
      ],
      [
        `'${HYPERLINK}`,
        `'${SUM}`,
        "'@home",
        "+33612345678",
        "'\t=1+1",
        "'\r=1",
        "''=x",
        "'-5",
        "'+foo",
      ],
    );
    assert.deepEqual(
      [second!.firstname, second!.lastname, second!.username, second!.description],
      [`'${CALC}`, "'hello", "'-admin", "'-"],
    );
    // the import took the ' before +foo1 and -secret as svc's and removed it; the one before a
    // phone number is the value's own and stays
    assert.deepEqual(
      [third!.firstname, third!.sip_username, third!.sip_secret, third!.exten],
      ["'+1-555-0100", "'+foo1", "'-secret", "1001"],
    );
  });

  await t.step("the users as stored hold no svc '", async () => {
    const users = JSON.parse(await text(await api.get("/users"))).items;
    assert.equal(users[0].description, "\t=1+1");
    assert.equal(users[0].caller_id, "'=x");
    assert.equal(users[1].username, "-admin");
    assert.equal(users[2].firstname, "'+1-555-0100");
  });

  await t.step("imported into an empty store, exported again: the same bytes", async () => {
    const other = await setup();
    const otherApi = await confd(other);
    const imported = await otherApi.call("POST", "/users/import", exported, {
      "Content-Type": "text/csv; charset=utf-8",
    });
    await text(imported, 201);
    assert.equal(await exportCsv(otherApi), exported);
    const users = JSON.parse(await text(await otherApi.get("/users"))).items;
    assert.deepEqual(
      [users[0].firstname, users[0].userfield, users[1].lastname, users[1].username],
      [HYPERLINK, "\r=1", "'hello", "-admin"],
    );
  });
});

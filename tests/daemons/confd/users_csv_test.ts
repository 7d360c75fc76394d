import assert from "node:assert/strict";
import { parseCsv } from "../../../lib/csv.ts";
import { sipEndpoints } from "../../../lib/store/endpoints.ts";
import { lines } from "../../../lib/store/lines.ts";
import {
  type Confd,
  confd,
  expectConfdError,
  expectMissingAcl,
  postJson,
  setup,
  setupConfd,
  type TestContext,
} from "../../helpers.ts";

function csvRequest(api: Confd, method: "POST" | "PUT", csv: string) {
  return api.call(method, "/users/import", csv, { "Content-Type": "text/csv; charset=utf-8" });
}

const exportCsv = (api: Confd) => api.get("/users/export", { Accept: "text/csv; charset=utf-8" });

const HEADER =
  "firstname,lastname,email,username,password,line_protocol,context,exten,sip_username,voicemail_name,voicemail_number,call_permissions";

async function withPermissions(ctx: TestContext) {
  const api = await confd(ctx);
  for (const name of ["internal", "international"]) {
    assert.equal((await api.post("/callpermissions", { name })).status, 201);
  }
  return api;
}

async function count(api: Confd, path: string): Promise<number> {
  return (await api.list(path)).total;
}

Deno.test("POST /1.1/users/import creates users with their line, endpoint, extension, voicemail", async (t) => {
  const ctx = await setup();
  const api = await withPermissions(ctx);
  const csv = [
    HEADER,
    "Alice,Martin,alice@example.test,alice,alice-pw,sip,default,1001,alicesip,Alice VM,1001,internal;international",
    "Bob,Durand,,bob,,sccp,default,1002,,,,",
    '"Zoé, Jr",Ünal,,,,,,,,,,',
  ].join("\r\n");
  const response = await csvRequest(api, "POST", csv);
  assert.equal(response.status, 201);
  const { created } = await response.json();
  assert.equal(created.length, 3);
  assert.deepEqual(created.map((row: { row_number: number }) => row.row_number), [2, 3, 4]);

  await t.step(
    "the user, its line, SIP endpoint, extension and voicemail exist and are linked",
    async () => {
      const alice = created[0];
      const user = await (await api.get(`/users/${alice.user_uuid}`)).json();
      assert.equal(user.username, "alice");
      assert.equal(user.email, "alice@example.test");
      assert.deepEqual(user.lines, [{ id: alice.line_id }]);
      assert.deepEqual(user.voicemail, { id: alice.voicemail_id });
      assert.equal(user.call_permissions.length, 2);
      const line = await (await api.get(`/lines/${alice.line_id}`)).json();
      assert.equal(line.protocol, "sip");
      assert.equal(line.context, "default");
      const extension = await (await api.get(`/extensions/${alice.extension_id}`)).json();
      assert.equal(extension.exten, "1001");
      const sip = await (await api.get(`/endpoints/sip/${alice.endpoint_sip_id}`)).json();
      assert.equal(sip.username, "alicesip");
      const voicemail = await (await api.get(`/voicemails/${alice.voicemail_id}`)).json();
      assert.equal(voicemail.number, "1001");
      assert.equal(voicemail.name, "Alice VM");
    },
  );
  await t.step("a row with username and password is a CTI user", async () => {
    const login = await postJson(ctx, "/svc/api/2.0/auth/login", {
      login: "alice",
      password: "alice-pw",
    });
    assert.equal(login.status, 200);
    await login.body?.cancel();
  });
  await t.step("a row with no line columns creates the user alone", async () => {
    const zoe = await (await api.get(`/users/${created[2].user_id}`)).json();
    assert.equal(zoe.firstname, "Zoé, Jr");
    assert.equal(zoe.lastname, "Ünal");
    assert.deepEqual(zoe.lines, []);
    assert.equal(created[2].line_id, undefined);
  });
});

Deno.test("POST /1.1/users/import is all or nothing and names every bad line", async (t) => {
  const ctx = await setup();
  const api = await withPermissions(ctx);
  assert.equal(
    (await csvRequest(api, "POST", `${HEADER}\nTaken,,,taken,,sip,default,1050,,,,`)).status,
    201,
  );
  const users = await count(api, "/users");
  const lines = await count(api, "/lines");

  await t.step("row errors of every kind, in one answer", async () => {
    const csv = [
      HEADER,
      "Good,Row,,good,,sip,default,1060,,,,",
      "Bad,Email,nope,,,,,,,,,",
      ",No first name,,,,,,,,,,",
      "Dup,Exten,,,,sip,default,1050,,,,",
      "Dup,Username,,taken,,,,,,,,",
      "Out,Range,,,,sip,default,2500,,,,",
      "No,Context,,,,sip,nowhere,1061,,,,",
      "Bad,Permission,,,,,,,,,,unknown",
      "Same,Exten A,,,,sip,default,1070,,,,",
      "Same,Exten B,,,,sip,default,1070,,,,",
    ].join("\n");
    const response = await csvRequest(api, "POST", csv);
    assert.equal(response.status, 400);
    const errors: string[] = await response.json();
    assert.deepEqual(errors.map((e) => e.slice(0, e.indexOf(":"))), [
      "Line 3",
      "Line 4",
      "Line 7",
      "Line 8",
      "Line 9",
    ]);
    assert.match(errors[0]!, /field 'email'/);
    assert.match(errors[1]!, /field 'firstname'/);
    assert.match(errors[2]!, /field 'exten'/);
    assert.match(errors[3]!, /field 'context'/);
    assert.match(errors[4]!, /field 'call_permissions'/);
  });

  await t.step("a row reports every bad field, not only the first", async () => {
    const csv = [
      "firstname,lastname,email,username,password,enabled,ring_seconds,line_protocol,context," +
      "exten,sip_username,voicemail_name,voicemail_number,voicemail_attach_audio,call_permissions",
      "Good,Row,,good2,,,,sip,default,1061,,,,,internal",
      ",,nope,x,pw,maybe,abc,ftp,nowhere,1062,bad user!,,12a,perhaps,unknown;internal;other",
      "Bob,,bob@,,,,,sip,,,,,,,",
    ].join("\n");
    const response = await csvRequest(api, "POST", csv);
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), [
      "Line 3: Input Error - field 'enabled': Not a valid boolean.",
      "Line 3: Input Error - field 'ring_seconds': Not a valid integer.",
      "Line 3: Input Error - field 'firstname': Invalid input: expected string, received undefined",
      "Line 3: Input Error - field 'email': Not a valid email address.",
      "Line 3: Input Error - field 'username': Must be 2 or more letters, digits or the characters _ . @ + -.",
      "Line 3: Input Error - field 'password': Shorter than minimum length 4.",
      "Line 3: Input Error - field 'line_protocol': Must be one of: sip, sccp.",
      "Line 3: Input Error - field 'context': Context was not found ('name': 'nowhere')",
      "Line 3: Input Error - field 'sip_username': SIP columns need line_protocol sip.",
      "Line 3: Input Error - field 'call_permissions': CallPermission was not found ('name': 'unknown'), CallPermission was not found ('name': 'other')",
      "Line 3: Input Error - field 'voicemail_name': Required, at most 80 characters.",
      "Line 3: Input Error - field 'voicemail_number': Must be 1 to 40 digits.",
      "Line 3: Input Error - field 'voicemail_attach_audio': Not a valid boolean.",
      "Line 4: Input Error - field 'email': Not a valid email address.",
      "Line 4: Input Error - field 'context': A line needs a context.",
    ]);
  });

  await t.step("taken unique values are checked once every row is valid", async () => {
    const csv = [
      HEADER,
      "Good,Row,,good,,sip,default,1060,,,,",
      "Dup,Exten,,,,sip,default,1050,,,,",
      "Dup,Username,,taken,,,,,,,,",
      "Same,Exten A,,,,sip,default,1070,,,,",
      "Same,Exten B,,,,sip,default,1070,,,,",
    ].join("\n");
    const response = await csvRequest(api, "POST", csv);
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), [
      "Line 3: Resource Error - Extension already exists ('exten': '1050', 'context': 'default')",
      "Line 4: Resource Error - User already exists ('username': 'taken')",
      "Line 6: Resource Error - Extension already exists ('exten': '1070', 'context': 'default')",
    ]);
  });

  await t.step("nothing was written", async () => {
    assert.equal(await count(api, "/users"), users);
    assert.equal(await count(api, "/lines"), lines);
  });

  await t.step("file-level refusals", async () => {
    const cases: [string, RegExp][] = [
      ["", /the file is empty/],
      ["firstname,shoe_size\nA,42", /unknown column 'shoe_size'/],
      ["firstname,firstname\nA,B", /column 'firstname' appears twice/],
      ["lastname\nMartin", /column 'firstname' is required/],
      ["firstname,lastname\nA,B,C", /^Line 2: .*3 fields where the header has 2/],
    ];
    for (const [csv, pattern] of cases) {
      await expectConfdError(await csvRequest(api, "POST", csv), 400, pattern);
    }
  });

  await t.step("a file over 10 MiB: 413", async () => {
    const big = `firstname\n${"A\n".repeat(5.5 * 1024 * 1024)}`;
    await expectConfdError(await csvRequest(api, "POST", big), 413, /^PayloadTooLarge/);
  });
});

Deno.test("GET /1.1/users/export, and export then import into an empty store", async (t) => {
  const ctx = await setup();
  const api = await withPermissions(ctx);
  const csv = [
    HEADER,
    "Alice,Martin,alice@example.test,alice,pw-alice,sip,default,1001,alicesip,Alice VM,1001,internal",
    'Bob,"Du ""rand""",,bob,,sccp,default,1002,,,,',
    "Zoé,,,,,,,,,,,",
  ].join("\n");
  assert.equal((await csvRequest(api, "POST", csv)).status, 201);
  assert.equal(
    (await api.put("/users/1", { mobile_phone_number: "+33612345678", ring_seconds: 12 })).status,
    204,
  );

  await t.step("Accept: text/csv is required", async () => {
    await expectConfdError(await api.get("/users/export"), 406, /^Not Acceptable/);
    await expectConfdError(
      await api.get("/users/export", { Accept: "application/json" }),
      406,
      /Accept/,
    );
  });

  let exported = "";
  await t.step("one row per user, every column but the password", async () => {
    const response = await exportCsv(api);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/csv; charset=utf-8");
    exported = await response.text();
    const { header, rows } = await parseCsv(exported);
    assert.ok(!header.includes("password"));
    assert.ok(
      header.includes("uuid") && header.includes("exten") && header.includes("voicemail_number"),
    );
    assert.equal(rows.length, 3);
    const alice = Object.fromEntries(header.map((name, i) => [name, rows[0]!.fields[i]]));
    assert.equal(alice.exten, "1001");
    assert.equal(alice.sip_username, "alicesip");
    assert.equal(alice.call_permissions, "internal");
    assert.equal(alice.ring_seconds, "12");
    assert.match(exported, /\r\n$/);
  });

  await t.step("importing the export into an empty store gives the same users", async () => {
    const other = await setup();
    const otherApi = await withPermissions(other);
    const response = await csvRequest(otherApi, "POST", exported);
    assert.equal(response.status, 201, JSON.stringify(await response.clone().json()));
    assert.equal(await (await exportCsv(otherApi)).text(), exported);
  });
});

Deno.test("export → import → export gives the same bytes for every kind of user", async () => {
  const ctx = await setup();
  const api = await withPermissions(ctx);
  const created = async (path: string, body: unknown) =>
    (await api.create(path, body)).id as number;
  const link = async (path: string) => {
    const response = await api.put(path);
    assert.equal(response.status, 204, `${path}: ${await response.text()}`);
  };
  /** A user with a line in `default`: its endpoint (or none), its extension (or none). */
  const withLine = async (name: string, endpoint: string | null, exten: string | null) => {
    const user = await created("/users", { firstname: name, username: name.toLowerCase() });
    const line = await created("/lines", { context: "default" });
    if (endpoint) {
      const body = endpoint === "custom" ? { interface: `dahdi/${name}` } : {};
      await link(
        `/lines/${line}/endpoints/${endpoint}/${await created(`/endpoints/${endpoint}`, body)}`,
      );
    }
    if (exten) {
      await link(
        `/lines/${line}/extensions/${await created("/extensions", { exten, context: "default" })}`,
      );
    }
    await link(`/users/${user}/lines/${line}`);
    return user;
  };
  await created("/users", {
    firstname: "Nolan",
    lastname: "No line",
    mobile_phone_number: "+33600",
  });
  const sip = await withLine("Sipa", "sip", "1001");
  await withLine("Sipnoext", "sip", null);
  await withLine("Sccp", "sccp", "1002");
  // found by wazo-confd-client's import_csv of another svc's export: a line with no endpoint
  await withLine("Bare", null, "1003");
  await withLine("Barenoext", null, null);
  await withLine("Custom", "custom", "1004"); // exported without line, as Wazo's export does
  const voicemailOnly = await created("/users", { firstname: "Vmonly" });
  const voicemail = await created("/voicemails", {
    name: "VM",
    number: "2001",
    context: "default",
  });
  await link(`/users/${voicemailOnly}/voicemails/${voicemail}`);
  await link(`/users/${sip}/callpermissions/1`);
  const twoLines = await withLine("Twolines", "sip", "1005");
  const second = await created("/lines", { context: "default" });
  await link(`/users/${twoLines}/lines/${second}`);

  const exported = await (await exportCsv(api)).text();
  const other = await setup();
  const otherApi = await withPermissions(other);
  const response = await csvRequest(otherApi, "POST", exported);
  assert.equal(response.status, 201, await response.clone().text());
  const rows = (await response.json()).created as Record<string, unknown>[];
  // the bare line is a line again, with its extension and no endpoint
  const bare = rows[4]!;
  assert.ok(typeof bare.line_id === "number" && typeof bare.extension_id === "number");
  assert.equal(bare.endpoint_sip_id ?? bare.endpoint_sccp_id ?? null, null);
  const line = await (await otherApi.get(`/lines/${bare.line_id}`)).json();
  assert.deepEqual([line.protocol, line.context], [null, "default"]);
  assert.equal(await (await exportCsv(otherApi)).text(), exported);
});

Deno.test("a row's line columns without what they need: its protocol for SIP, a context", async () => {
  const api = await withPermissions(await setup());
  const csv = [
    HEADER,
    "Sip,Alone,,,,,default,,sipuser,,,",
    "Exten,Alone,,,,,,1010,,,,",
    "Bare,Line,,,,,default,1011,,,,",
  ].join("\n");
  const response = await csvRequest(api, "POST", csv);
  assert.equal(response.status, 400);
  assert.deepEqual(await response.json(), [
    "Line 2: Input Error - field 'line_protocol': SIP columns need line_protocol sip.",
    "Line 3: Input Error - field 'context': A line needs a context.",
  ]);
});

Deno.test("PUT /1.1/users/import updates users by uuid", async (t) => {
  const ctx = await setup();
  const api = await withPermissions(ctx);
  const { created } =
    await (await csvRequest(api, "POST", `${HEADER}\nAlice,Martin,,alice,,,,,,,,internal`)).json();
  const uuid = created[0].user_uuid;

  await t.step("the columns present are changed, an empty text cell clears", async () => {
    const csv =
      `uuid,lastname,email,ring_seconds,call_permissions\n${uuid},Dupont,,60,international`;
    const response = await csvRequest(api, "PUT", csv);
    assert.equal(response.status, 200);
    assert.deepEqual((await response.json()).updated, [{
      row_number: 2,
      user_id: created[0].user_id,
      user_uuid: uuid,
    }]);
    const user = await (await api.get(`/users/${uuid}`)).json();
    assert.equal(user.lastname, "Dupont");
    assert.equal(user.email, null);
    assert.equal(user.ring_seconds, 60);
    assert.equal(user.firstname, "Alice");
    assert.equal(user.call_permissions.length, 1);
    const permissions = await (await api.get("/callpermissions?name=international")).json();
    assert.equal(permissions.items[0].id, user.call_permissions[0].id);
  });

  await t.step("an unknown uuid or a bad value: 400 and nothing changes", async () => {
    const csv = `uuid,lastname\n${uuid},Changed\n00000000-0000-4000-8000-000000000000,X`;
    await expectConfdError(
      await csvRequest(api, "PUT", csv),
      400,
      /^Line 3: Resource Not Found - User was not found/,
    );
    await expectConfdError(
      await csvRequest(api, "PUT", `uuid,ring_seconds\n${uuid},-4`),
      400,
      /^Line 2: .*field 'ring_seconds'/,
    );
    await expectConfdError(
      await csvRequest(api, "PUT", "lastname\nX"),
      400,
      /column 'uuid' is required/,
    );
    // every bad field of every row, in one answer
    const bad = [
      "uuid,email,ring_seconds,enabled,call_permissions",
      "not-a-uuid,nope,-1x,yes,unknown",
      `${uuid},,99999,,`,
    ].join("\n");
    const response = await csvRequest(api, "PUT", bad);
    assert.equal(response.status, 400);
    assert.deepEqual(await response.json(), [
      "Line 2: Input Error - field 'uuid': A valid uuid is required.",
      "Line 2: Input Error - field 'enabled': Not a valid boolean.",
      "Line 2: Input Error - field 'ring_seconds': Not a valid integer.",
      "Line 2: Input Error - field 'email': Not a valid email address.",
      "Line 2: Input Error - field 'call_permissions': CallPermission was not found ('name': 'unknown')",
      "Line 3: Input Error - field 'ring_seconds': Must be less than or equal to 10800.",
    ]);
    assert.equal((await (await api.get(`/users/${uuid}`)).json()).lastname, "Dupont");
  });
});

Deno.test("users import and export refuse a token without their ACL", async () => {
  const ctx = await setup();
  const narrow = await confd(ctx, ["confd.users.read"]);
  const cases: [Response, string][] = [
    [await csvRequest(narrow, "POST", "firstname\nA"), "confd.users.import.create"],
    [await csvRequest(narrow, "PUT", "uuid\nx"), "confd.users.import.update"],
    [await exportCsv(narrow), "confd.users.export.read"],
  ];
  for (const [response, acl] of cases) await expectMissingAcl(response, acl);
});

Deno.test("GET /1.1/users?view=summary shows each user's main line", async () => {
  const { api } = await setupConfd();
  const csv =
    "firstname,lastname,line_protocol,context,exten\nAlice,Martin,sip,default,1001\nBob,,,,";
  assert.equal((await csvRequest(api, "POST", csv)).status, 201);
  const response = await api.get("/users?view=summary&order=firstname");
  assert.equal(response.status, 200);
  const { total, items } = await response.json();
  assert.equal(total, 2);
  assert.deepEqual(Object.keys(items[0]).sort(), [
    "context",
    "email",
    "enabled",
    "extension",
    "firstname",
    "id",
    "lastname",
    "protocol",
    "provisioning_code",
    "uuid",
  ]);
  assert.equal(items[0].extension, "1001");
  assert.equal(items[0].context, "default");
  assert.equal(items[0].protocol, "sip");
  assert.match(items[0].provisioning_code, /^\d{6}$/);
  assert.equal(items[1].extension, null);
  assert.equal(items[1].protocol, null);
  assert.deepEqual((await api.list("/users?view=summary&search=1001", "firstname")).values, [
    "Alice",
  ]);
});

Deno.test("POST /1.1/users/import draws line names, provisioning codes and SIP credentials of the usual forms, all different", async () => {
  const { ctx, api } = await setupConfd();
  const rows = Array.from({ length: 300 }, (_, n) => `User,${n},sip,default,${1000 + n}`);
  const csv = ["firstname,lastname,line_protocol,context,exten", ...rows].join("\n");
  assert.equal((await csvRequest(api, "POST", csv)).status, 201);
  const { store } = ctx.services;
  const allLines = await lines.all(store);
  const sips = await sipEndpoints.all(store);
  assert.equal(allLines.length, 300);
  assert.equal(sips.length, 300);
  for (const line of allLines) {
    assert.match(line.name, /^[a-z0-9]{8}$/);
    assert.match(line.provisioning_code, /^[1-9]\d{5}$/);
  }
  for (const sip of sips) {
    assert.match(sip.username, /^[a-z0-9]{8}$/);
    assert.match(sip.secret, /^[a-z0-9]{8}$/);
  }
  assert.equal(new Set(allLines.map((line) => line.name)).size, 300);
  assert.equal(new Set(allLines.map((line) => line.provisioning_code)).size, 300);
  assert.equal(new Set(sips.map((sip) => sip.username)).size, 300);
});

/**
 * Personal contacts (`routes/contacts.ts`, decisions §3, docs/contacts.md): every route and error,
 * per-user isolation, duplicates, validation, the list view with live phone statuses, CSV import
 * and export, the contact limit, ACLs and the store failing.
 */
import assert from "node:assert/strict";
import { MiB } from "../../lib/http.ts";
import { deleteUser } from "../../lib/store/users.ts";
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
import { phoneUser, simSetup } from "../lib/platform/fixtures.ts";

const V2 = "/svc/api/2.0";
const PERSONAL = `${V2}/contact/personal`;
const IMPORT = `${V2}/contact/import/personal`;
const EXPORT = `${V2}/contact/export/personal`;
const DISPLAY = `${V2}/contact/display/personal`;
const EXPORT_HEADER = "company,email,fax,firstname,lastname,mobile,number";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

type Body = unknown;

/** Calls the 2.0 API with `token`; an object body is sent as JSON, a string or FormData as is. */
function client(ctx: TestContext, token: string) {
  const call = (
    method: string,
    path: string,
    body?: Body,
    headers: Record<string, string> = {},
  ) => {
    const raw = body === undefined || typeof body === "string" || body instanceof FormData ||
      body instanceof Uint8Array;
    const init: RequestInit = {
      method,
      headers: {
        ...bearer(token),
        ...(raw ? {} : { "Content-Type": "application/json" }),
        ...headers,
      },
      body: raw ? body as BodyInit : JSON.stringify(body),
    };
    return Promise.resolve(ctx.app.request(path, init));
  };
  const api = {
    token,
    call,
    /** Answers the JSON body, asserting `status` and the JSON content type. */
    async json(method: string, path: string, body?: Body, status = 200) {
      const response = await call(method, path, body);
      const text = await response.text();
      assert.equal(response.status, status, `${method} ${path}: ${text}`);
      assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
      return JSON.parse(text);
    },
    /** POSTs a contact, asserting 201, and answers it. */
    create: (contact: Record<string, unknown>) => api.json("POST", PERSONAL, contact, 201),
    get: (id: string) => api.json("GET", `${PERSONAL}/${id}`),
    list: () => api.json("GET", PERSONAL),
    /** Imports `csv` as a plain `text/csv;charset=UTF-8` body, asserting 201. */
    async import(csv: string | Uint8Array) {
      const response = await call("POST", IMPORT, csv, {
        "Content-Type": "text/csv;charset=UTF-8",
      });
      const text = await response.text();
      assert.equal(response.status, 201, text);
      return JSON.parse(text) as {
        created: { id: string; lastname: string }[];
        failed: { line: number; errors: string[] }[];
      };
    },
    async export() {
      const response = await call("GET", EXPORT);
      const text = await response.text();
      assert.equal(response.status, 200, text);
      assert.equal(response.headers.get("content-type"), "text/csv; charset=utf-8");
      return text;
    },
  };
  return api;
}

type Client = ReturnType<typeof client>;

/** A CTI user logged in through `/auth/login`, and its client. */
async function ctiClient(ctx: TestContext, username?: string): Promise<Client> {
  const user = await ctiUser(ctx, username);
  return client(ctx, await login(ctx, "login", user.username!));
}

/** Every field of a contact as the API answers it: absent ones are "". */
function full(fields: Record<string, unknown>) {
  return {
    firstname: "",
    lastname: "",
    number: "",
    mobile: "",
    fax: "",
    email: "",
    company: "",
    favorite: false,
    ...fields,
  };
}

/** A contact without its id. */
const withoutId = ({ id: _, ...rest }: Record<string, unknown>) => rest;

Deno.test("create, read, update and delete one contact", async (t) => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);
  let id = "";

  await t.step("POST answers 201, the contact with its id, and a Location", async () => {
    const response = await alice.call("POST", PERSONAL, {
      firstname: " Ada ",
      lastname: "Lovelace",
      number: "1002",
      email: "ada@example.com",
      company: "Analytical Engines",
    });
    const text = await response.text();
    assert.equal(response.status, 201, text);
    assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
    const created = JSON.parse(text);
    id = created.id;
    assert.match(id, UUID);
    assert.equal(response.headers.get("location"), `${PERSONAL}/${id}`);
    assert.deepEqual(
      created,
      full({
        id,
        firstname: "Ada", // trimmed
        lastname: "Lovelace",
        number: "1002",
        email: "ada@example.com",
        company: "Analytical Engines",
      }),
    );
  });

  await t.step("GET answers it; an upper-case id names the same contact", async () => {
    assert.deepEqual(
      await alice.get(id),
      full({
        id,
        firstname: "Ada",
        lastname: "Lovelace",
        number: "1002",
        email: "ada@example.com",
        company: "Analytical Engines",
      }),
    );
    assert.equal((await alice.get(id.toUpperCase())).id, id);
  });

  await t.step('PUT changes only what it sends; "" clears a field', async () => {
    const changed = await alice.json("PUT", `${PERSONAL}/${id}`, { number: " 1003 ", fax: "01" });
    assert.deepEqual(
      changed,
      full({
        id,
        firstname: "Ada",
        lastname: "Lovelace",
        number: "1003",
        fax: "01",
        email: "ada@example.com",
        company: "Analytical Engines",
      }),
    );
    const cleared = await alice.json("PUT", `${PERSONAL}/${id}`, { email: "", company: "" });
    assert.deepEqual(
      cleared,
      full({
        id,
        firstname: "Ada",
        lastname: "Lovelace",
        number: "1003",
        fax: "01",
      }),
    );
    assert.deepEqual(await alice.get(id), cleared);
  });

  await t.step("PUT {} changes nothing; PUT may repeat the contact's own id", async () => {
    const before = await alice.get(id);
    assert.deepEqual(await alice.json("PUT", `${PERSONAL}/${id}`, {}), before);
    assert.deepEqual(await alice.json("PUT", `${PERSONAL}/${id}`, before), before);
    await expectError(
      await alice.call("PUT", `${PERSONAL}/${id}`, { id: crypto.randomUUID() }),
      400,
      "InvalidContact",
      /^field id: differs/,
    );
  });

  await t.step("PUT favorite marks it (an extension of the spec)", async () => {
    assert.equal((await alice.json("PUT", `${PERSONAL}/${id}`, { favorite: true })).favorite, true);
    assert.equal((await alice.get(id)).favorite, true);
  });

  await t.step("PUT leaving nothing that identifies the contact: 400, unchanged", async () => {
    const before = await alice.get(id);
    await expectError(
      await alice.call("PUT", `${PERSONAL}/${id}`, {
        firstname: "",
        lastname: "",
        number: "",
        fax: "",
      }),
      400,
      "InvalidContact",
      /needs a name, number, mobile, fax or email/,
    );
    await expectError(
      await alice.call("PUT", `${PERSONAL}/${id}`, { email: "nope" }),
      400,
      "InvalidContact",
      /^field email: invalid email/,
    );
    assert.deepEqual(await alice.get(id), before);
  });

  await t.step("DELETE answers 204; then it is 404 ContactNotFound", async () => {
    const response = await alice.call("DELETE", `${PERSONAL}/${id}`);
    assert.equal(response.status, 204);
    assert.equal(await response.text(), "");
    for (const method of ["GET", "PUT", "DELETE"]) {
      const body = method === "PUT" ? { number: "1" } : undefined;
      await expectError(
        await alice.call(method, `${PERSONAL}/${id}`, body),
        404,
        "ContactNotFound",
        new RegExp(`contact ${id} does not exist`),
      );
    }
  });

  await t.step("an id that is no UUID names no contact: 404", async () => {
    for (const bad of ["42", "not-a-uuid", "x".repeat(3000)]) {
      for (const method of ["GET", "PUT", "DELETE"]) {
        const body = method === "PUT" ? { number: "1" } : undefined;
        await expectError(
          await alice.call(method, `${PERSONAL}/${bad}`, body),
          404,
          "ContactNotFound",
        );
      }
    }
  });
});

Deno.test("validation: 400 InvalidContact naming the field, 500 JsonParsingError", async (t) => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);
  const { id } = await alice.create({ lastname: "Existing" });

  const cases: [body: Body, message: RegExp][] = [
    ["", /no contact/],
    ["   ", /no contact/],
    ["[]", /must be a JSON object/],
    ["null", /must be a JSON object/],
    ["3", /must be a JSON object/],
    [{}, /^a contact needs a name, number, mobile, fax or email$/],
    [{ company: "Acme" }, /needs a name, number, mobile, fax or email/],
    [{ lastname: "   " }, /needs a name, number, mobile, fax or email/],
    [{ lastname: 3 }, /^field lastname: expected a string$/],
    [{ lastname: null }, /^field lastname: expected a string$/],
    [{ lastname: ["a"] }, /^field lastname: expected a string$/],
    [{ lastname: "X", nickname: "x" }, /^field nickname: unknown field$/],
    [{ lastname: "X", email: "nope" }, /^field email: invalid email/],
    [{ lastname: "X", email: "a@b@c" }, /^field email: invalid email/],
    [{ lastname: "X", email: "a b@c" }, /^field email: invalid email/],
    [{ lastname: "X", email: "@c" }, /^field email: invalid email/],
    [{ lastname: "x".repeat(257) }, /^field lastname: longer than 256 characters$/],
    [{ lastname: "X", company: "é".repeat(257) }, /^field company: longer than 256/],
    [{ lastname: "X", favorite: "yes" }, /^field favorite: expected a boolean$/],
  ];

  await t.step("POST", async () => {
    for (const [body, message] of cases) {
      await expectError(await alice.call("POST", PERSONAL, body), 400, "InvalidContact", message);
    }
    await expectError(
      await alice.call("POST", PERSONAL, { id, lastname: "X" }),
      400,
      "InvalidContact",
      /^field id: assigned by the service$/,
    );
  });

  await t.step("PUT (a valid result is needed, so {} is fine there)", async () => {
    for (const [body, message] of cases) {
      if (typeof body === "object" && body !== null && !Object.keys(body).length) continue;
      if (JSON.stringify(body) === '{"company":"Acme"}') continue; // valid with lastname kept
      await expectError(
        await alice.call("PUT", `${PERSONAL}/${id}`, body),
        400,
        "InvalidContact",
        message,
      );
    }
    assert.deepEqual(await alice.get(id), full({ id, lastname: "Existing" }));
  });

  await t.step("a body that is not JSON: 500 JsonParsingError (the spec's status)", async () => {
    for (const body of ["{oops", '{"lastname":', "lastname=X"]) {
      await expectError(
        await alice.call("POST", PERSONAL, body),
        500,
        "JsonParsingError",
        /not valid JSON/,
      );
      await expectError(
        await alice.call("PUT", `${PERSONAL}/${id}`, body),
        500,
        "JsonParsingError",
      );
    }
  });

  await t.step("what is enough: any one of the six, 256 characters, trimmed", async () => {
    for (
      const field of ["firstname", "lastname", "number", "mobile", "fax", "email"] as const
    ) {
      const value = field === "email" ? "only@example" : `only ${field}`;
      assert.equal((await alice.create({ [field]: value }))[field], value);
    }
    assert.equal((await alice.create({ lastname: "é".repeat(256) })).lastname.length, 256);
    const padded = await alice.create({ firstname: `  ${"y".repeat(256)}  ` });
    assert.equal(padded.firstname, "y".repeat(256));
    const emoji = "😀".repeat(256); // 256 characters, 512 UTF-16 units
    assert.equal((await alice.create({ company: emoji, lastname: "E" })).company, emoji);
  });
});

Deno.test("duplicates: 409 DuplicateContact on POST and PUT", async (t) => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);
  const ann = await alice.create({ firstname: "Ann", lastname: "Lee", number: "1001" });

  await t.step('POST equal after trimming, an absent field equal to ""', async () => {
    for (
      const body of [
        { firstname: "Ann", lastname: "Lee", number: "1001" },
        { firstname: " Ann", lastname: "Lee ", number: "1001", email: "", company: "  " },
        { firstname: "Ann", lastname: "Lee", number: "1001", favorite: true },
      ]
    ) {
      await expectError(
        await alice.call("POST", PERSONAL, body),
        409,
        "DuplicateContact",
        /already exists/,
      );
    }
  });

  await t.step("a difference in case or in any field is another contact", async () => {
    await alice.create({ firstname: "ann", lastname: "Lee", number: "1001" });
    await alice.create({ firstname: "Ann", lastname: "Lee", number: "1001", fax: "1" });
  });

  await t.step("PUT making a contact equal to another: 409, unchanged", async () => {
    const other = await alice.create({ firstname: "Bo", lastname: "Lee", number: "1001" });
    await expectError(
      await alice.call("PUT", `${PERSONAL}/${other.id}`, { firstname: " Ann " }),
      409,
      "DuplicateContact",
    );
    assert.deepEqual(await alice.get(other.id), other);
  });

  await t.step("PUT keeping a contact's own content is no duplicate", async () => {
    const same = await alice.json("PUT", `${PERSONAL}/${ann.id}`, {
      firstname: "Ann",
      number: "1001",
    });
    assert.deepEqual(same, ann);
  });

  await t.step("a contact's old content is free once it changed or was deleted", async () => {
    await alice.json("PUT", `${PERSONAL}/${ann.id}`, { number: "1009" });
    const again = await alice.create({ firstname: "Ann", lastname: "Lee", number: "1001" });
    assert.equal((await alice.call("DELETE", `${PERSONAL}/${again.id}`)).status, 204);
    await alice.create({ firstname: "Ann", lastname: "Lee", number: "1001" });
  });

  await t.step("another user's equal contact is no duplicate", async () => {
    const bob = await ctiClient(ctx);
    await bob.create({ firstname: "Ann", lastname: "Lee", number: "1001" });
  });
});

Deno.test("per-user isolation: another user's contact is 404, never 403", async () => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);
  const bob = await ctiClient(ctx);
  const bobs = await bob.create({ firstname: "Bob's", lastname: "Friend", number: "1234" });
  await alice.create({ firstname: "Alice's", lastname: "Friend", number: "1234" });

  for (const method of ["GET", "PUT", "DELETE"]) {
    const body = method === "PUT" ? { number: "666" } : undefined;
    await expectError(
      await alice.call(method, `${PERSONAL}/${bobs.id}`, body),
      404,
      "ContactNotFound",
    );
  }
  assert.deepEqual(await bob.get(bobs.id), bobs);

  const seen = (view: { entries: { entry: string[] }[] }) =>
    view.entries.map(({ entry }) => entry[0]);
  assert.deepEqual(seen(await alice.list()), ["Alice's"]);
  assert.deepEqual(seen(await bob.list()), ["Bob's"]);
  assert.ok(!(await alice.export()).includes("Bob's"));

  assert.equal((await alice.call("DELETE", PERSONAL)).status, 204);
  assert.deepEqual(seen(await alice.list()), []);
  assert.deepEqual(seen(await bob.list()), ["Bob's"]);
  assert.deepEqual(await bob.get(bobs.id), bobs);
});

Deno.test("list view: headers, entries, sorting, Favorite, and the display route", async () => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);
  const names: [string, string][] = [
    ["Zinédine", "Zidane"],
    ["Élise", "Martin"],
    ["alice", "martin"],
    ["Paul", "Durand"],
    ["Anne", "dupont"],
    ["Léa", "Émery"],
    ["Noé", "ëlan"],
    ["Only", ""],
  ];
  for (const [firstname, lastname] of names) {
    await alice.create({ firstname, lastname, mobile: `06 ${firstname.length}` });
  }
  const marked = await alice.create({ firstname: "Fav", lastname: "Orite", number: "0612" });
  await alice.json("PUT", `${PERSONAL}/${marked.id}`, { favorite: true });

  const view = await alice.list();
  assert.deepEqual(view.headers, ["Firstname", "Lastname", "Number", "Mobile", "Favorite"]);
  assert.deepEqual(view.entries.map((e: { entry: string[] }) => e.entry), [
    ["Only", "", "", "06 4", "false"],
    ["Anne", "dupont", "", "06 4", "false"],
    ["Paul", "Durand", "", "06 4", "false"],
    ["Noé", "ëlan", "", "06 3", "false"],
    ["Léa", "Émery", "", "06 3", "false"],
    ["alice", "martin", "", "06 5", "false"],
    ["Élise", "Martin", "", "06 5", "false"],
    ["Fav", "Orite", "0612", "", "true"],
    ["Zinédine", "Zidane", "", "06 8", "false"],
  ]);
  for (const entry of view.entries) {
    assert.deepEqual(Object.keys(entry), ["status", "entry", "contact_id"]);
    assert.equal(entry.status, -2);
    assert.equal((await alice.get(entry.contact_id)).firstname, entry.entry[0]);
  }
  assert.deepEqual(await alice.json("GET", DISPLAY), view);

  const empty = await ctiClient(ctx);
  assert.deepEqual(await empty.list(), {
    headers: ["Firstname", "Lastname", "Number", "Mobile", "Favorite"],
    entries: [],
  });
});

Deno.test("list view status: the live phone status of the contact's number", async (t) => {
  const sim = await simSetup({ SVC_SIM_ANSWER_MS: "1000", SVC_SIM_TALK_MS: "0" });
  const { ctx } = sim;
  const alice = await phoneUser(sim, "alice", "1001", { password: "alice-pw" });
  await phoneUser(sim, "bob", "1002");
  const carol = await phoneUser(sim, "carol", "1003");
  const api = client(ctx, await login(ctx, "login", "alice"));
  const contacts: [string, Record<string, string>][] = [
    ["a-self", { number: "1001" }],
    ["b-bob", { number: "1002" }],
    ["c-carol", { number: "1003" }],
    ["d-outside", { number: "0612345678" }],
    ["e-no-number", { mobile: "1002" }],
    ["f-unknown-extension", { number: "1999" }],
  ];
  for (const [lastname, fields] of contacts) await api.create({ lastname, ...fields });
  const statuses = async () => {
    const view = await api.list();
    return Object.fromEntries(
      view.entries.map((e: { status: number; entry: string[] }) => [e.entry[1], e.status]),
    );
  };
  const expect = async (self: number, bob: number, carolStatus = 0) =>
    assert.deepEqual(await statuses(), {
      "a-self": self,
      "b-bob": bob,
      "c-carol": carolStatus,
      "d-outside": -2,
      "e-no-number": -2,
      "f-unknown-extension": -2,
    });

  await t.step("idle phones are 0, anything else -2", () => expect(0, 0));
  await t.step("calling 1, ringing 8, busy 2, on hold 16", async () => {
    await sim.sim.setPolicy("1001", { policy: "manual" });
    await sim.sim.setPolicy("1002", { policy: "manual" });
    await sim.sim.dialNumber(alice, "1002", {});
    await expect(1, 0);
    await sim.sim.act("1001", "answer");
    await expect(1, 8);
    await sim.sim.act("1002", "answer");
    await expect(2, 2);
    await sim.sim.act("1002", "hold");
    await expect(2, 16);
    await sim.sim.act("1002", "hangup");
    await expect(0, 0);
  });
  await t.step("DND or an unavailable phone is -1", async () => {
    const response = await sim.api.put(`/users/${carol.id}/services/dnd`, { enabled: true });
    assert.equal(response.status, 204, await response.text());
    await expect(0, 0, -1);
    await sim.api.put(`/users/${carol.id}/services/dnd`, { enabled: false });
    await sim.sim.setPolicy("1002", { policy: "unavailable" });
    await expect(0, -1, 0);
  });
});

/** Counts the calls of the platform's `phoneStatuses`; `phoneStatuses` is the uncounted one. */
function countStatusCalls(ctx: TestContext) {
  const platform = ctx.services.platform;
  const phoneStatuses = platform.phoneStatuses.bind(platform);
  const counted = { calls: 0, phoneStatuses };
  platform.phoneStatuses = (numbers) => {
    counted.calls++;
    return phoneStatuses(numbers);
  };
  return counted;
}

Deno.test("list views ask the platform again only once a status may have changed", async () => {
  const sim = await simSetup();
  const { ctx } = sim;
  const alice = await phoneUser(sim, "alice", "1001", { password: "alice-pw" });
  await phoneUser(sim, "bob", "1002");
  await sim.sim.setPolicy("1001", { policy: "manual" });
  await sim.sim.setPolicy("1002", { policy: "manual" });
  const api = client(ctx, await login(ctx, "login", "alice"));
  await api.create({ lastname: "bob", number: "1002" });
  const counted = countStatusCalls(ctx);
  const bobStatus = async () => (await api.list()).entries[0].status;

  // the contact just written: the first views read the directory and the statuses again
  for (let n = 0; n < 2; n++) assert.equal(await bobStatus(), 0);
  const asked = counted.calls;
  for (let n = 0; n < 5; n++) assert.equal(await bobStatus(), 0);
  assert.equal(counted.calls, asked, "no status could change: the kept answer");

  await sim.sim.dialNumber(alice, "1002", {});
  await sim.sim.act("1001", "answer");
  assert.equal(await bobStatus(), 8, "bob's phone rings");
  assert.equal(await bobStatus(), 8);
  assert.equal(counted.calls, asked + 1);
});

Deno.test("delete all: 204, and nothing left", async () => {
  const ctx = await setup({ SVC_MAX_CONTACTS: "5" });
  const alice = await ctiClient(ctx);
  const empty = await alice.call("DELETE", PERSONAL);
  assert.equal(empty.status, 204);
  const csv = [EXPORT_HEADER, ...[1, 2, 3, 4, 5].map((n) => `,,,,Name ${n},,`)].join("\n");
  assert.equal((await alice.import(csv)).created.length, 5);
  const response = await alice.call("DELETE", PERSONAL);
  assert.equal(response.status, 204);
  assert.equal(await response.text(), "");
  assert.deepEqual((await alice.list()).entries, []);
  assert.equal(await alice.export(), `${EXPORT_HEADER}\r\n`);
  // the count is back to 0: five more fit
  assert.equal((await alice.import(csv)).created.length, 5);
});

Deno.test("the contact limit (SVC_MAX_CONTACTS)", async (t) => {
  const ctx = await setup({ SVC_MAX_CONTACTS: "3" });
  const alice = await ctiClient(ctx);
  await alice.create({ lastname: "One" });
  const two = await alice.create({ lastname: "Two" });

  await t.step("an import stops at the limit, line by line", async () => {
    const csv = "lastname\nThree\nTwo\nFour\nFive\n";
    assert.deepEqual(
      await alice.import(csv).then(({ created, failed }) => ({
        created: created.map((c) => c.lastname),
        failed,
      })),
      {
        created: ["Three"],
        failed: [
          { line: 3, errors: ["duplicate contact"] },
          { line: 4, errors: ["contact limit reached"] },
          { line: 5, errors: ["contact limit reached"] },
        ],
      },
    );
  });

  await t.step("POST past the limit: 400 InvalidContact", async () => {
    await expectError(
      await alice.call("POST", PERSONAL, { lastname: "Four" }),
      400,
      "InvalidContact",
      /^contact limit reached: at most 3 contacts$/,
    );
  });

  await t.step("a duplicate is told as such even at the limit", async () => {
    await expectError(
      await alice.call("POST", PERSONAL, { lastname: "One" }),
      409,
      "DuplicateContact",
    );
  });

  await t.step("PUT is not limited; a deletion frees a place", async () => {
    await alice.json("PUT", `${PERSONAL}/${two.id}`, { lastname: "Deux" });
    assert.equal((await alice.call("DELETE", `${PERSONAL}/${two.id}`)).status, 204);
    await alice.create({ lastname: "Four" });
  });

  await t.step("the limit is per user", async () => {
    const bob = await ctiClient(ctx);
    for (const lastname of ["One", "Two", "Three"]) await bob.create({ lastname });
  });
});

Deno.test("import: a file mixing good and bad lines gets the exact answer", async () => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);
  await alice.create({ firstname: "Existing", lastname: "Contact", number: "2000" });
  const long = "x".repeat(257);
  const csv = [
    "firstname,lastname,number,email,company", // 1
    "Alice,Martin,1001,alice@example.com,Acme", // 2 created
    "Too,Many,1002,t@example.com,Acme,extra", // 3
    "Missing,Fields,1003", // 4
    "Bad,Email,1004,not-an-email,", // 5
    "Existing,Contact,2000,,", // 6 duplicate of an existing contact
    "Alice,Martin,1001,alice@example.com,Acme", // 7 duplicate of line 2
    ",,,,", // 8
    '"Quoted, Name","Multi', // 9 created: a quoted field spans lines 9 and 10
    'line ""Name""",1005,q@example.com,"Acme, Inc."', // 10
    "", // 11 blank: skipped
    "Éloïse,Ñúñez-Øst,1006,éloïse@exämple.com,Société Générale", // 12 created
    `Long,${long},1007,bad,`, // 13
    " Alice , Martin ,1001, alice@example.com ,Acme", // 14 duplicate of line 2 once trimmed
    "Zed,,,,", // 15 created
    ",,,,Acme", // 16
    "", // the final line end
  ].join("\n");
  const { created, failed } = await alice.import(csv);
  assert.deepEqual(created.map((c) => c.lastname), [
    "Martin",
    'Multi\nline "Name"',
    "Ñúñez-Øst",
    "",
  ]);
  for (const { id } of created) assert.match(id, UUID);
  assert.deepEqual(failed, [
    { line: 3, errors: ["too many fields"] },
    { line: 4, errors: ["missing fields"] },
    { line: 5, errors: ["invalid email"] },
    { line: 6, errors: ["duplicate contact"] },
    { line: 7, errors: ["duplicate contact"] },
    { line: 8, errors: ["no name, number, mobile, fax or email"] },
    { line: 13, errors: ["invalid email", "field lastname is too long"] },
    { line: 14, errors: ["duplicate contact"] },
    { line: 16, errors: ["no name, number, mobile, fax or email"] },
  ]);
  assert.deepEqual(
    withoutId(await alice.get(created[1]!.id)),
    full({
      firstname: "Quoted, Name",
      lastname: 'Multi\nline "Name"',
      number: "1005",
      email: "q@example.com",
      company: "Acme, Inc.",
    }),
  );
  assert.deepEqual(
    withoutId(await alice.get(created[2]!.id)),
    full({
      firstname: "Éloïse",
      lastname: "Ñúñez-Øst",
      number: "1006",
      email: "éloïse@exämple.com",
      company: "Société Générale",
    }),
  );
  assert.equal((await alice.list()).entries.length, 5);
});

Deno.test("import: multipart part file, a plain body, a BOM and CRLF line ends", async (t) => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);

  await t.step("multipart/form-data with a part file of type text/csv", async () => {
    const form = new FormData();
    form.append(
      "file",
      new File(["lastname,number\nMultipart,1\n"], "c.csv", { type: "text/csv" }),
    );
    const result = await alice.json("POST", IMPORT, form, 201);
    assert.deepEqual(result.created.map((c: { lastname: string }) => c.lastname), ["Multipart"]);
    assert.deepEqual(result.failed, []);
  });

  await t.step("a part file sent as a plain form field is read too", async () => {
    const form = new FormData();
    form.append("file", "lastname\nField\n");
    const result = await alice.json("POST", IMPORT, form, 201);
    assert.deepEqual(result.created.map((c: { lastname: string }) => c.lastname), ["Field"]);
  });

  await t.step("a multipart body without a part file: 400", async () => {
    const form = new FormData();
    form.append("other", new File(["lastname\nX\n"], "c.csv", { type: "text/csv" }));
    await expectError(
      await alice.call("POST", IMPORT, form),
      400,
      "InvalidContact",
      /part named file/,
    );
  });

  await t.step("a plain text/csv;charset=UTF-8 body with a BOM and CRLF", async () => {
    const result = await alice.import(
      "\uFEFFfirstname,lastname\r\nPlain,Body\r\n\r\nSecond,Line\r\n",
    );
    assert.deepEqual(result.created.map((c) => c.lastname), ["Body", "Line"]);
    assert.deepEqual(result.failed, []);
  });

  await t.step("column names are matched whatever their case and spaces", async () => {
    const result = await alice.import(" LastName , Number\nCase,42\n");
    assert.deepEqual(
      withoutId(await alice.get(result.created[0]!.id)),
      full({
        lastname: "Case",
        number: "42",
      }),
    );
  });

  await t.step("a header alone: 201 with nothing created", async () => {
    assert.deepEqual(await alice.import(EXPORT_HEADER), { created: [], failed: [] });
  });

  await t.step("a body over 1 MiB (the other routes' limit) is fine up to 10 MiB", async () => {
    const csv = `lastname\nBig\n${"\n".repeat(2 * MiB)}`;
    assert.equal((await alice.import(csv)).created.length, 1);
  });
});

Deno.test("import: files refused whole with 400 InvalidContact", async (t) => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);
  const refused = async (body: string | Uint8Array, message: RegExp) => {
    const response = await alice.call("POST", IMPORT, body, { "Content-Type": "text/csv" });
    await expectError(response, 400, "InvalidContact", message);
  };

  await t.step("empty", async () => {
    await refused("", /^the file is empty$/);
    await refused("\uFEFF", /^the file is empty$/);
    await refused("\n\r\n  \n", /^the file is empty$/);
  });
  await t.step("no header", async () => {
    await refused("\nlastname\nMartin\n", /^the file has no header/);
    await refused("Alice,Martin,1001\nBob,Durand,1002\n", /^the file has no header/);
  });
  await t.step("an unknown column", async () => {
    await refused("lastname,nickname\nMartin,Al\n", /^unknown column "nickname"$/);
    await refused("lastname,,number\nMartin,,1\n", /^unknown column ""$/);
  });
  await t.step("a repeated column", async () => {
    await refused("lastname,number,LastName\nA,1,B\n", /^column lastname appears more than once$/);
  });
  await t.step("not UTF-8", async () => {
    const latin1 = new Uint8Array([...new TextEncoder().encode("lastname\nJos"), 0xe9, 0x0a]);
    await refused(latin1, /^the file is not valid UTF-8$/);
  });
  await t.step("nothing was created", async () => {
    assert.deepEqual((await alice.list()).entries, []);
  });
  await t.step("over 10 MiB: 413 PayloadTooLarge before it is read (decisions §11)", async () => {
    const big = `lastname\n${"x".repeat(10 * MiB)}`;
    await expectError(
      await alice.call("POST", IMPORT, big, { "Content-Type": "text/csv" }),
      413,
      "PayloadTooLarge",
    );
    const form = new FormData();
    form.append("file", new File([big], "big.csv", { type: "text/csv" }));
    await expectError(await alice.call("POST", IMPORT, form), 413, "PayloadTooLarge");
  });
});

Deno.test("export: the exact CSV; re-imported into an empty account, the same contacts", async () => {
  const ctx = await setup();
  const alice = await ctiClient(ctx);
  const contacts = [
    {
      firstname: "Émile",
      lastname: "Zola",
      number: "1002",
      email: "emile@example.com",
      company: "Les Rougon, Macquart",
    },
    { firstname: "ada", lastname: "lovelace", mobile: "+44 20 7946 0000" },
    { firstname: 'Jean "Johnny"', lastname: "Éclair", fax: "0102030405", company: "Line1\nLine2" },
    { number: "0612345678" },
    { firstname: "Ünïcødé 名前", lastname: "Ωμέγα", email: "u@例え.jp" },
  ];
  for (const contact of contacts) await alice.create(contact);

  const exported = await alice.export();
  assert.equal(
    exported,
    [
      EXPORT_HEADER,
      ",,,,,,0612345678",
      '"Line1\nLine2",,0102030405,"Jean ""Johnny""",Éclair,,',
      ",,,ada,lovelace,+44 20 7946 0000,",
      '"Les Rougon, Macquart",emile@example.com,,Émile,Zola,,1002',
      ",u@例え.jp,,Ünïcødé 名前,Ωμέγα,,",
      "",
    ].join("\r\n"),
  );
  const response = await alice.call("GET", EXPORT);
  assert.match(response.headers.get("content-disposition") ?? "", /attachment/);
  await response.body?.cancel();

  const bob = await ctiClient(ctx);
  const form = new FormData();
  form.append("file", new File([exported], "contacts.csv", { type: "text/csv" }));
  const result = await bob.json("POST", IMPORT, form, 201);
  assert.equal(result.created.length, contacts.length);
  assert.deepEqual(result.failed, []);
  assert.equal(await bob.export(), exported);
  const contents = async (api: Client) => {
    const view = await api.list();
    const all = [];
    for (const entry of view.entries) all.push(withoutId(await api.get(entry.contact_id)));
    return all;
  };
  assert.deepEqual(await contents(bob), await contents(alice));

  // the same file again: every line is a duplicate now
  const again = await bob.import(exported);
  assert.deepEqual(again.created, []);
  assert.deepEqual(again.failed.map((f) => f.errors[0]), contacts.map(() => "duplicate contact"));
});

Deno.test("ACLs: each route needs its exact ACL from alias.ctiuser", async (t) => {
  const ctx = await setup();
  const user = await ctiUser(ctx);
  const token = async (acls: string[]) => {
    const identity = { userId: String(user.id), login: user.username!, userType: "cti" as const };
    return client(ctx, (await ctx.services.tokens.issue({ ...identity, acls })).token);
  };
  const owner = await token(["svc.rest.contact.personal.create"]);
  const { id } = await owner.create({ lastname: "Target" });
  const csv = "lastname\nImported\n";
  const routes: [method: string, path: string, acl: string, body?: Body][] = [
    ["GET", PERSONAL, "svc.rest.contact.personal.read"],
    ["GET", DISPLAY, "svc.rest.contact.display.personal.read"],
    ["POST", PERSONAL, "svc.rest.contact.personal.create", { lastname: "New" }],
    ["GET", `${PERSONAL}/${id}`, `svc.rest.contact.personal.${id}.read`],
    ["PUT", `${PERSONAL}/${id}`, `svc.rest.contact.personal.${id}.update`, { number: "1" }],
    ["GET", EXPORT, "svc.rest.contact.export.personal.read"],
    ["POST", IMPORT, "svc.rest.contact.import.personal.create", csv],
    ["DELETE", `${PERSONAL}/${id}`, `svc.rest.contact.personal.${id}.delete`],
    ["DELETE", PERSONAL, "svc.rest.contact.personal.delete"],
  ];
  const narrow = await token(["svc.rest.call_qualification.#", "svc.rest.mobile.#"]);
  for (const [method, path, acl, body] of routes) {
    await t.step(`${method} ${path.slice(V2.length)} needs ${acl}`, async () => {
      await expectForbidden(await narrow.call(method, path, body), acl);
      const allowed = await (await token([acl])).call(method, path, body);
      assert.ok(allowed.status < 300, `${method} ${path}: ${allowed.status}`);
      await allowed.body?.cancel();
    });
  }

  await t.step("the alias.ctiuser token of a login holds them all", async () => {
    const api = client(ctx, await login(ctx, "login", user.username!));
    await api.create({ lastname: "Logged in" });
    // the steps above ended with DELETE /contact/personal
    assert.deepEqual((await api.list()).entries.map((e: { entry: string[] }) => e.entry[1]), [
      "Logged in",
    ]);
  });

  await t.step("no token: 400 AuthorizationHeaderNotFound", async () => {
    const response = await ctx.app.request(PERSONAL);
    await expectError(response, 400, "AuthorizationHeaderNotFound");
  });
});

/** Every contacts route, with a body where it takes one; `id` names the contact. */
function everyRoute(id: string): [string, string, Body?][] {
  return [
    ["GET", PERSONAL],
    ["GET", DISPLAY],
    ["POST", PERSONAL, { lastname: "X" }],
    ["DELETE", PERSONAL],
    ["GET", `${PERSONAL}/${id}`],
    ["PUT", `${PERSONAL}/${id}`, { lastname: "X" }],
    ["DELETE", `${PERSONAL}/${id}`],
    ["GET", EXPORT],
    ["POST", IMPORT, "lastname\nX\n"],
  ];
}

Deno.test("a web service user's token is refused with 403 Forbidden, whatever its ACLs", async () => {
  const ctx = await setup();
  const ws = await webServiceUser(ctx, ["svc.rest.#"]);
  const api = client(ctx, await login(ctx, "webservice", ws.login));
  const id = crypto.randomUUID();
  const routes = everyRoute(id);
  for (const [method, path, body] of routes) {
    const response = await api.call(method, path, body);
    assert.equal(response.status, 403, `${method} ${path}`);
    assert.deepEqual(await response.json(), {
      error: "Forbidden",
      message: "personal contacts belong to CTI users only",
    });
  }
  const narrow = await webServiceUser(ctx, ["svc.rest.dial.#"]);
  const narrowApi = client(ctx, await login(ctx, "webservice", narrow.login));
  await expectForbidden(await narrowApi.call("GET", PERSONAL), "svc.rest.contact.personal.read");
});

Deno.test("a token whose user was deleted cannot write: 401 UserNotFound", async () => {
  const ctx = await setup();
  const user = await ctiUser(ctx);
  const api = client(ctx, await login(ctx, "login", user.username!));
  const { id } = await api.create({ lastname: "Before" });
  await deleteUser(ctx.services.store, user.id);
  const writes: [string, string, Body][] = [
    ["POST", PERSONAL, { lastname: "After" }],
    ["PUT", `${PERSONAL}/${id}`, { lastname: "After" }],
    ["POST", IMPORT, "lastname\nAfter\n"],
  ];
  for (const [method, path, body] of writes) {
    await expectError(await api.call(method, path, body), 401, "UserNotFound", /does not exist/);
  }
});

Deno.test("the store failing: 503 Unreachable on every route", async () => {
  const ctx = await setup();
  const api = await ctiClient(ctx);
  const { id } = await api.create({ lastname: "Stored" });
  ctx.services.store.close();
  const routes = everyRoute(id);
  for (const [method, path, body] of routes) {
    const response = await api.call(method, path, body);
    assert.equal(response.status, 503, `${method} ${path}`);
    assert.deepEqual(await response.json(), {
      error: "Unreachable",
      message: "the store is unreachable",
    });
  }
});

Deno.test("the store coming back: the service recovers by itself", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const ctx = await setup({ SVC_KV: `${dir}/svc.kv` });
    const api = await ctiClient(ctx);
    await api.create({ lastname: "Kept" });
    await ctx.services.store.run((kv) => Promise.resolve(kv.close()));
    const lost = await api.call("GET", PERSONAL);
    assert.equal(lost.status, 503);
    await lost.body?.cancel();
    assert.deepEqual((await api.list()).entries.map((e: { entry: string[] }) => e.entry[1]), [
      "Kept",
    ]);
    ctx.services.store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("concurrent list views share platform calls, each with its own contacts", async () => {
  const sim = await simSetup();
  const { ctx } = sim;
  await phoneUser(sim, "bob", "1002");
  const users: Client[] = [];
  for (let n = 0; n < 4; n++) {
    const api = await ctiClient(ctx);
    await api.create({ lastname: `own ${n}`, number: n % 2 ? "1002" : `06${n}` });
    users.push(api);
  }
  const platform = ctx.services.platform;
  const counted = countStatusCalls(ctx);
  const views = await Promise.all(
    Array.from({ length: 40 }, (_, i) => users[i % 4]!.list()),
  );
  views.forEach((view, i) => {
    const n = i % 4;
    assert.deepEqual(
      view.entries.map((e: { status: number; entry: string[] }) => [e.entry[1], e.status]),
      [[`own ${n}`, n % 2 ? 0 : -2]],
    );
  });
  assert.ok(counted.calls < 40, `${counted.calls} platform calls for 40 list views`);

  // a connector that is down cannot tell whether a status changed
  platform.phoneStatusVersion = () => null;
  platform.phoneStatuses = () => Promise.reject(new Error("platform down"));
  const failed = await Promise.all(users.map((api) => api.call("GET", PERSONAL)));
  for (const response of failed) {
    await expectError(response, 500, "NotHandledError");
  }
  platform.phoneStatuses = counted.phoneStatuses;
  assert.equal((await users[0]!.list()).entries.length, 1);
});

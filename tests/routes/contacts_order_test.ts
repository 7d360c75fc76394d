/**
 * The personal contacts' order (issue 14; docs/contacts.md): lastname, firstname, then creation
 * order, so export → import into an empty account → export gives the same bytes, ties included.
 */
import assert from "node:assert/strict";
import { bearer, ctiUser, login, setup, type TestContext } from "../helpers.ts";

const V2 = "/svc/api/2.0";
const PERSONAL = `${V2}/contact/personal`;
const IMPORT = `${V2}/contact/import/personal`;
const EXPORT = `${V2}/contact/export/personal`;
const HEADER = "company,email,fax,firstname,lastname,mobile,number";

/** A CTI user's calls: create, update, delete, import and export its contacts. */
async function account(ctx: TestContext) {
  const user = await ctiUser(ctx);
  const token = await login(ctx, "login", user.username!);
  const call = async (method: string, path: string, body?: string, type = "application/json") => {
    const response = await ctx.app.request(path, {
      method,
      headers: { ...bearer(token), "Content-Type": type },
      body,
    });
    return { status: response.status, text: await response.text() };
  };
  return {
    async create(fields: Record<string, string>): Promise<string> {
      const { status, text } = await call("POST", PERSONAL, JSON.stringify(fields));
      assert.equal(status, 201, text);
      return JSON.parse(text).id;
    },
    async update(id: string, fields: Record<string, string>) {
      const { status, text } = await call("PUT", `${PERSONAL}/${id}`, JSON.stringify(fields));
      assert.equal(status, 200, text);
    },
    async delete(id: string) {
      assert.equal((await call("DELETE", `${PERSONAL}/${id}`)).status, 204);
    },
    async import(csv: string) {
      const { status, text } = await call("POST", IMPORT, csv, "text/csv;charset=UTF-8");
      assert.equal(status, 201, text);
      const result = JSON.parse(text);
      assert.deepEqual(result.failed, []);
      return result.created as { id: string }[];
    },
    async export(): Promise<string> {
      const { status, text } = await call("GET", EXPORT);
      assert.equal(status, 200, text);
      return text;
    },
    /** The list view's numbers, in its order. */
    async listNumbers(): Promise<string[]> {
      const { status, text } = await call("GET", PERSONAL);
      assert.equal(status, 200, text);
      return JSON.parse(text).entries.map((entry: { entry: string[] }) => entry.entry[2]);
    },
  };
}

/** The `number` column of an export's data lines. */
const numbers = (csv: string) =>
  csv.split("\r\n").slice(1, -1).map((line) => line.split(",").at(-1)!);

Deno.test("contacts with equal names keep their creation order in the list and the export", async (t) => {
  const ctx = await setup();
  const alice = await account(ctx);
  // names equal once case and accents are folded, created in this order
  const tied: [string, string][] = [
    ["Élise", "Martin"],
    ["elise", "martin"],
    ["ELISE", "MARTIN"],
    ["Elise", "Martín"],
    ["élise", "martin"],
  ];
  const ids: string[] = [];
  for (const [i, [firstname, lastname]] of tied.entries()) {
    ids.push(await alice.create({ firstname, lastname, number: `10${i}` }));
  }
  // 20 exact twins but for the number, created in an order their random ids do not follow
  for (let i = 0; i < 20; i++) {
    ids.push(await alice.create({ firstname: "Ann", lastname: "Lee", number: String(500 - i) }));
  }
  await alice.create({ firstname: "Zoé", lastname: "Adam", number: "1" });
  const expected = [
    "1",
    ...Array.from({ length: 20 }, (_, i) => String(500 - i)),
    "100",
    "101",
    "102",
    "103",
    "104",
  ];

  await t.step("creation order breaks the ties, in the list view and the export", async () => {
    assert.deepEqual(await alice.listNumbers(), expected);
    assert.deepEqual(numbers(await alice.export()), expected);
  });

  await t.step("an update keeps a contact's place; a contact made again goes last", async () => {
    await alice.update(ids[0]!, { email: "elise@example.com" });
    assert.deepEqual(numbers(await alice.export()), expected);
    await alice.delete(ids[1]!);
    await alice.create({ firstname: "elise", lastname: "martin", number: "101" });
    const moved = [...expected.filter((number) => number !== "101"), "101"];
    assert.deepEqual(numbers(await alice.export()), moved);
  });

  await t.step("export → import into an empty account → export: the same bytes", async () => {
    const exported = await alice.export();
    const bob = await account(ctx);
    await bob.import(exported);
    assert.equal(await bob.export(), exported);
    // and once more, from bob's export into a third account
    const carol = await account(ctx);
    await carol.import(await bob.export());
    assert.equal(await carol.export(), exported);
  });
});

Deno.test("an import keeps its file order as creation order, across its atomic commits", async (t) => {
  const ctx = await setup();

  await t.step("lines with equal names come out in file order", async () => {
    const alice = await account(ctx);
    const csv = [HEADER, ",,,Ann,Lee,,3", ",,,ann,lee,,1", ",,,Ann,Lée,,2", ""].join("\r\n");
    await alice.import(csv);
    assert.deepEqual(numbers(await alice.export()), ["3", "1", "2"]);
    // contacts made after the import come after its lines
    await alice.create({ firstname: "ANN", lastname: "LEE", number: "0" });
    assert.deepEqual(numbers(await alice.export()), ["3", "1", "2", "0"]);
  });

  await t.step("1,000 tied lines (three commits) keep their order, and round-trip", async () => {
    const alice = await account(ctx);
    const lines = Array.from({ length: 1_000 }, (_, i) => `,,,Ann,Lee,,${(i * 7919) % 1_000}`);
    const csv = [HEADER, ...lines, ""].join("\r\n");
    assert.equal((await alice.import(csv)).length, 1_000);
    const exported = await alice.export();
    assert.equal(exported, csv);
    const bob = await account(ctx);
    await bob.import(exported);
    assert.equal(await bob.export(), exported);
  });
});

/**
 * `lib/store/contacts.ts` below the routes: imports split into atomic operations within Deno KV's
 * limits, writes racing each other, deleting thousands, the in-memory list checked against the
 * store (also when another process writes), and the rules of contents and validity.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  CONTACT_FIELDS,
  type ContactFields,
  contactProblems,
  contentHash,
  countContacts,
  createContact,
  currentContacts,
  deleteAllContacts,
  deleteContact,
  deleteContactsOfUser,
  emptyFields,
  importContacts,
  listContacts,
  recentContacts,
  updateContact,
} from "../../lib/store/contacts.ts";
import { Store } from "../../lib/store/store.ts";

const fields = (values: Partial<ContactFields>): ContactFields => ({ ...emptyFields(), ...values });

/** The user's contacts are consistent: the count, the records and the contents agree. */
async function assertConsistent(store: Store, userId: number) {
  const contacts = await listContacts(store, userId);
  assert.equal(await countContacts(store, userId), contacts.length);
  const hashes = new Set(await Promise.all(contacts.map(contentHash)));
  assert.equal(hashes.size, contacts.length, "two contacts share a content");
  const index = await store.list<string>({ prefix: ["contacts_by_content", userId] });
  assert.deepEqual(
    index.map((entry) => entry.key[2]).sort(),
    [...hashes].sort(),
    "the content index and the records disagree",
  );
  const ids = new Map<string, string>();
  for (const contact of contacts) ids.set(await contentHash(contact), contact.id);
  for (const entry of index) assert.equal(entry.value, ids.get(entry.key[2] as string));
  return contacts;
}

Deno.test("an import of large contacts stays within Deno KV's limits per atomic operation", async () => {
  const store = await Store.open(":memory:");
  const long = (n: number) => `${n}`.padEnd(256, "€"); // 3 bytes a character in UTF-8
  const candidates = Array.from({ length: 600 }, (_, n) =>
    fields({
      company: long(n),
      email: `${n}@${"é".repeat(250)}`,
      fax: long(n),
      firstname: long(n),
      lastname: long(n),
      mobile: long(n),
      number: long(n),
    }));
  const outcomes = await importContacts(store, 1, candidates, 10_000);
  assert.ok(outcomes.every((outcome) => outcome.status === "created"));
  assert.equal((await assertConsistent(store, 1)).length, 600);
  store.close();
});

Deno.test("an import of many lines: duplicates and the limit, in line order", async () => {
  const store = await Store.open(":memory:");
  await createContact(store, 1, fields({ lastname: "n7" }), false, 10_000);
  const candidates = Array.from({ length: 2_500 }, (_, n) => fields({ lastname: `n${n % 2_000}` }));
  const outcomes = await importContacts(store, 1, candidates, 1_500);
  const statuses = outcomes.map((outcome) => outcome.status);
  assert.equal(statuses[7], "duplicate");
  assert.equal(statuses.filter((status) => status === "created").length, 1_499);
  assert.equal(statuses.lastIndexOf("created"), 1_499);
  assert.ok(statuses.slice(1_500, 2_000).every((status) => status === "limit"));
  // lines 2000.. repeat lines 0..499, which were created (or, for n7, existed)
  assert.ok(statuses.slice(2_000).every((status) => status === "duplicate"));
  assert.equal((await assertConsistent(store, 1)).length, 1_500);
  store.close();
});

Deno.test("writes racing an import keep the count, the limit and the contents right", async () => {
  const store = await Store.open(":memory:");
  const candidates = Array.from({ length: 3_000 }, (_, n) => fields({ lastname: `n${n}` }));
  const racing = Array.from(
    { length: 40 },
    (_, n) => createContact(store, 1, fields({ lastname: `n${n * 70}` }), false, 2_000),
  );
  const [outcomes, ...created] = await Promise.all([
    importContacts(store, 1, candidates, 2_000),
    ...racing,
  ]);
  const contacts = await assertConsistent(store, 1);
  assert.equal(contacts.length, 2_000);
  const imported = outcomes!.filter((outcome) => outcome.status === "created").length;
  const posted = created.filter((outcome) => outcome.status === "created").length;
  assert.equal(imported + posted, 2_000);
  store.close();
});

Deno.test("update and delete race without breaking the index", async () => {
  const store = await Store.open(":memory:");
  const made = [];
  for (let n = 0; n < 20; n++) {
    const outcome = await createContact(store, 1, fields({ lastname: `n${n}` }), false, 100);
    assert.equal(outcome.status, "created");
    if (outcome.status === "created") made.push(outcome.contact);
  }
  // everyone renames to the same content: exactly one wins, the others are duplicates
  const renames = await Promise.all(
    made.map((contact) => updateContact(store, 1, contact.id, { lastname: "same" })),
  );
  assert.equal(renames.filter((outcome) => outcome.status === "updated").length, 1);
  assert.equal(renames.filter((outcome) => outcome.status === "duplicate").length, 19);
  const deletions = await Promise.all(made.map((contact) => deleteContact(store, 1, contact.id)));
  assert.ok(deletions.every(Boolean));
  assert.equal((await assertConsistent(store, 1)).length, 0);
  store.close();
});

Deno.test("deleting thousands of contacts, and every trace of a user", async () => {
  const store = await Store.open(":memory:");
  const candidates = Array.from({ length: 1_234 }, (_, n) => fields({ lastname: `n${n}` }));
  await importContacts(store, 1, candidates, 10_000);
  await importContacts(store, 2, candidates.slice(0, 10), 10_000);
  await deleteAllContacts(store, 1);
  assert.equal((await assertConsistent(store, 1)).length, 0);
  assert.equal((await assertConsistent(store, 2)).length, 10);
  // the contents are free again
  const again = await importContacts(store, 1, candidates.slice(0, 5), 10_000);
  assert.ok(again.every((outcome) => outcome.status === "created"));

  await deleteContactsOfUser(store, 1);
  const left = (await store.list({ prefix: [] })).filter(({ key }) =>
    String(key[0]).startsWith("contacts") && key[1] === 1
  );
  assert.deepEqual(left, []);
  assert.equal((await assertConsistent(store, 2)).length, 10);
  store.close();
});

Deno.test("recentContacts: the kept list until this process writes contacts", async () => {
  const store = await Store.open(":memory:");
  try {
    assert.equal(recentContacts(store, 1), null, "never read");
    await createContact(store, 1, fields({ lastname: "First" }), false, 100);
    const first = await currentContacts(store, 1);
    assert.equal(recentContacts(store, 1), first);
    assert.equal(recentContacts(store, 2), null, "another user's list was not read");

    const writes: [string, () => Promise<unknown>][] = [
      ["create", () => createContact(store, 2, fields({ lastname: "Other" }), false, 100)],
      ["update", () => updateContact(store, 1, first[0]!.id, { favorite: true })],
      ["delete", () => deleteContact(store, 1, first[0]!.id)],
      ["import", () => importContacts(store, 1, [fields({ lastname: "Imported" })], 100)],
      ["delete all", () => deleteAllContacts(store, 1)],
    ];
    for (const [name, write] of writes) {
      const kept = await currentContacts(store, 1);
      assert.equal(recentContacts(store, 1), kept);
      await write();
      assert.equal(recentContacts(store, 1), null, `after ${name}`);
    }
    assert.deepEqual(await currentContacts(store, 1), []);
  } finally {
    store.close();
  }
});

Deno.test("the kept list is read again when another process changed the contacts", async () => {
  const dir = await Deno.makeTempDir();
  const one = await Store.open(`${dir}/svc.kv`);
  const other = await Store.open(`${dir}/svc.kv`);
  try {
    await createContact(one, 1, fields({ lastname: "First" }), false, 100);
    const first = await currentContacts(one, 1);
    assert.equal(await currentContacts(one, 1), first, "unchanged: the same array");
    assert.deepEqual(first.map((contact) => contact.lastname), ["First"]);

    const outcome = await createContact(other, 1, fields({ lastname: "Second" }), false, 100);
    const second = await currentContacts(one, 1);
    assert.equal(recentContacts(one, 1), second);
    assert.equal(recentContacts(one, 1, 0), null, "older than allowed");
    assert.deepEqual(second.map((contact) => contact.lastname).sort(), ["First", "Second"]);

    if (outcome.status !== "created") throw new Error(outcome.status);
    await updateContact(other, 1, outcome.contact.id, { favorite: true });
    const third = await currentContacts(one, 1);
    assert.equal(third.find((contact) => contact.lastname === "Second")?.favorite, true);

    await deleteContactsOfUser(other, 1);
    assert.deepEqual(await currentContacts(one, 1), []);
    assert.deepEqual(await currentContacts(one, 2), []);
  } finally {
    one.close();
    other.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("contents and validity", async () => {
  const hash = contentHash;
  assert.equal(await hash(fields({ lastname: "A" })), await hash(fields({ lastname: "A" })));
  assert.notEqual(await hash(fields({ lastname: "A" })), await hash(fields({ firstname: "A" })));
  assert.notEqual(await hash(fields({ lastname: "A" })), await hash(fields({ lastname: "a" })));
  // field boundaries matter: "a,b" + "" is not "a" + ",b"
  assert.notEqual(
    await hash(fields({ firstname: "a,b", lastname: "" })),
    await hash(fields({ firstname: "a", lastname: ",b" })),
  );
  // the content keys stores already hold were written with Node's crypto: the same hash
  const émilie = fields({ firstname: "Émilie", lastname: "Dupont", number: "1001" });
  const content = JSON.stringify(CONTACT_FIELDS.map((field) => émilie[field]));
  assert.equal(
    await hash(émilie),
    createHash("sha256").update(content).digest("base64url"),
  );

  const texts = (values: Partial<ContactFields>) =>
    contactProblems(fields(values)).map((problem) => problem.text);
  assert.deepEqual(texts({}), ["no name, number, mobile, fax or email"]);
  assert.deepEqual(texts({ company: "Acme" }), ["no name, number, mobile, fax or email"]);
  assert.deepEqual(texts({ email: "a@b" }), []);
  assert.deepEqual(texts({ lastname: "x", email: "a@" }), ["invalid email"]);
  assert.deepEqual(texts({ lastname: "😀".repeat(256) }), []);
  assert.deepEqual(texts({ number: "1".repeat(257), company: "c".repeat(257) }), [
    "field company is too long",
    "field number is too long",
  ]);
});

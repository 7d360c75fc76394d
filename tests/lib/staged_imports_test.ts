/**
 * The contacts import and the callback requests import when they need several atomic operations:
 * readers see none of an import until its last commit, then all of it; a process dying in the
 * middle leaves nothing readers see, and recovery removes what it wrote.
 */
import assert from "node:assert/strict";
import { recoverBulkWrites, STALE_JOURNAL_MS } from "../../lib/store/bulk.ts";
import { buildCallbackList } from "../../lib/store/callback_lists.ts";
import {
  type CallbackRequestRecord,
  createCallbackRequests,
  getCallbackRequest,
  listCallbackRequests,
  type NewCallbackRequest,
  takeRequest,
} from "../../lib/store/callback_requests.ts";
import {
  type ContactFields,
  countContacts,
  createContact,
  currentContacts,
  emptyFields,
  getContact,
  importContacts,
  listContacts,
} from "../../lib/store/contacts.ts";
import { Store } from "../../lib/store/store.ts";

const contacts = (count: number, prefix = "c"): ContactFields[] =>
  Array.from({ length: count }, (_, n) => ({
    ...emptyFields(),
    firstname: "Contact",
    lastname: `${prefix}${n}`,
    number: `06${String(n).padStart(8, "0")}`,
  }));

const list = buildCallbackList({
  name: "Imports",
  queue_id: 1,
  periods: [{ name: "All day", periodStart: "08:00", periodEnd: "18:00", default: true }],
});

const requests = (count: number): NewCallbackRequest[] =>
  Array.from({ length: count }, (_, n) => ({
    phoneNumber: `06${String(n).padStart(8, "0")}`,
    mobilePhoneNumber: "",
    firstName: "Person",
    lastName: `${n}`,
    company: "",
    description: "",
    dueDate: "2026-01-01",
    period: "All day",
    line: n + 2,
  }));

/** Runs `script` (TypeScript importing our modules by URL) in a child process. */
function child(script: string) {
  return new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", "--unstable-kv", script],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
}

const moduleUrl = (path: string) => JSON.stringify(new URL(path, import.meta.url).href);

/**
 * Polls `read` until `running` ends: every answer is `none` or shows it `all`, never `none` after
 * `all`; answers how many saw `none`.
 */
async function pollWhile<T>(
  running: () => boolean,
  read: () => Promise<T>,
  none: T,
  all: (value: T) => boolean,
): Promise<number> {
  let before = 0;
  let sawAll = false;
  while (running()) {
    const value = await read();
    if (all(value)) sawAll = true;
    else {
      assert.equal(value, none, `read ${before}: neither none nor all`);
      assert.ok(!sawAll, "nothing seen again after everything was");
      before++;
    }
  }
  return before;
}

/** Runs `test` with a store in a file of a temporary folder (slower writes than `:memory:`). */
async function withFileStore(test: (store: Store, path: string) => Promise<void>) {
  const dir = await Deno.makeTempDir();
  const store = await Store.open(`${dir}/svc.kv`);
  try {
    await test(store, `${dir}/svc.kv`);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a contacts import of 30,000 lines shows all at once; the user's writes wait for it", () =>
  withFileStore(async (store) => {
    const userId = 7;
    const max = 50_000;
    const count = 30_000;
    // the import's contacts and the one before it; with the one written during it, once it ended
    const all = (seen: number) => seen === count + 1 || seen === count + 2;
    await createContact(store, userId, { ...emptyFields(), lastname: "Before" }, false, max);
    let done = false;
    const importing = importContacts(store, userId, contacts(count), max)
      .finally(() => (done = true));
    // one of its contacts as stored (a few reads of the first keys, which are random ids)
    let staged: string | undefined;
    while (!done && !staged) {
      const first = await store.list<{ id: string; created: number }>({
        prefix: ["contacts", userId],
      }, { limit: 20 });
      staged = first.find((entry) => entry.value.created > 1)?.value.id;
    }
    assert.ok(staged, "the import ended before it was seen under way");
    // a contact written during the import waits for it, then is numbered after it
    const during = createContact(
      store,
      userId,
      { ...emptyFields(), lastname: "During" },
      false,
      max,
    );
    const polls = await Promise.all([
      pollWhile(() => !done, async () => (await listContacts(store, userId)).length, 1, all),
      pollWhile(
        () => !done,
        async () => (await currentContacts(store, userId)).length,
        1,
        all,
      ),
      pollWhile(() => !done, () => countContacts(store, userId), 1, all),
      pollWhile(
        () => !done,
        async () => (await getContact(store, userId, staged!)) !== null,
        false,
        (found) => found,
      ),
    ]);
    // a range read of the whole list waits behind the import's commits: it may last as long
    assert.ok(polls[2]! > 0 && polls[3]! > 0, `reads that saw nothing: ${polls}`);
    const outcomes = await importing;
    assert.ok(outcomes.every((outcome) => outcome.status === "created"));
    const written = await during;
    assert.equal(written.status === "created" && written.contact.created, count + 2);
    assert.equal((await listContacts(store, userId)).length, count + 2);
    assert.equal(await countContacts(store, userId), count + 2);
    assert.equal((await store.get(["contacts_import", userId])).value, null);
  }));

Deno.test("a contacts import cut off by the death of its process shows nothing, and goes", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/svc.kv`;
  const store = await Store.open(path);
  try {
    const userId = 9;
    await createContact(store, userId, { ...emptyFields(), lastname: "Kept" }, false, 50_000);
    const writer = child(`
      import { importContacts, emptyFields } from ${moduleUrl("../../lib/store/contacts.ts")};
      import { Store } from ${moduleUrl("../../lib/store/store.ts")};
      const store = await Store.open(${JSON.stringify(path)});
      const candidates = Array.from({ length: 40000 }, (_, n) => ({ ...emptyFields(),
        lastname: "n" + n, company: "x".repeat(200) }));
      await importContacts(store, ${userId}, candidates, 50000);
      console.log("finished");`);
    const written = async () =>
      (await store.list({ prefix: ["contacts", userId] }, { limit: 2001 })).length;
    for (let i = 0; i < 600 && await written() < 2001; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    writer.kill("SIGKILL");
    assert.equal(new TextDecoder().decode((await writer.output()).stdout), "", "it finished");
    assert.equal(await written(), 2001, "contacts are stored…");
    assert.deepEqual((await listContacts(store, userId)).map((c) => c.lastname), ["Kept"]);
    assert.equal(await countContacts(store, userId), 1, "…but no reader sees them");

    assert.equal(await recoverBulkWrites(store, Date.now() + STALE_JOURNAL_MS), 1);
    assert.equal(await written(), 1);
    assert.equal((await store.list({ prefix: ["contacts_by_content", userId] })).length, 1);
    assert.equal((await store.get(["contacts_import", userId])).value, null);
    const again = await importContacts(store, userId, contacts(1000), 50_000);
    assert.ok(again.every((outcome) => outcome.status === "created"));
    assert.equal((await listContacts(store, userId)).length, 1001);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a callback import of 30,000 requests shows all at once", () =>
  withFileStore(async (store) => {
    await createCallbackRequests(store, list, requests(3), 0);
    let done = false;
    const count = 30_000;
    const importing = createCallbackRequests(store, list, requests(count), 0)
      .finally(() => (done = true));
    let staged: string | undefined;
    while (!done && !staged) {
      const first = await store.list<{ __bulk?: string; next?: CallbackRequestRecord }>({
        prefix: ["callback_requests", list.uuid],
      }, { limit: 20 });
      staged = first.find((entry) => entry.value.__bulk)?.value.next?.uuid;
    }
    assert.ok(staged, "the import ended before it was seen under way");
    const polls = await Promise.all([
      pollWhile(
        () => !done,
        async () => (await listCallbackRequests(store, list.uuid)).length,
        3,
        (seen) => seen === count + 3,
      ),
      pollWhile(
        () => !done,
        async () => (await getCallbackRequest(store, staged!)) !== null,
        false,
        (found) => found,
      ),
    ]);
    // a range read of the whole list waits behind the import's commits: it may last as long
    assert.ok(polls[1]! > 0, `reads that saw nothing: ${polls}`);
    await importing;
    assert.equal((await listCallbackRequests(store, list.uuid)).length, count + 3);
    const taken = await takeRequest(store, staged, "8001", 0);
    assert.equal(taken.agent, "8001");
    assert.equal((await getCallbackRequest(store, staged))?.agent, "8001");
  }));

Deno.test("a callback import cut off by the death of its process shows nothing, and goes", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/svc.kv`;
  const store = await Store.open(path);
  try {
    const [kept] = await createCallbackRequests(store, list, requests(1), 0);
    const writer = child(`
      import { createCallbackRequests } from ${moduleUrl("../../lib/store/callback_requests.ts")};
      import { Store } from ${moduleUrl("../../lib/store/store.ts")};
      const store = await Store.open(${JSON.stringify(path)});
      const list = ${JSON.stringify(list)};
      const inputs = Array.from({ length: 60000 }, (_, n) => ({ phoneNumber: "06" + n,
        mobilePhoneNumber: "", firstName: "", lastName: "", company: "", description: "x".repeat(300),
        dueDate: "2026-01-01", period: "All day", line: n + 2 }));
      await createCallbackRequests(store, list, inputs, 0);
      console.log("finished");`);
    const written = async () =>
      (await store.list({ prefix: ["callback_requests", list.uuid] }, { limit: 2001 })).length;
    for (let i = 0; i < 600 && await written() < 2001; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    writer.kill("SIGKILL");
    assert.equal(new TextDecoder().decode((await writer.output()).stdout), "", "it finished");
    assert.equal(await written(), 2001, "requests are stored…");
    const visible = await listCallbackRequests(store, list.uuid);
    assert.deepEqual(visible.map((request) => request.uuid), [kept!.uuid], "…but not seen");

    assert.equal(await recoverBulkWrites(store, Date.now() + STALE_JOURNAL_MS), 1);
    assert.equal(await written(), 1);
    assert.equal((await store.list({ prefix: ["callback_requests_by_uuid"] })).length, 1);
    assert.deepEqual(await store.list({ prefix: ["bulk_hidden"] }), []);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

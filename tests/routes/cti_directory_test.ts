/**
 * The directory and favourites on the CTI socket (docs/cti.md, "Directory and favourites"):
 * `directoryLookUp` over the users, the user's own personal contacts and the queues, each entry
 * with its live status and favourite flag; `getFavorites`, `addFavorite`, `removeFavorite` and the
 * `FavoriteUpdated` every socket of the user gets; every refusal an `Error` leaving the socket open
 * and nothing changed; favourites kept across a restart and seen by another process.
 */
import assert from "node:assert/strict";
import { MAX_FAVORITES, MAX_RESULTS } from "../../lib/directory/mod.ts";
import { POLL_MS } from "../../lib/events/feed.ts";
import { createContact, emptyFields, getContact } from "../../lib/store/contacts.ts";
import { addFavorite, listFavorites } from "../../lib/store/favorites.ts";
import { createQueue } from "../../lib/store/queues.ts";
import { apiCall, login } from "../helpers.ts";
import {
  type Client,
  type Fixture,
  fixture,
  type Message,
  userWithLine,
  V2,
} from "./cti_fixtures.ts";

/** alice and bob with lines, carol without; a queue; alice's and carol's personal contacts. */
async function directory(f: Fixture) {
  const alice = await userWithLine(f.api, "alice", "1001");
  const bob = await userWithLine(f.api, "bob", "1002");
  const carol = await f.api.create("/users", { firstname: "Carol", username: "carol" });
  assert.equal(
    (await f.api.put(`/users/${bob.id}`, {
      firstname: "Bob",
      lastname: "Durand",
      mobile_phone_number: "0612345678",
      email: "bob@example.com",
    })).status,
    204,
  );
  const store = f.ctx.services.store;
  const queue = await createQueue(store, {
    name: "sales",
    display_name: "Sales team",
    number: "3000",
  });
  const personal = await createContact(
    store,
    alice.id,
    { ...emptyFields(), firstname: "Émile", lastname: "Bobin", number: "0499887766" },
    false,
    100,
  );
  const hidden = await createContact(
    store,
    carol.id,
    { ...emptyFields(), firstname: "Bobby", lastname: "Secret", number: "0411111111" },
    false,
    100,
  );
  assert.ok(personal.status === "created" && hidden.status === "created");
  return { alice, bob, carol, queue, personal: personal.contact, hidden: hidden.contact };
}

/** The answer of `command` of type `msgType`, or its `Error`. */
async function ask(
  client: Client,
  command: string,
  fields: Record<string, unknown>,
  msgType: string,
) {
  client.web(command, fields);
  return await client.next(
    (message) => message.msgType === msgType || message.msgType === "Error",
    `${msgType} or Error`,
  );
}

const entriesOf = (message: Message) =>
  message.ctiMessage.entries as {
    status: number;
    entry: string[];
    contact_id: string;
    source: string;
    favorite: boolean;
  }[];

/** `addFavorite` of the contact, once its `FavoriteUpdated` came back. */
async function favorite(client: Client, contactId: string, source: string) {
  client.web("addFavorite", { contactId, source });
  assert.equal((await client.type("FavoriteUpdated")).ctiMessage.action, "Added");
}

/** Waits for the answer to a ping: every message sent before it has come. */
async function settled(client: Client) {
  client.send({ claz: "ping" });
  await client.type("Pong");
}

Deno.test("directoryLookUp: users, the user's own personal contacts and queues, with statuses", async () => {
  const f = await fixture();
  try {
    const { bob, carol, queue, personal, hidden } = await directory(f);
    const alice = await f.open(await login(f.ctx, "login", "alice"));

    const result = await ask(alice, "directoryLookUp", { term: "bob" }, "DirectoryResult");
    assert.equal(result.msgType, "DirectoryResult");
    assert.deepEqual(result.ctiMessage.headers, [
      "Name",
      "Number",
      "Mobile",
      "Other number",
      "Email",
      "Favorite",
    ]);
    assert.deepEqual(entriesOf(result), [
      {
        status: 0,
        entry: ["Bob Durand", "1002", "0612345678", "", "bob@example.com", "false"],
        contact_id: String(bob.id),
        source: "internal",
        favorite: false,
      },
      {
        status: -2,
        entry: ["Émile Bobin", "0499887766", "", "", "", "false"],
        contact_id: personal.id,
        source: "personal",
        favorite: false,
      },
    ], "carol's personal contact is never found");
    assert.ok(!JSON.stringify(result).includes(hidden.id));

    // accents and case aside, every word anywhere; a number; a queue by its name
    const emile = await ask(alice, "directoryLookUp", { term: "  EMILE bobi " }, "DirectoryResult");
    assert.deepEqual(entriesOf(emile).map((entry) => entry.contact_id), [personal.id]);
    const byNumber = await ask(alice, "directoryLookUp", { term: "100" }, "DirectoryResult");
    assert.deepEqual(entriesOf(byNumber).map((entry) => entry.entry[1]), ["1001", "1002"]);
    const sales = await ask(alice, "directoryLookUp", { term: "sales" }, "DirectoryResult");
    assert.deepEqual(entriesOf(sales), [{
      status: -2,
      entry: ["Sales team", "3000", "", "", "", "false"],
      contact_id: String(queue.id),
      source: "queue",
      favorite: false,
    }]);
    const nobody = await ask(alice, "directoryLookUp", { term: "zz" }, "DirectoryResult");
    assert.deepEqual(entriesOf(nobody), []);
    const carols = await ask(alice, "directoryLookUp", { term: "carol" }, "DirectoryResult");
    assert.deepEqual(entriesOf(carols).map((e) => [e.contact_id, e.entry[1], e.status]), [
      [String(carol.id), "", -2],
    ]);

    // the status is the phone's, live: bob sets DND
    assert.equal(
      (await f.api.put(`/users/${bob.id}/services`, { dnd: { enabled: true } })).status,
      204,
    );
    const dnd = await ask(alice, "directoryLookUp", { term: "durand" }, "DirectoryResult");
    assert.equal(entriesOf(dnd)[0]!.status, -1);
  } finally {
    await f.close();
  }
});

Deno.test("directoryLookUp answers at most MAX_RESULTS entries, by name", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const store = f.ctx.services.store;
    await Promise.all(
      Array.from({ length: MAX_RESULTS + 5 }, (_, i) =>
        createContact(
          store,
          alice.id,
          { ...emptyFields(), firstname: "Many", lastname: `Name ${i}` },
          false,
          1000,
        )),
    );
    const client = await f.open(await login(f.ctx, "login", "alice"));
    const result = await ask(client, "directoryLookUp", { term: "many" }, "DirectoryResult");
    const names = entriesOf(result).map((entry) => entry.entry[0]);
    assert.equal(names.length, MAX_RESULTS);
    assert.deepEqual(names.slice(0, 3), ["Many Name 0", "Many Name 1", "Many Name 2"]);
    assert.equal(names.at(-1), `Many Name ${MAX_RESULTS - 1}`, "numbers in order: 2 before 10");
  } finally {
    await f.close();
  }
});

Deno.test("favourites: added and removed on every socket of the user, listed with statuses", async (t) => {
  const f = await fixture();
  try {
    const { alice: aliceUser, bob, queue, personal } = await directory(f);
    const token = await login(f.ctx, "login", "alice");
    const one = await f.open(token);
    const two = await f.open(token);
    const bobSocket = await f.open(await login(f.ctx, "login", "bob"));
    const updated = (client: Client) => client.type("FavoriteUpdated");

    await t.step("none at first", async () => {
      const empty = await ask(one, "getFavorites", {}, "Favorites");
      assert.deepEqual(empty.ctiMessage, {
        headers: ["Name", "Number", "Mobile", "Other number", "Email", "Favorite"],
        entries: [],
      });
    });

    await t.step("addFavorite: FavoriteUpdated Added on both sockets, not on bob's", async () => {
      one.web("addFavorite", { contactId: String(bob.id), source: "internal" });
      const expected = { action: "Added", contact_id: String(bob.id), source: "internal" };
      assert.deepEqual((await updated(one)).ctiMessage, expected);
      assert.deepEqual((await updated(two)).ctiMessage, expected);
      // cti.js sends what the application gives: a number names the same contact
      two.web("addFavorite", { contactId: queue.id, source: "queue" });
      const queueAdded = { action: "Added", contact_id: String(queue.id), source: "queue" };
      assert.deepEqual((await updated(one)).ctiMessage, queueAdded);
      assert.deepEqual((await updated(two)).ctiMessage, queueAdded);
      one.web("addFavorite", { contactId: personal.id.toUpperCase(), source: "personal" });
      const personalAdded = { action: "Added", contact_id: personal.id, source: "personal" };
      assert.deepEqual((await updated(one)).ctiMessage, personalAdded);
      assert.deepEqual((await updated(two)).ctiMessage, personalAdded);
      await settled(bobSocket);
      assert.ok(!bobSocket.messages.some((m) => m.msgType === "FavoriteUpdated"));
    });

    await t.step("getFavorites lists them by name, with their statuses", async () => {
      const list = await ask(two, "getFavorites", {}, "Favorites");
      assert.deepEqual(entriesOf(list).map((e) => [e.entry[0], e.source, e.status, e.favorite]), [
        ["Bob Durand", "internal", 0, true],
        ["Émile Bobin", "personal", -2, true],
        ["Sales team", "queue", -2, true],
      ]);
      assert.deepEqual(entriesOf(list).map((e) => e.entry[5]), ["true", "true", "true"]);
    });

    await t.step("directoryLookUp marks them", async () => {
      const result = await ask(one, "directoryLookUp", { term: "bob" }, "DirectoryResult");
      assert.deepEqual(entriesOf(result).map((e) => [e.source, e.favorite, e.entry[5]]), [
        ["internal", true, "true"],
        ["personal", true, "true"],
      ]);
    });

    await t.step(
      "a personal favourite is the contact's own flag (the REST list view shows it)",
      async () => {
        const rest = apiCall(f.ctx, V2, token);
        const view = await (await rest("GET", "/contact/personal")).json();
        assert.deepEqual(view.entries[0].entry.at(-1), "true");
        // and the REST flag is the CTI favourite: cleared there, gone from the favourites
        assert.equal(
          (await rest("PUT", `/contact/personal/${personal.id}`, { favorite: false })).status,
          200,
        );
        const list = await ask(one, "getFavorites", {}, "Favorites");
        assert.deepEqual(entriesOf(list).map((e) => e.source), ["internal", "queue"]);
      },
    );

    await t.step("asking again for what is: the asking socket alone is answered", async () => {
      const told = (client: Client) =>
        client.messages.filter((m) => m.msgType === "FavoriteUpdated").length;
      const before = told(two);
      one.web("addFavorite", { contactId: String(bob.id), source: "internal" });
      assert.equal((await updated(one)).ctiMessage.action, "Added");
      one.web("removeFavorite", { contactId: personal.id, source: "personal" });
      assert.equal((await updated(one)).ctiMessage.action, "Removed");
      await settled(one);
      await settled(two);
      assert.equal(told(two), before, "the other socket's state was right: it is told nothing");
    });

    await t.step("removeFavorite: FavoriteUpdated Removed on both sockets", async () => {
      two.web("removeFavorite", { contactId: String(bob.id), source: "internal" });
      const expected = { action: "Removed", contact_id: String(bob.id), source: "internal" };
      assert.deepEqual((await updated(one)).ctiMessage, expected);
      assert.deepEqual((await updated(two)).ctiMessage, expected);
      const list = await ask(one, "getFavorites", {}, "Favorites");
      assert.deepEqual(entriesOf(list).map((e) => e.source), ["queue"]);
      assert.deepEqual(await listFavorites(f.ctx.services.store, aliceUser.id), [
        { source: "queue", contactId: String(queue.id) },
      ]);
    });
  } finally {
    await f.close();
  }
});

Deno.test("bad input and others' contacts: an Error with a reason, the socket open, nothing changed", async () => {
  const f = await fixture();
  try {
    const { alice: aliceUser, bob, carol, hidden } = await directory(f);
    const alice = await f.open(await login(f.ctx, "login", "alice"));
    const store = f.ctx.services.store;
    await favorite(alice, String(bob.id), "internal");
    const before = await listFavorites(store, aliceUser.id);
    const cases: [string, Record<string, unknown>, string, RegExp][] = [
      ["directoryLookUp", {}, "BadRequest", /field term/],
      ["directoryLookUp", { term: 12 }, "BadRequest", /field term/],
      ["directoryLookUp", { term: null }, "BadRequest", /field term/],
      ["directoryLookUp", { term: "" }, "BadRequest", /field term: at least 2 characters/],
      ["directoryLookUp", { term: " b  " }, "BadRequest", /at least 2 characters/],
      ["directoryLookUp", { term: "b".repeat(257) }, "BadRequest", /at most 256 characters/],
      ["addFavorite", { source: "internal" }, "BadRequest", /field contactId/],
      ["addFavorite", { contactId: String(bob.id) }, "BadRequest", /field source/],
      ["addFavorite", { contactId: { id: 1 }, source: "internal" }, "BadRequest", /contactId/],
      ["addFavorite", { contactId: true, source: "internal" }, "BadRequest", /contactId/],
      ["addFavorite", { contactId: "", source: "internal" }, "BadRequest", /contactId/],
      ["addFavorite", { contactId: -1, source: "internal" }, "BadRequest", /contactId/],
      ["addFavorite", { contactId: 1.5, source: "internal" }, "BadRequest", /contactId/],
      ["addFavorite", { contactId: "9".repeat(65), source: "internal" }, "BadRequest", /contactId/],
      [
        "addFavorite",
        { contactId: "1", source: "xivodir" },
        "BadRequest",
        /field source: one of internal, personal, queue/,
      ],
      ["addFavorite", { contactId: "1", source: 3 }, "BadRequest", /field source/],
      ["addFavorite", { contactId: "999", source: "internal" }, "ContactNotFound", /"999"/],
      ["addFavorite", { contactId: "999", source: "queue" }, "ContactNotFound", /queue/],
      ["addFavorite", { contactId: `0${bob.id}`, source: "internal" }, "ContactNotFound", /./],
      ["addFavorite", { contactId: "not-a-uuid", source: "personal" }, "ContactNotFound", /./],
      [
        "addFavorite",
        { contactId: crypto.randomUUID(), source: "personal" },
        "ContactNotFound",
        /./,
      ],
      // another user's personal contact, as if it did not exist; and not by another source either
      ["addFavorite", { contactId: hidden.id, source: "personal" }, "ContactNotFound", /./],
      ["addFavorite", { contactId: hidden.id, source: "internal" }, "ContactNotFound", /./],
      ["removeFavorite", { contactId: hidden.id, source: "personal" }, "ContactNotFound", /./],
      ["removeFavorite", { contactId: "999", source: "internal" }, "ContactNotFound", /./],
      ["removeFavorite", { contactId: "1", source: "nope" }, "BadRequest", /field source/],
      ["removeFavorite", { contactId: [], source: "internal" }, "BadRequest", /contactId/],
    ];
    for (const [command, fields, error, text] of cases) {
      alice.web(command, fields);
      const answer = await alice.next(
        (m) =>
          m.msgType === "Error" || m.msgType === "FavoriteUpdated" ||
          m.msgType === "DirectoryResult",
        "an answer",
      );
      const what = `${command} ${JSON.stringify(fields).slice(0, 60)}`;
      assert.equal(answer.msgType, "Error", what);
      assert.equal(answer.ctiMessage.error, error, what);
      assert.equal(answer.ctiMessage.command, command, what);
      assert.match(String(answer.ctiMessage.message), text, what);
    }
    await settled(alice);
    assert.equal(alice.socket.readyState, WebSocket.OPEN);
    assert.deepEqual(await listFavorites(store, aliceUser.id), before, "nothing changed");
    assert.deepEqual(await listFavorites(store, carol.id), []);
    assert.equal((await getContact(store, carol.id, hidden.id))?.favorite, false);
  } finally {
    await f.close();
  }
});

Deno.test("at most MAX_FAVORITES of users and queues: TooManyFavorites, unless some are gone", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const store = f.ctx.services.store;
    const queueIds: number[] = [];
    for (let i = 0; i <= MAX_FAVORITES; i++) {
      queueIds.push((await createQueue(store, { name: `q${i}`, number: String(5000 + i) })).id);
    }
    for (const id of queueIds.slice(0, MAX_FAVORITES)) {
      await addFavorite(
        store,
        alice.id,
        { source: "queue", contactId: String(id) },
        1000,
        () => Promise.resolve([]),
      );
    }
    const client = await f.open(await login(f.ctx, "login", "alice"));
    const last = String(queueIds.at(-1));
    const refused = await ask(client, "addFavorite", { contactId: last, source: "queue" }, "-");
    assert.equal(refused.ctiMessage.error, "TooManyFavorites");
    assert.match(String(refused.ctiMessage.message), new RegExp(`at most ${MAX_FAVORITES}`));
    assert.equal((await listFavorites(store, alice.id)).length, MAX_FAVORITES);
    // one of them deleted: it is dropped, and the new one fits
    assert.equal((await f.api.delete(`/queues/${queueIds[0]}`)).status, 204);
    await favorite(client, last, "queue");
    const held = await listFavorites(store, alice.id);
    assert.equal(held.length, MAX_FAVORITES);
    assert.ok(held.some((ref) => ref.contactId === last));
    assert.ok(!held.some((ref) => ref.contactId === String(queueIds[0])));
  } finally {
    await f.close();
  }
});

Deno.test("a token denying the favourites' ACLs: Forbidden; the lookup still works", async () => {
  const f = await fixture();
  try {
    const { alice, bob } = await directory(f);
    const { token } = await f.ctx.services.tokens.issue({
      userId: String(alice.id),
      login: "alice",
      userType: "cti",
      acls: ["alias.ctiuser", "!svc.cti.favorites.#"],
    });
    const client = await f.open(token);
    for (const command of ["getFavorites", "addFavorite", "removeFavorite"]) {
      const answer = await ask(
        client,
        command,
        { contactId: String(bob.id), source: "internal" },
        "-",
      );
      assert.equal(answer.ctiMessage.error, "Forbidden");
      assert.match(String(answer.ctiMessage.message), /svc\.cti\.favorites\.alice\./);
    }
    const result = await ask(client, "directoryLookUp", { term: "bob" }, "DirectoryResult");
    assert.equal(result.msgType, "DirectoryResult");
    const denied = await f.open(
      (await f.ctx.services.tokens.issue({
        userId: String(alice.id),
        login: "alice",
        userType: "cti",
        acls: ["alias.ctiuser", "!svc.cti.directory.#"],
      })).token,
    );
    const refusal = await ask(denied, "directoryLookUp", { term: "bob" }, "DirectoryResult");
    assert.match(
      String(refusal.ctiMessage.message),
      /missing ACL svc\.cti\.directory\.alice\.read/,
    );
    assert.deepEqual(await listFavorites(f.ctx.services.store, alice.id), []);
  } finally {
    await f.close();
  }
});

Deno.test("deleted contacts leave the favourites; a deleted user's own favourites go with it", async () => {
  const f = await fixture();
  try {
    const { alice: aliceUser, carol, queue, personal } = await directory(f);
    const token = await login(f.ctx, "login", "alice");
    const alice = await f.open(token);
    const store = f.ctx.services.store;
    await favorite(alice, String(carol.id), "internal");
    await favorite(alice, String(queue.id), "queue");
    await favorite(alice, personal.id, "personal");
    // carol, the queue and the personal contact are deleted
    assert.equal((await f.api.delete(`/users/${carol.id}`)).status, 204);
    assert.equal((await f.api.delete(`/queues/${queue.id}`)).status, 204);
    const rest = apiCall(f.ctx, V2, token);
    assert.equal((await rest("DELETE", `/contact/personal/${personal.id}`)).status, 204);
    const list = await ask(alice, "getFavorites", {}, "Favorites");
    assert.deepEqual(entriesOf(list), []);
    assert.deepEqual(await listFavorites(store, aliceUser.id), [], "dropped from the store");
    // a favourite whose contact is gone may still be removed (before a getFavorites dropped it)
    const dave = await f.api.create("/users", { firstname: "Dave" });
    await favorite(alice, String(dave.id), "internal");
    assert.equal((await f.api.delete(`/users/${dave.id}`)).status, 204);
    alice.web("removeFavorite", { contactId: String(dave.id), source: "internal" });
    assert.equal((await alice.type("FavoriteUpdated")).ctiMessage.action, "Removed");
    assert.deepEqual(await listFavorites(store, aliceUser.id), []);

    // a user is deleted: the user's own favourites go with it
    const erin = await f.api.create("/users", {
      firstname: "Erin",
      username: "erin",
      password: "erin-pw",
    });
    const erinSocket = await f.open(await login(f.ctx, "login", "erin"));
    await favorite(erinSocket, String(aliceUser.id), "internal");
    assert.equal((await listFavorites(store, erin.id)).length, 1);
    assert.equal((await f.api.delete(`/users/${erin.id}`)).status, 204);
    assert.deepEqual(await listFavorites(store, erin.id), []);
    assert.equal((await store.get(["favorites_count", erin.id])).value, null);
  } finally {
    await f.close();
  }
});

Deno.test("favourites live in the store: a restart keeps them, another process is told", async (t) => {
  const dir = await Deno.makeTempDir({ prefix: "svc-favorites-" });
  const env = { SVC_KV: `${dir}/svc.kv` };
  try {
    let bobId = 0;
    let queueId = 0;
    await t.step("added through one app", async () => {
      const f = await fixture(env);
      try {
        const { bob, queue } = await directory(f);
        [bobId, queueId] = [bob.id, queue.id];
        const alice = await f.open(await login(f.ctx, "login", "alice"));
        await favorite(alice, String(bob.id), "internal");
        await favorite(alice, String(queue.id), "queue");
      } finally {
        await f.close();
      }
    });

    await t.step(
      "a new app on the same store lists them; a second one hears of changes",
      async () => {
        const one = await fixture(env);
        const two = await fixture(env);
        try {
          // a restart: later than the first app's notices (the feed reads the last 2 s again)
          await one.ctx.clock.advance(5_000);
          await two.ctx.clock.advance(5_000);
          const token = await login(one.ctx, "login", "alice");
          const onOne = await one.open(token);
          const onTwo = await two.open(token);
          const list = await ask(onOne, "getFavorites", {}, "Favorites");
          assert.deepEqual(entriesOf(list).map((e) => [e.contact_id, e.source]), [
            [String(bobId), "internal"],
            [String(queueId), "queue"],
          ]);
          onOne.web("removeFavorite", { contactId: String(bobId), source: "internal" });
          const removed = { action: "Removed", contact_id: String(bobId), source: "internal" };
          assert.deepEqual((await onOne.type("FavoriteUpdated")).ctiMessage, removed);
          // the other app reads the store's event log every POLL_MS of its clock
          const polling = setInterval(() => two.ctx.clock.advance(POLL_MS), 20);
          try {
            assert.deepEqual((await onTwo.type("FavoriteUpdated")).ctiMessage, removed);
          } finally {
            clearInterval(polling);
          }
          const onTwoList = await ask(onTwo, "getFavorites", {}, "Favorites");
          assert.deepEqual(entriesOf(onTwoList).map((e) => e.source), ["queue"]);
        } finally {
          await one.close();
          await two.close();
        }
      },
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * `supervision_enabled` in its Wazo meaning (lib/presence/hints.ts): a user whose record has it
 * false may not be watched. Its phone reads -2, as a number that is no extension, wherever another
 * user watches it: the personal contacts list view, `subscribeToPhoneHints`, the numbers of the
 * socket's contacts, `directoryLookUp`. Turned on again, the phone shows again: at the next
 * request, and on the open sockets at the next status poll.
 */
import assert from "node:assert/strict";
import { STATUS_POLL_MS } from "../../lib/cti/hub.ts";
import { HIDDEN } from "../../lib/presence/hints.ts";
import { createContact, emptyFields } from "../../lib/store/contacts.ts";
import { apiCall, login } from "../helpers.ts";
import { fixture, type Message, userWithLine, V2 } from "./cti_fixtures.ts";

const hint = (number: string, status: number) => (message: Message) =>
  message.msgType === "PhoneHintStatusEvent" && message.ctiMessage.number === number &&
  message.ctiMessage.status === status;

Deno.test("a user whose supervision is disabled cannot be watched; enabled again, it can", async () => {
  const f = await fixture();
  try {
    const alice = await userWithLine(f.api, "alice", "1001");
    const bob = await userWithLine(f.api, "bob", "1002");
    await createContact(
      f.ctx.services.store,
      alice.id,
      {
        ...emptyFields(),
        lastname: "Bob",
        number: "1002",
      },
      false,
      100,
    );
    const token = await login(f.ctx, "login", "alice");
    const list = async () => {
      const response = await apiCall(f.ctx, V2, token)("GET", "/contact/personal");
      assert.equal(response.status, 200);
      return (await response.json()).entries[0].status as number;
    };
    const client = await f.open(token);
    client.web("subscribeToPhoneHints", { phoneNumbers: ["1002"] });
    await client.seen(hint("1002", 0), "bob's phone, watched");
    assert.equal(await list(), 0);
    const lookUp = async () => {
      client.web("directoryLookUp", { term: "bob" });
      const result = await client.next((m) => m.msgType === "DirectoryResult", "DirectoryResult");
      const entries = result.ctiMessage.entries as { status: number; source: string }[];
      return entries.find((entry) => entry.source === "internal")!.status;
    };
    assert.equal(await lookUp(), 0);

    const setWatchable = async (enabled: boolean) => {
      const response = await f.api.put(`/users/${bob.id}`, { supervision_enabled: enabled });
      assert.equal(response.status, 204);
    };
    await setWatchable(false);
    assert.equal(HIDDEN, -2);
    assert.equal(await list(), HIDDEN, "the list view, at the next request");
    assert.equal(await lookUp(), HIDDEN);
    await f.ctx.clock.advance(STATUS_POLL_MS);
    await client.next(hint("1002", HIDDEN), "bob's phone hidden, on the open socket");
    // the socket's own subscription to it, anew
    client.web("subscribeToPhoneHints", { phoneNumbers: ["1002"] });
    await client.next(hint("1002", HIDDEN), "bob's phone hidden, subscribed again");

    await setWatchable(true);
    assert.equal(await list(), 0);
    await f.ctx.clock.advance(STATUS_POLL_MS);
    await client.next(hint("1002", 0), "bob's phone shown again");
  } finally {
    await f.close();
  }
});

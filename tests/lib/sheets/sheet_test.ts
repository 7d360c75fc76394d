/**
 * Screen pops (lib/sheets/sheet.ts) from a phone event, against the store: the URL template's
 * placeholders, the contact found for the caller's number (a user of svc first, then the called
 * user's personal contacts, numbers compared sanitized), an outside number nobody knows, and which
 * events give a pop.
 */
import assert from "node:assert/strict";
import type { PhoneEvent } from "../../../lib/platform/port.ts";
import { fillUrl, sheetNotices, sheetOf } from "../../../lib/sheets/sheet.ts";
import { createContact, emptyFields } from "../../../lib/store/contacts.ts";
import { setupConfd } from "../../helpers.ts";
import { userWithLine } from "../../routes/cti_fixtures.ts";

Deno.test("fillUrl: fields URL-encoded, xuc's own placeholders kept, unknown ones empty", () => {
  assert.equal(
    fillUrl(
      "https://crm/?n={callerNumber}&name={callerName}&t={xuc-token}&u={xuc-username}&z={z}",
      {
        callerNumber: "+33 1 23",
        callerName: "Zoé & Co/1",
      },
    ),
    "https://crm/?n=%2B33%201%2023&name=Zo%C3%A9%20%26%20Co%2F1&t={xuc-token}&u={xuc-username}&z=",
  );
  assert.equal(fillUrl("", { callerNumber: "1" }), "");
  assert.equal(fillUrl("{USR_folderNumber}", { USR_folderNumber: "F 1" }), "F%201");
  // braces that are no placeholder are left alone
  assert.equal(fillUrl("a{b c}d{", {}), "a{b c}d{");
});

/** A phone event of bob's phone ringing, `otherDN` calling. */
const ringing = (userId: number, otherDN: string, extra: Partial<PhoneEvent> = {}): PhoneEvent => ({
  kind: "phone",
  id: "e1",
  userId,
  username: "bob",
  eventType: "EventRinging",
  DN: "1002",
  otherDN,
  otherDName: "",
  linkedId: "1767225600.1",
  uniqueId: "1767225600.2",
  userData: { PLATFORM_USERID: String(userId), USR_crm: "42" },
  recordState: "inactive",
  ...extra,
});

Deno.test("the contact: a user of svc by extension, else a personal contact by number or mobile", async () => {
  const { ctx, api } = await setupConfd({ SVC_SHEET_URL: "https://crm/{contactName}" });
  try {
    const alice = await userWithLine(api, "alice", "1001");
    const bob = await userWithLine(api, "bob", "1002");
    const store = ctx.services.store;
    await createContact(
      store,
      bob.id,
      {
        ...emptyFields(),
        firstname: "Jean",
        lastname: "Client",
        company: "ACME",
        number: "+33 6 12 34 56 78",
        mobile: "0699",
      },
      false,
      100,
    );
    await createContact(
      store,
      bob.id,
      { ...emptyFields(), company: "Shop", mobile: "0611" },
      false,
      100,
    );

    const colleague = await sheetOf(ctx.services, ringing(bob.id, "1001"));
    assert.deepEqual(
      [colleague.contact?.source, colleague.contact?.id, colleague.callerName],
      ["users", String(alice.id), "alice"],
    );
    const customer = await sheetOf(ctx.services, ringing(bob.id, "0033612345678"));
    assert.deepEqual(
      [customer.contact?.source, customer.contact?.name, customer.callerName, customer.popupUrl],
      ["personal", "Jean Client", "Jean Client", "https://crm/Jean%20Client"],
    );
    const byMobile = await sheetOf(ctx.services, ringing(bob.id, "0611"));
    assert.equal(byMobile.contact?.name, "Shop");
    // the platform's name of the caller wins over the contact's
    const named = await sheetOf(
      ctx.services,
      ringing(bob.id, "0699", { otherDName: "Trunk Name" }),
    );
    assert.deepEqual([named.callerName, named.contact?.name], ["Trunk Name", "Jean Client"]);
    // nobody knows it; alice's own contacts are not bob's
    const stranger = await sheetOf(ctx.services, ringing(bob.id, "0700000000"));
    assert.deepEqual([stranger.contact, stranger.callerName], [null, ""]);
    const empty = await sheetOf(ctx.services, ringing(bob.id, ""));
    assert.equal(empty.contact, null);
    // no queue, variables only USR_
    assert.deepEqual([customer.queue, customer.variables], [null, { USR_crm: "42" }]);
  } finally {
    ctx.services.store.close();
  }
});

Deno.test("sheetNotices: one per EventRinging of a user, named after its event", async () => {
  const { ctx, api } = await setupConfd();
  try {
    const bob = await userWithLine(api, "bob", "1002");
    const notices = await sheetNotices(ctx.services, [
      ringing(bob.id, "1001"),
      ringing(bob.id, "1001", { eventType: "EventEstablished", id: "e2" }),
      ringing(bob.id, "1001", { username: "", id: "e3" }),
      ringing(bob.id, "1001", { id: undefined }),
    ]);
    assert.deepEqual(notices.map((n) => [n.id, n.notice.username, n.notice.message.msgType]), [
      ["e1:sheet", "bob", "Sheet"],
      [undefined, "bob", "Sheet"],
    ]);
    assert.equal((notices[0]!.notice.message.ctiMessage as { popupUrl: string }).popupUrl, "");
  } finally {
    ctx.services.store.close();
  }
});

import assert from "node:assert/strict";
import { buildCallbackList } from "../../lib/store/callback_lists.ts";
import {
  CallbackRefusal,
  checkRequest,
  createCallbackRequests,
  deleteCallbackRequestsOfList,
  getCallbackRequest,
  isDate,
  listCallbackRequests,
  reportOutcome,
  type RequestFields,
  takeRequest,
} from "../../lib/store/callback_requests.ts";
import { Store } from "../../lib/store/store.ts";

const list = buildCallbackList({
  name: "Sales callbacks",
  queue_id: 1,
  periods: [
    { name: "Morning", periodStart: "08:00", periodEnd: "12:00", default: false },
    { name: "Evening", periodStart: "17:00", periodEnd: "20:00", default: true },
  ],
});

const fields = (change: Partial<RequestFields> = {}): RequestFields => ({
  phoneNumber: "0612345678",
  mobilePhoneNumber: "",
  firstName: "",
  lastName: "",
  company: "",
  description: "",
  dueDate: "",
  period: "",
  ...change,
});

Deno.test("isDate: YYYY-MM-DD naming a day of the calendar", () => {
  for (const date of ["2026-01-31", "2024-02-29", "2026-12-01", "0001-01-01"]) {
    assert.ok(isDate(date), date);
  }
  for (const date of ["2026-02-29", "2026-13-01", "2026-00-10", "2026-1-01", "26-01-01", ""]) {
    assert.ok(!isDate(date), date);
  }
});

Deno.test("checkRequest", async (t) => {
  await t.step("empty dueDate is today, empty period the default one", () => {
    assert.deepEqual(checkRequest(fields(), list, "2026-01-01", 2), {
      request: { ...fields(), dueDate: "2026-01-01", period: "Evening", line: 2 },
    });
    const morning = checkRequest(
      fields({ period: "Morning", dueDate: "2026-03-01" }),
      list,
      "x",
      3,
    );
    assert.deepEqual(morning, {
      request: { ...fields(), dueDate: "2026-03-01", period: "Morning", line: 3 },
    });
  });

  await t.step("a mobile number alone is enough", () => {
    const mobileOnly = fields({ phoneNumber: "", mobilePhoneNumber: "+33 6 12" });
    assert.ok("request" in checkRequest(mobileOnly, list, "2026-01-01", 2));
  });

  await t.step("limits: 256 characters a field, 1024 the description, 64 digits", () => {
    const long = fields({
      firstName: "x".repeat(257),
      description: "y".repeat(1025),
      mobilePhoneNumber: "1".repeat(65),
    });
    assert.deepEqual(checkRequest(long, list, "2026-01-01", 2), {
      errors: [
        "field mobilePhoneNumber is too long",
        "field firstName is too long",
        "field description is too long",
      ],
    });
    const longest = fields({ firstName: "x".repeat(256), description: "y".repeat(1024) });
    assert.ok("request" in checkRequest(longest, list, "2026-01-01", 2));
  });
});

/** Runs `test` on a fresh store holding one free request of `list`. */
async function withRequest(test: (store: Store, uuid: string) => Promise<void>) {
  const store = await Store.open(":memory:");
  try {
    const [request] = await createCallbackRequests(
      store,
      list,
      [{ ...fields(), dueDate: "2026-01-01", period: "Evening", line: 2 }],
      Date.UTC(2026, 0, 1),
    );
    await test(store, request!.uuid);
  } finally {
    store.close();
  }
}

Deno.test("ten agents taking one request at once: exactly one wins", () =>
  withRequest(async (store, uuid) => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => takeRequest(store, uuid, `80${i}`, 0)),
    );
    const won = outcomes.flatMap((o) => o.status === "fulfilled" ? [o.value.agent] : []);
    assert.equal(won.length, 1);
    for (const outcome of outcomes) {
      if (outcome.status === "rejected") {
        assert.ok(outcome.reason instanceof CallbackRefusal);
        assert.equal(outcome.reason.reason, "taken");
      }
    }
    assert.equal((await getCallbackRequest(store, uuid))?.agent, won[0]);
  }));

Deno.test("two outcomes reported at once: the second finds the request closed", () =>
  withRequest(async (store, uuid) => {
    await takeRequest(store, uuid, "8001", 0);
    const outcomes = await Promise.allSettled(
      (["Answered", "Fax"] as const).map((status) =>
        reportOutcome(store, uuid, { status, agent: null }, 0)
      ),
    );
    assert.deepEqual(outcomes.map((o) => o.status).sort(), ["fulfilled", "rejected"]);
    const rejected = outcomes.find((o) => o.status === "rejected") as PromiseRejectedResult;
    assert.equal(rejected.reason.reason, "closed");
  }));

Deno.test("deleteCallbackRequestsOfList: every request of the list, no other", async () => {
  const store = await Store.open(":memory:");
  try {
    const other = buildCallbackList({ name: "Other", queue_id: 1 });
    const input = { ...fields(), dueDate: "2026-01-01", period: "Evening", line: 2 };
    const many = await createCallbackRequests(store, list, Array(250).fill(input), 0);
    const [kept] = await createCallbackRequests(store, other, [input], 0);
    await takeRequest(store, many[0]!.uuid, "8001", 0); // one with a ticket
    await deleteCallbackRequestsOfList(store, list.uuid);
    assert.deepEqual(await listCallbackRequests(store, list.uuid), []);
    for (const { uuid } of [many[0]!, many[249]!]) {
      assert.equal(await getCallbackRequest(store, uuid), null);
    }
    assert.deepEqual(await getCallbackRequest(store, kept!.uuid), kept);
    assert.equal((await listCallbackRequests(store, other.uuid)).length, 1);
  } finally {
    store.close();
  }
});

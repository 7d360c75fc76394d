/**
 * The call daemon's transfers and ad-hoc conferences through the real app: blind and attended
 * (completed, cancelled), the transfer object, a conference of three, and their errors.
 */
import assert from "node:assert/strict";
import { lastCalls } from "../../../lib/store/call_history.ts";
import { phoneEvents } from "../../lib/platform/fixtures.ts";
import { aliceCallsBob, type CalldWorld, calldWorld, callIdOf, calls } from "./fixtures.ts";

const events = (w: CalldWorld) =>
  phoneEvents(w.t.take()).map((e) => [e.username, e.eventType, e.otherDN]);

/** alice starts an attended transfer of bob to carol (1003) through /users/me; carol answers. */
async function consultation(w: CalldWorld) {
  await aliceCallsBob(w);
  const alice = await callIdOf(w, w.alice);
  const bob = await callIdOf(w, w.bob);
  w.t.take();
  const transfer = await w.as.alice.expect(201, "POST", "/users/me/transfers", {
    initiator_call: alice,
    exten: "1003",
    flow: "attended",
    timeout: null,
  });
  assert.deepEqual(transfer, {
    id: alice,
    initiator_uuid: w.alice.uuid,
    initiator_tenant_uuid: transfer.initiator_tenant_uuid,
    transferred_call: bob,
    initiator_call: alice,
    recipient_call: transfer.recipient_call,
    status: "ringback",
    flow: "attended",
  });
  await w.act("1003", "answer");
  const carol = await callIdOf(w, w.carol);
  return { alice, bob, carol };
}

Deno.test("attended transfer through /users/me, completed: bob and carol talk, alice is free", async () => {
  const w = await calldWorld();
  const { alice, bob, carol } = await consultation(w);
  const answered = await w.as.admin.expect(200, "GET", `/transfers/${alice}`);
  assert.deepEqual([answered.status, answered.recipient_call], ["answered", carol]);
  const mine = await w.as.alice.expect<{ items: { id: string }[] }>(
    200,
    "GET",
    "/users/me/transfers",
  );
  assert.deepEqual(mine.items.map((t) => t.id), [alice]);
  // bob hears music meanwhile
  assert.deepEqual((await calls(w)).find((c) => c.call_id === bob)?.talking_to, {});
  await w.as.alice.expect(204, "PUT", `/users/me/transfers/${alice}/complete`);
  assert.deepEqual(events(w), [
    ["alice", "EventDialing", "1003"],
    ["carol", "EventRinging", "1001"],
    ["alice", "EventEstablished", "1003"],
    ["carol", "EventEstablished", "1001"],
    ["alice", "EventReleased", "1003"],
    ["bob", "EventEstablished", "1003"],
    ["carol", "EventEstablished", "1002"],
  ]);
  const parties = await calls(w);
  assert.deepEqual(parties.map((c) => [c.call_id, c.talking_to]), [
    [bob, { [carol]: w.carol.uuid }],
    [carol, { [bob]: w.bob.uuid }],
  ]);
  await w.as.admin.error(404, "no-such-transfer", "GET", `/transfers/${alice}`);
  await w.act("1003", "hangup");
  // carol's history names bob, whom she ended up talking with
  const [record] = await lastCalls(w.t.ctx.services.store, w.carol.id, 1);
  assert.deepEqual([record!.srcUsername, record!.srcNum, record!.status], [
    "bob",
    "1002",
    "answered",
  ]);
});

Deno.test("attended transfer through /transfers, cancelled: carol released, alice and bob talk again", async () => {
  const w = await calldWorld();
  const { alice, bob } = await consultation(w);
  await w.as.admin.expect(204, "DELETE", `/transfers/${alice}`);
  assert.deepEqual(events(w).slice(-2), [
    ["carol", "EventReleased", "1001"],
    ["alice", "EventEstablished", "1002"],
  ]);
  const [aliceCall] = await calls(w);
  assert.deepEqual(aliceCall!.talking_to, { [bob]: w.bob.uuid });
  await w.as.admin.error(404, "no-such-transfer", "DELETE", `/transfers/${alice}`);
  await w.as.admin.error(404, "no-such-transfer", "PUT", `/transfers/${alice}/complete`);
});

Deno.test("blind transfer through /transfers: alice leaves, bob calls carol", async () => {
  const w = await calldWorld();
  await aliceCallsBob(w);
  const alice = await callIdOf(w, w.alice);
  const bob = await callIdOf(w, w.bob);
  w.t.take();
  const transfer = await w.as.admin.expect(201, "POST", "/transfers", {
    transferred_call: bob,
    initiator_call: alice,
    context: "default",
    exten: "1003",
    flow: "blind",
    variables: {},
    timeout: null,
  });
  assert.deepEqual([transfer.status, transfer.flow], ["blind_transferred", "blind"]);
  await w.act("1003", "answer");
  assert.deepEqual(events(w), [
    ["alice", "EventReleased", "1002"],
    ["carol", "EventRinging", "1002"],
    ["bob", "EventEstablished", "1003"],
    ["carol", "EventEstablished", "1002"],
  ]);
});

Deno.test("transfer errors: unknown fields, parties, another user's call or transfer, a second one", async () => {
  const w = await calldWorld();
  await aliceCallsBob(w);
  const alice = await callIdOf(w, w.alice);
  const bob = await callIdOf(w, w.bob);
  const request = { initiator_call: alice, exten: "1003", flow: "attended" };
  const details = await w.as.alice.error(400, "invalid-data", "POST", "/users/me/transfers", {
    ...request,
    foo: 1,
  });
  assert.deepEqual(details, { foo: ["Unknown field."] });
  // fields named as Object's own properties are fields like any
  const odd = await w.as.alice.error(
    400,
    "invalid-data",
    "POST",
    "/users/me/transfers",
    '{"constructor": 1, "__proto__": 2}',
  );
  assert.deepEqual(Object.keys(odd).sort(), [
    "__proto__",
    "constructor",
    "exten",
    "initiator_call",
  ]);
  for (const bad of [{ ...request, flow: "sideways" }, { ...request, exten: "" }, "{"]) {
    await w.as.alice.error(400, "invalid-data", "POST", "/users/me/transfers", bad);
  }
  await w.as.alice.error(400, "transfer-creation-error", "POST", "/users/me/transfers", {
    ...request,
    initiator_call: "999.9",
  });
  await w.as.carol.error(403, "user-permission-denied", "POST", "/users/me/transfers", request);
  const base = { transferred_call: bob, initiator_call: alice, context: "default", exten: "1003" };
  await w.as.admin.error(400, "invalid-data", "POST", "/transfers", {
    ...base,
    variables: { a: "b" },
  });
  // the transferred call must be the initiator's peer
  await w.as.admin.error(400, "transfer-creation-error", "POST", "/transfers", {
    ...base,
    transferred_call: alice,
  });
  await w.as.alice.expect(201, "POST", "/users/me/transfers", request);
  await w.as.alice.error(409, "transfer-already-started", "POST", "/users/me/transfers", request);
  await w.as.bob.error(
    403,
    "user-permission-denied",
    "PUT",
    `/users/me/transfers/${alice}/complete`,
  );
  await w.as.bob.error(403, "user-permission-denied", "DELETE", `/users/me/transfers/${alice}`);
  await w.as.alice.error(404, "no-such-transfer", "DELETE", "/users/me/transfers/999.9");
  // while it goes on the initiator's call takes no hold
  await w.as.alice.error(
    409,
    "transfer-already-started",
    "PUT",
    `/users/me/calls/${alice}/hold/start`,
  );
});

Deno.test("ad-hoc conference: alice, bob and carol; one removed; ended by the host", async () => {
  const w = await calldWorld();
  const { alice, bob, carol } = await consultation(w);
  w.t.take();
  const created = await w.as.alice.expect(201, "POST", "/users/me/conferences/adhoc", {
    host_call_id: alice,
    participant_call_ids: [bob, carol],
  });
  assert.deepEqual(created, { conference_id: alice });
  const parties = await calls(w);
  assert.deepEqual(
    parties.map((c) => [c.call_id, Object.keys(c.talking_to as object), c.bridges]),
    [
      [alice, [bob, carol], [alice]],
      [bob, [alice, carol], [alice]],
      [carol, [alice, bob], [alice]],
    ],
  );
  // the transfer it started from is over
  assert.deepEqual(
    (await w.as.alice.expect<{ items: unknown[] }>(200, "GET", "/users/me/transfers")).items,
    [],
  );
  // members are muted as any call
  await w.as.admin.expect(204, "PUT", `/calls/${bob}/mute/start`);
  const base = `/users/me/conferences/adhoc/${alice}`;
  await w.as.bob.error(404, "adhoc-conference-not-found", "DELETE", base);
  await w.as.alice.error(
    409,
    "participant-already-in-conference",
    "PUT",
    `${base}/participants/${bob}`,
  );
  await w.as.alice.error(400, "participant-call-not-found", "PUT", `${base}/participants/9.9`);
  await w.as.alice.expect(204, "DELETE", `${base}/participants/${carol}`);
  await w.as.alice.error(
    400,
    "participant-call-not-found",
    "DELETE",
    `${base}/participants/${carol}`,
  );
  await w.as.alice.expect(204, "DELETE", base);
  assert.deepEqual(events(w), [
    ["carol", "EventReleased", "1001"],
    ["alice", "EventReleased", "1003"],
    ["bob", "EventReleased", "1001"],
  ]);
  assert.deepEqual(await calls(w), []);
  await w.as.alice.error(404, "adhoc-conference-not-found", "DELETE", base);
});

Deno.test("ad-hoc conference errors: host and participants checked before anything moves", async () => {
  const w = await calldWorld();
  await aliceCallsBob(w);
  const alice = await callIdOf(w, w.alice);
  const bob = await callIdOf(w, w.bob);
  const create = (body: unknown) => ["POST", "/users/me/conferences/adhoc", body] as const;
  await w.as.alice.error(400, "invalid-data", ...create({ host_call_id: alice, other: 1 }));
  await w.as.alice.error(400, "host-call-not-found", ...create({ host_call_id: "9.9" }));
  await w.as.carol.error(400, "host-call-not-found", ...create({ host_call_id: alice }));
  await w.as.alice.error(
    400,
    "participant-call-not-found",
    ...create({ host_call_id: alice, participant_call_ids: ["9.9"] }),
  );
  // bob's own call is no peer of bob's: refused, nothing changed
  await w.as.bob.error(
    400,
    "host-call-creation-error",
    ...create({ host_call_id: bob, participant_call_ids: [bob] }),
  );
  assert.equal((await calls(w)).every((c) => (c.bridges as string[]).length === 0), true);
  await w.as.alice.expect(201, ...create({ host_call_id: alice, participant_call_ids: [bob] }));
  await w.as.alice.error(409, "host-already-in-conference", ...create({ host_call_id: alice }));
  await w.as.admin.error(
    400,
    "token-with-user-uuid-required",
    ...create({ host_call_id: alice }),
  );
});

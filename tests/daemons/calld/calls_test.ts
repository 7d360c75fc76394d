/**
 * The call daemon's calls through the real app (`/1.0/calls`, `/1.0/users/me/calls`): the call
 * object, a dial, the commands on one party, who may act on which call, and every error in the
 * daemon's form.
 */
import assert from "node:assert/strict";
import { phoneEvents } from "../../lib/platform/fixtures.ts";
import { tokenHolding } from "../agentd/fixtures.ts";
import { aliceCallsBob, calld, calldWorld, callIdOf, calls } from "./fixtures.ts";

Deno.test("a dial through /users/me/calls: 201 with the caller's call object, then both talk", async () => {
  const w = await calldWorld();
  const started = await w.as.alice.expect(201, "POST", "/users/me/calls", {
    extension: "10 02",
    variables: { crm: "42" },
  });
  assert.deepEqual(Object.keys(started).sort(), [
    "answer_time",
    "bridges",
    "call_id",
    "caller_id_name",
    "caller_id_number",
    "conversation_id",
    "creation_time",
    "dialed_extension",
    "direction",
    "hangup_time",
    "is_caller",
    "is_video",
    "line_id",
    "muted",
    "on_hold",
    "parked",
    "peer_caller_id_name",
    "peer_caller_id_number",
    "record_state",
    "sip_call_id",
    "status",
    "talking_to",
    "user_uuid",
  ]);
  assert.equal(started.call_id, started.conversation_id, "the caller's leg holds the linkedId");
  assert.equal(started.user_uuid, w.alice.uuid);
  assert.equal(started.status, "Ringing");
  assert.equal(started.is_caller, true);
  assert.equal(started.caller_id_name, "alice Liddell");
  assert.equal(started.caller_id_number, "1001");
  assert.equal(started.dialed_extension, "10 02");
  await w.act("1001", "answer");
  await w.act("1002", "answer");
  const [alice, bob] = await calls(w);
  assert.deepEqual(
    [alice!.call_id, alice!.status, alice!.talking_to, alice!.peer_caller_id_number],
    [started.call_id, "Up", { [bob!.call_id as string]: w.bob.uuid }, "1002"],
  );
  assert.equal(alice!.direction, "internal");
  assert.equal(typeof alice!.answer_time, "string");
  assert.deepEqual([bob!.user_uuid, bob!.is_caller, bob!.peer_caller_id_number], [
    w.bob.uuid,
    false,
    "1001",
  ]);
  // the call_id is the uniqueId of the user's phone events: a page that got one can act on it
  const events = phoneEvents(w.t.take()).filter((event) => event.username === "bob");
  assert.ok(events.every((event) => event.uniqueId === bob!.call_id));
  assert.equal(events[0]!.userData.USR_crm, "42");
});

Deno.test("GET /users/me/calls lists only the user's own; /calls lists every party", async () => {
  const w = await calldWorld();
  await aliceCallsBob(w);
  const mine = await w.as.bob.expect<{ items: { user_uuid: string }[] }>(
    200,
    "GET",
    "/users/me/calls",
  );
  assert.deepEqual(mine.items.map((call) => call.user_uuid), [w.bob.uuid]);
  assert.deepEqual(
    (await w.as.carol.expect<{ items: unknown[] }>(200, "GET", "/users/me/calls")).items,
    [],
  );
  assert.equal((await calls(w)).length, 2);
  // a Stasis application svc does not run: nothing
  const filtered = await w.as.admin.expect<{ items: unknown[] }>(
    200,
    "GET",
    "/calls?application=x",
  );
  assert.deepEqual(filtered.items, []);
  const one = await w.as.admin.expect(200, "GET", `/calls/${await callIdOf(w, w.bob)}`);
  assert.equal(one.user_uuid, w.bob.uuid);
});

Deno.test("hold through /users/me: on hold, the peer hears music, resumed; EventOnHold then EventEstablished", async () => {
  const w = await calldWorld();
  await aliceCallsBob(w);
  w.t.take();
  const id = await callIdOf(w, w.alice);
  await w.as.alice.expect(204, "PUT", `/users/me/calls/${id}/hold/start`);
  let [alice] = await calls(w);
  assert.deepEqual([alice!.on_hold, alice!.talking_to], [true, {}]);
  // already on hold: nothing to do
  await w.as.alice.expect(204, "PUT", `/users/me/calls/${id}/hold/start`);
  await w.as.alice.expect(204, "PUT", `/users/me/calls/${id}/hold/stop`);
  [alice] = await calls(w);
  assert.equal(alice!.on_hold, false);
  await w.as.alice.error(400, "call-not-held", "PUT", `/users/me/calls/${id}/hold/stop`);
  assert.deepEqual(phoneEvents(w.t.take()).map((e) => [e.username, e.eventType]), [
    ["alice", "EventOnHold"],
    ["alice", "EventEstablished"],
  ]);
});

Deno.test("answer, mute, DTMF and recording through /calls; hang-up through DELETE", async () => {
  const w = await calldWorld();
  const started = await w.as.alice.expect(201, "POST", "/users/me/calls", { extension: "1002" });
  const alice = started.call_id as string;
  await w.as.admin.error(400, "call-not-talking", "PUT", `/calls/${alice}/mute/start`);
  await w.as.admin.expect(204, "PUT", `/calls/${alice}/answer`);
  const bob = await callIdOf(w, w.bob);
  await w.as.admin.expect(204, "PUT", `/calls/${bob}/answer`);
  await w.as.admin.error(400, "call-not-ringing", "PUT", `/calls/${bob}/answer`);
  await w.as.admin.expect(204, "PUT", `/calls/${alice}/mute/start`);
  await w.as.admin.expect(204, "PUT", `/calls/${alice}/dtmf?digits=12%23*`);
  await w.as.admin.error(400, "recording-not-started", "PUT", `/calls/${alice}/record/pause`);
  await w.as.admin.expect(204, "PUT", `/calls/${alice}/record/start`);
  await w.as.admin.expect(204, "PUT", `/calls/${alice}/record/pause`);
  const [view] = await calls(w);
  assert.deepEqual([view!.muted, view!.record_state], [true, "paused"]);
  // bob heard the digits alice's keypad would have sent
  const bobLeg = w.t.sim.calls()[0]!.legs.find((leg) => leg.uniqueId === bob);
  assert.equal(bobLeg?.dtmf, "12#*");
  await w.as.admin.expect(204, "PUT", `/calls/${alice}/record/resume`);
  await w.as.admin.expect(204, "PUT", `/calls/${alice}/record/stop`);
  await w.as.admin.expect(204, "PUT", `/calls/${alice}/mute/stop`);
  await w.as.admin.expect(204, "DELETE", `/calls/${bob}`);
  assert.deepEqual(await calls(w), []);
  await w.as.admin.error(404, "no-such-call", "DELETE", `/calls/${bob}`);
});

Deno.test("DTMF: digits are required and only 0-9 * #; 400 invalid-data naming the field", async () => {
  const w = await calldWorld();
  await aliceCallsBob(w);
  const id = await callIdOf(w, w.alice);
  for (const query of ["", "?digits=", "?digits=12a", `?digits=${"1".repeat(65)}`]) {
    const details = await w.as.admin.error(400, "invalid-data", "PUT", `/calls/${id}/dtmf${query}`);
    assert.deepEqual(Object.keys(details), ["digits"]);
  }
});

Deno.test("another user's call: 403 user-permission-denied on /users/me; unknown: 404 no-such-call", async () => {
  const w = await calldWorld();
  await aliceCallsBob(w);
  const alice = await callIdOf(w, w.alice);
  for (
    const [method, path] of [
      ["PUT", `/users/me/calls/${alice}/hold/start`],
      ["PUT", `/users/me/calls/${alice}/record/start`],
      ["PUT", `/users/me/calls/${alice}/dtmf?digits=1`],
      ["DELETE", `/users/me/calls/${alice}`],
    ] as const
  ) {
    const details = await w.as.carol.error(403, "user-permission-denied", method, path);
    assert.equal(details.call_id, alice);
  }
  assert.equal((await calls(w)).length, 2, "nothing happened to alice's call");
  for (const client of [w.as.alice, w.as.admin]) {
    const prefix = client === w.as.alice ? "/users/me/calls" : "/calls";
    const details = await client.error(404, "no-such-call", "PUT", `${prefix}/999.9/hold/start`);
    assert.equal(details.call_id, "999.9");
  }
  await w.as.admin.error(404, "no-such-call", "GET", "/calls/999.9");
  await w.as.admin.error(404, "not-found", "GET", `/calls/${"9".repeat(300)}`);
});

Deno.test("tokens: none, bad or without the ACL is 401 unauthorized; /users/me needs a user's", async () => {
  const w = await calldWorld();
  await w.as.admin.expect(200, "GET", "/calls");
  const details = await calld(w.t, null).error(401, "unauthorized", "GET", "/calls");
  assert.deepEqual(details, {});
  await calld(w.t, "not-a-token").error(401, "unauthorized", "GET", "/calls");
  const narrow = calld(w.t, await tokenHolding(w.t.ctx, ["calld.transfers.#"]));
  assert.deepEqual(await narrow.error(401, "unauthorized", "GET", "/calls"), {
    required_access: "calld.calls.read",
  });
  // the ACL is built from the call id with . as _, as wazo-calld builds it
  const one = calld(w.t, await tokenHolding(w.t.ctx, ["calld.calls.1_2.read"]));
  await one.error(404, "no-such-call", "GET", "/calls/1.2");
  assert.deepEqual(await one.error(401, "unauthorized", "GET", "/calls/1.3"), {
    required_access: "calld.calls.1_3.read",
  });
  // a CTI user's token is for its own calls only
  await w.as.alice.error(401, "unauthorized", "GET", "/calls");
  await w.as.admin.error(400, "token-with-user-uuid-required", "GET", "/users/me/calls");
  // a token denying it
  const denied = calld(w.t, await tokenHolding(w.t.ctx, ["calld.#", "!calld.calls.read"]));
  await denied.error(401, "unauthorized", "GET", "/calls");
});

Deno.test("POST /calls: a user by uuid rings first; bad bodies and users are 400s", async () => {
  const w = await calldWorld();
  const body = (source: Record<string, unknown>, destination: Record<string, unknown> = {}) => ({
    source: { user: w.alice.uuid, ...source },
    destination: { context: "default", extension: "1002", priority: 1, ...destination },
  });
  const started = await w.as.admin.expect(201, "POST", "/calls", {
    ...body({}),
    variables: { ticket: "T-1" },
    unknown: "ignored",
  });
  assert.equal(started.user_uuid, w.alice.uuid);
  assert.equal((await calls(w)).length, 1);
  await w.as.admin.error(
    400,
    "invalid-user",
    "POST",
    "/calls",
    body({ user: crypto.randomUUID() }),
  );
  await w.as.admin.error(
    400,
    "invalid-extension",
    "POST",
    "/calls",
    body({}, { context: "other" }),
  );
  await w.as.admin.error(400, "invalid-user-line", "POST", "/calls", body({ line_id: 999 }));
  await w.as.admin.error(400, "call-creation", "POST", "/calls", body({ from_mobile: true }));
  for (
    const bad of [
      "{not json",
      "[]",
      { source: { user: w.alice.uuid } },
      body({}, { priority: 0 }),
      body({}, { extension: "" }),
      body({}, { extension: "abc" }),
      { ...body({}), variables: { "bad key": "x" } },
      { ...body({}), variables: { a: 1 } },
    ]
  ) {
    await w.as.admin.error(400, "invalid-data", "POST", "/calls", bad);
  }
  // a body over the limit
  const huge = JSON.stringify({ ...body({}), pad: "x".repeat(1024 * 1024) });
  const response = await w.as.admin.call("POST", "/calls", huge);
  assert.equal(response.status, 413);
  await response.body?.cancel();
});

Deno.test("unknown paths and methods below /1.0 answer in the daemon's form", async () => {
  const w = await calldWorld();
  await w.as.admin.error(404, "not-found", "GET", "/nothing");
  const response = await w.as.admin.call("PATCH", "/calls");
  assert.equal(response.status, 405);
  assert.equal((await response.json()).error_id, "method-not-allowed");
});

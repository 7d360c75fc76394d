/**
 * The call daemon as wazo-calld-client (Python) uses it, its base URL `http://<svc>/1.0`
 * (`Client(host, port, prefix=None, https=False)`): each request built as the client builds it
 * (its session's headers, `Accept: application/json`, a JSON body written as Python's `json.dumps`
 * writes it, query values only when set), each answer read as it reads it: the one status each
 * method expects, `r.json()` where it returns one, and on any other status its `CalldError`, which
 * needs the four keys `message`, `error_id`, `details`, `timestamp` (else a plain HTTP error).
 */
import assert from "node:assert/strict";
import type { TestContext } from "../../helpers.ts";
import { alicesRoom, roomsWorld } from "../../routes/meetingrooms_fixtures.ts";
import { calldWorld } from "./fixtures.ts";

/** The client's `CalldError`: the four keys of an error body. */
class CalldError extends Error {
  constructor(
    readonly statusCode: number,
    readonly errorId: string,
    readonly details: unknown,
  ) {
    super(errorId);
  }
}

/** What `requests` raises when the body is no `CalldError`'s. */
class HttpError extends Error {}

/** `json.dumps` of a JSON value, as Python writes it (`", "` and `": "`). */
function dumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(dumps).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${
      Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${dumps(item)}`).join(
        ", ",
      )
    }}`;
  }
  return JSON.stringify(value);
}

/** The client with `token` against the app, as `CalldClient` would be against svc. */
function wazoCalldClient(ctx: TestContext, token: string) {
  const session = {
    "Connection": "close",
    "X-Auth-Token": token,
    "User-agent": "wazo_client_test",
  };
  const request = async (
    method: string,
    path: string,
    expected: number,
    { json, params }: { json?: unknown; params?: Record<string, unknown> } = {},
  ) => {
    const query = new URLSearchParams(
      Object.entries(params ?? {}).filter(([, value]) => value !== undefined && value !== null)
        .map(([key, value]) => [key, value === true ? "True" : String(value)]),
    ).toString();
    const headers: Record<string, string> = { ...session, Accept: "application/json" };
    if (json !== undefined) headers["Content-Type"] = "application/json";
    const response = await ctx.app.request(`/1.0${path}${query ? `?${query}` : ""}`, {
      method,
      headers,
      body: json === undefined ? undefined : dumps(json),
    });
    const text = await response.text();
    if (response.status !== expected) {
      // CalldCommand.raise_from_response
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(text);
      } catch {
        throw new HttpError(`${response.status}`);
      }
      for (const key of ["message", "error_id", "details", "timestamp"]) {
        if (!(key in body)) throw new HttpError(`${response.status}: no ${key}`);
      }
      throw new CalldError(response.status, body.error_id as string, body.details);
    }
    return text ? JSON.parse(text) : null;
  };
  return {
    calls: {
      list_calls: (application?: string) =>
        request("GET", "/calls", 200, { params: { application } }),
      list_calls_from_user: () => request("GET", "/users/me/calls", 200),
      get_call: (id: string) => request("GET", `/calls/${id}`, 200),
      make_call: (call: unknown) => request("POST", "/calls", 201, { json: call }),
      make_call_from_user: (extension: string, variables?: Record<string, string>) =>
        request("POST", "/users/me/calls", 201, {
          json: { extension, ...(variables ? { variables } : {}) },
        }),
      hangup: (id: string) => request("DELETE", `/calls/${id}`, 204),
      hangup_from_user: (id: string) => request("DELETE", `/users/me/calls/${id}`, 204),
      start_hold_from_user: (id: string) => request("PUT", `/users/me/calls/${id}/hold/start`, 204),
      stop_hold_from_user: (id: string) => request("PUT", `/users/me/calls/${id}/hold/stop`, 204),
      start_hold: (id: string) => request("PUT", `/calls/${id}/hold/start`, 204),
      answer: (id: string) => request("PUT", `/calls/${id}/answer`, 204),
      start_mute: (id: string) => request("PUT", `/calls/${id}/mute/start`, 204),
      stop_mute_from_user: (id: string) => request("PUT", `/users/me/calls/${id}/mute/stop`, 204),
      send_dtmf_digits: (id: string, digits: string) =>
        request("PUT", `/calls/${id}/dtmf`, 204, { params: { digits } }),
      send_dtmf_digits_from_user: (id: string, digits: string) =>
        request("PUT", `/users/me/calls/${id}/dtmf`, 204, { params: { digits } }),
      start_record_from_user: (id: string) =>
        request("PUT", `/users/me/calls/${id}/record/start`, 204),
      pause_record: (id: string) => request("PUT", `/calls/${id}/record/pause`, 204),
      resume_record: (id: string) => request("PUT", `/calls/${id}/record/resume`, 204),
      stop_record: (id: string) => request("PUT", `/calls/${id}/record/stop`, 204),
    },
    transfers: {
      make_transfer: (transferred: string, initiator: string, context: string, exten: string) =>
        request("POST", "/transfers", 201, {
          json: {
            transferred_call: transferred,
            initiator_call: initiator,
            context,
            exten,
            flow: "attended",
            variables: {},
            timeout: null,
          },
        }),
      make_transfer_from_user: (exten: string, initiator: string, flow: string) =>
        request("POST", "/users/me/transfers", 201, {
          json: { exten, initiator_call: initiator, flow, timeout: null },
        }),
      get_transfer: (id: string) => request("GET", `/transfers/${id}`, 200),
      list_transfers_from_user: () => request("GET", "/users/me/transfers", 200),
      complete_transfer: (id: string) => request("PUT", `/transfers/${id}/complete`, 204),
      cancel_transfer_from_user: (id: string) =>
        request("DELETE", `/users/me/transfers/${id}`, 204),
    },
    conferences: {
      list_participants: (id: number) => request("GET", `/conferences/${id}/participants`, 200),
      user_list_participants: (id: number) =>
        request("GET", `/users/me/conferences/${id}/participants`, 200),
      kick_participant: (id: number, participant: string) =>
        request("DELETE", `/conferences/${id}/participants/${participant}`, 204),
      mute_participant: (id: number, participant: string) =>
        request("PUT", `/conferences/${id}/participants/${participant}/mute`, 204),
      unmute_participant: (id: number, participant: string) =>
        request("PUT", `/conferences/${id}/participants/${participant}/unmute`, 204),
      record: (id: number) => request("POST", `/conferences/${id}/record`, 204),
      stop_record: (id: number) => request("DELETE", `/conferences/${id}/record`, 204),
    },
    meetings: {
      list_participants: (uuid: string) => request("GET", `/meetings/${uuid}/participants`, 200),
      user_list_participants: (uuid: string) =>
        request("GET", `/users/me/meetings/${uuid}/participants`, 200),
    },
    adhoc_conferences: {
      create_from_user: (host: string, ...participants: string[]) =>
        request("POST", "/users/me/conferences/adhoc", 201, {
          json: { host_call_id: host, participant_call_ids: participants },
        }),
      remove_participant_from_user: (conference: string, call: string) =>
        request("DELETE", `/users/me/conferences/adhoc/${conference}/participants/${call}`, 204),
      delete_from_user: (conference: string) =>
        request("DELETE", `/users/me/conferences/adhoc/${conference}`, 204),
    },
  };
}

/** What the client raises, as its error id (or the plain HTTP error). */
async function raised(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
  } catch (error) {
    if (error instanceof CalldError) return error.errorId;
    if (error instanceof HttpError) return `http ${error.message}`;
    throw error;
  }
  return "nothing";
}

/** The client with alice's token, as a login gives it, and with a web service user's (`calld.#`). */
async function aliceAndAdmin(w: Awaited<ReturnType<typeof calldWorld>>) {
  const { tokens } = w.t.ctx.services;
  const issued = (userId: string, login: string, userType: "cti" | "webservice", acls: string[]) =>
    tokens.issue({ userId, login, userType, acls }).then(({ token }) =>
      wazoCalldClient(w.t.ctx, token)
    );
  return {
    alice: await issued(String(w.alice.id), w.alice.username!, "cti", ["alias.ctiuser"]),
    admin: await issued("0", "crm", "webservice", ["calld.#"]),
  };
}

Deno.test("wazo-calld-client: a user's call, held, recorded, DTMF, muted, transferred, hung up", async () => {
  const w = await calldWorld();
  const { alice, admin } = await aliceAndAdmin(w);

  const call = await alice.calls.make_call_from_user("1002", { ticket: "T-1" });
  assert.equal(call.user_uuid, w.alice.uuid);
  await admin.calls.answer(call.call_id);
  const bob = (await admin.calls.list_calls()).items.find((c: { user_uuid: string }) =>
    c.user_uuid === w.bob.uuid
  );
  await admin.calls.answer(bob.call_id);
  assert.deepEqual((await admin.calls.list_calls("an-app")).items, []);

  await alice.calls.start_hold_from_user(call.call_id);
  assert.equal((await alice.calls.list_calls_from_user()).items[0].on_hold, true);
  await alice.calls.stop_hold_from_user(call.call_id);
  await alice.calls.start_record_from_user(call.call_id);
  await admin.calls.pause_record(call.call_id);
  await admin.calls.resume_record(call.call_id);
  await admin.calls.stop_record(call.call_id);
  await alice.calls.send_dtmf_digits_from_user(call.call_id, "42#");
  await admin.calls.start_mute(call.call_id);
  await alice.calls.stop_mute_from_user(call.call_id);

  // an attended transfer to carol, by the user, cancelled; then one by the CRM, completed
  const transfer = await alice.transfers.make_transfer_from_user("1003", call.call_id, "attended");
  assert.equal(transfer.status, "ringback");
  assert.equal((await alice.transfers.list_transfers_from_user()).items.length, 1);
  await alice.transfers.cancel_transfer_from_user(transfer.id);
  const byCrm = await admin.transfers.make_transfer(bob.call_id, call.call_id, "default", "1003");
  await w.act("1003", "answer");
  assert.equal((await admin.transfers.get_transfer(byCrm.id)).status, "answered");
  await admin.transfers.complete_transfer(byCrm.id);
  assert.equal(await raised(() => admin.transfers.get_transfer(byCrm.id)), "no-such-transfer");

  // bob and carol talk; the CRM hangs carol up, which ends the call
  const carol = (await admin.calls.list_calls()).items.find((c: { user_uuid: string }) =>
    c.user_uuid === w.carol.uuid
  );
  await admin.calls.hangup(carol.call_id);
  assert.deepEqual((await admin.calls.list_calls()).items, []);
});

Deno.test("wazo-calld-client: two calls of the host merged, then the conference deleted: every call ends", async () => {
  const w = await calldWorld();
  const { alice, admin } = await aliceAndAdmin(w);
  /** alice calls `extension`, both phones answer: alice's leg and the callee's. */
  const call = async (extension: string, callee: typeof w.bob) => {
    const mine = await alice.calls.make_call_from_user(extension);
    await admin.calls.answer(mine.call_id);
    const theirs = (await admin.calls.list_calls()).items.find((c: { user_uuid: string }) =>
      c.user_uuid === callee.uuid
    );
    await admin.calls.answer(theirs.call_id);
    return [mine.call_id as string, theirs.call_id as string] as const;
  };
  const [withBob, bob] = await call("1002", w.bob);
  const [withCarol, carol] = await call("1003", w.carol);
  // the participants' own calls, as wazo-calld takes them; the host's peer (bob) comes along
  const { conference_id } = await alice.adhoc_conferences.create_from_user(withBob, carol);
  const talking = Object.fromEntries(
    (await admin.calls.list_calls()).items.map((c: { call_id: string; talking_to: object }) => [
      c.call_id,
      Object.keys(c.talking_to).sort(),
    ]),
  );
  assert.deepEqual(talking, {
    [withBob]: [bob, carol].sort(),
    [bob]: [withBob, carol].sort(),
    [carol]: [withBob, bob].sort(),
  });
  assert.equal(
    (await admin.calls.list_calls()).items.some((c: { call_id: string }) =>
      c.call_id === withCarol
    ),
    false,
    "the host's call with carol ended as she joined",
  );
  await alice.adhoc_conferences.delete_from_user(conference_id);
  assert.deepEqual((await admin.calls.list_calls()).items, []);
  assert.equal(
    await raised(() => alice.adhoc_conferences.delete_from_user(conference_id)),
    "adhoc-conference-not-found",
  );
});

Deno.test("wazo-calld-client: every failure is a CalldError it can read", async () => {
  const w = await calldWorld();
  const issue = async (
    acls: string[],
    userId = "0",
    userType: "cti" | "webservice" = "webservice",
  ) => (await w.t.ctx.services.tokens.issue({ userId, login: "x", userType, acls })).token;
  const admin = wazoCalldClient(w.t.ctx, await issue(["calld.#"]));
  const nobody = wazoCalldClient(w.t.ctx, await issue([]));
  const alice = wazoCalldClient(w.t.ctx, await issue(["alias.ctiuser"], String(w.alice.id), "cti"));
  assert.equal(await raised(() => nobody.calls.list_calls()), "unauthorized");
  assert.equal(await raised(() => admin.calls.get_call("1.1")), "no-such-call");
  assert.equal(await raised(() => admin.calls.send_dtmf_digits("1.1", "x")), "invalid-data");
  assert.equal(await raised(() => admin.calls.make_call({ source: {} })), "invalid-data");
  assert.equal(
    await raised(() => admin.calls.list_calls_from_user()),
    "token-with-user-uuid-required",
  );
  assert.equal(await raised(() => alice.calls.hangup_from_user("1.1")), "no-such-call");
  assert.equal(
    await raised(() => alice.transfers.make_transfer_from_user("1003", "1.1", "blind")),
    "transfer-creation-error",
  );
  assert.equal(
    await raised(() => alice.adhoc_conferences.create_from_user("1.1")),
    "host-call-not-found",
  );
  assert.equal(
    await raised(() => alice.adhoc_conferences.delete_from_user("1.1")),
    "adhoc-conference-not-found",
  );
  assert.equal(
    await raised(() => alice.adhoc_conferences.remove_participant_from_user("1.1", "2.2")),
    "adhoc-conference-not-found",
  );
});

Deno.test("wazo-calld-client: a conference's participants listed, muted, kicked, recorded; a meeting's listed", async () => {
  const w = await roomsWorld();
  const { alice, admin } = await aliceAndAdmin(w);
  const conference = await w.t.api.create("/conferences", { name: "Hall", pin: "77" });
  const extension = await w.t.api.create("/extensions", { exten: "4000", context: "default" });
  await w.t.api.put(`/conferences/${conference.id}/extensions/${extension.id}`);
  await w.join(w.alice, "4000", "77");
  await w.join(w.bob, "4000", "77");
  const { items } = await admin.conferences.list_participants(conference.id);
  assert.deepEqual(items.map((p: { user_uuid: string }) => p.user_uuid), [
    w.alice.uuid,
    w.bob.uuid,
  ]);
  assert.equal((await alice.conferences.user_list_participants(conference.id)).total, 2);
  const bob = items[1].id as string;
  await admin.conferences.mute_participant(conference.id, bob);
  assert.equal((await admin.conferences.list_participants(conference.id)).items[1].muted, true);
  await admin.conferences.unmute_participant(conference.id, bob);
  await admin.conferences.record(conference.id);
  assert.equal(
    await raised(() => admin.conferences.record(conference.id)),
    "conference-already-recorded",
  );
  await admin.conferences.stop_record(conference.id);
  await admin.conferences.kick_participant(conference.id, bob);
  assert.equal((await admin.conferences.list_participants(conference.id)).total, 1);
  assert.equal(
    await raised(() => admin.conferences.kick_participant(conference.id, bob)),
    "no-such-participant",
  );
  assert.equal(
    await raised(() => admin.conferences.list_participants(999)),
    "no-such-conference",
  );

  // alice's meeting: she lists it as its owner, the administrator as such
  const room = await alicesRoom(w, { userPin: "1" });
  await w.join(w.carol, room.number, "1");
  const mine = await alice.meetings.user_list_participants(room.id);
  assert.deepEqual(mine.items.map((p: { user_uuid: string }) => p.user_uuid), [w.carol.uuid]);
  assert.equal((await admin.meetings.list_participants(room.id)).total, 1);
  assert.equal(
    await raised(() => admin.meetings.list_participants("00000000-0000-4000-8000-000000000000")),
    "no-such-meeting",
  );
});

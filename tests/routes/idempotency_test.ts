/**
 * `Idempotency-Key` on every command that takes it (lib/idempotency.ts, docs/decisions.md
 * "Idempotent commands"), through the real app and the simulated PBX: a retry with the same key
 * and request gets the first answer byte for byte and runs nothing (the simulator's calls and the
 * records say so), another request under the key is 422, a request still running 409, two callers
 * never share a key, a key lives 24 hours, a malformed key is 400, a 4xx is replayed and a 5xx is
 * not.
 */
import assert from "node:assert/strict";
import { KEY_TTL_MS, LEASE_MS, REPLAYED_HEADER } from "../../lib/idempotency.ts";
import { getCallbackRequest } from "../../lib/store/callback_requests.ts";
import { claimKey, readEntry } from "../../lib/store/idempotency_keys.ts";
import { findUserByUsername } from "../../lib/store/users.ts";
import {
  apiCall,
  bearer,
  closedPort,
  expectError,
  login,
  setup,
  type TestContext,
  webServiceUser,
} from "../helpers.ts";
import { ALLOWED_HOSTS, ALLOWED_V4, ALLOWED_V6, v1 } from "../legacy/fixtures.ts";
import { asteriskContext } from "../lib/platform/asterisk/fixtures.ts";
import {
  agentAndQueue,
  phoneEvents,
  phoneUser,
  type SimContext,
  simSetup,
} from "../lib/platform/fixtures.ts";

const V2 = "/svc/api/2.0";
const CALLBACK_HEADER =
  "phoneNumber|mobilePhoneNumber|firstName|lastName|company|description|dueDate|period";

/** The header of key `key`, as an sf-string. */
const key = (value: string): Record<string, string> => ({ "Idempotency-Key": `"${value}"` });

type Call = ReturnType<typeof apiCall>;

interface Fixture {
  t: SimContext;
  ctx: TestContext;
  /** A web service user holding every control ACL, and its `/svc/api/2.0` client. */
  wsId: number;
  v2: Call;
  /** Another web service user with the same ACLs. */
  other: Call;
  queueId: number;
  listUuid: string;
  /** How many calls the simulator started so far (in progress or ended). */
  calls(): number;
  /** Logs the CTI users alice and bob in (again), so that they are connected. */
  connect(): Promise<void>;
  /** A fresh token for the first web service user (its user, so its keys, stay the same). */
  renewToken(): Promise<void>;
}

/**
 * alice (1001) and bob (1002) with phones and connected, erin (1003) never connected, the queue
 * `sales` (3000) whose agent 8001 is logged on bob's phone, a callback list on it, and two web
 * service users holding the dial, DND, forward and callback ACLs.
 */
async function fixture(): Promise<Fixture> {
  const t = await simSetup({ SVC_DEPRECATED_API_HOST: ALLOWED_HOSTS });
  const { ctx } = t;
  for (const [name, exten] of [["alice", "1001"], ["bob", "1002"], ["erin", "1003"]]) {
    await phoneUser(t, name!, exten!, { password: `${name}-pw` });
  }
  const connect = async () => {
    for (const name of ["alice", "bob"]) await login(ctx, "login", name);
  };
  await connect();
  const { queue } = await agentAndQueue(t, "8001", { name: "sales", number: "3000" });
  const list = await t.api.create("/callback_lists", { name: "Callbacks", queue_id: queue.id });
  const acls = [
    "svc.rest.dial.#",
    "svc.rest.dnd.#",
    "svc.rest.forward.#",
    "svc.rest.callback_lists.#",
    "agentd.#",
  ];
  const ws = await webServiceUser(ctx, acls);
  let v2 = apiCall(ctx, V2, await login(ctx, "webservice", ws.login));
  const other = apiCall(
    ctx,
    V2,
    await login(ctx, "webservice", (await webServiceUser(ctx, acls)).login),
  );
  const agentLogin = await apiCall(ctx, "", await login(ctx, "webservice", ws.login))(
    "POST",
    "/agents/by-number/8001/login",
    { extension: "1002", context: "default" },
  );
  assert.equal(agentLogin.status, 204, await agentLogin.text());
  const seen = new Set<string>();
  return {
    t,
    ctx,
    wsId: ws.id,
    get v2() {
      return v2;
    },
    other,
    queueId: queue.id,
    listUuid: list.uuid,
    calls() {
      for (const call of t.sim.calls()) seen.add(call.linkedId);
      for (const event of phoneEvents(t.events)) seen.add(event.linkedId);
      return seen.size;
    },
    connect,
    async renewToken() {
      v2 = apiCall(ctx, V2, await login(ctx, "webservice", ws.login));
    },
  };
}

/** What a test keeps of an answer: status, the replay header, content type and body bytes. */
interface Seen {
  status: number;
  replayed: string | null;
  type: string | null;
  bytes: Uint8Array;
  text: string;
}

async function seen(response: Response | Promise<Response>): Promise<Seen> {
  const answer = await response;
  const bytes = new Uint8Array(await answer.arrayBuffer());
  return {
    status: answer.status,
    replayed: answer.headers.get(REPLAYED_HEADER),
    type: answer.headers.get("content-type"),
    bytes,
    text: new TextDecoder().decode(bytes),
  };
}

/** `second` is `first` replayed: same status, content type and bytes, and marked so. */
function assertReplayed(first: Seen, second: Seen) {
  assert.equal(first.replayed, null, "the first answer is no replay");
  assert.equal(second.replayed, "true", `a replay: ${second.status} ${second.text}`);
  assert.equal(second.status, first.status);
  assert.equal(second.type, first.type);
  assert.deepEqual(second.bytes, first.bytes);
}

/** Sends `send` twice; the first answers `status`, the second replays it; answers both. */
async function twice(send: () => Response | Promise<Response>, status: number) {
  const first = await seen(send());
  assert.equal(first.status, status, first.text);
  const second = await seen(send());
  assertReplayed(first, second);
  return { first, second };
}

Deno.test("2.0 dial: a retry with the same key and body rings once and gets the same answer", async (t) => {
  const f = await fixture();
  const routes: [string, object][] = [
    ["/dial/number/alice", { destination: "06 12 34 56 78", variables: { crm: "T-1" } }],
    ["/dial/user/alice", { username: "bob" }],
    ["/dial/fromqueue/alice", { destination: "0612345678", queueId: f.queueId }],
    ["/dial/toqueue", { destination: "0612345678", queueName: "sales" }],
  ];
  for (const [path, body] of routes) {
    await t.step(path, async () => {
      const before = f.calls();
      await twice(() => f.v2("POST", path, body, key(`dial ${path}`)), 200);
      assert.equal(f.calls(), before + 1, "one call for two requests");
      // and a third time, from the same caller: still one call
      const third = await seen(f.v2("POST", path, body, key(`dial ${path}`)));
      assert.equal(third.replayed, "true");
      assert.equal(f.calls(), before + 1);
    });
  }
  await t.step("without the header every request runs", async () => {
    const before = f.calls();
    for (let i = 0; i < 2; i++) {
      const answer = await seen(f.v2("POST", "/dial/number/alice", { destination: "0699" }));
      assert.equal(answer.status, 200);
      assert.equal(answer.replayed, null);
    }
    assert.equal(f.calls(), before + 2);
  });
});

Deno.test("1.0 dial and DND: a retry with the same key runs nothing; the caller is the client address", async (t) => {
  const f = await fixture();
  const routes: [string, object][] = [
    ["/dial/example.com/alice/", { number: "0612345678" }],
    ["/dialByUsername/example.com/alice/", { username: "bob" }],
    [
      "/dialFromQueue/example.com/alice/",
      { destination: "0612345678", queueId: f.queueId, callerIdNumber: "3000" },
    ],
  ];
  for (const [path, body] of routes) {
    await t.step(path, async () => {
      const before = f.calls();
      const send = (from: string, route = path) =>
        v1(f.ctx, "POST", route, body, { address: from, headers: key(`v1 ${path}`) });
      const { first } = await twice(() => send(ALLOWED_V4), 200);
      // the same path without its trailing slash is the same request
      assertReplayed(first, await seen(send(ALLOWED_V4, path.slice(0, -1))));
      assert.equal(f.calls(), before + 1);
      // another allowed client's key of the same name is its own
      const elsewhere = await seen(send(ALLOWED_V6));
      assert.equal(elsewhere.status, 200);
      assert.equal(elsewhere.replayed, null);
      assert.equal(f.calls(), before + 2);
    });
  }
  await t.step("dnd: the retry does not set DND again after it was changed back", async () => {
    const send = (state: boolean, headers = key("v1 dnd")) =>
      v1(f.ctx, "POST", "/dnd/example.com/bob/", { state }, { headers });
    const first = await seen(send(true));
    assert.equal(first.status, 200, first.text);
    assert.equal((await seen(send(false, {}))).status, 200);
    assertReplayed(first, await seen(send(true)));
    assert.equal(
      (await findUserByUsername(f.ctx.services.store, "bob"))!.services.dnd.enabled,
      false,
    );
  });
  await t.step("another body under the key: 422 in the 1.0 form", async () => {
    await expectError(
      await v1(f.ctx, "POST", "/dial/example.com/alice/", { number: "0600" }, {
        headers: key("v1 /dial/example.com/alice/"),
      }),
      422,
      "IdempotencyKeyReused",
    );
  });
});

Deno.test("2.0 DND and forwards: a retry does not change the user again", async (t) => {
  const f = await fixture();
  const bob = async () => (await findUserByUsername(f.ctx.services.store, "bob"))!;
  await t.step("dnd", async () => {
    const first = await seen(f.v2("POST", "/dnd/bob", { state: true }, key("dnd")));
    assert.equal(first.status, 200, first.text);
    assert.equal((await bob()).services.dnd.enabled, true);
    assert.equal((await seen(f.v2("POST", "/dnd/bob", { state: false }))).status, 200);
    assertReplayed(first, await seen(f.v2("POST", "/dnd/bob", { state: true }, key("dnd"))));
    assert.equal((await bob()).services.dnd.enabled, false, "the retry changed nothing");
  });
  for (const kind of ["unconditional", "noanswer", "busy"] as const) {
    await t.step(`forward ${kind}`, async () => {
      const path = `/forward/${kind}/bob`;
      const on = { destination: "1001", enabled: true };
      const first = await seen(f.v2("POST", path, on, key(`fwd ${kind}`)));
      assert.equal(first.status, 200, first.text);
      const off = { destination: "", enabled: false };
      assert.equal((await seen(f.v2("POST", path, off))).status, 200);
      assertReplayed(first, await seen(f.v2("POST", path, on, key(`fwd ${kind}`))));
      assert.equal((await bob()).forwards[kind].enabled, false, "the retry changed nothing");
      await expectError(
        await f.v2("POST", path, { ...on, destination: "1003" }, key(`fwd ${kind}`)),
        422,
        "IdempotencyKeyReused",
      );
    });
  }
});

Deno.test("callbacks: a retried import imports once, a retried take takes once", async (t) => {
  const f = await fixture();
  const csv = [CALLBACK_HEADER, "0611223344||Frank|Roux||||", "||No|Number||||"].join("\n");
  const pending = async () => {
    const lists = await (await f.v2("GET", "/callback_lists")).json();
    return lists[0].callbacks as { uuid: string; agent: string | null }[];
  };
  let uuid = "";
  await t.step("import", async () => {
    const body = { listUuid: f.listUuid, csv };
    const { first } = await twice(
      () => f.v2("POST", "/callback_lists/callback_requests/csv", body, key("import")),
      201,
    );
    assert.equal(JSON.parse(first.text).created.length, 1);
    assert.equal(JSON.parse(first.text).failed.length, 1);
    const requests = await pending();
    assert.equal(requests.length, 1, "one import");
    uuid = requests[0]!.uuid;
  });
  await t.step("take", async () => {
    const path = `/callback_lists/callback_requests/${uuid}/take`;
    const first = await seen(f.v2("POST", path, { agentNumber: "8001" }, key("take")));
    assert.equal(first.status, 200, first.text);
    assert.equal(JSON.parse(first.text).agent, "8001");
    const released = await f.v2("POST", `/callback_lists/callback_requests/${uuid}/release`);
    assert.equal(released.status, 200, await released.text());
    assertReplayed(first, await seen(f.v2("POST", path, { agentNumber: "8001" }, key("take"))));
    const request = await getCallbackRequest(f.ctx.services.store, uuid);
    assert.equal(request!.agent, null, "the retry took nothing");
  });
});

/** A CSV of personal contacts as a multipart body (each FormData gets its own boundary). */
function contactsForm(csv: string): FormData {
  const form = new FormData();
  form.append("file", new File([csv], "contacts.csv", { type: "text/csv" }));
  return form;
}

Deno.test("contacts import: a retry imports once, even as a new multipart body", async (t) => {
  const f = await fixture();
  const token = await login(f.ctx, "login", "alice");
  const csv = "firstname,lastname,number\nCarol,Roy,0612345678\nDan,Roy,0612345679\n";
  const importing = (body: BodyInit, headers: Record<string, string> = {}) =>
    f.ctx.app.request(`${V2}/contact/import/personal`, {
      method: "POST",
      headers: { ...bearer(token), ...headers },
      body,
    });
  const count = async () =>
    (await (await f.ctx.app.request(`${V2}/contact/personal`, { headers: bearer(token) })).json())
      .entries.length;

  await t.step("multipart, sent again with another boundary", async () => {
    const { first } = await twice(() => importing(contactsForm(csv), key("contacts")), 201);
    assert.equal(JSON.parse(first.text).created.length, 2);
    assert.equal(await count(), 2, "one import");
  });
  await t.step("a text/csv body", async () => {
    const more = "firstname,lastname,number\nEve,Roy,0612345670\n";
    await twice(() => importing(more, { "Content-Type": "text/csv", ...key("contacts 2") }), 201);
    assert.equal(await count(), 3);
  });
  await t.step("another file under the key: 422", async () => {
    await expectError(
      await importing(contactsForm(csv + "Fay,Roy,0612345671\n"), key("contacts")),
      422,
      "IdempotencyKeyReused",
    );
    assert.equal(await count(), 3);
  });
});

Deno.test("users CSV import: a retry imports once, its large answer replayed whole; 1.1 error forms", async (t) => {
  const f = await fixture();
  const api = f.t.api;
  const csvCall = (method: string, csv: string, headers: Record<string, string>) =>
    api.call(method, "/users/import", csv, {
      "Content-Type": "text/csv; charset=utf-8",
      ...headers,
    });
  const total = async () => (await api.list("/users?limit=1")).total;
  const rows = Array.from(
    { length: 1000 },
    (_, i) => `Imported${i},${crypto.randomUUID()},Person${i}`,
  );
  const csv = ["firstname,uuid,lastname", ...rows].join("\n");

  await t.step("POST: one import; the answer (over 64 KiB) replayed byte for byte", async () => {
    const before = await total();
    const { first } = await twice(() => csvCall("POST", csv, key("users")), 201);
    assert.ok(first.bytes.length > 64 * 1024, `answer of ${first.bytes.length} bytes`);
    assert.equal(JSON.parse(first.text).created.length, 1000);
    assert.equal(await total(), before + 1000, "one import");
  });
  await t.step("PUT", async () => {
    const uuid = rows[0]!.split(",")[1]!;
    const update = `uuid,lastname\n${uuid},Renamed\n`;
    await twice(() => csvCall("PUT", update, key("users update")), 200);
  });
  await t.step("another file under the key: 422 as the daemon words errors", async () => {
    const response = await csvCall("POST", "firstname\nOther\n", key("users"));
    assert.equal(response.status, 422);
    const body = await response.json();
    assert.match(body[0], /^Resource Error - this Idempotency-Key was used for another request/);
  });
  await t.step("a malformed key: 400 as the daemon words errors, nothing imported", async () => {
    const before = await total();
    const response = await csvCall("POST", "firstname\nOther\n", { "Idempotency-Key": "a b" });
    assert.equal(response.status, 400);
    assert.match((await response.json())[0], /^Input Error - Idempotency-Key must be one quoted/);
    assert.equal(await total(), before);
  });
});

Deno.test("a 4xx answer is kept and replayed; a 5xx is not kept and the retry runs", async (t) => {
  await t.step(
    "4xx: erin not connected, then connected: the retry still gets the 400",
    async () => {
      const f = await fixture();
      const send = () => f.v2("POST", "/dial/number/erin", { destination: "0612" }, key("erin"));
      const first = await seen(send());
      assert.equal(first.status, 400, first.text);
      assert.match(first.text, /user erin is not connected/);
      await login(f.ctx, "login", "erin");
      const before = f.calls();
      assertReplayed(first, await seen(send()));
      assert.equal(f.calls(), before, "no call");
      // a new key is a new request
      const fresh = await seen(
        f.v2("POST", "/dial/number/erin", { destination: "0612" }, key("erin 2")),
      );
      assert.equal(fresh.status, 200, fresh.text);
      assert.equal(f.calls(), before + 1);
    },
  );

  await t.step("5xx: with the PBX unreachable the key is given back", async () => {
    const a = await asteriskContext(await closedPort());
    try {
      const ws = await webServiceUser(a.ctx, ["svc.rest.dnd.#"]);
      const v2 = apiCall(a.ctx, V2, await login(a.ctx, "webservice", ws.login));
      for (let attempt = 0; attempt < 2; attempt++) {
        const answer = await seen(v2("POST", "/dnd/bob", { state: true }, key("down")));
        assert.equal(answer.status, 503, answer.text);
        assert.equal(answer.replayed, null, "never replayed: each attempt ran");
        assert.equal(
          await readEntry(a.ctx.services.store, `webservice:${ws.id}`, "down"),
          null,
          "nothing kept",
        );
      }
    } finally {
      await a.close();
    }
  });
});

Deno.test("concurrent requests with one key: one runs, the others 409 or the replay", async (t) => {
  const f = await fixture();
  const body = { destination: "0612345678" };
  await t.step("five at once", async () => {
    const before = f.calls();
    const answers = await Promise.all(
      Array.from({ length: 5 }, () => seen(f.v2("POST", "/dial/number/alice", body, key("race")))),
    );
    assert.equal(f.calls(), before + 1, "one call");
    const ran = answers.filter((answer) => answer.status === 200 && answer.replayed === null);
    assert.equal(ran.length, 1, answers.map((a) => `${a.status} ${a.text}`).join("\n"));
    for (const answer of answers) {
      if (answer === ran[0]) continue;
      if (answer.status === 409) {
        assert.equal(JSON.parse(answer.text).error, "IdempotencyKeyInUse");
      } else assertReplayed(ran[0]!, answer);
    }
  });

  await t.step("a request still running elsewhere: 409 with Retry-After", async () => {
    // another process holds the key for the same request (the fingerprint of "race"'s request)
    const caller = `webservice:${f.wsId}`;
    const { fingerprint } = (await readEntry(f.ctx.services.store, caller, "race"))!;
    const now = f.ctx.clock.now();
    const held = await claimKey(f.ctx.services.store, caller, "held", fingerprint, {
      now,
      ttlMs: KEY_TTL_MS,
      leaseMs: LEASE_MS,
    });
    assert.equal(held.kind, "claimed");
    const before = f.calls();
    const response = await f.v2("POST", "/dial/number/alice", body, key("held"));
    assert.equal(response.headers.get("retry-after"), "1");
    await expectError(response, 409, "IdempotencyKeyInUse", /still being processed/);
    // another request under a running key: 422 all the same
    await expectError(
      await f.v2("POST", "/dial/number/alice", { destination: "0600" }, key("held")),
      422,
      "IdempotencyKeyReused",
    );
    assert.equal(f.calls(), before);

    // that process died: once its lease ran out the key is free and the retry runs
    await f.ctx.clock.advance(LEASE_MS - 1);
    assert.equal((await f.v2("POST", "/dial/number/alice", body, key("held"))).status, 409);
    await f.ctx.clock.advance(1);
    await f.connect();
    const retried = await seen(f.v2("POST", "/dial/number/alice", body, key("held")));
    assert.equal(retried.status, 200, retried.text);
    assert.equal(retried.replayed, null);
    assert.equal(f.calls(), before + 1);
  });
});

Deno.test("two callers with one key: independent requests and answers", async () => {
  const f = await fixture();
  const before = f.calls();
  const mine = await seen(f.v2("POST", "/dial/number/alice", { destination: "0611" }, key("k")));
  // the other caller's request differs: no 422, its own key
  const theirs = await seen(
    f.other("POST", "/dial/number/bob", { destination: "0622" }, key("k")),
  );
  const same = await seen(f.other("POST", "/dial/number/alice", { destination: "0611" }, key("s")));
  const mySame = await seen(f.v2("POST", "/dial/number/alice", { destination: "0611" }, key("s")));
  for (const answer of [mine, theirs, same, mySame]) {
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.replayed, null);
  }
  assert.equal(f.calls(), before + 4);
  assertReplayed(
    theirs,
    await seen(f.other("POST", "/dial/number/bob", { destination: "0622" }, key("k"))),
  );
  assertReplayed(
    mine,
    await seen(f.v2("POST", "/dial/number/alice", { destination: "0611" }, key("k"))),
  );
  assert.equal(f.calls(), before + 4);
});

Deno.test("a key lives 24 hours from its first use, whatever the token", async () => {
  const f = await fixture();
  const body = { destination: "0612345678" };
  const send = () => f.v2("POST", "/dial/number/alice", body, key("day"));
  const first = await seen(send());
  assert.equal(first.status, 200);
  const before = f.calls();
  await f.ctx.clock.advance(KEY_TTL_MS - 1);
  await f.connect();
  await f.renewToken(); // the key belongs to the user, not to the token
  assertReplayed(first, await seen(send()));
  assert.equal(f.calls(), before);
  await f.ctx.clock.advance(1);
  const again = await seen(send());
  assert.equal(again.status, 200, again.text);
  assert.equal(again.replayed, null, "expired: the request runs again");
  assert.equal(f.calls(), before + 1);
});

Deno.test("the Idempotency-Key value: one quoted string of 1 to 255 characters, or unquoted", async (t) => {
  const f = await fixture();
  const body = { destination: "0612345678" };
  const bad: [string, HeadersInit][] = [
    ["unquoted with a space", { "Idempotency-Key": "a b" }],
    ["unquoted with a comma", { "Idempotency-Key": "a,b" }],
    ["unquoted with a quote", { "Idempotency-Key": 'a"b' }],
    ["unquoted, 256 characters", { "Idempotency-Key": "k".repeat(256) }],
    ["empty string", { "Idempotency-Key": '""' }],
    ["empty value", { "Idempotency-Key": "" }],
    ["256 characters", { "Idempotency-Key": `"${"k".repeat(256)}"` }],
    ["parameters", { "Idempotency-Key": '"abc";a=1' }],
    ["unterminated", { "Idempotency-Key": '"abc' }],
    ["a bad escape", { "Idempotency-Key": '"a\\b"' }],
    ["not ASCII", { "Idempotency-Key": '"clé"' }],
    ["two fields", [["Idempotency-Key", '"a"'], ["Idempotency-Key", '"b"']]],
  ];
  const before = f.calls();
  for (const [what, headers] of bad) {
    await t.step(`${what}: 400, nothing runs`, async () => {
      const all = new Headers(headers);
      const response = await f.v2("POST", "/dial/number/alice", body, Object.fromEntries(all));
      await expectError(response, 400, "InvalidIdempotencyKey", /one quoted string/);
    });
  }
  assert.equal(f.calls(), before);
  const good: [string, string, string][] = [
    ["255 characters", `"${"k".repeat(255)}"`, "k".repeat(255)],
    ["escapes", '"a\\"b\\\\c"', 'a"b\\c'],
    ["spaces around", '  "spaced key"  ', "spaced key"],
    // many clients send it unquoted, as other APIs take it: the same key as its quoted form
    ["unquoted", "8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"],
    ["an integer", "42", "42"],
  ];
  for (const [what, value, stored] of good) {
    await t.step(`${what}: accepted`, async () => {
      const answer = await seen(
        f.v2("POST", "/dial/number/alice", body, { "Idempotency-Key": value }),
      );
      assert.equal(answer.status, 200, answer.text);
      const entry = await readEntry(f.ctx.services.store, `webservice:${f.wsId}`, stored);
      assert.equal(entry?.state, "answered");
    });
  }
});

Deno.test("a request the guard refuses uses no key", async () => {
  const f = await fixture();
  const narrow = await webServiceUser(f.ctx, ["svc.rest.dnd.#"]);
  const refused = await apiCall(f.ctx, V2, await login(f.ctx, "webservice", narrow.login))(
    "POST",
    "/dial/number/alice",
    { destination: "0612" },
    key("guarded"),
  );
  assert.equal(refused.status, 403);
  await refused.body?.cancel();
  assert.equal(await readEntry(f.ctx.services.store, `webservice:${narrow.id}`, "guarded"), null);
});

Deno.test("a browser may send Idempotency-Key and read Idempotent-Replayed", async () => {
  const origin = "https://crm.example.com";
  const ctx = await setup({ SVC_CORS_ORIGINS: origin });
  const preflight = await ctx.app.request(`${V2}/dial/number/alice`, {
    method: "OPTIONS",
    headers: {
      Origin: origin,
      "Access-Control-Request-Method": "POST",
      "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
    },
  });
  assert.equal(preflight.status, 204);
  const allowed = (preflight.headers.get("access-control-allow-headers") ?? "").toLowerCase();
  assert.ok(allowed.split(",").includes("idempotency-key"), allowed);
  const exposed = preflight.headers.get("access-control-expose-headers") ?? "";
  assert.ok(exposed.split(",").includes(REPLAYED_HEADER), exposed);
});

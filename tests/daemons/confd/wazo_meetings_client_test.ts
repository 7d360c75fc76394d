/**
 * Meetings and conferences as wazo-confd-client (Python) calls them (docs/meetingrooms.md): its
 * session's headers (`X-Auth-Token`, `Accept: application/json`, `Content-Type` on writes), bodies
 * written as Python's `json.dumps` writes them, `recurse=False` on every list of a multi-tenant
 * command, `update(body)` sending back what `get` answered (its `uuid` naming the resource), and
 * any answer of 400 or more raised. Its commands: `conferences`, `meetings`, `my_meetings` (with
 * `relations(uuid).authorizations`, `accept`, `reject`), `guests(uuid).meetings(uuid)
 * .authorizations` (no token).
 */
import assert from "node:assert/strict";
import type { TestContext } from "../../helpers.ts";
import { ctiToken, tokenHolding } from "../agentd/fixtures.ts";
import { ROOMS, roomsWorld } from "../../routes/meetingrooms_fixtures.ts";

/** What the client raises for an answer of 400 or more: the status and Wazo's messages. */
class ConfdError extends Error {
  constructor(readonly status: number, readonly messages: unknown) {
    super(`${status} ${JSON.stringify(messages)}`);
  }
}

/** `json.dumps` of a JSON value, as Python writes it (`", "` and `": "`). */
function dumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(dumps).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value).map(([key, item]) =>
      `${JSON.stringify(key)}: ${dumps(item)}`
    );
    return `{${entries.join(", ")}}`;
  }
  return JSON.stringify(value);
}

type Json = Record<string, unknown>;

/** The client's session with `token` (none: a guest's), and the commands the rooms use. */
function wazoConfdClient(ctx: TestContext, token: string | null) {
  const auth: Record<string, string> = token === null ? {} : { "X-Auth-Token": token };
  const READ = { ...auth, Accept: "application/json" };
  const WRITE = { ...READ, "Content-Type": "application/json" };
  const send = async (method: string, path: string, body?: unknown, params?: Json) => {
    const query = params ? `?${new URLSearchParams(params as Record<string, string>)}` : "";
    const response = await ctx.app.request(`/1.1/${path}${query}`, {
      method,
      headers: method === "GET" || method === "DELETE" ? READ : WRITE,
      body: body === undefined ? undefined : dumps(body),
    });
    const text = await response.text();
    if (response.status >= 400) throw new ConfdError(response.status, JSON.parse(text));
    return text ? JSON.parse(text) : null;
  };
  /** `MultiTenantCommand` on `resource`. */
  const crud = (resource: string) => ({
    list: (params: Json = {}) => send("GET", resource, undefined, { recurse: "False", ...params }),
    get: (id: string | number) => send("GET", `${resource}/${id}`),
    create: (body: Json) => send("POST", resource, body),
    update: (body: Json) => {
      const { links: _links, ...rest } = body;
      return send("PUT", `${resource}/${body.uuid ?? body.id}`, rest);
    },
    delete: (id: string | number) => send("DELETE", `${resource}/${id}`),
  });
  return {
    conferences: {
      ...crud("conferences"),
      add_extension: (id: number, extension: number) =>
        send("PUT", `conferences/${id}/extensions/${extension}`),
    },
    extensions: crud("extensions"),
    meetings: crud("meetings"),
    my_meetings: {
      ...crud("users/me/meetings"),
      relations: (meeting: string) => ({
        authorizations: {
          ...crud(`users/me/meetings/${meeting}/authorizations`),
          accept: (id: string) =>
            send("PUT", `users/me/meetings/${meeting}/authorizations/${id}/accept`),
          reject: (id: string) =>
            send("PUT", `users/me/meetings/${meeting}/authorizations/${id}/reject`),
        },
      }),
    },
    guests: (guest: string) => ({
      meetings: (meeting: string) => ({
        authorizations: crud(`guests/${guest}/meetings/${meeting}/authorizations`),
      }),
    }),
  };
}

/** The status the client raised, or "nothing". */
async function raised(run: () => Promise<unknown>): Promise<string> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ConfdError) return `${error.status}`;
    throw error;
  }
  return "nothing";
}

Deno.test("wazo-confd-client: conferences with an extension, meetings, a user's own", async () => {
  const w = await roomsWorld();
  const admin = wazoConfdClient(w.t.ctx, await tokenHolding(w.t.ctx, ["confd.#"]));
  const conference = await admin.conferences.create({ name: "Hall", pin: "77", max_users: 10 });
  const extension = await admin.extensions.create({ exten: "4000", context: "default" });
  await admin.conferences.add_extension(conference.id, extension.id);
  const listed = await admin.conferences.list();
  assert.deepEqual(listed.items.map((c: Json) => c.extensions), [[
    { id: extension.id, exten: "4000", context: "default" },
  ]]);
  const read = await admin.conferences.get(conference.id);
  await admin.conferences.update({ ...read, name: "Great hall" });
  assert.equal((await admin.conferences.get(conference.id)).name, "Great hall");

  const meeting = await admin.meetings.create({ name: "Board", owner_uuids: [w.alice.uuid] });
  assert.equal((await admin.meetings.list({ search: "Board" })).total, 1);
  await admin.meetings.update({ ...await admin.meetings.get(meeting.uuid), persistent: true });
  assert.equal((await admin.meetings.get(meeting.uuid)).persistent, true);

  const alice = wazoConfdClient(w.t.ctx, await ctiToken(w.t.ctx, w.alice));
  const own = await alice.my_meetings.create({ name: "Mine", pin: "2468" });
  assert.deepEqual(
    (await alice.my_meetings.list()).items.map((m: Json) => m.name).sort(),
    ["Board", "Mine"],
  );
  await alice.my_meetings.update({ ...await alice.my_meetings.get(own.uuid), name: "Ours" });
  const changed = await alice.my_meetings.get(own.uuid);
  assert.deepEqual([changed.name, changed.pin, changed.exten], ["Ours", "2468", own.exten]);
  assert.equal(
    (await w.v2.alice.expect<{ displayName: string }>(200, "GET", `${ROOMS}/personal/${own.uuid}`))
      .displayName,
    "Ours",
    "the same room on the 2.0 API",
  );
  const bob = wazoConfdClient(w.t.ctx, await ctiToken(w.t.ctx, w.bob));
  assert.equal(await raised(() => bob.my_meetings.get(own.uuid)), "404");
  assert.equal(await raised(() => bob.my_meetings.delete(own.uuid)), "404");
  assert.equal(await raised(() => alice.my_meetings.create({ name: "x", pin: "pin" })), "400");
  await alice.my_meetings.delete(own.uuid);
  assert.equal(await raised(() => alice.my_meetings.get(own.uuid)), "404");
  await admin.conferences.delete(conference.id);
  assert.equal(await raised(() => admin.conferences.get(conference.id)), "404");
});

Deno.test("wazo-confd-client: a guest asks, the owner lists, accepts and rejects", async () => {
  const w = await roomsWorld();
  const alice = wazoConfdClient(w.t.ctx, await ctiToken(w.t.ctx, w.alice));
  const meeting = await alice.my_meetings.create({
    name: "Demo",
    pin: "13",
    require_authorization: true,
  });
  const guest = wazoConfdClient(w.t.ctx, null);
  const asking = (uuid: string) => guest.guests(uuid).meetings(meeting.uuid).authorizations;
  const first = await asking("0f1e2d3c-4b5a-4697-8877-665544332211").create({ guest_name: "Ann" });
  await w.t.advance(1);
  const second = await asking("1f1e2d3c-4b5a-4697-8877-665544332211").create({ guest_name: "Ben" });
  const authorizations = alice.my_meetings.relations(meeting.uuid).authorizations;
  assert.deepEqual(
    (await authorizations.list()).items.map((a: Json) => [a.guest_name, a.status]),
    [["Ann", "pending"], ["Ben", "pending"]],
  );
  await authorizations.accept(first.uuid);
  await authorizations.reject(second.uuid);
  const ann = await asking("0f1e2d3c-4b5a-4697-8877-665544332211").get(first.uuid);
  assert.deepEqual([ann.status, ann.exten, ann.pin], ["accepted", meeting.exten, "13"]);
  const ben = await authorizations.get(second.uuid);
  assert.deepEqual([ben.status, ben.pin], ["rejected", null]);
  assert.equal(
    await raised(() => asking("1f1e2d3c-4b5a-4697-8877-665544332211").get(first.uuid)),
    "404",
    "a guest reads its own answer only",
  );
  await authorizations.delete(second.uuid);
  assert.equal((await authorizations.list()).total, 1);
});

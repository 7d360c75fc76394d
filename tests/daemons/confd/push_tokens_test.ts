import assert from "node:assert/strict";
import { listContacts } from "../../../lib/store/contacts.ts";
import { pushTokensOfUser } from "../../../lib/store/push_tokens.ts";
import {
  bearer,
  confd,
  ctiUser,
  expectMissingAcl,
  expectNotFound,
  login,
  postJson,
  setup,
} from "../../helpers.ts";

const V2 = "/svc/api/2.0";

Deno.test("GET /1.1/users/{id}/push_tokens", async (t) => {
  const ctx = await setup();
  const api = await confd(ctx);
  const alice = await ctiUser(ctx, "alice");
  const bob = await ctiUser(ctx, "bob");
  const token = await login(ctx, "login", "alice");
  const register = async (platform: string, pushToken: string) => {
    const response = await postJson(
      ctx,
      `${V2}/mobile/push/register/${platform}`,
      { token: pushToken },
      bearer(token),
    );
    assert.equal(response.status, 201, await response.text());
  };

  await t.step("no token registered: an empty list", async () => {
    const response = await api.get(`/users/${alice.id}/push_tokens`);
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { total: 0, items: [] });
  });

  await t.step("the user's tokens, android first, with their registration time", async () => {
    const first = new Date(ctx.clock.now()).toISOString();
    await register("ios", "apns-1");
    await ctx.clock.advance(60_000);
    const later = new Date(ctx.clock.now()).toISOString();
    await register("android", "fcm-1");
    const expected = {
      total: 2,
      items: [
        { platform: "android", token: "fcm-1", registered_at: later },
        { platform: "ios", token: "apns-1", registered_at: first },
      ],
    };
    assert.deepEqual(await (await api.get(`/users/${alice.id}/push_tokens`)).json(), expected);
    // by uuid too
    assert.deepEqual(await (await api.get(`/users/${alice.uuid}/push_tokens`)).json(), expected);
    // another user's list is their own
    assert.deepEqual(await (await api.get(`/users/${bob.id}/push_tokens`)).json(), {
      total: 0,
      items: [],
    });
  });

  await t.step("a replaced token shows the new one and its time", async () => {
    await ctx.clock.advance(1000);
    await register("ios", "apns-2");
    const body = await (await api.get(`/users/${alice.id}/push_tokens`)).json();
    assert.deepEqual(body.items[1], {
      platform: "ios",
      token: "apns-2",
      registered_at: new Date(ctx.clock.now()).toISOString(),
    });
    assert.equal(body.total, 2);
  });

  await t.step("an unknown user: 404 in the daemon's form", async () => {
    await expectNotFound(await api.get("/users/999/push_tokens"), "User", { id: 999 });
    const uuid = "00000000-0000-4000-8000-000000000000";
    await expectNotFound(await api.get(`/users/${uuid}/push_tokens`), "User", { uuid });
  });

  await t.step("the ACL confd.users.{id}.push_tokens.read", async () => {
    const narrow = await confd(ctx, ["confd.users.#.read", "!confd.users.*.push_tokens.read"]);
    await expectMissingAcl(
      await narrow.get(`/users/${alice.id}/push_tokens`),
      `confd.users.${alice.id}.push_tokens.read`,
    );
    const other = await confd(ctx, [`confd.users.${bob.id}.push_tokens.read`]);
    await expectMissingAcl(
      await other.get(`/users/${alice.id}/push_tokens`),
      `confd.users.${alice.id}.push_tokens.read`,
    );
    assert.equal((await other.get(`/users/${bob.id}/push_tokens`)).status, 200);
    const exact = await confd(ctx, [`confd.users.${alice.id}.push_tokens.read`]);
    assert.equal((await exact.get(`/users/${alice.id}/push_tokens`)).status, 200);
  });

  await t.step("a CTI user's token is refused, as everywhere in the daemon", async () => {
    const response = await ctx.app.request(`/1.1/users/${alice.id}/push_tokens`, {
      headers: bearer(token),
    });
    assert.equal(response.status, 403);
    assert.ok(Array.isArray(await response.json()));
  });
});

Deno.test("deleting a user deletes its contacts and push registrations, not another's", async () => {
  const ctx = await setup();
  const api = await confd(ctx);
  const alice = await ctiUser(ctx, "alice");
  await ctiUser(ctx, "bob");
  for (const username of ["alice", "bob"]) {
    const token = await login(ctx, "login", username);
    const contact = await postJson(
      ctx,
      `${V2}/contact/personal`,
      { lastname: `friend of ${username}`, number: "0612345678" },
      bearer(token),
    );
    assert.equal(contact.status, 201, await contact.text());
    const push = await postJson(
      ctx,
      `${V2}/mobile/push/register/android`,
      { token: `fcm-${username}` },
      bearer(token),
    );
    assert.equal(push.status, 201, await push.text());
  }
  const bob = await login(ctx, "login", "bob");

  assert.equal((await api.delete(`/users/${alice.id}`)).status, 204);
  assert.deepEqual(await listContacts(ctx.services.store, alice.id), []);
  assert.deepEqual(await pushTokensOfUser(ctx.services.store, alice.id), []);
  const bobsList = await ctx.app.request(`${V2}/contact/personal`, { headers: bearer(bob) });
  assert.equal((await bobsList.json()).entries.length, 1);
});

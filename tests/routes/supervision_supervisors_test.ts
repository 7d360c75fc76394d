/**
 * Who is a supervisor (docs/supervision.md): a CTI user with a rights profile, read at each
 * request: tokens hold `alias.ctiuser` alone (2.0 login, renewal by `/auth/check`, xivo-auth's
 * `/0.1/token`; single sign-on in oidc_test.ts), `supervision_enabled` grants nothing, a profile
 * given or taken away holds at the next request with the same token, and a token of an earlier
 * version holding `alias.supervisor` gets nothing from it.
 */
import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { expandAcls, isAllowed } from "../../lib/auth/acl.ts";
import { bearer, confd, ctiUser, login, rightsAdmin, setup } from "../helpers.ts";
import { supervisionApi, V2 } from "./supervision_fixtures.ts";

const NO_PROFILE = "the user has no supervisor rights profile";

/** Asserts the 403 of a CTI user without a profile on a route needing `acl`. */
async function expectNoProfile(response: Response, acl: string) {
  assert.equal(response.status, 403);
  assert.deepEqual(await response.json(), {
    error: "Forbidden",
    message: `missing ACL ${acl}; ${NO_PROFILE}`,
  });
}

Deno.test("tokens hold alias.ctiuser alone; the rights profile, read at each request, decides", async (s) => {
  const ctx = await setup();
  const admin = await confd(ctx);
  const give = await rightsAdmin(ctx);
  const sam = await ctiUser(ctx, "sam");
  const acls = (token: string) => decodeJwt(token).acls;
  const queues = (token: string) =>
    supervisionApi(ctx, token).request("GET", "/supervision/queues");
  const agents = (token: string) => ctx.app.request("/agents", { headers: bearer(token) });
  const check = async (token: string) => {
    const response = await ctx.app.request(`${V2}/auth/check`, { headers: bearer(token) });
    assert.equal(response.status, 200);
    return (await response.json()).token as string;
  };
  const xivoToken = async () => {
    const response = await ctx.app.request("/0.1/token", {
      method: "POST",
      headers: { Authorization: `Basic ${btoa("sam:sam-pw")}`, "Content-Type": "application/json" },
      body: JSON.stringify({ backend: "xivo_user" }),
    });
    assert.equal(response.status, 200);
    return (await response.json()).data as { token: string; acls: string[] };
  };

  let token: string;
  await s.step("a new user's phone may be watched, and it supervises nothing", async () => {
    const created = await admin.create("/users", { firstname: "Roger" });
    assert.equal(created.supervision_enabled, true, "Wazo's default");
    token = await login(ctx, "login", "sam");
    assert.deepEqual(acls(token), ["alias.ctiuser"]);
    await expectNoProfile(await queues(token), "svc.rest.supervision.queues.read");
    assert.equal((await agents(token)).status, 401, "the agent daemon's one refusal");
  });

  await s.step("supervision_enabled grants nothing", async () => {
    const response = await admin.put(`/users/${sam.id}`, { supervision_enabled: true });
    assert.equal(response.status, 204);
    await expectNoProfile(await queues(token), "svc.rest.supervision.queues.read");
    assert.deepEqual(acls(await login(ctx, "login", "sam")), ["alias.ctiuser"]);
  });

  await s.step("a profile given: the same token reads at its next request", async () => {
    await give(sam.id, { profile: "admin" });
    assert.equal((await queues(token)).status, 200);
    assert.equal((await agents(token)).status, 200);
    // no token carries it: renewals and xivo-auth's tokens hold alias.ctiuser alone
    assert.deepEqual(acls(await check(token)), ["alias.ctiuser"]);
    const data = await xivoToken();
    assert.deepEqual(acls(data.token), ["alias.ctiuser"]);
    assert.equal(data.acls.includes("svc.rest.supervision.#"), false);
  });

  await s.step("taken away: the next request is refused", async () => {
    await give(sam.id, null);
    await expectNoProfile(await queues(token), "svc.rest.supervision.queues.read");
    assert.equal((await agents(token)).status, 401);
  });
});

Deno.test("a token of an earlier version holding alias.supervisor gets nothing from it", async () => {
  const ctx = await setup();
  const sam = await ctiUser(ctx, "sam");
  const { token } = await ctx.services.tokens.issue({
    userId: String(sam.id),
    login: "sam",
    userType: "cti",
    acls: ["alias.ctiuser", "alias.supervisor"],
  });
  await expectNoProfile(
    await supervisionApi(ctx, token).request("GET", "/supervision/queues"),
    "svc.rest.supervision.queues.read",
  );
  assert.deepEqual(expandAcls(["alias.supervisor"]), ["alias.supervisor"]);
  for (const required of ["svc.rest.supervision.queues.read", "agentd.agents.read"]) {
    assert.equal(isAllowed(["alias.ctiuser", "alias.supervisor"], required, "7"), false, required);
  }
});

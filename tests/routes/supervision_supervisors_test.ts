/**
 * Who is a supervisor (docs/supervision.md): a CTI user whose configuration record has
 * `supervision_enabled` gets `alias.supervisor` in every token issued from then on (2.0 login,
 * renewal by `/auth/check`, xivo-auth's `/0.1/token`; single sign-on in oidc_test.ts), and loses
 * it at the next token once it is off; what the alias grants.
 */
import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import { expandAcls, isAllowed, SUPERVISOR_ACLS } from "../../lib/auth/acl.ts";
import { bearer, confd, ctiUser, expectForbidden, login, setup } from "../helpers.ts";
import { supervisionApi, V2 } from "./supervision_fixtures.ts";

Deno.test("supervision_enabled gives alias.supervisor to the next tokens; off takes it away", async (s) => {
  const ctx = await setup();
  const admin = await confd(ctx);
  const sam = await ctiUser(ctx, "sam");
  const acls = (token: string) => decodeJwt(token).acls;
  const queues = (token: string) =>
    supervisionApi(ctx, token).request("GET", "/supervision/queues");
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
  const setSupervision = async (enabled: boolean) => {
    const response = await admin.put(`/users/${sam.id}`, { supervision_enabled: enabled });
    assert.equal(response.status, 204, await response.text());
  };

  let before: string;
  await s.step("a new user is no supervisor (svc's default): refused", async () => {
    assert.equal(sam.supervision_enabled, false);
    before = await login(ctx, "login", "sam");
    assert.deepEqual(acls(before), ["alias.ctiuser"]);
    await expectForbidden(await queues(before), "svc.rest.supervision.queues.read");
    assert.equal((await xivoToken()).acls.includes("svc.rest.supervision.#"), false);
  });

  let supervisor: string;
  await s.step(
    "supervision on: a token issued before still refused, the next ones hold it",
    async () => {
      await setSupervision(true);
      await expectForbidden(await queues(before), "svc.rest.supervision.queues.read");
      supervisor = await login(ctx, "login", "sam");
      assert.deepEqual(acls(supervisor), ["alias.ctiuser", "alias.supervisor"]);
      assert.equal((await queues(supervisor)).status, 200);
      // the agent daemon's list of every agent, and the CTI channel's subscription to them
      const agents = await ctx.app.request("/agents", { headers: bearer(supervisor) });
      assert.equal(agents.status, 200);
      // the renewal of the old token is a supervisor's too
      assert.deepEqual(acls(await check(before)), ["alias.ctiuser", "alias.supervisor"]);
      // xivo-auth's tokens show the ACLs expanded
      const data = await xivoToken();
      assert.deepEqual(acls(data.token), ["alias.ctiuser", "alias.supervisor"]);
      for (const acl of SUPERVISOR_ACLS) assert.ok(data.acls.includes(acl), acl);
    },
  );

  await s.step("supervision off: the next tokens and renewals no longer hold it", async () => {
    await setSupervision(false);
    const after = await login(ctx, "login", "sam");
    assert.deepEqual(acls(after), ["alias.ctiuser"]);
    await expectForbidden(await queues(after), "svc.rest.supervision.queues.read");
    assert.deepEqual(acls(await check(supervisor)), ["alias.ctiuser"]);
    assert.equal((await xivoToken()).acls.includes("svc.rest.supervision.#"), false);
  });
});

Deno.test("alias.supervisor stands for svc.rest.supervision.# and agentd.agents.read", () => {
  assert.deepEqual(expandAcls(["alias.supervisor"]), [
    "svc.rest.supervision.#",
    "agentd.agents.read",
  ]);
  const granted = ["alias.ctiuser", "alias.supervisor"];
  for (
    const required of [
      "svc.rest.supervision.queues.read",
      "svc.rest.supervision.agents.3.pause.create",
      "svc.rest.supervision.queues.1.agents.3.delete",
      "agentd.agents.read",
      "svc.rest.contact.personal.read",
    ]
  ) assert.equal(isAllowed(granted, required, "7"), true, required);
  for (
    const required of [
      "agentd.agents.by-id.3.pause.create",
      "svc.rest.metrics.read",
      "confd.users.read",
    ]
  ) assert.equal(isAllowed(granted, required, "7"), false, required);
  assert.equal(isAllowed(["alias.ctiuser"], "svc.rest.supervision.queues.read", "7"), false);
});

/**
 * The calling user's own agent, at `/users/me/agents` (docs/agentd.md): which agent is the user's,
 * its status, login on one of the user's lines, logoff, pause and unpause, the ACLs (a CTI user's
 * `alias.ctiuser` grants them) and every error.
 */
import assert from "node:assert/strict";
import type { AgentStatus } from "../../../lib/agent_control.ts";
import { linkUserAgent } from "../../../lib/store/user_agents.ts";
import { findUserByUsername, type UserRecord } from "../../../lib/store/users.ts";
import { bearer, login } from "../../helpers.ts";
import { agentSummary, phoneUser } from "../../lib/platform/fixtures.ts";
import { callCenter, ctiToken, expectAgentdError, loggedOut, tokenHolding } from "./fixtures.ts";

type CallCenter = Awaited<ReturnType<typeof callCenter>>;

/** Calls `/users/me/agents…` with `token`; a body that is a string is sent as is. */
function meClient(cc: CallCenter, token: string) {
  const call = (method: string, path: string, body?: unknown) =>
    Promise.resolve(cc.t.ctx.app.request(`/users/me/agents${path}`, {
      method,
      headers: body === undefined
        ? bearer(token)
        : { ...bearer(token), "Content-Type": "application/json" },
      body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    }));
  return {
    call,
    async status(): Promise<AgentStatus> {
      const response = await call("GET", "");
      const text = await response.text();
      assert.equal(response.status, 200, text);
      return JSON.parse(text);
    },
    async command(path: string, body?: unknown): Promise<void> {
      const response = await call("POST", path, body);
      const text = await response.text();
      assert.equal(response.status, 204, `${path}: ${text}`);
      assert.equal(text, "");
    },
  };
}

const user = async (cc: CallCenter, username: string): Promise<UserRecord> =>
  (await findUserByUsername(cc.t.ctx.services.store, username))!;

/** The call center with bob linked to agent 8001, and a client for bob. */
async function bobsAgent() {
  const cc = await callCenter();
  const bob = await user(cc, "bob");
  await linkUserAgent(cc.t.ctx.services.store, bob.id, cc.agent.id);
  return { ...cc, bob, me: meClient(cc, await ctiToken(cc.t.ctx, bob)) };
}

Deno.test("the user's agent: the agent linked to the user, else the one on the user's lines", async (t) => {
  const cc = await callCenter();
  const { api, agent, queue, origin } = cc;
  const [alice, bob] = [await user(cc, "alice"), await user(cc, "bob")];
  const aliceMe = meClient(cc, await ctiToken(cc.t.ctx, alice));
  const bobMe = meClient(cc, await ctiToken(cc.t.ctx, bob));

  await t.step("none: 404 no such agent", async () => {
    await expectAgentdError(await aliceMe.call("GET", ""), 404, "no such agent");
  });
  await t.step("linked: its status, logged in or not", async () => {
    await linkUserAgent(cc.t.ctx.services.store, bob.id, agent.id);
    assert.deepEqual(await bobMe.status(), loggedOut(agent, queue, origin));
  });
  await t.step("not linked: the agent logged on one of the user's lines", async () => {
    await api.command("/by-number/8001/login", { extension: "1001", context: "default" });
    assert.deepEqual(await aliceMe.status(), await api.status(`/by-id/${agent.id}`));
    assert.equal((await bobMe.status()).extension, "1001"); // bob's link still names 8001
    await api.command("/by-number/8001/logoff");
    await expectAgentdError(await aliceMe.call("GET", ""), 404, "no such agent");
  });
  await t.step("a linked agent that was deleted: no link", async () => {
    const gone = await cc.t.api.create("/agents", { number: "8009" });
    await linkUserAgent(cc.t.ctx.services.store, alice.id, gone.id);
    assert.equal((await aliceMe.status()).number, "8009");
    assert.equal((await cc.t.api.delete(`/agents/${gone.id}`)).status, 204);
    await expectAgentdError(await aliceMe.call("GET", ""), 404, "no such agent");
  });
  await t.step("a token that is no CTI user's, or a user deleted since: no agent", async () => {
    const ws = meClient(cc, await tokenHolding(cc.t.ctx, ["agentd.#"]));
    await expectAgentdError(await ws.call("GET", ""), 404, "no such agent");
    const { id } = await cc.t.api.create("/users", { firstname: "Carol", username: "carol" });
    const carol = await user(cc, "carol");
    assert.equal(carol.id, id);
    await linkUserAgent(cc.t.ctx.services.store, carol.id, agent.id);
    const carolMe = meClient(cc, await ctiToken(cc.t.ctx, carol));
    assert.equal((await carolMe.status()).id, agent.id);
    assert.equal((await cc.t.api.delete(`/users/${carol.id}`)).status, 204);
    await expectAgentdError(await carolMe.call("GET", ""), 404, "no such agent");
  });
});

Deno.test("login on a line of the user, logoff, pause, unpause: 204", async () => {
  const { t, bob, me } = await bobsAgent();
  await me.command("/login", { line_id: bob.line_ids[0] });
  let status = await me.status();
  assert.deepEqual([status.logged, status.extension, status.context, status.state], [
    true,
    "1002",
    "default",
    "AgentReady",
  ]);
  await me.command("/pause", { reason: "lunch" });
  status = await me.status();
  assert.deepEqual([status.state, status.paused, status.paused_reason], [
    "AgentOnPause",
    true,
    "lunch",
  ]);
  await me.command("/unpause", "ignored");
  await me.command("/pause", {});
  assert.equal((await me.status()).paused_reason, null);
  await me.command("/unpause");
  await me.command("/logoff", "ignored");
  assert.equal((await me.status()).logged, false);
  assert.deepEqual(agentSummary(t.take()), [
    ["AgentReady", "8001", "1002", "bob", [1]],
    ["AgentOnPause", "8001", "1002", "bob", [1]],
    ["AgentReady", "8001", "1002", "bob", [1]],
    ["AgentOnPause", "8001", "1002", "bob", [1]],
    ["AgentReady", "8001", "1002", "bob", [1]],
    ["AgentLoggedOut", "8001", "1002", "bob", [1]],
  ]);
});

Deno.test("login: every error, checked in order", async (t) => {
  const cc = await bobsAgent();
  const { bob, me, api, t: sim } = cc;
  const bobsLine = bob.line_ids[0]!;
  await t.step("400 invalid fields: line_id", async () => {
    for (const body of [undefined, "", "{", "[]", {}, { line_id: "1" }, { line_id: 1.5 }]) {
      await expectAgentdError(
        await me.call("POST", "/login", body),
        400,
        "invalid fields: line_id",
      );
    }
  });
  await t.step("404 no such agent (the body first)", async () => {
    const alice = meClient(cc, await ctiToken(sim.ctx, await user(cc, "alice")));
    await expectAgentdError(await alice.call("POST", "/login", {}), 400, "invalid fields: line_id");
    const response = await alice.call("POST", "/login", { line_id: bobsLine });
    await expectAgentdError(response, 404, "no such agent");
  });
  await t.step("400 no such line: not one of the user's lines", async () => {
    const alicesLine = (await user(cc, "alice")).line_ids[0];
    for (const lineId of [alicesLine, 999, -1]) {
      const response = await me.call("POST", "/login", { line_id: lineId });
      await expectAgentdError(response, 400, "no such line");
    }
  });
  await t.step(
    "404 no such extension and context: a line of the user without extension",
    async () => {
      const bare = await sim.api.create("/lines", { context: "default" });
      assert.equal((await sim.api.put(`/users/${bob.id}/lines/${bare.id}`)).status, 204);
      const response = await me.call("POST", "/login", { line_id: bare.id });
      await expectAgentdError(response, 404, "no such extension and context");
    },
  );
  await t.step("409 extension and context already in use", async () => {
    await sim.api.create("/agents", { number: "8002" });
    await api.command("/by-number/8002/login", { extension: "1002", context: "default" });
    const response = await me.call("POST", "/login", { line_id: bobsLine });
    await expectAgentdError(response, 409, "extension and context already in use");
    await api.command("/by-number/8002/logoff");
  });
  await t.step("409 already logged (before the line is checked)", async () => {
    await me.command("/login", { line_id: bobsLine });
    for (const lineId of [bobsLine, 999]) {
      const response = await me.call("POST", "/login", { line_id: lineId });
      await expectAgentdError(response, 409, "already logged");
    }
  });
});

Deno.test("logoff, pause, unpause: 404 no such agent, 409 not logged in, 400 on pause's body", async () => {
  const cc = await bobsAgent();
  const alice = meClient(cc, await ctiToken(cc.t.ctx, await user(cc, "alice")));
  for (const path of ["/logoff", "/pause", "/unpause"]) {
    await expectAgentdError(await alice.call("POST", path), 404, "no such agent");
    await expectAgentdError(await cc.me.call("POST", path), 409, "not logged in");
  }
  for (const body of ["{", "[]", { reason: 5 }]) {
    const response = await cc.me.call("POST", "/pause", body);
    await expectAgentdError(response, 400, "invalid fields: reason");
  }
});

/** Every route below `/users/me/agents` with its ACL and a body it takes. */
const meRoutes: [method: string, path: string, acl: string, body?: unknown][] = [
  ["GET", "", "agentd.users.me.agents.read"],
  ["POST", "/login", "agentd.users.me.agents.login.create", { line_id: 0 }],
  ["POST", "/pause", "agentd.users.me.agents.pause.create", {}],
  ["POST", "/unpause", "agentd.users.me.agents.unpause.create"],
  ["POST", "/logoff", "agentd.users.me.agents.logoff.create"],
];

Deno.test("ACLs: a CTI user's login grants every route; each refuses a token without its ACL", async (t) => {
  const cc = await bobsAgent();
  const { bob, t: sim } = cc;
  const body = (path: string, given: unknown) =>
    path === "/login" ? { line_id: bob.line_ids[0] } : given;
  await t.step("a CTI user logged in through 2.0: 2xx on each, in turn", async () => {
    const dave = await phoneUser(sim, "dave", "1004", { password: "dave-pw" });
    await linkUserAgent(sim.ctx.services.store, dave.id, cc.agent.id);
    const daveMe = meClient(cc, await login(sim.ctx, "login", "dave"));
    for (const [method, path, , given] of meRoutes) {
      const response = await daveMe.call(
        method,
        path,
        path === "/login"
          ? {
            line_id: dave.line_ids[0],
          }
          : given,
      );
      assert.ok(response.status < 300, `${method} ${path}: ${await response.text()}`);
    }
  });
  for (const [method, path, acl, given] of meRoutes) {
    await t.step(`${method} /users/me/agents${path} needs ${acl}`, async () => {
      const refused = [
        {},
        bearer("not.a.token"),
        bearer(await tokenHolding(sim.ctx, [])),
        bearer(await tokenHolding(sim.ctx, ["agentd.agents.#", "svc.rest.#"])),
        bearer(await tokenHolding(sim.ctx, ["alias.ctiuser", `!${acl}`], "cti")),
        bearer(await tokenHolding(sim.ctx, ["alias.ctiuser", "!agentd.users.me.#"], "cti")),
      ];
      for (const headers of refused) {
        const response = await sim.ctx.app.request(`/users/me/agents${path}`, {
          method,
          headers: { ...headers, "Content-Type": "application/json" },
          body: given === undefined ? undefined : JSON.stringify(body(path, given)),
        });
        await expectAgentdError(response, 401, "invalid token or unauthorized");
      }
      // the ACL alone lets the request through the guard (a web service user has no agent)
      const holder = meClient(cc, await tokenHolding(sim.ctx, [acl]));
      const response = await holder.call(method, path, body(path, given));
      await expectAgentdError(response, 404, "no such agent");
    });
  }
  await t.step("alias.ctiuser grants none of the /agents routes", async () => {
    const response = await sim.ctx.app.request("/agents/by-id/1", {
      headers: bearer(await ctiToken(sim.ctx, bob)),
    });
    await expectAgentdError(response, 401, "invalid token or unauthorized");
  });
});

Deno.test("paths at the root: unknown ones below /users/me/agents in the daemon's form, others not", async () => {
  const { me, t } = await bobsAgent();
  await expectAgentdError(
    await me.call("DELETE", ""),
    405,
    "DELETE is not allowed on /users/me/agents (allowed: GET, HEAD)",
  );
  await expectAgentdError(
    await me.call("GET", "/login"),
    405,
    "GET is not allowed on /users/me/agents/login (allowed: POST)",
  );
  await expectAgentdError(await me.call("POST", "/x"), 404, "no route for POST /users/me/agents/x");
  // paths beside it are the app's
  for (const path of ["/users/me", "/users/me/agentsx", "/statusx"]) {
    const response = await t.ctx.app.request(path);
    assert.equal(response.status, 404);
    assert.equal((await response.json()).error, "NotFound");
  }
});

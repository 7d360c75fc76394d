/**
 * `/1.1/users/{id}/agents`: a user's own agent, associated and dissociated as wazo-confd-client's
 * `users(user).add_agent(agent)` / `remove_agent()` do, and then driven through the agent daemon's
 * `/users/me/agents` with the user's own token.
 */
import assert from "node:assert/strict";
import {
  bearer,
  confd,
  expectConfdError,
  expectMissingAcl,
  expectNotFound,
  login,
  setupConfd,
} from "../../helpers.ts";

Deno.test("/1.1/users/{id}/agents: associate, refuse a second, dissociate", async (t) => {
  const { ctx, api } = await setupConfd();
  const user = await api.create("/users", {
    firstname: "Alice",
    username: "alice",
    password: "alice-pw",
  });
  const agent = await api.create("/agents", { number: "8001" });
  const other = await api.create("/agents", { number: "8002" });

  await t.step("PUT associates: the user's own agent for /users/me/agents", async () => {
    const response = await api.put(`/users/${user.id}/agents/${agent.id}`);
    assert.equal(response.status, 204, await response.text());
    const token = await login(ctx, "login", "alice");
    const mine = await ctx.app.request("/users/me/agents", { headers: bearer(token) });
    assert.equal(mine.status, 200);
    assert.equal((await mine.json()).number, "8001");
    // by uuid too, and again with the same agent: nothing to refuse
    const again = await api.put(`/users/${user.uuid}/agents/${agent.id}`);
    assert.equal(again.status, 204);
  });

  await t.step("another agent while one is associated: 400 in the daemon's form", async () => {
    await expectConfdError(
      await api.put(`/users/${user.id}/agents/${other.id}`),
      400,
      `Resource Error - User is already associated to Agent ('user_id': ${user.id}, 'agent': ${agent.id})`,
    );
  });

  await t.step("DELETE dissociates (204, also when there is none)", async () => {
    assert.equal((await api.delete(`/users/${user.id}/agents`)).status, 204);
    assert.equal((await api.delete(`/users/${user.id}/agents`)).status, 204);
    assert.equal((await api.put(`/users/${user.id}/agents/${other.id}`)).status, 204);
  });

  await t.step("unknown users and agents: 404", async () => {
    await expectNotFound(await api.put(`/users/999/agents/${agent.id}`), "User", { id: 999 });
    await expectNotFound(await api.delete("/users/999/agents"), "User", { id: 999 });
    await expectNotFound(await api.put(`/users/${user.id}/agents/999`), "Agent", { id: 999 });
    await expectNotFound(await api.put(`/users/${user.id}/agents/abc`), "Agent", { id: "abc" });
  });

  await t.step("an associated agent deleted since is no association", async () => {
    const gone = await api.create("/agents", { number: "8009" });
    const bob = await api.create("/users", { firstname: "Bob" });
    assert.equal((await api.put(`/users/${bob.id}/agents/${gone.id}`)).status, 204);
    assert.equal((await api.delete(`/agents/${gone.id}`)).status, 204);
    assert.equal((await api.put(`/users/${bob.id}/agents/${agent.id}`)).status, 204);
  });

  await t.step("the ACLs confd.users.{id}.agents.{agent_id}.update and .delete", async () => {
    const narrow = await confd(ctx, ["confd.users.#.read"]);
    await expectMissingAcl(
      await narrow.put(`/users/${user.id}/agents/${agent.id}`),
      `confd.users.${user.id}.agents.${agent.id}.update`,
    );
    await expectMissingAcl(
      await narrow.delete(`/users/${user.id}/agents`),
      `confd.users.${user.id}.agents.delete`,
    );
  });
});

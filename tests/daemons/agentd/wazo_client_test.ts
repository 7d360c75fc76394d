/**
 * The agent daemon as wazo-agentd-client (Python) uses it, its base URL svc's root: each request
 * built as the client builds it (its session's headers, `Accept: application/json`, a JSON body
 * written as Python's `json.dumps` writes it with its `Content-Type`, none without a body), and
 * each answer read as the client reads it: a status's fields by key (a missing one would be its
 * `KeyError`), an error's `error` on any 4xx or 5xx (raised as its `AgentdClientError`), and the
 * status code it expects. The XiVO-era client (`xivo_agentd_client`) reads a subset of these.
 */
import assert from "node:assert/strict";
import { DEFAULT_TENANT_UUID } from "../../../lib/agent_control.ts";
import { serverUuid } from "../../../lib/store/server_identity.ts";
import { linkUserAgent } from "../../../lib/store/user_agents.ts";
import { findUserByUsername } from "../../../lib/store/users.ts";
import { login, type TestContext, webServiceUser } from "../../helpers.ts";
import { phoneUser } from "../../lib/platform/fixtures.ts";
import { callCenter } from "./fixtures.ts";

/** The client's `AgentdClientError`: the `error` of a 4xx or 5xx answer. */
class AgentdClientError extends Error {
  constructor(readonly error: string) {
    super(error);
  }
}

/** The client's `requests` raising on an unexpected status (`raise_for_status`). */
class HttpError extends Error {}

/** `json.dumps` of a flat object, as Python writes it: `{"key": value, "other": value}`. */
const dumps = (obj: Record<string, unknown>) =>
  `{${Object.entries(obj).map(([key, value]) => `"${key}": ${JSON.stringify(value)}`).join(", ")}}`;

/** The client's `_AgentStatus.new_from_dict`: `d['…']` for each field, `d.get('queues', [])`. */
function agentStatus(d: Record<string, unknown>) {
  const key = (name: string) => {
    if (!(name in d)) throw new Error(`KeyError: '${name}'`);
    return d[name];
  };
  return {
    id: key("id"),
    number: key("number"),
    origin_uuid: key("origin_uuid"),
    logged: key("logged"),
    paused: key("paused"),
    extension: key("extension"),
    context: key("context"),
    state_interface: key("state_interface"),
    tenant_uuid: key("tenant_uuid"),
    queues: d.queues ?? [],
  };
}

/**
 * The client (`AgentdClient(host, port, prefix=None, version='')`, so `url()` is the server's
 * root) with `token`, and `tenant` as its `tenant_uuid` when given.
 */
function wazoAgentdClient(ctx: TestContext, token: string, tenant?: string) {
  // BaseClient.session()
  const session: Record<string, string> = {
    "Connection": "close",
    "X-Auth-Token": token,
    "User-agent": "wazo_client_test",
    ...tenant ? { "Wazo-Tenant": tenant } : {},
  };
  const agents = "/agents"; // RESTCommand.base_url: url('agents')
  const send = (method: string, url: string, obj?: Record<string, unknown>) => {
    const headers: Record<string, string> = { ...session, Accept: "application/json" };
    if (obj !== undefined) headers["Content-Type"] = "application/json";
    const body = obj === undefined ? undefined : dumps(obj);
    return Promise.resolve(ctx.app.request(url, { method, headers, body }));
  };
  /** ResponseProcessor._raise_if_not_success */
  const raiseIfNotSuccess = async (resp: Response, expected?: number) => {
    const kind = Math.floor(resp.status / 100);
    if (kind === 4 || kind === 5) {
      let error: unknown;
      try {
        error = (await resp.clone().json()).error;
      } catch {
        throw new HttpError(`${resp.status}`);
      }
      if (error === undefined) throw new HttpError(`${resp.status}`);
      throw new AgentdClientError(String(error));
    }
    if (expected !== undefined ? resp.status !== expected : kind !== 2) {
      throw new HttpError(`${resp.status}`);
    }
  };
  const generic = async (resp: Promise<Response>) => {
    const response = await resp;
    await raiseIfNotSuccess(response);
    await response.body?.cancel();
  };
  const status = async (resp: Promise<Response>) => {
    const response = await resp;
    await raiseIfNotSuccess(response, 200);
    return agentStatus(await response.json());
  };
  const statusAll = async (resp: Promise<Response>) => {
    const response = await resp;
    await raiseIfNotSuccess(response, 200);
    return ((await response.json()) as Record<string, unknown>[]).map(agentStatus);
  };
  return {
    add_agent_to_queue: (agentId: number, queueId: number) =>
      generic(send("POST", `${agents}/by-id/${agentId}/add`, { queue_id: queueId })),
    remove_agent_from_queue: (agentId: number, queueId: number) =>
      generic(send("POST", `${agents}/by-id/${agentId}/remove`, { queue_id: queueId })),
    login_agent: (agentId: number, extension: string, context: string) =>
      generic(send("POST", `${agents}/by-id/${agentId}/login`, { extension, context })),
    login_agent_by_number: (number: string, extension: string, context: string) =>
      generic(send("POST", `${agents}/by-number/${number}/login`, { extension, context })),
    login_user_agent: (lineId: number) =>
      generic(send("POST", "/users/me/agents/login", { line_id: lineId })),
    logoff_agent: (agentId: number) => generic(send("POST", `${agents}/by-id/${agentId}/logoff`)),
    logoff_agent_by_number: (number: string) =>
      generic(send("POST", `${agents}/by-number/${number}/logoff`)),
    logoff_user_agent: () => generic(send("POST", "/users/me/agents/logoff")),
    logoff_all_agents: () => generic(send("POST", `${agents}/logoff`)),
    relog_all_agents: (recurse = false) =>
      generic(send("POST", `${agents}/relog${recurse ? "?recurse=True" : ""}`)),
    // the client sends `{}` unless given a reason
    pause_agent_by_number: (number: string) =>
      generic(send("POST", `${agents}/by-number/${number}/pause`, {})),
    pause_user_agent: () => generic(send("POST", "/users/me/agents/pause", {})),
    unpause_agent_by_number: (number: string) =>
      generic(send("POST", `${agents}/by-number/${number}/unpause`)),
    unpause_user_agent: () => generic(send("POST", "/users/me/agents/unpause")),
    get_agent_status: (agentId: number) => status(send("GET", `${agents}/by-id/${agentId}`)),
    get_agent_status_by_number: (number: string) =>
      status(send("GET", `${agents}/by-number/${number}`)),
    get_user_agent_status: () => status(send("GET", "/users/me/agents")),
    get_agent_statuses: () => statusAll(send("GET", agents)),
    /** StatusCommand: `GET {url}/status`, its JSON when 200. */
    async status() {
      const response = await send("GET", "/status");
      if (response.status !== 200) await raiseIfNotSuccess(response);
      return await response.json();
    },
  };
}

/** The client's error.py constants. */
const ERRORS = {
  NO_SUCH_AGENT: "no such agent",
  NO_SUCH_LINE: "no such line",
  NO_SUCH_QUEUE: "no such queue",
  ALREADY_LOGGED: "already logged",
  NOT_LOGGED: "not logged in",
  ALREADY_IN_USE: "extension and context already in use",
  ALREADY_IN_QUEUE: "agent already in queue",
  NOT_IN_QUEUE: "agent not in queue",
  NO_SUCH_EXTEN: "no such extension and context",
  UNAUTHORIZED: "invalid token or unauthorized",
};

const raises = (call: Promise<unknown>, error: string) =>
  assert.rejects(call, (thrown) => thrown instanceof AgentdClientError && thrown.error === error);

Deno.test("wazo-agentd-client against svc: every call it makes, every error it names", async (t) => {
  const { t: sim, agent, queue } = await callCenter();
  const ctx = sim.ctx;
  const support = await sim.api.create("/queues", { name: "support", number: "3001" });
  const ws = await webServiceUser(ctx, ["agentd.#"]);
  const client = wazoAgentdClient(ctx, await login(ctx, "webservice", ws.login), "some-tenant");
  const origin = await serverUuid(ctx.services.store);

  await t.step(
    "get_agent_statuses, get_agent_status(_by_number): every field it reads",
    async () => {
      const [listed] = await client.get_agent_statuses();
      const one = await client.get_agent_status(agent.id);
      assert.deepEqual(listed, one);
      assert.deepEqual(await client.get_agent_status_by_number("8001"), one);
      assert.deepEqual(one, {
        id: agent.id,
        number: "8001",
        origin_uuid: origin,
        logged: false,
        paused: false,
        extension: null,
        context: null,
        state_interface: null,
        tenant_uuid: DEFAULT_TENANT_UUID,
        queues: [{ id: queue.id, name: "sales" }],
      });
      assert.match(origin, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    },
  );
  await t.step("login_agent, pause/unpause_agent_by_number, logoff_agent(_by_number)", async () => {
    await client.login_agent(agent.id, "1001", "default");
    let status = await client.get_agent_status(agent.id);
    assert.deepEqual([status.logged, status.extension, status.context], [true, "1001", "default"]);
    assert.match(String(status.state_interface), /^SIP\/\w+$/);
    await client.pause_agent_by_number("8001");
    assert.equal((await client.get_agent_status_by_number("8001")).paused, true);
    await client.unpause_agent_by_number("8001");
    assert.equal((await client.get_agent_status_by_number("8001")).paused, false);
    await client.logoff_agent(agent.id);
    await client.login_agent_by_number("8001", "1001", "default");
    await client.logoff_agent_by_number("8001");
    status = await client.get_agent_status(agent.id);
    assert.equal(status.logged, false);
  });
  await t.step("add_agent_to_queue, remove_agent_from_queue", async () => {
    await client.add_agent_to_queue(agent.id, support.id);
    assert.deepEqual((await client.get_agent_status(agent.id)).queues, [
      { id: queue.id, name: "sales" },
      { id: support.id, name: "support" },
    ]);
    await client.remove_agent_from_queue(agent.id, support.id);
    assert.deepEqual((await client.get_agent_status(agent.id)).queues, [
      { id: queue.id, name: "sales" },
    ]);
  });
  await t.step("logoff_all_agents, relog_all_agents", async () => {
    await client.login_agent(agent.id, "1002", "default");
    await client.relog_all_agents(true);
    assert.equal((await client.get_agent_status(agent.id)).extension, "1002");
    await client.logoff_all_agents();
    assert.equal((await client.get_agent_status(agent.id)).logged, false);
  });
  await t.step("the errors it names", async () => {
    await raises(client.get_agent_status(999), ERRORS.NO_SUCH_AGENT);
    await raises(client.add_agent_to_queue(999, queue.id), ERRORS.NO_SUCH_AGENT);
    await raises(client.add_agent_to_queue(agent.id, 999), ERRORS.NO_SUCH_QUEUE);
    await raises(client.add_agent_to_queue(agent.id, queue.id), ERRORS.ALREADY_IN_QUEUE);
    await raises(client.remove_agent_from_queue(agent.id, support.id), ERRORS.NOT_IN_QUEUE);
    await raises(client.login_agent(agent.id, "9999", "default"), ERRORS.NO_SUCH_EXTEN);
    await raises(client.logoff_agent(agent.id), ERRORS.NOT_LOGGED);
    await raises(client.pause_agent_by_number("8001"), ERRORS.NOT_LOGGED);
    await client.login_agent(agent.id, "1001", "default");
    await raises(client.login_agent_by_number("8001", "1002", "default"), ERRORS.ALREADY_LOGGED);
    const other = await sim.api.create("/agents", { number: "8002" });
    await raises(client.login_agent(other.id, "1001", "default"), ERRORS.ALREADY_IN_USE);
    await client.logoff_all_agents();
    const stranger = wazoAgentdClient(ctx, "not-a-token");
    await raises(stranger.get_agent_statuses(), ERRORS.UNAUTHORIZED);
    await raises(stranger.status(), ERRORS.UNAUTHORIZED);
  });
  await t.step("status(): the service's components", async () => {
    assert.deepEqual(await client.status(), {
      store: { status: "ok" },
      platform: { status: "ok" },
    });
  });
  await t.step("the user's agent, with a CTI user's token from a login", async () => {
    const dave = await phoneUser(sim, "dave", "1004", { password: "dave-pw" });
    const me = wazoAgentdClient(ctx, await login(ctx, "login", "dave"));
    await raises(me.get_user_agent_status(), ERRORS.NO_SUCH_AGENT);
    await linkUserAgent(ctx.services.store, dave.id, agent.id);
    assert.deepEqual(await me.get_user_agent_status(), await client.get_agent_status(agent.id));
    const alice = await findUserByUsername(ctx.services.store, "alice");
    await raises(me.login_user_agent(alice!.line_ids[0]!), ERRORS.NO_SUCH_LINE);
    await me.login_user_agent(dave.line_ids[0]!);
    await raises(me.login_user_agent(dave.line_ids[0]!), ERRORS.ALREADY_LOGGED);
    assert.equal((await me.get_user_agent_status()).extension, "1004");
    await me.pause_user_agent();
    assert.equal((await me.get_user_agent_status()).paused, true);
    await me.unpause_user_agent();
    await me.logoff_user_agent();
    assert.equal((await me.get_user_agent_status()).logged, false);
    await raises(me.logoff_user_agent(), ERRORS.NOT_LOGGED);
    // a CTI user's token reaches none of the other routes
    await raises(me.get_agent_statuses(), ERRORS.UNAUTHORIZED);
  });
});

/**
 * `GET /agents` keeps its answer while nothing it shows changed (`lib/agent_list.ts`): what another
 * process sharing the store writes, and what the platform does, shows in the next answer, which is
 * always what each agent's own status says.
 */
import assert from "node:assert/strict";
import type { AgentStatus } from "../../../lib/agent_control.ts";
import { createAgent } from "../../../lib/store/agents.ts";
import { sipEndpoints } from "../../../lib/store/endpoints.ts";
import { getLine } from "../../../lib/store/lines.ts";
import { queues, withMember } from "../../../lib/store/queues.ts";
import { transact } from "../../../lib/store/records.ts";
import { serverUuid } from "../../../lib/store/server_identity.ts";
import { Store } from "../../../lib/store/store.ts";
import { bearer } from "../../helpers.ts";
import { agentAndQueue, phoneUser, simSetup } from "../../lib/platform/fixtures.ts";
import { agentdClient, loggedOut, tokenHolding } from "./fixtures.ts";

Deno.test("GET /agents: what another process sharing the store writes shows in the next answer", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-agentd-" });
  const t = await simSetup({ SVC_KV: `${dir}/svc.kv` });
  const other = await Store.open(`${dir}/svc.kv`); // a second svc process on the same store
  try {
    const { store } = t.ctx.services;
    const alice = await phoneUser(t, "alice", "1001");
    const { agent, queue } = await agentAndQueue(t, "8001", { name: "sales", number: "3000" });
    const api = agentdClient(t.ctx, bearer(await tokenHolding(t.ctx, ["agentd.#"])));
    const origin = await serverUuid(store);
    /** The list, checked against each agent's own status (read one by one, without the list). */
    const list = async () => {
      const statuses = await api.status<AgentStatus[]>("");
      const each = await Promise.all(statuses.map(({ id }) => api.status(`/by-id/${id}`)));
      assert.deepEqual(statuses, each);
      return statuses;
    };
    const idle = loggedOut(agent, queue, origin);
    assert.deepEqual(await list(), [idle]);

    await api.command(`/by-id/${agent.id}/login`, { extension: "1001", context: "default" });
    const sipId = (await getLine(store, alice.line_ids[0]!))!.endpoint!.id;
    const sip = (await sipEndpoints.get(store, sipId))!;
    const ready: AgentStatus = {
      ...idle,
      logged: true,
      extension: "1001",
      context: "default",
      state_interface: `SIP/${sip.username}`,
      state: "AgentReady",
    };
    assert.deepEqual(await list(), [ready]);
    assert.deepEqual(await list(), [ready]); // nothing changed: the same answer

    // the other process adds an agent, then puts it in the queue
    const second = await createAgent(other, { number: "8002" });
    const secondIdle: AgentStatus = { ...idle, id: second.id, number: "8002", queues: [] };
    assert.deepEqual(await list(), [ready, secondIdle]);
    await transact(other, async (tx) => {
      tx.put(queues, withMember((await tx.get(queues, queue.id))!, second.id, 1));
    });
    const secondInQueue = { ...secondIdle, queues: [{ id: queue.id, name: "sales" }] };
    assert.deepEqual(await list(), [ready, secondInQueue]);

    // the other process renames the SIP account of alice's line: the login's interface follows
    await transact(other, async (tx) => {
      tx.put(sipEndpoints, { ...(await tx.get(sipEndpoints, sipId))!, username: "renamed" });
    });
    const renamed = { ...ready, state_interface: "SIP/renamed" };
    assert.deepEqual(await list(), [renamed, secondInQueue]);

    // the platform alone changes (no store write): a pause, its reason, the logoff
    await api.command("/by-number/8001/pause", { reason: "lunch" });
    const paused = { ...renamed, paused: true, paused_reason: "lunch", state: "AgentOnPause" };
    assert.deepEqual(await list(), [paused, secondInQueue]);
    await api.command("/by-number/8001/pause", { reason: "meeting" });
    assert.deepEqual(await list(), [{ ...paused, paused_reason: "meeting" }, secondInQueue]);
    await api.command("/by-number/8001/logoff");
    assert.deepEqual(await list(), [idle, secondInQueue]);
  } finally {
    other.close();
    t.ctx.services.store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The counters live in the store (docs/supervision.md): two sets of services on one store file
 * answer the same counts, whichever counted them, and a restart keeps them; concurrent writers
 * lose no update (atomic sums); a backup and restore keeps them.
 */
import assert from "node:assert/strict";
import { agentAndQueue, phoneUser } from "../lib/platform/fixtures.ts";
import { confd, login, setup, type TestContext, webServiceUser } from "../helpers.ts";
import { addCounters, getAgentMark, markAgent, readCounters } from "../../lib/store/supervision.ts";
import { backupStore, restoreStore } from "../../lib/store/backup.ts";
import { Store } from "../../lib/store/store.ts";
import { LONG_TTL, supervisionApi } from "./supervision_fixtures.ts";

async function closeAll(ctx: TestContext) {
  ctx.services.feed.close();
  await ctx.services.platform.close();
  await ctx.services.events.close();
  ctx.services.store.close();
}

async function reader(ctx: TestContext) {
  const ws = await webServiceUser(ctx, ["svc.rest.supervision.#"], `reader-${crypto.randomUUID()}`);
  return supervisionApi(ctx, await login(ctx, "webservice", ws.login));
}

Deno.test("two processes on one store see the same counters; a restart keeps them", async (s) => {
  const dir = await Deno.makeTempDir({ prefix: "svc-supervision-" });
  const env = { ...LONG_TTL, SVC_KV: `${dir}/svc.kv` };
  try {
    const a = await setup(env);
    const b = await setup(env);
    const t = { ctx: a, api: await confd(a) };
    await phoneUser(t, "alice", "1001");
    const bob = await phoneUser(t, "bob", "1002");
    const { agent } = await agentAndQueue(t, "8001", { name: "sales", number: "3000" });
    const sim = a.services.sim!;
    await sim.setPolicy("1001", { policy: "manual" });
    await sim.setPolicy("1002", { policy: "manual" });
    // a's simulator runs the calls: a counts them
    await sim.agentLogin(agent, "1001", "default");
    await sim.dialNumber(bob, "3000", {});
    await sim.act("1002", "answer");
    await a.clock.advance(3000);
    await b.clock.advance(3000);
    await sim.act("1001", "answer");
    await sim.act("1002", "hangup");
    const viaA = await reader(a);
    const viaB = await reader(b);

    await s.step("both answer the same counts of the day", async () => {
      const today = (await viaA.queue()).today;
      assert.deepEqual([today.entered, today.answered, today.maxWaitSeconds], [1, 1, 3]);
      assert.deepEqual((await viaB.queue()).today, today);
      assert.deepEqual((await viaB.agent(agent.id)).today.answered, 1);
      assert.deepEqual(
        await viaB.json("/supervision/history?from=2026-01-01"),
        await viaA.json("/supervision/history?from=2026-01-01"),
      );
    });

    await s.step("a restart keeps them", async () => {
      const before = await viaA.json("/supervision/history?from=2026-01-01");
      await closeAll(a);
      const c = await setup(env);
      try {
        const viaC = await reader(c);
        assert.deepEqual(await viaC.json("/supervision/history?from=2026-01-01"), before);
        assert.equal((await viaC.queue()).today.answered, 1);
      } finally {
        await closeAll(c);
      }
    });
    await closeAll(b);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("concurrent writers through two handles lose no update", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-supervision-" });
  const env = { SVC_KV: `${dir}/svc.kv` };
  try {
    const a = await setup(env);
    const b = await setup(env);
    const change = (value: number) => ({
      day: "2026-01-01",
      kind: "queue" as const,
      id: 1,
      stat: "wait_ms" as const,
      op: "add" as const,
      value,
    });
    const max = (value: number) => ({
      ...change(value),
      stat: "wait_max_ms" as const,
      op: "max" as const,
    });
    await Promise.all(
      Array.from(
        { length: 40 },
        (_, i) => addCounters((i % 2 ? a : b).services.store, [change(i + 1), max(i + 1)]),
      ),
    );
    const { queues } = await readCounters(a.services.store, "2026-01-01", "2026-01-01");
    assert.equal(queues[0]!.counters.wait_ms, (40 * 41) / 2);
    assert.equal(queues[0]!.counters.wait_max_ms, 40);
    await closeAll(a);
    await closeAll(b);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an agent's mark moved by another writer: the commit refused, nothing written", async () => {
  const ctx = await setup();
  const { store } = ctx.services;
  const mark = { state: "AgentReady" as const, sinceMs: 1, loggedSinceMs: 1 };
  const change = {
    day: "2026-01-01",
    kind: "agent" as const,
    id: 3,
    stat: "pause_ms" as const,
    op: "add" as const,
    value: 5,
  };
  assert.equal(await markAgent(store, 3, null, mark, [change]), true);
  const { versionstamp } = await getAgentMark(store, 3);
  assert.equal(await markAgent(store, 3, null, { ...mark, sinceMs: 2 }, [change]), false);
  assert.deepEqual(await getAgentMark(store, 3), { mark, versionstamp });
  const { agents } = await readCounters(store, "2026-01-01", "2026-01-01");
  assert.equal(agents[0]!.counters.pause_ms, 5, "counted once");
});

Deno.test("a backup and a restore keep the counters (KvU64), and they count on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-supervision-" });
  try {
    const source = await Store.open(`${dir}/svc.kv`);
    const change = (value: number) => ({
      day: "2026-01-01",
      kind: "queue" as const,
      id: 1,
      stat: "entered" as const,
      op: "add" as const,
      value,
    });
    await addCounters(source, [change(3)]);
    await backupStore(`${dir}/svc.kv`, `${dir}/svc.kvbackup`);
    source.close();
    await restoreStore(`${dir}/svc.kvbackup`, `${dir}/restored.kv`);
    const restored = await Store.open(`${dir}/restored.kv`);
    await addCounters(restored, [change(2)]);
    const { queues } = await readCounters(restored, "2026-01-01", "2026-01-01");
    assert.equal(queues[0]!.counters.entered, 5);
    restored.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * The supervision store's kept reads (lib/store/supervision.ts): the day counters and the agents'
 * marks are kept while the version key `["supervision_version"]` does not move, and every commit
 * writing counters or marks moves it. So a write made through another handle on the same store
 * file (another process) shows at the next read, and reads asked with nothing written between them
 * answer what was read before. Also every agent's figures (lib/supervision/agents.ts), read once
 * for the callers asking while a read runs, each answer begun after its caller asked.
 */
import assert from "node:assert/strict";
import { agentFigures } from "../../lib/supervision/agents.ts";
import {
  addCounters,
  type AgentMark,
  agentMarks,
  type CounterChange,
  getAgentMark,
  markAgent,
  pruneDaysBefore,
  readDayCounters,
} from "../../lib/store/supervision.ts";
import { Store } from "../../lib/store/store.ts";
import { callCenter } from "../routes/supervision_fixtures.ts";

const DAY = "2026-01-02";

const entered = (id: number, value = 1, day = DAY): CounterChange => ({
  day,
  kind: "queue",
  id,
  stat: "entered",
  op: "add",
  value,
});

const pauseMs = (id: number, value: number): CounterChange => ({
  day: DAY,
  kind: "agent",
  id,
  stat: "pause_ms",
  op: "add",
  value,
});

/** Two handles on one store file: `reader` reads (and keeps), `writer` writes. */
async function withTwoHandles(fn: (reader: Store, writer: Store, path: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "svc-supervision-store-" });
  const path = `${dir}/svc.kv`;
  const [reader, writer] = [await Store.open(path), await Store.open(path)];
  try {
    await fn(reader, writer, path);
  } finally {
    reader.close();
    writer.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("kept supervision reads: each kind of write through another handle shows at the next read", async (t) => {
  await withTwoHandles(async (reader, writer) => {
    await t.step(
      "no version yet: read each time (a writer that does not move it may be at work)",
      async () => {
        const first = await readDayCounters(reader, DAY, "queue");
        assert.equal(first.size, 0);
        assert.notEqual(await readDayCounters(reader, DAY, "queue"), first, "read again");
      },
    );

    await t.step("nothing written since: the same answer is kept", async () => {
      await addCounters(writer, [entered(1, 1, "2026-02-01")]); // another day: the version moves
      const first = await readDayCounters(reader, DAY, "queue");
      assert.equal(first.size, 0);
      assert.equal(await readDayCounters(reader, DAY, "queue"), first, "kept, not read again");
      const marks = await agentMarks(reader);
      assert.equal(marks.size, 0);
      assert.equal(await agentMarks(reader), marks);
    });

    await t.step("addCounters: queue and agent counters", async () => {
      const queuesBefore = await readDayCounters(reader, DAY, "queue");
      const agentsBefore = await readDayCounters(reader, DAY, "agent");
      await addCounters(writer, [entered(1, 2), pauseMs(7, 1500)]);
      const queues = await readDayCounters(reader, DAY, "queue");
      assert.notEqual(queues, queuesBefore);
      assert.equal(queues.get(1)?.entered, 2);
      assert.equal(queues.get(1)?.answered, 0, "a counter never written reads 0");
      assert.equal((await readDayCounters(reader, DAY, "agent")).get(7)?.pause_ms, 1500);
      assert.equal(agentsBefore.size, 0, "an answer given is not changed afterwards");
      // kept again from now on
      assert.equal(await readDayCounters(reader, DAY, "queue"), queues);
    });

    await t.step("markAgent: the mark, and the counters of its commit", async () => {
      const mark: AgentMark = { state: "AgentOnPause", sinceMs: 1_000, loggedSinceMs: 500 };
      assert.equal((await agentMarks(reader)).has(7), false);
      assert.equal(await markAgent(writer, 7, null, mark, [pauseMs(7, 500)]), true);
      assert.deepEqual((await agentMarks(reader)).get(7), mark);
      assert.equal((await readDayCounters(reader, DAY, "agent")).get(7)?.pause_ms, 2000);

      // a mark moved with no counter in its commit shows too
      const { versionstamp } = await getAgentMark(writer, 7);
      const ready: AgentMark = { state: "AgentReady", sinceMs: 2_000, loggedSinceMs: 500 };
      assert.equal(await markAgent(writer, 7, versionstamp, ready, []), true);
      assert.deepEqual((await agentMarks(reader)).get(7), ready);

      // a refused commit writes nothing: what was kept stays right
      const kept = await agentMarks(reader);
      assert.equal(await markAgent(writer, 7, versionstamp, mark, [pauseMs(7, 1)]), false);
      assert.deepEqual((await agentMarks(reader)).get(7), ready);
      assert.equal((await readDayCounters(reader, DAY, "agent")).get(7)?.pause_ms, 2000);
      assert.equal(await agentMarks(reader), kept);
    });

    await t.step("pruneDaysBefore: the days deleted are gone", async () => {
      await addCounters(writer, [entered(1, 5, "2026-01-01")]);
      assert.equal((await readDayCounters(reader, "2026-01-01", "queue")).get(1)?.entered, 5);
      assert.equal(await pruneDaysBefore(writer, DAY), 1);
      assert.equal((await readDayCounters(reader, "2026-01-01", "queue")).size, 0);
      assert.equal((await readDayCounters(reader, DAY, "queue")).get(1)?.entered, 2, "kept days");
    });

    await t.step("a write elsewhere in the store leaves the counters as read", async () => {
      const queues = await readDayCounters(reader, DAY, "queue");
      await writer.set(["elsewhere", 1], "x");
      assert.equal(await readDayCounters(reader, DAY, "queue"), queues);
    });
  });
});

Deno.test("kept supervision reads asked at once share their reads, yet each sees every write made before it was asked", async () => {
  await withTwoHandles(async (reader, writer) => {
    // readers keep asking, so that reads asked at once go together and kept answers are reused
    let writing = true;
    const busy = Array.from({ length: 8 }, async (_, n) => {
      while (writing) {
        await (n % 2 ? readDayCounters(reader, DAY, "queue") : agentMarks(reader));
      }
    });
    try {
      for (let n = 1; n <= 100; n++) {
        if (n % 2) await addCounters(writer, [entered(3)]);
        else {
          const { versionstamp } = await getAgentMark(writer, 9);
          const mark = { state: "AgentReady" as const, sinceMs: n, loggedSinceMs: 0 };
          assert.equal(await markAgent(writer, 9, versionstamp, mark, []), true);
        }
        const [queues, marks] = await Promise.all([
          readDayCounters(reader, DAY, "queue"),
          agentMarks(reader),
        ]);
        assert.equal(queues.get(3)?.entered, Math.ceil(n / 2), `counter after write ${n}`);
        if (n > 1) assert.equal(marks.get(9)?.sinceMs, n - (n % 2), `mark after write ${n}`);
      }
    } finally {
      writing = false;
      await Promise.all(busy);
    }
  });
});

Deno.test("kept supervision reads: a write by another process on the store file shows at the next read", async () => {
  await withTwoHandles(async (reader, writer, path) => {
    await addCounters(writer, [entered(1, 1, "2026-02-01")]); // a version to keep reads at
    const before = await readDayCounters(reader, DAY, "queue");
    assert.equal(before.size, 0);
    assert.equal(await readDayCounters(reader, DAY, "queue"), before, "kept");
    const module = new URL("../../lib/store/supervision.ts", import.meta.url).href;
    const store = new URL("../../lib/store/store.ts", import.meta.url).href;
    const script = `
      const { addCounters, markAgent } = await import(${JSON.stringify(module)});
      const { Store } = await import(${JSON.stringify(store)});
      const store = await Store.open(${JSON.stringify(path)});
      await addCounters(store, [${JSON.stringify(entered(4, 3))}]);
      const mark = { state: "AgentOnPause", sinceMs: 1, loggedSinceMs: 1 };
      if (!await markAgent(store, 11, null, mark, [])) throw new Error("mark refused");
      store.close();
    `;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--unstable-kv", script],
      cwd: new URL("../..", import.meta.url),
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
    assert.equal((await readDayCounters(reader, DAY, "queue")).get(4)?.entered, 3);
    assert.equal((await agentMarks(reader)).get(11)?.state, "AgentOnPause");
  });
});

Deno.test("every agent's figures asked at once share a read, yet each holds what changed before it was asked", async () => {
  const { t, ctx, agent, queue } = await callCenter();
  const { services } = ctx;
  await t.sim.agentLogin(agent, "1001", "default");
  // a read runs: the callers asking now share the next one, begun after they asked
  const running = agentFigures(services);
  const [a, b] = [agentFigures(services), agentFigures(services)];
  assert.equal(await a, await b, "one read for both");
  assert.notEqual(await running, await a, "not the read that ran when they asked");
  assert.notEqual(
    await agentFigures(services, [queue.id]),
    await agentFigures(services, [queue.id]),
  );

  let reading = true;
  const busy = Array.from({ length: 4 }, async () => {
    while (reading) await agentFigures(services);
  });
  try {
    for (let n = 0; n < 20; n++) {
      const paused = n % 2 === 0;
      await (paused ? t.sim.agentPause(agent.id, "lunch") : t.sim.agentUnpause(agent.id));
      const [figures] = await agentFigures(services);
      assert.equal(figures?.state, paused ? "paused" : "ready", `after change ${n}`);
      const [filtered] = await agentFigures(services, [queue.id]);
      assert.equal(filtered?.state, paused ? "paused" : "ready", `filtered, after change ${n}`);
    }
  } finally {
    reading = false;
    await Promise.all(busy);
  }
});

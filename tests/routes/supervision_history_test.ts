/**
 * Days (docs/supervision.md): a queue's day in its own time zone, durations cut at midnight,
 * `GET /supervision/history` as JSON and CSV (cells neutralised against spreadsheet formulas),
 * its `from`/`to` errors, and the days past the retention pruned.
 */
import assert from "node:assert/strict";
import { parseCsv } from "../../lib/csv.ts";
import { expectError } from "../helpers.ts";
import { callCenter } from "./supervision_fixtures.ts";

const HOUR = 3600_000;

Deno.test("a queue's day starts at midnight in its time zone; agents' in the default one", async (s) => {
  const { t, ctx, bob, agent, api } = await callCenter({
    SVC_SUPERVISION_TIMEZONE: "UTC,sales=Europe/Paris",
  });
  // 2026-01-01 22:59:50 UTC: 23:59:50 in Paris
  await t.advance(23 * HOUR - 10_000);
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.agentPause(agent.id, null);
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");

  await s.step("the call entered on Paris's 1 January", async () => {
    const figures = await api.queue();
    assert.deepEqual([figures.timeZone, figures.today.day, figures.today.entered], [
      "Europe/Paris",
      "2026-01-01",
      1,
    ]);
  });

  await s.step(
    "answered on Paris's 2 January: a new day for the queue, not for agents",
    async () => {
      await t.advance(20_000); // 23:00:10 UTC, 00:00:10 in Paris
      await t.sim.agentUnpause(agent.id);
      await t.sim.act("1001", "answer");
      const figures = await api.queue();
      assert.deepEqual(
        [
          figures.today.day,
          figures.today.entered,
          figures.today.answered,
          figures.today.maxWaitSeconds,
        ],
        ["2026-01-02", 0, 1, 20],
      );
      const agentFigures = await api.agent(agent.id);
      assert.deepEqual(
        [agentFigures.today.day, agentFigures.today.answered, agentFigures.today.pauseSeconds],
        ["2026-01-01", 1, 20],
      );
    },
  );

  await s.step("the history: each day its own row", async () => {
    const history = await api.json("/supervision/history?from=2026-01-01&to=2026-01-02");
    assert.deepEqual(
      history.queues.map((row: Record<string, unknown>) => [row.day, row.entered, row.answered]),
      [["2026-01-01", 1, 0], ["2026-01-02", 0, 1]],
    );
    assert.deepEqual(
      history.agents.map((row: Record<string, unknown>) => [row.day, row.answered]),
      [["2026-01-01", 1]],
    );
  });
  void ctx;
});

Deno.test("a pause, a login and a call across midnight: cut at midnight", async () => {
  const { t, ctx, bob, agent, api } = await callCenter();
  await t.advance(24 * HOUR - 3 * 60_000); // 23:57 UTC
  await t.sim.agentLogin(agent, "1001", "default");
  await t.advance(60_000);
  await t.sim.agentPause(agent.id, "night");
  await t.advance(2 * 60_000); // 00:00 on 2 January
  let figures = await api.agent(agent.id);
  assert.deepEqual(
    [figures.today.day, figures.today.pauseSeconds, figures.today.loginSeconds],
    ["2026-01-02", 0, 0],
    "a new day: what is going on counts from midnight",
  );
  await t.advance(60_000); // 00:01
  figures = await api.agent(agent.id);
  assert.deepEqual([figures.today.pauseSeconds, figures.today.loginSeconds], [60, 60]);
  await t.sim.agentUnpause(agent.id);
  // a queue call answered at 00:02, talked across nothing, then one across midnight is below
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.sim.act("1001", "answer");
  await t.advance(60_000);
  await t.sim.act("1002", "hangup");
  await t.sim.agentLogout(agent.id);
  const history = await api.json("/supervision/history?from=2026-01-01&to=2026-01-02");
  const rows = history.agents.map((row: Record<string, unknown>) => [
    row.day,
    row.pauseSeconds,
    row.loginSeconds,
    row.talkSeconds,
    row.answered,
  ]);
  assert.deepEqual(rows, [
    ["2026-01-01", 120, 180, 0, 0],
    ["2026-01-02", 60, 120, 60, 1],
  ]);
  void ctx;
});

Deno.test("a queue call talked across midnight: the agent's talk cut, the queue's on its last day", async () => {
  const { t, bob, agent, api } = await callCenter();
  await t.advance(24 * HOUR - 30_000);
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.sim.act("1001", "answer");
  await t.advance(90_000);
  await t.sim.act("1002", "hangup");
  const history = await api.json("/supervision/history?from=2026-01-01&to=2026-01-02");
  assert.deepEqual(
    history.agents.map((row: Record<string, unknown>) => [row.day, row.talkSeconds, row.answered]),
    [["2026-01-01", 30, 1], ["2026-01-02", 60, 0]],
  );
  assert.deepEqual(
    history.queues.map((
      row: Record<string, unknown>,
    ) => [row.day, row.answered, row.meanTalkSeconds]),
    [["2026-01-01", 1, null], ["2026-01-02", 0, 90]],
  );
});

Deno.test("GET /supervision/history as CSV: one row per day and queue or agent, formulas neutralised", async () => {
  const { t, bob, agent, queue, api } = await callCenter();
  await t.api.put(`/queues/${queue.id}`, { display_name: "=1+1" });
  await t.api.put(`/agents/${agent.id}`, {
    firstname: '=HYPERLINK("http://evil.example","x")',
    lastname: "@Martin",
  });
  await t.sim.agentLogin(agent, "1001", "default");
  await t.sim.dialNumber(bob, "3000", {});
  await t.sim.act("1002", "answer");
  await t.advance(4000);
  await t.sim.act("1001", "answer");
  await t.advance(10_000);
  await t.sim.act("1002", "hangup");
  await t.sim.agentLogout(agent.id);
  const response = await api.request("GET", "/supervision/history?from=2026-01-01", undefined, {
    Accept: "text/csv",
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/csv; charset=utf-8");
  const text = await response.text();
  const { header, rows } = await parseCsv(text);
  assert.deepEqual(header, [
    "day",
    "kind",
    "id",
    "number",
    "name",
    "entered",
    "answered",
    "abandoned",
    "abandoned_short",
    "timeout",
    "answered_within_service_level",
    "service_level_percent",
    "abandoned_after_short_percent",
    "mean_wait_seconds",
    "max_wait_seconds",
    "mean_talk_seconds",
    "missed",
    "talk_seconds",
    "pause_seconds",
    "login_seconds",
  ]);
  assert.deepEqual(rows.map((row) => row.fields), [
    [
      "2026-01-01",
      "queue",
      String(queue.id),
      "3000",
      "'=1+1",
      "1",
      "1",
      "0",
      "0",
      "0",
      "1",
      "100",
      "0",
      "4",
      "4",
      "10",
      "",
      "",
      "",
      "",
    ],
    [
      "2026-01-01",
      "agent",
      String(agent.id),
      "8001",
      `'=HYPERLINK("http://evil.example","x") @Martin`,
      "",
      "1",
      "",
      "",
      "",
      "",
      "",
      "",
      "",
      "",
      "",
      "0",
      "10",
      "0",
      "14",
    ],
  ]);
  // any Accept naming text/csv among others; JSON otherwise
  const listed = await api.request("GET", "/supervision/history?from=2026-01-01", undefined, {
    Accept: "application/json;q=0.5, text/csv",
  });
  assert.equal(await listed.text(), text);
  const json = await api.request("GET", "/supervision/history?from=2026-01-01", undefined, {
    Accept: "application/json",
  });
  assert.match(json.headers.get("content-type") ?? "", /^application\/json/);
  assert.equal((await json.json()).queues[0].displayName, "=1+1", "JSON keeps the value as is");
});

Deno.test("GET /supervision/history: no day, a date that is not, to before from, too many days", async () => {
  const { api } = await callCenter({ SVC_SUPERVISION_RETENTION_DAYS: "35" });
  const cases: [string, RegExp][] = [
    ["", /from is required/],
    ["?to=2026-01-01", /from is required/],
    ["?from=", /from is required/],
    ["?from=2026-02-30", /from "2026-02-30" is no date/],
    ["?from=1%20January", /is no date/],
    ["?from=2026-01-01&to=tomorrow", /to "tomorrow" is no date/],
    ["?from=2026-01-02&to=2026-01-01", /to 2026-01-01 is before from 2026-01-02/],
    ["?from=2026-01-01&to=2026-02-05", /is 36 days: at most 35 are kept/],
  ];
  for (const [query, message] of cases) {
    await expectError(
      await api.request("GET", `/supervision/history${query}`),
      400,
      "BadRequest",
      message,
    );
  }
  const longest = await api.json("/supervision/history?from=2026-01-01&to=2026-02-04");
  assert.deepEqual(longest, { from: "2026-01-01", to: "2026-02-04", queues: [], agents: [] });
});

Deno.test("the days past the retention are pruned when a new day is counted", async () => {
  const { t, ctx, bob, agent, api } = await callCenter({ SVC_SUPERVISION_RETENTION_DAYS: "2" });
  const call = async () => {
    await t.sim.dialNumber(bob, "3000", {});
    await t.sim.act("1002", "answer");
    await t.sim.act("1002", "hangup");
  };
  const days = async (from: string, to: string) =>
    (await api.json(`/supervision/history?from=${from}&to=${to}`)).queues.map((
      row: { day: string },
    ) => row.day);
  await call();
  await t.advance(24 * HOUR);
  await call();
  assert.deepEqual(await days("2026-01-01", "2026-01-02"), ["2026-01-01", "2026-01-02"]);
  await t.advance(24 * HOUR);
  await call(); // 3 January: 1 January goes
  assert.deepEqual(await days("2026-01-01", "2026-01-02"), ["2026-01-02"]);
  assert.deepEqual(await days("2026-01-02", "2026-01-03"), ["2026-01-02", "2026-01-03"]);
  assert.ok(ctx.logs.some((line) => line.includes("supervision days pruned")));
  // and on demand (the hourly cron of main.ts)
  await t.advance(24 * HOUR);
  assert.equal(await ctx.services.supervision.prune() > 0, true);
  assert.deepEqual(await days("2026-01-03", "2026-01-04"), ["2026-01-03"]);
  void agent;
});
